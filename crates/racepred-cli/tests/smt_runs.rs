//! The SMT predictors from the command line: no input or option value makes them panic or
//! hang, and a run that did not examine everything never says "no races".
//! Every run goes through `run_within`: a hang fails the test instead of stalling it.

use std::path::PathBuf;
mod common;
use common::{bin, repo, run_within};

fn dir(test: &str) -> PathBuf {
    common::fresh_dir("smt", test)
}

fn intro() -> PathBuf {
    repo().join("examples/intro.std")
}

/// Runs `cmd` (at most `secs` seconds), which must end incomplete (exit status 3), and
/// returns its standard output.
fn incomplete(secs: u64, cmd: &mut std::process::Command) -> String {
    let (code, out, err) = run_within(secs, cmd);
    assert_eq!(code, 3, "{out}{err}");
    out
}

/// A read with a value of a variable that no write of the window wrote.
#[test]
fn a_read_of_a_variable_nothing_wrote_is_no_panic() {
    let d = dir("unwritten");
    let t = common::write(&d, "t.std", "T1|r(y)->a=0|1\nT1|w(x)=1|2\nT2|w(x)=2|3\n");
    for a in ["mcm", "recipe", "recipe-alt"] {
        let (code, out, err) = run_within(120, bin().args(["analyze", "-a", a]).arg(&t));
        assert!(!err.contains("panicked"), "{a}: {err}");
        assert_eq!(code, 1, "{a}: {out}{err}");
        // The two writes of x race.
        assert!(out.contains("write-write 1"), "{a}: {out}");
    }
}

/// The SMT predictors read their trace as every other command does: `--max-line` bounds
/// its lines, `--no-mmap` and compressed input change nothing, `check` likewise.
#[test]
fn smt_inputs_take_the_reading_options_of_every_command() {
    let d = dir("read-options");
    let t = common::write(&d, "t.std", "T1|w(x)=1|2\nT2|w(x)=2|3\n");
    for a in ["mcm", "recipe"] {
        let (code, out, err) = run_within(
            120,
            bin().args(["analyze", "-a", a, "--max-line", "8"]).arg(&t),
        );
        assert_eq!(code, 2, "{a}: {out}{err}");
        assert!(
            err.contains("t.std:1: syntax: line longer than 8 bytes"),
            "{a}: {err}"
        );
        let (code, out, err) =
            run_within(120, bin().args(["analyze", "-a", a, "--no-mmap"]).arg(&t));
        assert_eq!(code, 1, "{a}: {out}{err}");
        assert!(out.contains("write-write 1"), "{a}: {out}");
    }
    let (code, out, err) = run_within(120, bin().args(["check", "--max-line", "8"]).arg(&t));
    assert_eq!(code, 2, "check: {out}{err}");
    assert!(
        err.contains("t.std:1: syntax: line longer than 8 bytes"),
        "check: {err}"
    );
}

