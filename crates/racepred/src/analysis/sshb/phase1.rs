//! Phase 1: the extended FastTrack pass (Alg. 1) and the WRD candidates (Def. 6).
//!
//! Streaming part (`on_event`): thread clocks, the cross-thread HB edges of the graph
//! (Def. 11; one edge per clock component a receive raises, which is Alg. 1's
//! `Rel(x) → i#Th(i)[i]` edge spelled out per thread), every HB race pair, per-variable
//! access lists and the lockset of every access (§6.3).
//!
//! Unlike the published Alg. 1, which keeps only the sets `cw`/`cr` of mutually concurrent
//! accesses and so misses pairs (a write concurrent with a read that an HB-later read has
//! evicted from `cr`), pairs are found exactly: each thread's accesses to a variable are
//! kept in time order, and the accesses of thread `j` concurrent with a new access are the
//! suffix with time `> Th(i)[j]` (binary search, then output-sensitive).
//!
//! Every event gets its own time (each thread's clock ticks at every event), so an event is
//! the epoch `i#t`. The clock of any past event is recovered from per-thread snapshots taken
//! at receives (the only events that raise other components), which makes `e ≤HB f` a
//! binary search instead of a vector clock per event.
//!
//! Offline part (`wrd`): for each read, W1 (HB-maximal unsynchronised writes) and W2
//! (HB-maximal writes HB-before it), with §6.1's pruning of W2 candidates HB-before a W1
//! candidate. Only W1 edges enter the graph: W2 edges are HB edges already.

use rustc_hash::FxHashMap;

use crate::clock::VectorClock;
use crate::trace::{Event, Op, ThreadId};

pub(crate) const NONE: u32 = u32::MAX;

/// One thread's accesses to one variable, in time order: `(time, event index)`.
#[derive(Clone, Debug, Default)]
pub(crate) struct ThreadAccesses {
    pub thread: u32,
    pub reads: Vec<(u32, u32)>,
    pub writes: Vec<(u32, u32)>,
}

/// A clock snapshot of one thread, valid from local time `time` until the next one.
#[derive(Clone, Copy, Debug)]
struct Snap {
    time: u32,
    off: u32,
    len: u32,
}

/// A cross-thread HB edge `(src thread, src time) → (dst thread, dst time)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SyncEdge {
    pub src: (u32, u32),
    pub dst: (u32, u32),
}

/// Candidate statistics (Table 2's #w(r)).
#[derive(Clone, Debug, Default)]
pub(crate) struct WrdStats {
    pub reads: u64,
    pub reads_with_candidates: u64,
    pub candidates: u64,
    pub max: u64,
    pub w1: u64,
    pub w2: u64,
    pub pruned_w2: u64,
}

#[derive(Default)]
pub(crate) struct Phase1 {
    pub events: Vec<Event>,
    /// Local time of each event (1-based within its thread).
    pub ltime: Vec<u32>,
    /// Per thread: event indices by local time − 1.
    pub thread_events: Vec<Vec<u32>>,
    clocks: Vec<VectorClock>,
    snaps: Vec<Vec<Snap>>,
    pool: Vec<u32>,
    tmp: VectorClock,
    rel: Vec<Option<VectorClock>>,
    vol: Vec<VectorClock>,
    sig: Vec<Option<VectorClock>>,
    pub vars: Vec<Vec<ThreadAccesses>>,
    pub sync_edges: Vec<SyncEdge>,
    /// HB race pairs `(earlier, later)`.
    pub pairs: Vec<(u32, u32)>,
    /// Per thread: held locks `(lock, depth)`, sorted by lock.
    held: Vec<Vec<(u32, u32)>>,
    cur_lockset: Vec<u32>,
    /// Lockset id of each event (its thread's locks when it ran).
    pub lockset_of: Vec<u32>,
    pub locksets: Vec<Box<[u32]>>,
    lockset_ids: FxHashMap<Box<[u32]>, u32>,
    scratch: Vec<u32>,
}

