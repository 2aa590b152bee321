//! Sharding by variable (`analysis::shard`, `--jobs`) changes no report: for every
//! shardable analysis, the merged report of `n` shards equals the report of one analysis —
//! the same pairs (first instances), group counts, racy events, figures and notes.

use proptest::prelude::*;
use racepred::analysis::{self, shard, AnalysisKind, AnalysisOptions, Plan, Validation};
use racepred::gen::from_actions;
use racepred::report::RaceReport;
use racepred::trace::{LocId, Trace};

/// The analyses `Plan` shards (in their default, grouped modes).
const SHARDED: [AnalysisKind; 2] = [AnalysisKind::Lockset, AnalysisKind::TsanHybrid];

/// The report of `kind` on `trace` with `jobs` shards, all on this thread.
fn report(trace: &Trace, kind: AnalysisKind, jobs: usize) -> RaceReport {
    let mut plan = Plan::new(&[kind], &AnalysisOptions::default(), jobs).unwrap();
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

fn with_locs(t: &Trace, locs: &[u8]) -> Trace {
    let mut events = t.events.clone();
    for (i, ev) in events.iter_mut().enumerate() {
        ev.loc = LocId(locs[i % locs.len()] as u32);
    }
    Trace::from_events(events)
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
        locs in proptest::collection::vec(0u8..4, 1..6),
        jobs in 2usize..5,
    ) {
        let t = with_locs(&from_actions(threads, vars, 3, &a), &locs);
        for kind in SHARDED {
            let one = report(&t, kind, 1);
            let many = report(&t, kind, jobs);
            prop_assert_eq!(content(&many), content(&one), "{} with {} shards", kind.name(), jobs);
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
    for kind in SHARDED {
        let run = |jobs| {
            let mut plan = Plan::new(&[kind], &AnalysisOptions::default(), jobs).unwrap();
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
                "{} with {jobs} shards",
                kind.name()
            );
        }
    }
}
