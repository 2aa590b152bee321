//! Sync-preserving races (`syncp`).
//!
//! Paper: Mathur, Pavlogiannis, Tunç, Viswanathan, "Optimal Prediction of
//! Synchronization-Preserving Races", POPL 2021 (arXiv 2010.16385), §3 (sync-preserving
//! correct reorderings and races), §4 (sync-preserving closure, Lemma 4.2 and Theorem 4.3:
//! a pair is a sync-preserving race iff neither event lies in the closure of their
//! predecessors), §5 (the streaming algorithm, whose monotone reuse of closures this
//! module follows).
//!
//! **Definition.** A correct reordering is *sync-preserving* when every lock's critical
//! sections keep their trace order. A conflicting pair `(e1, e2)` is a *sync-preserving
//! race* when, after some sync-preserving correct reordering, both events are enabled. The
//! *sync-preserving closure* `SPClosure(S)` of a set of events is the smallest set that
//! contains `S` and is closed under
//!
//! - program order, fork (a thread's events need its fork) and join (a join needs every
//!   event of the joined thread), together with reads-from: a read, a volatile read and a
//!   wait need the write, volatile write and signal they saw in the trace (the thread-order
//!   and reads-from order "TRF");
//! - locks: if two acquires of a lock are in the set, the earlier one's release is too.
//!
//! `(e1, e2)` (with `e1` earlier in the trace) is a sync-preserving race iff `e1` is not in
//! `SPClosure(pred(e1) ∪ pred(e2))`, where `pred(e)` are the events of `e`'s thread before
//! it (`e2` never is: every event the closure adds lies earlier in the trace than some
//! event already in it). The closure, listed in trace order, is then a sync-preserving
//! correct reordering after which both events are enabled: that is the witness
//! ([`crate::witness::from_cut`]) and why every reported pair is predictable.
//!
//! **Algorithm.** A closure is a *cut*: per thread the number of its events inside (the
//! set is closed under program order). Each thread keeps its TRF clock (a vector clock
//! over program order, fork, join and reads-from, not over locks) as a log of versions, one
//! per event that changed it; each lock keeps, per thread, its critical sections (acquire
//! and release positions). Closing a cut alternates two steps until neither changes it:
//! join the TRF clock of each thread's last event in the cut, and for each critical
//! section open at the cut's edge whose lock has a later acquire inside the cut (of
//! another thread), move the edge to its release. Both are lookups by binary search, so a
//! closure costs a few passes over the threads and the open critical sections, not over
//! the events between.
//!
//! For each access `e2` and each other thread `u` that accessed the variable, the earlier
//! conflicting accesses of `u` are scanned in order from where `e2`'s thread stopped last
//! time, growing one closure (the paper's monotonicity, Lemma 5.2): an access inside the
//! closure of `pred(e2)` — or inside `SPClosure(pred(e1) ∪ pred(e2))` for an earlier
//! candidate `e1` — can race with no later event of `e2`'s thread either, and is passed for
//! good; an access outside is a race, reported with the closure as its witness cut.
//!
//! **Reports.** Pairs grouped by (location pair, kind) by default: each group's first
//! instance (earliest second event, latest first event) and the number of distinct second
//! events; `--all-pairs` lists every pair. In grouped mode an access replaces the previous
//! one of its thread, variable, kind and location when no acquire, join or new
//! reads-from dependency lies between them and no thread has passed it yet: the later one
//! then races with every event the earlier one races with (their closures differ only by
//! events that add no constraint), so groups, counts and first instances are unchanged.
//! Racy events (the second events) are listed too, grouped by location unless
//! `--all-pairs`, so racy locations compare with RAPID's `SyncPreserving` engine.
//!
//! **Promise** (`tests/syncp_oracle.rs`): every reported pair is predictable and its
//! witness replays; the pairs are exactly the sync-preserving races (brute force over
//! sync-preserving reorderings on small traces); `shbp`'s pairs are among them.

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::report::{GroupKey, RaceCut, RacePair, RaceReport, RacyLog, ReportKind};
use crate::trace::{Event, LocId, Names, Op, ThreadId};

use super::osr::{self, Open};
use super::{Analysis, Side};

const NONE: u32 = u32::MAX;

/// One critical section of one thread on one lock: positions in the thread (1-based) and
/// the acquire's position in the trace.
#[derive(Clone, Copy, Debug)]
struct Cs {
    acq: u32,
    /// `NONE` while the lock is held.
    rel: u32,
    pos: u64,
}

/// The critical sections of one (lock, thread), in order.
#[derive(Debug)]
struct CsList {
    thread: u32,
    lock: u32,
    sections: Vec<Cs>,
}

/// An earlier access, a candidate first event of a race.
#[derive(Clone, Copy, Debug)]
struct Cand {
    /// Position in its thread (1-based).
    local: u32,
    loc: LocId,
    /// Position in the trace.
    pos: u64,
}

// Candidates are most of the analysis's memory: keep them at 16 bytes.
const _: () = assert!(std::mem::size_of::<Cand>() == 16);

/// The accesses of one kind (read or write) of one variable by one thread, and for each
/// other thread how far it has passed them for good.
#[derive(Debug, Default)]
struct CandList {
    cands: Vec<Cand>,
    /// (thread, index of the first candidate it has not passed).
    views: Vec<(u32, u32)>,
    /// The thread's stretch at the last push, and where that stretch's candidates start.
    stretch: u32,
    stretch_start: u32,
}

