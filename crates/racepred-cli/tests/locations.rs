//! Source locations a person can open: `--locations FILE`, sidecar tables,
//! `File.java:line:col` in text, JSON, SARIF and DOT, and "event N (line L)".

use std::path::{Path, PathBuf};
mod common;
use common::{bin, run};

/// Runs `cmd`, which must find races (exit status 1), and parses its JSON output.
fn racy_json(cmd: &mut std::process::Command) -> serde_json::Value {
    let (code, out, err) = run(cmd);
    assert_eq!(code, 1, "{err}");
    common::json(&out)
}

/// A fresh directory per test.
fn dir(test: &str) -> PathBuf {
    common::fresh_dir("locs", test)
}

/// Integer locations as RAPID writes them, a header comment and a blank line, so event i is
/// not on line i + 1: T1's write (loc 2, event 1, line 3) races with T0's write (loc 3,
/// event 2, line 5) and read (loc 4, event 3, line 6).
const TRACE: &str = "# made for a test\nT0|fork(T1)|1\nT1|w(x)|2\n\nT0|w(x)|3\nT0|r(x)|4\n";
const TABLE: &str = "# id<TAB>source\n1\tMain.java:10:0\n2\tWorker.java:20:5\n3\tMain.java:30:9\n";

fn setup(name: &str, table_at: &str) -> (PathBuf, PathBuf) {
    let d = dir(name);
    let t = common::write(&d, "run.std", TRACE);
    let table = d.join(table_at);
    std::fs::create_dir_all(table.parent().unwrap()).unwrap();
    std::fs::write(&table, TABLE).unwrap();
    (d, t)
}

#[test]
fn analyze_picks_up_a_sidecar_table_and_says_which() {
    for at in ["run.std.locs", "run.locs", "locs/run.locs"] {
        let (_d, t) = setup(&at.replace('/', "_"), at);
        let (code, out, err) = run(bin().args(["analyze", "-a", "hbp"]).arg(&t));
        assert_eq!(code, 1, "{err}");
        let table = t.parent().unwrap().join(at);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            format!(
                "locations: {} (3 of 4 trace locations mapped)",
                table.display()
            )
        );
        assert_eq!(
            lines[2],
            "  1x  write-write  x at Worker.java:20:5 -> Main.java:30:9  \
             (first: event 1 (line 3) in T1, event 2 (line 5) in T0)"
        );
        // Location 4 has no entry: its trace name stays.
        assert!(lines[3].contains("x at Worker.java:20:5 -> 4  "), "{out}");
    }
}

#[test]
fn sidecar_of_a_compressed_trace_and_the_no_locations_switch() {
    let (d, t) = setup("gz", "run.locs");
    let gz = d.join("run.std.gz");
    common::expect(0, bin().arg("convert").arg(&t).arg(&gz));
    std::fs::remove_file(&t).unwrap();
    let (_, out, _) = run(bin().args(["analyze", "-a", "fasttrack"]).arg(&gz));
    assert!(out.contains("w(x) at Main.java:30:9"), "{out}");
    // The converted trace has no comment: one event per line, no "(line L)".
    assert!(out.contains("(first: event 2 in T0)"), "{out}");
    let (_, out, _) = run(bin()
        .args(["analyze", "-a", "fasttrack", "--no-locations"])
        .arg(&gz));
    assert!(
        !out.contains("locations:") && out.contains("w(x) at 3"),
        "{out}"
    );
}

#[test]
fn locations_flag_json_fields() {
    let (d, t) = setup("json", "elsewhere/table.txt");
    let table = d.join("elsewhere/table.txt");
    let v = racy_json(
        bin()
            .args(["analyze", "-a", "hbp", "--json", "--locations"])
            .arg(&table)
            .arg(&t),
    );
    assert_eq!(v["locations"], table.display().to_string());
    let p = &v["pairs"][0];
    // SPEC §5 fields keep the trace's names; the sources come beside them.
    assert_eq!(
        (&p["first_loc"], &p["second_loc"]),
        (&"2".into(), &"3".into())
    );
    assert_eq!(p["first_source"], "Worker.java:20:5");
    assert_eq!(p["second_source"], "Main.java:30:9");
    assert_eq!(v["pairs"][1]["second_source"], serde_json::Value::Null);
    let g = &v["location_pairs"][0];
    assert_eq!(
        (&g["first_line"], &g["second_line"]),
        (&3.into(), &5.into())
    );
    // Without a table: `locations` is null and no source fields.
    let (_, out, _) = run(bin()
        .args(["analyze", "-a", "hbp", "--json", "--no-locations"])
        .arg(&t));
    let v = common::json(&out);
    assert_eq!(v["locations"], serde_json::Value::Null);
    assert!(v["pairs"][0].get("first_source").is_none());
}

#[test]
fn a_bad_table_is_an_error_named_by_file_and_line_or_a_warning_for_a_sidecar() {
    let (d, t) = setup("bad", "run.locs");
    let bad = common::write(&d, "bad.locs", "1\tMain.java:1:1\n2 Main.java:2:2\n");
    let (code, _, err) = run(bin()
        .args(["analyze", "-a", "hb", "--locations"])
        .arg(&bad)
        .arg(&t));
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!("{}:2: syntax:", bad.display())),
        "{err}"
    );
    common::expect(
        2,
        bin()
            .args(["analyze", "-a", "hb", "--locations"])
            .arg(d.join("missing.locs"))
            .arg(&t),
    );
    // A malformed sidecar: warned about, not used; the analysis still runs.
    std::fs::write(d.join("run.locs"), "oops\n").unwrap();
    let (code, out, err) = run(bin().args(["analyze", "-a", "hb"]).arg(&t));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("warning") && err.contains("run.locs:1:"),
        "{err}"
    );
    assert!(!out.contains("locations:"), "{out}");
    // A table of another trace: a warning.
    std::fs::write(d.join("run.locs"), "99\tOther.java:1:1\n").unwrap();
    let (_, _, err) = run(bin().args(["analyze", "-a", "hb"]).arg(&t));
    assert!(
        err.contains("maps none of the trace's 4 location names"),
        "{err}"
    );
}

