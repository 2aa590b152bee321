//! Shared machinery of the lockset family (`lockset`, `tsan-hybrid`, `w3po`, and WCP's
//! bookkeeping of held locks).
//!
//! - [`LocksetTable`]: locksets interned as dense ids (`0` is the empty set), with cached
//!   add / remove transitions and intersections, and a 32-bit mask per set, exact for the
//!   first 31 locks, so that most disjointness and subset tests are one `&` (Def. 3.10 of
//!   `papers/w3po-hybrid-lockset.txt`).
//! - [`Holdings`]: the locks each thread holds, with re-entrant nesting (only the outermost
//!   `acq`/`rel` of a lock opens / closes a critical section) and hand-over-hand releases.
//! - [`AccessLog`]: per (variable, thread) the plain accesses seen so far with their local
//!   time and lockset, complete or bounded to the last `N + 1` reads and writes ("history of
//!   replaced events"); it enumerates the earlier accesses a new access may race with.
//! - [`PairSink`]: collects race pairs up to [`PAIR_LIMIT`] and counts all of them, so that
//!   a trace with 10^9 lockset pairs still finishes with an exact count.
//! - [`Shadow`] and [`GroupSink`]: the default, grouped mode. Per (variable, location,
//!   kind, thread) the shadow keeps only the accesses no later access of that thread
//!   dominates (a later access with a subset of its lockset races with everything it races
//!   with), and the sink keeps one entry per location pair: its first instance and the
//!   number of racing accesses. Cost per access: the shadow entries of the variable, not the
//!   pairs. [`Pairs`] picks the mode.

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::clock::VectorClock;
use crate::report::{place, place_at, GroupKey, PairKind, RacePair, RaceReport};
use crate::trace::{Event, LocId, LockId, Op, ThreadId, VarId};

/// Lockset id: index into a [`LocksetTable`].
pub type LsId = u32;

/// The bit of a lockset mask ([`LocksetTable::mask`]) for its locks numbered 31 and above.
pub const BIG_LOCKS: u32 = 1 << 31;

/// Thread `t`'s bit in a site's thread summary (`Site::threads`): bit `t` for the first 15
/// threads, bit 15 for all others.
#[inline]
fn thread_bit(t: u32) -> u16 {
    if t < 15 {
        1 << t
    } else {
        1 << 15
    }
}

/// False if a site whose thread summary is `threads` has certainly never had an entry of a
/// thread other than `t` (threads from 15 on share a bit, so never for them).
#[inline]
fn has_other_thread(threads: u16, t: u32) -> bool {
    t >= 15 || threads & !thread_bit(t) != 0
}

/// Lock `l`'s bit in a lockset mask.
#[inline]
fn lock_bit(l: u32) -> u32 {
    if l < 31 {
        1 << l
    } else {
        BIG_LOCKS
    }
}

/// Disjointness of two locksets from their masks `a`, `b`; `slow` decides when both have
/// locks numbered 31 and above and their masks share nothing else.
#[inline(always)]
pub fn masks_disjoint(a: u32, b: u32, slow: impl FnOnce() -> bool) -> bool {
    let m = a & b;
    m == 0 || (m == BIG_LOCKS && slow())
}

/// `A ⊆ B` for two locksets with masks `a`, `b`; `slow` decides when `A` has locks numbered
/// 31 and above and `B` does too.
#[inline(always)]
pub fn masks_subset(a: u32, b: u32, slow: impl FnOnce() -> bool) -> bool {
    a & !b == 0 && (a & BIG_LOCKS == 0 || slow())
}

/// At most this many pairs are stored per report; the rest are only counted (56 bytes per
/// pair: 2^20 pairs are 56 MB).
pub const PAIR_LIMIT: usize = 1 << 20;

/// Interned locksets.
#[derive(Debug)]
pub struct LocksetTable {
    sets: Vec<Box<[u32]>>,
    /// Per set: bit `l` for each lock `l < 31`, [`BIG_LOCKS`] if it has a lock `≥ 31`.
    masks: Vec<u32>,
    index: FxHashMap<Box<[u32]>, LsId>,
    with: FxHashMap<(LsId, u32), LsId>,
    without: FxHashMap<(LsId, u32), LsId>,
    inter: FxHashMap<(LsId, LsId), LsId>,
}

impl Default for LocksetTable {
    fn default() -> Self {
        LocksetTable::new()
    }
}

impl LocksetTable {
    /// The empty lockset.
    pub const EMPTY: LsId = 0;

    pub fn new() -> LocksetTable {
        let mut t = LocksetTable {
            sets: Vec::new(),
            masks: Vec::new(),
            index: FxHashMap::default(),
            with: FxHashMap::default(),
            without: FxHashMap::default(),
            inter: FxHashMap::default(),
        };
        t.intern(Vec::new());
        t
    }

    fn intern(&mut self, locks: Vec<u32>) -> LsId {
        debug_assert!(locks.windows(2).all(|w| w[0] < w[1]));
        let locks = locks.into_boxed_slice();
        if let Some(&id) = self.index.get(&locks) {
            return id;
        }
        let id = self.sets.len() as LsId;
        self.masks
            .push(locks.iter().fold(0, |m, &l| m | lock_bit(l)));
        self.sets.push(locks.clone());
        self.index.insert(locks, id);
        id
    }

    /// The locks of a set, sorted.
    pub fn locks(&self, ls: LsId) -> &[u32] {
        &self.sets[ls as usize]
    }

    /// Number of distinct locksets seen.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// `ls ∪ {lock}`.
    pub fn with(&mut self, ls: LsId, lock: LockId) -> LsId {
        if let Some(&r) = self.with.get(&(ls, lock.0)) {
            return r;
        }
        let mut v = self.sets[ls as usize].to_vec();
        if let Err(i) = v.binary_search(&lock.0) {
            v.insert(i, lock.0);
        }
        let r = self.intern(v);
        self.with.insert((ls, lock.0), r);
        r
    }

    /// `ls \ {lock}`.
    pub fn without(&mut self, ls: LsId, lock: LockId) -> LsId {
        if let Some(&r) = self.without.get(&(ls, lock.0)) {
            return r;
        }
        let mut v = self.sets[ls as usize].to_vec();
        v.retain(|&l| l != lock.0);
        let r = self.intern(v);
        self.without.insert((ls, lock.0), r);
        r
    }

    /// The lockset's mask: bit `l` for each of its locks `l < 31` (exact: the first 31
    /// locks of a trace, all of them in most traces), [`BIG_LOCKS`] if it holds any other.
    /// Two sets whose masks do not meet are disjoint; two whose masks share a bit below
    /// [`BIG_LOCKS`] are not.
    #[inline]
    pub fn mask(&self, ls: LsId) -> u32 {
        self.masks[ls as usize]
    }

    /// `a ∩ b = ∅`.
    #[inline]
    pub fn disjoint(&self, a: LsId, b: LsId) -> bool {
        masks_disjoint(self.mask(a), self.mask(b), || self.disjoint_slow(a, b))
    }

    /// `a ∩ b = ∅` by a merge of the two sorted sets.
    #[cold]
    #[inline(never)]
    pub fn disjoint_slow(&self, a: LsId, b: LsId) -> bool {
        let (x, y) = (&self.sets[a as usize], &self.sets[b as usize]);
        let (mut i, mut j) = (0, 0);
        while i < x.len() && j < y.len() {
            match x[i].cmp(&y[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => return false,
            }
        }
        true
    }

    /// `a ⊆ b`.
    #[inline]
    pub fn subset(&self, a: LsId, b: LsId) -> bool {
        masks_subset(self.mask(a), self.mask(b), || {
            a == b || self.subset_slow(a, b)
        })
    }

    /// `a ⊆ b` by a search of each of `a`'s locks in `b`.
    #[cold]
    #[inline(never)]
    pub fn subset_slow(&self, a: LsId, b: LsId) -> bool {
        let y = &self.sets[b as usize];
        self.sets[a as usize]
            .iter()
            .all(|l| y.binary_search(l).is_ok())
    }

    /// `a ∩ b`.
    pub fn intersect(&mut self, a: LsId, b: LsId) -> LsId {
        if a == b {
            return a;
        }
        if self.disjoint(a, b) {
            return Self::EMPTY;
        }
        let key = (a.min(b), a.max(b));
        if let Some(&r) = self.inter.get(&key) {
            return r;
        }
        let y = &self.sets[b as usize];
        let v: Vec<u32> = self.sets[a as usize]
            .iter()
            .copied()
            .filter(|l| y.binary_search(l).is_ok())
            .collect();
        let r = self.intern(v);
        self.inter.insert(key, r);
        r
    }
}

#[derive(Clone, Debug, Default)]
struct ThreadHold {
    /// (lock, nesting depth), in acquire order of the outermost acquires.
    held: Vec<(u32, u32)>,
    ls: LsId,
}

/// The locks each thread holds (Def. 3.10: `LS(e)` is the set of locks held by `e`'s
/// thread at `e`).
#[derive(Debug, Default)]
pub struct Holdings {
    threads: Vec<ThreadHold>,
    pub table: LocksetTable,
}

impl Holdings {
    pub fn new() -> Holdings {
        Holdings::default()
    }

    #[inline]
    fn thread(&mut self, t: ThreadId) -> &mut ThreadHold {
        if t.index() >= self.threads.len() {
            self.threads.resize(t.index() + 1, ThreadHold::default());
        }
        &mut self.threads[t.index()]
    }

    /// Records `acq(l)` by `t`; true if it opens a critical section (not re-entrant).
    pub fn acquire(&mut self, t: ThreadId, l: LockId) -> bool {
        let th = self.thread(t);
        if let Some(h) = th.held.iter_mut().find(|h| h.0 == l.0) {
            h.1 += 1;
            return false;
        }
        th.held.push((l.0, 1));
        let ls = th.ls;
        let ls = self.table.with(ls, l);
        self.thread(t).ls = ls;
        true
    }

    /// Records `rel(l)` by `t`; true if it closes a critical section (the outermost release).
    /// A release of a lock `t` does not hold (ill-formed input) is ignored and returns false.
    pub fn release(&mut self, t: ThreadId, l: LockId) -> bool {
        let th = self.thread(t);
        let Some(k) = th.held.iter().position(|h| h.0 == l.0) else {
            return false;
        };
        if th.held[k].1 > 1 {
            th.held[k].1 -= 1;
            return false;
        }
        th.held.remove(k);
        let ls = th.ls;
        let ls = self.table.without(ls, l);
        self.thread(t).ls = ls;
        true
    }

    /// The current lockset of `t`.
    #[inline]
    pub fn lockset(&self, t: ThreadId) -> LsId {
        self.threads
            .get(t.index())
            .map_or(LocksetTable::EMPTY, |h| h.ls)
    }

    /// True if `t` holds `l`.
    pub fn holds(&self, t: ThreadId, l: LockId) -> bool {
        self.threads
            .get(t.index())
            .is_some_and(|h| h.held.iter().any(|x| x.0 == l.0))
    }

    /// Number of locks `t` holds.
    #[inline]
    pub fn held_count(&self, t: ThreadId) -> usize {
        self.threads.get(t.index()).map_or(0, |h| h.held.len())
    }