impl CandList {
    fn view(&mut self, t: u32) -> usize {
        if let Some(k) = self.views.iter().position(|v| v.0 == t) {
            k
        } else {
            self.views.push((t, 0));
            self.views.len() - 1
        }
    }
    /// First candidate at or after `from` whose position in its thread exceeds `local`.
    fn after(&self, from: usize, local: u32) -> usize {
        from + self.cands[from..].partition_point(|c| c.local <= local)
    }
}

/// A variable's accesses: per thread, reads and writes.
#[derive(Debug, Default)]
struct VarState {
    /// (thread, reads, writes).
    by_thread: Vec<(u32, CandList, CandList)>,
}

/// A version of a thread's TRF clock: valid from event `from` of the thread on.
#[derive(Clone, Copy, Debug)]
struct Span {
    from: u32,
    off: u32,
    len: u32,
}

#[derive(Debug, Default)]
struct ThreadState {
    /// Events of the thread so far.
    n: u32,
    /// The TRF clock of the thread's latest event (its own component unused).
    clock: Vec<u32>,
    /// Versions of `clock` (arena `clocks`).
    versions: Vec<Span>,
    /// The critical sections held after event `from` (arena `held`).
    held_log: Vec<Span>,
    /// Currently held: (lock, re-entrance depth, critical-section list, index in it).
    holding: SmallVec<[(u32, u32, u32, u32); 4]>,
    /// Stretch counter (see the module doc).
    stretch: u32,
    /// The thread has appeared (an event of its own, or a fork of it).
    seen: bool,
    /// The thread was joined: it acts no more.
    joined: bool,
}

/// A group of the grouped report: first instance, its cut, distinct second events, the
/// last second event counted.
#[derive(Debug)]
struct Group {
    pair: RacePair,
    cut: Vec<u32>,
    schedule: Vec<u64>,
    count: u64,
    last_second: u64,
}

/// The `syncp` analysis.
pub struct SyncP {
    all_pairs: bool,
    /// Keep each reported pair's witness cut.
    cuts: bool,
    threads: Vec<ThreadState>,
    clocks: Vec<u32>,
    held: Vec<(u32, u32)>,
    cs_lists: Vec<CsList>,
    /// Per lock: its critical-section lists (one per thread that acquired it).
    locks: Vec<SmallVec<[u32; 4]>>,
    vars: Vec<VarState>,
    /// Last (thread, position) of each variable's write, volatile write, condition's signal.
    last_write: Vec<(u32, u32)>,
    last_vw: Vec<(u32, u32)>,
    last_sig: Vec<(u32, u32)>,
    // Scratch.
    base: Vec<u32>,
    cut: Vec<u32>,
    work: Vec<u32>,
    // Results.
    pairs: Vec<RacePair>,
    pair_cuts: Vec<RaceCut>,
    groups: Vec<Group>,
    group_index: FxHashMap<GroupKey, usize>,
    racy: RacyLog,
    closures: u64,
    /// Events until the next collection of candidates ([`SyncP::collect`]).
    until_collect: u32,
    /// The first event before which candidates were dropped, if any.
    collected_before: Option<u64>,
    /// A thread that appeared without a fork after candidates were dropped, and where.
    unforked_late: Option<(u32, u64)>,
    /// OSR mode ([`super::osr`]): the trace's events, kept to build schedules.
    osr: Option<Box<osr::Kept>>,
    /// OSR races beyond the sync-preserving ones, and OSR pairs whose schedule could not be
    /// built (not reported).
    osr_only: u64,
    osr_unscheduled: u64,
    /// TRF-candidate mode ([`SyncP::trf_candidates`]): per variable, per thread, the latest
    /// access of each (location, kind).
    trf: Option<Vec<TrfVar>>,
}

/// TRF-candidate mode: one variable's accesses, per thread (thread, its latest accesses).
type TrfVar = Vec<(u32, Vec<TrfAccess>)>;

/// The latest access of one (thread, variable, location, kind) in TRF-candidate mode.
#[derive(Clone, Copy, Debug)]
struct TrfAccess {
    loc: LocId,
    write: bool,
    local: u32,
    pos: u64,
}

/// Events between two collections of candidates.
const COLLECT_EVERY: u32 = 1 << 20;

impl SyncP {
    /// `all_pairs`: list every pair (otherwise grouped by location pair); `cuts`: keep each
    /// reported pair's witness cut ([`RaceReport::cuts`]).
    pub fn new(all_pairs: bool, cuts: bool) -> SyncP {
        SyncP {
            all_pairs,
            cuts,
            threads: Vec::new(),
            clocks: Vec::new(),
            held: Vec::new(),
            cs_lists: Vec::new(),
            locks: Vec::new(),
            vars: Vec::new(),
            last_write: Vec::new(),
            last_vw: Vec::new(),
            last_sig: Vec::new(),
            base: Vec::new(),
            cut: Vec::new(),
            work: Vec::new(),
            pairs: Vec::new(),
            pair_cuts: Vec::new(),
            groups: Vec::new(),
            group_index: FxHashMap::default(),
            racy: RacyLog::new(all_pairs),
            closures: 0,
            until_collect: COLLECT_EVERY,
            collected_before: None,
            unforked_late: None,
            osr: None,
            osr_only: 0,
            osr_unscheduled: 0,
            trf: None,
        }
    }

