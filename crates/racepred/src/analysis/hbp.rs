//! Race pairs over happens-before (`hbp`) — and the pair machinery SHBP shares.
//!
//! Papers: Sulzmann, Stadtmüller et al. on inaccurate traces
//! (`shared/papers/sshb-inaccurate-traces.txt`, App. C, Alg. 3 HBP and Alg. 4 SHBP);
//! Genç et al. (W3PO) (`shared/papers/w3po-hybrid-lockset.txt`, §5 and Ex. 5.1: the history
//! of replaced accesses of Sulzmann and Stadtmüller's SHB^E).
//!
//! Alg. 3 keeps per variable the set `cw` of writes and `cr` of reads that are concurrent
//! with the latest one (at most one per thread); a new access is checked against them and
//! then *replaces* every entry of its own kind that happens before it. A replaced access
//! `e` can still race with a later `f` that its replacer also races with (Ex. 5.1), so the
//! published single pass misses pairs.
//!
//! Complete mode (the default): each access keeps the list of accesses it replaced, which
//! makes a forest whose roots are `cw`/`cr`; an edge goes from a later to an earlier access
//! ordered before it. At an access `f`, every root unordered with `f` is reported and its
//! replaced accesses are walked, recursively; a replaced access that is ordered before `f`
//! is pruned with its whole subtree (they are all ordered before it). Every earlier
//! conflicting access unordered with `f` is reached: follow its replacers up to a root —
//! none of them is ordered before `f`. This is the post-processing of SHB^E (w3po §5) done
//! at the access itself, where `f`'s clock is at hand, instead of in a second pass that
//! would have to keep a clock per racy access; the pairs found are the same. Cost per
//! access: the roots, the pairs reported, and the pruned children of reported accesses.
//!
//! Streaming mode (`streaming: true`): Alg. 3 (Alg. 4 for SHBP) exactly as published,
//! without history; its pairs are a subset.
//!
//! Promise (`hbp`, complete): exactly the conflicting pairs unordered by HB (Def. 3),
//! checked against per-event vector clocks by `tests/hb_props.rs`; this contains every
//! trace-specific predictable pair. Memory: O(threads × variables) for `cw`/`cr`, plus one
//! 32-byte history node per replaced access that some live thread has not passed (complete
//! mode), plus the pairs (or the groups). Whenever the history has doubled since the last
//! collection (at least 2^20 nodes), the nodes at or below every live thread's clock are
//! dropped: no later access can race with them. A thread that first accesses memory
//! after that without a fork (its clock not covering what was dropped) makes the report
//! incomplete, never silently short.

use crate::analysis::AnalysisKind;
use crate::clock::{epoch_le, Clock, Epoch};
use rustc_hash::FxHashMap;

use crate::report::{GroupKey, RacePair, RaceReport, ReportKind};
use crate::trace::{Event, LocId, Op, ThreadId};

use super::hb::{Accesses, HbEngine, FORKED, JOINED};

const NONE: u32 = u32::MAX;

/// History nodes before the first collection ([`Accesses::collect`]); then twice what the
/// last one kept.
const FIRST_COLLECT: usize = 1 << 20;

/// An access: in `cw`/`cr`, or in the history once replaced.
#[derive(Clone, Copy, Debug)]
struct Node {
    epoch: Epoch,
    index: u64,
    loc: LocId,
    /// Head of the list of accesses this one replaced (history indices).
    children: u32,
    /// Next sibling in the replacer's list.
    next: u32,
}

/// The pair-reporting access policy (Alg. 3; with `wrd`, Alg. 4).
pub struct PairAccesses {
    wrd: bool,
    streaming: bool,
    cw: Vec<Vec<Node>>,
    cr: Vec<Vec<Node>>,
    history: Vec<Node>,
    /// The history length at which the next collection runs ([`Accesses::collect`]), and
    /// the least such length.
    next_collect: usize,
    collect_min: usize,
    /// Per thread component: the largest floor history nodes were dropped below.
    floor: Vec<u32>,
    /// Threads seen accessing; a thread's first access checks that its clock covers
    /// `floor` (else pairs with dropped nodes may be missed: `incomplete`).
    seen: Vec<bool>,
    incomplete: Option<(u32, u64)>,
    walk: Vec<u32>,
    pairs: Vec<RacePair>,
    /// `Some`: pairs grouped by location pair instead of listed ([`PairGroups`]).
    groups: Option<PairGroups>,
}