#[test]
fn sarif_physical_locations_relative_to_the_source_root() {
    let (d, t) = setup("sarif", "run.locs");
    let root = d.join("src");
    std::fs::create_dir_all(&root).unwrap();
    let v = racy_json(
        bin()
            .args(["analyze", "-a", "hbp", "--sarif", "--source-root"])
            .arg(&root)
            .arg(&t),
    );
    let run0 = &v["runs"][0];
    let base = run0["originalUriBaseIds"]["SRCROOT"]["uri"]
        .as_str()
        .unwrap();
    assert!(
        base.starts_with("file:///") && base.ends_with("/src/"),
        "{base}"
    );
    let r = &run0["results"][0];
    let pl = &r["locations"][0]["physicalLocation"];
    assert_eq!(
        pl["artifactLocation"],
        serde_json::json!({"uri": "Main.java", "uriBaseId": "SRCROOT"})
    );
    assert_eq!(
        pl["region"],
        serde_json::json!({"startLine": 30, "startColumn": 9})
    );
    // Location 4 has no entry and is no file:line: a logical location.
    assert_eq!(
        run0["results"][1]["locations"][0]["logicalLocations"][0]["name"],
        "4"
    );
    assert_eq!(
        run0["properties"]["locations"],
        d.join("run.locs").display().to_string()
    );
}

#[test]
fn diagnose_details_and_dot_show_locations_and_lines() {
    let (d, t) = setup("diagnose", "run.locs");
    let dot = d.join("g.dot");
    let (code, out, err) = run(bin()
        .args(["diagnose", "--details", "--dot"])
        .arg(&dot)
        .arg(&t));
    assert_eq!(code, 1, "{err}");
    assert!(
        out.contains(&format!(
            "locations           {}",
            d.join("run.locs").display()
        )),
        "{out}"
    );
    assert!(
        out.contains(
            "0 write-write T1#w(x)@1 (line 3) at Worker.java:20:5 — \
             T0#w(x)@2 (line 5) at Main.java:30:9: guaranteed"
        ),
        "{out}"
    );
    assert!(out.contains("T0#r(x)@3 (line 6) at 4: guaranteed"), "{out}");
    let g = std::fs::read_to_string(&dot).unwrap();
    assert!(g.starts_with("digraph"), "{g}");
    // A maybe race: its witness path's nodes carry their locations.
    let d2 = dir("diagnose-maybe");
    let t2 = common::write(
        &d2,
        "m.std",
        "T2|r(x)|1\nT1|w(y)|2\nT1|w(x)|3\n#\nT2|w(y)|4\n",
    );
    std::fs::write(d2.join("m.locs"), "2\tA.java:2:1\n4\tB.java:4:1\n").unwrap();
    let dot2 = d2.join("g.dot");
    let (_, out, err) = run(bin()
        .args(["diagnose", "--details", "--dot"])
        .arg(&dot2)
        .arg(&t2));
    assert!(
        out.contains("T2#w(y)@3 (line 5) at B.java:4:1: maybe"),
        "{out}{err}"
    );
    assert!(out.contains("path: T1#w(y)@1 at A.java:2:1 -po->"), "{out}");
    let g = std::fs::read_to_string(&dot2).unwrap();
    assert!(g.contains(r#"[label="T1#w(y)@1\nA.java:2:1"]"#), "{g}");
    assert!(
        g.contains(r#"[label="T2#w(y)@3\nB.java:4:1, line 5"]"#),
        "{g}"
    );
}

#[test]
fn oracle_and_sample_use_the_table() {
    let (d, t) = setup("oracle", "run.locs");
    let (code, out, err) = run(bin().arg("oracle").arg(&t));
    assert_eq!(code, 1, "{err}");
    assert!(out.starts_with("locations: "), "{out}");
    assert!(
        out.contains("x at Worker.java:20:5 -> Main.java:30:9  (first: event 1 (line 3) in T1"),
        "{out}"
    );
    let csv = d.join("races.csv");
    let (code, out, err) = run(bin()
        .args([
            "sample", "--rates", "1", "--trials", "1", "--period", "1", "--csv",
        ])
        .arg(&csv)
        .arg(&t));
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("locations: "), "{err}");
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert!(
        rows.starts_with(
            "rate,race,first_loc,second_loc,dynamic_races,detection,first_source,second_source\n"
        ),
        "{rows}"
    );
    assert!(rows.contains(",Main.java:30:9\n"), "{rows}");
    let (_, out, _) = run(bin()
        .args([
            "sample", "--rates", "1", "--trials", "1", "--period", "1", "--json",
        ])
        .arg(&t));
    let v = common::json(&out);
    assert_eq!(
        v["locations"],
        Path::new(&d).join("run.locs").display().to_string()
    );
    assert_eq!(v["distinct"][0]["second_source"], "Main.java:30:9");
}
