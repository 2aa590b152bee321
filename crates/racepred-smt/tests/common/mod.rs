//! Helpers shared by the SMT crate's test files: random action lists for
//! `racepred::gen::from_actions` and the location groups of event pairs.
#![allow(dead_code)] // each test file uses a different subset

use std::collections::BTreeSet;

use proptest::prelude::*;
use racepred::report::{group_key_of, GroupKey};
use racepred::trace::Trace;

/// Up to `max - 1` random (kind, variable or lock, thread) actions for `from_actions`.
pub fn actions(max: usize) -> impl Strategy<Value = Vec<(u8, u8, u8)>> {
    proptest::collection::vec((0u8..4, 0u8..12, 0u8..4), 0..max)
}

/// The location group (first place, second place, kind) of the event pair `(x, y)` of `t`.
pub fn group_of(t: &Trace, (x, y): (u64, u64)) -> GroupKey {
    group_key_of(&t.events[x as usize], &t.events[y as usize])
}

/// The location groups of the event pairs `pairs` of `t`.
pub fn groups<'a>(
    t: &Trace,
    pairs: impl IntoIterator<Item = &'a (u64, u64)>,
) -> BTreeSet<GroupKey> {
    pairs.into_iter().map(|&p| group_of(t, p)).collect()
}
