//! Slices: the events one candidate pair needs, so that the SMT predictor can ask about a
//! pair wherever it lies in the trace (a window only holds the pairs inside it).
//!
//! **The slice of a pair** `(e, f)` (two conflicting accesses of different threads, `e`
//! first in the trace) is built in two steps.
//!
//! 1. `N` is the smallest set that holds the thread predecessors of `e` and `f` and the forks
//!    of their threads, and is closed under program order (a thread's events form a prefix),
//!    fork (a thread's first event needs its fork), join (a join needs every event of the
//!    joined thread) and reads-from (a read, `vr` or `wait` needs the write, `vw` or `sig` it
//!    saw). Every correct reordering in which both events are enabled contains `N` (SPEC §2).
//!    So if `N` holds `e` or `f`, the pair is **ordered** and is no race.
//! 2. The slice `S` then adds, for each outermost acquire in it, its release together with
//!    the release's own closure. It skips a release whose closure would hold `e` or `f`:
//!    no witness can run that release, so the section stays open.
//!
//! **Completeness.** Let `ρ` be any witness of the pair: a correct reordering that keeps
//! every read's write and leaves both events enabled. Then `ρ ∩ S` (in `ρ`'s order) is a
//! witness too:
//! - it is a prefix of every thread;
//! - it is closed under reads-from, fork and join;
//! - every critical section that ends in `ρ` also ends in `ρ ∩ S`: the section's release is
//!   in `S`, unless that release's past holds `e` or `f`, and then `ρ` cannot hold it either.
//!
//! So the maximal causal model of `S` alone, started from the initial state, is
//! satisfiable exactly when the pair is a predictable race of the whole trace. An
//! unsatisfiable slice therefore proves the pair is no race.
//!
//! **Soundness** does not rest on this argument. Every model's schedule is replayed on the
//! whole trace before it is reported.
//!
//! **The candidate pairs** come from [`trf_pairs`]: every conflicting pair whose first
//! event is not ordered before the second's predecessor by program order, fork, join and
//! reads-from (the pairs `trf` counts), and whose events hold no lock in common. Pairs it
//! leaves out are ordered, as in step 1, or never enabled together.

use std::time::Instant;

use racepred::report::{place, GroupKey, PairKind};
use racepred::trace::values::ValueTrace;
use racepred::trace::Op;
use racepred::witness::ReplayIndex;
use rustc_hash::{FxHashMap, FxHashSet};

const NONE: u32 = u32::MAX;

/// What the slice of a pair is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slice {
    /// The slice's events with the pair's two, in trace order.
    Events(Vec<usize>),
    /// One event of the pair lies in the other's necessary past: no race.
    Ordered,
    /// The slice, or the work of finding it, exceeds the limit.
    TooLarge,
}

/// Computes slices ([`Slice`]) of one trace; built once, shared by every pair.
pub struct Slicer<'a> {
    vt: &'a ValueTrace,
    ix: &'a ReplayIndex,
    /// For each outermost acquire: its matching release (`NONE` for other events and for a
    /// section the trace leaves open).
    release: Vec<u32>,
}

enum Stop {
    Ordered,
    TooLarge,
}

