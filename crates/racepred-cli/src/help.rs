//! Help texts derived from the analysis registry (`racepred::analysis::ANALYSES`): the list
//! of `-a`, the owners of `--clock`, `--all-pairs` and `--jobs`, and `record --online`'s
//! choices, so that a new registry row shows up in every one of them.

use racepred::analysis::{names, Engine, Opt, ANALYSES};
use racepred::report::ReportKind;

/// `-a`: one line, then (for `--help`) one line per analysis with its promise.
pub fn analysis(long: bool) -> String {
    let streaming = names(|r| matches!(r.engine, Engine::Streaming(..)));
    let smt = names(|r| matches!(r.engine, Engine::Smt));
    let mut s = format!(
        "Analysis to run; repeat for several (all run in one pass over the trace). One of: {}, \
         and the SMT predictors {}",
        streaming.join(", "),
        smt.join(", ")
    );
    if long {
        s.push('\n');
        for r in &ANALYSES {
            s.push_str(&format!("\n  {:<12} {}", r.name, r.promise));
        }
    }
    s
}

/// `--clock`.
pub fn clock() -> String {
    format!(
        "Clock for thread and lock clocks ({})",
        names(|r| r.reads(Opt::Clock)).join(", ")
    )
}

/// `--all-pairs`: what it changes for each kind of report.
pub fn all_pairs() -> String {
    let pairs = names(|r| {
        r.reads(Opt::AllPairs)
            && r.report == ReportKind::Pairs
            && matches!(r.engine, Engine::Streaming(..))
    });
    let events = names(|r| r.reads(Opt::AllPairs) && r.report == ReportKind::RacyEvents);
    let smt = names(|r| r.reads(Opt::AllPairs) && matches!(r.engine, Engine::Smt));
    format!(
        "{}: list every race pair instead of one per location pair (memory then grows with the \
         pairs), and for lockset every Eraser violation, not only each variable's first; {}: \
         list every racy event in JSON, not only the first of each location and operation \
         (memory then grows with the racy events); {}: ask about every candidate pair, not \
         only until each location pair has a race",
        pairs.join("/"),
        events.join("/"),
        smt.join("/")
    )
}

/// `--jobs`.
pub fn jobs() -> String {
    format!(
        "{} (without --all-pairs): split the variables over N threads, each analysing the \
         accesses of its share; the reports are the same for every N. Pays off when the \
         analysis, not the reading, is the bottleneck and there is a core per thread plus one \
         for the reader. Default: 1",
        names(|r| r.shardable).join(", ")
    )
}

/// The analyses `record --online` can run inside a program.
pub fn online() -> Vec<&'static str> {
    names(|r| r.online)
}

/// `record --online`.
pub fn online_help() -> String {
    format!(
        "Analyse inside the program instead of writing a trace, and report at exit: {} \
         (pacer with --rate)",
        online().join(", ")
    )
}