    /// The TRF candidates (`trf`): every location group with a conflicting pair whose first
    /// event is not ordered before the second's thread predecessors by program order,
    /// fork, join and reads-from. A pair so ordered is no predictable race (every correct
    /// reordering that runs the second's predecessors runs the first), so a group outside
    /// this report has none: the proof `racepred check` gives for "no race". From the latest
    /// access of each (thread, variable, location, kind): a later access of a location is
    /// unordered whenever an earlier one is.
    pub fn trf_candidates() -> SyncP {
        let mut a = SyncP::new(false, false);
        a.trf = Some(Vec::new());
        a
    }

    /// TRF-candidate mode: reports `ev`'s groups with earlier conflicting accesses outside
    /// its thread's TRF clock, then records it.
    fn trf_access(&mut self, p: u64, ev: &Event, k: u32) -> bool {
        let t = ev.thread.0;
        let x = ev.target as usize;
        let write = ev.op == Op::Write;
        let mut table = self.trf.take().expect("TRF-candidate mode");
        if x >= table.len() {
            table.resize_with(x + 1, Vec::new);
        }
        let mut racy = false;
        for (u, accesses) in &table[x] {
            if *u == t {
                continue;
            }
            let before = self.threads[t as usize]
                .clock
                .get(*u as usize)
                .copied()
                .unwrap_or(0);
            for a in accesses {
                if (a.write || write) && a.local > before {
                    let op = if a.write { Op::Write } else { Op::Read };
                    let e1 = Event::new(ThreadId(*u), op, x as u32, a.loc);
                    self.report(e1, a.pos, *ev, p, &[], Vec::new());
                    racy = true;
                }
            }
        }
        let acc = TrfAccess {
            loc: ev.loc,
            write,
            local: k,
            pos: p,
        };
        let slot = match table[x].iter().position(|e| e.0 == t) {
            Some(i) => i,
            None => {
                table[x].push((t, Vec::new()));
                table[x].len() - 1
            }
        };
        let mine = &mut table[x][slot].1;
        match mine
            .iter_mut()
            .find(|a| a.loc == ev.loc && a.write == write)
        {
            Some(a) => *a = acc,
            None => mine.push(acc),
        }
        self.trf = Some(table);
        racy
    }

    /// The OSR analysis ([`super::osr`]): the sync-preserving races and the optimistic
    /// sync-reversal ones.
    pub fn osr(all_pairs: bool, cuts: bool) -> SyncP {
        let mut a = SyncP::new(all_pairs, cuts);
        a.osr = Some(Box::default());
        a
    }

    fn thread(&mut self, t: u32) -> &mut ThreadState {
        let i = t as usize;
        if i >= self.threads.len() {
            self.threads.resize_with(i + 1, ThreadState::default);
        }
        &mut self.threads[i]
    }

    /// The TRF clock of event `k` of thread `v`, without its own component; for `k = 0`,
    /// what the thread needs before its first event (its fork).
    #[inline]
    fn clock_of(&self, v: usize, k: u32) -> &[u32] {
        let vs = &self.threads[v].versions;
        let i = match vs.last() {
            Some(s) if s.from <= k => vs.len() - 1,
            _ => vs.partition_point(|s| s.from <= k).wrapping_sub(1),
        };
        match vs.get(i) {
            Some(s) => &self.clocks[s.off as usize..(s.off + s.len) as usize],
            None => &[],
        }
    }

    /// Records the current clock of `t` as the version valid from its event `from` on.
    fn snapshot(&mut self, t: usize, from: u32) {
        let off = self.clocks.len() as u32;
        let c = &self.threads[t].clock;
        let len = c.iter().rposition(|&x| x != 0).map_or(0, |p| p + 1);
        self.clocks.extend_from_slice(&c[..len]);
        let ts = &mut self.threads[t];
        if let Some(last) = ts.versions.last_mut() {
            if last.from == from {
                *last = Span {
                    from,
                    off,
                    len: len as u32,
                };
                return;
            }
        }
        ts.versions.push(Span {
            from,
            off,
            len: len as u32,
        });
    }

    /// Joins `src`'s clock at event `k` (and the event itself) into `t`'s clock; true if it
    /// grew.
    fn join_event_into(&mut self, t: usize, src: usize, k: u32) -> bool {
        if src == t || k == 0 {
            return false;
        }
        // Already inside: the clock is TRF-closed, so it holds the event's past too.
        if self.threads[t].clock.get(src).is_some_and(|&x| x >= k) {
            return false;
        }
        let need = self.threads.len();
        let mut clock = std::mem::take(&mut self.threads[t].clock);
        if clock.len() < need {
            clock.resize(need, 0);
        }
        let mut grew = false;
        if clock[src] < k {
            clock[src] = k;
            grew = true;
        }
        for (w, &x) in self.clock_of(src, k).iter().enumerate() {
            if w != t && clock[w] < x {
                clock[w] = x;
                grew = true;
            }
        }
        self.threads[t].clock = clock;
        grew
    }

    /// The held-set log entry of thread `v` after its event `k`.
    #[inline]
    fn held_at(&self, v: usize, k: u32) -> &[(u32, u32)] {
        let hl = &self.threads[v].held_log;
        let i = hl.partition_point(|s| s.from <= k);
        match i.checked_sub(1).map(|i| hl[i]) {
            Some(s) => &self.held[s.off as usize..(s.off + s.len) as usize],
            None => &[],
        }
    }

