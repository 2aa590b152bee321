//! RDIT against plain HB on 10^6-event generated traces with barrier pairs.
//!
//! The trace: the generator (8 threads, 10^4 variables, 16 locks, 10% lock operations),
//! then `elide` with fraction 0.05 (windows of 1-4 events): about 1.5% of the events become
//! barrier pairs, and every lock whose operations were touched loses all of them.
//! - `rdit/hb`: Djit+ on the elided trace (the baseline);
//! - `rdit/rdit`: RDIT as `create` builds it (a plain HB engine runs alongside to count the
//!   races the barrier edges removed);
//! - `rdit/rdit-core`: RDIT without the engine alongside;
//! - `rdit/rdit-conservative`: every two pairs of different threads ordered;
//! - `rdit/hb-complete`: Djit+ on the complete trace, whose `mbegin`-free event stream shows
//!   that the hook costs HB nothing.
//!
//! Run with `cargo bench -p racepred --bench rdit`; `RACEPRED_BENCH_EVENTS` changes the
//! trace length.

mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use racepred::analysis::rdit::{rdit, RditConfig};
use racepred::analysis::{create, run_one, Analysis, AnalysisKind, AnalysisOptions};
use racepred::clock::VectorClock;
use racepred::experiments::elide::{elide, ElideConfig};
use racepred::trace::Trace;

fn races(t: &Trace, a: Box<dyn Analysis>) -> usize {
    common::findings(&run_one(t, a))
}

fn bench(c: &mut Criterion) {
    let n = common::events();
    let complete = common::generated(n);
    let e = elide(
        &complete,
        &ElideConfig {
            fraction: 0.05,
            seed: 1,
            max_window: 4,
            ..ElideConfig::default()
        },
    )
    .expect("elide");
    let t = e.trace;
    eprintln!(
        "complete {} events; elided {} events, {} barrier pairs, {} events removed",
        complete.len(),
        t.len(),
        e.regions.len(),
        e.regions.iter().map(|r| r.removed.len()).sum::<usize>()
    );
    let mut g = c.benchmark_group("rdit");
    g.throughput(Throughput::Elements(t.len() as u64));
    g.sample_size(10);
    let hb = || create(AnalysisKind::Hb, &AnalysisOptions::default()).unwrap();
    g.bench_function("hb", |b| b.iter(|| races(&t, hb())));
    g.bench_function("rdit", |b| {
        b.iter(|| {
            races(
                &t,
                create(AnalysisKind::Rdit, &AnalysisOptions::default()).unwrap(),
            )
        })
    });
    g.bench_function("rdit-core", |b| {
        b.iter(|| races(&t, Box::new(rdit::<VectorClock>(&RditConfig::default()))))
    });
    g.bench_function("rdit-conservative", |b| {
        let cfg = RditConfig {
            conservative: true,
            ..RditConfig::default()
        };
        b.iter(|| races(&t, Box::new(rdit::<VectorClock>(&cfg))))
    });
    g.bench_function("hb-complete", |b| b.iter(|| races(&complete, hb())));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