impl<'a> Slicer<'a> {
    pub fn new(vt: &'a ValueTrace, ix: &'a ReplayIndex) -> Slicer<'a> {
        let mut release = vec![NONE; vt.trace.len()];
        // (thread, lock) → (re-entrant depth, outermost acquire).
        let mut open: FxHashMap<(u32, u32), (u32, u32)> = Default::default();
        for (i, ev) in vt.trace.events.iter().enumerate() {
            let key = (ev.thread.0, ev.target);
            match ev.op {
                Op::Acquire => {
                    let s = open.entry(key).or_insert((0, i as u32));
                    if s.0 == 0 {
                        s.1 = i as u32;
                    }
                    s.0 += 1;
                }
                Op::Release => {
                    if let Some(s) = open.get_mut(&key) {
                        if s.0 > 0 {
                            s.0 -= 1;
                            if s.0 == 0 {
                                release[s.1 as usize] = i as u32;
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        Slicer { vt, ix, release }
    }

    /// The slice of the pair `(e, f)` (`e < f`), if it has at most `limit` events.
    pub fn slice(&self, e: usize, f: usize, limit: usize) -> Slice {
        let events = &self.vt.trace.events;
        let (te, tf) = (events[e].thread.index(), events[f].thread.index());
        if te == tf {
            return Slice::Ordered;
        }
        let nt = self.ix.threads();
        let mut c = Closure {
            s: self,
            cut: vec![0; nt],
            done: vec![0; nt],
            cap: vec![u32::MAX; nt],
            total: 0,
            work: 0,
            limit,
            queue: Vec::new(),
            pending: Vec::new(),
        };
        c.cap[te] = self.ix.position(e);
        c.cap[tf] = self.ix.position(f);
        let necessary = (|| {
            c.raise(te, self.ix.position(e))?;
            c.raise(tf, self.ix.position(f))?;
            for t in [te, tf] {
                if let Some(k) = self.ix.fork(t) {
                    c.include(k as usize)?;
                }
            }
            c.run()
        })();
        match necessary {
            Ok(()) => {}
            Err(Stop::Ordered) => return Slice::Ordered,
            Err(Stop::TooLarge) => return Slice::TooLarge,
        }
        // Releases of the sections in the slice, each with its closure, unless that closure
        // reaches the pair (then no witness runs the release).
        while let Some(a) = c.pending.pop() {
            let r = self.release[a as usize] as usize;
            let t = events[r].thread.index();
            let pos = self.ix.position(r);
            if pos < c.cut[t] || pos >= c.cap[t] {
                continue;
            }
            let saved = (c.cut.clone(), c.done.clone(), c.total, c.pending.len());
            match c.include(r).and_then(|()| c.run()) {
                Ok(()) => {}
                Err(Stop::Ordered) => {
                    (c.cut, c.done, c.total) = (saved.0, saved.1, saved.2);
                    c.pending.truncate(saved.3);
                    c.queue.clear();
                }
                Err(Stop::TooLarge) => return Slice::TooLarge,
            }
        }
        let mut out: Vec<usize> = Vec::with_capacity(c.total + 2);
        for (t, &k) in c.cut.iter().enumerate() {
            out.extend(
                self.ix.thread_events(t)[..k as usize]
                    .iter()
                    .map(|&i| i as usize),
            );
        }
        out.push(e);
        out.push(f);
        out.sort_unstable();
        Slice::Events(out)
    }
}

/// A closure under construction: per thread, how many of its events are in (`cut`), how
/// many of those have had their rules applied (`done`), and how many it may hold (`cap`:
/// the pair's threads stop before the pair).
struct Closure<'s, 'a> {
    s: &'s Slicer<'a>,
    cut: Vec<u32>,
    done: Vec<u32>,
    cap: Vec<u32>,
    total: usize,
    /// Events whose rules were applied, rolled-back attempts included.
    work: usize,
    limit: usize,
    queue: Vec<u32>,
    /// Outermost acquires in the closure with a release in the trace.
    pending: Vec<u32>,
}

impl Closure<'_, '_> {
    /// Thread `t`'s first `k` events are in.
    fn raise(&mut self, t: usize, k: u32) -> Result<(), Stop> {
        if k > self.cap[t] {
            return Err(Stop::Ordered);
        }
        if k > self.cut[t] {
            self.total += (k - self.cut[t]) as usize;
            self.cut[t] = k;
            if self.total > self.limit {
                return Err(Stop::TooLarge);
            }
            self.queue.push(t as u32);
        }
        Ok(())
    }

    /// Event `i` (and its thread's events before it) are in.
    fn include(&mut self, i: usize) -> Result<(), Stop> {
        let t = self.s.vt.trace.events[i].thread.index();
        self.raise(t, self.s.ix.position(i) + 1)
    }

    /// Applies the rules of step 1 to every event not yet looked at.
    fn run(&mut self) -> Result<(), Stop> {
        let ix = self.s.ix;
        let events = &self.s.vt.trace.events;
        while let Some(t) = self.queue.pop() {
            let t = t as usize;
            while self.done[t] < self.cut[t] {
                let j = self.done[t];
                self.done[t] += 1;
                self.work += 1;
                if self.work > self.limit.saturating_mul(4) {
                    return Err(Stop::TooLarge);
                }
                let x = ix.thread_events(t)[j as usize] as usize;
                if j == 0 {
                    if let Some(k) = ix.fork(t) {
                        self.include(k as usize)?;
                    }
                }
                let ev = events[x];
                match ev.op {
                    Op::Read | Op::VolatileRead | Op::Wait => {
                        if let Some(w) = ix.source(x) {
                            self.include(w as usize)?;
                        }
                    }
                    Op::Join => {
                        let u = ev.target as usize;
                        if u < ix.threads() {
                            self.raise(u, ix.thread_events(u).len() as u32)?;
                            // A joined thread without events still ends after its fork.
                            if let Some(k) = ix.fork(u) {
                                self.include(k as usize)?;
                            }
                        }
                    }
                    Op::Acquire if self.s.release[x] != NONE => self.pending.push(x as u32),
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// The candidate pairs of a trace, by location group.
#[derive(Clone, Debug, Default)]
pub struct Candidates {
    /// Groups in the order of their first pair, each with its first pairs (at most the
    /// limit), in trace order of the second event.
    pub groups: Vec<(GroupKey, Vec<(u64, u64)>)>,
    /// Per group: pairs found beyond the limit.
    pub overflow: Vec<u64>,
}

/// The pairs `(e, f)` of conflicting accesses of different threads, `e` first, whose `e` is
/// not ordered before `f`'s thread predecessor by program order, fork, join and reads-from
/// (TRF), and that hold no lock in common (two events holding one lock are never enabled
/// together); only groups in `only`, if given; at most `max_pairs` per group (the rest
/// counted). `None` if `deadline` passes first.
pub fn trf_pairs(
    vt: &ValueTrace,
    ix: &ReplayIndex,
    only: Option<&FxHashSet<GroupKey>>,
    max_pairs: usize,
    deadline: Option<Instant>,
) -> Option<Candidates> {
    let firsts: Option<FxHashSet<u64>> = only.map(|g| g.iter().map(|k| k.0).collect());
    let seconds: Option<FxHashSet<u64>> = only.map(|g| g.iter().map(|k| k.1).collect());
    let nt = ix.threads();
    // TRF clocks: per thread, how many events of each thread precede its current point.
    let mut clock: Vec<Vec<u32>> = vec![Vec::new(); nt];
    let mut fork_clock: Vec<Option<Vec<u32>>> = vec![None; nt];
    let mut last_write: FxHashMap<(u8, u32), Vec<u32>> = Default::default();
    // Accesses kept as possible first events: per (variable, thread, write?), in program
    // order (reads apart, so that a read never walks the reads of shared read-only data).
    let mut kept: FxHashMap<(u32, u32, bool), Vec<Kept>> = Default::default();
    let mut threads_of: FxHashMap<u32, Vec<u32>> = Default::default();
    let mut out = Candidates::default();
    let mut index: FxHashMap<GroupKey, usize> = Default::default();
    let mut work = 0u64;
    // Locks held: per thread (lock, depth); the distinct locksets, interned.
    let mut held: Vec<Vec<(u32, u32)>> = vec![Vec::new(); nt];
    let mut lockset: Vec<u32> = vec![0; nt];
    let mut locksets: Vec<Vec<u32>> = vec![Vec::new()];
    let mut lockset_ids: FxHashMap<Vec<u32>, u32> = Default::default();
    lockset_ids.insert(Vec::new(), 0);
    let join = |c: &mut Vec<u32>, o: &[u32]| {
        if c.len() < o.len() {
            c.resize(o.len(), 0);
        }
        for (a, &b) in c.iter_mut().zip(o) {
            *a = (*a).max(b);
        }
    };
    for (i, ev) in vt.trace.events.iter().enumerate() {
        let t = ev.thread.index();
        let local = ix.position(i) + 1;
        if local == 1 {
            if let Some(fc) = fork_clock[t].take() {
                join(&mut clock[t], &fc);
            }
        }
        if ev.is_access() {
            let x = ev.target;
            let pf = place(ev);
            if seconds.as_ref().is_none_or(|s| s.contains(&pf)) {
                for &u in threads_of.get(&x).map_or(&[][..], |v| v.as_slice()) {
                    if u as usize == t {
                        continue;
                    }
                    let before = clock[t].get(u as usize).copied().unwrap_or(0);
                    let kinds: &[bool] = if ev.is_write() {
                        &[true, false]
                    } else {
                        &[true]
                    };
                    for k in kinds
                        .iter()
                        .filter_map(|&w| kept.get(&(x, u, w)))
                        .flat_map(|list| {
                            let from = list.partition_point(|k| k.local <= before);
                            &list[from..]
                        })
                    {
                        work += 1;
                        if work & 0xffff == 0 && deadline.is_some_and(|d| Instant::now() >= d) {
                            return None;
                        }
                        let (mine, theirs) = (
                            &locksets[lockset[t] as usize],
                            &locksets[k.lockset as usize],
                        );
                        if mine.iter().any(|l| theirs.contains(l)) {
                            continue;
                        }
                        let kind = if k.write {
                            if ev.is_write() {
                                PairKind::WriteWrite
                            } else {
                                PairKind::WriteRead
                            }
                        } else {
                            PairKind::ReadWrite
                        };
                        let key = (k.place, pf, kind);
                        if only.is_some_and(|g| !g.contains(&key)) {
                            continue;
                        }
                        let g = *index.entry(key).or_insert_with(|| {
                            out.groups.push((key, Vec::new()));
                            out.overflow.push(0);
                            out.groups.len() - 1
                        });
                        if out.groups[g].1.len() < max_pairs {
                            out.groups[g].1.push((k.index, i as u64));
                        } else {
                            out.overflow[g] += 1;
                        }
                    }
                }
            }
            if firsts.as_ref().is_none_or(|s| s.contains(&pf)) {
                let other_kind = kept.contains_key(&(x, t as u32, !ev.is_write()));
                let list = kept.entry((x, t as u32, ev.is_write())).or_default();
                if list.is_empty() && !other_kind {
                    threads_of.entry(x).or_default().push(t as u32);
                }
                list.push(Kept {
                    local,
                    index: i as u64,
                    place: pf,
                    write: ev.is_write(),
                    lockset: lockset[t],
                });
            }
        }
        let c = &mut clock[t];
        if c.len() <= t {
            c.resize(t + 1, 0);
        }
        c[t] = local;
        let space = match ev.op {
            Op::Read | Op::Write => 0u8,
            Op::VolatileRead | Op::VolatileWrite => 1,
            _ => 2,
        };
        match ev.op {
            Op::Read | Op::VolatileRead | Op::Wait if ix.source(i).is_some() => {
                if let Some(w) = last_write.get(&(space, ev.target)) {
                    join(&mut clock[t], w);
                }
            }
            Op::Write | Op::VolatileWrite | Op::Signal => {
                last_write
                    .entry((space, ev.target))
                    .or_default()
                    .clone_from(&clock[t]);
            }
            Op::Acquire | Op::Release => {
                let h = &mut held[t];
                let at = h.iter().position(|&(l, _)| l == ev.target);
                let changed = match (ev.op, at) {
                    (Op::Acquire, Some(j)) => {
                        h[j].1 += 1;
                        false
                    }
                    (Op::Acquire, None) => {
                        h.push((ev.target, 1));
                        true
                    }
                    (_, Some(j)) if h[j].1 > 1 => {
                        h[j].1 -= 1;
                        false
                    }
                    (_, Some(j)) => {
                        h.swap_remove(j);
                        true
                    }
                    (_, None) => false,
                };
                if changed {
                    let mut set: Vec<u32> = h.iter().map(|&(l, _)| l).collect();
                    set.sort_unstable();
                    lockset[t] = *lockset_ids.entry(set.clone()).or_insert_with(|| {
                        locksets.push(set);
                        (locksets.len() - 1) as u32
                    });
                }
            }
            Op::Fork => {
                if let Some(fc) = fork_clock.get_mut(ev.target as usize) {
                    *fc = Some(clock[t].clone());
                }
            }
            Op::Join => {
                let u = ev.target as usize;
                if u < nt && u != t {
                    let cu = std::mem::take(&mut clock[u]);
                    join(&mut clock[t], &cu);
                    clock[u] = cu;
                    // A joined thread without events (its fork clock never taken) still
                    // ends after its fork.
                    if let Some(fc) = &fork_clock[u] {
                        join(&mut clock[t], fc);
                    }
                }
            }
            _ => {}
        }
    }
    Some(out)
}

/// An access kept as a possible first event.
#[derive(Clone, Copy, Debug)]
struct Kept {
    /// Its position in its thread, from 1.
    local: u32,
    index: u64,
    place: u64,
    write: bool,
    /// The locks it held (an interned lockset).
    lockset: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vt(text: &str) -> ValueTrace {
        ValueTrace::read(text.as_bytes()).unwrap()
    }

    /// Far apart events: the slice holds only what the pair needs.
    #[test]
    fn the_slice_skips_what_the_pair_does_not_need() {
        let mut text = String::from("T0|fork(T1)|0\nT0|w(x)|1\n");
        for _ in 0..1000 {
            text.push_str("T0|w(y)|2\n");
        }
        text.push_str("T1|w(x)|3\n");
        let v = vt(&text);
        let ix = ReplayIndex::new(&v);
        let s = Slicer::new(&v, &ix);
        let n = v.trace.len();
        // Pair: T0's w(x) (event 1) and T1's w(x) (the last): needs only the fork.
        assert_eq!(s.slice(1, n - 1, 10_000), Slice::Events(vec![0, 1, n - 1]));
        assert_eq!(s.slice(1, n - 1, 0), Slice::TooLarge);
    }

    /// A read of what the first event wrote, before the second: ordered.
    #[test]
    fn reads_from_orders_a_pair() {
        let v = vt("T0|fork(T1)|0\nT0|w(x)|1\nT0|w(y)|2\nT1|r(y)|3\nT1|w(x)|4\n");
        let ix = ReplayIndex::new(&v);
        let s = Slicer::new(&v, &ix);
        assert_eq!(s.slice(1, 4, 100), Slice::Ordered);
        let c = trf_pairs(&v, &ix, None, 10, None).unwrap();
        assert!(c.groups.iter().all(|(_, ps)| !ps.contains(&(1, 4))));
    }

    /// A section in the slice gets its release, unless the release's past holds the pair.
    #[test]
    fn sections_end_unless_the_release_needs_the_pair() {
        // T1 acquires l, reads y; the release comes after T1's w(x) (the pair's f): open.
        let v = vt("T0|fork(T1)|0\n\
             T0|acq(l)|1\nT0|w(y)|2\nT0|rel(l)|3\nT0|w(x)|4\n\
             T1|acq(l)|5\nT1|r(y)|6\nT1|w(x)|7\nT1|rel(l)|8\n");
        let ix = ReplayIndex::new(&v);
        let s = Slicer::new(&v, &ix);
        // (4, 7): T1's predecessors read y from T0's section, whose release comes in.
        assert_eq!(
            s.slice(4, 7, 100),
            Slice::Events(vec![0, 1, 2, 3, 4, 5, 6, 7])
        );
    }
}
