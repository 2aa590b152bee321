//! Events per second of `wcp`, `lockset`, `tsan-hybrid` and `w3po` (complete and linear)
//! on a 10^6-event generated trace (4 threads, 100 variables, 4 locks, 10% sync events).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use racepred::analysis::{create, run_trace, AnalysisKind, AnalysisOptions};
use racepred::gen::{GenConfig, Generator};

fn bench(c: &mut Criterion) {
    let trace = Generator::trace(GenConfig {
        events: 1_000_000,
        seed: 1,
        ..GenConfig::default()
    });
    let mut g = c.benchmark_group("lockset_w3po");
    g.throughput(Throughput::Elements(trace.len() as u64));
    g.sample_size(10);
    let cases: [(&str, AnalysisKind, Option<usize>); 6] = [
        ("wcp", AnalysisKind::Wcp, None),
        ("lockset", AnalysisKind::Lockset, None),
        ("tsan-hybrid", AnalysisKind::TsanHybrid, None),
        ("w3po-complete", AnalysisKind::W3po, None),
        ("w3po-linear-4", AnalysisKind::W3po, Some(4)),
        ("w3po-linear-16", AnalysisKind::W3po, Some(16)),
    ];
    for (name, kind, history) in cases {
        let opts = AnalysisOptions {
            history,
            ..AnalysisOptions::default()
        };
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut a = vec![create(kind, &opts).unwrap()];
                run_trace(&trace, &mut a)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
