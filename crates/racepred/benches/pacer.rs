//! PACER cost vs sampling rate on a generated trace (in memory, so parsing is excluded):
//! r = 0, 0.01, 0.03, 0.1, 1, and FastTrack from the registry.
//! `RACEPRED_BENCH_EVENTS` sets the trace length (default 10^6; the report used 10^7);
//! `RACEPRED_BENCH_TRACE=<file>` reads a trace file into memory instead (e.g. a corpus trace);
//! `RACEPRED_BENCH_PERIOD` sets PACER's sampling period (default 10^5 operations, the CLI's).
//! Events are fed as the drivers feed them: copied block by block into a reused buffer that
//! goes to `on_events`.
//! `RACEPRED_BENCH_TABLE=N`: instead of criterion, run every configuration N times
//! round-robin through the same `dyn Analysis` interface for each of
//! `RACEPRED_BENCH_SEEDS` PACER seeds (default 5) and print, per row, the mean over seeds of
//! the best wall time (CPU of this thread from `/proc/thread-self/schedstat` beside it), the
//! mean effective sampling rate, and the ratios to FastTrack; and beside them the ratio
//! beyond the loop paired within each round (median and range over all rounds), which
//! does not mix a fast FastTrack run with a slow PACER run when the machine's speed
//! drifts. One seed's sampling periods are about a hundred coin flips on a 10^7-event
//! trace, so its effective rate is off by half of `r` either way at r = 0.03, and the cost
//! with it; averaging over seeds measures the rate asked for. With
//! `RACEPRED_BENCH_ONLY=<row name>` only that row runs (for a profiler), with
//! `RACEPRED_BENCH_COUNTERS=1` also each run's counters.

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use racepred::analysis::pacer::PacerConfig;
use racepred::analysis::{create, Analysis, AnalysisKind, AnalysisOptions, Side};
use racepred::gen::{GenConfig, Generator};
use racepred::report::{RaceReport, ReportKind};
use racepred::trace::{Event, Names};

fn bench(c: &mut Criterion) {
    let events = common::events();
    let trace = match std::env::var("RACEPRED_BENCH_TRACE") {
        Ok(path) => {
            let mut src = racepred::trace::open(std::path::Path::new(&path)).expect("open trace");
            racepred::trace::Trace::read_from(&mut *src).expect("read trace")
        }
        Err(_) => Generator::trace(GenConfig {
            events,
            threads: 8,
            vars: 100_000,
            locks: 16,
            sync: 0.05,
            volatile: 0.005,
            locs: 5000,
            seed: 1,
            ..GenConfig::default()
        }),
    };
    if let Some(n) = std::env::var("RACEPRED_BENCH_TABLE")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
    {
        table(&trace.events, n.max(1));
        return;
    }
    // Criterion: relative timing of each configuration (seed 7, racy events only), fed
    // as the drivers feed events; `RACEPRED_BENCH_TABLE` gives the ratios and counters.
    let mut g = c.benchmark_group("pacer");
    g.sample_size(10);
    g.throughput(Throughput::Elements(trace.events.len() as u64));
    for rate in [0.0, 0.01, 0.03, 0.1, 1.0] {
        let row = Row::Pacer { rate, pairs: false };
        g.bench_with_input(BenchmarkId::new("rate", rate), &row, |b, row| {
            b.iter(|| feed(&mut *row.analysis(7), &trace.events))
        });
    }
    g.bench_function("fasttrack", |b| {
        b.iter(|| feed(&mut *Row::FastTrack.analysis(7), &trace.events))
    });
    g.finish();
}

/// The sampling period (operations): `RACEPRED_BENCH_PERIOD`, default
/// [`PacerConfig::DEFAULT_PERIOD`] (the CLI's).
fn bench_period() -> u64 {
    std::env::var("RACEPRED_BENCH_PERIOD")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(PacerConfig::DEFAULT_PERIOD)
}

/// CPU time of this thread in ns (`None` without `/proc`).
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// The loop's floor: an analysis that only counts accesses (what every analysis pays to
/// be fed the events).
struct Empty(u64);