    fn log_held(&mut self, t: usize) {
        let off = self.held.len() as u32;
        let ts = &self.threads[t];
        let from = ts.n;
        for &(_, _, list, idx) in &ts.holding {
            self.held.push((list, idx));
        }
        let len = self.held.len() as u32 - off;
        let ts = &mut self.threads[t];
        match ts.held_log.last_mut() {
            Some(last) if last.from == from => *last = Span { from, off, len },
            _ => ts.held_log.push(Span { from, off, len }),
        }
    }

    /// Closes `cut` under TRF only (program order, fork, join, reads-from).
    fn close_trf(&self, cut: &mut [u32]) {
        let mut work: Vec<u32> = (0..cut.len() as u32)
            .filter(|&v| cut[v as usize] > 0)
            .collect();
        while let Some(v) = work.pop() {
            let v = v as usize;
            for (w, &x) in self.clock_of(v, cut[v]).iter().enumerate() {
                if w != v && w < cut.len() && cut[w] < x {
                    cut[w] = x;
                    work.push(w as u32);
                }
            }
        }
    }

    /// Event `k` of thread `v` is in the TRF past of event `j` of thread `w` (or is it).
    fn trf_before(&self, v: usize, k: u32, w: usize, j: u32) -> bool {
        if v == w {
            return k <= j;
        }
        self.clock_of(w, j).get(v).is_some_and(|&x| x >= k)
    }

    /// OSR ([`super::osr`]): is `(e1, e2)` an optimistic sync-reversal race? `e1` is event
    /// `k1` of thread `u`, `e2` event `k2` of thread `t`. Its witness schedule if so.
    fn osr_race(&mut self, u: usize, k1: u32, t: usize, k2: u32) -> Option<Vec<u64>> {
        let n = self.threads.len();
        let mut cut = self.threads[t].clock.clone();
        cut.resize(n, 0);
        cut[t] = k2 - 1;
        cut[u] = cut[u].max(k1 - 1);
        for (w, &x) in self.clock_of(u, k1 - 1).iter().enumerate() {
            if w != u && cut[w] < x {
                cut[w] = x;
            }
        }
        self.close_trf(&mut cut);
        let contains = |this: &SyncP, v: usize, rel: u32| {
            let has = |w: usize, k: u32| {
                if v == w {
                    rel >= k
                } else {
                    this.clock_of(v, rel).get(w).is_some_and(|&x| x >= k)
                }
            };
            has(u, k1) || has(t, k2)
        };
        // Release every critical section inside whose release needs neither event.
        loop {
            if cut[u] >= k1 {
                return None;
            }
            let mut grew = false;
            for (v, edge) in cut.iter_mut().enumerate() {
                if *edge == 0 {
                    continue;
                }
                let mut to = *edge;
                for &(list, idx) in self.held_at(v, *edge) {
                    let cs = self.cs_lists[list as usize].sections[idx as usize];
                    if cs.rel != NONE && !contains(self, v, cs.rel) {
                        to = to.max(cs.rel);
                    }
                }
                if to > *edge {
                    *edge = to;
                    grew = true;
                }
            }
            if !grew {
                break;
            }
            self.close_trf(&mut cut);
        }
        // At most one open critical section per lock.
        let mut opens: Vec<(Open, u64)> = Vec::new();
        for (v, &edge) in cut.iter().enumerate() {
            if edge == 0 {
                continue;
            }
            for &(list, idx) in self.held_at(v, edge) {
                let cs = self.cs_lists[list as usize].sections[idx as usize];
                let lock = self.cs_lists[list as usize].lock;
                if opens.iter().any(|(o, _)| o.lock == lock) {
                    return None;
                }
                opens.push((
                    Open {
                        lock,
                        thread: v as u32,
                        acq: cs.acq,
                    },
                    cs.pos,
                ));
            }
        }
        // Each open acquire after the last closed critical section of its lock of every
        // other thread that the trace puts after it: no cycle with program order and
        // reads-from.
        let mut back: Vec<((usize, u32), (usize, u32))> = Vec::new();
        for &(o, apos) in &opens {
            for &l in &self.locks[o.lock as usize] {
                let list = &self.cs_lists[l as usize];
                let w = list.thread as usize;
                if w == o.thread as usize || cut[w] == 0 {
                    continue;
                }
                let s = &list.sections;
                let j = s.partition_point(|c| c.acq <= cut[w]);
                if j > 0 && s[j - 1].pos > apos && s[j - 1].rel <= cut[w] {
                    back.push(((w, s[j - 1].rel), (o.thread as usize, o.acq)));
                }
            }
        }
        if !back.is_empty() {
            let nodes: Vec<(usize, u32)> = back.iter().flat_map(|&(a, b)| [a, b]).collect();
            let edge = |a: (usize, u32), b: (usize, u32)| {
                back.contains(&(a, b)) || (a != b && self.trf_before(a.0, a.1, b.0, b.1))
            };
            // A cycle through a backward edge (r, a): a path from a back to r.
            for &(r, a) in &back {
                let mut seen = vec![false; nodes.len()];
                let mut stack = vec![a];
                let mut cyclic = false;
                while let Some(x) = stack.pop() {
                    if x == r || (x != a && self.trf_before(x.0, x.1, r.0, r.1)) {
                        cyclic = true;
                        break;
                    }
                    for (i, &y) in nodes.iter().enumerate() {
                        if !seen[i] && edge(x, y) {
                            seen[i] = true;
                            stack.push(y);
                        }
                    }
                }
                if cyclic || self.trf_before(a.0, a.1, r.0, r.1) {
                    return None;
                }
            }
        }
        let opens: Vec<Open> = opens.into_iter().map(|(o, _)| o).collect();
        let kept = self.osr.as_deref()?;
        let sched = osr::schedule(kept, &cut, &opens);
        if sched.is_none() {
            self.osr_unscheduled += 1;
        }
        sched
    }

