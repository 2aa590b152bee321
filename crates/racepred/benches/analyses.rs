//! Events per second of the happens-before family on generated in-memory traces.
//!
//! - `analyses/*`: each analysis alone on a 10^6-event trace (8 threads, 10^4 variables,
//!   16 locks, 10% lock operations), vector clocks.
//! - `clocks/*`: FastTrack and SHB with vector and tree clocks on 10^6-event traces with
//!   64, 256 and 1000 threads, in two workloads: `random` (the generator, 30% lock
//!   operations on 32 locks shared by all threads: every acquire brings news of most
//!   threads) and `pairs` (each thread locks its own lock or one shared with a single
//!   partner: sparse communication). Tree clocks pay per changed entry, vector clocks per
//!   thread (with SIMD-friendly loops), so tree clocks win on `pairs` at many threads and
//!   lose on `random`.
//!
//! Run with `cargo bench -p racepred --bench analyses`; `RACEPRED_BENCH_EVENTS` changes the
//! trace length.

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use racepred::analysis::{create, AnalysisKind, AnalysisOptions, ClockKind};
use racepred::gen::{GenConfig, Generator};
use racepred::trace::{Event, Trace};
use rand::{Rng, SeedableRng};

fn run_one(t: &Trace, kind: AnalysisKind, clock: ClockKind, streaming: bool) -> usize {
    let opts = AnalysisOptions {
        clock,
        streaming,
        ..Default::default()
    };
    let a = create(kind, &opts).expect("analysis exists");
    common::findings(&racepred::analysis::run_one(t, a))
}

fn analyses(c: &mut Criterion) {
    let n = common::events();
    let t = common::generated(n);
    let mut g = c.benchmark_group("analyses");
    g.throughput(Throughput::Elements(n));
    g.sample_size(10);
    for (name, kind, streaming) in [
        ("hb", AnalysisKind::Hb, false),
        ("fasttrack", AnalysisKind::FastTrack, false),
        ("hbp", AnalysisKind::Hbp, false),
        ("hbp-streaming", AnalysisKind::Hbp, true),
        ("shb", AnalysisKind::Shb, false),
        ("shbp", AnalysisKind::Shbp, false),
        ("shbp-streaming", AnalysisKind::Shbp, true),
    ] {
        eprintln!(
            "{name}: {} findings",
            run_one(&t, kind, ClockKind::Vector, streaming)
        );
        g.bench_function(name, |b| {
            b.iter(|| run_one(&t, kind, ClockKind::Vector, streaming))
        });
    }
    g.finish();
}

/// Thread 0 forks the others; then critical sections of three accesses, each on the
/// thread's own lock or (half the time) on the lock it shares with its partner `t ^ 1`.
fn pairs_trace(threads: u32, n: u64) -> Trace {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(threads as u64);
    let mut ev = Vec::with_capacity(n as usize);
    for u in 1..threads {
        ev.push(Event::fork(0, u));
    }
    while (ev.len() as u64) < n {
        let t = rng.gen_range(1..threads);
        let l = if rng.gen_bool(0.5) {
            threads + t / 2
        } else {
            t
        };
        ev.push(Event::acquire(t, l));
        for _ in 0..3 {
            let x = if l < threads {
                t * 4 + rng.gen_range(0..4)
            } else {
                threads * 4 + l
            };
            ev.push(if rng.gen_bool(0.5) {
                Event::read(t, x)
            } else {
                Event::write(t, x)
            });
        }
        ev.push(Event::release(t, l));
    }
    ev.truncate(n as usize);
    Trace::from_events(ev)
}

fn clocks(c: &mut Criterion) {
    let n = common::events();
    let mut g = c.benchmark_group("clocks");
    g.throughput(Throughput::Elements(n));
    g.sample_size(10);
    for threads in [64u32, 256, 1000] {
        let random = Generator::trace(GenConfig {
            events: n,
            threads,
            vars: 10_000,
            locks: 32,
            sync: 0.3,
            seed: threads as u64,
            ..GenConfig::default()
        });
        let pairs = pairs_trace(threads, n);
        for (workload, t, kinds) in [
            (
                "random",
                &random,
                &[("fasttrack", AnalysisKind::FastTrack)][..],
            ),
            (
                "pairs",
                &pairs,
                &[
                    ("fasttrack", AnalysisKind::FastTrack),
                    ("shb", AnalysisKind::Shb),
                ][..],
            ),
        ] {
            for &(name, kind) in kinds {
                for (cname, clock) in [("vector", ClockKind::Vector), ("tree", ClockKind::Tree)] {
                    g.bench_with_input(
                        BenchmarkId::new(format!("{workload}/{name}-{cname}"), threads),
                        t,
                        |b, t| b.iter(|| run_one(t, kind, clock, false)),
                    );
                }
            }
        }
    }
    g.finish();
}

criterion_group!(benches, analyses, clocks);
criterion_main!(benches);