    /// The `k`-th lock `t` holds (`k < held_count(t)`).
    #[inline]
    pub fn held_lock(&self, t: ThreadId, k: usize) -> LockId {
        LockId(self.threads[t.index()].held[k].0)
    }
}

/// One logged access.
#[derive(Clone, Copy, Debug)]
pub struct Access {
    pub index: u64,
    /// Local time of the access in its thread (non-decreasing along the thread).
    pub time: u32,
    pub ls: LsId,
    pub loc: LocId,
}

/// The accesses of one (variable, thread) with one lockset.
#[derive(Clone, Debug, Default)]
struct Group {
    ls: LsId,
    reads: Vec<Access>,
    writes: Vec<Access>,
}

/// Accesses per (variable, thread), grouped by lockset so that groups sharing a lock with
/// the current access are skipped whole (and counting needs no scan).
#[derive(Debug)]
pub struct AccessLog {
    vars: Vec<Vec<Vec<Group>>>,
    /// `Some(k)`: only the last `k` reads and the last `k` writes per (variable, thread,
    /// lockset) are kept and enumerated.
    keep: Option<usize>,
}

impl AccessLog {
    /// `keep = None`: every access; `Some(k)`: the last `k` of each kind per group.
    pub fn new(keep: Option<usize>) -> AccessLog {
        AccessLog {
            vars: Vec::new(),
            keep: keep.map(|k| k.max(1)),
        }
    }

    /// Logs an access of `x` by `t`.
    #[inline]
    pub fn push(&mut self, x: VarId, t: ThreadId, write: bool, a: Access) {
        if x.index() >= self.vars.len() {
            self.vars.resize_with(x.index() + 1, Vec::new);
        }
        let per = &mut self.vars[x.index()];
        if t.index() >= per.len() {
            per.resize_with(t.index() + 1, Vec::new);
        }
        let groups = &mut per[t.index()];
        let g = match groups.iter().position(|g| g.ls == a.ls) {
            Some(g) => g,
            None => {
                groups.push(Group {
                    ls: a.ls,
                    ..Group::default()
                });
                groups.len() - 1
            }
        };
        let g = &mut groups[g];
        let list = if write { &mut g.writes } else { &mut g.reads };
        debug_assert!(list.last().is_none_or(|l| l.time <= a.time));
        list.push(a);
        if let Some(k) = self.keep {
            // Amortised ring: drop the oldest ones once the list doubles.
            if list.len() >= 2 * k + 8 {
                list.drain(..list.len() - k);
            }
        }
    }

    #[inline]
    fn visible<'a>(&self, list: &'a [Access], known: Option<u32>) -> &'a [Access] {
        let list = match self.keep {
            Some(k) if list.len() > k => &list[list.len() - k..],
            _ => list,
        };
        // Times are non-decreasing: the unknown accesses are a suffix.
        let from = known.map_or(0, |k| list.partition_point(|a| a.time <= k));
        &list[from..]
    }

    /// Calls `f(u, access, is_write)` for every logged access of `x` by a thread `u ≠ t`
    /// whose lockset passes `group`, that is not known to `clock` (its time exceeds
    /// `clock(u)`; every access when `clock` is `None`), writes always and reads when
    /// `reads` is set.
    #[inline]
    pub fn for_unordered(
        &self,
        x: VarId,
        t: ThreadId,
        clock: Option<&VectorClock>,
        reads: bool,
        group: impl Fn(LsId) -> bool,
        mut f: impl FnMut(ThreadId, &Access, bool),
    ) {
        let Some(per) = self.vars.get(x.index()) else {
            return;
        };
        for (u, groups) in per.iter().enumerate() {
            if u == t.index() {
                continue;
            }
            let u = ThreadId(u as u32);
            let known = clock.map(|c| c.get(u));
            for g in groups.iter().filter(|g| group(g.ls)) {
                for a in self.visible(&g.writes, known) {
                    f(u, a, true);
                }
                if reads {
                    for a in self.visible(&g.reads, known) {
                        f(u, a, false);
                    }
                }
            }
        }
    }

    /// The number of accesses [`for_unordered`](Self::for_unordered) would visit, in
    /// `O(threads × groups × log)`.
    pub fn count_unordered(
        &self,
        x: VarId,
        t: ThreadId,
        clock: Option<&VectorClock>,
        reads: bool,
        group: impl Fn(LsId) -> bool,
    ) -> u64 {
        let Some(per) = self.vars.get(x.index()) else {
            return 0;
        };
        let mut n = 0;
        for (u, groups) in per.iter().enumerate() {
            if u == t.index() {
                continue;
            }
            let known = clock.map(|c| c.get(ThreadId(u as u32)));
            for g in groups.iter().filter(|g| group(g.ls)) {
                n += self.visible(&g.writes, known).len() as u64;
                if reads {
                    n += self.visible(&g.reads, known).len() as u64;
                }
            }
        }
        n
    }

    /// Enumerates (or, once `sink` is full, counts) the unordered accesses with a lockset
    /// disjoint from `ls` into `sink` as pairs with the current event.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn pairs_into(
        &self,
        sink: &mut PairSink,
        table: &LocksetTable,
        ls: LsId,
        clock: Option<&VectorClock>,
        reads: bool,
        index: u64,
        ev: &Event,
    ) {
        let (x, t) = (ev.var(), ev.thread);
        let group = |g: LsId| table.disjoint(g, ls);
        if sink.pairs.len() >= PAIR_LIMIT {
            sink.total += self.count_unordered(x, t, clock, reads, group);
        } else {
            self.for_unordered(x, t, clock, reads, group, |u, a, aw| {
                sink.add(x, u, a, aw, index, ev)
            });
        }
    }
}

/// Collects pairs up to [`PAIR_LIMIT`], counting all.
#[derive(Debug, Default)]
pub struct PairSink {
    pub pairs: Vec<RacePair>,
    pub total: u64,
}

impl PairSink {
    /// Adds the pair (earlier logged access `a` of `x` by `u`, current event `second`).
    #[inline]
    pub fn add(
        &mut self,
        x: VarId,
        u: ThreadId,
        a: &Access,
        a_write: bool,
        second: u64,
        ev: &Event,
    ) {
        self.total += 1;
        if self.pairs.len() < PAIR_LIMIT {
            self.push_cold(x, u, a, a_write, second, ev);
        }
    }

    #[cold]
    #[inline(never)]
    fn push_cold(
        &mut self,
        x: VarId,
        u: ThreadId,
        a: &Access,
        a_write: bool,
        second: u64,
        ev: &Event,
    ) {
        let op = if a_write { Op::Write } else { Op::Read };
        let first = Event::new(u, op, x.0, a.loc);
        self.pairs.push(RacePair::new(a.index, first, second, *ev));
    }

    /// Adds a pair of two known events.
    #[inline]
    pub fn add_events(&mut self, first: u64, first_ev: Event, second: u64, second_ev: Event) {
        self.total += 1;
        if self.pairs.len() < PAIR_LIMIT {
            self.pairs
                .push(RacePair::new(first, first_ev, second, second_ev));
        }
    }

    /// Moves the pairs into `report` (sorted) with the count and a note if truncated.
    #[cold]
    #[inline(never)]
    pub fn into_report(&mut self, report: &mut RaceReport) {
        report.pairs = std::mem::take(&mut self.pairs);
        report.normalize();
        report
            .extra
            .insert("pairs_total".into(), serde_json::Value::from(self.total));
        if self.total > report.pairs.len() as u64 {
            report.notes.push(format!(
                "pair limit reached: {} of {} pairs listed (the first found in trace order)",
                report.pairs.len(),
                self.total
            ));
        }
    }
}

/// Race pairs grouped by location pair: per group (first location, second location, kind;
/// [`GroupKey`], so by variable too where a location is missing)
/// its first instance — earliest second event, then latest first event (as
/// [`RaceReport::location_groups`] defines it) — and its number of racing accesses
/// (distinct second events).
#[derive(Debug, Default)]
pub struct GroupSink {
    /// Per group: what a hit reads and writes (only a site pair's first, unless
    /// [`GroupSink::other_way`]). Apart from the first instances, so that
    /// the counters of the usual number of groups stay in the first-level cache (the first
    /// instances with them were 72 bytes a group, and the counter's load the costliest of a
    /// `lockset` access on the generated 10^7-event trace).
    counts: Vec<GroupCount>,
    /// Per group: its first instance (set at its first hit).
    firsts: Vec<RacePair>,
    index: FxHashMap<GroupKey, u32>,
    /// The sites' group caches ([`Site`]'s `groups`): blocks of a length, then per site of
    /// the variable its group (`u32::MAX`: not known yet) and the site pair's counter
    /// ([`GroupSink::hit_pair`]). A variable that gains sites gets a longer block; the old
    /// one is left behind, counting nothing (sites are few and rarely added late).
    cache: Vec<u32>,
    /// Groups are hit another way too (W3PO's write-read pairs), so not only by a check that
    /// hits each site once per access: every hit goes to the group, none to a pair counter.
    other_way: bool,
}

#[derive(Clone, Copy, Debug)]
struct GroupCount {
    count: u64,
    /// The second event counted last (a second event counts once per group).
    last: u64,
}

impl GroupSink {
    /// The group cached at block `block` (a site's `groups`) for site `s`, `u32::MAX` if none.
    #[inline]
    fn cached(&self, block: u32, s: usize) -> u32 {
        self.pair_at(block, s).map_or(u32::MAX, |i| self.cache[i])
    }

    /// Where block `block` (a site's `groups`) keeps site `s`'s group (its counter follows),
    /// if the block reaches `s`.
    #[inline(always)]
    fn pair_at(&self, block: u32, s: usize) -> Option<usize> {
        (block != NIL && s < self.cache[block as usize] as usize)
            .then_some(block as usize + 1 + 2 * s)
    }

    /// [`GroupSink::hit`] for a check that hits each site once (`Shadow`), through the
    /// counter of the site pair (`block`, `s`) when the pair has had its first hit: no look at
    /// the group's counter. Returns false (nothing counted) when the pair has no group cached
    /// or no first hit yet; the caller then hits the group ([`hit_site`]).
    #[inline(always)]
    fn hit_pair(&mut self, block: u32, s: usize) -> bool {
        let Some(i) = self.pair_at(block, s).filter(|_| !self.other_way) else {
            return false;
        };
        let local = &mut self.cache[i + 1];
        if *local == 0 || *local == u32::MAX {
            return false; // no first hit yet, or the counter is full
        }
        *local += 1;
        true
    }

    /// Marks the site pair (`block`, `s`), whose group has just been hit, as hit: later hits
    /// count in the pair's counter ([`GroupSink::hit_pair`]).
    #[inline]
    fn pair_hit(&mut self, block: u32, s: usize) {
        if let Some(i) = self.pair_at(block, s) {
            self.cache[i + 1] = self.cache[i + 1].max(1);
        }
    }

    /// Adds the site pairs' counters to their groups' (1 marks a first hit, counted in the
    /// group already).
    fn settle_pairs(&mut self) {
        let mut at = 0;
        while at < self.cache.len() {
            let n = self.cache[at] as usize;
            for s in 0..n {
                let (g, local) = (self.cache[at + 1 + 2 * s], self.cache[at + 2 + 2 * s]);
                if local > 1 {
                    self.counts[g as usize].count += u64::from(local - 1);
                }
            }
            at += 1 + 2 * n;
        }
    }

    /// Caches group `g` for site `s` in `block` (a site's `groups`, of a variable with `n`
    /// sites), making or lengthening the block.
    #[cold]
    fn cache(&mut self, block: &mut u32, n: usize, s: usize, g: u32) {
        if *block == NIL || s >= self.cache[*block as usize] as usize {
            let at = self.cache.len();
            self.cache.push(n as u32);
            for _ in 0..n {
                self.cache.extend([u32::MAX, 0]);
            }
            if *block != NIL {
                // The old block's groups and counters move; it is left counting nothing.
                let (old, len) = (*block as usize, self.cache[*block as usize] as usize);
                self.cache.copy_within(old + 1..old + 1 + 2 * len, at + 1);
                for k in 0..len {
                    self.cache[old + 2 + 2 * k] = 0;
                }
            }
            *block = u32::try_from(at).expect("group cache under 2^32 entries");
        }
        self.cache[*block as usize + 1 + 2 * s] = g;
    }

