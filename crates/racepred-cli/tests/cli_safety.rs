//! Data loss, crashes and sharp edges: outputs never destroy inputs, failed
//! runs leave no files, option checks are shared, errors are bounded and said once.

use std::path::{Path, PathBuf};
mod common;
use common::{bin, repo, run};

/// A fresh directory per test.
fn dir(test: &str) -> PathBuf {
    common::fresh_dir("safety", test)
}

/// Names in `d`, sorted (temporary files would show here).
fn listing(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn intro(d: &Path) -> PathBuf {
    let p = d.join("t.std");
    std::fs::copy(repo().join("examples/intro.std"), &p).unwrap();
    p
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let d = dir("same");
    let t = intro(&d);
    let before = std::fs::read(&t).unwrap();
    let ts = t.to_str().unwrap();
    std::fs::hard_link(&t, d.join("link.std")).unwrap();
    let link = d.join("link.std");
    let ls = link.to_str().unwrap();
    // The same file by another relative path.
    let other = format!(
        "{}/../{}/t.std",
        d.display(),
        d.file_name().unwrap().to_str().unwrap()
    );
    let cases: Vec<Vec<&str>> = vec![
        vec!["convert", ts, ts],
        vec!["convert", ts, ls],
        vec!["convert", ts, &other],
        vec!["analyze", "-a", "hb", "-o", ts, ts],
        vec!["analyze", "-a", "hb", "-o", ls, ts],
        vec!["stats", "-o", ts, ts],
        vec!["validate", "-o", ts, ts],
        vec!["oracle", "-o", ts, ts],
        vec!["diagnose", "--dot", ls, ts],
        vec!["diagnose", "-o", ts, ts],
        vec!["perturb", ts, "-o", ts],
        vec!["elide", ts, "--fraction", "0.5", "-o", ls],
        vec!["sample", "--trials", "1", "--period", "1", "--csv", ts, ts],
        vec![
            "sample", "--trials", "1", "--period", "1", "--plot", &other, ts,
        ],
    ];
    for args in cases {
        let (code, out, err) = run(bin().args(&args));
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(
            err.contains("refusing to write") && err.contains("it is the input trace"),
            "{args:?}: {err}"
        );
        assert_eq!(
            std::fs::read(&t).unwrap(),
            before,
            "{args:?} changed the input"
        );
    }
    assert_eq!(listing(&d), ["link.std", "t.std"]);
    // A different file is fine, and /dev/null is never "the input".
    common::expect(0, bin().args(["convert", ts]).arg(d.join("u.std")));
    common::expect(
        1,
        bin().args(["analyze", "-a", "hb", "-o", "/dev/null", ts]),
    );
}

#[test]
fn a_failed_run_leaves_no_file_and_an_existing_one_untouched() {
    let d = dir("partial");
    // An error on the last line, after the first events were written.
    let mut text = String::new();
    for i in 0..5000 {
        text.push_str(&format!("T0|w(x{i})|{i}\n"));
    }
    text.push_str("T0|bogus(x)|1\n");
    let bad = common::write(&d, "bad.std", &text);
    for out in ["new.std", "new.std.gz", "new.rpb.zst", "new.golog"] {
        let (code, _, err) = run(bin().arg("convert").arg(&bad).arg(d.join(out)));
        assert_eq!(code, 2, "{out}: {err}");
        assert!(err.contains(":5001: syntax: unknown operation"), "{err}");
    }
    std::fs::write(d.join("old.std"), b"keep me\n").unwrap();
    let (code, _, _) = run(bin().arg("convert").arg(&bad).arg(d.join("old.std")));
    assert_eq!(code, 2);
    assert_eq!(std::fs::read(d.join("old.std")).unwrap(), b"keep me\n");
    // generate into a format that cannot hold its volatile events: fails midway.
    let (_, err) = common::expect(
        2,
        bin()
            .args(["generate", "--volatile", "0.5", "-o"])
            .arg(d.join("g.csv")),
    );
    assert!(err.contains("no `v"), "{err}");
    // A report that cannot be produced leaves no -o file either.
    let (code, _, _) = run(bin()
        .args(["analyze", "-a", "hb", "-o"])
        .arg(d.join("report.txt"))
        .arg(&bad));
    assert_eq!(code, 2);
    assert_eq!(listing(&d), ["bad.std", "old.std"]);
}

#[test]
fn the_same_flag_gets_the_same_check_in_every_command() {
    let t = repo().join("examples/intro.std");
    for (flag, value, want) in [
        ("--period", "0", "--period must be positive, not 0"),
        ("--rate", "1.5", "--rate must be between 0 and 1, not 1.5"),
    ] {
        let (code, _, err) = run(bin().args(["sample", flag, value]).arg(&t));
        assert_eq!(code, 2, "sample {flag} {value}: {err}");
        assert!(err.contains(want), "{err}");
        let (code, _, err) = run(bin().args(["analyze", "-a", "pacer", flag, value]).arg(&t));
        assert_eq!(code, 2, "analyze {flag} {value}: {err}");
        assert!(err.contains(want), "{err}");
    }
    let (code, _, err) = run(bin().args(["sample", "--rates", "0.1,2"]).arg(&t));
    assert_eq!(code, 2);
    assert!(
        err.contains("--rates must be between 0 and 1, not 2"),
        "{err}"
    );
    let d = dir("checks");
    for (args, want) in [
        (vec!["--threads", "0"], "--threads must be positive"),
        (vec!["--vars", "0"], "--vars must be positive"),
        (vec!["--sync", "1.5"], "--sync must be between 0 and 1"),
    ] {
        let (code, _, err) = run(bin()
            .arg("generate")
            .args(&args)
            .arg("-o")
            .arg(d.join("g.std")));
        assert_eq!(code, 2, "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let (code, _, err) = run(bin().args(["stats", "--max-line", "0"]).arg(&t));
    assert_eq!(code, 2);
    assert!(err.contains("--max-line must be positive"), "{err}");
}

#[test]
fn options_of_another_analysis_are_refused_with_its_name() {
    let t = repo().join("examples/intro.std");
    for (args, owner) in [
        (vec!["-a", "hb", "--rate", "0.5"], "pacer"),
        (vec!["-a", "hb", "--period", "10"], "pacer"),
        (vec!["-a", "hb", "--seed", "3"], "pacer"),
        (vec!["-a", "shb", "--history", "4"], "w3po"),
        (vec!["-a", "hb", "--streaming"], "hbp, shbp"),
        (vec!["-a", "hb", "--conservative"], "rdit"),
        (vec!["-a", "hb", "--ignore-global", "x"], "rdit"),
        (vec!["-a", "wcp", "--clock", "tree"], "hb, fasttrack"),
        (vec!["-a", "w3po", "--clock", "tree"], "hb, fasttrack"),
        (vec!["-a", "rdit", "--all-pairs"], "hb, fasttrack"),
    ] {
        let (code, _, err) = run(bin().arg("analyze").args(&args).arg(&t));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(&format!("{} applies to {owner}", args[2])),
            "{args:?}: {err}"
        );
    }
    // Defaults do not count as given; an option of one of the selected analyses is fine.
    for args in [
        vec!["-a", "hb"],
        vec!["-a", "hb", "-a", "pacer", "--rate", "0.5", "--period", "10"],
        vec!["-a", "shbp", "--streaming"],
        vec!["-a", "hb,w3po", "--history", "3", "--clock", "tree"],
        vec!["-a", "rdit", "--conservative"],
        vec!["-a", "lockset,tsan-hybrid", "--all-pairs"],
        vec!["-a", "w3po", "--history", "2", "--all-pairs"],
    ] {
        let (code, _, err) = run(bin().arg("analyze").args(&args).arg(&t));
        assert_eq!(code, 1, "{args:?}: {err}");
    }
}

#[test]
fn convert_writes_every_format_it_reads() {
    let d = dir("formats");
    let src = common::write(
        &d,
        "t.std",
        "0|fork(1)|1\n1|acq(l)|2\n1|w(x)|3\n1|rel(l)|4\n0|r(x)|5\n0|join(1)|6\n",
    );
    for out in ["t.rr", "t.csv.gz", "t.golog.xz", "t.rpb"] {
        if out.starts_with("t.golog") {
            // Go logs have no fork/join: refused, naming the event.
            let (code, _, err) = run(bin().arg("convert").arg(&src).arg(d.join(out)));
            assert_eq!(code, 2, "{out}");
            assert!(err.contains("no `fork` events"), "{err}");
            continue;
        }
        let (code, _, err) = run(bin().arg("convert").arg(&src).arg(d.join(out)));
        assert_eq!(code, 0, "{out}: {err}");
        let back = d.join(format!("{out}.std"));
        let (code, _, err) = run(bin().arg("convert").arg(d.join(out)).arg(&back));
        assert_eq!(code, 0, "{out}: {err}");
        let text = std::fs::read_to_string(&back).unwrap();
        let ops: Vec<&str> = text.lines().map(|l| l.split('|').nth(1).unwrap()).collect();
        let want = if out.starts_with("t.csv") {
            ["start(T1)", "acq(l)", "w(x)", "rel(l)", "r(x)", "join(T1)"]
                .map(|s| s.replace("start", "fork"))
        } else {
            ["fork(1)", "acq(l)", "w(x)", "rel(l)", "r(x)", "join(1)"].map(String::from)
        };
        assert_eq!(ops, want, "{out}: {text}");
    }
    let (code, _, err) = run(bin()
        .arg("convert")
        .arg(&src)
        .arg(d.join("out.any"))
        .args(["--to", "golog"]));
    assert_eq!(code, 2);
    assert!(err.contains("no `fork` events"), "{err}");
}

#[test]
fn a_huge_bad_token_is_echoed_bounded_and_a_huge_line_is_an_error() {
    let d = dir("huge");
    let p = d.join("big.std");
    let mut text = b"T0|w(x)|1\nT0|".to_vec();
    text.extend(std::iter::repeat_n(b'q', 2_000_000));
    text.extend_from_slice(b"(x)|2\nT0|w(x)|3\n");
    std::fs::write(&p, &text).unwrap();
    let (code, _, err) = run(bin().arg("stats").arg(&p));
    assert_eq!(code, 2);
    assert!(
        err.contains(":2: syntax: line longer than 1048576 bytes"),
        "{}",
        &err[..err.len().min(300)]
    );
    assert!(err.len() < 300, "{} bytes of message", err.len());
    let (code, _, err) = run(bin().args(["stats", "--max-line", "3000000"]).arg(&p));
    assert_eq!(code, 2);
    assert!(
        err.contains(":2: syntax: unknown operation `qqqq") && err.contains("…(2000000 bytes)`"),
        "{}",
        &err[..err.len().min(300)]
    );
    assert!(err.len() < 300, "{} bytes of message", err.len());
    // validate goes on after the long line.
    let (code, out, _) = run(bin().arg("validate").arg(&p));
    assert_eq!(code, 1);
    assert!(out.contains(":2: syntax: line longer than"), "{out}");
    assert!(out.contains(": 1 problem(s)"), "{out}");
}

#[test]
fn corrupt_inputs_are_reported_once_with_one_wording_and_exit_2() {
    let d = dir("corrupt");
    let std = d.join("g.std");
    let (code, _, _) = run(bin()
        .args(["generate", "--events", "100000", "-o"])
        .arg(&std));
    assert_eq!(code, 0);
    for ext in ["gz", "xz", "zst"] {
        let full = d.join(format!("g.std.{ext}"));
        assert_eq!(run(bin().arg("convert").arg(&std).arg(&full)).0, 0);
        let bytes = std::fs::read(&full).unwrap();
        let cut = d.join(format!("cut.std.{ext}"));
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        let (code, out, err) = run(bin().arg("validate").arg(&cut));
        assert_eq!(code, 2, "{ext}: {out}{err}");
        let msgs = out.matches("cut.std").count() + err.matches("cut.std").count();
        assert_eq!(msgs, 1, "{ext}: said more than once:\n{out}{err}");
        assert!(!out.contains("well-formed"), "{out}");
    }
    let rpb = d.join("g.rpb");
    assert_eq!(run(bin().arg("convert").arg(&std).arg(&rpb)).0, 0);
    let cut = common::write(&d, "cut.rpb", &std::fs::read(&rpb).unwrap()[..499]);
    let (vcode, vout, verr) = run(bin().arg("validate").arg(&cut));
    let (acode, _, aerr) = run(bin().args(["analyze", "-a", "hb"]).arg(&cut));
    assert_eq!((vcode, acode), (2, 2), "{vout}{verr}");
    assert!(
        !verr.contains(":0:") && !vout.contains(":0:"),
        "{vout}{verr}"
    );
    assert!(verr.contains(": byte "), "{verr}");
    assert_eq!(
        verr, aerr,
        "validate and analyze word the error differently"
    );
}

#[test]
fn validate_max_errors_zero_means_no_limit() {
    let d = dir("maxerr");
    let p = d.join("v.std");
    let mut text = String::new();
    for i in 0..1500 {
        text.push_str(&format!("T{i}|rel(L)|{i}\n"));
    }
    std::fs::write(&p, text).unwrap();
    let (code, out, _) = run(bin().args(["validate", "--max-errors", "0"]).arg(&p));
    assert_eq!(code, 1);
    assert!(
        out.contains(": 1500 problem(s)\n"),
        "{}",
        out.lines().last().unwrap()
    );
    let (code, out, _) = run(bin().args(["validate"]).arg(&p));
    assert_eq!(code, 1);
    assert!(
        out.contains(": 1000 problem(s) (stopped at --max-errors)"),
        "{out}"
    );
    let (_, help, _) = run(bin().args(["validate", "--help"]));
    assert!(help.contains("0: no limit"), "{help}");
}

#[test]
fn generate_without_locks_and_its_help() {
    let d = dir("gen");
    let p = d.join("g.std");
    common::expect(0, bin().args(["generate", "--locks", "0", "-o"]).arg(&p));
    let text = std::fs::read_to_string(&p).unwrap();
    assert_eq!(text.lines().count(), 1000);
    assert!(!text.contains("acq(") && !text.contains("rel("));
    let (code, out, _) = run(bin().args(["validate"]).arg(&p));
    assert_eq!(code, 0, "{out}");
    let (_, help, _) = run(bin().args(["generate", "--help"]));
    for flag in ["--events", "--threads", "--vars", "--locks", "--seed"] {
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with(flag))
            .unwrap_or("");
        // `--events <EVENTS>  Number of events … [default: 1000]`
        let text = line.split_once('>').map_or("", |(_, t)| t).trim();
        assert!(
            !text.is_empty() && !text.starts_with("[default"),
            "{flag} has no help text:\n{help}"
        );
    }
}

#[test]
fn oracle_budget_errors_name_the_flags() {
    let t = repo().join("examples/intro.std");
    for (args, want) in [
        (vec!["--max-states", "0"], "--max-states must be positive"),
        (vec!["--max-states", "3"], "raise --max-states"),
        (vec!["--max-events", "3"], "raise --max-events"),
    ] {
        let (code, _, err) = run(bin().arg("oracle").args(&args).arg(&t));
        assert_eq!(code, 2, "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("OracleConfig"), "{args:?}: {err}");
    }
}

#[test]
fn empty_compressed_files_nul_bytes_and_bad_thread_ids_are_not_well_formed() {
    let d = dir("malformed");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "e.std.gz",
            Vec::new(),
            ": byte 0: truncated: the file is empty",
        ),
        (
            "e.rr.zst",
            Vec::new(),
            ": byte 0: truncated: the file is empty",
        ),
        ("z.rr", vec![0; 100], ":1: syntax: line contains NUL bytes"),
        ("z.csv", vec![0; 100], ":1: syntax: line contains NUL bytes"),
        (
            "b.rr",
            b"@ Rd(x,y) F L\n".to_vec(),
            ":1: syntax: thread `x` is not a number",
        ),
        ("b.rr", b"@ Rd(x,y)\n".to_vec(), ":1: syntax: thread `x`"),
        (
            "b.golog",
            b"x,WR,v,l,1\n".to_vec(),
            ":1: syntax: thread id `x` is not a decimal number",
        ),
    ];
    for (name, content, want) in cases {
        let p = d.join(name);
        std::fs::write(&p, &content).unwrap();
        let (code, out, err) = run(bin().arg("validate").arg(&p));
        assert_ne!(code, 0, "{name}: {out}");
        assert!(!out.contains("well-formed"), "{name}: {out}");
        let all = format!("{out}{err}");
        assert!(
            all.contains(&format!("{}{want}", p.display())),
            "{name}: {all}"
        );
        let (code, _, err) = run(bin().args(["analyze", "-a", "hb"]).arg(&p));
        assert_eq!(code, 2, "{name}: {err}");
    }
}

