//! SARIF 2.1.0 (OASIS Static Analysis Results Interchange Format), for code-scanning tools:
//! one run per analysis, one result per distinct location pair (or racy location), located
//! at the second access with the first as a related location. A location is first looked
//! up in the location table, if any; text of the form `path:line` or `path:line:column`
//! then becomes a physical location (`artifactLocation.uri`, `region.startLine` /
//! `startColumn`; a column 0 is left out, SARIF columns start at 1), anything else (RAPID's
//! integer locations without a table, `clinit:pkg/C`) a logical one. With a source root,
//! relative paths are resolved against the `SRCROOT` base id, which the run's
//! `originalUriBaseIds` maps to the root's `file://` URI (SARIF §3.4.4, §3.14.14), and a
//! path the root does not have as such is completed to the one file under the root that
//! ends with it (`A.java` → `src/pkg/A.java`; left as it is when none or several do).
//! Formatting only.

use std::path::Path;

use serde_json::{json, Value};

use super::text::{racy_location_groups, verdict_name};
use super::{PairKind, RaceReport, ReportContext, SourceIndex};
use crate::trace::{LocId, Names};

/// The `uriBaseId` of paths relative to `--source-root`.
pub const SRCROOT: &str = "SRCROOT";

const RULES: [(&str, &str); 4] = [
    ("write-write", "Two writes to the same variable can race"),
    (
        "write-read",
        "A write and a later read of the same variable can race",
    ),
    (
        "read-write",
        "A read and a later write of the same variable can race",
    ),
    (
        "racy-access",
        "An access races with an earlier conflicting access",
    ),
];

fn rule_index(kind: Option<PairKind>) -> usize {
    match kind {
        Some(PairKind::WriteWrite) => 0,
        Some(PairKind::WriteRead) => 1,
        Some(PairKind::ReadWrite) => 2,
        None => 3,
    }
}

/// `path:line[:column]` → (path, line, column).
fn split_source(name: &str) -> Option<(&str, u64, Option<u64>)> {
    let (rest, last) = name.rsplit_once(':')?;
    let last: u64 = last.parse().ok()?;
    if let Some((path, line)) = rest.rsplit_once(':') {
        if let Ok(line) = line.parse::<u64>() {
            if !path.is_empty() && line > 0 {
                return Some((path, line, Some(last)));
            }
        }
    }
    (!rest.is_empty() && last > 0).then_some((rest, last, None))
}

/// Percent-encodes a path for a URI (RFC 3986: unreserved characters and `/` stay;
/// backslashes become `/`).
fn uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            b'\\' => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The `file://` URI of an absolute directory, ending in `/` as a base URI must.
pub fn directory_uri(dir: &Path) -> String {
    let mut s = uri_path(&dir.to_string_lossy());
    if !s.starts_with('/') {
        s.insert(0, '/');
    }
    if !s.ends_with('/') {
        s.push('/');
    }
    format!("file://{s}")
}

/// The artifact location of a source path: relative to `SRCROOT` with a source root
/// (completed through the root's index: `A.java` → `src/pkg/A.java`), `file://` for an
/// absolute path outside it, else a relative reference.
fn artifact(path: &str, root: Option<&Path>, index: Option<&SourceIndex>) -> Value {
    let p = Path::new(path);
    if p.is_absolute() {
        if let Some(rel) = root.and_then(|r| p.strip_prefix(r).ok()) {
            return json!({"uri": uri_path(&rel.to_string_lossy()), "uriBaseId": SRCROOT});
        }
        return json!({ "uri": format!("file://{}", uri_path(path)) });
    }
    match root {
        Some(_) => {
            let path = index.and_then(|ix| ix.resolve(path)).unwrap_or(path);
            json!({"uri": uri_path(path), "uriBaseId": SRCROOT})
        }
        None => json!({ "uri": uri_path(path) }),
    }
}