    /// The group of (a `first_write` access at `first_loc`, `second`), created if new.
    #[inline]
    pub fn group_of(&mut self, first_loc: LocId, first_write: bool, second: &Event) -> u32 {
        let kind = match (first_write, second.is_write()) {
            (true, true) => PairKind::WriteWrite,
            (true, false) => PairKind::WriteRead,
            (false, _) => PairKind::ReadWrite,
        };
        // Both accesses are to `second`'s variable.
        let key = (place_at(first_loc, second.target), place(second), kind);
        if let Some(&g) = self.index.get(&key) {
            return g;
        }
        self.new_group(key)
    }

    #[cold]
    #[inline(never)]
    fn new_group(&mut self, key: GroupKey) -> u32 {
        let g = self.counts.len() as u32;
        self.counts.push(GroupCount {
            count: 0,
            last: u64::MAX,
        });
        // Set by the first hit.
        self.firsts
            .push(RacePair::new(0, Event::write(0, 0), 1, Event::write(0, 0)));
        self.index.insert(key, g);
        g
    }

    /// True if group `g`'s first instance is not found yet or is found at `second` (then a
    /// later first event replaces it).
    #[inline]
    pub fn open(&self, g: u32, second: u64) -> bool {
        self.counts[g as usize].count == 0 || self.firsts[g as usize].second == second
    }

    /// Records the pair (`first`, `second`) of group `g`; `first_event` makes the first
    /// event, which only the first instance needs.
    #[inline(always)]
    pub fn hit(
        &mut self,
        g: u32,
        first: u64,
        first_event: impl FnOnce() -> Event,
        second: u64,
        ev: &Event,
    ) {
        let a = &mut self.counts[g as usize];
        if a.last != second && a.count != 0 {
            // The usual hit: a second event not counted yet, the first instance found.
            a.count += 1;
            a.last = second;
            return;
        }
        self.hit_rare(g, first, first_event(), second, ev);
    }

    /// [`GroupSink::hit`] of a second event counted already, or the group's first.
    #[cold]
    #[inline(never)]
    fn hit_rare(&mut self, g: u32, first: u64, first_event: Event, second: u64, ev: &Event) {
        let a = &mut self.counts[g as usize];
        let pair = &mut self.firsts[g as usize];
        if a.last == second {
            // Counted; at its discovery the latest first event is the first instance.
            if pair.second == second && first > pair.first {
                *pair = RacePair::new(first, first_event, second, *ev);
            }
            return;
        }
        // The first hit (`count == 0`).
        *pair = RacePair::new(first, first_event, second, *ev);
        a.count = 1;
        a.last = second;
    }

    /// Moves the groups into `report` (grouped: one pair per group, with its count).
    #[cold]
    #[inline(never)]
    pub fn into_report(&mut self, report: &mut RaceReport) {
        self.settle_pairs();
        let (counts, firsts) = (
            std::mem::take(&mut self.counts),
            std::mem::take(&mut self.firsts),
        );
        (report.pairs, report.group_counts) = counts
            .into_iter()
            .zip(firsts)
            .filter(|(a, _)| a.count > 0)
            .map(|(a, pair)| (pair, a.count))
            .unzip();
        report.normalize();
        report.notes.push(
            "grouped by location pair: each line counts the racing accesses (second events) \
             of its location pair and shows its first instance; --all-pairs lists every pair"
                .into(),
        );
    }
}

/// One shadow entry: an access in its site's log ([`Shadow`]; dominated ones stay until the
/// log is pruned).
#[derive(Clone, Copy, Debug)]
struct ShadowEntry {
    ls: LsId,
    /// The access's local time (0 in a clockless shadow).
    time: u32,
    index: u64,
    thread: u32,
    /// The lockset's [`LocksetTable::mask`]: entries whose mask misses the current
    /// access's are disjoint from it without a look at the table.
    mask: u32,
}

/// The accesses of one variable at one (location, kind): `E` is what the log keeps of them
/// ([`Shadow`]: its entries; [`HistoryLog`] keeps them elsewhere).
#[derive(Clone, Debug)]
struct Site<E> {
    loc: LocId,
    write: bool,
    /// [`Shadow`]: the threads that have had entries here ([`thread_bit`]; a superset of
    /// the threads of the entries, kept with one `|` per push), so that a check skips a
    /// site only its own thread has used: on real traces most variables are thread-local
    /// (on dacapo_lusearch_q2_t2 `lockset` took 1.36 s instead of 1.55 s from binary). In
    /// the padding after `write`.
    threads: u16,
    /// [`Shadow`] without clocks: the threads that have had an entry with the empty lockset
    /// here ([`thread_bit`]). Such an entry is dominated only by later ones with the empty
    /// lockset too, of its thread or of two threads, so the log always keeps an entry with
    /// the empty lockset of a thread other than any `t` whose bit is not the only one: every
    /// access of `t` races with it (when one of the two is a write), and a check that only
    /// has to count the pair ([`GroupSink::hit_pair`]) need not scan the log (on the
    /// generated traces, most checks).
    empty: u16,
    /// Every thread's entries in one vector, in time order (so the latest racing entry is
    /// the last one that races: a scan from the back stops there). The first entry is
    /// inline: most sites have one (on dacapo_lusearch_q2_t2, with 2.4·10^6 sites,
    /// a vector per thread and site took half of the memory).
    entries: E,
    /// Where [`GroupSink`]'s cache keeps, per site of the variable (by position), the group
    /// of (that site, this one); [`NIL`] until a first pair. Only sites of variables that
    /// several threads touch ever have one (0.2% of the sites an access looked at on
    /// dacapo_lusearch_q2_t2), so 4 bytes here instead of an inline vector (24 bytes a
    /// site, 41–52 MB there).
    groups: u32,
}

/// A site of [`Shadow`].
type ShadowSite = Site<SmallVec<[ShadowEntry; 1]>>;

/// One variable of [`Shadow`].
#[derive(Clone, Debug, Default)]
struct VarShadow {
    /// The threads that have accessed the variable ([`thread_bit`]): a check of an access
    /// whose thread is the only one skips the variable's sites (most variables of real
    /// programs are thread-local: on dacapo_lusearch_q2_t2 only 0.2% of the sites an access
    /// looked at had another thread's entries, and looking was a quarter of `lockset`'s
    /// time). It costs 8 bytes a variable (10 MB on that trace).
    threads: u16,
    /// The first two sites inline (one cache miss less per access: on the generated
    /// 10^7-event trace, whose variables have two sites each, `lockset` took 0.54 s instead
    /// of 0.58 s, and 0.97 s instead of 1.05 s on dacapo_lusearch_q2_t2, whose variables have
    /// 1.9 on average; the price is memory: 358 MB instead of 312 MB there).
    sites: SmallVec<[ShadowSite; 2]>,
}

/// Bounded shadow memory for grouped pair reports.
///
/// An access `e` of thread `u` races with a later access `f` of thread `t` (for the
/// analyses of this family) iff `u ≠ t`, one is a write, their locksets are disjoint and
/// `e` is unknown to `f` (its time exceeds `f`'s clock entry for `u`; no clock for
/// `lockset`). If a later access `e'` of `u` at the same (location, kind) has a lockset
/// `⊆ LS(e)`, it races with every access `e` races with (it is later, so unknown whenever
/// `e` is; its lockset is smaller), and it is the later one: `e'` *dominates* `e`. Without
/// clocks (`lockset`, [`Shadow::check_push_without_clock`]) two later accesses of two
/// different threads with locksets `⊆ LS(e)` dominate `e` too: a later `f` that races with
/// `e` races with the one whose thread is not `f`'s.
///
/// So the latest access of a site that races with `f` is never dominated, and any log of
/// the site's accesses that keeps every undominated one finds it: per (variable, location,
/// kind) the shadow keeps such a log, and every location pair that has a racing instance
/// at some second event `f` is found at `f`, with the latest racing first event — exactly
/// the groups, first instances and racing-access counts of the exhaustive report grouped
/// by location pair.
///
/// A site's log is in time order, whatever the thread: a check scans it from the newest
/// entry and stops at the first that races. A push appends (or, when the newest entry is
/// its thread's with a lockset `⊇` the access's, which it dominates, takes its place); only
/// a full log is pruned of its dominated entries (`Pruner`), and it grows only when the
/// undominated entries fill more than three quarters of it (then to twice its size). So a
/// log is pruned at most once per quarter of its room in pushes, and its room is at most
/// 8/3 of the most undominated entries it has had.
/// (Dropping the dominated entries at every push instead, as the shadow did before, passed
/// over the whole log each time: 18 entries per push for `tsan-hybrid` on the generated
/// 10^7-event trace. Keeping a contiguous run per thread made a push find its run, shift
/// the entries after it, and a check scan every entry for the latest.)
#[derive(Debug, Default)]
pub struct Shadow {
    vars: Vec<VarShadow>,
    /// Pushes are clockless ([`Shadow::check_push_without_clock`]): the domination rule.
    clockless: bool,
    /// Checks so far, and those of variables that other threads had accessed (which look
    /// at the sites' entries).
    checks: u64,
    shared: u64,
    pruner: Box<Pruner>,
}

impl Shadow {
    pub fn new() -> Shadow {
        Shadow::default()
    }

    /// The access's check without a clock, then its push, for a shadow that only
    /// takes clockless pushes (`lockset`), whose logs drop entries dominated across threads
    /// too; a shadow takes either these or [`Shadow::check_push`], never both.
    #[inline(always)]
    pub fn check_push_without_clock(
        &mut self,
        sink: &mut GroupSink,
        table: &LocksetTable,
        ls: LsId,
        reads: bool,
        index: u64,
        ev: &Event,
    ) {
        self.check_and_log::<true>(sink, table, ls, None, 0, reads, index, ev);
    }

