//! Happens-before with vector clocks: the shared engine and Djit+ (`hb`).
//!
//! Papers: Bond, Coons, McKinley, "PACER: Proportional Detection of Data Races", PLDI 2010
//! (`shared/papers/pacer-sampling.txt`, §2.1: the GENERIC vector-clock algorithm, Alg. 1–6;
//! volatiles, App. C, Alg. 14–15); Sulzmann, Stadtmüller et al. on inaccurate traces
//! (`shared/papers/sshb-inaccurate-traces.txt`, Def. 3 happens-before, Def. 4 SHB);
//! Genç et al. (W3PO) (`shared/papers/w3po-hybrid-lockset.txt`, §3.1); Pozniansky and
//! Schuster, Djit+ (PPoPP 2003). Mathur, Kini, Viswanathan, "What happens-after the first
//! race?", OOPSLA 2018, for SHB.
//!
//! [`HbEngine`] is the one happens-before engine of the crate. It owns the synchronisation
//! clocks and is parameterised by
//! - the clock kind `C` of thread, lock, condition and last-write clocks ([`VectorClock`]
//!   or [`TreeClock`](crate::clock::TreeClock)),
//! - whether write-read dependencies are edges (`wrd`: SHB, Def. 4 — at a read the thread
//!   clock joins the clock of the variable's last write; every write publishes its clock),
//! - the access policy `A` ([`Accesses`]): Djit+ racy events (this module), FastTrack
//!   epochs ([`super::fasttrack`]) or race pairs ([`super::hbp`]).
//!
//! Synchronisation (GENERIC Alg. 1–4, 14–15): `acq` joins the lock's clock, `rel` copies
//! the thread clock into the lock's and increments; `fork` joins the parent into the child
//! and increments the parent; `join` joins the child into the parent and increments the
//! child; `vw` joins the thread into the volatile's vector clock and increments, `vr` joins
//! it back (every earlier `vw` of the variable happens before a later `vr`); `sig` copies
//! the thread clock into the condition's (the latest `sig` wins) and increments, `wait`
//! joins it. `begin`/`end` are ignored; `mbegin`/`mend` go to the access policy's
//! [`Accesses::method`] hook, a no-op except for RDIT's barrier pairs ([`super::rdit`]). Each event of thread `t` has the
//! epoch `C_t(t)@t`; `e ≤ f` iff `e`'s time is at most `f`'s thread clock at `e`'s thread.
//!
//! Djit+ (`hb`), GENERIC Alg. 5–6: one vector of last-read and one of last-write times per
//! variable; an access is *racy* when some earlier conflicting access is not HB-ordered
//! before it (the FastTrack convention), which is exactly the set of second events of the
//! HB-unordered conflicting pairs (checked by `tests/hb_props.rs` against per-event vector
//! clocks). Memory: O(threads × variables). Every racy event is found; only the first is
//! guaranteed predictable (Mathur et al. 2018). They are kept in a [`RacyLog`]: every one
//! (the default), or, with [`HbEngine::racy_by_location`] (the CLI's default), the first of
//! each (location, operation) with a count, so that memory stays O(locations) too.

use super::slices::two;
use crate::analysis::AnalysisKind;
use crate::clock::{Clock, ClockTable, VectorClock};
use crate::report::{RaceReport, RacyLog, ReportKind};
use crate::trace::{AddrId, Event, Names, Op, ThreadId};

use super::{Analysis, Side};

/// What an access policy does at plain reads and writes. `c` is the accessing thread's
/// clock; for SHB, `read` sees it before the join of the last write and `read_after_wrd`
/// after.
pub trait Accesses<C: Clock>: Send {
    fn read(&mut self, index: u64, ev: &Event, c: &C);
    fn read_after_wrd(&mut self, _index: u64, _ev: &Event, _c: &C) {}
    fn write(&mut self, index: u64, ev: &Event, c: &C);
    /// Extra synchronisation at an `mbegin` / `mend` (RDIT barrier pairs,
    /// [`super::rdit::Barriers`]): `c` is the thread's clock, to join into and publish
    /// from (publish, then increment — the clock discipline of [`crate::clock`]). The
    /// default does nothing, so HB engines without the hook ignore the events at no cost.
    #[inline(always)]
    fn method(&mut self, _index: u64, _ev: &Event, _addresses: &[AddrId], _c: &mut C) {}
    /// Keep racy events grouped by location ([`RacyLog`]) instead of every one; policies
    /// that report pairs ignore it.
    fn group_racy(&mut self) {}
    /// Fills in the findings.
    fn finish(&mut self, report: &mut RaceReport);
    fn report_kind(&self) -> ReportKind;
    /// True when the policy has state to drop that every thread's clock has passed
    /// ([`Accesses::collect`]); checked after each access.
    #[inline(always)]
    fn collect_due(&self) -> bool {
        false
    }
    /// Drops what every live thread's clock has passed: `threads` are the clocks and
    /// `status` each thread's [`FORKED`] / [`JOINED`] bits.
    fn collect(&mut self, _threads: &[C], _status: &[u8]) {}
}

