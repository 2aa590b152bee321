//! The machine-readable report (SPEC §5): the exact fields `analysis`, `trace`, `events`,
//! `pairs` (`first`, `second`, `kind`, `first_loc`, `second_loc`, `variable`, and `verdict`
//! where the analysis classifies), `racy_events` and `summary` (`pairs`, `location_pairs`,
//! `racy_events`, `racy_locations`), plus `report_kind`, per-pair threads, per-kind totals,
//! the location groups, `notes` and `extra`, and `complete` (false, with the reason in
//! `incomplete`, when the analysis did not examine everything). Formatting only. A report whose racy events are
//! grouped by location ([`RaceReport::racy_counts`]) lists each group's first racy event in
//! `racy_events`; `summary.racy_events` counts them all and `summary.racy_grouped` is true.
//!
//! Source locations: `locations` names the location table in use (`null` without one).
//! With a table, every pair and location group also carries `first_source` /
//! `second_source` (racy groups: `source`): the table's text for the raw `first_loc` /
//! `second_loc` (`loc`), or `null` where the table has no entry. Location groups carry
//! `first_line` / `second_line` (racy groups: `line`), the trace-file lines of their first
//! occurrence, when the input has lines.

use serde_json::{json, Map, Value};

use super::text::{group_locations, racy_location_groups, verdict_name};
use super::{RaceReport, ReportContext};
use crate::trace::Names;

/// `report` as one JSON object, with raw location names.
pub fn to_json(report: &RaceReport, trace: &str, names: &Names) -> Value {
    report_json(report, &ReportContext::new(trace, names))
}

/// `report` as one JSON object.
pub fn report_json(report: &RaceReport, ctx: &ReportContext<'_>) -> Value {
    let r = report;
    let (trace, names, locs) = (ctx.trace_path, ctx.names, ctx.locs());
    let with_sources = ctx.locations.is_some();
    let source = |l| -> Value { locs.source(l).map_or(Value::Null, Value::from) };
    let line = |i| -> Option<Value> { ctx.lines.line(i).map(Value::from) };
    // An event's call sites, when the trace's calling contexts are known.
    let stack =
        |i: u64| -> Option<Value> { ctx.stacks.map(|_| Value::from(ctx.stack(i).to_vec())) };
    let pairs: Vec<Value> = r
        .pairs
        .iter()
        .map(|p| {
            let mut o = Map::new();
            o.insert("first".into(), p.first.into());
            o.insert("second".into(), p.second.into());
            o.insert("kind".into(), p.kind.name().into());
            o.insert("first_loc".into(), names.loc(p.first_event.loc).into());
            o.insert("second_loc".into(), names.loc(p.second_event.loc).into());
            o.insert("variable".into(), names.var(p.first_event.var()).into());
            o.insert(
                "first_thread".into(),
                names.thread(p.first_event.thread).into(),
            );
            o.insert(
                "second_thread".into(),
                names.thread(p.second_event.thread).into(),
            );
            if let Some(v) = p.verdict {
                o.insert("verdict".into(), verdict_name(v).into());
            }
            if with_sources {
                o.insert("first_source".into(), source(p.first_event.loc));
                o.insert("second_source".into(), source(p.second_event.loc));
            }
            if let (Some(a), Some(b)) = (stack(p.first), stack(p.second)) {
                o.insert("first_stack".into(), a);
                o.insert("second_stack".into(), b);
            }
            Value::Object(o)
        })
        .collect();
    let groups = r.location_groups();
    let location_pairs: Vec<Value> = groups
        .iter()
        .map(|g| {
            let p = &r.pairs[g.first_pair];
            let mut v = json!({
                "first_loc": names.loc(p.first_event.loc),
                "second_loc": names.loc(p.second_event.loc),
                "kind": p.kind.name(),
                "variable": names.var(p.first_event.var()),
                "count": g.count,
                "first": p.first,
                "second": p.second,
            });
            if with_sources {
                v["first_source"] = source(p.first_event.loc);
                v["second_source"] = source(p.second_event.loc);
            }
            if let (Some(a), Some(b)) = (line(p.first), line(p.second)) {
                v["first_line"] = a;
                v["second_line"] = b;
            }
            if let (Some(a), Some(b)) = (stack(p.first), stack(p.second)) {
                v["first_stack"] = a;
                v["second_stack"] = b;
            }
            v
        })
        .collect();
    let racy_groups = racy_location_groups(r);
    let racy_locations: Vec<Value> = racy_groups
        .iter()
        .map(|(ev, count, first)| {
            let mut v = json!({
                "loc": names.loc(ev.loc),
                "op": ev.op.std_name(),
                "variable": names.var(ev.var()),
                "count": count,
                "first": first,
            });
            if with_sources {
                v["source"] = source(ev.loc);
            }
            if let Some(l) = line(*first) {
                v["line"] = l;
            }
            if let Some(s) = stack(*first) {
                v["stack"] = s;
            }
            v
        })
        .collect();
    let (ww, wr, rw) = r.kind_counts();
    json!({
        "analysis": r.analysis,
        "trace": trace,
        "events": r.events,
        "locations": ctx.table_name(),
        "report_kind": r.kind,
        "complete": r.incomplete.is_none(),
        "incomplete": r.incomplete,
        "pairs": pairs,
        "racy_events": r.racy_events.iter().map(|e| e.index).collect::<Vec<_>>(),
        "summary": {
            "pairs": r.pairs.len(),
            "location_pairs": groups.len(),
            "racy_events": r.racy_total(),
            "racy_locations": group_locations(&racy_groups),
            "write_write": ww,
            "write_read": wr,
            "read_write": rw,
            "grouped": r.is_grouped(),
            "racing_accesses": r.racing_accesses(),
            "racy_grouped": r.racy_grouped(),
        },
        "location_pairs": location_pairs,
        "racy_location_groups": racy_locations,
        "notes": r.notes,
        "extra": r.extra,
    })
}