    /// Reports into `sink` the location pairs of the current access `ev` (lockset `ls`) with
    /// the earlier accesses of its variable not known to `clock` (writes, and reads when
    /// `reads` is set), then logs the access at local time `time` (`tsan-hybrid`, `w3po`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn check_push(
        &mut self,
        sink: &mut GroupSink,
        table: &LocksetTable,
        ls: LsId,
        clock: &VectorClock,
        time: u32,
        reads: bool,
        index: u64,
        ev: &Event,
    ) {
        self.check_and_log::<false>(sink, table, ls, Some(clock), time, reads, index, ev);
    }

    /// The access's check, then its push at the site the check found (one lookup of the
    /// variable and the site for both): reports into `sink` the location pairs of the
    /// current access `ev` (lockset `ls`, clock `clock`, every access when `None`) with the
    /// earlier accesses of its variable (writes, and reads when `reads` is set), then logs
    /// the access at local time `time`; `CLOCKLESS` (with no clock): the domination rule of
    /// clockless shadows. Always inlined, so that `lockset`'s
    /// [`Shadow::check_push_without_clock`] has no clock test left (a call for the check,
    /// then a second lookup for the push, made it 7% slower on the generated trace and 12%
    /// on dacapo_lusearch_q2_t2).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn check_and_log<const CLOCKLESS: bool>(
        &mut self,
        sink: &mut GroupSink,
        table: &LocksetTable,
        ls: LsId,
        clock: Option<&VectorClock>,
        time: u32,
        reads: bool,
        index: u64,
        ev: &Event,
    ) {
        let x = ev.var().index();
        if x >= self.vars.len() {
            self.vars.resize_with(x + 1, VarShadow::default);
        }
        if CLOCKLESS {
            self.clockless = true;
        }
        let var = &mut self.vars[x];
        let me = site_of(&mut var.sites, ev);
        // One look at where the sites are (inline or on the heap), not one per use.
        let sites = var.sites.as_mut_slice();
        // The push below reads this site's newest entry: ask for it now.
        prefetch(newest(&sites[me].entries));
        let t = ev.thread.0;
        let mask = table.mask(ls);
        self.checks += 1;
        // Unless no other thread has accessed the variable.
        if has_other_thread(var.threads, t) {
            self.shared += 1;
            for s in 0..sites.len() {
                let site = &sites[s];
                if !site.write && !reads {
                    continue;
                }
                if !has_other_thread(site.threads, t) {
                    continue; // only the access's thread's entries
                }
                if clock.is_none()
                    && site.empty & !thread_bit(t) != 0
                    && sink.hit_pair(sites[me].groups, s)
                {
                    continue; // an entry races (see `Site::empty`), and the pair only counts
                }
                // (No group is settled yet: each site of the variable is a different location
                // pair of this access, and this is the first look at each.)
                if let Some(e) = latest_racing(site, t, ls, mask, clock, table) {
                    let (u, first) = (ThreadId(e.thread), e.index);
                    hit_site::<_, true>(sink, sites, me, s, u, first, index, ev);
                }
            }
        }
        var.threads |= thread_bit(t);
        let entry = ShadowEntry {
            ls,
            time,
            index,
            thread: t,
            mask,
        };
        log_access::<CLOCKLESS>(&mut sites[me], &mut self.pruner, table, entry);
    }

    /// True when most checks so far looked at entries of other threads (the generated
    /// traces): then asking for the next accesses' variables and entries ahead pays. On real
    /// traces most variables are thread-local and the shadow is large, and asking ahead
    /// costs more than it saves (asking always, `lockset` took 3.3 s of CPU instead of 2.4 s
    /// on dacapo_lusearch_q2_t2 from binary: means of the lowest third of nine runs).
    #[inline]
    pub fn wants_prefetch(&self) -> bool {
        2 * self.shared > self.checks
    }

    /// Asks the cache for the variable of the access `ev`, two events ahead (its sites are
    /// inline: the first two come with it).
    #[inline]
    pub fn prefetch_var(&self, ev: &Event) {
        if let Some(var) = self.vars.get(ev.var().index()) {
            let p = var as *const VarShadow as *const u8;
            prefetch(p);
            prefetch(p.wrapping_add(64));
        }
    }

    /// Asks the cache for the newest entry of each site of the variable of the access `ev`,
    /// the next event, where its check starts (the variable itself is asked for by
    /// [`Shadow::prefetch_var`] an event earlier).
    #[inline]
    pub fn prefetch_entries(&self, ev: &Event) {
        if let Some(var) = self.vars.get(ev.var().index()) {
            for site in var.sites.iter() {
                prefetch(newest(&site.entries));
            }
        }
    }

    /// The undominated entries: prunes every log (the figure `shadow_entries`, which does
    /// not depend on when logs were pruned).
    #[cold]
    pub fn undominated(&mut self, table: &LocksetTable) -> usize {
        let clockless = self.clockless;
        let mut n = 0;
        for var in &mut self.vars {
            for site in var.sites.iter_mut() {
                let kept = self.pruner.prune_by(
                    clockless,
                    site.entries.as_mut_slice(),
                    site.threads,
                    table,
                );
                site.entries.truncate(kept);
                n += kept;
            }
        }
        n
    }
}

/// The latest entry of `site` that races with an access of thread `t` with lockset `ls`
/// (mask `mask`) and clock `clock` (every entry unknown when `None`): another thread's, not
/// known to the access, with a disjoint lockset. The latest, because the first instance
/// takes it while the group's first instance may still change (any one would do
/// otherwise): entries are in time order, so the scan goes from the newest, and the latest
/// racing one is never dominated, so never pruned.
///
/// With a clock, the scan also stops once it has met an entry known to the access of every
/// other thread with entries here: a thread's older entries are known too (for `w3po` most
/// are, and a scan of the whole log was most of its time). Threads from 15 on share a bit
/// of `threads`: never once one has entries here.
#[inline(always)]
fn latest_racing<'a>(
    site: &'a ShadowSite,
    t: u32,
    ls: LsId,
    mask: u32,
    clock: Option<&VectorClock>,
    table: &LocksetTable,
) -> Option<&'a ShadowEntry> {
    let high = site.threads & thread_bit(15) != 0;
    // The other threads with entries not met known yet.
    let mut pending = if high {
        0
    } else {
        site.threads & !thread_bit(t)
    };
    for e in site.entries.iter().rev() {
        if e.thread == t {
            continue;
        }
        if let Some(c) = clock {
            if e.time <= c.get(ThreadId(e.thread)) {
                pending &= !thread_bit(e.thread);
                if pending == 0 && !high {
                    return None;
                }
                continue;
            }
        }
        if masks_disjoint(e.mask, mask, || table.disjoint_slow(e.ls, ls)) {
            return Some(e);
        }
    }
    None
}

/// Where the newest entry of a log is (for [`prefetch`]; any address when it is empty).
#[inline(always)]
fn newest(entries: &SmallVec<[ShadowEntry; 1]>) -> *const u8 {
    entries.as_ptr().wrapping_add(entries.len().wrapping_sub(1)) as *const u8
}

/// Logs `entry` (the access, [`Shadow::check_push`]) at `site`; `CLOCKLESS`: the domination rule
/// of clockless shadows.
#[inline(always)]
fn log_access<const CLOCKLESS: bool>(
    site: &mut ShadowSite,
    pruner: &mut Pruner,
    table: &LocksetTable,
    entry: ShadowEntry,
) {
    let bit = thread_bit(entry.thread);
    if CLOCKLESS {
        site.empty |= bit & u16::from(entry.mask == 0).wrapping_neg();
    }
    let entries = &mut site.entries;
    // One look at where the entries are (inline or on the heap), not one per use.
    let v = entries.as_mut_slice();
    // The usual case: the newest entry is the thread's, with a lockset that holds the
    // access's. The access dominates it (and whatever it dominated): it takes its place
    // (the site's thread summary has its thread already).
    if let Some(last) = v.last_mut() {
        if last.thread == entry.thread
            && masks_subset(entry.mask, last.mask, || {
                table.subset_slow(entry.ls, last.ls)
            })
        {
            *last = entry;
            return;
        }
    }
    site.threads |= bit;
    let threads = site.threads;
    if entries.len() == entries.capacity() {
        pruner.make_room::<CLOCKLESS>(entries, threads, table);
    }
    entries.push(entry);
}

/// Threads with a bucket in [`Pruner`] (the others' entries are compared with every later
/// entry).
const BUCKETS: usize = 16;
/// Masks per bucket.
const SLOTS: usize = 8;

/// Prunes the logs of a [`Shadow`]: drops the dominated entries. An entry is dominated when
/// a later access of its thread has a lockset `⊆` its own or, for a clockless shadow, two
/// later accesses of two other threads do.
///
/// The later accesses are looked for among the later entries the pass keeps: a dominated
/// access (here or pruned before) always leaves a later, kept one of the same thread with a
/// lockset `⊆` its own, or is dominated together with every entry it would count for (its
/// dominators' locksets are smaller still, and cover its thread or two threads).
///
/// With clocks only a thread's own later entries count, so the pass keeps the masks of the
/// kept entries of each of the first [`BUCKETS`] threads in a bucket of [`SLOTS`] (unused
/// slots all ones, so never `⊆` an exact mask): an entry is then compared with its thread's
/// few, in one vector operation, without a branch (on the generated 10^7-event trace
/// `tsan-hybrid`'s logs hold about 18 entries of 8 threads, and which are dominated is as
/// good as random). Without clocks a log holds few entries (5.5 there), most of them are
/// dominated by one of the first later ones, and the search stops there.
#[derive(Debug)]
struct Pruner {
    masks: [[u32; SLOTS]; BUCKETS],
    len: [u8; BUCKETS],
}

impl Default for Pruner {
    fn default() -> Self {
        Pruner {
            masks: [[u32::MAX; SLOTS]; BUCKETS],
            len: [0; BUCKETS],
        }
    }
}

impl Pruner {
    /// Prunes a full log and doubles its room if the undominated entries fill more than
    /// three quarters of it (exactly: most sites keep one or two entries, and `Vec` would
    /// make room for four). More room would make `w3po`'s checks, which mostly scan a whole
    /// log, longer; less would prune more often.
    #[cold]
    #[inline(never)]
    fn make_room<const CLOCKLESS: bool>(
        &mut self,
        entries: &mut SmallVec<[ShadowEntry; 1]>,
        threads: u16,
        table: &LocksetTable,
    ) {
        let cap = entries.capacity();
        let kept = self.prune::<CLOCKLESS>(entries.as_mut_slice(), threads, table);
        entries.truncate(kept);
        if 4 * kept > 3 * cap {
            entries.reserve_exact(2 * cap - kept);
        }
    }

    /// [`Pruner::prune`] with the domination rule chosen at run time.
    fn prune_by(
        &mut self,
        clockless: bool,
        v: &mut [ShadowEntry],
        threads: u16,
        table: &LocksetTable,
    ) -> usize {
        if clockless {
            self.prune::<true>(v, threads, table)
        } else {
            self.prune::<false>(v, threads, table)
        }
    }

    /// Drops the dominated entries of a site's log `v` (in time order; `threads`: the site's
    /// thread summary, [`Site`]'s `threads`); keeps the others at the front, in order;
    /// returns how many.
    fn prune<const CLOCKLESS: bool>(
        &mut self,
        v: &mut [ShadowEntry],
        threads: u16,
        table: &LocksetTable,
    ) -> usize {
        let n = v.len();
        // The kept entries, newest last, gather at the back: `v[w..]`. Without a branch on
        // whether an entry stays: each is written below the kept ones, where the next
        // overwrites it unless it stays (`w - 1 ≥ k`: `v[k]` is read).
        let mut w = n;
        if CLOCKLESS {
            // The thread (from 0 to 63) with a later kept entry of the empty lockset, if any:
            // it dominates any entry of its thread with no look at the later entries (most
            // entries of the generated 10^7-event trace have the empty lockset). With two
            // such threads every earlier entry is dominated (by its thread's, or by both):
            // the pass stops.
            let mut empty = 0u64;
            for k in (0..n).rev() {
                let e = v[k];
                let bit = 1u64.checked_shl(e.thread).unwrap_or(0);
                let dominated = empty & bit != 0 || dominated::<true>(&v[w..], &e, table);
                v[w - 1] = e;
                w -= usize::from(!dominated);
                if !dominated && e.mask == 0 {
                    empty |= bit;
                    if empty.count_ones() >= 2 {
                        break;
                    }
                }
            }
        } else {
            // Threads whose bucket is used; `u16` holds `BUCKETS` bits.
            let mut used = 0u16;
            // Threads whose kept entries overflowed their bucket.
            let mut full = 0u16;
            // Threads (from 0 to 63) with a later kept entry of the empty lockset, which
            // dominates every earlier entry of its thread; once every thread of the log has
            // one, the pass stops (on the generated 10^7-event trace `tsan-hybrid`'s logs
            // are mostly such entries and the dominated entries older than them).
            let mut empty = 0u64;
            // The threads of the log, if all are below 15 (else 0: not known).
            let all = if threads & thread_bit(15) == 0 {
                u64::from(threads)
            } else {
                0
            };
            for k in (0..n).rev() {
                let e = v[k];
                let bit = 1u64.checked_shl(e.thread).unwrap_or(0);
                if empty & bit != 0 {
                    continue; // dominated: not kept, and no mask for the buckets
                }
                if e.mask == 0 {
                    // Kept (the empty lockset is dominated only by its thread's later empty
                    // lockset, and there is none).
                    empty |= bit;
                }
                let t = e.thread as usize;
                let exact = t < BUCKETS && e.mask & BIG_LOCKS == 0 && full & (1 << t) == 0;
                let dominated = if exact {
                    // `m ⊆ e.mask` for a mask of the bucket; an unused slot never is.
                    let b = &self.masks[t];
                    b.iter().fold(false, |d, &m| d | (m & !e.mask == 0))
                } else {
                    dominated::<false>(&v[w..], &e, table)
                };
                v[w - 1] = e;
                w -= usize::from(!dominated);
                if t < BUCKETS {
                    used |= 1 << t;
                    let slot = usize::from(self.len[t]);
                    if slot < SLOTS {
                        // The mask if kept; the unused slot's ones if not.
                        self.masks[t][slot] = if dominated { u32::MAX } else { e.mask };
                        self.len[t] += u8::from(!dominated);
                    } else if !dominated {
                        full |= 1 << t;
                    }
                }
                if empty == all && all != 0 {
                    break; // every earlier entry is dominated
                }
            }
            // Empty the used buckets.
            while used != 0 {
                let t = used.trailing_zeros() as usize;
                used &= used - 1;
                self.masks[t] = [u32::MAX; SLOTS];
                self.len[t] = 0;
            }
        }
        v.copy_within(w.., 0);
        n - w
    }
}

