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

mod history;
mod pairs;
#[cfg(test)]
mod tests;

pub use history::HistoryLog;
pub(crate) use pairs::sharded_lockset_analysis;
pub use pairs::{run_block, run_looking_ahead, LocksetFields, Pairs, ShardedLockset};

/// No class or entry (end of a list).
const NIL: u32 = u32::MAX;

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

    /// Calls `f(u, accesses, is_write)` with every list of logged accesses of `x` by a thread
    /// `u ≠ t` whose lockset passes `group`, that are not known to `clock` (their time
    /// exceeds `clock(u)`; every access when `clock` is `None`): writes always and reads when
    /// `reads` is set. Counting them takes `O(threads × groups × log)`.
    #[inline]
    pub fn for_unordered(
        &self,
        x: VarId,
        t: ThreadId,
        clock: Option<&VectorClock>,
        reads: bool,
        group: impl Fn(LsId) -> bool,
        mut f: impl FnMut(ThreadId, &[Access], bool),
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
                f(u, self.visible(&g.writes, known), true);
                if reads {
                    f(u, self.visible(&g.reads, known), false);
                }
            }
        }
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
            let total = &mut sink.total;
            self.for_unordered(x, t, clock, reads, group, |_, list, _| {
                *total += list.len() as u64
            });
        } else {
            self.for_unordered(x, t, clock, reads, group, |u, list, aw| {
                for a in list {
                    sink.add(x, u, a, aw, index, ev);
                }
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
            self.push_cold(|| {
                let op = if a_write { Op::Write } else { Op::Read };
                let first = Event::new(u, op, x.0, a.loc);
                RacePair::new(a.index, first, second, *ev)
            });
        }
    }

    /// Lists the pair `pair` makes (out of the hot path: most pairs are only counted).
    #[cold]
    #[inline(never)]
    fn push_cold(&mut self, pair: impl FnOnce() -> RacePair) {
        self.pairs.push(pair());
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
    /// the counters of the usual number of groups stay in the first-level cache (the
    /// counter's load is on every hit; the first instances are read once).
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
    /// site only its own thread has used: on real traces most variables are thread-local.
    /// In the padding after `write`.
    threads: u16,
    /// [`Shadow`] without clocks: the threads that have had an entry with the empty lockset
    /// here ([`thread_bit`]). Such an entry is dominated only by later ones with the empty
    /// lockset too, of its thread or of two threads, so the log always keeps an entry with
    /// the empty lockset of a thread other than any `t` whose bit is not the only one: every
    /// access of `t` races with it (when one of the two is a write), and a check that only
    /// has to count the pair ([`GroupSink::hit_pair`]) need not scan the log.
    empty: u16,
    /// Every thread's entries in one vector, in time order (so the latest racing entry is
    /// the last one that races: a scan from the back stops there). The first entry is
    /// inline: most sites have one (a vector per thread and site would be most of the
    /// memory of a trace with many sites).
    entries: E,
    /// Where [`GroupSink`]'s cache keeps, per site of the variable (by position), the group
    /// of (that site, this one); [`NIL`] until a first pair. Only sites of variables that
    /// several threads touch ever have one, so 4 bytes here instead of an inline vector
    /// (24 bytes a site).
    groups: u32,
}

/// A site of [`Shadow`].
type ShadowSite = Site<SmallVec<[ShadowEntry; 1]>>;

/// One variable of [`Shadow`].
#[derive(Clone, Debug, Default)]
struct VarShadow {
    /// The threads that have accessed the variable ([`thread_bit`]): a check of an access
    /// whose thread is the only one skips the variable's sites (most variables of real
    /// programs are thread-local). It costs 8 bytes a variable.
    threads: u16,
    /// The first two sites inline: one cache miss less per access on variables with one
    /// or two sites (most of them), for some memory.
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
/// 8/3 of the most undominated entries it has had: dropping the dominated entries at every
/// push would pass over the whole log each time, and a contiguous run per thread would
/// make a push shift the entries after its run and a check scan every entry for the latest.
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
    /// [`Shadow::check_push_without_clock`] has no clock test left, and the check and the
    /// push share one lookup of the variable.
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
    /// costs more than it saves.
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
/// few, in one vector operation, without a branch (logs of many entries of several
/// threads, whose domination a branch could not predict). Without clocks a log holds few
/// entries, most of them are dominated by one of the first later ones, and the search
/// stops there.
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
            // it dominates any entry of its thread with no look at the later entries (entries
            // of accesses outside critical sections have the empty lockset). With two
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
            // one, the pass stops (logs are mostly such entries and the dominated entries
            // older than them).
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
/// of a location pair out of line (`lockset` calls it for nearly every check of a racy
/// trace).
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
fn site_of_cached<E: Default, A: SiteArray<E>>(
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

/// The inline storage of a variable's sites (entries of type `E`).
trait SiteArray<E>: smallvec::Array<Item = Site<E>> {}

impl<E, A: smallvec::Array<Item = Site<E>>> SiteArray<E> for A {}

/// The position of `ev`'s (location, kind) among `sites`, added if new. The search is
/// always inlined, the addition is not.
#[inline(always)]
fn site_of<E: Default, A: SiteArray<E>>(sites: &mut SmallVec<A>, ev: &Event) -> usize {
    let (loc, write) = (ev.loc, ev.is_write());
    if let Some(i) = sites.iter().position(|s| s.loc == loc && s.write == write) {
        return i;
    }
    new_site(sites, ev)
}

/// Adds `ev`'s (location, kind) to `sites`; returns its position.
#[cold]
#[inline(never)]
fn new_site<E: Default, A: SiteArray<E>>(sites: &mut SmallVec<A>, ev: &Event) -> usize {
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
