//! Names and locations from a trace or a location table never drive the reader's terminal:
//! control characters reach standard output and standard error escaped.

use std::path::PathBuf;
mod common;
use common::{bin, run};

fn dir(test: &str) -> PathBuf {
    common::fresh_dir("terminal", test)
}

/// No ESC, BEL, CR or C1 control in `s`.
fn clean(s: &str) -> bool {
    !s.chars()
        .any(|c| (c.is_control() && c != '\n') || ('\u{80}'..='\u{9f}').contains(&c))
}

#[test]
fn control_characters_from_traces_and_tables_are_escaped() {
    let d = dir("escape");
    let t = common::write(&d, "t.std", "T0|fork(T\u{1b}[1m)|1\nT0|w(V\u{1b}[2J)|2\nT\u{1b}[1m|w(V\u{1b}[2J)|3\nT0|w(C\u{9b}2J)|2\nT\u{1b}[1m|w(C\u{9b}2J)|3\n");
    let table = common::write(
        &d,
        "t.locs",
        "2\t\u{1b}[2JFile.java:1:1\n3\t\u{1b}]0;title\u{7}B.java:2:1\n",
    );
    for a in ["hb", "hbp", "lockset", "mcm"] {
        let (code, out, err) = run(bin()
            .args(["analyze", "-a", a, "--locations"])
            .arg(&table)
            .arg(&t));
        assert_eq!(code, 1, "{a}: {err}");
        assert!(clean(&out), "{a}: {out:?}");
        assert!(clean(&err), "{a}: {err:?}");
        assert!(out.contains("\\u001b[2J"), "{a}: {out}");
    }
    // JSON keeps the names as they are (escaped by JSON itself).
    let (_, out, _) = run(bin()
        .args(["analyze", "-a", "hbp", "--all-pairs", "--json"])
        .arg(&t));
    assert!(out.contains("C\\u009b2J"), "{out}");
    assert!(clean(&out), "{out:?}");
    let v = common::json(&out);
    assert_eq!(v["pairs"][0]["variable"], "V\u{1b}[2J");
    assert_eq!(v["pairs"][1]["variable"], "C\u{9b}2J");
    // Messages on standard error too.
    let bad = common::write(&d, "bad.std", "T0|rel(L\u{1b}[2J)|1\n");
    for args in [vec!["analyze", "-a", "hb"], vec!["validate"]] {
        let (code, out, err) = run(bin().args(&args).arg(&bad));
        assert_ne!(code, 0);
        assert!(clean(&out) && clean(&err), "{args:?}: {out:?} {err:?}");
        assert!(
            format!("{out}{err}").contains("L\\u001b[2J"),
            "{args:?}: {out}{err}"
        );
    }
}