/// The lockset family groups pairs by location pair unless `--all-pairs`: the same location
/// pairs and first instances either way; grouped counts are racing accesses.
#[test]
fn lockset_family_groups_unless_all_pairs() {
    let d = dir("grouped");
    let t = d.join("t.std");
    // T1 writes x twice at location 7, T0 reads it twice at 9: 4 lockset pairs, 2 racing
    // reads (w3po: the write-read dependency pair (1, 2) only).
    std::fs::write(&t, "T1|w(x)|7\nT1|w(x)|7\nT0|r(x)|9\nT0|r(x)|9\n").unwrap();
    for a in ["lockset", "tsan-hybrid", "w3po"] {
        let (code, grouped, err) = run(bin().args(["analyze", "-a", a]).arg(&t));
        assert_eq!(code, 1, "{a}: {err}");
        let (code, all, err) = run(bin().args(["analyze", "--all-pairs", "-a", a]).arg(&t));
        assert_eq!(code, 1, "{a}: {err}");
        assert!(grouped.contains("1 location pair"), "{a}: {grouped}");
        assert!(grouped.contains("racing access"), "{a}: {grouped}");
        assert!(all.contains("at 1 location pair"), "{a}: {all}");
        assert!(!all.contains("racing access"), "{a}: {all}");
        // The first instance: the earliest second event, then the latest first event.
        let first = "(first: event 1 in T1, event 2 in T0)";
        assert!(grouped.contains(first), "{a}: {grouped}");
        assert!(all.contains(first), "{a}: {all}");
    }
}