/// Pairs grouped by location pair ([`GroupKey`]) as they are found, as
/// [`RaceReport::grouped`] groups a full list: per group its first instance (the pair with
/// the earliest second event, the latest first event among those) and the number of
/// distinct second events. Pairs arrive in the order of their second events (each at the
/// access that completes it), so a group needs only its latest second event to count.
#[derive(Debug, Default)]
struct PairGroups {
    index: FxHashMap<GroupKey, u32>,
    /// (first instance, distinct second events, latest second event counted).
    groups: Vec<(RacePair, u64, u64)>,
}

impl PairGroups {
    fn add(&mut self, p: RacePair) {
        let next = self.groups.len() as u32;
        let g = *self.index.entry(p.group_key()).or_insert(next);
        if g == next {
            self.groups.push((p, 1, p.second));
            return;
        }
        let (first, count, last) = &mut self.groups[g as usize];
        if *last != p.second {
            debug_assert!(p.second > *last, "pairs arrive by second event");
            *count += 1;
            *last = p.second;
        } else if p.second == first.second && p.first > first.first {
            *first = p;
        }
    }
}

impl PairAccesses {
    pub fn new(wrd: bool, streaming: bool) -> PairAccesses {
        PairAccesses {
            wrd,
            streaming,
            cw: Vec::new(),
            cr: Vec::new(),
            history: Vec::new(),
            next_collect: FIRST_COLLECT,
            collect_min: FIRST_COLLECT,
            floor: Vec::new(),
            seen: Vec::new(),
            incomplete: None,
            walk: Vec::new(),
            pairs: Vec::new(),
            groups: None,
        }
    }

    /// Groups the pairs by location pair instead of listing them ([`PairGroups`]).
    pub fn grouped(mut self) -> PairAccesses {
        self.groups = Some(PairGroups::default());
        self
    }

    /// The first access of thread `t` (clock `c`): after a collection, its clock must cover
    /// the floor, as a forked thread's does.
    #[cold]
    #[inline(never)]
    fn first_access<C: Clock>(&mut self, t: usize, index: u64, c: &C) {
        if t >= self.seen.len() {
            self.seen.resize(t + 1, false);
        }
        self.seen[t] = true;
        let covered = self
            .floor
            .iter()
            .enumerate()
            .all(|(u, &k)| k <= c.get(ThreadId(u as u32)));
        if !covered && self.incomplete.is_none() {
            self.incomplete = Some((t as u32, index));
        }
    }

    #[inline]
    fn seen(&mut self, ev: &Event, index: u64, c: &impl Clock) {
        let t = ev.thread.index();
        if !self.seen.get(t).copied().unwrap_or(false) {
            self.first_access(t, index, c);
        }
    }

    /// Rebuilds the history without the nodes at or below `floor` (and their subtrees:
    /// a node's replaced accesses happen before it), keeping every list's order.
    fn compact(&mut self, floor: &[u32]) {
        let old = std::mem::take(&mut self.history);
        let mut new: Vec<Node> = Vec::with_capacity(old.len() / 2);
        let passed = |n: &Node| {
            floor
                .get(n.epoch.thread().index())
                .is_some_and(|&k| n.epoch.time() <= k)
        };
        // Copies the list at `head` (kept nodes only) and returns its new head; the kept
        // nodes' own lists are queued in `todo` as (new node, old head).
        let copy = |head: u32, new: &mut Vec<Node>, todo: &mut Vec<(u32, u32)>| -> u32 {
            let mut first = NONE;
            let mut last = NONE;
            let mut k = head;
            while k != NONE {
                let n = old[k as usize];
                if !passed(&n) {
                    let i = new.len() as u32;
                    new.push(Node {
                        children: NONE,
                        next: NONE,
                        ..n
                    });
                    if n.children != NONE {
                        todo.push((i, n.children));
                    }
                    if last == NONE {
                        first = i;
                    } else {
                        new[last as usize].next = i;
                    }
                    last = i;
                }
                k = n.next;
            }
            first
        };
        let mut todo: Vec<(u32, u32)> = Vec::new();
        for sets in [&mut self.cw, &mut self.cr] {
            for set in sets.iter_mut() {
                for root in set.iter_mut() {
                    root.children = copy(root.children, &mut new, &mut todo);
                    while let Some((i, head)) = todo.pop() {
                        let h = copy(head, &mut new, &mut todo);
                        new[i as usize].children = h;
                    }
                }
            }
        }
        self.history = new;
    }

