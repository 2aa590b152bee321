//! Unit tests: the paper's figures and the counters.

use super::*;
use crate::trace::{Event, LocId, Op, ThreadId};

fn ev(t: u32, op: Op, target: u32) -> Event {
    Event::new(ThreadId(t), op, target, LocId::NONE)
}

fn run(events: &[Event], rate: f64, period: u64, seed: u64) -> Detector {
    let mut d = Detector::new(&PacerConfig {
        rate,
        period,
        seed,
        pairs: true,
    });
    for (i, e) in events.iter().enumerate() {
        d.on_event(i as u64, e);
    }
    d
}

#[test]
fn simple_race_at_rate_one_and_zero() {
    let evs = [ev(0, Op::Write, 0), ev(1, Op::Read, 0)];
    let d = run(&evs, 1.0, 1, 0);
    assert_eq!(d.racy_events().len(), 1);
    assert_eq!(d.pairs()[0].first, 0);
    assert_eq!(run(&evs, 0.0, 1, 0).racy_events().len(), 0);
}

/// Races, pairs, counters and sampled ranges of two detectors are the same.
fn assert_same(a: &Detector, b: &Detector, what: &str) {
    assert_eq!(a.racy_events(), b.racy_events(), "{what}");
    let k =
        (0..a.pairs().len().max(b.pairs().len())).find(|&k| a.pairs().get(k) != b.pairs().get(k));
    assert!(
        k.is_none(),
        "{what}: pair {k:?}: {:?} vs {:?}",
        k.and_then(|k| a.pairs().get(k))
            .map(|p| (p.first, p.second)),
        k.and_then(|k| b.pairs().get(k))
            .map(|p| (p.first, p.second))
    );
    assert_eq!(a.counters(), b.counters(), "{what}");
    assert_eq!(a.sampled_ranges(), b.sampled_ranges(), "{what}");
}

/// A generated trace over `vars` variables with locks and volatiles.
fn generated(events: u64, threads: u32, vars: u32, sync: f64, seed: u64) -> crate::trace::Trace {
    use crate::gen::{GenConfig, Generator};
    Generator::trace(GenConfig {
        events,
        threads,
        vars,
        locks: 3,
        sync,
        volatile: 0.02,
        seed,
        ..GenConfig::default()
    })
}

/// `events` fed one at a time (`general_only`: every metadata access by the general path).
fn single(cfg: &PacerConfig, events: &[Event], general_only: bool) -> Detector {
    let mut d = Detector::new(cfg);
    d.general_only = general_only;
    for (i, e) in events.iter().enumerate() {
        d.on_event(i as u64, e);
    }
    d
}

/// `events` fed in blocks of `block`.
fn blocks(cfg: &PacerConfig, events: &[Event], block: usize) -> Detector {
    let mut d = Detector::new(cfg);
    for (k, chunk) in events.chunks(block).enumerate() {
        d.on_events((k * block) as u64, chunk);
    }
    d
}

fn config(rate: f64, period: u64, seed: u64) -> PacerConfig {
    PacerConfig {
        rate,
        period,
        seed,
        pairs: true,
    }
}

/// The paths that work on the stored record in place (`unsampled`, `sampled_direct`) do
/// what the general path does: same races, pairs and counters, on traces with few
/// variables (read maps of every shape, many races) and with many (mostly first accesses).
#[test]
fn in_place_paths_equal_the_general_path() {
    for (vars, threads, seed) in [(3, 3, 1), (12, 4, 2), (40, 6, 3), (2000, 8, 4)] {
        let trace = generated(30_000, threads, vars, 0.1, seed);
        for (rate, period) in [(0.05, 20), (0.3, 50), (0.5, 7), (1.0, 50), (0.5, 0)] {
            let cfg = config(rate, period, 9);
            let a = single(&cfg, &trace.events, true);
            let b = blocks(&cfg, &trace.events, 4096);
            assert!(!b.racy_events().is_empty() || rate < 0.1 || vars > 100);
            assert_same(&a, &b, &format!("vars {vars} rate {rate} period {period}"));
        }
    }
}

/// `on_events` over blocks of any size is `on_event` per event: same races, counters and
/// sampled ranges.
#[test]
fn blocks_equal_single_events() {
    let trace = generated(20_000, 4, 40, 0.2, 3);
    for (rate, period) in [(0.0, 50), (0.3, 50), (0.3, 7), (1.0, 50), (0.5, 0)] {
        let cfg = config(rate, period, 5);
        let a = single(&cfg, &trace.events, false);
        for block in [1, 3, 64, 4096, 20_000] {
            let b = blocks(&cfg, &trace.events, block);
            assert_same(&a, &b, &format!("rate {rate} block {block}"));
        }
    }
}

