//! SARIF 2.1.0 (OASIS Static Analysis Results Interchange Format), for code-scanning tools:
//! one run per analysis, one result per distinct location pair (or racy location), located
//! at the second access with the first as a related location. A location named
//! `path:line` or `path:line:column` becomes a physical location; any other name (RAPID's
//! integer locations) a logical one. Formatting only.

use serde_json::{json, Value};

use super::text::{racy_location_groups, verdict_name};
use super::{PairKind, RaceReport};
use crate::trace::{LocId, Names};

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

fn location(names: &Names, loc: LocId, id: Option<u64>, message: Option<String>) -> Value {
    let name = names.loc(loc);
    let mut v = match split_source(name) {
        Some((path, line, col)) => {
            let mut region = json!({ "startLine": line });
            if let Some(c) = col {
                region["startColumn"] = c.into();
            }
            json!({"physicalLocation": {"artifactLocation": {"uri": path}, "region": region}})
        }
        None => json!({"logicalLocations": [{"name": name, "kind": "member"}]}),
    };
    if let Some(id) = id {
        v["id"] = id.into();
    }
    if let Some(m) = message {
        v["message"] = json!({ "text": m });
    }
    v
}

fn run(r: &RaceReport, trace: &str, names: &Names) -> Value {
    let mut results = Vec::new();
    for g in r.location_groups() {
        let p = &r.pairs[g.first_pair];
        let var = names.var(p.first_event.var());
        let text = format!(
            "{} race on {var} between {} ({}, event {}) and {} ({}, event {}); {} occurrence{}",
            p.kind.name(),
            names.loc(p.first_event.loc),
            names.thread(p.first_event.thread),
            p.first,
            names.loc(p.second_event.loc),
            names.thread(p.second_event.thread),
            p.second,
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
        let i = rule_index(Some(p.kind));
        results.push(json!({
            "ruleId": RULES[i].0,
            "ruleIndex": i,
            "level": "warning",
            "message": {"text": text},
            "locations": [location(names, p.second_event.loc, None, None)],
            "relatedLocations": [location(
                names,
                p.first_event.loc,
                Some(1),
                Some(format!("earlier {} of {var} by {}", p.first_event.op.std_name(),
                    names.thread(p.first_event.thread))),
            )],
            "properties": props,
        }));
    }
    for (ev, count, first) in racy_location_groups(r) {
        let var = names.var(ev.var());
        let text = format!(
            "{}({var}) at {} races with an earlier conflicting access ({}, event {first}); \
             {count} racy event{}",
            ev.op.std_name(),
            names.loc(ev.loc),
            names.thread(ev.thread),
            if count == 1 { "" } else { "s" },
        );
        results.push(json!({
            "ruleId": RULES[3].0,
            "ruleIndex": 3,
            "level": "warning",
            "message": {"text": text},
            "locations": [location(names, ev.loc, None, None)],
            "properties": {"count": count, "first": first, "variable": var},
        }));
    }
    json!({
        "tool": {"driver": {
            "name": "racepred",
            "version": env!("CARGO_PKG_VERSION"),
            "rules": RULES.iter().map(|(id, d)| json!({
                "id": id, "shortDescription": {"text": d},
            })).collect::<Vec<_>>(),
        }},
        "automationDetails": {"id": format!("racepred/{}/", r.analysis)},
        "results": results,
        "properties": {
            "analysis": r.analysis,
            "trace": trace,
            "events": r.events,
            "notes": r.notes,
        },
    })
}

/// The reports of one trace as a SARIF 2.1.0 log, one run per report.
pub fn to_sarif(reports: &[RaceReport], trace: &str, names: &Names) -> Value {
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": reports.iter().map(|r| run(r, trace, names)).collect::<Vec<_>>(),
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
    fn source_locations() {
        assert_eq!(split_source("a/b.c:12"), Some(("a/b.c", 12, None)));
        assert_eq!(split_source("a/b.c:12:3"), Some(("a/b.c", 12, Some(3))));
        assert_eq!(split_source("345"), None);
        assert_eq!(split_source(":4"), None);
    }
}
