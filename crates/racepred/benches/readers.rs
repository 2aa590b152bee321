//! Reading speed: STD text vs racepred's binary form, on a generated trace held in memory.
//!
//! `cargo bench -p racepred --bench readers` runs the criterion groups (10^6 events).
//! With `RACEPRED_BENCH_FILES=N` set it instead writes an N-event trace to
//! `/tmp/racepred-bench.{std,rpb}` and times reading each file once (the by-hand 10^7
//! measurement: `RACEPRED_BENCH_FILES=10000000 cargo bench -p racepred --bench readers`).

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use criterion::{criterion_group, Criterion, Throughput};
use racepred::gen::{GenConfig, Generator};
use racepred::trace::binary::{BinaryReader, BinaryWriter};
use racepred::trace::std_format::StdReader;
use racepred::trace::write::{self, copy, StdWriter};
use racepred::trace::{EventSource, Format};

fn config(events: u64) -> GenConfig {
    GenConfig {
        events,
        threads: 8,
        vars: 10_000,
        locks: 16,
        locs: 5_000,
        seed: 1,
        ..GenConfig::default()
    }
}

fn drain(src: &mut dyn EventSource) -> u64 {
    let mut n = 0u64;
    let mut acc = 0u32;
    while let Some(ev) = src.next_event().expect("valid trace") {
        acc = acc.wrapping_add(ev.target);
        n += 1;
    }
    black_box(acc);
    n
}

fn readers(c: &mut Criterion) {
    const N: u64 = 1_000_000;
    let mut w = StdWriter::new(Vec::new());
    copy(&mut Generator::new(config(N)), &mut w).unwrap();
    let std_bytes = w.finish().unwrap();
    let mut w = BinaryWriter::new(Vec::new());
    copy(&mut Generator::new(config(N)), &mut w).unwrap();
    let bin_bytes = w.finish().unwrap();

    let mut g = c.benchmark_group("read_1e6");
    g.throughput(Throughput::Elements(N));
    g.sample_size(10);
    g.bench_function("std", |b| {
        b.iter(|| {
            let mut r = StdReader::from_buf_read(&std_bytes[..]);
            assert_eq!(drain(&mut r), N);
        })
    });
    g.bench_function("binary", |b| {
        b.iter(|| {
            let mut r = BinaryReader::from_buf_read(&bin_bytes[..]).unwrap();
            assert_eq!(drain(&mut r), N);
        })
    });
    g.finish();
}

criterion_group!(benches, readers);

/// CPU time of this thread in seconds (the machine is shared; wall time is noisy).
#[cfg(target_os = "linux")]
fn cpu_time() -> f64 {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clk: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut t = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; the clock id is a Linux constant.
    unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

#[cfg(not(target_os = "linux"))]
fn cpu_time() -> f64 {
    0.0
}

/// Writes an `n`-event trace in both formats and times reading each file through `open`.
fn files(n: u64) {
    for (name, format) in [("std", Format::Std), ("rpb", Format::Binary)] {
        let path = format!("/tmp/racepred-bench.{name}");
        let path = Path::new(&path);
        let t = Instant::now();
        let mut w = write::create(path, format).unwrap();
        copy(&mut Generator::new(config(n)), &mut *w).unwrap();
        w.finish().unwrap();
        let wt = t.elapsed().as_secs_f64();
        let size = std::fs::metadata(path).unwrap().len();
        // Warm the page cache, then time.
        drain(&mut *racepred::trace::open(path).unwrap());
        let t = Instant::now();
        let c = cpu_time();
        let got = drain(&mut *racepred::trace::open(path).unwrap());
        let ct = cpu_time() - c;
        let rt = t.elapsed().as_secs_f64();
        assert_eq!(got, n);
        println!(
            "{name}: {size} bytes, write {:.1} M events/s, read {:.1} M events/s wall ({rt:.3} s), {:.1} M events/s CPU ({ct:.3} s)",
            n as f64 / wt / 1e6,
            n as f64 / rt / 1e6,
            n as f64 / ct / 1e6,
        );
    }
}

fn main() {
    if let Ok(n) = std::env::var("RACEPRED_BENCH_FILES") {
        files(n.parse().expect("RACEPRED_BENCH_FILES=<events>"));
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