fn grow<T: Default>(v: &mut Vec<T>, i: usize) {
    if v.len() <= i {
        v.resize_with(i + 1, T::default);
    }
}

/// Keeps thread clock `c` as the clock of the last release (signal) of lock (condition) `x`
/// in `last`.
fn store(last: &mut Vec<Option<VectorClock>>, x: u32, c: &VectorClock) {
    let x = x as usize;
    grow(last, x);
    match &mut last[x] {
        Some(r) => r.copy_from(c),
        slot => *slot = Some(c.clone()),
    }
}

/// Copies into `tmp` the clock of the last release (signal) of lock (condition) `x` in
/// `last`; false if there was none.
fn load(tmp: &mut VectorClock, last: &mut Vec<Option<VectorClock>>, x: u32) -> bool {
    let x = x as usize;
    grow(last, x);
    match &last[x] {
        Some(r) => {
            tmp.copy_from(r);
            true
        }
        None => false,
    }
}

/// Joins `inc` into `clock` (thread `i`) and records an edge from each raised component's
/// event to `(i, dst_time)`. Returns true if anything was raised.
fn receive(
    clock: &mut VectorClock,
    inc: &[u32],
    i: usize,
    dst_time: u32,
    edges: &mut Vec<SyncEdge>,
) -> bool {
    let mut raised = false;
    for (j, &c) in inc.iter().enumerate() {
        if j != i && c > clock.get(ThreadId(j as u32)) {
            clock.set(ThreadId(j as u32), c);
            edges.push(SyncEdge {
                src: (j as u32, c),
                dst: (i as u32, dst_time),
            });
            raised = true;
        }
    }
    raised
}

impl Phase1 {
    pub fn new() -> Phase1 {
        let mut p = Phase1::default();
        p.locksets.push(Box::new([]));
        p.lockset_ids.insert(Box::new([]), 0);
        p
    }

    fn ensure_thread(&mut self, i: usize) {
        if self.clocks.len() <= i {
            self.clocks.resize_with(i + 1, VectorClock::new);
            self.snaps.resize_with(i + 1, Vec::new);
            self.thread_events.resize_with(i + 1, Vec::new);
            self.held.resize_with(i + 1, Vec::new);
            self.cur_lockset.resize(i + 1, 0);
        }
    }

    pub fn num_threads(&self) -> usize {
        self.clocks.len()
    }

    fn snapshot(&mut self, i: usize, time: u32) {
        let c = self.clocks[i].as_slice();
        let off = self.pool.len() as u32;
        self.pool.extend_from_slice(c);
        let s = Snap {
            time,
            off,
            len: c.len() as u32,
        };
        // Two receives for the same event (cannot happen today) keep the later clock.
        match self.snaps[i].last_mut() {
            Some(last) if last.time == time => *last = s,
            _ => self.snaps[i].push(s),
        }
    }

    /// Joins `self.tmp` into thread `i`'s clock as a receive at local time `time`.
    fn receive_tmp(&mut self, i: usize, time: u32) {
        let Phase1 {
            clocks,
            tmp,
            sync_edges,
            ..
        } = self;
        if receive(&mut clocks[i], tmp.as_slice(), i, time, sync_edges) {
            self.snapshot(i, time);
        }
    }

    fn set_lockset(&mut self, i: usize) {
        self.scratch.clear();
        self.scratch.extend(self.held[i].iter().map(|&(l, _)| l));
        let id = match self.lockset_ids.get(&self.scratch[..]) {
            Some(&id) => id,
            None => {
                let id = self.locksets.len() as u32;
                let b: Box<[u32]> = self.scratch.clone().into_boxed_slice();
                self.locksets.push(b.clone());
                self.lockset_ids.insert(b, id);
                id
            }
        };
        self.cur_lockset[i] = id;
    }