    /// Closes `cut` (per thread, events inside) under TRF and the lock rule. False if the
    /// closure needs a release the trace does not have (an ill-formed trace read leniently).
    fn close(&mut self, cut: &mut Vec<u32>) -> bool {
        self.closures += 1;
        let n = self.threads.len();
        cut.resize(n, 0);
        let mut work = std::mem::take(&mut self.work);
        work.clear();
        work.extend((0..n as u32).filter(|&v| cut[v as usize] > 0));
        let mut ok = true;
        loop {
            // TRF: join the clock of each thread's last event inside.
            while let Some(v) = work.pop() {
                let v = v as usize;
                let k = cut[v];
                for (w, &x) in self.clock_of(v, k).iter().enumerate() {
                    if w != v && cut[w] < x {
                        cut[w] = x;
                        work.push(w as u32);
                    }
                }
            }
            // Locks: an open critical section with a later acquire of its lock inside
            // must be closed.
            for v in 0..n {
                let k = cut[v];
                if k == 0 {
                    continue;
                }
                let mut close_to = 0u32;
                for &(list, idx) in self.held_at(v, k) {
                    let cs = self.cs_lists[list as usize].sections[idx as usize];
                    if cs.rel != NONE && cs.rel <= k {
                        continue;
                    }
                    let lock = self.cs_lists[list as usize].lock;
                    let later = self.locks[lock as usize].iter().any(|&o| {
                        let other = &self.cs_lists[o as usize];
                        let w = other.thread as usize;
                        if w == v || cut[w] == 0 {
                            return false;
                        }
                        let s = &other.sections;
                        let j = s.partition_point(|c| c.pos < cs.pos);
                        j < s.len() && s[j].acq <= cut[w]
                    });
                    if later {
                        if cs.rel == NONE {
                            ok = false;
                        } else {
                            close_to = close_to.max(cs.rel);
                        }
                    }
                }
                if close_to > k {
                    cut[v] = close_to;
                    work.push(v as u32);
                }
            }
            if work.is_empty() || !ok {
                break;
            }
        }
        self.work = work;
        ok
    }

    fn report(&mut self, e1: Event, p1: u64, e2: Event, p2: u64, cut: &[u32], sched: Vec<u64>) {
        let pair = RacePair::new(p1, e1, p2, e2);
        let keep = |c: &[u32]| {
            if sched.is_empty() {
                c.to_vec()
            } else {
                Vec::new()
            }
        };
        if self.all_pairs {
            self.pairs.push(pair);
            if self.cuts {
                self.pair_cuts.push(RaceCut {
                    first: p1,
                    second: p2,
                    cut: keep(cut),
                    schedule: sched,
                });
            }
            return;
        }
        let key = pair.group_key();
        let next = self.groups.len();
        let g = *self.group_index.entry(key).or_insert(next);
        if g == next {
            self.groups.push(Group {
                pair,
                cut: if self.cuts { keep(cut) } else { Vec::new() },
                schedule: if self.cuts { sched } else { Vec::new() },
                count: 1,
                last_second: p2,
            });
            return;
        }
        let cuts = self.cuts;
        let g = &mut self.groups[g];
        if g.last_second != p2 {
            g.count += 1;
            g.last_second = p2;
        } else if g.pair.second == p2 && g.pair.first < p1 {
            // Same second event, a later first event: the closer instance.
            g.pair = pair;
            if cuts {
                g.cut = keep(cut);
                g.schedule = sched;
            }
        }
    }

    /// Grouped mode: `e2` (event `p2`) already counts in the group of a pair with `e1`.
    fn counted(&self, e1: &Event, e2: &Event, p2: u64) -> bool {
        if self.all_pairs {
            return false;
        }
        let key = RacePair::new(0, *e1, 1, *e2).group_key();
        self.group_index
            .get(&key)
            .is_some_and(|&g| self.groups[g].last_second == p2)
    }