/// True if the later entries `later` dominate entry `e` ([`Pruner`]), with the locksets
/// compared when their masks do not decide, stopping at the first dominating entry (or pair
/// of entries).
#[inline(always)]
fn dominated<const CLOCKLESS: bool>(
    later: &[ShadowEntry],
    e: &ShadowEntry,
    table: &LocksetTable,
) -> bool {
    let mut other = None;
    for g in later {
        if !masks_subset(g.mask, e.mask, || table.subset_slow(g.ls, e.ls)) {
            continue;
        }
        if g.thread == e.thread {
            return true;
        }
        if CLOCKLESS {
            match other {
                None => other = Some(g.thread),
                Some(u) if u != g.thread => return true,
                Some(_) => {}
            }
        }
    }
    false
}

/// Records in `sink` the pair of an access of thread `u` at site `s` (event `first`) and
/// the current access `ev` (event `index`, at site `me`); returns the pair's group (`NIL`
/// when `ONCE` counted it in the site pair's counter). Always inlined, with the first pair
/// of a location pair out of line (`lockset` calls it for nearly every check of the
/// generated 10^7-event trace).
///
/// `ONCE`: the check hits each site at most once per access (`Shadow`). After the first hit
/// of the site pair (`me`, `s`), which goes to the group (its count and first instance),
/// the pair's own counter counts, without a look at the group ([`GroupSink::hit_pair`]).
/// Exact: the later hits' second events are later than the group's first instance's, and
/// no other pair counts the same second event in the same group (a second event has one
/// variable, whose sites pair with it in distinct groups).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn hit_site<E, const ONCE: bool>(
    sink: &mut GroupSink,
    sites: &mut [Site<E>],
    me: usize,
    s: usize,
    u: ThreadId,
    first: u64,
    index: u64,
    ev: &Event,
) -> u32 {
    if ONCE && sink.hit_pair(sites[me].groups, s) {
        return NIL;
    }
    let (loc, write) = (sites[s].loc, sites[s].write);
    let g = match sink.cached(sites[me].groups, s) {
        u32::MAX => first_group(sink, sites, me, s, ev),
        g => g,
    };
    let op = if write { Op::Write } else { Op::Read };
    sink.hit(g, first, || Event::new(u, op, ev.target, loc), index, ev);
    if ONCE {
        sink.pair_hit(sites[me].groups, s);
    }
    g
}

/// [`hit_site`]'s group when site `me` has not cached it for site `s` yet.
#[cold]
#[inline(never)]
fn first_group<E>(
    sink: &mut GroupSink,
    sites: &mut [Site<E>],
    me: usize,
    s: usize,
    ev: &Event,
) -> u32 {
    let g = sink.group_of(sites[s].loc, sites[s].write, ev);
    let n = sites.len();
    sink.cache(&mut sites[me].groups, n, s, g);
    g
}

/// [`site_of`] for an access of variable `x` whose check found site `cur.1` of variable
/// `cur.0`: that site again without a search when it is the access's.
#[inline]
fn site_of_cached<E: Default, A: smallvec::Array<Item = Site<E>>>(
    sites: &mut SmallVec<A>,
    cur: (usize, usize),
    x: usize,
    ev: &Event,
) -> usize {
    match cur {
        (y, me)
            if y == x
                && sites
                    .get(me)
                    .is_some_and(|s| s.loc == ev.loc && s.write == ev.is_write()) =>
        {
            me
        }
        _ => site_of(sites, ev),
    }
}

/// The position of `ev`'s (location, kind) among `sites`, added if new. The search is
/// always inlined, the addition is not.
#[inline(always)]
fn site_of<E: Default, A: smallvec::Array<Item = Site<E>>>(
    sites: &mut SmallVec<A>,
    ev: &Event,
) -> usize {
    let (loc, write) = (ev.loc, ev.is_write());
    if let Some(i) = sites.iter().position(|s| s.loc == loc && s.write == write) {
        return i;
    }
    new_site(sites, ev)
}

/// Adds `ev`'s (location, kind) to `sites`; returns its position.
#[cold]
#[inline(never)]
fn new_site<E: Default, A: smallvec::Array<Item = Site<E>>>(
    sites: &mut SmallVec<A>,
    ev: &Event,
) -> usize {
    let (loc, write) = (ev.loc, ev.is_write());
    // Exact growth: most variables have a site or two, and `Vec`'s first allocation holds
    // four (224 bytes per variable, most of the shadow on dacapo_lusearch_q2_t2).
    sites.reserve_exact(1);
    sites.push(Site {
        loc,
        write,
        threads: 0,
        empty: 0,
        entries: E::default(),
        groups: NIL,
    });
    sites.len() - 1
}

/// No class or entry (end of a list).
const NIL: u32 = u32::MAX;

/// The latest access of one site among the visible accesses of a lockset class and kind.
#[derive(Clone, Copy, Debug)]
struct HistEntry {
    index: u64,
    time: u32,
    site: u32,
    /// Its number among the accesses of its class and kind (counted modulo 2^32).
    seq: u32,
    /// The next entry of the same class and kind, or the next free entry.
    next: u32,
}

/// The accesses of one (variable, thread, lockset): a lockset class. One cache line: the
/// class and its first entry of each kind come with a single miss (the entries were a
/// separate miss and 23% of `w3po --history 4` on the generated 10^7-event trace).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct HistClass {
    ls: LsId,
    /// Time of the class's latest access (either kind).
    latest: u32,
    /// Neighbours in the recency list of its (variable, thread), most recent first; in the
    /// first class of a list `prev` is the list's length instead (not counted beyond
    /// `SHORT_LIST + 1`).
    prev: u32,
    next: u32,
    /// Per kind (writes, reads): accesses so far (modulo 2^32), one entry inline and the
    /// first of the others.
    count: [u32; 2],
    head: [u32; 2],
    inline: [Inline; 2],
}

/// A [`HistEntry`] inside its class: event index and site packed into 48 and 16 bits
/// (entries that do not fit go to the list). `time == 0` marks an empty slot (local times
/// start at 1).
#[derive(Clone, Copy, Debug, Default)]
struct Inline {
    packed: u64,
    time: u32,
    seq: u32,
}

impl Inline {
    const SITE_BITS: u32 = 16;

    /// The slot for `(index, site)`, if both fit.
    #[inline]
    fn new(index: u64, time: u32, site: u32, seq: u32) -> Option<Inline> {
        (index >> (64 - Self::SITE_BITS) == 0 && site < (1 << Self::SITE_BITS)).then_some(Inline {
            packed: index << Self::SITE_BITS | site as u64,
            time,
            seq,
        })
    }

    #[inline]
    fn index(&self) -> u64 {
        self.packed >> Self::SITE_BITS
    }

    #[inline]
    fn site(&self) -> u32 {
        (self.packed & ((1 << Self::SITE_BITS) - 1)) as u32
    }
}

/// Lists of up to this many classes are walked to find a class; the classes of longer ones
/// are in [`HistoryLog`]'s table (most lists have one class: a table entry each was 40 MB
/// on dacapo_lusearch_q2_t2).
const SHORT_LIST: u32 = 4;

/// A new class of lockset `ls`, in no list yet.
fn new_class(classes: &mut Vec<HistClass>, ls: LsId) -> u32 {
    classes.push(HistClass {
        ls,
        latest: 0,
        prev: NIL,
        next: NIL,
        count: [0, 0],
        head: [NIL, NIL],
        inline: [Inline::default(); 2],
    });
    (classes.len() - 1) as u32
}

/// The sites of one variable and, per thread, the first class of its recency list.
/// Both inline for the usual variable (on dacapo_lusearch_q2_t2: 1.3·10^6 variables, 1.9
/// sites and 1 class each on average; two heap blocks per variable were 80 MB).
type HistVar = (SmallVec<[Site<()>; 2]>, SmallVec<[Head; 2]>);

/// The first class of a (variable, thread)'s recency list, with its latest access: most
/// checks find every other thread's latest access known and look at no class (on the
/// generated 10^7-event trace 5.6 of the 6.3 classes a check looked at were such heads).
#[derive(Clone, Copy, Debug)]
struct Head {
    class: u32,
    latest: u32,
}

impl Default for Head {
    fn default() -> Self {
        Head {
            class: NIL,
            latest: 0,
        }
    }
}

/// The bounded access log of W3PO's `--history N`, for grouped reports: per (variable,
/// thread, lockset) the last `keep` reads and writes are visible (the same visible accesses
/// as [`AccessLog`] with the same bound). Of the visible accesses of one class and kind only
/// the latest of each (location, kind) site is kept: an older one has the same thread,
/// lockset and site and an earlier time, so every access it races with the newer one does
/// too, in the same location pair, and the newer one is the later first event a group's
/// first instance wants. The lockset classes of each (variable, thread) are kept in order
/// of their latest access (a linked list; a hash table finds a class), so the first class
/// wholly known to the current access ends the scan of that thread, and the scan of an
/// access ends once each site of its variable has its location pair settled for it.
///
/// Memory: a class (64 bytes, one entry per kind inline, plus a table slot when its list is
/// long) per (variable, thread, lockset) seen and at most `min(keep, sites) - 1` further
/// entries (24 bytes) per class and kind.
#[derive(Debug)]
pub struct HistoryLog {
    keep: u32,
    vars: Vec<HistVar>,
    classes: Vec<HistClass>,
    /// The classes of the lists longer than [`SHORT_LIST`], by (variable, thread, lockset).
    find: ClassTable,
    entries: Vec<HistEntry>,
    /// First free entry.
    free: u32,
    /// Per site of the current variable: settled for the current access.
    done: Vec<bool>,
    /// (variable, site) of the access last checked (its push needs no lookup).
    cur: (usize, usize),
    /// Pushes so far, and those whose class was in a long list (looked up in the table).
    pushes: u64,
    table_pushes: u64,
}

