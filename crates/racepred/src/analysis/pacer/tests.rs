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

/// FastTrack epoch ids are u32s renumbered when they run out: a detector whose ids start
/// just below the limit (so it renumbers early in the trace) finds exactly the same.
#[test]
fn epoch_ids_renumber_when_they_run_out() {
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
    for rate in [0.0, 0.3, 1.0] {
        let cfg = PacerConfig {
            rate,
            period: 50,
            seed: 5,
            pairs: true,
        };
        let (mut a, mut b) = (Detector::new(&cfg), Detector::new(&cfg));
        b.set_next_epoch_for_test(u32::MAX - 300);
        for (i, e) in trace.events.iter().enumerate() {
            assert_eq!(
                a.on_event(i as u64, e),
                b.on_event(i as u64, e),
                "event {i}"
            );
        }
        assert!(b.next_epoch_for_test() < 10_000, "renumbered");
        assert_eq!(a.racy_events(), b.racy_events());
        assert_eq!(a.pairs(), b.pairs());
        assert_eq!(a.counters(), b.counters());
    }
}
