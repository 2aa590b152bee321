//! `racepred check` on the papers' example traces (`tests/traces/*.std`): every location
//! pair with a predictable race (the exact oracle's, from `racepred oracle --json`) is
//! `race` with a witness that `racepred replay` accepts, nothing else is `race`, and no
//! pair the oracle finds is `no-race`. Also `syncp --witness` through `analyze`, and the
//! JSON and SARIF shapes.

mod common;

use std::collections::BTreeSet;

use common::{bin, fresh_dir, repo, run};
use serde_json::Value;

type Key = (String, String, String);

fn key(v: &Value) -> Key {
    (
        v["first_loc"].as_str().unwrap().to_string(),
        v["second_loc"].as_str().unwrap().to_string(),
        v["kind"].as_str().unwrap().to_string(),
    )
}

/// The plain example traces (value traces carry RECIPE's relaxed semantics, which the
/// oracle does not model).
fn example_traces() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(repo().join("tests/traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "std"))
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            !text
                .lines()
                .any(|l| l.contains("->") || l.contains(")=") || l.contains("|br("))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn verdicts_on_the_example_traces_match_the_oracle() {
    let traces = example_traces();
    assert!(traces.len() >= 15, "only {} example traces", traces.len());
    let mut skipped = 0;
    let n = traces.len();
    for t in traces {
        let (code, out, err) = run(bin().arg("oracle").arg("--json").arg(&t));
        if code == 2 && err.contains("held by") {
            // An ill-formed example (the SSHB paper's inaccurate traces): check refuses it
            // as the oracle does.
            let (code, _, err2) = run(bin().arg("check").arg(&t));
            assert_eq!(code, 2, "{}: {err2}", t.display());
            skipped += 1;
            continue;
        }
        assert!(code == 0 || code == 1, "{}: oracle: {err}", t.display());
        let all = common::json(&out);
        let o = all
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["extra"]["notion"] == "predictable")
            .unwrap();
        let racy: BTreeSet<Key> = o["location_pairs"]
            .as_array()
            .unwrap()
            .iter()
            .map(key)
            .collect();
        let dir = fresh_dir("check", &t.file_stem().unwrap().to_string_lossy());
        let (code, out, err) = run(bin()
            .arg("check")
            .arg("--json")
            .arg("--witness")
            .arg(&dir)
            .arg(&t));
        let v: Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{}: {e}: {err}", t.display()));
        let unknown = v["summary"]["unknown"].as_u64().unwrap();
        let want = match (racy.is_empty(), unknown) {
            (false, _) => 1,
            (true, 0) => 0,
            (true, _) => 3,
        };
        assert_eq!(code, want, "{}: {err}", t.display());
        let mut races = BTreeSet::new();
        for w in v["verdicts"].as_array().unwrap() {
            let k = key(w);
            match w["verdict"].as_str().unwrap() {
                "race" => {
                    let file = w["witness"]
                        .as_str()
                        .unwrap_or_else(|| panic!("{}: race {k:?} without a witness", t.display()));
                    let (code, _, err) = run(bin().arg("replay").arg(&t).arg(file));
                    assert_eq!(code, 0, "{}: {file} does not replay: {err}", t.display());
                    races.insert(k);
                }
                "no-race" => assert!(
                    !racy.contains(&k),
                    "{}: no race claimed for {k:?}",
                    t.display()
                ),
                "unknown" => assert!(
                    w["reason"].is_string(),
                    "{}: unknown without reason",
                    t.display()
                ),
                other => panic!("verdict {other}"),
            }
        }
        assert_eq!(races, racy, "{}", t.display());
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(
        n - skipped >= 12,
        "only {} well-formed examples",
        n - skipped
    );
}

#[test]
fn text_json_sarif_and_exit_status() {
    let t = repo().join("examples/intro.std");
    let (code, out, _) = run(bin().arg("check").arg(&t));
    assert_eq!(code, 1);
    assert!(
        out.starts_with("check: 3 location pairs in 13 events"),
        "{out}"
    );
    assert!(out.contains("race     write-read"), "{out}");
    assert!(out.contains("by syncp"), "{out}");
    let (_, out, _) = run(bin().arg("check").arg("--json").arg(&t));
    let v = common::json(&out);
    assert_eq!(v["summary"]["race"], 1);
    assert_eq!(v["summary"]["no_race"], 2);
    assert_eq!(v["complete"], true);
    let (_, out, _) = run(bin().arg("check").arg("--sarif").arg(&t));
    let v = common::json(&out);
    let levels: Vec<&str> = v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["level"].as_str().unwrap())
        .collect();
    assert_eq!(levels, ["error", "note", "note"]);
    assert_eq!(v["runs"][0]["invocations"][0]["executionSuccessful"], true);
    // Without the SMT stage the two pairs syncp does not prove are still decided: in each,
    // the first access is ordered before the second's thread by reads-from (`trf`).
    let (code, out, _) = run(bin().arg("check").arg("--no-smt").arg("--json").arg(&t));
    assert_eq!(code, 1);
    let v = common::json(&out);
    assert_eq!(v["summary"]["no_race"], 2);
    assert_eq!(v["complete"], true);
    for w in v["verdicts"].as_array().unwrap() {
        if w["verdict"] == "no-race" {
            assert!(w["by"].as_str().unwrap().starts_with("trf:"), "{w}");
        }
    }
    // A pair only the SMT stage decides (critical sections nested in opposite orders: no
    // race, but no program-order or reads-from path): unknown without it, with the reason,
    // exit status 3, and an unsuccessful SARIF run.
    let t = repo().join("tests/traces/w3po_lockset_deadlock.std");
    let (code, out, _) = run(bin().arg("check").arg("--no-smt").arg("--json").arg(&t));
    assert_eq!(code, 3);
    let v = common::json(&out);
    assert_eq!(v["summary"]["unknown"], 1);
    assert_eq!(v["complete"], false);
    let reason = v["verdicts"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("--no-smt"), "{reason}");
    let (_, out, _) = run(bin().args(["check", "--no-smt", "--sarif"]).arg(&t));
    let v = common::json(&out);
    assert_eq!(v["runs"][0]["invocations"][0]["executionSuccessful"], false);
    assert_eq!(v["runs"][0]["results"][0]["level"], "warning");
    let (code, out, _) = run(bin().arg("check").arg(&t));
    assert_eq!(code, 0, "the SMT stage proves it race-free");
    assert!(out.contains("maximal causal model of its slice"), "{out}");
    // A slice over the limit: unknown, and the reason names the limit.
    let (code, out, _) = run(bin().args(["check", "--max-slice", "2", "--json"]).arg(&t));
    assert_eq!(code, 3);
    let v = common::json(&out);
    let reason = v["verdicts"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("--max-slice"), "{reason}");
}

/// A pair 60 000 events apart: `mcm` in windows cannot ask it, on slices it finds it (with
/// a witness that replays) and `check` proves the other location pairs race-free.
#[test]
fn slices_ask_pairs_wherever_they_lie() {
    let dir = fresh_dir("check", "slices");
    let t = dir.join("far.std");
    let mut text = String::from("T0|fork(T1)|1\nT0|w(x)|2\n");
    for _ in 0..20_000 {
        text.push_str("T0|acq(l)|3\nT0|w(y)|4\nT0|rel(l)|5\n");
    }
    text.push_str("T1|acq(l)|6\nT1|r(z)|7\nT1|rel(l)|8\nT1|w(x)|9\n");
    std::fs::write(&t, text).unwrap();
    let (code, out, err) = run(bin()
        .args(["analyze", "-a", "mcm", "--window", "1000", "--json"])
        .arg(&t));
    assert_ne!(code, 1, "{err}");
    let v = common::json(&out);
    assert_eq!(v["pairs"].as_array().unwrap().len(), 0, "{out}");
    let wdir = dir.join("w");
    let (code, out, err) = run(bin()
        .args(["analyze", "-a", "mcm", "--slices", "--json", "--witness"])
        .arg(&wdir)
        .arg(&t));
    assert_eq!(code, 1, "{err}");
    let v = common::json(&out);
    let r = &v;
    let locs: BTreeSet<(String, String)> = r["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["first_loc"].to_string(), p["second_loc"].to_string()))
        .collect();
    assert!(locs.contains(&("\"2\"".into(), "\"9\"".into())), "{locs:?}");
    assert_eq!(r["complete"], true, "{out}");
    for f in std::fs::read_dir(&wdir).unwrap() {
        let (code, out, err) = run(bin().arg("replay").arg(&t).arg(f.unwrap().path()));
        assert_eq!(code, 0, "{out}{err}");
    }
    // check: the x pair is a race (T1's section can run before all of T0's).
    let (code, out, err) = run(bin().args(["check", "--json"]).arg(&t));
    assert_eq!(code, 1, "{err}");
    let v = common::json(&out);
    assert_eq!(v["summary"]["unknown"], 0, "{out}");
    // Options of the slices: only with --slices, and not for recipe-alt.
    let (code, _, err) = run(bin()
        .args(["analyze", "-a", "mcm", "--max-slice", "5"])
        .arg(&t));
    assert_eq!(code, 2);
    assert!(err.contains("--slices"), "{err}");
    let (code, _, err) = run(bin()
        .args(["analyze", "-a", "recipe-alt", "--slices"])
        .arg(&t));
    assert_eq!(code, 2);
    assert!(err.contains("recipe"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn syncp_witnesses_from_analyze_replay() {
    let t = repo().join("examples/intro.std");
    let dir = fresh_dir("check", "analyze-witness");
    let (code, out, err) = run(bin()
        .args(["analyze", "-a", "syncp", "--all-pairs", "--witness"])
        .arg(&dir)
        .arg(&t));
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("1 witness file(s)"), "{out}");
    let file = dir.join("syncp-4-6.std");
    let (code, out, err) = run(bin().arg("replay").arg(&t).arg(&file));
    assert_eq!(code, 0, "{out}{err}");
    // --witness belongs to the analyses that write witnesses.
    let (code, _, err) = run(bin()
        .args(["analyze", "-a", "hb", "--witness"])
        .arg(&dir)
        .arg(&t));
    assert_eq!(code, 2);
    assert!(err.contains("syncp"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