/// [`HbEngine`] thread status: the thread was forked.
pub const FORKED: u8 = 1;
/// [`HbEngine`] thread status: the thread was joined (it acts no more).
pub const JOINED: u8 = 2;

/// The happens-before engine; see the module documentation.
pub struct HbEngine<C: Clock, A> {
    name: &'static str,
    wrd: bool,
    threads: Vec<C>,
    locks: Vec<C>,
    conds: Vec<C>,
    volatiles: Vec<VectorClock>,
    last_write: Vec<C>,
    /// Notes for the report (what ran).
    notes: Vec<String>,
    /// Events seen (the last index + 1).
    events: u64,
    /// Per thread: [`FORKED`], [`JOINED`] (for [`Accesses::collect`]).
    status: Vec<u8>,
    pub(crate) acc: A,
}

/// A release or signal `ev`: the clock of `ev`'s object in `objects` becomes the thread's
/// clock `c`, which then ticks.
#[inline(always)]
fn publish<C: Clock>(c: &mut C, objects: &mut Vec<C>, ev: &Event) {
    slot(objects, ev.target as usize).copy_from(c);
    c.increment(ev.thread);
}

/// An acquire or wait `ev`: the thread's clock `c` joins the clock of `ev`'s object in
/// `objects` (none yet: nothing to join).
#[inline(always)]
fn receive<C: Clock>(c: &mut C, objects: &[C], ev: &Event) {
    if let Some(o) = objects.get(ev.target as usize) {
        c.join(o);
    }
}

#[inline]
fn slot<T: Default>(v: &mut Vec<T>, i: usize) -> &mut T {
    if i >= v.len() {
        grow(v, i);
    }
    &mut v[i]
}

#[cold]
#[inline(never)]
fn grow<T: Default>(v: &mut Vec<T>, i: usize) {
    v.resize_with(i + 1, T::default);
}

impl<C: Clock, A: Accesses<C>> HbEngine<C, A> {
    pub fn new(name: &'static str, wrd: bool, acc: A) -> Self {
        HbEngine {
            name,
            wrd,
            threads: Vec::new(),
            locks: Vec::new(),
            conds: Vec::new(),
            volatiles: Vec::new(),
            last_write: Vec::new(),
            notes: Vec::new(),
            events: 0,
            status: Vec::new(),
            acc,
        }
    }

    /// Adds a note to the report.
    pub fn note(mut self, s: impl Into<String>) -> Self {
        self.notes.push(s.into());
        self
    }

    /// Racy events grouped by location: the first of each (location, operation) with a
    /// count, in memory bounded by the locations ([`RacyLog`]; the CLI's default).
    pub fn racy_by_location(mut self) -> Self {
        self.acc.group_racy();
        self
    }

