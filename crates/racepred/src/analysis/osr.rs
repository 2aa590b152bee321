//! Optimistic sync-reversal races (`osr`): the [`super::syncp`] engine in OSR mode.
//!
//! Paper: Shi, Mathur, Pavlogiannis, "Optimistic Prediction of Synchronization-Reversal Data
//! Races", ICSE 2024 (arXiv 2401.05642), §4 (the OSR closure and the abstract acyclicity
//! check), §5 (the algorithm).
//!
//! **Definition.** Sync-preserving reorderings keep the order of critical sections; OSR
//! also reverses them, optimistically: for a conflicting pair `(e1, e2)` it takes the
//! closure of their thread predecessors under program order, fork, join and reads-from and,
//! for every critical section whose acquire is inside, its release too — unless that
//! release needs `e1` or `e2` (or the trace has not released it yet), in which case the
//! critical section stays *open* and must come last on its lock. The pair is an OSR race
//! when `e1` stays outside, no lock has two open critical sections, and the open ones can
//! follow every closed one of their lock: the graph of program order and reads-from among
//! the releases and open acquires involved, plus an edge from each closed release that the
//! trace puts after an open acquire to that acquire, has no cycle.
//!
//! **Soundness by construction.** The paper proves such pairs predictable. Here, before a
//! pair beyond the sync-preserving ones is reported, a schedule is built and checked event
//! by event ([`schedule`]): the closure's events in trace order, except that an open
//! acquire waits until every closed critical section of its lock has run, and a write waits
//! while a read still to run needs the value it would overwrite. It checks program order,
//! fork and join, locks, and that every read sees the write it saw in the trace. A pair
//! whose schedule cannot be completed is not reported (counted as `osr_unscheduled`), so
//! every reported pair comes with a witness that replays. Sync-preserving races are OSR
//! races too (their closure is an OSR closure with no open critical section out of order),
//! and keep their cut as witness.
//!
//! **Cost.** OSR keeps the trace's events (24 bytes each: the event, its position in its
//! thread's list, the write it read) to build schedules, and, unlike `syncp`, cannot pass a
//! candidate for good once it lies in a closure: each access re-examines the earlier
//! conflicting accesses that program order and reads-from do not order before it (one per
//! location group already counted for this access is skipped). Quadratic in the worst case,
//! as the paper's algorithm.
//!
//! **Promise** (`tests/syncp_oracle.rs`): every pair predictable, every witness replays;
//! every sync-preserving race reported.

use rustc_hash::FxHashMap;

use crate::trace::{Event, Op};

pub(super) const NONE: u32 = u32::MAX;

/// What OSR mode keeps of the trace.
#[derive(Debug, Default)]
pub(super) struct Kept {
    pub events: Vec<Event>,
    /// Per thread, its events' positions in the trace.
    pub per_thread: Vec<Vec<u32>>,
    /// Per event: the write, volatile write or signal a read, volatile read or wait saw
    /// (`NONE`: none, or not a read).
    pub src: Vec<u32>,
    /// Per thread, its fork's position (`NONE`: none seen).
    pub fork_of: Vec<u32>,
    /// Per slot kind (variable, volatile variable, condition), by object: the position of
    /// its latest write, volatile write or signal (`NONE`: none yet).
    last: [Vec<u32>; 3],
    /// The trace is longer than 2^32 - 1 events: OSR stops looking (the report says so).
    pub overflow: bool,
}

/// The slot (kind, object) a read-like / write-like event reads or writes, and whether it
/// writes: a variable (kind 0), a volatile (1) or a condition (2; `sig` writes, `wait`
/// reads).
pub(crate) fn slot(e: &Event) -> Option<((u8, u32), bool)> {
    match e.op {
        Op::Read => Some(((0, e.target), false)),
        Op::Write => Some(((0, e.target), true)),
        Op::VolatileRead => Some(((1, e.target), false)),
        Op::VolatileWrite => Some(((1, e.target), true)),
        Op::Wait => Some(((2, e.target), false)),
        Op::Signal => Some(((2, e.target), true)),
        _ => None,
    }
}

impl Kept {
    pub fn push(&mut self, index: u64, ev: &Event) {
        let Ok(i) = u32::try_from(index) else {
            self.overflow = true;
            return;
        };
        if i == NONE {
            self.overflow = true;
            return;
        }
        let t = ev.thread.index();
        if t >= self.per_thread.len() {
            self.per_thread.resize_with(t + 1, Vec::new);
            self.fork_of.resize(t + 1, NONE);
        }
        self.per_thread[t].push(i);
        let mut src = NONE;
        if let Some(((kind, obj), write)) = slot(ev) {
            let table = &mut self.last[kind as usize];
            let obj = obj as usize;
            if write {
                if obj >= table.len() {
                    table.resize(obj + 1, NONE);
                }
                table[obj] = i;
            } else {
                src = table.get(obj).copied().unwrap_or(NONE);
            }
        }
        if ev.op == Op::Fork {
            let c = ev.target as usize;
            if c >= self.fork_of.len() {
                self.fork_of.resize(c + 1, NONE);
                self.per_thread.resize_with(c + 1, Vec::new);
            }
            if self.fork_of[c] == NONE {
                self.fork_of[c] = i;
            }
        }
        self.events.push(*ev);
        self.src.push(src);
    }
}