/// The SARIF location of an access at `loc` to `var`: a source position, else a logical
/// location named by the location, or, without a location (a CSV trace), by the variable
/// (reports place such accesses at their variable, [`super::place`]).
fn location(
    ctx: &ReportContext<'_>,
    loc: LocId,
    var: &str,
    id: Option<u64>,
    message: Option<String>,
) -> Value {
    let name = ctx.locs().show(loc);
    // `-` (no location) is no source position either.
    let (logical, kind) = if loc.is_none() {
        (var, "variable")
    } else {
        (name, "member")
    };
    let mut v = match split_source(name) {
        Some(source) => physical_location(ctx, source),
        None => json!({"logicalLocations": [{"name": logical, "kind": kind}]}),
    };
    if let Some(id) = id {
        v["id"] = id.into();
    }
    if let Some(m) = message {
        v["message"] = json!({ "text": m });
    }
    if ctx.locations.is_some() && !loc.is_none() {
        // The trace's own name of the location, for tools that join on it.
        v["properties"] = json!({ "trace_loc": ctx.names.loc(loc) });
    }
    v
}

/// `event N` with ` (line L)` when the trace line is not N + 1.
fn event_at(ctx: &ReportContext<'_>, index: u64) -> String {
    match ctx.lines.surprising(index) {
        Some(l) => format!("event {index}, line {l}"),
        None => format!("event {index}"),
    }
}

/// `VAR between LOC (THREAD, event N) and LOC (THREAD, event M)` for a pair's message.
fn between(ctx: &ReportContext<'_>, p: &crate::report::RacePair) -> String {
    let (var, [l0, l1], [t0, t1]) = ctx.pair_places(p);
    let (e0, e1) = (event_at(ctx, p.first), event_at(ctx, p.second));
    format!("{var} between {l0} ({t0}, {e0}) and {l1} ({t1}, {e1})")
}

/// Adds a run's invocation (unsuccessful, with a notification, when the run is incomplete:
/// its missing results are not "no race") and the source root's base id.
fn finish_run(run: &mut Value, ctx: &ReportContext<'_>, incomplete: Option<String>) {
    run["invocations"] = json!([{
        "executionSuccessful": incomplete.is_none(),
        "toolExecutionNotifications": incomplete.iter().map(|why| json!({
            "level": "warning",
            "message": {"text": format!("incomplete: {why}")},
        })).collect::<Vec<_>>(),
    }]);
    if let Some(root) = ctx.source_root {
        run["originalUriBaseIds"] = json!({ SRCROOT: { "uri": directory_uri(root) } });
    }
}

/// The `tool` object of every run: racepred and its rules.
fn tool() -> Value {
    json!({"driver": {
        "name": "racepred",
        "version": env!("CARGO_PKG_VERSION"),
        "rules": RULES.iter().map(|(id, d)| json!({
            "id": id, "shortDescription": {"text": d},
        })).collect::<Vec<_>>(),
    }})
}

/// The SARIF result of a race pair: at its second event, the first as related location.
/// SARIF `stacks` of the shown events that have calling contexts: for each, its access
/// location, then its call sites (`message` says which event).
fn stacks(ctx: &ReportContext<'_>, events: &[(u64, LocId, &str)]) -> Option<Value> {
    let list: Vec<Value> = events
        .iter()
        .filter(|(i, _, _)| !ctx.stack(*i).is_empty())
        .map(|&(i, loc, var)| {
            let mut frames = vec![json!({"location": location(ctx, loc, var, None, None)})];
            for f in ctx.stack(i) {
                frames.push(json!({"location": frame_location(ctx, f)}));
            }
            json!({"message": {"text": format!("event {i}")}, "frames": frames})
        })
        .collect();
    (!list.is_empty()).then(|| Value::from(list))
}

/// A call site named `file:line:col` (or anything else, as a logical location).
fn frame_location(ctx: &ReportContext<'_>, name: &str) -> Value {
    match split_source(name) {
        Some(source) => physical_location(ctx, source),
        None => json!({"logicalLocations": [{"name": name}]}),
    }
}