    #[inline]
    fn thread(&mut self, t: usize) {
        if t >= self.threads.len() {
            self.grow_threads(t);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow_threads(&mut self, t: usize) {
        let n = self.threads.len();
        self.threads
            .extend((n..=t).map(|i| C::for_thread(ThreadId(i as u32))));
    }

    /// The current clock of thread `t` (tests).
    pub fn thread_clock(&self, t: ThreadId) -> Option<&C> {
        self.threads.get(t.index())
    }

    /// A plain read (GENERIC Alg. 5; with `wrd`, SHB's join of the last write after it).
    #[inline(always)]
    fn read(&mut self, index: u64, ev: &Event) {
        let c = &mut self.threads[ev.thread.index()];
        self.acc.read(index, ev, c);
        if self.wrd {
            if let Some(lw) = self.last_write.get(ev.target as usize) {
                c.join(lw);
            }
            self.acc.read_after_wrd(index, ev, c);
        }
        if self.acc.collect_due() {
            self.acc.collect(&self.threads, &self.status);
        }
    }

    /// A plain write (GENERIC Alg. 6; with `wrd`, it publishes the thread's clock as the
    /// variable's last write).
    #[inline(always)]
    fn write(&mut self, index: u64, ev: &Event) {
        let c = &mut self.threads[ev.thread.index()];
        self.acc.write(index, ev, c);
        if self.wrd {
            slot(&mut self.last_write, ev.target as usize).copy_from(c);
            c.increment(ev.thread);
        }
        if self.acc.collect_due() {
            self.acc.collect(&self.threads, &self.status);
        }
    }
}

impl<C: Clock, A: Accesses<C>> Analysis for HbEngine<C, A> {
    fn name(&self) -> &'static str {
        self.name
    }

    #[inline]
    fn on_event(&mut self, index: u64, ev: &Event, side: Side<'_>) {
        self.events = index + 1;
        let t = ev.thread.index();
        self.thread(t);
        match ev.op {
            Op::Read => self.read(index, ev),
            Op::Write => self.write(index, ev),
            Op::Acquire => receive(&mut self.threads[t], &self.locks, ev),
            Op::Release => publish(&mut self.threads[t], &mut self.locks, ev),
            Op::Fork | Op::Join => {
                let u = ev.target as usize;
                if u == t || ev.target == u32::MAX {
                    return;
                }
                self.thread(u);
                *slot(&mut self.status, u) |= if ev.op == Op::Fork { FORKED } else { JOINED };
                let (ct, cu) = two(&mut self.threads, t, u);
                if ev.op == Op::Fork {
                    cu.join(ct);
                    ct.increment(ev.thread);
                } else {
                    ct.join(cu);
                    cu.increment(ThreadId(u as u32));
                }
            }
            Op::VolatileWrite => {
                let c = &mut self.threads[t];
                c.join_into_vector(slot(&mut self.volatiles, ev.target as usize));
                c.increment(ev.thread);
            }
            Op::VolatileRead => {
                if let Some(v) = self.volatiles.get(ev.target as usize) {
                    self.threads[t].join_vector(v);
                }
            }
            Op::Signal => publish(&mut self.threads[t], &mut self.conds, ev),
            Op::Wait => receive(&mut self.threads[t], &self.conds, ev),
            Op::MethodBegin | Op::MethodEnd => {
                self.acc
                    .method(index, ev, side.addresses, &mut self.threads[t]);
            }
            Op::Begin | Op::End | Op::Local | Op::Branch => {}
        }
    }

    /// Plain accesses of known threads (nearly every event) without the call and the jump
    /// table of [`Analysis::on_event`] (a quarter of `hb`'s time on the generated trace).
    #[inline]
    fn on_events(&mut self, first: u64, events: &[Event]) {
        for (i, ev) in events.iter().enumerate() {
            let index = first + i as u64;
            if ev.thread.index() < self.threads.len() {
                match ev.op {
                    Op::Read => {
                        self.events = index + 1;
                        self.read(index, ev);
                        continue;
                    }
                    Op::Write => {
                        self.events = index + 1;
                        self.write(index, ev);
                        continue;
                    }
                    _ => {}
                }
            }
            self.on_event(index, ev, Side::default());
        }
    }

    fn finish(&mut self, _names: &Names) -> RaceReport {
        let mut r = RaceReport::new(self.name, self.acc.report_kind());
        r.notes = self.notes.clone();
        r.events = self.events;
        self.acc.finish(&mut r);
        r.extra
            .insert("threads".into(), (self.threads.len() as u64).into());
        r.normalize();
        r
    }
}

/// Djit+ / GENERIC Alg. 5–6 racy-event detection (with `wrd`, the SHB algorithm of
/// Mathur et al. 2018, Alg. 1: reads check against the clock before the last-write join).
/// Each variable's write clock (0) and read clock (1) are one row of a [`ClockTable`]: an
/// access reads one block (one cache miss instead of two).
#[derive(Default)]
pub struct Djit {
    clocks: ClockTable<2>,
    racy: RacyLog,
}

impl<C: Clock> Accesses<C> for Djit {
    #[inline(always)]
    fn read(&mut self, index: u64, ev: &Event, c: &C) {
        let (x, t) = (ev.target as usize, ev.thread);
        if !self.clocks.covered_then_set(x, 0..1, c, 1, t, c.get(t)) {
            self.racy.push(index, ev);
        }
    }