    #[inline]
    fn sets(&mut self, x: usize) {
        if x >= self.cw.len() {
            self.cw.resize_with(x + 1, Vec::new);
            self.cr.resize_with(x + 1, Vec::new);
        }
    }

    #[cold]
    #[inline(never)]
    fn report(&mut self, earlier: &Node, earlier_op: Op, index: u64, ev: &Event) {
        let first = Event::new(earlier.epoch.thread(), earlier_op, ev.target, earlier.loc);
        let p = RacePair::new(earlier.index, first, index, *ev);
        match &mut self.groups {
            Some(g) => g.add(p),
            None => self.pairs.push(p),
        }
    }

    /// Reports every access of the set (`writes`: `cw`, else `cr`) of `ev`'s variable that
    /// is unordered with clock `c`, and (complete mode) the unordered accesses they
    /// replaced. `skip_last` leaves out the newest entry (SHB: the last write, checked
    /// before the join).
    fn check<C: Clock>(&mut self, writes: bool, index: u64, ev: &Event, c: &C, skip_last: bool) {
        let x = ev.target as usize;
        let op = if writes { Op::Write } else { Op::Read };
        let n = if writes {
            self.cw[x].len()
        } else {
            self.cr[x].len()
        };
        let n = n - (skip_last && n > 0) as usize;
        for i in 0..n {
            let e = if writes { self.cw[x][i] } else { self.cr[x][i] };
            if epoch_le(e.epoch, c) {
                continue;
            }
            self.report(&e, op, index, ev);
            if !self.streaming && e.children != NONE {
                self.walk_history(e.children, op, index, ev, c);
            }
        }
    }

    fn walk_history<C: Clock>(&mut self, head: u32, op: Op, index: u64, ev: &Event, c: &C) {
        self.walk.clear();
        self.walk.push(head);
        while let Some(mut k) = self.walk.pop() {
            while k != NONE {
                let h = self.history[k as usize];
                if !epoch_le(h.epoch, c) {
                    self.report(&h, op, index, ev);
                    if h.children != NONE {
                        self.walk.push(h.children);
                    }
                }
                k = h.next;
            }
        }
    }

    /// Adds the access to its set, replacing (into the history) the entries ordered
    /// before it.
    fn update<C: Clock>(&mut self, writes: bool, index: u64, ev: &Event, c: &C) {
        let x = ev.target as usize;
        let set = if writes {
            &mut self.cw[x]
        } else {
            &mut self.cr[x]
        };
        let mut children = NONE;
        let history = &mut self.history;
        let keep_history = !self.streaming;
        set.retain(|e| {
            if epoch_le(e.epoch, c) {
                if keep_history {
                    history.push(Node {
                        next: children,
                        ..*e
                    });
                    children = (history.len() - 1) as u32;
                }
                false
            } else {
                true
            }
        });
        set.push(Node {
            epoch: Epoch::new(ev.thread, c.get(ev.thread)),
            index,
            loc: ev.loc,
            children,
            next: NONE,
        });
    }
}

impl<C: Clock> Accesses<C> for PairAccesses {
    fn read(&mut self, index: u64, ev: &Event, c: &C) {
        self.sets(ev.target as usize);
        self.seen(ev, index, c);
        if !self.wrd {
            self.check(true, index, ev, c, false);
            self.update(false, index, ev, c);
        } else if self.streaming {
            // Alg. 4, lines 2–6: all of cw against the clock before the join.
            self.check(true, index, ev, c, false);
        } else {
            // The last write (the newest entry of cw) is checked before the join: an SHB
            // WRD race pair (w3po Def. 3.4) when no other path orders it before the read.
            let x = ev.target as usize;
            if let Some(&lw) = self.cw[x].last() {
                if !epoch_le(lw.epoch, c) {
                    self.report(&lw, Op::Write, index, ev);
                }
            }
        }
    }