impl HistoryLog {
    pub fn new(keep: usize) -> HistoryLog {
        HistoryLog {
            keep: keep.clamp(1, u32::MAX as usize) as u32,
            vars: Vec::new(),
            classes: Vec::new(),
            find: ClassTable::default(),
            entries: Vec::new(),
            free: NIL,
            done: Vec::new(),
            cur: (usize::MAX, 0),
            pushes: 0,
            table_pushes: 0,
        }
    }

    /// As the grouped shadow's check ([`Shadow::check_push`]), over the visible accesses.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn check(
        &mut self,
        sink: &mut GroupSink,
        table: &LocksetTable,
        ls: LsId,
        clock: Option<&VectorClock>,
        reads: bool,
        index: u64,
        ev: &Event,
    ) {
        let x = ev.var().index();
        if x >= self.vars.len() {
            self.vars.resize_with(x + 1, Default::default);
        }
        let (sites, heads) = &mut self.vars[x];
        let me = site_of(sites, ev);
        self.cur = (x, me);
        let t = ev.thread.index();
        // The clock's entries looked up once (0 past its end; every access unknown
        // without a clock).
        let vc = clock.map_or(&[][..], |c| c.as_slice());
        let known = |u: usize| vc.get(u).copied().unwrap_or(0);
        // An other thread's list to scan: one whose latest access is not known. (Most
        // variables of real programs are thread-local: nothing to scan.)
        let unknown = |u: usize, h: &Head| {
            h.class != NIL && u != t && (clock.is_none() || h.latest > known(u))
        };
        let Some(from) = heads.iter().enumerate().position(|(u, h)| unknown(u, h)) else {
            return;
        };
        let done = &mut self.done;
        done.clear();
        done.resize(sites.len(), false);
        // Sites that cannot pair (reads, for a read) count as settled.
        let mut left = 0;
        for (s, site) in sites.iter().enumerate() {
            if site.write || reads {
                left += 1;
            } else {
                done[s] = true;
            }
        }
        for (u, head) in heads.iter().enumerate().skip(from) {
            if !unknown(u, head) {
                continue;
            }
            let known = known(u);
            let u = ThreadId(u as u32);
            let mut c = head.class;
            while c != NIL {
                let class = &self.classes[c as usize];
                c = class.next;
                if clock.is_some() && class.latest <= known {
                    break; // this class and the older ones are known
                }
                if !table.disjoint(class.ls, ls) {
                    continue;
                }
                for kind in 0..if reads { 2 } else { 1 } {
                    let first = class.inline[kind];
                    let mut e = class.head[kind];
                    let mut at_inline = first.time != 0;
                    while at_inline || e != NIL {
                        let (site, time, first_index) = if at_inline {
                            at_inline = false;
                            (first.site(), first.time, first.index())
                        } else {
                            let a = self.entries[e as usize];
                            e = a.next;
                            (a.site, a.time, a.index)
                        };
                        let s = site as usize;
                        if done[s] || (clock.is_some() && time <= known) {
                            continue;
                        }
                        let g = hit_site::<_, false>(sink, sites, me, s, u, first_index, index, ev);
                        if !sink.open(g, index) {
                            done[s] = true;
                            left -= 1;
                            if left == 0 {
                                return;
                            }
                        }
                    }
                }
            }
        }
    }

    /// True when most accesses so far landed in long lists of classes (looked up in the
    /// table): classes then lie all over memory and prefetching pays. Otherwise (real
    /// traces: on dacapo_lusearch_q2_t2 nearly every list has one class, and the lists an
    /// access reaches are mostly in cache) it costs more than it saves (3.2 s instead of
    /// 2.9 s there).
    #[inline]
    pub fn wants_prefetch(&self) -> bool {
        2 * self.table_pushes > self.pushes
    }

    /// Asks the cache for what the access `ev` (lockset `ls`), three events ahead, will
    /// look up first: its variable's sites and first classes, and its class's table slot.
    #[inline]
    pub fn prefetch_slot(&self, ls: LsId, ev: &Event) {
        if let Some((sites, heads)) = self.vars.get(ev.var().index()) {
            prefetch(sites as *const _ as *const u8);
            prefetch(heads as *const _ as *const u8);
        }
        if let Some(slot) = self.find.slot_ptr((ev.var().0, ev.thread.0, ls)) {
            prefetch(slot);
        }
    }

    /// Asks the cache for what the access `ev` (lockset `ls`, its thread's clock `clock`
    /// now), two events ahead, will read: the first class of its own thread's list of its
    /// variable (the push looks at it), that of each other thread whose latest access
    /// `clock` does not know (the check starts there), and its own class, found through
    /// the table slot that [`HistoryLog::prefetch_slot`] asked for an event earlier. (On
    /// the generated 10^7-event trace each access reaches three or four classes that no
    /// cache holds.)
    #[inline]
    pub fn prefetch_classes(&self, ls: LsId, clock: &VectorClock, ev: &Event) {
        let x = ev.var().index();
        let Some((_, heads)) = self.vars.get(x) else {
            return;
        };
        let vc = clock.as_slice();
        for (u, h) in heads.iter().enumerate() {
            // Its own thread's for the push, the others' when the check will look.
            let own = u == ev.thread.index();
            if h.class != NIL && (own || h.latest > vc.get(u).copied().unwrap_or(0)) {
                prefetch(&self.classes[h.class as usize] as *const HistClass as *const u8);
            }
        }
        if let Some(c) = self.find.probable((x as u32, ev.thread.0, ls)) {
            prefetch(&self.classes[c as usize] as *const HistClass as *const u8);
        }
    }

    /// Asks the cache for the neighbours of the class of `ev` (the next event) in its
    /// recency list, which its push relinks, once [`HistoryLog::prefetch_classes`] asked
    /// for the class. (Each step looks the class up in the table again: the slot is in
    /// the cache by then.)
    #[inline]
    pub fn prefetch_neighbours(&self, ls: LsId, ev: &Event) {
        if let Some(c) = self.find.get(&self.classes, (ev.var().0, ev.thread.0, ls)) {
            let class = &self.classes[c as usize];
            for n in [class.prev, class.next] {
                if let Some(n) = self.classes.get(n as usize) {
                    prefetch(n as *const HistClass as *const u8);
                }
            }
        }
    }

    /// Logs the access `ev` with lockset `ls` at local time `time`.
    #[inline]
    pub fn push(&mut self, ls: LsId, time: u32, index: u64, ev: &Event) {
        let (x, t) = (ev.var().index(), ev.thread.index());
        self.pushes += 1;
        if x >= self.vars.len() {
            self.vars.resize_with(x + 1, Default::default);
        }
        let (sites, heads) = &mut self.vars[x];
        let site = site_of_cached(sites, self.cur, x, ev) as u32;
        if t >= heads.len() {
            heads.resize(t + 1, Head::default());
        }
        let classes = &mut self.classes;
        // The thread's latest class of the variable first (real traces mostly repeat it),
        // then a walk of a short list, or the table of the long lists' classes.
        let c = match heads[t].class {
            h if h != NIL && classes[h as usize].ls == ls => h,
            NIL => {
                let c = new_class(classes, ls);
                classes[c as usize].prev = 1; // a list of one
                heads[t].class = c;
                c
            }
            h => {
                let len = classes[h as usize].prev;
                if len > SHORT_LIST {
                    self.table_pushes += 1;
                    self.find
                        .get_or_insert_with(classes, (x as u32, t as u32, ls), |classes| {
                            new_class(classes, ls)
                        })
                } else {
                    let mut c = classes[h as usize].next;
                    while c != NIL && classes[c as usize].ls != ls {
                        c = classes[c as usize].next;
                    }
                    if c == NIL {
                        c = new_class(classes, ls);
                        classes[h as usize].prev = len + 1;
                        if len + 1 > SHORT_LIST {
                            // The list becomes long: its classes go into the table.
                            self.find.insert((x as u32, t as u32, ls), c);
                            let mut d = h;
                            while d != NIL {
                                let key = (x as u32, t as u32, classes[d as usize].ls);
                                self.find.insert(key, d);
                                d = classes[d as usize].next;
                            }
                        }
                    }
                    c
                }
            }
        };
        // Move the class to the front of its recency list (the length goes with it).
        heads[t].latest = time;
        let h = heads[t].class;
        if h != c {
            let len = classes[h as usize].prev;
            // Not the first: `prev` is its predecessor (`NIL` for a new class).
            let HistClass { prev, next, .. } = classes[c as usize];
            if prev != NIL {
                classes[prev as usize].next = next;
            }
            if next != NIL {
                classes[next as usize].prev = prev;
            }
            classes[h as usize].prev = c;
            classes[c as usize].prev = len;
            classes[c as usize].next = h;
            heads[t].class = c;
        }
        let class = &mut classes[c as usize];
        class.latest = time;
        let kind = if ev.is_write() { 0 } else { 1 };
        let seq = class.count[kind];
        class.count[kind] = seq.wrapping_add(1);
        // Replace the site's entry; drop entries that are no longer among the last `keep`.
        let keep = self.keep;
        let mut found = false;
        let slot = &mut class.inline[kind];
        if slot.time != 0 {
            if slot.site() == site {
                // (An index past 2^48 moves the site's entry to the list.)
                match Inline::new(index, time, site, seq) {
                    Some(now) => {
                        *slot = now;
                        found = true;
                    }
                    None => slot.time = 0,
                }
            } else if seq.wrapping_sub(slot.seq) >= keep {
                slot.time = 0;
            }
        }
        let mut prev = NIL;
        let mut e = class.head[kind];
        while e != NIL {
            let next = self.entries[e as usize].next;
            let entry = &mut self.entries[e as usize];
            if entry.site == site {
                entry.index = index;
                entry.time = time;
                entry.seq = seq;
                found = true;
                prev = e;
            } else if seq.wrapping_sub(entry.seq) >= keep {
                // `keep` later accesses of the class and kind: not visible any more.
                if prev == NIL {
                    class.head[kind] = next;
                } else {
                    self.entries[prev as usize].next = next;
                }
                self.entries[e as usize].next = self.free;
                self.free = e;
            } else {
                prev = e;
            }
            e = next;
        }
        if found {
            return;
        }
        if class.inline[kind].time == 0 {
            if let Some(slot) = Inline::new(index, time, site, seq) {
                class.inline[kind] = slot;
                return;
            }
        }
        let entry = HistEntry {
            index,
            time,
            site,
            seq,
            next: class.head[kind],
        };
        let at = if self.free != NIL {
            let at = self.free;
            self.free = self.entries[at as usize].next;
            self.entries[at as usize] = entry;
            at
        } else {
            self.entries.push(entry);
            (self.entries.len() - 1) as u32
        };
        class.head[kind] = at;
    }
}

/// The classes of [`HistoryLog`]'s long lists by (variable, thread, lockset): a table per
/// thread, open addressing with linear probing. A slot is 8 bytes, a tag and the class: the
/// tag is `x ^ f(ls)` for the key's variable `x` and lockset `ls` (`f` mixes the bits of
/// `ls`; exactness needs no more), so a slot whose tag matches and whose class has lockset
/// `ls` has variable `x`: the key is checked exactly against the class, which the caller
/// reads next anyway. Keys whose tags collide start their probes at the same slot. A lookup
/// costs one cache miss (hashbrown's control bytes and slots were two, and the lookups a
/// quarter of `w3po --history 4` on the generated 10^7-event trace, whose 925 112 classes are
/// almost all in long lists). Slots of 16 bytes holding the whole key were 33.5 MB there,
/// and 50 MB while the table grew; per thread, each table's growth is a fraction of that.
/// Classes are never removed.
#[derive(Debug, Default)]
struct ClassTable {
    /// Per thread.
    threads: Vec<ThreadTable>,
}

