//! Helpers shared by the library's test files: random action lists for
//! `racepred::gen::from_actions`, traces with their locations replaced, the location
//! groups of event pairs.
#![allow(dead_code)] // each test file uses a different subset

use proptest::prelude::*;
use std::collections::BTreeSet;

use racepred::report::{group_key_of, GroupKey};
use racepred::trace::{LocId, Op, Trace};

/// Up to `max - 1` random (kind, variable or lock, thread) actions for `from_actions`.
pub fn actions(max: usize) -> impl Strategy<Value = Vec<(u8, u8, u8)>> {
    prop::collection::vec((0u8..4, 0u8..12, 0u8..4), 0..max)
}

/// The trace with its events' locations replaced by `locs` (cycled): few locations, so
/// that location groups hold several pairs and distinct variables share locations; `4`
/// stands for no location (grouped by variable, as CSV traces are).
pub fn with_locs(t: &Trace, locs: &[u8]) -> Trace {
    let mut events = t.events.clone();
    for (i, ev) in events.iter_mut().enumerate() {
        let l = locs[i % locs.len()];
        ev.loc = if l == 4 { LocId::NONE } else { LocId(l as u32) };
    }
    Trace::from_events(events)
}

/// The location groups (first place, second place, kind) of the event pairs `pairs` of `t`.
pub fn groups<'a>(
    t: &Trace,
    pairs: impl IntoIterator<Item = &'a (u64, u64)>,
) -> BTreeSet<GroupKey> {
    pairs
        .into_iter()
        .map(|&(a, b)| group_key_of(&t.events[a as usize], &t.events[b as usize]))
        .collect()
}

/// The number of threads of `t`: one past the highest thread id acting, forking or joined.
pub fn thread_count(t: &Trace) -> usize {
    let n = t.events.iter().map(|e| {
        let other = if matches!(e.op, Op::Fork | Op::Join) {
            e.target + 1
        } else {
            0
        };
        (e.thread.0 + 1).max(other)
    });
    n.max().unwrap_or(0) as usize
}