    /// Checks access `e2` (event `p2`, position `k` in its thread) against the earlier
    /// conflicting accesses of other threads.
    fn check(&mut self, p2: u64, e2: &Event, k: u32) -> bool {
        let t = e2.thread.0;
        let x = e2.target as usize;
        let Some(vs) = self.vars.get(x) else {
            return false;
        };
        if vs.by_thread.iter().all(|b| b.0 == t) {
            return false;
        }
        // pred(e2): the thread's clock before e2 and its first k - 1 events.
        let mut base = std::mem::take(&mut self.base);
        base.clear();
        base.extend_from_slice(&self.threads[t as usize].clock);
        base.resize(self.threads.len(), 0);
        base[t as usize] = k - 1;
        let mut closed = false;
        let mut racy = false;
        let mut cut = std::mem::take(&mut self.cut);
        let slots = self.vars[x].by_thread.len();
        for s in 0..slots {
            let u = self.vars[x].by_thread[s].0;
            if u == t {
                continue;
            }
            // Two lists when e2 writes (reads and writes of u), one when it reads.
            let lists: &[usize] = if e2.op == Op::Write { &[0, 1] } else { &[1] };
            // Views and the first candidate not inside pred(e2)'s TRF clock.
            let mut pos = [0usize; 2];
            let mut view = [0usize; 2];
            let mut any = false;
            for &li in lists {
                let list = self.list(x, s, li);
                view[li] = list.view(t);
                let p = list.views[view[li]].1 as usize;
                pos[li] = list.after(p, base[u as usize]);
                any |= pos[li] < list.cands.len();
            }
            if !any {
                for &li in lists {
                    let list = self.list(x, s, li);
                    list.views[view[li]].1 = pos[li] as u32;
                }
                continue;
            }
            if !closed {
                closed = true;
                if !self.close(&mut base) {
                    // Infeasible (lenient ill-formed input): nothing is reported.
                    self.base = base;
                    self.cut = cut;
                    return racy;
                }
            }
            let bu = base[u as usize];
            if self.osr.is_none() {
                for &li in lists {
                    let list = self.list(x, s, li);
                    pos[li] = list.after(pos[li], bu);
                }
            }
            // Scan u's candidates in thread order, both lists merged.
            cut.clear();
            cut.extend_from_slice(&base);
            let mut kept = [false; 2];
            loop {
                let mut best: Option<(usize, Cand)> = None;
                for &li in lists {
                    let list = self.list(x, s, li);
                    if let Some(&c) = list.cands.get(pos[li]) {
                        if best.is_none_or(|(_, b)| c.local < b.local) {
                            best = Some((li, c));
                        }
                    }
                }
                let Some((li, c)) = best else { break };
                let uu = u as usize;
                // pred(e1): its thread's earlier events and, for a first event, the fork.
                let need = c.local - 1;
                let mut grew = false;
                if need > cut[uu] {
                    cut[uu] = need;
                    grew = true;
                }
                if need == 0 {
                    for (w, &x) in self.clock_of(uu, 0).iter().enumerate() {
                        if w != uu && cut[w] < x {
                            cut[w] = x;
                            grew = true;
                        }
                    }
                }
                if grew && !self.close(&mut cut) {
                    break;
                }
                let op = if li == 1 { Op::Write } else { Op::Read };
                let e1 = Event::new(ThreadId(u), op, x as u32, c.loc);
                if cut[uu] >= c.local && self.osr.is_some() {
                    // OSR: not sync-preserving; maybe by reversing critical sections. The
                    // candidate stays for later events.
                    if !self.counted(&e1, e2, p2) {
                        if let Some(sched) = self.osr_race(uu, c.local, t as usize, k) {
                            self.osr_only += 1;
                            self.report(e1, c.pos, *e2, p2, &[], sched);
                            racy = true;
                        }
                    }
                    kept[li] = true;
                    pos[li] += 1;
                } else if cut[uu] >= c.local {
                    // Inside: so is every candidate up to the cut's edge, for e2 and every
                    // later event of its thread.
                    let edge = cut[uu];
                    for &lj in lists {
                        let list = self.list(x, s, lj);
                        pos[lj] = list.after(pos[lj], edge);
                    }
                } else {
                    let cutv = std::mem::take(&mut cut);
                    self.report(e1, c.pos, *e2, p2, &cutv, Vec::new());
                    cut = cutv;
                    racy = true;
                    kept[li] = true;
                    pos[li] += 1;
                    // The other list's candidates before this one stay as they were.
                }
                // Advance each list's view past what is passed for good (nothing racy
                // before it in that list).
                for &lj in lists {
                    if !kept[lj] {
                        let list = self.list(x, s, lj);
                        list.views[view[lj]].1 = pos[lj] as u32;
                    }
                }
            }
        }
        self.base = base;
        self.cut = cut;
        racy
    }

    #[inline]
    fn list(&mut self, x: usize, slot: usize, which: usize) -> &mut CandList {
        let b = &mut self.vars[x].by_thread[slot];
        if which == 0 {
            &mut b.1
        } else {
            &mut b.2
        }
    }

    /// Adds access `ev` (event `p`, position `k` in its thread) to its variable's lists.
    fn push_access(&mut self, p: u64, ev: &Event, k: u32) {
        let t = ev.thread.0;
        let x = ev.target as usize;
        if x >= self.vars.len() {
            self.vars.resize_with(x + 1, VarState::default);
        }
        let stretch = self.threads[t as usize].stretch;
        let grouped = !self.all_pairs;
        let vs = &mut self.vars[x];
        let slot = match vs.by_thread.iter().position(|b| b.0 == t) {
            Some(s) => s,
            None => {
                vs.by_thread
                    .push((t, CandList::default(), CandList::default()));
                vs.by_thread.len() - 1
            }
        };
        let b = &mut vs.by_thread[slot];
        let list = if ev.op == Op::Write {
            &mut b.2
        } else {
            &mut b.1
        };
        let c = Cand {
            local: k,
            loc: ev.loc,
            pos: p,
        };
        let n = list.cands.len();
        if list.stretch != stretch || n == 0 {
            list.stretch = stretch;
            list.stretch_start = n as u32;
        } else if grouped {
            // The same location earlier in this stretch (a few entries back at most),
            // passed by no thread: the new access takes its place at the end.
            let from = (list.stretch_start as usize).max(n.saturating_sub(8));
            if let Some(j) = (from..n).rev().find(|&j| list.cands[j].loc == ev.loc) {
                if list.views.iter().all(|v| v.1 as usize <= j) {
                    list.cands.remove(j);
                }
            }
        }
        list.cands.push(c);
    }

