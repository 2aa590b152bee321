//! PACER cost vs sampling rate on a generated trace (in memory, so parsing is excluded):
//! r = 0, 0.01, 0.03, 0.1, 1, and FastTrack from the registry when it is built.
//! `RACEPRED_BENCH_EVENTS` sets the trace length (default 10^6; the report used 10^7).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use racepred::analysis::pacer::{Detector, PacerConfig};
use racepred::analysis::{create, AnalysisKind, AnalysisOptions, Side};
use racepred::gen::{GenConfig, Generator};

fn bench(c: &mut Criterion) {
    let events: u64 = std::env::var("RACEPRED_BENCH_EVENTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let trace = Generator::trace(GenConfig {
        events,
        threads: 8,
        vars: 100_000,
        locks: 16,
        sync: 0.05,
        volatile: 0.005,
        locs: 5000,
        seed: 1,
        ..GenConfig::default()
    });
    let mut g = c.benchmark_group("pacer");
    g.sample_size(10);
    g.throughput(Throughput::Elements(events));
    for rate in [0.0, 0.01, 0.03, 0.1, 1.0] {
        // `RACEPRED_BENCH_COUNTERS=1`: print the best of 5 runs and the counters (Table 3).
        if std::env::var("RACEPRED_BENCH_COUNTERS").is_ok() {
            let mut best = std::time::Duration::MAX;
            let mut d = None;
            for _ in 0..5 {
                let t0 = std::time::Instant::now();
                let mut det = Detector::new(&PacerConfig {
                    rate,
                    period: 10_000,
                    seed: 7,
                    pairs: false,
                });
                for (i, e) in trace.events.iter().enumerate() {
                    det.on_event(i as u64, e);
                }
                best = best.min(t0.elapsed());
                d = Some(det);
            }
            let d = d.unwrap();
            eprintln!(
                "rate {rate}: best {best:?}, effective rate {:.4}, racy events {}\n  {}",
                d.effective_rate(),
                d.racy_events().len(),
                serde_json::to_string(&d.counters()).unwrap()
            );
        }
        g.bench_with_input(BenchmarkId::new("rate", rate), &rate, |b, &rate| {
            b.iter(|| {
                let mut d = Detector::new(&PacerConfig {
                    rate,
                    period: 10_000,
                    seed: 7,
                    pairs: false,
                });
                for (i, e) in trace.events.iter().enumerate() {
                    d.on_event(i as u64, e);
                }
                d.racy_events().len()
            })
        });
    }
    if create(AnalysisKind::FastTrack, &AnalysisOptions::default()).is_ok() {
        g.bench_function("fasttrack", |b| {
            b.iter(|| {
                let mut a = create(AnalysisKind::FastTrack, &AnalysisOptions::default()).unwrap();
                for (i, e) in trace.events.iter().enumerate() {
                    a.on_event(i as u64, e, Side::default());
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
