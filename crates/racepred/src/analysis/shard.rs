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
//! apart from counting it as an event of its thread, as they count the access (TSan
//! hybrid's local time steps at every event). Event indices are unchanged. Each shard's
//! report is exactly the unsharded report restricted to its variables, so [`merge`]
//! rebuilds the whole: listed pairs and racy events are unions; a grouped report's location
//! pair gets the earliest first instance of its shards and the sum of their counts (a
//! racing access, the unit counted, belongs to one variable and so to one shard); the
//! analysis's figures (shadow entries, Eraser violations and violating variables) are
//! counts over variables and are summed. `tests/shard_props.rs` checks that sharded and
//! unsharded reports are identical.
//!
//! Sharded ([`shardable`]): `lockset` and `tsan-hybrid` in their default, grouped modes,
//! whose work per access (a scan of the variable's shadow entries) dwarfs the rest. Not the
//! others: in SHB, WCP and W3PO accesses create order between threads (last-write edges,
//! conflicting critical sections), so every shard would need every access; the pair-listing
//! modes (`--all-pairs`, HBP/SHBP) cap and post-process their lists as a whole. `hb` and
//! `fasttrack` would shard correctly, but their work per access is a few comparisons: on
//! the 2-core machine of the benchmarks, two `hb` shards took 0.42 s on the generated
//! 10^7-event trace against 0.24 s for one thread (the copy of each event per shard and the
//! duplicated synchronisation cost more than the halved access work).
//!
//! The wall-time gain needs a core per shard (and one for the reader); the CPU time grows by
//! the duplicated synchronisation work and a copy of each event per shard.

use std::collections::BTreeMap;

use super::{Analysis, AnalysisKind, AnalysisOptions, Side};
use crate::report::{PairKind, RacePair, RaceReport};
use crate::trace::{Event, LocId, Names, Op, ThreadId};

/// True if `kind` with `opts` can run as shards ([`Shard`]).
pub fn shardable(kind: AnalysisKind, opts: &AnalysisOptions) -> bool {
    match kind {
        AnalysisKind::Lockset | AnalysisKind::TsanHybrid => !opts.all_pairs,
        _ => false,
    }
}

/// Shard `k` of `n` of an analysis: feeds it every synchronisation event and the plain
/// accesses of its variables (renumbered), the other plain accesses as `br` events.
pub struct Shard<'a> {
    inner: Box<dyn Analysis + 'a>,
    k: u32,
    /// Division by the number of shards.
    by: Divisor,
    /// The current run of events as the shard sees them.
    buf: Vec<Event>,
}

/// Division by a fixed `n` with two multiplications (D. Lemire, O. Kaser, N. Kurz: "Faster
/// Remainder by Direct Computation", 2019): a hardware division per access took a fifth of
/// a `hb` shard's time.
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

impl<'a> Shard<'a> {
    /// Shard `k` of `n` (`k < n`) of `inner`, a fresh analysis of a [`shardable`] kind.
    pub fn new(inner: Box<dyn Analysis + 'a>, k: u32, n: u32) -> Shard<'a> {
        assert!(k < n, "shard {k} of {n}");
        Shard {
            inner,
            k,
            by: Divisor::new(n),
            buf: Vec::new(),
        }
    }

    /// Writes into `to` the event `ev` as this shard sees it.
    #[inline(always)]
    fn view(k: u32, by: Divisor, ev: &Event, to: &mut Event) {
        // Field by field, without branches: building a whole `Event` made the compiler
        // assemble each one on the stack, with stalled loads (a tenth of a `lockset` shard's
        // time).
        let access = ev.is_access();
        let (q, r) = by.div_rem(ev.target);
        let mine = !access || r == k;
        to.thread = ev.thread;
        to.target = if !access {
            ev.target
        } else if mine {
            q
        } else {
            0
        };
        to.loc = if mine { ev.loc } else { LocId::NONE };
        to.op = if mine { ev.op } else { Op::Branch };
    }
}

impl Analysis for Shard<'_> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    #[inline]
    fn on_event(&mut self, index: u64, ev: &Event, side: Side<'_>) {
        let mut seen = *ev;
        Self::view(self.k, self.by, ev, &mut seen);
        self.inner.on_event(index, &seen, side);
    }

    fn on_events(&mut self, first: u64, events: &[Event]) {
        let (k, by) = (self.k, self.by);
        // Every event of `buf` was made by `Event::new` (its padding is zero) and keeps that.
        self.buf.resize(
            events.len(),
            Event::new(ThreadId(0), Op::Branch, 0, LocId::NONE),
        );
        for (to, ev) in self.buf.iter_mut().zip(events) {
            Self::view(k, by, ev, to);
        }
        self.inner.on_events(first, &self.buf);
    }

    fn finish(&mut self, names: &Names) -> RaceReport {
        let mut r = self.inner.finish(names);
        // Back to the trace's variable ids.
        let (k, n) = (self.k, self.by.n);
        let global = |ev: &mut Event| {
            if ev.is_access() {
                ev.target = ev.target * n + k;
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
    for r in &mut parts {
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
        let mut groups: BTreeMap<(u32, u32, PairKind), (RacePair, u64)> = BTreeMap::new();
        for (p, c) in pairs {
            let key = (p.first_event.loc.0, p.second_event.loc.0, p.kind);
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
    whole.racy_events = racy;
    whole.normalize();
    whole
}

#[cfg(test)]
mod tests {
    use super::*;

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
