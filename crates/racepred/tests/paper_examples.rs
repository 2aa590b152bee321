//! Golden harness for the papers' example traces (`tests/traces/*.std` at the repo root).
//!
//! Each trace file carries its expected answers as comment lines, worked out from the
//! paper's text (never from running the code):
//!
//! ```text
//! # expect oracle-predictable: 0-3 1-4      (pairs of 0-based event indices; `none` if empty)
//! # expect oracle-trace-specific: ...
//! # expect oracle-adjacent: ...
//! # expect oracle-trace-specific-adjacent: ...
//! # expect shbp: 0-3                        (a pair analysis: its pair set)
//! # expect hb: 3 5                          (a racy-event analysis: its racy events)
//! ```
//!
//! `oracle-*` lines are checked with the exact oracle; other names are analyses
//! (`AnalysisKind::name`) run with default options, or with the options given in brackets:
//! `# expect shbp[streaming]: ...`, `# expect w3po[history=0]: ...`. A pair expectation checked against an
//! analysis that reports racy events compares its racy events with the second events of
//! the pairs (a vector-clock detector flags an access iff it races with an earlier one). An
//! analysis that cannot be created is a failure. Every failing expectation is listed with
//! its file and line.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use racepred::analysis::{create, run_one, AnalysisKind, AnalysisOptions};
use racepred::oracle::{analyze, OracleConfig, OracleNotion, OracleResult};
use racepred::report::ReportKind;
use racepred::trace::std_format::StdReader;
use racepred::trace::Trace;

fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/traces")
}

/// Expected answer: pairs or events.
#[derive(Debug, PartialEq, Eq)]
enum Expected {
    Pairs(BTreeSet<(u64, u64)>),
    Events(BTreeSet<u64>),
    /// `none`: fits either kind.
    Empty,
}

fn parse_value(v: &str) -> Result<Expected, String> {
    let v = v.trim();
    if v == "none" {
        return Ok(Expected::Empty);
    }
    let toks: Vec<&str> = v.split_whitespace().collect();
    if toks.is_empty() {
        return Err("empty expectation (write `none` for no race)".into());
    }
    if toks.iter().all(|t| t.contains('-')) {
        let mut set = BTreeSet::new();
        for t in toks {
            let (a, b) = t.split_once('-').unwrap();
            let (a, b): (u64, u64) = match (a.parse(), b.parse()) {
                (Ok(a), Ok(b)) => (a, b),
                _ => return Err(format!("bad pair `{t}`")),
            };
            if a >= b {
                return Err(format!("pair `{t}` must have first < second"));
            }
            set.insert((a, b));
        }
        Ok(Expected::Pairs(set))
    } else {
        toks.iter()
            .map(|t| {
                t.parse::<u64>()
                    .map_err(|_| format!("bad event index `{t}`"))
            })
            .collect::<Result<BTreeSet<u64>, String>>()
            .map(Expected::Events)
    }
}