    /// Drops the candidates no later event can race with: those inside the TRF clock of
    /// every thread that may still act (appeared and not joined). A thread that appears
    /// later is forked by one of them and inherits its clock. (A thread that appears
    /// without a fork after a collection could race with dropped candidates: the report then
    /// says so.) Lists left empty free their memory.
    fn collect(&mut self, index: u64) {
        let n = self.threads.len();
        let mut floor = vec![u32::MAX; n];
        for (v, ts) in self.threads.iter().enumerate() {
            if !ts.seen || ts.joined {
                continue;
            }
            for (u, f) in floor.iter_mut().enumerate() {
                if u != v {
                    *f = (*f).min(ts.clock.get(u).copied().unwrap_or(0));
                }
            }
        }
        let mut dropped = false;
        for vs in &mut self.vars {
            for (u, r, w) in vs.by_thread.iter_mut() {
                let f = floor[*u as usize];
                for list in [r, w] {
                    let d = list.cands.partition_point(|c| c.local <= f);
                    if d == 0 {
                        continue;
                    }
                    dropped = true;
                    list.cands.drain(..d);
                    list.stretch_start = list.stretch_start.saturating_sub(d as u32);
                    for v in &mut list.views {
                        v.1 = v.1.saturating_sub(d as u32);
                    }
                    if list.cands.is_empty() {
                        list.views = Vec::new();
                    }
                    if list.cands.capacity() > 2 * list.cands.len() + 4 {
                        list.cands.shrink_to_fit();
                    }
                }
            }
            vs.by_thread
                .retain(|(_, r, w)| !r.cands.is_empty() || !w.cands.is_empty());
            if vs.by_thread.is_empty() {
                vs.by_thread = Vec::new();
            }
        }
        if dropped && self.collected_before.is_none() {
            self.collected_before = Some(index);
        }
    }

    /// Reads-from: event `k` of `t` saw `src`.
    fn reads_from(&mut self, t: usize, k: u32, src: (u32, u32)) {
        if src.0 == NONE {
            return;
        }
        if self.join_event_into(t, src.0 as usize, src.1) {
            self.snapshot(t, k);
            self.threads[t].stretch += 1;
        }
    }
}

/// Records `(thread, position)` as the last writer of slot `x`.
fn set_last(table: &mut Vec<(u32, u32)>, x: usize, w: (u32, u32)) {
    if x >= table.len() {
        table.resize(x + 1, (NONE, 0));
    }
    table[x] = w;
}

