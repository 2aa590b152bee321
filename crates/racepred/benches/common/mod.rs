//! Helpers shared by the library's benchmarks: the trace length, the generated trace most
//! of them run on, and a report's size (what a benchmark prints so that a run that finds
//! nothing is noticed).
#![allow(dead_code)] // each benchmark uses a different subset

use racepred::gen::{GenConfig, Generator};
use racepred::report::RaceReport;
use racepred::trace::Trace;

/// `RACEPRED_BENCH_EVENTS`, else 10^6.
pub fn events() -> u64 {
    std::env::var("RACEPRED_BENCH_EVENTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000)
}

/// The generator's trace of `events` events: 8 threads, 10^4 variables, 16 locks, 10% lock
/// operations.
pub fn generated(events: u64) -> Trace {
    Generator::trace(GenConfig {
        events,
        threads: 8,
        vars: 10_000,
        locks: 16,
        sync: 0.1,
        seed: 7,
        ..GenConfig::default()
    })
}

/// Pairs plus racy events of a report.
pub fn findings(r: &RaceReport) -> usize {
    r.pairs.len() + r.racy_events.len()
}