impl Analysis for Empty {
    fn name(&self) -> &'static str {
        "empty"
    }
    fn on_event(&mut self, _index: u64, ev: &Event, _side: Side<'_>) {
        self.0 += ev.op.is_access() as u64;
    }
    fn finish(&mut self, _names: &Names) -> RaceReport {
        RaceReport::new("empty", ReportKind::RacyEvents)
    }
}

/// A row of the table: what runs.
#[derive(Clone, Copy)]
enum Row {
    /// The empty analysis (the loop's floor).
    Empty,
    /// PACER at `rate`, with race pairs (as the CLI reports) or racy events only (as
    /// FastTrack reports).
    Pacer {
        rate: f64,
        pairs: bool,
    },
    FastTrack,
}

impl Row {
    fn name(self) -> String {
        match self {
            Row::Empty => "empty loop".into(),
            Row::Pacer { rate, pairs: true } => format!("pacer r={rate}"),
            Row::Pacer { rate, pairs: false } => format!("pacer r={rate}, no pairs"),
            Row::FastTrack => "fasttrack".into(),
        }
    }

    fn analysis(self, seed: u64) -> Box<dyn Analysis> {
        match self {
            Row::Empty => Box::new(Empty(0)),
            Row::Pacer { rate, pairs } => {
                Box::new(racepred::analysis::pacer::Pacer::new(PacerConfig {
                    rate,
                    period: bench_period(),
                    seed,
                    pairs,
                }))
            }
            Row::FastTrack => create(AnalysisKind::FastTrack, &AnalysisOptions::default())
                .expect("fasttrack exists"),
        }
    }
}

/// One run: CPU s (or wall s), wall s, racy events, effective sampling rate (1 for the
/// rows that are not PACER).
#[derive(Clone, Copy)]
struct Run {
    cpu: f64,
    wall: f64,
    racy: usize,
    rate: f64,
}

/// Feeds `events` to `a` as the drivers do.
fn feed(a: &mut dyn Analysis, events: &[Event]) {
    // The drivers' path (`analysis::run`): the reader fills a reused buffer of
    // `analysis::BLOCK` events (`RACEPRED_BENCH_BLOCK` to try others), which goes to
    // `on_events` while it is in cache. The copy stands for the reader's writes; every row
    // pays it, the empty loop included.
    let bs: usize = std::env::var("RACEPRED_BENCH_BLOCK")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(racepred::analysis::BLOCK);
    let mut buf: Vec<Event> = Vec::with_capacity(bs);
    for (k, block) in events.chunks(bs).enumerate() {
        buf.clear();
        buf.extend_from_slice(block);
        a.on_events((k * bs) as u64, &buf);
    }
}

/// Runs `a` over `events` as the drivers do.
fn time(mut a: Box<dyn Analysis>, events: &[Event]) -> Run {
    let (c0, t0) = (thread_cpu_ns(), std::time::Instant::now());
    feed(&mut *a, events);
    let wall = t0.elapsed().as_secs_f64();
    let cpu = match (c0, thread_cpu_ns()) {
        (Some(a), Some(b)) => (b - a) as f64 * 1e-9,
        _ => wall,
    };
    let r = a.finish(&Names::default());
    if std::env::var("RACEPRED_BENCH_COUNTERS").is_ok() {
        if let Some(c) = r.extra.get("counters") {
            eprintln!("  counters: {c}");
        }
    }
    let rate = r
        .extra
        .get("effective_rate")
        .and_then(|v| v.as_f64())
        .unwrap_or(1.0);
    Run {
        cpu,
        wall,
        racy: r.racy_events.len(),
        rate,
    }
}