/// Writes `report` as one line of JSON.
pub fn write_json<W: std::io::Write + ?Sized>(
    w: &mut W,
    report: &RaceReport,
    trace: &str,
    names: &Names,
) -> std::io::Result<()> {
    serde_json::to_writer(&mut *w, &to_json(report, trace, names))?;
    writeln!(w)
}

/// The verdicts of `racepred check` as JSON: `verdicts`, one object per location pair
/// (`first_loc`, `second_loc`, `kind`, `verdict`, `by`, `first`, `second`, `witness`,
/// `reason`, and `first_source` / `second_source` with a location table), `summary` and
/// `notes`.
pub fn verdicts_json(v: &crate::verdict::Verdicts, ctx: &ReportContext<'_>, events: u64) -> Value {
    let (names, locs) = (ctx.names, ctx.locs());
    let with_sources = ctx.locations.is_some();
    let source = |l| -> Value { locs.source(l).map_or(Value::Null, Value::from) };
    let verdicts: Vec<Value> = v
        .warnings
        .iter()
        .map(|w| {
            let p = &w.pair;
            let mut o = json!({
                "first_loc": names.loc(p.first_event.loc),
                "second_loc": names.loc(p.second_event.loc),
                "kind": p.kind.name(),
                "variable": names.var(p.first_event.var()),
                "verdict": w.verdict.name(),
                "by": w.by,
                "first": p.first,
                "second": p.second,
                "first_thread": names.thread(p.first_event.thread),
                "second_thread": names.thread(p.second_event.thread),
            });
            if let Some(f) = &w.witness {
                o["witness"] = f.clone().into();
            }
            if let Some(r) = &w.reason {
                o["reason"] = r.clone().into();
            }
            if with_sources {
                o["first_source"] = source(p.first_event.loc);
                o["second_source"] = source(p.second_event.loc);
            }
            o
        })
        .collect();
    let (race, no, unknown) = v.counts();
    json!({
        "analysis": "check",
        "trace": ctx.trace_path,
        "events": events,
        "locations": ctx.table_name(),
        "verdicts": verdicts,
        "summary": {
            "location_pairs": v.warnings.len(),
            "race": race,
            "no_race": no,
            "unknown": unknown,
        },
        "complete": unknown == 0,
        "notes": v.notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::text::tests::sample;

    #[test]
    fn spec_fields() {
        let (t, r) = sample();
        let v = to_json(&r, "x.std", &t.names);
        assert_eq!(v["analysis"], "hbp");
        assert_eq!(v["trace"], "x.std");
        assert_eq!(v["events"], 6);
        assert_eq!(
            v["pairs"][0],
            json!({"first": 0, "second": 1, "kind": "write-read", "first_loc": "1",
                   "second_loc": "2", "variable": "V0", "first_thread": "T0",
                   "second_thread": "T1"})
        );
        assert_eq!(v["racy_events"], json!([1, 3, 5]));
        assert_eq!(v["summary"]["pairs"], 4);
        assert_eq!(v["summary"]["location_pairs"], 3);
        assert_eq!(v["summary"]["racy_events"], 3);
        assert_eq!(v["summary"]["racy_locations"], 2);
        assert_eq!(v["summary"]["write_read"], 2);
        assert_eq!(v["location_pairs"][0]["count"], 2);
        assert_eq!(v["report_kind"], "pairs");
        let mut out = Vec::new();
        write_json(&mut out, &r, "x.std", &t.names).unwrap();
        assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(v["locations"], Value::Null);
        assert!(v["location_pairs"][0].get("first_line").is_none());
    }

    #[test]
    fn sources_and_lines_beside_raw_locations() {
        use crate::report::{EventLines, LocationTable};
        let (t, r) = sample();
        let table = LocationTable::parse("1\tA.java:5:2\n2\tB.java:7:24\n").unwrap();
        let mut ctx = ReportContext::new("x.std", &t.names);
        ctx.locations = Some(&table);
        ctx.lines = EventLines::OnePerLine;
        let v = report_json(&r, &ctx);
        assert_eq!(v["locations"], "(in memory)");
        let p = &v["pairs"][0];
        assert_eq!(
            (&p["first_loc"], &p["second_loc"]),
            (&json!("1"), &json!("2"))
        );
        assert_eq!(p["first_source"], "A.java:5:2");
        assert_eq!(p["second_source"], "B.java:7:24");
        let g = &v["location_pairs"][0];
        assert_eq!(
            (&g["first_source"], &g["first_line"], &g["second_line"]),
            (&json!("A.java:5:2"), &json!(1), &json!(2))
        );
        // Location 3 is not in the table.
        assert_eq!(v["location_pairs"][2]["first_source"], Value::Null);
        assert_eq!(v["racy_location_groups"][0]["source"], "B.java:7:24");
        assert_eq!(v["racy_location_groups"][0]["line"], 2);
    }
}
