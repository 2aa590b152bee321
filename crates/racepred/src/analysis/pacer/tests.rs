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

/// The paths that work on the stored record in place (`unsampled`, `sampled_direct`) do
/// what the general path does: same races, pairs and counters, on traces with few
/// variables (read maps of every shape, many races) and with many (mostly first accesses).
#[test]
fn in_place_paths_equal_the_general_path() {
    use crate::gen::{GenConfig, Generator};
    for (vars, threads, seed) in [(3, 3, 1), (12, 4, 2), (40, 6, 3), (2000, 8, 4)] {
        let trace = Generator::trace(GenConfig {
            events: 30_000,
            threads,
            vars,
            locks: 3,
            sync: 0.1,
            volatile: 0.02,
            seed,
            ..GenConfig::default()
        });
        for (rate, period) in [(0.05, 20), (0.3, 50), (0.5, 7), (1.0, 50), (0.5, 0)] {
            let cfg = PacerConfig {
                rate,
                period,
                seed: 9,
                pairs: true,
            };
            let mut a = Detector::new(&cfg);
            a.general_only = true;
            let mut b = Detector::new(&cfg);
            for (i, e) in trace.events.iter().enumerate() {
                a.on_event(i as u64, e);
            }
            for (k, chunk) in trace.events.chunks(4096).enumerate() {
                b.on_events((k * 4096) as u64, chunk);
            }
            assert!(!b.racy_events().is_empty() || rate < 0.1 || vars > 100);
            assert_same(&a, &b, &format!("vars {vars} rate {rate} period {period}"));
        }
    }
}

/// `on_events` over blocks of any size is `on_event` per event: same races, counters and
/// sampled ranges.
#[test]
fn blocks_equal_single_events() {
    use crate::gen::{GenConfig, Generator};
    let trace = Generator::trace(GenConfig {
        events: 20_000,
        threads: 4,
        vars: 40,
        locks: 3,
        sync: 0.2,
        volatile: 0.02,
        seed: 3,
        ..GenConfig::default()
    });
    for (rate, period) in [(0.0, 50), (0.3, 50), (0.3, 7), (1.0, 50), (0.5, 0)] {
        let cfg = PacerConfig {
            rate,
            period,
            seed: 5,
            pairs: true,
        };
        let mut a = Detector::new(&cfg);
        for (i, e) in trace.events.iter().enumerate() {
            a.on_event(i as u64, e);
        }
        for block in [1, 3, 64, 4096, 20_000] {
            let mut b = Detector::new(&cfg);
            for (k, chunk) in trace.events.chunks(block).enumerate() {
                b.on_events((k * block) as u64, chunk);
            }
            assert_same(&a, &b, &format!("rate {rate} block {block}"));
        }
    }
}
