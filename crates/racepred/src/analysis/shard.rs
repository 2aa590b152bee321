//! Sharding by variable: one analysis run on several threads, each owning a share of the
//! variables.
//!
//! Some analyses keep two kinds of state: synchronisation state (thread, lock, volatile and
//! condition clocks; held locks) that plain accesses never change, and per-variable state
//! (shadow words, shadow entries, Eraser states) that only the accesses of that variable
//! read and write. For them the work on plain accesses, nearly all of it, splits by
//! variable with no communication at all: shard `k` of `n` sees every synchronisation
//! event, and of the plain accesses only those of the variables `x ≡ k (mod n)`, whose ids
//! it renumbers densely (`x / n`, so each shard's per-variable vectors are `1/n` of the
//! whole); every other plain access becomes a `br` event, which these analyses ignore
//! apart from counting it as an event of its thread, as they count the access. Event
//! indices are unchanged. Each shard's report is exactly the unsharded report restricted
//! to its variables, so [`merge`] rebuilds the whole: listed pairs and racy events are
//! unions; a grouped report's location pair gets the earliest first instance of its shards
//! and the sum of their counts (a racing access, the unit counted, belongs to one variable
//! and so to one shard); the analysis's figures (shadow entries, Eraser violations and
//! violating variables) are counts over variables and are summed. `tests/shard_props.rs`
//! checks that sharded and unsharded reports are identical.
//!
//! Sharded ([`shardable`]): `lockset`, `tsan-hybrid` and `w3po` in their default, grouped
//! modes, whose work per access (a scan of the variable's shadow entries or bounded log)
//! dwarfs the rest. In W3PO accesses also create order (the WRD edge from a variable's last
//! write to a read), so each of its shards still processes every access for its clocks and
//! last writes, and only checks and logs its own variables' accesses, most of its work.
//! A figure of the whole run
//! that every shard computes alike (W3PO's weak-WCP joins, its history) only the first shard
//! reports, and [`merge`] keeps it as it is. Not the others: in SHB and WCP the state that
//! accesses order by (last writes, conflicting critical sections) is most of the work; the
//! pair-listing modes (`--all-pairs`, HBP/SHBP) cap and post-process their lists as a whole. `hb` and
//! `fasttrack` would shard correctly, but their work per access is a few comparisons: the
//! duplicated synchronisation costs more than the halved access work
//! (docs/performance-log.md).
//!
//! Each shard gets every event unchanged: the analysis, restricted with
//! [`Analysis::restrict_to_shard`], does the renumbering and skips other shards' accesses
//! itself ([`VarShard`]), and `lockset` and `tsan-hybrid` pick their events of a block in
//! one pass without a branch per event ([`VarShard::select`]).
//!
//! The wall-time gain needs a core per shard (and one for the reader); the CPU time grows by
//! the duplicated synchronisation work and each shard's pass over every event. On traces
//! where reading is the bottleneck it is a loss (docs/performance-log.md).

use std::collections::BTreeMap;

use super::{Analysis, AnalysisKind, AnalysisOptions, Side};
use crate::report::{GroupKey, RacePair, RaceReport, RacyEvent, RacyLog};
use crate::trace::{Event, Names, Op};

/// True if `kind` with `opts` can run as shards ([`Shard`]): its registry row says so, and
/// the pairs are grouped (the pair-listing modes cap and post-process their lists whole).
pub fn shardable(kind: AnalysisKind, opts: &AnalysisOptions) -> bool {
    kind.row().shardable && !opts.all_pairs
}

/// Shard `k` of `n` of an analysis: feeds it every event; the analysis itself, restricted
/// with [`Analysis::restrict_to_shard`], treats the plain accesses of other shards'
/// variables as `br` events and renumbers its own ([`VarShard::view`]), instead of a copy of
/// each event in a per-shard view.
pub struct Shard<'a> {
    inner: Box<dyn Analysis + 'a>,
    shard: VarShard,
}

/// Division by a fixed `n` with two multiplications (D. Lemire, O. Kaser, N. Kurz: "Faster
/// Remainder by Direct Computation", 2019): a hardware division on every access would cost
/// more than most of the access's work.
#[derive(Clone, Copy, Debug)]
struct Divisor {
    n: u32,
    /// `⌈2^64 / n⌉` (wrapping: 0 for `n = 1`, where the formulas below still hold).
    m: u64,
}

impl Divisor {
    fn new(n: u32) -> Divisor {
        assert!(n > 0);
        Divisor {
            n,
            m: (u64::MAX / n as u64).wrapping_add(1),
        }
    }

    /// `(x / n, x % n)`.
    #[inline(always)]
    fn div_rem(self, x: u32) -> (u32, u32) {
        if self.n == 1 {
            return (x, 0);
        }
        let low = self.m.wrapping_mul(x as u64);
        let q = ((self.m as u128 * x as u128) >> 64) as u32;
        let r = ((low as u128 * self.n as u128) >> 64) as u32;
        (q, r)
    }
}