#[derive(Debug, Default)]
struct ThreadTable {
    /// (tag, class); class [`NIL`] marks a free slot.
    slots: Vec<[u32; 2]>,
    len: usize,
}

impl ThreadTable {
    /// The slot where `tag`'s probe starts.
    #[inline]
    fn start(&self, tag: u32) -> usize {
        let h = u64::from(tag).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        // The high bits are the well-mixed ones.
        (h >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    /// The slot of `tag` whose class `is` says matches.
    #[inline]
    fn find(&self, tag: u32, is: impl Fn(u32) -> bool) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.start(tag);
        loop {
            let [g, c] = self.slots[i];
            if c == NIL {
                return None;
            }
            if g == tag && is(c) {
                return Some(c);
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds class `c` (absent) under `tag`.
    fn insert(&mut self, tag: u32, c: u32) {
        // At most 3/4 full.
        if 4 * (self.len + 1) > 3 * self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.start(tag);
        while self.slots[i][1] != NIL {
            i = (i + 1) & mask;
        }
        self.slots[i] = [tag, c];
        self.len += 1;
    }

    #[cold]
    fn grow(&mut self) {
        let n = (2 * self.slots.len()).max(64);
        let old = std::mem::replace(&mut self.slots, vec![[0, NIL]; n]);
        self.len = 0;
        for [tag, c] in old {
            if c != NIL {
                self.insert(tag, c);
            }
        }
    }
}

impl ClassTable {
    /// The tag of variable `x` and lockset `ls`: given `ls`, it determines `x`.
    #[inline]
    fn tag(x: u32, ls: LsId) -> u32 {
        x ^ ls.wrapping_mul(0x9E37_79B9)
    }

    /// The table slot where the probe for `key` starts, to ask the cache for.
    #[inline]
    fn slot_ptr(&self, (x, t, ls): (u32, u32, LsId)) -> Option<*const u8> {
        let table = self
            .threads
            .get(t as usize)
            .filter(|s| !s.slots.is_empty())?;
        Some(table.slots[table.start(Self::tag(x, ls))].as_ptr() as *const u8)
    }

    /// The class of `key`, if any.
    #[inline]
    fn get(&self, classes: &[HistClass], (x, t, ls): (u32, u32, LsId)) -> Option<u32> {
        let table = self.threads.get(t as usize)?;
        table.find(Self::tag(x, ls), |c| classes[c as usize].ls == ls)
    }

    /// The class of `key` if any, most likely: the first whose tag matches, unchecked (for
    /// prefetching without reading the class).
    #[inline]
    fn probable(&self, (x, t, ls): (u32, u32, LsId)) -> Option<u32> {
        let table = self.threads.get(t as usize)?;
        table.find(Self::tag(x, ls), |_| true)
    }

    /// The class of `key`, made by `new` and added if absent.
    #[inline]
    fn get_or_insert_with(
        &mut self,
        classes: &mut Vec<HistClass>,
        key: (u32, u32, LsId),
        new: impl FnOnce(&mut Vec<HistClass>) -> u32,
    ) -> u32 {
        if let Some(c) = self.get(classes, key) {
            return c;
        }
        let c = new(classes);
        self.insert(key, c);
        c
    }

    /// Adds `key` (absent) with class `c`, whose lockset is the key's.
    fn insert(&mut self, (x, t, ls): (u32, u32, LsId), c: u32) {
        if t as usize >= self.threads.len() {
            self.threads
                .resize_with(t as usize + 1, ThreadTable::default);
        }
        self.threads[t as usize].insert(Self::tag(x, ls), c);
    }
}

/// How a pair analysis of this family collects its pairs.
#[derive(Debug)]
pub enum Pairs {
    /// Every pair (`--all-pairs`): a log of every access (or of the last ones, W3PO's
    /// history) and a sink listing pairs up to [`PAIR_LIMIT`].
    All { log: AccessLog, sink: PairSink },
    /// Grouped by location pair from the bounded shadow (the default).
    Grouped { shadow: Shadow, sink: GroupSink },
    /// Grouped by location pair, enumerating a bounded log (W3PO's `--history N`, whose
    /// pairs are those of the log's visible accesses).
    GroupedLog { log: HistoryLog, sink: GroupSink },
}

impl Pairs {
    /// `all`: every pair; `keep`: the access log's bound (only with `all` or a history).
    pub fn new(all: bool, keep: Option<usize>) -> Pairs {
        match (all, keep) {
            (true, _) => Pairs::All {
                log: AccessLog::new(keep),
                sink: PairSink::default(),
            },
            (false, None) => Pairs::Grouped {
                shadow: Shadow::new(),
                sink: GroupSink::default(),
            },
            (false, Some(k)) => Pairs::GroupedLog {
                log: HistoryLog::new(k),
                sink: GroupSink::default(),
            },
        }
    }

    /// The bounded history log, if that is how pairs are collected (W3PO's grouped
    /// `--history N`, which prefetches).
    #[inline]
    pub fn history_log(&self) -> Option<&HistoryLog> {
        match self {
            Pairs::GroupedLog { log, .. } => Some(log),
            _ => None,
        }
    }

    /// True for the grouped modes (the shadow or W3PO's bounded log), whose reports split
    /// by variable.
    pub fn is_grouped(&self) -> bool {
        matches!(self, Pairs::Grouped { .. } | Pairs::GroupedLog { .. })
    }

    /// True for the grouped shadow when asking its cache ahead pays
    /// ([`Shadow::wants_prefetch`], [`Pairs::prefetch_ahead`]).
    #[inline]
    pub fn shadow_wants_prefetch(&self) -> bool {
        match self {
            Pairs::Grouped { shadow, .. } => shadow.wants_prefetch(),
            _ => false,
        }
    }

    /// Asks the grouped shadow's cache ahead for the accesses among the events that follow
    /// the current one (`next[0]` is the next event; [`Shadow::wants_prefetch`]): the
    /// variable two events ahead, the newest entries of its sites one event ahead.
    #[inline]
    pub fn prefetch_ahead(&self, next: &[Event]) {
        let Pairs::Grouped { shadow, .. } = self else {
            return;
        };
        let access = |k: usize| next.get(k).filter(|e| e.is_access());
        if let Some(e) = access(1) {
            shadow.prefetch_var(e);
        }
        if let Some(e) = access(0) {
            shadow.prefetch_entries(e);
        }
    }

    /// The pairs of the current access `ev` with the earlier accesses of its variable
    /// (writes, and reads when `reads` is set) that are unknown to `clock` and have a
    /// lockset disjoint from `ls`; then the access is logged at local time `time` (in the
    /// grouped shadow with one lookup of its site).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn check_push(
        &mut self,
        table: &LocksetTable,
        ls: LsId,
        clock: &VectorClock,
        time: u32,
        reads: bool,
        index: u64,
        ev: &Event,
    ) {
        self.check_and_push(table, ls, Some(clock), time, reads, index, ev);
    }

    /// [`Pairs::check_push`] without a clock (every earlier access is unordered), for a
    /// clockless analysis (`lockset`: its grouped shadow's logs drop entries dominated across
    /// threads too, see [`Shadow`]).
    #[inline(always)]
    pub fn check_push_without_clock(
        &mut self,
        table: &LocksetTable,
        ls: LsId,
        reads: bool,
        index: u64,
        ev: &Event,
    ) {
        self.check_and_push(table, ls, None, 0, reads, index, ev);
    }

    /// [`Pairs::check_push`] with the clock optional: `None` only for clockless analyses.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn check_and_push(
        &mut self,
        table: &LocksetTable,
        ls: LsId,
        clock: Option<&VectorClock>,
        time: u32,
        reads: bool,
        index: u64,
        ev: &Event,
    ) {
        match self {
            Pairs::Grouped { shadow, sink } => match clock {
                Some(c) => shadow.check_push(sink, table, ls, c, time, reads, index, ev),
                None => shadow.check_push_without_clock(sink, table, ls, reads, index, ev),
            },
            Pairs::GroupedLog { log, sink } => {
                log.check(sink, table, ls, clock, reads, index, ev);
                log.push(ls, time, index, ev);
            }
            Pairs::All { log, sink } => {
                log.pairs_into(sink, table, ls, clock, reads, index, ev);
                let a = Access {
                    index,
                    time,
                    ls,
                    loc: ev.loc,
                };
                log.push(ev.var(), ev.thread, ev.is_write(), a);
            }
        }
    }

    /// Adds the pair of two known events (W3PO's write-read dependency pairs).
    #[inline]
    pub fn add_events(&mut self, first: u64, first_ev: Event, second: u64, second_ev: Event) {
        match self {
            Pairs::All { sink, .. } => sink.add_events(first, first_ev, second, second_ev),
            Pairs::Grouped { sink, .. } | Pairs::GroupedLog { sink, .. } => {
                // A second way to a group: from now on every hit goes to the group, whose
                // last second event keeps a second event from counting twice (the site
                // pairs' counters so far are exact: no pair came this way before).
                sink.other_way = true;
                let g = sink.group_of(first_ev.loc, first_ev.is_write(), &second_ev);
                sink.hit(g, first, || first_ev, second, &second_ev);
            }
        }
    }

    /// Moves the pairs into `report`.
    #[cold]
    #[inline(never)]
    pub fn into_report(&mut self, report: &mut RaceReport, table: &LocksetTable) {
        match self {
            Pairs::All { sink, .. } => sink.into_report(report),
            Pairs::Grouped { shadow, sink } => {
                sink.into_report(report);
                report.extra.insert(
                    "shadow_entries".into(),
                    serde_json::Value::from(shadow.undominated(table)),
                );
            }
            Pairs::GroupedLog { sink, .. } => sink.into_report(report),
        }
    }
}

/// Runs `event` (an analysis `a`'s handling of one event, with its index) on each of
/// `events`, the first with index `first`; when `ahead`, each event is preceded by
/// `prefetch` of the events that follow it (`next[0]` is the next event), which asks the
/// cache for what they will need.
#[inline(always)]
pub fn run_looking_ahead<A>(
    a: &mut A,
    ahead: bool,
    first: u64,
    events: &[Event],
    prefetch: impl Fn(&A, &[Event]),
    mut event: impl FnMut(&mut A, u64, &Event),
) {
    for (i, ev) in events.iter().enumerate() {
        if ahead {
            prefetch(a, &events[i + 1..]);
        }
        event(a, first + i as u64, ev);
    }
}

/// A hint to load the cache line at `p` (no effect on what the program computes; any
/// address is allowed).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` only hints the cache; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_table_finds_what_it_stored() {
        let mut table = ClassTable::default();
        let mut classes = Vec::new();
        let key = |i: u32| (i % 97, i % 5, i / 3);
        let mut made = 0;
        for i in 0..5000u32 {
            let c = table.get_or_insert_with(&mut classes, key(i), |classes| {
                made += 1;
                new_class(classes, i / 3)
            });
            assert_eq!(c, i);
        }
        let len: usize = table.threads.iter().map(|s| s.len).sum();
        assert_eq!((made, len), (5000, 5000));
        assert!(table.threads.iter().all(|s| 4 * s.len <= 3 * s.slots.len()));
        for i in 0..5000u32 {
            assert_eq!(table.get(&classes, key(i)), Some(i));
            assert_eq!(table.probable(key(i)), Some(i));
        }
        // Keys whose tags collide are told apart by their class's lockset.
        let (x, t, ls) = key(4321);
        let other = 7;
        let twin = (
            x ^ ClassTable::tag(0, ls) ^ ClassTable::tag(0, other),
            t,
            other,
        );
        assert_eq!(ClassTable::tag(twin.0, twin.2), ClassTable::tag(x, ls));
        assert_ne!(twin, key(4321));
        assert_eq!(table.get(&classes, twin), None);
        let c = table.get_or_insert_with(&mut classes, twin, |classes| new_class(classes, other));
        assert_eq!(c, 5000);
        assert_eq!(table.get(&classes, twin), Some(5000));
        assert_eq!(table.get(&classes, (x, t, ls)), Some(4321));
        assert_eq!(table.get(&classes, (x, t + 1, ls)), None);
    }

