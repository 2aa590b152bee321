//! End-to-end tests of the `racepred` binary: output a user reads, exit codes, errors.

use std::path::PathBuf;
mod common;
use common::{bin, repo, run};

fn tmp(name: &str, content: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("racepred-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

#[test]
fn stats_on_the_shipped_example() {
    let (code, out, _) = run(bin().arg("stats").arg(repo().join("examples/intro.std")));
    assert_eq!(code, 0);
    assert!(out.contains("events     13"), "{out}");
    assert!(out.contains("threads    3"), "{out}");
    let (code, out, _) = run(bin()
        .args(["stats", "--json"])
        .arg(repo().join("examples/intro.std")));
    assert_eq!(code, 0);
    let v = common::json(&out);
    assert_eq!(v["events"], 13);
    assert_eq!(v["forks"], 2);
    assert_eq!(v["joins"], 2);
    assert_eq!(v["reads"], 4);
}

#[test]
fn validate_lists_every_violation_with_file_line_and_rule() {
    let p = tmp(
        "bad.std",
        b"T0|acq(L)|1\nT1|acq(L)|2\nT1|bogus(x)|3\nT1|w(x)|4\nT0|rel(L)|5\n",
    );
    let (code, out, _) = run(bin().arg("validate").arg(&p));
    assert_eq!(code, 1);
    let lines: Vec<&str> = out.lines().collect();
    let f = p.display().to_string();
    assert_eq!(
        lines[0],
        format!("{f}:2: lock-held: thread T1 acquires lock L held by thread T0 since line 1")
    );
    assert_eq!(
        lines[1],
        format!("{f}:3: syntax: unknown operation `bogus`")
    );
    assert!(
        lines[2].starts_with(&format!("{f}:5: release-not-held:")),
        "{out}"
    );
    assert_eq!(lines[3], format!("{f}: 3 problem(s)"));
}

#[test]
fn validate_accepts_a_good_trace() {
    let (code, out, _) = run(bin().arg("validate").arg(repo().join("examples/intro.std")));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("well-formed (13 events)"));
}

#[test]
fn input_errors_exit_2_with_file_and_line() {
    let (code, _, err) = run(bin().arg("stats").arg("/nonexistent/trace.std"));
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/trace.std"), "{err}");
    let p = tmp("syntax.std", b"T0|w(x)|1\nT0|w(x)\n");
    let (code, _, err) = run(bin().arg("stats").arg(&p));
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!("{}:2: syntax:", p.display())),
        "{err}"
    );
    common::expect(2, bin().arg("frobnicate"));
}
