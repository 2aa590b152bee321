//! SSHB phase 1 (Alg. 1 + WRD candidates) and phase 2 (graph, condensation, diagnosis of
//! every pair, 1000 witnesses) timed separately on generated traces, reporting events/s.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use racepred::analysis::sshb::{diagnose_trace, SshbConfig};
use racepred::gen::{GenConfig, Generator};
use std::time::Duration;

fn bench(c: &mut Criterion) {
    for (events, vars, threads) in [(100_000u64, 1000u32, 4u32), (1_000_000, 1000, 4)] {
        let t = Generator::trace(GenConfig {
            events,
            vars,
            threads,
            seed: 1,
            ..GenConfig::default()
        });
        let mut g = c.benchmark_group(format!("sshb/{events}ev-{threads}t"));
        g.sample_size(10);
        g.measurement_time(Duration::from_secs(20));
        g.throughput(Throughput::Elements(events));
        let cfg = SshbConfig::default();
        g.bench_function("phase1", |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| diagnose_trace(&t, &cfg).stats.phase1)
                    .sum()
            })
        });
        g.bench_function("phase2", |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| diagnose_trace(&t, &cfg).stats.phase2)
                    .sum()
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