/// Budgets and query timeouts too long for the clock are no limit, not a panic.
#[test]
fn huge_budgets_and_timeouts_are_no_limit() {
    for args in [
        vec!["--budget", "1e19"],
        vec!["--budget", "1e300"],
        vec!["--query-timeout", "1e300"],
        vec!["--query-timeout", "1e19", "--budget", "1e300"],
    ] {
        let (code, out, err) = run_within(
            120,
            bin()
                .args(["analyze", "-a", "mcm"])
                .args(&args)
                .arg(intro()),
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        assert!(!out.contains("incomplete"), "{args:?}: {out}");
    }
    // Far more threads than can be made: a usage error, not an abort.
    let (code, _, err) = run_within(
        60,
        bin()
            .args(["analyze", "-a", "lockset", "-j", "20000"])
            .arg(intro()),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--jobs must be at most"), "{err}");
}

/// A budget spent before the race is found: not "no races", in text, JSON and SARIF, and
/// exit status 3 (not 0).
#[test]
fn a_spent_budget_is_reported_as_incomplete() {
    let base = || {
        let mut c = bin();
        c.args(["analyze", "-a", "mcm", "--budget", "0.000001"]);
        c
    };
    let out = incomplete(120, base().arg(intro()));
    assert!(!out.contains("no races"), "{out}");
    assert!(out.contains("mcm: incomplete"), "{out}");
    assert!(out.contains("--budget ran out"), "{out}");
    let out = incomplete(120, base().arg("--json").arg(intro()));
    let v = common::json(&out);
    assert_eq!(v["complete"], false, "{out}");
    assert!(
        v["incomplete"].as_str().unwrap().contains("--budget"),
        "{out}"
    );
    let out = incomplete(120, base().arg("--sarif").arg(intro()));
    let v = common::json(&out);
    let inv = &v["runs"][0]["invocations"][0];
    assert_eq!(inv["executionSuccessful"], false, "{out}");
    assert!(
        inv["toolExecutionNotifications"][0]["message"]["text"]
            .as_str()
            .unwrap()
            .contains("--budget"),
        "{out}"
    );
    // A complete run says so too.
    let (code, out, _) = run_within(
        120,
        bin().args(["analyze", "-a", "mcm", "--json"]).arg(intro()),
    );
    assert_eq!(code, 1);
    let v = common::json(&out);
    assert_eq!(v["complete"], true, "{out}");
    assert_eq!(v["incomplete"], serde_json::Value::Null, "{out}");
    assert_eq!(v["extra"]["unasked"], 0, "{out}");
}

/// Candidates skipped because their location pair has a race already are counted apart
/// from those the budget never reached.
#[test]
fn skipped_and_unasked_candidates_are_counted_apart() {
    let d = dir("skipped");
    let t = d.join("t.std");
    // Two threads writing x at the same two locations, many times: one race per location
    // pair is asked for, the other candidates of that pair are skipped.
    let mut text = String::from("T0|fork(T1)|0\n");
    for _ in 0..4 {
        text.push_str("T0|w(x)|1\nT1|w(x)|2\n");
    }
    std::fs::write(&t, text).unwrap();
    let (code, out, err) = run_within(120, bin().args(["analyze", "-a", "mcm", "--json"]).arg(&t));
    assert_eq!(code, 1, "{err}");
    let v = common::json(&out);
    assert!(v["extra"]["skipped"].as_u64().unwrap() > 0, "{out}");
    assert_eq!(v["extra"]["unasked"], 0, "{out}");
    assert_eq!(v["complete"], true, "{out}");
}

/// A witness file says which value each relaxed read reads in its schedule when that is
/// not the recorded one, and still replays.
#[test]
fn witness_files_say_what_relaxed_reads_read() {
    let d = dir("witness");
    let fig1 = repo().join("tests/traces/recipe_fig1.std");
    let wd = d.join("w");
    let (code, out, err) = run_within(
        120,
        bin()
            .args(["analyze", "-a", "recipe", "--witness"])
            .arg(&wd)
            .arg(&fig1),
    );
    assert_eq!(code, 1, "{out}{err}");
    // Race 2-5 (events 5 and 9): T2's read of y (event 7) reads 3 from line 1, not 5.
    assert!(out.contains("7: T2|r(y)->a=5|4  (reads 3 here)"), "{out}");
    let file = wd.join("recipe-5-9.std");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("# in this schedule the read below reads 3 (the trace recorded 5)\n#@ 7\n"),
        "{text}"
    );
    let (code, out, err) = run_within(60, bin().arg("replay").arg(&fig1).arg(&file));
    assert_eq!(code, 0, "{out}{err}");
}

/// An ill-formed trace read with `--lenient` (a release without its acquire): `mcm` finds
/// the race `hb` reports instead of dropping its witness.
#[test]
fn lenient_mcm_keeps_races_of_a_release_without_acquire() {
    let d = dir("lenient");
    let t = common::write(
        &d,
        "t.std",
        "T0|fork(T1)|1\nT0|rel(L)|2\nT0|w(x)|3\nT1|w(x)|4\n",
    );
    let (code, out, err) = run_within(
        120,
        bin()
            .args(["analyze", "-a", "hb", "-a", "mcm", "--lenient", "--json"])
            .arg(&t),
    );
    assert_eq!(code, 1, "{out}{err}");
    let v = common::json(&out);
    assert_eq!(v[0]["racy_events"], serde_json::json!([3]), "{out}");
    assert_eq!(v[1]["pairs"][0]["first"], 2, "{out}");
    assert_eq!(v[1]["pairs"][0]["second"], 3, "{out}");
    assert_eq!(v[1]["extra"]["replay_failed"], 0, "{out}");
    assert_eq!(v[1]["complete"], true, "{out}");
}

/// The budget bounds the listing of a large window's candidates too (quadratic in the
/// accesses of a variable), and a window too large to encode is given up before it.
#[test]
fn the_budget_bounds_large_windows() {
    let d = dir("large");
    let t = d.join("t.std");
    // 2·10^5 writes of x; the fork orders every pair, so no candidate survives, but listing
    // them looks at 2·10^10 pairs (about a minute).
    let text = "T0|w(x)|1\n".repeat(100_000) + "T0|fork(T1)|2\n" + &"T1|w(x)|3\n".repeat(100_000);
    std::fs::write(&t, text).unwrap();
    let out = incomplete(
        120,
        bin()
            .args([
                "analyze",
                "-a",
                "mcm",
                "--json",
                "--window",
                "4294967295",
                "--budget",
                "1",
            ])
            .arg(&t),
    );
    let v = common::json(&out);
    assert!(
        v["incomplete"]
            .as_str()
            .unwrap()
            .contains("--budget ran out"),
        "{out}"
    );
    // A generous bound (reading and building the window take time too), far below the
    // listing's.
    let secs = v["extra"]["seconds"].as_f64().unwrap();
    assert!(secs < 15.0, "a budget of 1 s took {secs} s");
    // 2·10^4 critical sections of one lock: an encoding far over the atom limit.
    let sections = "T0|acq(L)|1\nT0|w(x)|2\nT0|rel(L)|3\nT1|acq(L)|4\nT1|w(x)|5\nT1|rel(L)|6\n";
    std::fs::write(&t, "T0|fork(T1)|0\n".to_string() + &sections.repeat(10_000)).unwrap();
    let out = incomplete(
        60,
        bin()
            .args(["analyze", "-a", "mcm", "--window", "4294967295"])
            .arg(&t),
    );
    assert!(out.contains("too large to encode"), "{out}");
}