/// The racy-event analyses keep the first racy event of each location and operation, with
/// a count, unless `--all-pairs` (alias `--all-events`): the same text either way; JSON
/// lists each group's first event, or every racy event.
#[test]
fn racy_event_analyses_group_by_location_unless_all_pairs() {
    let d = dir("grouped-racy");
    let t = d.join("t.std");
    // T1 writes x twice at location 7, T0 and T2 read it at 9: two racy reads at one
    // location (events 2 and 3).
    std::fs::write(&t, "T1|w(x)|7\nT1|w(x)|7\nT0|r(x)|9\nT2|r(x)|9\n").unwrap();
    let json = |args: &[&str]| -> serde_json::Value {
        let (code, out, err) = run(bin().args(["analyze", "--json"]).args(args).arg(&t));
        assert_eq!(code, 1, "{args:?}: {err}");
        serde_json::from_str(&out).unwrap()
    };
    for a in ["hb", "fasttrack", "shb", "wcp"] {
        let (code, grouped, err) = run(bin().args(["analyze", "-a", a]).arg(&t));
        assert_eq!(code, 1, "{a}: {err}");
        assert!(
            grouped.contains("2 racy events at 1 location"),
            "{a}: {grouped}"
        );
        for flag in ["--all-pairs", "--all-events"] {
            let (code, all, err) = run(bin().args(["analyze", flag, "-a", a]).arg(&t));
            assert_eq!(code, 1, "{a} {flag}: {err}");
            assert_eq!(all, grouped, "{a} {flag}: the same text");
        }
        let g = json(&["-a", a]);
        assert_eq!(g["racy_events"], serde_json::json!([2]), "{a}: {g}");
        assert_eq!(g["summary"]["racy_events"], 2, "{a}: {g}");
        assert_eq!(g["summary"]["racy_grouped"], true, "{a}: {g}");
        assert_eq!(g["racy_location_groups"][0]["count"], 2, "{a}: {g}");
        let e = json(&["-a", a, "--all-pairs"]);
        assert_eq!(e["racy_events"], serde_json::json!([2, 3]), "{a}: {e}");
        assert_eq!(e["summary"]["racy_events"], 2, "{a}: {e}");
        assert_eq!(e["summary"]["racy_grouped"], false, "{a}: {e}");
        assert_eq!(e["racy_location_groups"], g["racy_location_groups"], "{a}");
    }
}