/// The variables of shard `k` of `n`: `x ≡ k (mod n)`, renumbered `x / n`. An analysis
/// restricted to it ([`Analysis::restrict_to_shard`]) passes its plain accesses through
/// [`VarShard::view`]; the default, [`VarShard::WHOLE`], is every variable unrenumbered.
#[derive(Clone, Copy, Debug)]
pub struct VarShard {
    k: u32,
    by: Divisor,
}

impl Default for VarShard {
    fn default() -> Self {
        VarShard::WHOLE
    }
}

impl VarShard {
    /// Every variable, ids unchanged.
    pub const WHOLE: VarShard = VarShard {
        k: 0,
        by: Divisor { n: 1, m: 0 },
    };

    /// Shard `k` of `n` (`k < n`).
    pub fn new(k: u32, n: u32) -> VarShard {
        assert!(k < n, "shard {k} of {n}");
        VarShard {
            k,
            by: Divisor::new(n),
        }
    }

    /// The plain access `ev` as this shard sees it: with its variable renumbered, or `None`
    /// for another shard's variable (the analysis then treats it as a `br` event).
    #[inline(always)]
    pub fn view(self, ev: &Event) -> Option<Event> {
        let (q, r) = self.by.div_rem(ev.target);
        (r == self.k).then(|| {
            let mut seen = *ev;
            seen.target = q;
            seen
        })
    }

    /// [`VarShard::view`] for an analysis that knows at compile time whether it runs whole
    /// (`WHOLE`: the shard is [`VarShard::WHOLE`], and the access is its own, unchanged,
    /// with no look at its variable).
    #[inline(always)]
    pub fn own<const WHOLE: bool>(self, ev: &Event) -> Option<Event> {
        if WHOLE {
            debug_assert!(self.is_whole());
            Some(*ev)
        } else {
            self.view(ev)
        }
    }

    /// True for [`VarShard::WHOLE`].
    #[inline]
    pub fn is_whole(self) -> bool {
        self.by.n == 1
    }

    /// True for the first shard (and [`VarShard::WHOLE`]): the one that reports the figures
    /// of the whole run (see [`merge`]).
    #[inline]
    pub fn is_first(self) -> bool {
        self.k == 0
    }

    /// Into `into`, the positions in `events` of the ones a shard needs: its own plain
    /// accesses and the events whose operation passes `sync`. Without a branch per event:
    /// the shard of an access is as good as random, and a branch on it would be mispredicted
    /// half the time with two shards.
    #[inline]
    pub fn select(self, events: &[Event], sync: impl Fn(Op) -> bool, into: &mut Vec<u32>) {
        into.clear();
        into.resize(events.len(), 0);
        let mut n = 0;
        for (i, ev) in events.iter().enumerate() {
            let (_, r) = self.by.div_rem(ev.target);
            into[n] = i as u32;
            n += usize::from(sync(ev.op) | (ev.is_access() & (r == self.k)));
        }
        into.truncate(n);
    }

    /// Runs `event` on the events of `events` (the first numbered `first`) that analysis
    /// `a`'s shard needs, picked in one pass ([`VarShard::select`]): its own accesses and
    /// the events whose operation passes `sync`. `parts` gives `a`'s shard and the buffer
    /// of selected positions it reuses from block to block.
    #[inline]
    pub fn run_selected<A>(
        a: &mut A,
        first: u64,
        events: &[Event],
        sync: impl Fn(Op) -> bool,
        parts: fn(&mut A) -> (VarShard, &mut Vec<u32>),
        mut event: impl FnMut(&mut A, u64, &Event),
    ) {
        let (shard, buf) = parts(a);
        let mut selected = std::mem::take(buf);
        shard.select(events, sync, &mut selected);
        for &i in &selected {
            event(a, first + u64::from(i), &events[i as usize]);
        }
        *parts(a).1 = selected;
    }

    /// The trace's id of the shard's variable `x` (inverse of [`VarShard::view`]).
    #[inline]
    fn global(self, x: u32) -> u32 {
        x * self.by.n + self.k
    }
}

impl<'a> Shard<'a> {
    /// Shard `k` of `n` (`k < n`) of `inner`, a fresh analysis of a [`shardable`] kind.
    pub fn new(mut inner: Box<dyn Analysis + 'a>, k: u32, n: u32) -> Shard<'a> {
        let shard = VarShard::new(k, n);
        assert!(
            inner.restrict_to_shard(shard),
            "{} cannot be sharded",
            inner.name()
        );
        Shard { inner, shard }
    }
}

impl Analysis for Shard<'_> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    #[inline]
    fn on_event(&mut self, index: u64, ev: &Event, side: Side<'_>) {
        self.inner.on_event(index, ev, side);
    }

    fn on_events(&mut self, first: u64, events: &[Event]) {
        self.inner.on_events(first, events);
    }

    fn restrict_to_shard(&mut self, _: VarShard) -> bool {
        false // already a shard
    }