/// The SARIF physical location of source position `(path, line, column)` (a column of 0
/// or none is left out).
fn physical_location(
    ctx: &ReportContext<'_>,
    (path, line, col): (&str, u64, Option<u64>),
) -> Value {
    let mut region = json!({ "startLine": line });
    if let Some(c) = col.filter(|&c| c > 0) {
        region["startColumn"] = c.into();
    }
    json!({"physicalLocation": {
        "artifactLocation": artifact(path, ctx.source_root, ctx.source_index),
        "region": region,
    }})
}

fn pair_result(
    ctx: &ReportContext<'_>,
    p: &crate::report::RacePair,
    level: &str,
    text: String,
    props: Value,
) -> Value {
    let names = ctx.names;
    let var = names.var(p.first_event.var());
    let i = rule_index(Some(p.kind));
    let mut result = json!({
        "ruleId": RULES[i].0,
        "ruleIndex": i,
        "level": level,
        "message": {"text": text},
        "locations": [location(ctx, p.second_event.loc, var, None, None)],
        "relatedLocations": [location(
            ctx,
            p.first_event.loc,
            var,
            Some(1),
            Some(format!("earlier {} of {var} by {}", p.first_event.op.std_name(),
                names.thread(p.first_event.thread))),
        )],
        "properties": props,
    });
    if let Some(s) = stacks(
        ctx,
        &[
            (p.second, p.second_event.loc, var),
            (p.first, p.first_event.loc, var),
        ],
    ) {
        result["stacks"] = s;
    }
    result
}

fn run(r: &RaceReport, ctx: &ReportContext<'_>) -> Value {
    let (names, locs) = (ctx.names, ctx.locs());
    let mut results = Vec::new();
    for g in r.location_groups() {
        let p = &r.pairs[g.first_pair];
        let var = names.var(p.first_event.var());
        let text = format!(
            "{} race on {}; {} occurrence{}",
            p.kind.name(),
            between(ctx, p),
            g.count,
            if g.count == 1 { "" } else { "s" },
        );
        let mut props = json!({
            "count": g.count, "first": p.first, "second": p.second, "variable": var,
            "first_thread": names.thread(p.first_event.thread),
            "second_thread": names.thread(p.second_event.thread),
        });
        if let Some(v) = p.verdict {
            props["verdict"] = verdict_name(v).into();
        }
        if let (Some(a), Some(b)) = (ctx.lines.line(p.first), ctx.lines.line(p.second)) {
            props["first_line"] = a.into();
            props["second_line"] = b.into();
        }
        results.push(pair_result(ctx, p, "warning", text, props));
    }
    for (ev, count, first) in racy_location_groups(r) {
        let var = names.var(ev.var());
        let text = format!(
            "{}({var}) at {} races with an earlier conflicting access ({}, {}); \
             {count} racy event{}",
            ev.op.std_name(),
            locs.show(ev.loc),
            names.thread(ev.thread),
            event_at(ctx, first),
            if count == 1 { "" } else { "s" },
        );
        let mut props = json!({"count": count, "first": first, "variable": var});
        if let Some(l) = ctx.lines.line(first) {
            props["line"] = l.into();
        }
        let mut result = json!({
            "ruleId": RULES[3].0,
            "ruleIndex": 3,
            "level": "warning",
            "message": {"text": text},
            "locations": [location(ctx, ev.loc, var, None, None)],
            "properties": props,
        });
        if let Some(s) = stacks(ctx, &[(first, ev.loc, var)]) {
            result["stacks"] = s;
        }
        results.push(result);
    }
    let mut run = json!({
        "tool": tool(),
        "automationDetails": {"id": format!("racepred/{}/", r.analysis)},
        "results": results,
        "properties": {
            "analysis": r.analysis,
            "trace": ctx.trace_path,
            "events": r.events,
            "locations": ctx.table_name(),
            "notes": r.notes,
        },
    });
    // An incomplete run is not a successful one: its missing results are not "no race".
    finish_run(&mut run, ctx, r.incomplete.clone());
    run["properties"]["complete"] = r.incomplete.is_none().into();
    run
}

