//! SARIF output checked against the OASIS SARIF 2.1.0 JSON schema (`tests/data/`), with
//! raw location names, with a location table, and with a source root.

use std::path::Path;

use racepred::analysis::{self, AnalysisKind, AnalysisOptions};
use racepred::report::{sarif, EventLines, LocationTable, RaceReport, ReportContext};
use racepred::trace::std_format::StdReader;
use racepred::trace::Trace;

fn schema() -> jsonschema::Validator {
    let text = include_str!("data/sarif-schema-2.1.0.json");
    let schema: serde_json::Value = serde_json::from_str(text).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

fn check(log: &serde_json::Value) {
    let v = schema();
    let errors: Vec<String> = v
        .iter_errors(log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "SARIF does not match the schema:\n{}\n{}",
        errors.join("\n"),
        serde_json::to_string_pretty(log).unwrap()
    );
}

/// Races at every kind of location: integers (a table maps some), `file:line`,
/// `file:line:0` (no SARIF column), names with spaces, and other text.
const TRACE: &str = "# races at many kinds of location\n\
T0|fork(T1)|0\n\
T0|w(x)|1\n\
T1|r(x)|2\n\
T1|w(y)|Main.java:12:0\n\
\n\
T0|w(y)|src/a b/Q.java:3\n\
T0|w(z)|clinit:pkg/C\n\
T1|w(z)|4\n\
T1|acq(L)|5\n\
T1|w(u)|/abs/R.java:7:2\n\
T1|rel(L)|6\n\
T0|r(u)|7\n";

fn reports(trace: &Trace) -> Vec<RaceReport> {
    let mut an: Vec<_> = [
        AnalysisKind::Hbp,
        AnalysisKind::FastTrack,
        AnalysisKind::Sshb,
    ]
    .into_iter()
    .map(|k| analysis::create(k, &AnalysisOptions::default()).unwrap())
    .collect();
    analysis::run_trace(trace, &mut an)
}

#[test]
fn sarif_matches_the_2_1_0_schema() {
    let trace = Trace::read_from(&mut StdReader::new(TRACE.as_bytes())).unwrap();
    let reports = reports(&trace);
    assert!(reports.iter().all(|r| r.has_races()));

    // Raw names.
    let log = sarif::to_sarif(&reports, "t.std", &trace.names);
    check(&log);
    let locs: Vec<&serde_json::Value> = log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["locations"][0])
        .collect();
    assert!(locs.iter().any(|l| l.get("physicalLocation").is_some()));
    assert!(locs.iter().any(|l| l.get("logicalLocations").is_some()));

    // A table, trace lines and a source root.
    let table = LocationTable::parse("1\tA.java:5:2\n2\tB.java:7:0\n4\tpkg/C.java:9\n").unwrap();
    let mut ctx = ReportContext::new("t.std", &trace.names);
    ctx.locations = Some(&table);
    ctx.lines = EventLines::of_trace(&trace.lines);
    check(&sarif::sarif_log(&reports, &ctx));
    ctx.source_root = Some(Path::new("/abs"));
    let log = sarif::sarif_log(&reports, &ctx);
    check(&log);
    let text = serde_json::to_string(&log).unwrap();
    assert!(text.contains(r#""uriBaseId":"SRCROOT""#), "{text}");
    assert!(text.contains(r#""uri":"src/a%20b/Q.java""#), "{text}");
    assert!(text.contains(r#""uri":"R.java""#), "{text}");
    assert!(text.contains(r#""uri":"B.java""#), "{text}");
}

#[test]
fn the_schema_rejects_what_sarif_forbids() {
    // The check has teeth: a column 0 and a missing version are errors.
    let bad = serde_json::json!({
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{
            "message": {"text": "m"},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": "a.c"}, "region": {"startLine": 1, "startColumn": 0}
            }}]
        }]}]
    });
    assert!(!schema().is_valid(&bad));
    assert!(!schema().is_valid(&serde_json::json!({"runs": []})));
}
