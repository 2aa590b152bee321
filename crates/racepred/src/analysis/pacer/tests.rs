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