#[test]
fn suggested_period_cuts_the_trace_into_enough_periods() {
    assert_eq!(suggest_period(0), 1);
    assert_eq!(suggest_period(500), 1);
    assert_eq!(suggest_period(1000), 10);
    assert_eq!(suggest_period(999_999), 1000);
    assert_eq!(suggest_period(1_000_000), 10_000);
    assert_eq!(suggest_period(10_000_000), 100_000);
    for ops in [1u64, 37, 12_345, 4_000_000, 98_765_432] {
        let p = suggest_period(ops);
        assert!(
            ops < 10 * FEW_PERIODS || ops / p >= FEW_PERIODS,
            "{ops}: {p}"
        );
    }
}

#[test]
fn report_counts_periods_and_calls_out_coarse_trials() {
    let evs: Vec<Event> = (0..500).map(|i| ev(i % 2, Op::Write, i % 7)).collect();
    let report = |period: u64| {
        let mut p = Pacer::new(PacerConfig {
            rate: 0.5,
            period,
            seed: 1,
            pairs: true,
        });
        p.on_events(0, &evs);
        p.finish(&crate::trace::Names::default())
    };
    let r = report(PacerConfig::DEFAULT_PERIOD);
    assert_eq!(r.extra["periods"], 1);
    assert!(r.notes.iter().any(|n| n.contains("is 1 period(s)")));
    let r = report(5);
    assert_eq!(r.extra["periods"], 100);
    let sampled = r.extra["sampling_periods"].as_u64().unwrap();
    assert!((20..80).contains(&sampled), "{sampled}");
    assert!(!r.notes.iter().any(|n| n.contains("period(s)")));
}

/// `events` fed as a caller with its own non-sampling filter feeds them (the recording
/// runtime's online mode): an access to a variable without metadata while
/// `unsampled_room()` is above 0 is not given to the detector but counted, and the counts
/// are handed over with `skip_unsampled` before the next event it does see (or at the end,
/// or when a run of them reaches `fold`). Also returns how many were skipped.
fn skipping(cfg: &PacerConfig, events: &[Event], fold: u64) -> (Detector, u64) {
    let mut d = Detector::new(cfg);
    // Skipped and not yet counted: reads, writes; room left for more.
    let (mut reads, mut writes, mut room) = (0u64, 0u64, 0u64);
    let mut skipped = 0;
    for (i, e) in events.iter().enumerate() {
        if room == 0 {
            d.skip_unsampled(reads, writes);
            (reads, writes) = (0, 0);
            room = d.unsampled_room();
        }
        if e.op.is_access() && room > 0 && !d.has_metadata(e.target) && reads + writes < fold {
            match e.op {
                Op::Write => writes += 1,
                _ => reads += 1,
            }
            room -= 1;
            skipped += 1;
            continue;
        }
        d.skip_unsampled(reads, writes);
        (reads, writes) = (0, 0);
        d.on_event(i as u64, e);
        room = d.unsampled_room();
    }
    d.skip_unsampled(reads, writes);
    (d, skipped)
}

/// Skipping, outside sampling periods, the accesses to variables without metadata and
/// counting them with `skip_unsampled` gives the detector's answers: the same racy events,
/// pairs, counters and sampled ranges as feeding every event.
#[test]
fn skipped_unsampled_accesses_change_no_answer() {
    for (vars, threads, seed) in [(3, 3, 1), (12, 4, 2), (40, 6, 3), (2000, 8, 4)] {
        let trace = generated(30_000, threads, vars, 0.1, seed);
        for (rate, period) in [
            (0.0, 50),
            (0.05, 20),
            (0.3, 50),
            (0.5, 7),
            (0.5, 1),
            (1.0, 50),
            (0.1, 1000),
        ] {
            let cfg = config(rate, period, 9);
            let a = single(&cfg, &trace.events, false);
            for fold in [1, 5, u64::MAX] {
                let (b, skipped) = skipping(&cfg, &trace.events, fold);
                let what = format!("vars {vars} rate {rate} period {period} fold {fold}");
                assert!(rate == 1.0 || period == 1 || skipped > 0, "{what}");
                assert_same(&a, &b, &what);
            }
        }
    }
}
