//! The value-level STD extension through the commands that copy or check a trace:
//! `convert` keeps values (or refuses to lose them), `validate` checks them, `stats` says so.

use std::path::{Path, PathBuf};
mod common;
use common::{bin, run};

/// A fresh directory per test.
fn dir(test: &str) -> PathBuf {
    common::fresh_dir("cli-values", test)
}

fn fig1() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/traces/recipe_fig1.std")
}

/// The race pairs `analyze -a recipe-alt --json` reports on `trace`.
fn recipe_alt_pairs(trace: &Path) -> serde_json::Value {
    let (code, out, err) = run(bin()
        .args(["analyze", "-a", "recipe-alt", "--json"])
        .arg(trace));
    // 1: races found.
    assert_eq!(code, 1, "{err}");
    let v = common::json(&out);
    v["pairs"].clone()
}

#[test]
fn convert_to_std_keeps_values_and_alternative_paths() {
    let d = dir("roundtrip");
    let (out, out2) = (d.join("out.std"), d.join("out2.std"));
    common::expect(0, bin().arg("convert").arg(fig1()).arg(&out));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("T2|r(y)->a=5|4"), "{text}");
    assert!(text.contains("T2|alt(4)|r(x)->c|7"), "{text}");
    common::expect(0, bin().arg("convert").arg(&out).arg(&out2));
    assert_eq!(text, std::fs::read_to_string(&out2).unwrap());
    let pairs = recipe_alt_pairs(&fig1());
    assert_eq!(pairs.as_array().map(Vec::len), Some(4), "{pairs}");
    assert_eq!(recipe_alt_pairs(&out), pairs);
}

#[test]
fn convert_keeps_mbegin_addresses_and_compresses() {
    let d = dir("mbegin");
    let input = common::write(&d, "in.std", "T0|mbegin(M;a,b)|1\nT0|w(x)=2|2\nT0|r(x)->r=2|3\nT0|br(r==2)|4\nT0|alt(4)|w(y)=1|5\nT0|mend(M)|6\n");
    let (out, back) = (d.join("out.std.gz"), d.join("back.std"));
    common::expect(0, bin().arg("convert").arg(&input).arg(&out));
    common::expect(0, bin().arg("convert").arg(&out).arg(&back));
    let text = std::fs::read_to_string(&back).unwrap();
    assert!(text.starts_with("T0|mbegin(M;a,b)|1\n"), "{text}");
    assert!(text.contains("T0|alt(4)|w(y)=1|5\n"), "{text}");
    assert!(text.contains("T0|r(x)->r=2|3\n"), "{text}");
}

#[test]
fn convert_to_binary_keeps_values_and_alternative_paths() {
    let d = dir("binary");
    let (rpb, back) = (d.join("out.rpb.zst"), d.join("back.std"));
    common::expect(0, bin().arg("convert").arg(fig1()).arg(&rpb));
    // The SMT analyses read the values from the binary file: the same races.
    assert_eq!(recipe_alt_pairs(&rpb), recipe_alt_pairs(&fig1()));
    let (code, out, err) = run(bin().arg("stats").arg(&rpb));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("values: yes"), "{out}");
    common::expect(0, bin().arg("validate").arg(&rpb));
    // And back to STD with the values and the alternative path.
    common::expect(0, bin().arg("convert").arg(&rpb).arg(&back));
    let text = std::fs::read_to_string(&back).unwrap();
    assert!(text.contains("T2|r(y)->a=5|4"), "{text}");
    assert!(text.contains("T2|alt(4)|r(x)->c|7"), "{text}");
    assert_eq!(recipe_alt_pairs(&back), recipe_alt_pairs(&fig1()));
}

#[test]
fn convert_to_another_format_refuses_to_drop_values() {
    // Binary output keeps values now; RoadRunner cannot hold them. (Fig. 1 has a branch,
    // which RoadRunner cannot even write, so a trace of plain accesses with values.)
    let d = dir("refuse");
    let input = common::write(&d, "in.std", "T0|fork(T1)|1\nT0|w(x)=1|2\nT1|r(x)->a=1|3\n");
    let out = d.join("out.rr");
    let (_, err) = common::expect(2, bin().arg("convert").arg(&input).arg(&out));
    assert!(err.contains("carries values"), "{err}");
    assert!(err.contains("--drop-values"), "{err}");
    assert!(!out.exists(), "no output file after a refusal");
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        1,
        "no temporary left (only the input)"
    );
}

#[test]
fn convert_drop_values_keeps_the_events_only() {
    let d = dir("drop");
    let (rpb, std_out) = (d.join("out.rpb"), d.join("out.std"));
    common::expect(
        0,
        bin()
            .args(["convert", "--drop-values"])
            .arg(fig1())
            .arg(&rpb),
    );
    let (code, out, _) = run(bin().args(["stats", "--json"]).arg(&rpb));
    assert_eq!(code, 0);
    let v = common::json(&out);
    assert_eq!(v["events"], 10);
    assert_eq!(v["values"], false);
    common::expect(
        0,
        bin()
            .args(["convert", "--drop-values"])
            .arg(fig1())
            .arg(&std_out),
    );
    let text = std::fs::read_to_string(&std_out).unwrap();
    assert!(text.contains("T2|r(y)|4\n"), "{text}");
    assert!(!text.contains("alt("), "{text}");
    assert!(!text.contains("->"), "{text}");
}

#[test]
fn validate_checks_the_recorded_values() {
    let (code, out, err) = run(bin().arg("validate").arg(fig1()));
    assert_eq!(code, 0, "{out}{err}");
    let d = dir("validate");
    let bad = d.join("bad.std");
    // T2 reads x = 7, but T1's write at location 2 (the last before it) wrote 1.
    let text = std::fs::read_to_string(fig1())
        .unwrap()
        .replace("T2|r(x)->b=1|5", "T2|r(x)->b=7|5");
    std::fs::write(&bad, &text).unwrap();
    let line = text.lines().position(|l| l == "T2|r(x)->b=7|5").unwrap() + 1;
    let (code, out, err) = run(bin().arg("validate").arg(&bad));
    assert_eq!(code, 1, "{out}{err}");
    let want = format!("{}:{line}: ", bad.display());
    let first = out.lines().next().unwrap_or("");
    assert!(first.starts_with(&want), "{out}");
    assert!(first.contains("observed 7"), "{out}");
    let (code, out, _) = run(bin().args(["validate", "--json"]).arg(&bad));
    assert_eq!(code, 1);
    let v = common::json(&out);
    assert_eq!(v["well_formed"], false);
    assert_eq!(v["violations"][0]["line"], line as u64);
}

#[test]
fn stats_says_a_trace_has_values() {
    let (code, out, _) = run(bin().arg("stats").arg(fig1()));
    assert_eq!(code, 0);
    assert!(
        out.lines()
            .any(|l| l == "values: yes (value-level STD extension)"),
        "{out}"
    );
    let (code, out, _) = run(bin().args(["stats", "--json"]).arg(fig1()));
    assert_eq!(code, 0);
    let v = common::json(&out);
    assert_eq!(v["values"], true);
    let plain = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/intro.std");
    let (code, out, _) = run(bin().arg("stats").arg(&plain));
    assert_eq!(code, 0);
    assert!(!out.contains("values"), "{out}");
    let (_, out, _) = run(bin().args(["stats", "--json"]).arg(&plain));
    let v = common::json(&out);
    assert_eq!(v["values"], false);
}
