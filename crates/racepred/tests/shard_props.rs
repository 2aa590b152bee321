//! Sharding by variable (`analysis::shard`, `--jobs`) changes no report: for every
//! shardable analysis, the merged report of `n` shards equals the report of one analysis —
//! the same pairs (first instances), group counts, racy events, figures and notes.

mod common;

use proptest::prelude::*;
use racepred::analysis::{self, shard, AnalysisKind, AnalysisOptions, Plan, Validation};
use racepred::gen::from_actions;
use racepred::report::RaceReport;
use racepred::trace::Trace;

/// The analyses `Plan` shards (in their default, grouped modes).
const SHARDED: [AnalysisKind; 3] = [
    AnalysisKind::Lockset,
    AnalysisKind::TsanHybrid,
    AnalysisKind::W3po,
];

/// Each sharded analysis with its options: the default ones, and W3PO's bounded history
/// (`--history h`) too.
fn cases(h: usize) -> Vec<(AnalysisKind, AnalysisOptions)> {
    let mut v: Vec<_> = SHARDED
        .iter()
        .map(|&k| (k, AnalysisOptions::default()))
        .collect();
    let history = AnalysisOptions {
        history: Some(h),
        ..AnalysisOptions::default()
    };
    v.push((AnalysisKind::W3po, history));
    v
}

/// The report of `kind` with `opts` on `trace` with `jobs` shards, all on this thread.
fn report(trace: &Trace, kind: AnalysisKind, opts: &AnalysisOptions, jobs: usize) -> RaceReport {
    let mut plan = Plan::new(&[kind], opts, jobs).unwrap();
    let mut src = trace.source();
    let s = analysis::run(&mut src, &mut plan.analyses, Validation::Strict, |_, _| {}).unwrap();
    plan.finish(&trace.names, s.events).pop().unwrap()
}

/// Everything a printer shows of a report, comparable.
fn content(r: &RaceReport) -> String {
    format!(
        "{} {:?} {} pairs {:?} counts {:?} racy {:?} extra {:?} notes {:?}",
        r.analysis, r.kind, r.events, r.pairs, r.group_counts, r.racy_events, r.extra, r.notes
    )
}

#[test]
fn plan_shards_only_the_shardable_analyses() {
    let opts = AnalysisOptions::default();
    for kind in AnalysisKind::ALL {
        let plan = Plan::new(&[kind], &opts, 3).unwrap();
        let expect = if shard::shardable(kind, &opts) { 3 } else { 1 };
        assert_eq!(plan.analyses.len(), expect, "{}", kind.name());
        assert_eq!(shard::shardable(kind, &opts), SHARDED.contains(&kind));
    }
    // Pair lists are capped and counted as a whole: never sharded.
    let all = AnalysisOptions {
        all_pairs: true,
        ..AnalysisOptions::default()
    };
    assert!(SHARDED.iter().all(|&k| !shard::shardable(k, &all)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn sharded_reports_equal_unsharded(
        a in proptest::collection::vec((0u8..4, 0u8..12, 0u8..8), 0..60),
        threads in 2u32..5,
        vars in 1u32..8,
        locs in proptest::collection::vec(0u8..5, 1..6),
        jobs in 2usize..5,
        h in 0usize..3,
    ) {
        let t = common::with_locs(&from_actions(threads, vars, 3, &a), &locs);
        for (kind, opts) in cases(h) {
            let one = report(&t, kind, &opts, 1);
            let many = report(&t, kind, &opts, jobs);
            prop_assert_eq!(
                content(&many),
                content(&one),
                "{} ({:?}) with {} shards",
                kind.name(),
                opts.history,
                jobs
            );
        }
    }
}

/// The CLI's path: shards on threads of their own behind the reader ([`analysis::run_fanout`]),
/// on a generated trace with thousands of races.
#[test]
fn sharded_threads_equal_one_thread() {
    let g = racepred::gen::GenConfig {
        events: 60_000,
        threads: 6,
        vars: 200,
        locks: 6,
        ..racepred::gen::GenConfig::default()
    };
    let trace = racepred::gen::Generator::trace(g);
    for (kind, opts) in cases(4) {
        let run = |jobs| {
            let mut plan = Plan::new(&[kind], &opts, jobs).unwrap();
            let mut src = trace.source();
            let s = analysis::run_pipelined(
                &mut src,
                &mut plan.analyses,
                Validation::Strict,
                |_, _| {},
            )
            .unwrap();
            plan.finish(&trace.names, s.events).pop().unwrap()
        };
        let one = run(1);
        assert!(
            one.group_counts.iter().sum::<u64>() > 1000,
            "{}: a trace with races",
            kind.name()
        );
        for jobs in [2, 3] {
            assert_eq!(
                content(&run(jobs)),
                content(&one),
                "{} ({:?}) with {jobs} shards",
                kind.name(),
                opts.history
            );
        }
    }
}