/// An open critical section: its lock and thread, and its acquire's position in the thread.
#[derive(Clone, Copy, Debug)]
pub(super) struct Open {
    pub lock: u32,
    pub thread: u32,
    pub acq: u32,
}

/// Builds and checks a schedule of the events of `cut` (per thread, its first `cut[t]`
/// events) in which `opens` run last on their locks (see the module doc); the schedule in
/// trace positions, or `None` if the greedy construction gets stuck.
pub(super) fn schedule(kept: &Kept, cut: &[u32], opens: &[Open]) -> Option<Vec<u64>> {
    let nt = cut.len();
    let seq = |v: usize| -> &[u32] {
        let s = kept.per_thread.get(v).map_or(&[][..], |s| &s[..]);
        &s[..(cut[v] as usize).min(s.len())]
    };
    // Closed critical sections per lock (non-re-entrant acquires whose release is inside),
    // and the reads inside that still need each write.
    let mut closed: FxHashMap<u32, u32> = FxHashMap::default();
    let mut need: FxHashMap<((u8, u32), u32), u32> = FxHashMap::default();
    let mut total = 0usize;
    for v in 0..nt {
        let mut depth: FxHashMap<u32, u32> = FxHashMap::default();
        for &i in seq(v) {
            let e = &kept.events[i as usize];
            match e.op {
                Op::Acquire => *depth.entry(e.target).or_default() += 1,
                Op::Release => {
                    let d = depth.entry(e.target).or_default();
                    if *d == 1 {
                        *closed.entry(e.target).or_default() += 1;
                    }
                    *d = d.saturating_sub(1);
                }
                _ => {}
            }
            if let Some((s, false)) = slot(e) {
                *need.entry((s, kept.src[i as usize])).or_default() += 1;
            }
            total += 1;
        }
    }
    let is_open = |v: usize, k: u32, l: u32| {
        opens
            .iter()
            .any(|o| o.thread as usize == v && o.acq == k && o.lock == l)
    };
    let mut pos = vec![0usize; nt];
    let mut started: Vec<bool> = (0..nt)
        .map(|v| kept.fork_of.get(v).is_none_or(|&f| f == NONE))
        .collect();
    let mut holder: FxHashMap<u32, (usize, u32)> = FxHashMap::default();
    let mut released: FxHashMap<u32, u32> = FxHashMap::default();
    let mut last: FxHashMap<(u8, u32), u32> = FxHashMap::default();
    let mut order = Vec::with_capacity(total);
    while order.len() < total {
        let mut best: Option<(u32, usize)> = None;
        for v in 0..nt {
            let Some(&i) = seq(v).get(pos[v]) else {
                continue;
            };
            if best.is_some_and(|(b, _)| b < i) {
                continue;
            }
            if !started[v] {
                continue;
            }
            let e = &kept.events[i as usize];
            let ok = match e.op {
                Op::Acquire => match holder.get(&e.target) {
                    Some(&(h, _)) => h == v,
                    None => {
                        !is_open(v, pos[v] as u32 + 1, e.target)
                            || released.get(&e.target).copied().unwrap_or(0)
                                == closed.get(&e.target).copied().unwrap_or(0)
                    }
                },
                Op::Join => {
                    let c = e.target as usize;
                    c >= nt || pos[c] == seq(c).len()
                }
                _ => match slot(e) {
                    Some((s, false)) => {
                        last.get(&s).copied().unwrap_or(NONE) == kept.src[i as usize]
                    }
                    Some((s, true)) => {
                        let cur = last.get(&s).copied().unwrap_or(NONE);
                        need.get(&(s, cur)).copied().unwrap_or(0) == 0
                    }
                    None => true,
                },
            };
            if ok {
                best = Some((i, v));
            }
        }
        let (i, v) = best?;
        let e = &kept.events[i as usize];
        match e.op {
            Op::Fork => {
                if let Some(s) = started.get_mut(e.target as usize) {
                    *s = true;
                }
            }
            Op::Acquire => holder.entry(e.target).or_insert((v, 0)).1 += 1,
            Op::Release => {
                if let Some(h) = holder.get_mut(&e.target) {
                    h.1 -= 1;
                    if h.1 == 0 {
                        holder.remove(&e.target);
                        *released.entry(e.target).or_default() += 1;
                    }
                }
            }
            _ => {}
        }
        match slot(e) {
            Some((s, true)) => {
                last.insert(s, i);
            }
            Some((s, false)) => {
                if let Some(n) = need.get_mut(&(s, kept.src[i as usize])) {
                    *n -= 1;
                }
            }
            None => {}
        }
        pos[v] += 1;
        order.push(i as u64);
    }
    Some(order)
}
