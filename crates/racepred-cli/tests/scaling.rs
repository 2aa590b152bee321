//! Analyses whose cost must follow the events, not grow with another dimension of the
//! trace: each run goes through a watchdog, so a blow-up fails instead of stalling.

use std::path::PathBuf;
mod common;
use common::{bin, run_within};

fn dir(test: &str) -> PathBuf {
    common::fresh_dir("scaling", test)
}

/// Many short-lived threads forked and joined in turn, each with critical sections on two
/// shared locks (what a program starting a thread per task records): WCP's rule-(b) walk
/// must not compare every earlier critical section at each release of a new thread
/// (cubic in the threads: half a minute in a release build before).
#[test]
fn wcp_scales_with_threads_forked_in_turn() {
    let d = dir("wcp");
    let t = d.join("t.std");
    let mut text = String::new();
    for i in 1..=3000 {
        text.push_str(&format!("T0|fork(T{i})|1\n"));
        text.push_str(&format!(
            "T{i}|acq(L)|2\nT{i}|w(x)|3\nT{i}|rel(L)|4\nT{i}|acq(M)|5\nT{i}|r(y)|6\nT{i}|rel(M)|7\n"
        ));
        text.push_str(&format!("T0|join(T{i})|8\n"));
    }
    // One race at the end, so that the answer is checked too.
    text.push_str("T0|fork(T9000)|9\nT9000|w(z)|10\nT0|w(z)|11\nT0|join(T9000)|12\n");
    std::fs::write(&t, text).unwrap();
    let (code, out, err) = run_within(
        30,
        bin()
            .args(["analyze", "-a", "wcp", "-a", "hb", "--json"])
            .arg(&t),
    );
    assert_eq!(code, 1, "{err}");
    let v = common::json(&out);
    assert_eq!(v[0]["racy_events"], v[1]["racy_events"], "{out}");
    assert_eq!(v[0]["summary"]["racy_events"], 1, "{out}");
}