    pub fn on_event(&mut self, ev: &Event) {
        let i = ev.thread.index();
        self.ensure_thread(i);
        self.clocks[i].increment(ev.thread);
        let t = self.clocks[i].get(ev.thread);
        let idx = self.events.len() as u32;
        self.events.push(*ev);
        self.ltime.push(t);
        self.thread_events[i].push(idx);
        self.lockset_of.push(self.cur_lockset[i]);
        match ev.op {
            Op::Read | Op::Write => self.access(i, t, idx, ev),
            Op::Acquire => {
                if load(&mut self.tmp, &mut self.rel, ev.target) {
                    self.receive_tmp(i, t);
                }
                let held = &mut self.held[i];
                match held.binary_search_by_key(&ev.target, |&(l, _)| l) {
                    Ok(k) => held[k].1 += 1,
                    Err(k) => {
                        held.insert(k, (ev.target, 1));
                        self.set_lockset(i);
                    }
                }
            }
            Op::Release => {
                store(&mut self.rel, ev.target, &self.clocks[i]);
                let held = &mut self.held[i];
                if let Ok(k) = held.binary_search_by_key(&ev.target, |&(l, _)| l) {
                    held[k].1 -= 1;
                    if held[k].1 == 0 {
                        held.remove(k);
                        self.set_lockset(i);
                    }
                }
            }
            Op::Fork => {
                let u = ev.target as usize;
                if u != i {
                    self.ensure_thread(u);
                    self.tmp.copy_from(&self.clocks[i]);
                    let next = self.clocks[u].get(ThreadId(u as u32)) + 1;
                    self.receive_tmp(u, next);
                }
            }
            Op::Join => {
                let u = ev.target as usize;
                if u != i {
                    self.ensure_thread(u);
                    self.tmp.copy_from(&self.clocks[u]);
                    self.receive_tmp(i, t);
                }
            }
            Op::VolatileWrite => {
                let x = ev.target as usize;
                grow(&mut self.vol, x);
                self.vol[x].join(&self.clocks[i]);
            }
            Op::VolatileRead => {
                let x = ev.target as usize;
                grow(&mut self.vol, x);
                self.tmp.copy_from(&self.vol[x]);
                self.receive_tmp(i, t);
            }
            Op::Signal => store(&mut self.sig, ev.target, &self.clocks[i]),
            Op::Wait => {
                if load(&mut self.tmp, &mut self.sig, ev.target) {
                    self.receive_tmp(i, t);
                }
            }
            Op::MethodBegin | Op::MethodEnd | Op::Begin | Op::End | Op::Local | Op::Branch => {}
        }
    }

    /// Alg. 1's READ / WRITE: every earlier access of another thread not HB-before this one
    /// is a race pair (the suffix of that thread's list past `Th(i)[j]`).
    #[inline]
    fn access(&mut self, i: usize, t: u32, idx: u32, ev: &Event) {
        let x = ev.target as usize;
        grow(&mut self.vars, x);
        let clock = &self.clocks[i];
        let write = ev.op == Op::Write;
        let mut own = None;
        for (k, acc) in self.vars[x].iter().enumerate() {
            if acc.thread as usize == i {
                own = Some(k);
                continue;
            }
            let c = clock.get(ThreadId(acc.thread));
            let from = acc.writes.partition_point(|&(tm, _)| tm <= c);
            for &(_, e) in &acc.writes[from..] {
                self.pairs.push((e, idx));
            }
            if write {
                let from = acc.reads.partition_point(|&(tm, _)| tm <= c);
                for &(_, e) in &acc.reads[from..] {
                    self.pairs.push((e, idx));
                }
            }
        }
        let list = &mut self.vars[x];
        let k = own.unwrap_or_else(|| {
            list.push(ThreadAccesses {
                thread: i as u32,
                ..Default::default()
            });
            list.len() - 1
        });
        if write {
            list[k].writes.push((t, idx));
        } else {
            list[k].reads.push((t, idx));
        }
    }

    /// Component `j` of the clock of thread `i`'s event at local time `time`.
    #[inline]
    pub fn comp(&self, i: usize, time: u32, j: usize) -> u32 {
        if i == j {
            return time;
        }
        let s = &self.snaps[i];
        let k = s.partition_point(|sn| sn.time <= time);
        if k == 0 {
            return 0;
        }
        let sn = s[k - 1];
        if (j as u32) < sn.len {
            self.pool[(sn.off as usize) + j]
        } else {
            0
        }
    }