    /// A (variable, thread) keeps one class per lockset however many it has (a short list,
    /// then the table once it has more than [`SHORT_LIST`]), in order of their latest access.
    #[test]
    fn history_log_has_one_class_per_lockset() {
        let mut table = LocksetTable::new();
        let sets: Vec<LsId> = (0..7u8).map(|b| lockset_of(&mut table, b)).collect();
        let mut log = HistoryLog::new(2);
        let mut time = 0;
        for round in 0..5 {
            for (k, &ls) in sets.iter().enumerate() {
                for loc in 0..2 {
                    time += 1;
                    let ev = Event::new(ThreadId(0), Op::Write, 3, LocId(loc + round % 2));
                    log.push(ls, time, u64::from(time), &ev);
                }
                let classes = log.classes.len();
                assert_eq!(classes, if round == 0 { k + 1 } else { sets.len() });
            }
        }
        // The recency list: every class, latest first.
        let head = log.vars[3].1[0];
        assert_eq!(head.latest, time);
        let mut c = head.class;
        let mut seen = Vec::new();
        while c != NIL {
            seen.push(log.classes[c as usize].latest);
            c = log.classes[c as usize].next;
        }
        assert_eq!(seen.len(), sets.len());
        assert!(seen.windows(2).all(|w| w[0] > w[1]));
    }

    #[test]
    fn table_interns_and_caches() {
        let mut t = LocksetTable::new();
        let a = t.with(LocksetTable::EMPTY, LockId(3));
        let ab = t.with(a, LockId(1));
        let b = t.with(LocksetTable::EMPTY, LockId(1));
        let ba = t.with(b, LockId(3));
        assert_eq!(ab, ba);
        assert_eq!(t.locks(ab), &[1, 3]);
        assert_eq!(t.without(ab, LockId(1)), a);
        let c = t.with(LocksetTable::EMPTY, LockId(67)); // same mask bit as 3
        assert!(t.disjoint(a, c));
        assert!(!t.disjoint(a, ab));
        assert_eq!(t.intersect(ab, a), a);
        assert_eq!(t.intersect(ab, c), LocksetTable::EMPTY);
    }

    /// Disjointness, inclusion and intersection against sets, for locks on both sides of
    /// the masks' exact range (31) and locks sharing a `% 32` / `% 64` bit.
    #[test]
    fn table_tests_agree_with_sets_across_the_mask_range() {
        use std::collections::BTreeSet;
        let pool = [0u32, 1, 3, 29, 30, 31, 32, 35, 63, 64, 67, 95, 1000];
        let mut t = LocksetTable::new();
        let mut sets = vec![(LocksetTable::EMPTY, BTreeSet::new())];
        // Every subset of up to three locks of the pool.
        for (i, &a) in pool.iter().enumerate() {
            let la = t.with(LocksetTable::EMPTY, LockId(a));
            sets.push((la, BTreeSet::from([a])));
            for (j, &b) in pool.iter().enumerate().skip(i + 1) {
                let lab = t.with(la, LockId(b));
                sets.push((lab, BTreeSet::from([a, b])));
                for &c in pool.iter().skip(j + 1) {
                    sets.push((t.with(lab, LockId(c)), BTreeSet::from([a, b, c])));
                }
            }
        }
        for (a, sa) in &sets {
            assert_eq!(t.locks(*a), sa.iter().copied().collect::<Vec<_>>());
            for (b, sb) in &sets {
                assert_eq!(t.disjoint(*a, *b), sa.is_disjoint(sb), "{sa:?} {sb:?}");
                assert_eq!(t.subset(*a, *b), sa.is_subset(sb), "{sa:?} {sb:?}");
                let (ma, mb) = (t.mask(*a), t.mask(*b));
                assert_eq!(
                    masks_disjoint(ma, mb, || t.disjoint_slow(*a, *b)),
                    sa.is_disjoint(sb)
                );
                assert_eq!(
                    masks_subset(ma, mb, || t.subset_slow(*a, *b)),
                    sa.is_subset(sb)
                );
                let i = t.intersect(*a, *b);
                let si: Vec<u32> = sa.intersection(sb).copied().collect();
                assert_eq!(t.locks(i), si);
            }
        }
    }

    #[test]
    fn holdings_nest_and_hand_over_hand() {
        let mut h = Holdings::new();
        let t = ThreadId(1);
        assert!(h.acquire(t, LockId(0)));
        assert!(!h.acquire(t, LockId(0)));
        assert!(h.acquire(t, LockId(1)));
        assert!(!h.release(t, LockId(0)));
        assert!(h.release(t, LockId(0))); // hand-over-hand: 0 before 1
        assert_eq!(h.table.locks(h.lockset(t)), &[1]);
        assert!(h.release(t, LockId(1)));
        assert_eq!(h.lockset(t), LocksetTable::EMPTY);
        assert!(!h.release(t, LockId(5)));
    }

    #[test]
    fn access_log_suffix_and_bound() {
        let mut log = AccessLog::new(Some(2));
        for i in 0..30u32 {
            let a = Access {
                index: i as u64,
                time: i,
                ls: 0,
                loc: LocId(i),
            };
            log.push(VarId(0), ThreadId(1), i % 2 == 0, a);
        }
        let mut seen = Vec::new();
        log.for_unordered(
            VarId(0),
            ThreadId(0),
            None,
            true,
            |_| true,
            |_, a, _| seen.push(a.index),
        );
        seen.sort();
        assert_eq!(seen, vec![26, 27, 28, 29]);
        let mut c = VectorClock::new();
        c.set(ThreadId(1), 27);
        let mut seen = Vec::new();
        log.for_unordered(
            VarId(0),
            ThreadId(0),
            Some(&c),
            true,
            |_| true,
            |_, a, _| seen.push(a.index),
        );
        seen.sort();
        assert_eq!(seen, vec![28, 29]);
    }

    /// One access of [`shadow_logs_agree_with_the_history`]: thread, lockset (bits of
    /// `LOCK_POOL`).
    type Acc = (u32, u8);

    /// Locks on both sides of the masks' exact range.
    const LOCK_POOL: [u32; 6] = [0, 1, 2, 30, 31, 40];

    fn lockset_of(table: &mut LocksetTable, bits: u8) -> LsId {
        let mut ls = LocksetTable::EMPTY;
        for (i, &l) in LOCK_POOL.iter().enumerate() {
            if bits & (1 << i) != 0 {
                ls = table.with(ls, LockId(l));
            }
        }
        ls
    }

    /// The accesses of `history` (as (index, thread, lockset)) that none later dominates
    /// ([`Pruner`]), straight from the definition.
    fn undominated_by_definition(
        table: &LocksetTable,
        history: &[(u64, u32, LsId)],
        clockless: bool,
    ) -> Vec<u64> {
        let mut kept = Vec::new();
        for (i, &(index, u, ls)) in history.iter().enumerate() {
            let subs = history[i + 1..].iter().filter(|g| table.subset(g.2, ls));
            let threads: std::collections::BTreeSet<u32> = subs.map(|g| g.1).collect();
            let dominated = threads.contains(&u)
                || (clockless && threads.iter().filter(|&&v| v != u).count() >= 2);
            if !dominated {
                kept.push(index);
            }
        }
        kept
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        /// A site's log, pruned only when full, answers every check as the whole history
        /// would (the latest racing access, by index), and pruned at the end holds exactly
        /// the undominated accesses. Threads up to 19 (beyond the pruner's buckets), locks
        /// beyond the exact mask range, and accesses sorted by lockset size, so that a
        /// thread keeps more than a bucket holds.
        #[test]
        fn shadow_logs_agree_with_the_history(
            clockless in proptest::bool::ANY,
            accesses in proptest::collection::vec(
                proptest::prop_oneof![
                    (0u32..4, 0u8..64),
                    (0u32..20, 0u8..64),
                    (0u32..2, 0u8..8),
                ],
                1..120,
            ),
            queries in proptest::collection::vec((0u32..20, 0u8..64, 0u32..120), 1..8),
            by_size in proptest::bool::ANY,
        ) {
            let mut accesses: Vec<Acc> = accesses;
            if by_size {
                // Locksets never smaller later: none dominates an earlier access of its
                // thread, so a thread keeps many (more than a bucket holds).
                accesses.sort_by_key(|a| a.1.count_ones());
            }
            let mut table = LocksetTable::new();
            let mut pruner = Pruner::default();
            let mut site = ShadowSite {
                loc: LocId(0),
                write: true,
                threads: 0,
                empty: 0,
                entries: SmallVec::new(),
                groups: NIL,
            };
            let mut history: Vec<(u64, u32, LsId)> = Vec::new();
            let mut peak = 0;
            // Each access's local time: its index (so per thread increasing).
            for (i, &(thread, bits)) in accesses.iter().enumerate() {
                let ls = lockset_of(&mut table, bits);
                let index = i as u64;
                // Checks before the push: every query's latest racing access.
                for &(t, qbits, known) in &queries {
                    let qls = lockset_of(&mut table, qbits);
                    // A clock that knows every access of each thread up to `known` (with
                    // clocks only), as time = index.
                    let unknown = |u: u32, time: u32| {
                        clockless || time > known.wrapping_add(u) % 120
                    };
                    let races = |u: u32, time: u32, els: LsId| {
                        u != t && unknown(u, time) && table.disjoint(els, qls)
                    };
                    let by_log = site
                        .entries
                        .iter()
                        .rev()
                        .find(|e| races(e.thread, e.time, e.ls))
                        .map(|e| e.index);
                    let by_history = history
                        .iter()
                        .rev()
                        .find(|a| races(a.1, a.0 as u32, a.2))
                        .map(|a| a.0);
                    proptest::prop_assert_eq!(by_log, by_history);
                }
                let entry = ShadowEntry {
                    ls,
                    time: if clockless { 0 } else { i as u32 },
                    index,
                    thread,
                    mask: table.mask(ls),
                };
                if clockless {
                    log_access::<true>(&mut site, &mut pruner, &table, entry);
                } else {
                    log_access::<false>(&mut site, &mut pruner, &table, entry);
                }
                history.push((index, thread, ls));
                // Bounded: the log's room is at most 8/3 of the most undominated accesses
                // the site has had (the pruning keeps them all and grows the room to twice
                // its size only when they fill more than three quarters of it).
                let undominated = undominated_by_definition(&table, &history, clockless);
                peak = peak.max(undominated.len());
                proptest::prop_assert!(3 * site.entries.capacity() <= 8 * peak);
            }
            let kept = pruner.prune_by(clockless, site.entries.as_mut_slice(), site.threads, &table);
            let logged: Vec<u64> = site.entries[..kept].iter().map(|e| e.index).collect();
            proptest::prop_assert_eq!(logged, undominated_by_definition(&table, &history, clockless));
            // The pruner's buckets are empty again.
            proptest::prop_assert!(pruner.len.iter().all(|&n| n == 0));
            proptest::prop_assert!(pruner.masks.iter().flatten().all(|&m| m == u32::MAX));
        }
    }
}