/// `--jobs N` splits lockset, tsan-hybrid and w3po over N threads by variable: the same
/// report, byte for byte, for every N (other analyses run unsplit); `-j 0` is a usage error.
#[test]
fn jobs_do_not_change_reports() {
    let d = dir("jobs");
    let t = d.join("g.std");
    common::expect(
        0,
        bin()
            .args([
                "generate",
                "--events",
                "30000",
                "--threads",
                "5",
                "--vars",
                "300",
                "--locks",
                "5",
                "--seed",
                "7",
                "-o",
            ])
            .arg(&t),
    );
    let analyze = |jobs: &str, json: bool, history: bool| {
        let mut c = bin();
        c.args([
            "analyze",
            "-a",
            "lockset",
            "-a",
            "tsan-hybrid",
            "-a",
            "hb",
            "-j",
            jobs,
        ]);
        if history {
            c.args(["-a", "w3po", "--history", "2"]);
        } else {
            c.args(["-a", "w3po"]);
        }
        if json {
            c.arg("--json");
        }
        let (code, out, err) = run(c.arg(&t));
        assert_eq!(code, 1, "-j {jobs}: {err}");
        out
    };
    for (json, history) in [(false, false), (true, false), (false, true), (true, true)] {
        let one = analyze("1", json, history);
        assert!(
            one.contains("lockset") && one.contains("tsan-hybrid") && one.contains("w3po"),
            "{one}"
        );
        for jobs in ["2", "5"] {
            assert_eq!(analyze(jobs, json, history), one, "-j {jobs}");
        }
    }
    common::expect(
        2,
        bin().args(["analyze", "-a", "lockset", "-j", "0"]).arg(&t),
    );
}