    /// `a ≤HB b` (reflexive) for event indices.
    #[inline]
    pub fn hb_le(&self, a: u32, b: u32) -> bool {
        let ta = self.events[a as usize].thread.index();
        let tb = self.events[b as usize].thread.index();
        let (la, lb) = (self.ltime[a as usize], self.ltime[b as usize]);
        if ta == tb {
            la <= lb
        } else {
            la <= self.comp(tb, lb, ta)
        }
    }

    /// The event of thread `i` at local time `t`, if it exists.
    pub fn event_at(&self, i: u32, t: u32) -> Option<u32> {
        if t == 0 {
            return None;
        }
        self.thread_events
            .get(i as usize)?
            .get(t as usize - 1)
            .copied()
    }

    /// WRD candidates (Def. 6) of every read: calls `each(read, w1, w2_kept)` with §6.1's
    /// pruning applied to W2, and returns the statistics.
    pub fn wrd(&self, mut each: impl FnMut(u32, &[u32], &[u32])) -> WrdStats {
        let mut st = WrdStats::default();
        let mut w1: Vec<u32> = Vec::new();
        let mut w2: Vec<u32> = Vec::new();
        let mut keep: Vec<u32> = Vec::new();
        for list in &self.vars {
            for a in list {
                let i = a.thread as usize;
                for &(tr, r) in &a.reads {
                    w1.clear();
                    w2.clear();
                    for b in list {
                        let j = b.thread as usize;
                        if j == i {
                            let p = b.writes.partition_point(|&(tw, _)| tw < tr);
                            if p > 0 {
                                w2.push(b.writes[p - 1].1);
                            }
                            continue;
                        }
                        let c = self.comp(i, tr, j);
                        let p = b.writes.partition_point(|&(tw, _)| tw <= c);
                        if p > 0 {
                            w2.push(b.writes[p - 1].1);
                        }
                        // First write of j that r happens before (the HB-after suffix).
                        // Writes before `p` are HB-before r, so q ≥ p; gallop from p (the
                        // concurrent window is short, the suffix long).
                        let not_after = |k: usize| self.comp(j, b.writes[k].0, i) < tr;
                        let mut lo = p;
                        let mut step = 1;
                        let mut hi = b.writes.len();
                        while lo < hi {
                            let probe = (lo + step - 1).min(hi - 1);
                            if not_after(probe) {
                                lo = probe + 1;
                                step *= 2;
                            } else {
                                hi = probe;
                                break;
                            }
                        }
                        let q =
                            lo + b.writes[lo..hi].partition_point(|w| self.comp(j, w.0, i) < tr);
                        if q > p {
                            w1.push(b.writes[q - 1].1);
                        }
                    }
                    maximal(self, &mut w1, &mut keep);
                    maximal(self, &mut w2, &mut keep);
                    let before = w2.len();
                    w2.retain(|&g| !w1.iter().any(|&f| self.hb_le(g, f)));
                    st.pruned_w2 += (before - w2.len()) as u64;
                    let n = (w1.len() + w2.len()) as u64;
                    st.reads += 1;
                    st.reads_with_candidates += (n > 0) as u64;
                    st.candidates += n;
                    st.max = st.max.max(n);
                    st.w1 += w1.len() as u64;
                    st.w2 += w2.len() as u64;
                    each(r, &w1, &w2);
                }
            }
        }
        st
    }
}

/// Keeps the HB-maximal elements of `set` (distinct events, at most one per thread).
fn maximal(p: &Phase1, set: &mut Vec<u32>, keep: &mut Vec<u32>) {
    if set.len() < 2 {
        return;
    }
    keep.clear();
    for (k, &a) in set.iter().enumerate() {
        if !set
            .iter()
            .enumerate()
            .any(|(m, &b)| m != k && p.hb_le(a, b))
        {
            keep.push(a);
        }
    }
    std::mem::swap(set, keep);
}