    fn read_after_wrd(&mut self, index: u64, ev: &Event, c: &C) {
        if !self.streaming {
            // Every other write against the SHB clock of the read. The last write is
            // ordered by now, and so is everything it replaced.
            self.check(true, index, ev, c, true);
        }
        self.update(false, index, ev, c);
    }

    fn write(&mut self, index: u64, ev: &Event, c: &C) {
        self.sets(ev.target as usize);
        self.seen(ev, index, c);
        self.check(true, index, ev, c, false);
        self.update(true, index, ev, c);
        self.check(false, index, ev, c, false);
    }

    fn finish(&mut self, report: &mut RaceReport) {
        report.pairs = std::mem::take(&mut self.pairs);
        if let Some(g) = self.groups.take() {
            (report.pairs, report.group_counts) =
                g.groups.into_iter().map(|(p, c, _)| (p, c)).unzip();
            report.notes.push(
                "one pair per location pair (its first instance) with its number of racing \
                 accesses; --all-pairs lists every pair"
                    .into(),
            );
        }
        if !self.streaming {
            report
                .extra
                .insert("history_nodes".into(), (self.history.len() as u64).into());
        }
        if let Some((t, index)) = self.incomplete {
            report.incomplete = Some(format!(
                "thread {t} first accesses memory at event {index} without a fork, after \
                 replaced accesses ordered before every other thread were dropped: pairs with \
                 those may be missing"
            ));
        }
    }

    fn report_kind(&self) -> ReportKind {
        ReportKind::Pairs
    }

    #[inline(always)]
    fn collect_due(&self) -> bool {
        self.history.len() >= self.next_collect
    }

    /// The floor: per thread component, the least over the live threads (forked or seen
    /// accessing, not joined) — every future access's clock holds it, clocks only grow and
    /// a thread forked later starts from its parent's. Nodes at or below it are dropped.
    fn collect(&mut self, threads: &[C], status: &[u8]) {
        let live = |u: usize| {
            let s = status.get(u).copied().unwrap_or(0);
            (s & FORKED != 0 || self.seen.get(u).copied().unwrap_or(false)) && s & JOINED == 0
        };
        let mut floor: Option<Vec<u32>> = None;
        for (_, c) in threads.iter().enumerate().filter(|&(u, _)| live(u)) {
            let f = floor.get_or_insert_with(|| vec![u32::MAX; threads.len()]);
            for (t, k) in f.iter_mut().enumerate() {
                *k = (*k).min(c.get(ThreadId(t as u32)));
            }
        }
        if let Some(floor) = floor {
            self.compact(&floor);
            if self.floor.len() < floor.len() {
                self.floor.resize(floor.len(), 0);
            }
            for (a, b) in self.floor.iter_mut().zip(&floor) {
                *a = (*a).max(*b);
            }
        }
        self.next_collect = (2 * self.history.len()).max(self.collect_min);
    }
}

/// HBP (`hbp`).
pub type Hbp<C> = HbEngine<C, PairAccesses>;

/// Creates `hbp` with clock kind `C`; `streaming` runs Alg. 3 as published.
pub fn hbp<C: Clock>(streaming: bool) -> Hbp<C> {
    hbp_with(streaming, false)
}

/// [`hbp`], with its pairs grouped by location pair if `grouped` ([`PairGroups`]).
pub fn hbp_with<C: Clock>(streaming: bool, grouped: bool) -> Hbp<C> {
    let complete = "(every HB-unordered conflicting pair)";
    pair_engine(AnalysisKind::Hbp, (3, complete), streaming, grouped)
}