/// A trace read in the wrong format is an error, not an empty trace: a RoadRunner reader
/// skips every line of an STD trace as a banner.
#[test]
fn a_trace_in_another_format_is_not_read_as_empty() {
    let d = dir("wrongformat");
    let rr = d.join("x.rr");
    std::fs::copy(repo().join("examples/intro.std"), &rr).unwrap();
    let std_file = repo().join("examples/intro.std");
    let cases: Vec<Vec<std::ffi::OsString>> = vec![
        vec![
            "analyze".into(),
            "-a".into(),
            "hb".into(),
            rr.clone().into(),
        ],
        vec!["validate".into(), rr.clone().into()],
        vec!["stats".into(), rr.clone().into()],
        vec![
            "analyze".into(),
            "-a".into(),
            "hb".into(),
            "--format".into(),
            "rr".into(),
            std_file.clone().into(),
        ],
        vec![
            "validate".into(),
            "--format".into(),
            "rr".into(),
            std_file.clone().into(),
        ],
    ];
    for args in cases {
        let (code, out, err) = run(bin().args(&args));
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(!out.contains("no races"), "{args:?}: {out}");
        assert!(!out.contains("well-formed"), "{args:?}: {out}");
        assert!(err.contains("no event in the file"), "{args:?}: {err}");
    }
    // A RoadRunner log with banners and events still reads.
    let log = common::write(&d, "ok.rr", "[RR: banner]\n@ Wr(0,x) - 1\n@ Wr(1,x) - 2\n");
    let (code, out, err) = run(bin().arg("validate").arg(&log));
    assert_eq!(code, 0, "{out}{err}");
}