/// The reports of one trace as a SARIF 2.1.0 log, one run per report, raw location names.
pub fn to_sarif(reports: &[RaceReport], trace: &str, names: &Names) -> Value {
    sarif_log(reports, &ReportContext::new(trace, names))
}

/// The reports of one trace as a SARIF 2.1.0 log, one run per report.
pub fn sarif_log(reports: &[RaceReport], ctx: &ReportContext<'_>) -> Value {
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": reports.iter().map(|r| run(r, ctx)).collect::<Vec<_>>(),
    })
}

/// The verdicts of `racepred check` as a SARIF 2.1.0 log: races as errors, unknown pairs as
/// warnings, pairs proved race-free as notes.
pub fn verdicts_sarif(v: &crate::verdict::Verdicts, ctx: &ReportContext<'_>, events: u64) -> Value {
    use crate::verdict::VerdictKind;
    let names = ctx.names;
    let results: Vec<Value> = v
        .warnings
        .iter()
        .map(|w| {
            let p = &w.pair;
            let var = names.var(p.first_event.var());
            let (level, why) = match w.verdict {
                VerdictKind::Race => ("error", format!("race (by {})", w.by)),
                VerdictKind::NoRace => ("note", format!("no race ({})", w.by)),
                VerdictKind::Unknown => (
                    "warning",
                    format!("unknown: {}", w.reason.as_deref().unwrap_or("")),
                ),
            };
            let text = format!("{} on {}: {why}", p.kind.name(), between(ctx, p));
            let mut props = json!({
                "verdict": w.verdict.name(), "first": p.first, "second": p.second,
                "variable": var,
            });
            if !w.by.is_empty() {
                props["by"] = w.by.clone().into();
            }
            if let Some(f) = &w.witness {
                props["witness"] = f.clone().into();
            }
            if let Some(r) = &w.reason {
                props["reason"] = r.clone().into();
            }
            pair_result(ctx, p, level, text, props)
        })
        .collect();
    let (race, no, unknown) = v.counts();
    let mut run = json!({
        "tool": tool(),
        "automationDetails": {"id": "racepred/check/"},
        "results": results,
        "properties": {
            "analysis": "check",
            "trace": ctx.trace_path,
            "events": events,
            "locations": ctx.table_name(),
            "notes": v.notes,
            "race": race, "no_race": no, "unknown": unknown,
            "complete": unknown == 0,
        },
    });
    // Unknown pairs leave the run incomplete: their missing verdicts are not "no race".
    let incomplete = (unknown > 0).then(|| format!("{unknown} location pair(s) without a verdict"));
    finish_run(&mut run, ctx, incomplete);
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [run],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::text::tests::sample;

    #[test]
    fn sarif_shape() {
        let (t, r) = sample();
        let v = to_sarif(std::slice::from_ref(&r), "x.std", &t.names);
        assert_eq!(v["version"], "2.1.0");
        let run = &v["runs"][0];
        assert_eq!(run["tool"]["driver"]["name"], "racepred");
        let res = run["results"].as_array().unwrap();
        assert_eq!(res.len(), 3 + 2);
        assert_eq!(res[0]["ruleId"], "write-read");
        assert_eq!(res[0]["properties"]["count"], 2);
        assert_eq!(res[0]["locations"][0]["logicalLocations"][0]["name"], "2");
        assert_eq!(res[3]["ruleId"], "racy-access");
    }

    #[test]
    fn accesses_without_location_at_their_variable() {
        let t = crate::trace::Trace::read_from(&mut crate::trace::csv::CsvReader::new(
            "w(x),\n,w(x)\nw(y),\n,r(y)\n".as_bytes(),
        ))
        .unwrap();
        for kind in [
            crate::analysis::AnalysisKind::Lockset,
            crate::analysis::AnalysisKind::Hb,
        ] {
            let a = crate::analysis::create(kind, &Default::default()).unwrap();
            let r = crate::analysis::run_one(&t, a);
            let v = to_sarif(std::slice::from_ref(&r), "t.csv", &t.names);
            let res = v["runs"][0]["results"].as_array().unwrap();
            let at: Vec<&Value> = res
                .iter()
                .filter(|r| {
                    r["ruleId"] != "racy-access" || kind != crate::analysis::AnalysisKind::Lockset
                })
                .map(|r| &r["locations"][0]["logicalLocations"][0])
                .collect();
            assert_eq!(at.len(), 2, "{res:?}");
            assert_eq!(at[0], &json!({"name": "x", "kind": "variable"}));
            assert_eq!(at[1], &json!({"name": "y", "kind": "variable"}));
        }
    }

    #[test]
    fn source_locations() {
        assert_eq!(split_source("a/b.c:12"), Some(("a/b.c", 12, None)));
        assert_eq!(split_source("a/b.c:12:3"), Some(("a/b.c", 12, Some(3))));
        assert_eq!(split_source("345"), None);
        assert_eq!(split_source(":4"), None);
        assert_eq!(split_source("classAccessed:java/lang/Integer"), None);
        assert_eq!(
            split_source("IndexWriter.java:207:0"),
            Some(("IndexWriter.java", 207, Some(0)))
        );
    }

    #[test]
    fn table_sources_become_physical_locations() {
        use crate::report::LocationTable;
        let (t, r) = sample();
        let table = LocationTable::parse(
            "1\tA.java:5:0\n2\tsrc/My File.java:7:24\n3\tclinit:pkg/C\n4\t/abs/D.java:9\n",
        )
        .unwrap();
        let mut ctx = ReportContext::new("x.std", &t.names);
        ctx.locations = Some(&table);
        let v = sarif_log(std::slice::from_ref(&r), &ctx);
        let res = v["runs"][0]["results"].as_array().unwrap();
        let pl = &res[0]["locations"][0]["physicalLocation"];
        assert_eq!(pl["artifactLocation"], json!({"uri": "src/My%20File.java"}));
        assert_eq!(pl["region"], json!({"startLine": 7, "startColumn": 24}));
        assert_eq!(res[0]["locations"][0]["properties"]["trace_loc"], "2");
        // Column 0 is not a SARIF column.
        let rl = &res[0]["relatedLocations"][0]["physicalLocation"];
        assert_eq!(rl["region"], json!({"startLine": 5}));
        // Not file:line: logical.
        assert_eq!(
            res[2]["relatedLocations"][0]["logicalLocations"][0]["name"],
            "clinit:pkg/C"
        );
        assert_eq!(v["runs"][0]["properties"]["locations"], "(in memory)");
        assert!(v["runs"][0].get("originalUriBaseIds").is_none());

        ctx.source_root = Some(Path::new("/abs"));
        let v = sarif_log(std::slice::from_ref(&r), &ctx);
        let run = &v["runs"][0];
        assert_eq!(run["originalUriBaseIds"]["SRCROOT"]["uri"], "file:///abs/");
        let res = run["results"].as_array().unwrap();
        assert_eq!(
            res[0]["locations"][0]["physicalLocation"]["artifactLocation"],
            json!({"uri": "src/My%20File.java", "uriBaseId": "SRCROOT"})
        );
        assert_eq!(
            res[2]["locations"][0]["physicalLocation"]["artifactLocation"],
            json!({"uri": "D.java", "uriBaseId": "SRCROOT"})
        );
        assert_eq!(directory_uri(Path::new("/a b/c")), "file:///a%20b/c/");
    }
}