/// The pair analysis `kind` of the HB family (HBP, or SHBP with SHB's last-write edges):
/// Alg. `alg` of its paper as published if `streaming`, else complete (finding what its
/// note `complete` says), its pairs grouped by location pair if `grouped`.
pub(super) fn pair_engine<C: Clock>(
    kind: AnalysisKind,
    (alg, complete): (u32, &str),
    streaming: bool,
    grouped: bool,
) -> HbEngine<C, PairAccesses> {
    let shb = kind == AnalysisKind::Shbp;
    let mut acc = PairAccesses::new(shb, streaming);
    if grouped {
        acc = acc.grouped();
    }
    let e = HbEngine::new(kind.name(), shb, acc);
    if streaming {
        e.note(format!(
            "streaming: Alg. {alg} as published (single pass; misses pairs whose earlier \
             access was replaced by a later one ordered after it)"
        ))
    } else {
        e.note(format!(
            "complete: Alg. {alg} with the history of replaced accesses walked at each access \
             {complete}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{run_trace, Analysis};
    use crate::clock::{TreeClock, VectorClock};
    use crate::gen::parse_events;
    use crate::trace::Trace;
    use std::collections::BTreeSet;

    fn pairs(a: Box<dyn Analysis>, t: &Trace) -> BTreeSet<(u64, u64)> {
        run_trace(t, &mut [a]).remove(0).pair_set()
    }

    /// Grouped while found = the full list grouped afterwards, for `hbp` and `shbp`, on
    /// generated traces with few locations (many pairs per location pair).
    #[test]
    fn grouping_while_found_equals_grouping_the_list() {
        use crate::analysis::{run_one, shb::shbp_with};
        use crate::gen::{GenConfig, Generator};
        // Groups of more than one racing access seen (the test must exercise counting).
        let mut multi = 0;
        for seed in 0..40 {
            let cfg = GenConfig {
                events: 300,
                threads: 2 + (seed % 3) as u32,
                vars: 3,
                locks: 2,
                locs: 6,
                seed,
                ..GenConfig::default()
            };
            let t = Trace::read_from(&mut Generator::new(cfg)).unwrap();
            for streaming in [false, true] {
                let full = run_one(&t, Box::new(hbp_with::<VectorClock>(streaming, false)));
                let grouped = run_one(&t, Box::new(hbp_with::<VectorClock>(streaming, true)));
                let want = full.grouped();
                assert_eq!(grouped.pairs, want.pairs, "hbp seed {seed}");
                assert_eq!(grouped.group_counts, want.group_counts, "hbp seed {seed}");
                let full = run_one(&t, Box::new(shbp_with::<VectorClock>(streaming, false)));
                let grouped = run_one(&t, Box::new(shbp_with::<VectorClock>(streaming, true)));
                let want = full.grouped();
                assert_eq!(grouped.pairs, want.pairs, "shbp seed {seed}");
                assert_eq!(grouped.group_counts, want.group_counts, "shbp seed {seed}");
                multi += want.group_counts.iter().filter(|&&c| c > 1).count();
            }
        }
        assert!(multi > 0, "no group with more than one racing access");
    }

    /// Collections of the history (here whenever it has 8 nodes more than twice what the
    /// last one kept) change no pair of `hbp` or `shbp` and drop nodes. With every thread
    /// forked the run stays complete; with threads that start without a fork, a late one
    /// may make it incomplete, and then its pairs are a subset.
    #[test]
    fn collecting_the_history_changes_no_pair() {
        use crate::analysis::{run_one, shb::shbp_with};
        use crate::gen::{GenConfig, Generator};
        let mut dropped = 0u64;
        for seed in 0..60u64 {
            let fork_join = seed % 3 != 0;
            let cfg = GenConfig {
                events: 3000,
                threads: 2 + (seed % 4) as u32,
                vars: 4,
                locks: 3,
                locs: 8,
                fork_join,
                seed,
                ..GenConfig::default()
            };
            let t = Trace::read_from(&mut Generator::new(cfg)).unwrap();
            for wrd in [false, true] {
                let make = |collect: bool| {
                    let mut e = if wrd {
                        shbp_with::<VectorClock>(false, false)
                    } else {
                        hbp_with::<VectorClock>(false, false)
                    };
                    if collect {
                        e.acc.collect_min = 8;
                        e.acc.next_collect = 8;
                    }
                    e
                };
                let all = run_one(&t, Box::new(make(false)));
                let collected = run_one(&t, Box::new(make(true)));
                let nodes = |r: &RaceReport| r.extra["history_nodes"].as_u64().unwrap();
                dropped += nodes(&all) - nodes(&collected);
                if fork_join {
                    assert!(collected.incomplete.is_none(), "seed {seed}");
                }
                if collected.incomplete.is_none() {
                    assert_eq!(all.pairs, collected.pairs, "seed {seed} wrd {wrd}");
                } else {
                    let (a, c) = (all.pair_set(), collected.pair_set());
                    assert!(c.is_subset(&a), "seed {seed} wrd {wrd}");
                }
            }
        }
        assert!(dropped > 0, "no collection dropped a node");
    }

    /// A thread that starts without a fork after a collection, with accesses the collection
    /// dropped racing with its own: the report says it is incomplete.
    #[test]
    fn an_unforked_thread_after_a_collection_is_reported() {
        use crate::analysis::run_one;
        // T0 writes x many times under its own program order (each replaces the last), then
        // T1 (never forked) writes x.
        let mut events: Vec<Event> = (0..40).map(|_| Event::write(0, 0)).collect();
        events.push(Event::write(1, 0));
        let t = Trace::from_events(events);
        let mut e = hbp_with::<VectorClock>(false, false);
        e.acc.collect_min = 8;
        e.acc.next_collect = 8;
        let r = run_one(&t, Box::new(e));
        assert!(r.incomplete.is_some(), "{:?}", r.extra);
        let full = run_one(&t, Box::new(hbp_with::<VectorClock>(false, false)));
        assert!(full.incomplete.is_none());
        assert!(r.pair_set().is_subset(&full.pair_set()));
    }

    /// w3po Ex. 5.1 in spirit: T1 writes twice (the second replaces the first), T2's
    /// write races with both. The single pass sees only the latest.
    #[test]
    fn replaced_access_is_recovered() {
        let t = Trace::from_events(parse_events(
            "T0|w(V0) T0|w(V0) T1|w(V0) T1|r(V1) T1|r(V1) T0|w(V1)",
        ));
        let all: BTreeSet<_> = [(0, 2), (1, 2), (3, 5), (4, 5)].into();
        assert_eq!(pairs(Box::new(hbp::<VectorClock>(false)), &t), all);
        assert_eq!(pairs(Box::new(hbp::<TreeClock>(false)), &t), all);
        let streamed: BTreeSet<_> = [(1, 2), (4, 5)].into();
        assert_eq!(pairs(Box::new(hbp::<VectorClock>(true)), &t), streamed);
    }

    #[test]
    fn history_is_pruned_below_ordered_accesses() {
        // T0: w w; rel; T1: acq; w — all ordered; then T2's read races with all three.
        let t = Trace::from_events(parse_events(
            "T0|w(V0) T0|w(V0) T0|rel(L0) T1|acq(L0) T1|w(V0) T2|r(V0)",
        ));
        let all: BTreeSet<_> = [(0, 5), (1, 5), (4, 5)].into();
        assert_eq!(pairs(Box::new(hbp::<VectorClock>(false)), &t), all);
        let mut e = t.events.clone();
        // The reader acquires the lock after T1: ordered after everything.
        e.insert(5, Event::release(1, 0));
        e.insert(6, Event::acquire(2, 0));
        let t2 = Trace::from_events(e);
        assert!(pairs(Box::new(hbp::<VectorClock>(false)), &t2).is_empty());
    }

    #[test]
    fn report_fields() {
        let t = Trace::from_events(vec![Event::read(0, 3), Event::write(1, 3)]);
        let r = run_trace(
            &t,
            &mut [Box::new(hbp::<VectorClock>(false)) as Box<dyn Analysis>],
        )
        .remove(0);
        assert_eq!(r.pairs.len(), 1);
        let p = r.pairs[0];
        assert_eq!((p.first, p.second), (0, 1));
        assert_eq!(p.first_event, t.events[0]);
        assert_eq!(p.second_event, t.events[1]);
        assert_eq!(p.kind, crate::report::PairKind::ReadWrite);
        assert_eq!(r.kind, ReportKind::Pairs);
    }
}
