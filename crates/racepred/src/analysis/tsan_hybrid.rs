//! ThreadSanitizer v1 style hybrid: lockset pairs among accesses unordered by the
//! non-lock synchronisation order.
//!
//! - K. Serebryany, T. Iskhodzhanov: "ThreadSanitizer — data race detection in practice",
//!   WBIA 2009 (hybrid mode: happens-before from thread creation / join and signal / wait,
//!   *not* from locks, combined with locksets).
//! - As described in M. Sulzmann, K. Stadtmüller, MPLR 2020
//!   (`papers/w3po-hybrid-lockset.txt`) §3.2: "only applies the lockset comparison for
//!   events that are not ordered under the program order".
//!
//! A pair (e, f), e earlier in the trace, is reported when e and f conflict (plain accesses,
//! different threads, same variable, one a write), their locksets (Def. 3.10) are disjoint,
//! and e is not ordered before f by the *sync order*: the transitive closure of program
//! order, fork → first event of the child, last event of a child → join (the fork if the
//! child has no events), the latest `vw(X)` → `vr(X)` and the latest `sig(C)` →
//! `wait(C)` (the read-from edges of synchronisation; an edge from *every* earlier `vw`, as
//! HB has, is not kept by correct reorderings and loses predictable pairs: T1: `r(x)
//! vw(v)`, T2: `vw(v) vr(v) w(x)`). Lock
//! release → acquire is deliberately not an edge. The sync order is computed with vector
//! clocks whose local component advances after each edge out of the thread (`SyncClocks`),
//! so `e` is ordered before `f` iff `time(e) ≤ V_f(thread(e))`. By default pairs are
//! grouped by location pair from a bounded shadow (`locksets::Shadow`: linear in the
//! events); with `--all-pairs` every pair is enumerated from a per-(variable, thread)
//! access log as the suffix of unknown accesses (linear in the pairs).
//!
//! Promise: a subset of the lockset pairs; every predictable pair (SPEC §2) is reported
//! provided the oracle also keeps fork/join, volatile and sig/wait order (those edges are
//! kept by every correct reordering). Unsound in general.

use super::locksets::{sharded_lockset_analysis, Holdings, Pairs, ShardedLockset};
use super::shard::VarShard;
use super::slices::two;
use super::{Analysis, Side};
use crate::analysis::AnalysisKind;
use crate::clock::VectorClock;
use crate::report::RaceReport;
use crate::trace::{Event, Names, Op, ThreadId};

/// Vector clocks of the non-lock synchronisation order.
///
/// A thread's own component is its *epoch*: it starts at 1 and advances right after each
/// edge out of the thread (its `fork`, `vw` and `sig`, and its being joined), so the
/// accesses between two such edges share a time. That is all the order needs: another
/// thread learns of `u`'s events only through an edge out of `u`, which carries every time
/// of `u` up to that edge's and none after, so `e` is ordered before `f` iff
/// `time(e) ≤ V_f(thread(e))`, as with a step per event, and only the events with an edge
/// touch the clocks (a step per event would cost every access a clock update, and a `-j N`
/// shard would have to count the steps of the accesses it skips).
#[derive(Debug, Default)]
pub(crate) struct SyncClocks {
    pub threads: Vec<VectorClock>,
    /// Per volatile variable: clock of the latest `vw`.
    volatile: Vec<VectorClock>,
    /// Per condition: clock of the latest `sig`.
    signal: Vec<VectorClock>,
}

impl SyncClocks {
    #[inline]
    pub fn thread(&mut self, t: ThreadId) -> &mut VectorClock {
        if t.index() >= self.threads.len() {
            self.add_threads(t);
        }
        &mut self.threads[t.index()]
    }

    /// Clocks for the threads up to `t`, each at its first epoch (1: no other thread knows
    /// any of its events, and an unknown component is 0).
    #[cold]
    #[inline(never)]
    fn add_threads(&mut self, t: ThreadId) {
        for u in self.threads.len()..=t.index() {
            let mut c = VectorClock::new();
            c.set(ThreadId(u as u32), 1);
            self.threads.push(c);
        }
    }

    /// Applies `ev`'s incoming / outgoing sync edges (nothing for an event without one).
    #[inline]
    pub fn apply_edges(&mut self, ev: &Event) {
        let t = ev.thread;
        // The edge's other end, if it has one.
        let u = match ev.op {
            Op::Fork | Op::Join => ev.other_thread(),
            Op::VolatileWrite | Op::Signal | Op::VolatileRead | Op::Wait => t,
            _ => return,
        };
        // Clocks for both ends (every thread up to the later one gets its clock).
        self.thread(ThreadId(t.0.max(u.0)));
        match ev.op {
            Op::Fork if u != t => {
                let (a, b) = two(&mut self.threads, t.index(), u.index());
                b.join(a);
                a.increment(t);
            }
            // A child without events still ends after its fork (fork → join edge).
            Op::Join if u != t => {
                let (a, b) = two(&mut self.threads, t.index(), u.index());
                a.join(b);
                b.increment(u);
            }
            // The latest vw(X) / sig(C) publishes the thread's clock; vr(X) / wait(C) joins it.
            Op::VolatileWrite | Op::Signal => {
                let table = if ev.op == Op::Signal {
                    &mut self.signal
                } else {
                    &mut self.volatile
                };
                let x = ev.target as usize;
                if x >= table.len() {
                    table.resize_with(x + 1, VectorClock::new);
                }
                table[x].copy_from(&self.threads[t.index()]);
                self.threads[t.index()].increment(t);
            }
            Op::VolatileRead | Op::Wait => {
                let table = if ev.op == Op::Wait {
                    &self.signal
                } else {
                    &self.volatile
                };
                if let Some(c) = table.get(ev.target as usize) {
                    self.threads[t.index()].join(c);
                }
            }
            _ => {}
        }
    }
}