fn table(events: &[Event], n: usize) {
    // FastTrack last: the ratios are to it.
    let rows: Vec<Row> = std::iter::once(Row::Empty)
        .chain(
            [0.0, 0.01, 0.03, 0.1, 1.0]
                .iter()
                .map(|&rate| Row::Pacer { rate, pairs: true }),
        )
        .chain([
            Row::Pacer {
                rate: 1.0,
                pairs: false,
            },
            Row::FastTrack,
        ])
        .collect();
    let seeds: u64 = std::env::var("RACEPRED_BENCH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5)
        .max(1);
    // `RACEPRED_BENCH_ONLY=name`: run only that row (for a profiler).
    if let Ok(only) = std::env::var("RACEPRED_BENCH_ONLY") {
        for row in rows.iter().filter(|r| r.name() == only) {
            for k in 0..n {
                let run = time(row.analysis(1 + k as u64 % seeds), events);
                eprintln!(
                    "{only}: {:.4} s wall, {:.3} s CPU, {} racy events, effective rate {:.4}",
                    run.wall, run.cpu, run.racy, run.rate
                );
            }
        }
        return;
    }
    // Per row: sums over seeds of the best wall and CPU time and of the effective rate.
    let mut sum = vec![(0.0, 0.0, 0.0, 0usize); rows.len()];
    // Per row: the paired ratio of every round (its time beyond the empty loop's over
    // FastTrack's, all three from the same round).
    let mut paired: Vec<Vec<f64>> = vec![Vec::new(); rows.len()];
    for seed in 1..=seeds {
        let mut best: Vec<Option<Run>> = vec![None; rows.len()];
        for _ in 0..n {
            let mut walls = vec![0.0; rows.len()];
            for (k, row) in rows.iter().enumerate() {
                let run = time(row.analysis(seed), events);
                walls[k] = run.wall;
                best[k] = Some(match best[k] {
                    Some(b) if b.wall <= run.wall => Run {
                        cpu: b.cpu.min(run.cpu),
                        ..b
                    },
                    Some(b) => Run {
                        cpu: b.cpu.min(run.cpu),
                        ..run
                    },
                    None => run,
                });
            }
            let (floor, ft) = (walls[0], walls[rows.len() - 1]);
            for (p, w) in paired.iter_mut().zip(&walls) {
                p.push((w - floor) / (ft - floor));
            }
        }
        for (s, b) in sum.iter_mut().zip(best) {
            let b = b.expect("n >= 1");
            *s = (s.0 + b.wall, s.1 + b.cpu, s.2 + b.rate, b.racy);
        }
    }
    let k = seeds as f64;
    let mean: Vec<(f64, f64, f64, usize)> = sum
        .iter()
        .map(|&(w, c, r, racy)| (w / k, c / k, r / k, racy))
        .collect();
    // Ratios from wall time: on this kind of VM, CPU time comes in 4 ms ticks, too coarse
    // for runs of 10-100 ms; the best of `n` wall times on an otherwise idle machine is
    // the better estimate.
    let ft = mean[rows.len() - 1].0;
    let floor = mean[0].0;
    eprintln!(
        "{} events; per row the mean over {seeds} seeds of the best of {n} runs (wall s; CPU s \
         of this thread); beyond loop = (t - empty) / (FastTrack - empty), from wall times; \
         paired: the same ratio from each round's own three times, median [min, max] over \
         the {} rounds; racy events of the last seed",
        events.len(),
        seeds as usize * n
    );
    eprintln!(
        "| analysis | effective rate | wall s | CPU s | / FastTrack | beyond loop | paired | racy \
         events |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|");
    for ((row, (wall, cpu, rate, racy)), p) in rows.iter().zip(&mean).zip(&mut paired) {
        p.sort_by(f64::total_cmp);
        let paired = format!("{:.3} [{:.3}, {:.3}]", p[p.len() / 2], p[0], p[p.len() - 1]);
        let rate = match row {
            Row::Pacer { .. } => format!("{rate:.4}"),
            _ => "-".into(),
        };
        eprintln!(
            "| {} | {rate} | {wall:.4} | {cpu:.3} | {:.3} | {:.3} | {paired} | {racy} |",
            row.name(),
            wall / ft,
            (wall - floor) / (ft - floor)
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