fn fmt_pairs(s: &BTreeSet<(u64, u64)>) -> String {
    if s.is_empty() {
        return "none".into();
    }
    s.iter()
        .map(|(a, b)| format!("{a}-{b}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn fmt_events(s: &BTreeSet<u64>) -> String {
    if s.is_empty() {
        return "none".into();
    }
    s.iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

fn check_pairs(exp: &Expected, got: &BTreeSet<(u64, u64)>) -> Result<(), String> {
    let want = match exp {
        Expected::Pairs(p) => p.clone(),
        Expected::Empty => BTreeSet::new(),
        Expected::Events(_) => {
            return Err("expected event indices, but this answer is pairs".into())
        }
    };
    same(&want, got, fmt_pairs)
}

fn check_events(exp: &Expected, got: &BTreeSet<u64>) -> Result<(), String> {
    let want = match exp {
        Expected::Events(e) => e.clone(),
        Expected::Empty => BTreeSet::new(),
        Expected::Pairs(p) => p.iter().map(|&(_, b)| b).collect(),
    };
    same(&want, got, fmt_events)
}

/// Ok if `got` is `want`, else an error showing both (written by `show`).
fn same<T: PartialEq>(want: &T, got: &T, show: fn(&T) -> String) -> Result<(), String> {
    if want == got {
        Ok(())
    } else {
        Err(format!("expected {}, got {}", show(want), show(got)))
    }
}

/// Splits `NAME[opt,opt=value]` into the analysis name and its options. Options:
/// `streaming` (HBP / SHBP single pass as published) and `history=N` (W3PO linear mode).
fn parse_options(name: &str) -> Result<(&str, AnalysisOptions), String> {
    let mut opts = AnalysisOptions::default();
    let Some((base, rest)) = name.split_once('[') else {
        return Ok((name, opts));
    };
    let Some(list) = rest.strip_suffix(']') else {
        return Err(format!("`{name}`: options must end with `]`"));
    };
    for opt in list.split(',').map(str::trim) {
        match opt.split_once('=') {
            None if opt == "streaming" => opts.streaming = true,
            Some(("history", n)) => match n.trim().parse() {
                Ok(n) => opts.history = Some(n),
                Err(_) => return Err(format!("`{name}`: bad history `{n}`")),
            },
            _ => return Err(format!("`{name}`: unknown option `{opt}`")),
        }
    }
    Ok((base.trim(), opts))
}

#[derive(Default)]
struct Tally {
    checked: usize,
    skipped: Vec<String>,
    failures: Vec<String>,
}

fn check_file(path: &Path, tally: &mut Tally) {
    let shown = path.file_name().unwrap().to_string_lossy().into_owned();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            tally.failures.push(format!("{shown}: cannot read: {e}"));
            return;
        }
    };
    if !text.lines().any(|l| l.starts_with("# source:")) {
        tally
            .failures
            .push(format!("{shown}: no `# source:` header line"));
    }
    let trace = match Trace::read_from(&mut StdReader::new(text.as_bytes())) {
        Ok(t) => t,
        Err(e) => {
            tally.failures.push(format!("{shown}: {e}"));
            return;
        }
    };
    let mut oracle: Option<Result<OracleResult, String>> = None;
    let mut expectations = 0;
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix("# expect ") else {
            continue;
        };
        expectations += 1;
        let at = format!("{shown}:{}", i + 1);
        let Some((name, value)) = rest.split_once(':') else {
            tally
                .failures
                .push(format!("{at}: expectation without `NAME: value`"));
            continue;
        };
        let name = name.trim();
        let exp = match parse_value(value) {
            Ok(e) => e,
            Err(m) => {
                tally.failures.push(format!("{at}: {m}"));
                continue;
            }
        };
        let outcome = if let Some(notion) = name.strip_prefix("oracle-") {
            let Some(notion) = OracleNotion::from_name(notion) else {
                tally
                    .failures
                    .push(format!("{at}: unknown oracle notion `{name}`"));
                continue;
            };
            let res = oracle.get_or_insert_with(|| {
                analyze(&trace, &OracleConfig::default()).map_err(|e| e.to_string())
            });
            match res {
                Ok(r) => check_pairs(&exp, r.pairs(notion)),
                Err(e) => Err(format!("oracle failed: {e}")),
            }
        } else {
            let (base, opts) = match parse_options(name) {
                Ok(x) => x,
                Err(m) => {
                    tally.failures.push(format!("{at}: {m}"));
                    continue;
                }
            };
            let Some(kind) = AnalysisKind::from_name(base) else {
                tally
                    .failures
                    .push(format!("{at}: unknown analysis `{base}`"));
                continue;
            };
            // Pair expectations are every pair (`--all-pairs`, read only by the analyses that
            // group pairs by location pair by default); their default, grouped report must
            // be that report grouped by location pair.
            let opts = AnalysisOptions {
                all_pairs: true,
                ..opts
            };
            let grouped = create(
                kind,
                &AnalysisOptions {
                    all_pairs: false,
                    ..opts.clone()
                },
            )
            .map(|a| run_one(&trace, a));
            let analysis = match create(kind, &opts) {
                Ok(a) => a,
                Err(e) => {
                    // Every analysis is built now: one that cannot be created is a failure.
                    tally
                        .failures
                        .push(format!("{at}: `{name}` cannot be created ({e})"));
                    continue;
                }
            };
            let report = run_one(&trace, analysis);
            if let Ok(g) = &grouped {
                if g.is_grouped() || report.pairs.is_empty() {
                    let e = report.grouped();
                    if (&g.pairs, &g.group_counts) != (&e.pairs, &e.group_counts) {
                        tally.failures.push(format!(
                            "{at}: {name}: grouped report {:?} is not the exhaustive one \
                             grouped {:?}",
                            g.pair_set(),
                            e.pair_set()
                        ));
                    }
                }
            }
            match report.kind {
                ReportKind::Pairs => check_pairs(&exp, &report.pair_set()),
                ReportKind::RacyEvents => check_events(&exp, &report.racy_set()),
            }
        };
        tally.checked += 1;
        if let Err(m) = outcome {
            tally.failures.push(format!("{at}: expect {name}: {m}"));
        }
    }
    if expectations == 0 {
        tally
            .failures
            .push(format!("{shown}: no `# expect NAME: ...` line"));
    }
}

#[test]
fn paper_examples() {
    let dir = traces_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "std"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no traces in {}", dir.display());
    let mut tally = Tally::default();
    for f in &files {
        check_file(f, &mut tally);
    }
    for s in &tally.skipped {
        println!("note: {s}");
    }
    println!(
        "{} files, {} expectations checked, {} skipped, {} failures",
        files.len(),
        tally.checked,
        tally.skipped.len(),
        tally.failures.len()
    );
    assert!(
        tally.failures.is_empty(),
        "{} failing expectation(s):\n{}",
        tally.failures.len(),
        tally.failures.join("\n")
    );
}

#[test]
fn value_syntax() {
    assert_eq!(parse_value(" none "), Ok(Expected::Empty));
    assert_eq!(
        parse_value("0-3 1-4"),
        Ok(Expected::Pairs([(0, 3), (1, 4)].into_iter().collect()))
    );
    assert_eq!(
        parse_value("3 5"),
        Ok(Expected::Events([3, 5].into_iter().collect()))
    );
    assert!(parse_value("3-1").is_err());
    assert!(parse_value("").is_err());
    assert!(parse_value("a-b").is_err());
    let (base, o) = parse_options("w3po[history=2]").unwrap();
    assert_eq!((base, o.history), ("w3po", Some(2)));
    let (base, o) = parse_options("shbp[streaming]").unwrap();
    assert!(base == "shbp" && o.streaming);
    assert_eq!(parse_options("hb").unwrap().0, "hb");
    assert!(parse_options("w3po[history=x]").is_err());
    assert!(parse_options("w3po[fast]").is_err());
    assert!(parse_options("w3po[history=1").is_err());
}