/// True for an ill-formed self-fork or self-join, which the analysis ignores.
#[inline(always)]
fn ignored(ev: &Event) -> bool {
    matches!(ev.op, Op::Fork | Op::Join) && ev.other_thread() == ev.thread
}

/// TSan v1 hybrid.
pub struct TsanHybrid {
    hold: Holdings,
    clocks: SyncClocks,
    pairs: Pairs,
    /// The variables analysed (all but when run as a shard).
    shard: VarShard,
    /// A shard's events of the current block ([`VarShard::select`]).
    selected: Vec<u32>,
}

impl Default for TsanHybrid {
    fn default() -> Self {
        TsanHybrid::new()
    }
}

impl TsanHybrid {
    /// Pairs grouped by location pair (the default).
    pub fn new() -> TsanHybrid {
        TsanHybrid::with_mode(false)
    }

    /// Every pair (`--all-pairs`): time and memory grow with the pairs.
    pub fn all_pairs() -> TsanHybrid {
        TsanHybrid::with_mode(true)
    }

    /// `all`: every pair; otherwise grouped by location pair.
    pub fn with_mode(all: bool) -> TsanHybrid {
        TsanHybrid {
            hold: Holdings::new(),
            clocks: SyncClocks::default(),
            pairs: Pairs::new(all, None),
            shard: VarShard::WHOLE,
            selected: Vec::new(),
        }
    }
}

sharded_lockset_analysis!(TsanHybrid, AnalysisKind::TsanHybrid);

impl ShardedLockset for TsanHybrid {
    /// Every event that is no access (time advances only at sync edges, see `SyncClocks`).
    #[inline(always)]
    fn shard_needs(op: Op) -> bool {
        !matches!(op, Op::Read | Op::Write)
    }

    #[inline(always)]
    fn access(&mut self, index: u64, ev: &Event) {
        let (t, w) = (ev.thread, ev.is_write());
        let (table, ls) = (&self.hold.table, self.hold.lockset(t));
        let clock = &*self.clocks.thread(t);
        self.pairs
            .check_push(table, ls, clock, clock.get(t), w, index, ev);
    }

    #[inline(always)]
    fn event<const WHOLE: bool>(&mut self, index: u64, ev: &Event) {
        if ignored(ev) {
            return;
        }
        self.clocks.apply_edges(ev);
        self.lock_or_access::<WHOLE>(index, ev);
    }
}

#[cold]
#[inline(never)]
fn build_report(a: &mut TsanHybrid) -> RaceReport {
    let mut r = a.pairs.report(AnalysisKind::TsanHybrid, &a.hold.table);
    r.notes.push(
        "pairs: conflicting accesses with disjoint locksets, unordered by program order, \
         fork/join, volatile and sig/wait (not by locks)"
            .into(),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::parse_events;
    use crate::trace::Trace;

    /// [`TsanHybrid::all_pairs`]'s report on the trace written `literal` ([`parse_events`]).
    fn run(literal: &str) -> RaceReport {
        let t = Trace::from_events(parse_events(literal));
        crate::analysis::run_one(&t, Box::new(TsanHybrid::all_pairs()))
    }

    #[test]
    fn fork_join_order_but_locks_do_not() {
        let r = run(
            "T0|w(V0) T0|fork(T1) T1|w(V0) T1|acq(L0) T1|rel(L0) T0|join(T1) T0|w(V0) \
             T0|fork(T2) T0|acq(L0) T0|rel(L0) T2|acq(L0) T2|rel(L0) T2|r(V0)",
        );
        // fork/join order 0<2<6<12; lock 8-9 → 10-11 is not an edge, but 6 → fork → 12.
        assert!(r.pairs.is_empty());
        let r = run("T0|acq(L0) T0|w(V0) T0|rel(L0) T1|acq(L0) T1|rel(L0) T1|r(V0)");
        assert_eq!(r.pair_set().into_iter().collect::<Vec<_>>(), vec![(1, 5)]);
    }

    #[test]
    fn volatile_and_signal_are_edges() {
        let r = run("T0|w(V0) T0|vw(V5) T1|vr(V5) T1|w(V0) T1|sig(C0) T2|wait(C0) T2|r(V0)");
        assert!(r.pairs.is_empty());
    }
}