    fn finish(&mut self, names: &Names) -> RaceReport {
        let mut r = self.inner.finish(names);
        // Back to the trace's variable ids.
        let shard = self.shard;
        let global = |ev: &mut Event| {
            if ev.is_access() {
                ev.target = shard.global(ev.target);
            }
        };
        for p in &mut r.pairs {
            global(&mut p.first_event);
            global(&mut p.second_event);
        }
        for e in &mut r.racy_events {
            global(&mut e.event);
        }
        r
    }
}

/// The report of a whole analysis from the reports of its shards (see the module comment).
/// A numeric figure that every shard reports is summed; one that only some report (the
/// first shard's figures of the whole run) is taken from the first.
pub fn merge(mut parts: Vec<RaceReport>) -> RaceReport {
    assert!(!parts.is_empty(), "no shard reports");
    if parts.len() == 1 {
        return parts.pop().unwrap();
    }
    let grouped = parts.iter().any(|r| r.is_grouped());
    // The lists move: a hb report on a 10^7-event trace lists millions of racy events.
    let mut pairs: Vec<(RacePair, u64)> = Vec::new();
    // Into the first part's vector (growing a large block remaps it, without a copy).
    let mut racy = std::mem::take(&mut parts[0].racy_events);
    racy.reserve_exact(parts.iter().map(|r| r.racy_events.len()).sum());
    let racy_grouped = parts.iter().any(|r| r.racy_grouped());
    let mut racy_counts: Vec<u64> = Vec::new();
    for r in &mut parts {
        racy_counts.append(&mut r.racy_counts);
        let counts = std::mem::take(&mut r.group_counts);
        let listed = std::mem::take(&mut r.pairs);
        if grouped {
            pairs.extend(listed.into_iter().zip(counts));
        } else {
            pairs.extend(listed.into_iter().map(|p| (p, 0)));
        }
        racy.append(&mut r.racy_events);
    }
    let mut whole = parts[0].clone();
    for (key, value) in whole.extra.iter_mut() {
        if let Some(sum) = parts
            .iter()
            .map(|r| r.extra.get(key).and_then(|v| v.as_u64()))
            .sum::<Option<u64>>()
        {
            *value = sum.into();
        }
    }
    if grouped {
        // Per location pair: the first instance (earliest second event, then latest first
        // event) and the summed count.
        let mut groups: BTreeMap<GroupKey, (RacePair, u64)> = BTreeMap::new();
        for (p, c) in pairs {
            let key = p.group_key();
            let g = groups.entry(key).or_insert((p, 0));
            if (p.second, std::cmp::Reverse(p.first)) < (g.0.second, std::cmp::Reverse(g.0.first)) {
                g.0 = p;
            }
            g.1 += c;
        }
        (whole.pairs, whole.group_counts) = groups.into_values().unzip();
    } else {
        whole.pairs = pairs.into_iter().map(|(p, _)| p).collect();
    }
    if racy_grouped {
        // Per (location, operation), which shards may share: the earliest first racy event
        // and the summed count.
        let mut v: Vec<(RacyEvent, u64)> = racy.into_iter().zip(racy_counts).collect();
        v.sort_by_key(|(e, _)| e.index);
        (whole.racy_events, whole.racy_counts) = v.into_iter().unzip();
        RacyLog::regroup(&whole).finish(&mut whole);
    } else {
        whole.racy_events = racy;
    }
    whole.normalize();
    whole
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Grouped racy events of shards merge into the grouping of all their racy events (two
    /// shards' variables may share a location).
    #[test]
    fn grouped_racy_events_merge_by_location() {
        use crate::report::{RacyLog, ReportKind};
        use crate::trace::{Event, LocId, ThreadId};
        let ev = |x, op, l| Event::new(ThreadId(x % 2), op, x, LocId(l));
        let racy = [
            (3, ev(0, Op::Read, 7)),
            (4, ev(1, Op::Read, 7)),
            (5, ev(1, Op::Write, 7)),
            (8, ev(0, Op::Read, 9)),
            (9, ev(0, Op::Read, 7)),
        ];
        let report = |pick: &dyn Fn(u32) -> bool, all| {
            let mut log = RacyLog::new(all);
            for (i, e) in racy.iter().filter(|(_, e)| pick(e.target)) {
                log.push(*i, e);
            }
            let mut r = RaceReport::new("hb", ReportKind::RacyEvents);
            log.finish(&mut r);
            r
        };
        let merged = merge(vec![report(&|x| x == 1, false), report(&|x| x == 0, false)]);
        let want = report(&|_| true, true).racy_grouped_report();
        assert_eq!(
            (merged.racy_events, merged.racy_counts),
            (want.racy_events, want.racy_counts)
        );
    }

    #[test]
    fn divisor_matches_hardware_division() {
        for n in [1u32, 2, 3, 5, 7, 8, 10, 64, 1000, 65_537, u32::MAX] {
            let by = Divisor::new(n);
            for x in [
                0u32,
                1,
                2,
                3,
                n - 1,
                n,
                n.wrapping_add(1),
                12_345_678,
                u32::MAX - 1,
                u32::MAX,
            ] {
                assert_eq!(by.div_rem(x), (x / n, x % n), "{x} / {n}");
            }
        }
    }
}