impl Analysis for SyncP {
    fn name(&self) -> &'static str {
        if self.osr.is_some() {
            "osr"
        } else if self.trf.is_some() {
            "trf"
        } else {
            "syncp"
        }
    }

    fn on_event(&mut self, index: u64, ev: &Event, _side: Side<'_>) {
        let t = ev.thread.0;
        let ti = t as usize;
        if let Some(kept) = self.osr.as_deref_mut() {
            kept.push(index, ev);
        }
        self.until_collect -= 1;
        if self.until_collect == 0 {
            self.collect(index);
            // A collection walks every variable: at most one per 8 accesses of a variable
            // on average, so its cost stays linear in the events.
            self.until_collect =
                COLLECT_EVERY.max(self.vars.len().saturating_mul(8).min(u32::MAX as usize) as u32);
        }
        let ts = self.thread(t);
        if !ts.seen {
            ts.seen = true;
            if self.collected_before.is_some() && self.unforked_late.is_none() {
                self.unforked_late = Some((t, index));
            }
        }
        let ts = &mut self.threads[ti];
        ts.n += 1;
        let k = ts.n;
        match ev.op {
            Op::Read | Op::Write => {
                let racy = if self.trf.is_some() {
                    self.trf_access(index, ev, k)
                } else {
                    let racy = self.check(index, ev, k);
                    self.push_access(index, ev, k);
                    racy
                };
                if racy {
                    self.racy.push(index, ev);
                }
                let x = ev.target as usize;
                if ev.op == Op::Write {
                    set_last(&mut self.last_write, x, (t, k));
                } else {
                    let src = self.last_write.get(x).copied().unwrap_or((NONE, 0));
                    self.reads_from(ti, k, src);
                }
            }
            Op::VolatileWrite => set_last(&mut self.last_vw, ev.target as usize, (t, k)),
            Op::Signal => set_last(&mut self.last_sig, ev.target as usize, (t, k)),
            Op::VolatileRead | Op::Wait => {
                let table = if ev.op == Op::Wait {
                    &self.last_sig
                } else {
                    &self.last_vw
                };
                let src = table.get(ev.target as usize).copied();
                self.reads_from(ti, k, src.unwrap_or((NONE, 0)));
            }
            Op::Acquire => {
                let l = ev.target;
                if let Some(h) = self.threads[ti].holding.iter_mut().find(|h| h.0 == l) {
                    h.1 += 1; // re-entrant: one critical section
                    return;
                }
                if l as usize >= self.locks.len() {
                    self.locks.resize_with(l as usize + 1, SmallVec::new);
                }
                let list = match self.locks[l as usize]
                    .iter()
                    .find(|&&o| self.cs_lists[o as usize].thread == t)
                {
                    Some(&o) => o,
                    None => {
                        self.cs_lists.push(CsList {
                            thread: t,
                            lock: l,
                            sections: Vec::new(),
                        });
                        let o = self.cs_lists.len() as u32 - 1;
                        self.locks[l as usize].push(o);
                        o
                    }
                };
                let sections = &mut self.cs_lists[list as usize].sections;
                sections.push(Cs {
                    acq: k,
                    rel: NONE,
                    pos: index,
                });
                let idx = sections.len() as u32 - 1;
                let ts = &mut self.threads[ti];
                ts.holding.push((l, 1, list, idx));
                ts.stretch += 1;
                self.log_held(ti);
            }
            Op::Release => {
                let l = ev.target;
                let ts = &mut self.threads[ti];
                let Some(h) = ts.holding.iter().position(|h| h.0 == l) else {
                    return; // a release without acquire (lenient): no critical section
                };
                if ts.holding[h].1 > 1 {
                    ts.holding[h].1 -= 1;
                    return;
                }
                let (_, _, list, idx) = ts.holding.remove(h);
                self.cs_lists[list as usize].sections[idx as usize].rel = k;
                self.log_held(ti);
            }
            Op::Fork => {
                let c = ev.target;
                self.thread(c).seen = true;
                let ci = c as usize;
                let mut clock = self.threads[ti].clock.clone();
                clock.resize(self.threads.len(), 0);
                clock[ti] = k;
                clock[ci] = 0;
                let child = &mut self.threads[ci];
                if child.n == 0 {
                    child.clock = clock;
                    // Valid before the child's first event: its fork comes first.
                    self.snapshot(ci, 0);
                }
            }
            Op::Join => {
                let c = ev.target;
                self.thread(c).joined = true;
                let ci = c as usize;
                let n = self.threads[ci].n;
                let grew = if n > 0 {
                    self.join_event_into(ti, ci, n)
                } else {
                    // A thread without events: its fork still comes first.
                    let fork = self.clock_of(ci, 0).to_vec();
                    let clock = &mut self.threads[ti].clock;
                    clock.resize(clock.len().max(fork.len()), 0);
                    let mut grew = false;
                    for (w, &x) in fork.iter().enumerate() {
                        if w != ti && clock[w] < x {
                            clock[w] = x;
                            grew = true;
                        }
                    }
                    grew
                };
                if grew {
                    self.snapshot(ti, k);
                }
                self.threads[ti].stretch += 1;
            }
            _ => {}
        }
    }

    fn finish(&mut self, names: &Names) -> RaceReport {
        let mut r = RaceReport::new(self.name(), ReportKind::Pairs);
        if self.all_pairs {
            r.pairs = std::mem::take(&mut self.pairs);
            r.cuts = std::mem::take(&mut self.pair_cuts);
        } else {
            for g in std::mem::take(&mut self.groups) {
                if self.cuts {
                    r.cuts.push(RaceCut {
                        first: g.pair.first,
                        second: g.pair.second,
                        cut: g.cut,
                        schedule: g.schedule,
                    });
                }
                r.pairs.push(g.pair);
                r.group_counts.push(g.count);
            }
            self.group_index.clear();
        }
        self.racy.finish(&mut r);
        r.normalize();
        r.cuts.sort_by_key(|c| (c.first, c.second));
        if self.trf.is_some() {
            r.notes.push(
                "candidates: conflicting pairs whose first event program order, fork, join and \
                 reads-from do not order before the second's thread (complete: every \
                 predictable pair is among them; not sound)"
                    .into(),
            );
        } else if self.osr.is_some() {
            r.notes.push(
                "optimistic sync-reversal races (Shi et al., ICSE 2024): every pair is \
                 predictable, with a witness schedule checked event by event before it is \
                 reported; every sync-preserving race is among them"
                    .into(),
            );
            r.extra
                .insert("osr_only".into(), serde_json::Value::from(self.osr_only));
            r.extra.insert(
                "osr_unscheduled".into(),
                serde_json::Value::from(self.osr_unscheduled),
            );
            if self.osr.as_ref().is_some_and(|k| k.overflow) {
                r.incomplete = Some(
                    "the trace has more than 2^32 - 1 events: OSR looked only at the first ones"
                        .into(),
                );
            }
        } else {
            r.notes.push(
                "sync-preserving races (Mathur et al., POPL 2021): every pair is predictable, \
                 with a witness that keeps every lock's critical sections in trace order; every \
                 sync-preserving race is reported"
                    .into(),
            );
        }
        r.extra
            .insert("closures".into(), serde_json::Value::from(self.closures));
        let kept: usize = (self.vars.iter())
            .flat_map(|v| v.by_thread.iter())
            .map(|b| b.1.cands.len() + b.2.cands.len())
            .sum();
        r.extra
            .insert("candidates_kept".into(), serde_json::Value::from(kept));
        let versions: usize = self.threads.iter().map(|t| t.versions.len()).sum();
        r.extra
            .insert("clock_versions".into(), serde_json::Value::from(versions));

        if let (Some((t, at)), Some(before)) = (self.unforked_late, self.collected_before) {
            r.incomplete = Some(format!(
                "thread {} first acts at event {at} without a fork, after the accesses before \
                 event {before} it could race with were dropped as ordered before every other \
                 thread; its races with them are not reported",
                names.thread(ThreadId(t))
            ));
        }
        r
    }
}