/// NUL bytes inside an event line (a name) are an error, as in skipped lines.
#[test]
fn nul_bytes_in_event_lines_are_an_error() {
    let d = dir("nul");
    let t = common::write(&d, "t.std", b"T0|w(V1)|1\nT1|w(V\x001)|2\n");
    for args in [
        vec!["validate"],
        vec!["analyze", "-a", "hb"],
        vec!["analyze", "-a", "mcm"],
        vec!["stats"],
    ] {
        let (code, out, err) = run(bin().args(&args).arg(&t));
        assert_ne!(code, 0, "{args:?}: {out}");
        assert!(!out.contains("well-formed"), "{args:?}: {out}");
        let all = format!("{out}{err}");
        assert!(
            all.contains(":2: syntax: line contains NUL bytes"),
            "{args:?}: {all}"
        );
    }
}

/// `--jobs` belongs to the sharded analyses (without `--all-pairs`), `record`'s PACER
/// options to `--online pacer`, and `--all` means `--all-pairs`.
#[test]
fn jobs_all_and_record_options_are_checked() {
    let t = repo().join("examples/intro.std");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["analyze", "-a", "hb", "-j", "2"],
            "--jobs applies to lockset",
        ),
        (
            vec!["analyze", "-a", "lockset", "--all-pairs", "-j", "2"],
            "without --all-pairs",
        ),
        (
            vec!["analyze", "-a", "pacer", "--all"],
            "--all-pairs applies to",
        ),
    ];
    for (args, want) in cases {
        let (code, _, err) = run(bin().args(&args).arg(&t));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    for args in [
        vec![
            "record",
            "--online",
            "fasttrack",
            "--rate",
            "0.5",
            "--",
            "true",
        ],
        vec!["record", "--online", "hb", "--period", "5", "--", "true"],
        vec![
            "record",
            "--online",
            "fasttrack",
            "--seed",
            "5",
            "--",
            "true",
        ],
    ] {
        let (code, _, err) = run(bin().args(&args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("applies to --online pacer only"),
            "{args:?}: {err}"
        );
    }
    let (code, grouped, _) = run(bin().args(["analyze", "-a", "lockset", "--json"]).arg(&t));
    assert_eq!(code, 1);
    let (code, all, _) = run(bin()
        .args(["analyze", "-a", "lockset", "--json", "--all"])
        .arg(&t));
    assert_eq!(code, 1);
    let (code, all_pairs, _) = run(bin()
        .args(["analyze", "-a", "lockset", "--json", "--all-pairs"])
        .arg(&t));
    assert_eq!(code, 1);
    assert_eq!(all, all_pairs);
    let all = common::json(&all);
    let grouped = common::json(&grouped);
    assert_eq!(all["summary"]["grouped"], false);
    assert_eq!(grouped["summary"]["grouped"], true);
}

/// Ctrl-C or `kill` while an output is being written leaves no temporary file, and the
/// process still ends by that signal.
#[test]
fn a_fatal_signal_leaves_no_temporary_file() {
    use std::os::unix::process::ExitStatusExt;
    for (sig, out) in [(libc::SIGINT, "g.std.gz"), (libc::SIGTERM, "g.rpb")] {
        let d = dir(&format!("signal{sig}"));
        let mut child = bin()
            .args(["generate", "--events", "1000000000", "-o"])
            .arg(d.join(out))
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Wait for the temporary file to appear (the writing has begun).
        let start = std::time::Instant::now();
        while listing(&d).is_empty() {
            assert!(start.elapsed().as_secs() < 60, "no temporary file appeared");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // SAFETY: sends a signal to the child started above.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed().as_secs() > 60 {
                let _ = child.kill();
                panic!("generate did not end within 60 s of signal {sig}");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert_eq!(status.signal(), Some(sig), "{status:?}");
        assert_eq!(listing(&d), Vec::<String>::new(), "signal {sig}");
    }
}

/// `convert --drop-values` into a format without values drops the `let`/`br` events too.
#[test]
fn convert_drop_values_into_formats_without_branches() {
    let d = dir("dropbr");
    let fig1 = repo().join("tests/traces/recipe_fig1.std");
    for out in ["out.rr", "out.csv"] {
        let p = d.join(out);
        let (code, _, err) = run(bin().args(["convert", "--drop-values"]).arg(&fig1).arg(&p));
        assert_eq!(code, 0, "{out}: {err}");
        let (code, json, err) = run(bin().args(["stats", "--json"]).arg(&p));
        assert_eq!(code, 0, "{out}: {err}");
        let v = common::json(&json);
        // Fig. 1's 10 events but its one branch.
        assert_eq!(v["events"], 9, "{out}: {json}");
    }
}

/// `record` checks its output before running the program: never the program itself, a
/// trace name says a trace format, the directory exists.
#[test]
fn record_refuses_outputs_that_would_destroy_or_fail_late() {
    let d = dir("recordout");
    let prog = common::write(&d, "prog", "#!/bin/sh\ntouch \"$0.ran\"\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = std::fs::read(&prog).unwrap();
    let src = common::write(&d, "racy.c", "int main(void) { return 0; }\n");
    let cases: Vec<(Vec<std::ffi::OsString>, &str)> = vec![
        (
            vec!["-o".into(), prog.clone().into()],
            "a trace file must end in .rpb",
        ),
        (
            vec!["-o".into(), src.clone().into()],
            "a trace file must end in .rpb",
        ),
        (
            vec![
                "--online".into(),
                "hb".into(),
                "-o".into(),
                prog.clone().into(),
            ],
            "it is the program being recorded",
        ),
        (
            vec!["-o".into(), d.join("nodir/x.rpb").into()],
            "does not exist",
        ),
    ];
    for (args, want) in cases {
        let (code, _, err) = run(bin().arg("record").args(&args).arg("--").arg(&prog));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read(&prog).unwrap(), before);
    assert_eq!(
        std::fs::read_to_string(&src).unwrap(),
        "int main(void) { return 0; }\n"
    );
    assert!(!d.join("prog.ran").exists(), "the program ran");
}

/// Messages name what they are about, in the words the input has.
#[test]
fn messages_name_the_file_and_the_event() {
    let d = dir("messages");
    let t = repo().join("examples/intro.std");
    let (code, _, err) = run(bin()
        .args(["analyze", "-a", "hb", "-o", "/dev/full"])
        .arg(&t));
    assert_eq!(code, 2);
    assert!(err.contains("cannot write /dev/full"), "{err}");
    let (code, _, err) = run(bin().args(["generate", "-o"]).arg(d.join("g.golog")));
    assert_eq!(code, 2);
    assert!(
        err.contains("--no-fork-join") && err.contains("g.golog"),
        "{err}"
    );
    assert!(!err.contains("racepred:  "), "{err}");
    common::expect(
        0,
        bin()
            .args(["generate", "--no-fork-join", "-o"])
            .arg(d.join("g.golog")),
    );
    let (_, err) = common::expect(
        0,
        bin()
            .arg("elide")
            .arg(&t)
            .args(["--fraction", "0.5", "-o"])
            .arg(d.join("e.std")),
    );
    assert!(err.contains("of 13 events removed"), "{err}");
    let (code, _, err) = run(bin().args(["sample", "--rates", "1e300"]).arg(&t));
    assert_eq!(code, 2);
    assert!(err.contains("not 1e300"), "{err}");
    assert!(err.len() < 200, "{err}");
    // A violation in a binary trace (no lines) is located at its event.
    let bad = common::write(&d, "bad.std", "T0|w(x)|1\nT0|rel(L)|2\n");
    let rpb = d.join("bad.rpb");
    common::expect(0, bin().args(["convert", "--lenient"]).arg(&bad).arg(&rpb));
    let (code, out, _) = run(bin().arg("validate").arg(&rpb));
    assert_eq!(code, 1);
    assert!(out.contains("bad.rpb: event 1: release-not-held"), "{out}");
    let (code, _, err) = run(bin().args(["analyze", "-a", "hb"]).arg(&rpb));
    assert_eq!(code, 2);
    assert!(err.contains("bad.rpb: event 1: release-not-held"), "{err}");
}

/// `hbp` and `shbp` group their pairs by location pair as they find them (memory bounded
/// by the location pairs) unless `--all-pairs`: the same location pairs and first
/// instances either way, counts of racing accesses.
#[test]
fn pair_analyses_group_unless_all_pairs() {
    let d = dir("hbpgrouped");
    let t = d.join("t.std");
    // T1 writes x twice at 7, T0 writes it twice at 9: 4 HB pairs, 2 racing writes.
    std::fs::write(&t, "T1|w(x)|7\nT1|w(x)|7\nT0|w(x)|9\nT0|w(x)|9\n").unwrap();
    for a in ["hbp", "shbp"] {
        let (code, grouped, err) = run(bin().args(["analyze", "-a", a]).arg(&t));
        assert_eq!(code, 1, "{a}: {err}");
        let (code, all, err) = run(bin().args(["analyze", "--all-pairs", "-a", a]).arg(&t));
        assert_eq!(code, 1, "{a}: {err}");
        assert!(
            grouped.contains("1 location pair (write-write 1"),
            "{a}: {grouped}"
        );
        assert!(grouped.contains("2 racing accesses"), "{a}: {grouped}");
        assert!(
            all.contains("4 race pairs at 1 location pair"),
            "{a}: {all}"
        );
        let first = "(first: event 1 in T1, event 2 in T0)";
        assert!(grouped.contains(first), "{a}: {grouped}");
        assert!(all.contains(first), "{a}: {all}");
        let (_, json, _) = run(bin().args(["analyze", "--json", "-a", a]).arg(&t));
        let v = common::json(&json);
        assert_eq!(v["summary"]["grouped"], true, "{json}");
        assert_eq!(v["summary"]["racing_accesses"], 2, "{json}");
    }
}