    #[inline(always)]
    fn write(&mut self, index: u64, ev: &Event, c: &C) {
        let (x, t) = (ev.target as usize, ev.thread);
        if !self.clocks.covered_then_set(x, 0..2, c, 0, t, c.get(t)) {
            self.racy.push(index, ev);
        }
    }

    fn group_racy(&mut self) {
        self.racy = RacyLog::new(false);
    }

    fn finish(&mut self, report: &mut RaceReport) {
        self.racy.finish(report);
    }

    fn report_kind(&self) -> ReportKind {
        ReportKind::RacyEvents
    }
}

/// Djit+ happens-before race detection (`hb`).
pub type Hb<C> = HbEngine<C, Djit>;

/// Creates `hb` with clock kind `C`.
pub fn hb<C: Clock>() -> Hb<C> {
    HbEngine::new(AnalysisKind::Hb.name(), false, Djit::default()).note(
        "Djit+ (GENERIC vector clocks): racy events = accesses unordered by HB with an \
         earlier conflicting access; only the first is guaranteed predictable",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::run_trace;
    use crate::clock::TreeClock;
    use crate::gen::parse_events;
    use crate::trace::{CondId, LocId, Trace};

    pub(crate) fn racy_of(a: Box<dyn Analysis>, t: &Trace) -> Vec<u64> {
        let r = run_trace(t, &mut [a]).remove(0);
        r.racy_events.iter().map(|e| e.index).collect()
    }

    fn ev(t: u32, op: Op, target: u32) -> Event {
        Event::new(ThreadId(t), op, target, LocId(0))
    }

    #[test]
    fn lock_orders_and_unprotected_races() {
        // T0's w(V1) (7) races with T1's read, its r(V0) (8) with T1's write (T0 never
        // acquired after T1); the last read is ordered by the lock.
        let t = Trace::from_events(parse_events(
            "T0|acq(L0) T0|w(V0) T0|rel(L0) T1|acq(L0) T1|w(V0) T1|rel(L0) T1|r(V1) \
             T0|w(V1) T0|r(V0) T0|acq(L0) T0|r(V0)",
        ));
        assert_eq!(racy_of(Box::new(hb::<VectorClock>()), &t), vec![7, 8]);
        assert_eq!(racy_of(Box::new(hb::<TreeClock>()), &t), vec![7, 8]);
    }

    #[test]
    fn fork_join_volatile_and_condition_edges() {
        let t = Trace::from_events(vec![
            Event::write(0, 0),
            Event::fork(0, 1),
            Event::write(1, 0),             // after the fork: ordered
            ev(1, Op::VolatileWrite, 5),    // vw(V5)
            ev(0, Op::VolatileRead, 5),     // vr(V5): edge from the vw
            Event::write(0, 0),             // ordered after T1's write
            ev(0, Op::Signal, CondId(0).0), // sig(C0)
            ev(1, Op::Wait, 0),             // wait(C0)
            Event::read(1, 0),              // ordered after T0's write
            ev(1, Op::Begin, u32::MAX),     // ignored
            Event::write(1, 2),
            Event::join(0, 1),
            Event::read(0, 2), // after the join
            Event::write(0, 3),
            ev(0, Op::Signal, 1),
            Event::fork(0, 2),
            ev(2, Op::Wait, 1),
            Event::read(2, 3), // sig/wait edge, but also the fork: ordered
        ]);
        assert!(racy_of(Box::new(hb::<VectorClock>()), &t).is_empty());
        assert!(racy_of(Box::new(hb::<TreeClock>()), &t).is_empty());
        // Without the vr, the second write of T0 races.
        let mut evs = t.events.clone();
        evs[4] = ev(0, Op::VolatileRead, 6);
        let t2 = Trace::from_events(evs);
        assert_eq!(racy_of(Box::new(hb::<VectorClock>()), &t2), vec![5]);
    }

    #[test]
    fn wait_sees_only_the_latest_signal() {
        // T1 signals, T2 signals, T0 waits: only T2's signal is before the wait.
        let t = Trace::from_events(vec![
            Event::write(1, 0),
            ev(1, Op::Signal, 0),
            Event::write(2, 1),
            ev(2, Op::Signal, 0),
            ev(0, Op::Wait, 0),
            Event::read(0, 0),
            Event::read(0, 1),
        ]);
        assert_eq!(racy_of(Box::new(hb::<VectorClock>()), &t), vec![5]);
        assert_eq!(racy_of(Box::new(hb::<TreeClock>()), &t), vec![5]);
    }
}
