//! Lockset + W3 (W3PO): potential race pairs from locksets and the W3 partial order.
//!
//! M. Sulzmann, K. Stadtmüller: "Efficient, Near Complete and Often Sound Hybrid Dynamic
//! Data Race Prediction", MPLR 2020 (`papers/w3po-hybrid-lockset.txt`), §4 (Def. 4.1 W3 =
//! WRD + weak WCP, Def. 4.2 write-write / read-write check, Def. 4.3 WRD check, Def. 4.4
//! potential pairs) and §5 (Algorithm 1: vector clocks, per-thread locksets, a history of
//! critical sections, replaced events). The paper's formulas were lost in extraction; we
//! implement SPEC §4 "W3 (reconstructed …)":
//!
//! W3 is the smallest partial order containing program order, WRD (last write → read),
//! the hard synchronisation edges every correct reordering keeps (fork → child, child →
//! join when the child has events, latest `vw(X)` → `vr(X)`, latest `sig(C)` → `wait(C)`), and *weak WCP*: if `e` lies
//! in a critical section CS1 on `y`, `f` in a later critical section CS2 on `y` and
//! `e <W3 f`, then `rel(CS1) <W3 f`. No release → acquire edge, no HB closure.
//!
//! Pairs (e earlier than f in the trace, conflicting plain accesses, disjoint locksets):
//! - e and f W3-unordered (Def. 4.2: write-write, and read-write in the order of the
//!   reordering — the read may come second in the trace, then the pair's kind by trace
//!   order is write-read);
//! - e is f's last write and no W3 path other than the direct WRD edge orders them
//!   (Def. 4.3, the WRD check).
//!
//! Algorithm. Each thread has a W3 vector clock whose own component counts its events, so
//! `e ≤W3 f` iff `time(e) ≤ V_f(thread(e))`. Each outermost critical section, once
//! released, is kept in a per-(lock, thread) history (acquire time, release time, release
//! clock). Whenever a thread holding locks gains knowledge (acquire, WRD read, `vr`,
//! `wait`, `join`) the weak-WCP rule is applied to a fixpoint (the paper's `w3` function):
//! for each held lock `y` and thread `u`, the latest CS of `u` on `y` whose acquire is known
//! is joined in if its release is not (a cursor per (lock, thread, `u`) moved on by a
//! galloping search: amortised `O(1)` per check, not a scan of the CS history).
//! Write-write / read-write candidates of a write are the accesses of each other thread not
//! yet known (a suffix of the per-(variable, thread) access log).
//!
//! Modes (`AnalysisOptions::history`, reported in `RaceReport::notes`):
//! - complete (`None`): the log keeps every access — the full history of replaced events,
//!   so every pair of Def. 4.4 is found; quadratic in the worst case (pairs themselves can
//!   be quadratic). Promise (tested against brute force and the oracle): all adjacent
//!   predictable pairs (Prop. 4.5). The paper's Prop. 4.6 (on two threads only predictable
//!   pairs) is false: see the ignored counterexamples in `tests/w3po_oracle.rs` (a
//!   deadlocking schedule; a write that must not come between a read and its write).
//! - linear (`Some(N)`): per (variable, thread, lockset) only the current access and the
//!   last `N` replaced ones of each kind are kept; linear time, may miss pairs (never adds
//!   any).
//!
//! Reports: by default pairs grouped by location pair, each with its first instance and its
//! number of racing accesses. In complete mode they come from a bounded shadow
//! (`locksets::Shadow`: per variable, location, kind and thread only the accesses not
//! dominated by a later one), so the complete mode is linear in the events too and finds
//! exactly the location pairs of the exhaustive one; in linear mode from the bounded log
//! (the pairs of its visible accesses, grouped). With `--all-pairs` every pair: at most
//! `PAIR_LIMIT` listed, `extra.pairs_total` the exact count.
//!
//! Threads (`-j N`, grouped modes only): split by variable ([`super::shard`]). Each shard
//! follows every event for the clocks, last writes and critical sections (a read's last
//! write orders, whichever shard owns the variable) and checks and logs only the accesses
//! of its own variables.

use super::locksets::{run_looking_ahead, Holdings, LsId, Pairs};
use super::shard::VarShard;
use super::slices::two;
use super::{Analysis, Side};
use crate::analysis::AnalysisKind;
use crate::clock::VectorClock;
use crate::report::RaceReport;
use crate::trace::{Event, LocId, Names, Op, ThreadId};

/// A released critical section.
#[derive(Clone, Copy, Debug)]
struct Cs {
    acq: u32,
    rel: u32,
    /// Offset of the release clock in the arena.
    at: u32,
    len: u32,
}

#[derive(Clone, Debug)]
struct LastWrite {
    /// The writer; [`LastWrite::NONE`] for a variable not written yet.
    thread: ThreadId,
    time: u32,
    index: u64,
    loc: LocId,
    ls: LsId,
    /// The writer's clock, inline for up to four threads (no allocation per variable in
    /// programs of few threads).
    clock: smallvec::SmallVec<[u32; 4]>,
}

impl LastWrite {
    const NONE: ThreadId = ThreadId(u32::MAX);
}

impl Default for LastWrite {
    fn default() -> Self {
        LastWrite {
            thread: LastWrite::NONE,
            time: 0,
            index: 0,
            loc: LocId::NONE,
            ls: 0, // the empty lockset
            clock: smallvec::SmallVec::new(),
        }
    }
}

/// Lockset + W3.
pub struct W3po {
    history: Option<usize>,
    hold: Holdings,
    clocks: Vec<VectorClock>,
    /// Per thread: (lock, acquire time) of its open outermost critical sections.
    open: Vec<Vec<(u32, u32)>>,
    /// Per lock, per thread: released critical sections in order.
    cs: Vec<Vec<Vec<Cs>>>,
    /// Per lock `y`, per thread `t` that checked it, per thread `u`: the number of `u`'s
    /// CSs on `y` whose acquire `t` knew at its last check (see [`W3po::weak_wcp`]).
    cursor: Vec<Vec<Vec<u32>>>,
    arena: Vec<u32>,
    last_write: Vec<LastWrite>,
    /// Per volatile variable: (writer thread, time, clock) of the latest `vw`.
    last_vw: Vec<(ThreadId, u32, VectorClock)>,
    signal: Vec<(ThreadId, u32, VectorClock)>,
    pairs: Pairs,
    scratch: VectorClock,
    /// Weak-WCP joins performed (a figure for the report).
    rule_joins: u64,
    /// The variables whose pairs it reports (all but when run as a shard: see
    /// [`Analysis::restrict_to_shard`]).
    shard: VarShard,
}

impl W3po {
    /// `history = None`: complete mode; `Some(n)`: linear mode keeping `n` replaced events.
    /// Pairs grouped by location pair.
    pub fn new(history: Option<usize>) -> W3po {
        W3po::with_mode(history, false)
    }

    /// `all`: every pair (`--all-pairs`); otherwise grouped by location pair.
    pub fn with_mode(history: Option<usize>, all: bool) -> W3po {
        W3po {
            history,
            hold: Holdings::new(),
            clocks: Vec::new(),
            open: Vec::new(),
            cs: Vec::new(),
            cursor: Vec::new(),
            arena: Vec::new(),
            last_write: Vec::new(),
            last_vw: Vec::new(),
            signal: Vec::new(),
            pairs: Pairs::new(all, history.map(|n| n + 1)),
            scratch: VectorClock::new(),
            rule_joins: 0,
            shard: VarShard::WHOLE,
        }
    }

    #[inline(always)]
    fn ensure_thread(&mut self, t: ThreadId) {
        if t.index() >= self.clocks.len() {
            self.add_threads(t);
        }
    }

    #[cold]
    #[inline(never)]
    fn add_threads(&mut self, t: ThreadId) {
        self.clocks.resize_with(t.index() + 1, VectorClock::new);
        self.open.resize_with(t.index() + 1, Vec::new);
    }

    /// Joins the arena clock of `cs` into `v`.
    #[inline]
    fn join_arena(arena: &[u32], cs: &Cs, v: &mut VectorClock) {
        let c = &arena[cs.at as usize..(cs.at + cs.len) as usize];
        for (u, &x) in c.iter().enumerate() {
            let u = ThreadId(u as u32);
            if x > v.get(u) {
                v.set(u, x);
            }
        }
    }

    /// The paper's `w3`: applies weak WCP to thread `t`'s clock until nothing changes. Every
    /// release clock joined is also joined into `also` (the "other paths" clock of a WRD
    /// check).
    ///
    /// For each held lock `y` and thread `u` the CS wanted is the last of `u`'s on `y` whose
    /// acquire `t` knows. `t`'s knowledge of `u` only grows and the list only grows at its
    /// end, so its position only moves forward: a cursor per (`y`, `t`, `u`) remembers it,
    /// and a galloping search moves it (amortised `O(1)` per check; `O(log gap)` after a
    /// long gap), where a binary search over the whole list would touch long CS lists that
    /// no cache holds.
    fn weak_wcp(&mut self, t: ThreadId, mut also: Option<&mut VectorClock>) {
        let n = self.hold.held_count(t);
        if n == 0 {
            return;
        }
        let W3po {
            hold,
            cs,
            cursor,
            clocks,
            arena,
            rule_joins,
            ..
        } = self;
        loop {
            let mut changed = false;
            for k in 0..n {
                let y = hold.held_lock(t, k).index();
                let Some(per) = cs.get(y) else { continue };
                let cur = cursors_of(cursor, y, t, per.len());
                for (u, list) in per.iter().enumerate() {
                    if u == t.index() || list.is_empty() {
                        continue;
                    }
                    let v = &mut clocks[t.index()];
                    let known = v.get(ThreadId(u as u32));
                    let i = advance(list, cur[u] as usize, known);
                    cur[u] = i as u32;
                    if i == 0 {
                        continue;
                    }
                    let c = &list[i - 1];
                    if known < c.rel {
                        Self::join_arena(arena, c, v);
                        if let Some(w) = also.as_deref_mut() {
                            Self::join_arena(arena, c, w);
                        }
                        *rule_joins += 1;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }

    fn acquire(&mut self, t: ThreadId, ev: &Event, time: u32) {
        if self.hold.acquire(t, ev.lock()) {
            self.open[t.index()].push((ev.target, time));
            self.weak_wcp(t, None);
        }
    }

    fn release(&mut self, t: ThreadId, ev: &Event, time: u32) {
        if !self.hold.release(t, ev.lock()) {
            return;
        }
        let open = &mut self.open[t.index()];
        let Some(k) = open.iter().position(|o| o.0 == ev.target) else {
            return;
        };
        let (_, acq) = open.remove(k);
        let y = ev.target as usize;
        if y >= self.cs.len() {
            self.cs.resize_with(y + 1, Vec::new);
        }
        if t.index() >= self.cs[y].len() {
            self.cs[y].resize_with(t.index() + 1, Vec::new);
        }
        let c = self.clocks[t.index()].as_slice();
        let at = self.arena.len() as u32;
        self.arena.extend_from_slice(c);
        self.cs[y][t.index()].push(Cs {
            acq,
            rel: time,
            at,
            len: c.len() as u32,
        });
    }

    fn write<const WHOLE: bool>(&mut self, index: u64, ev: &Event, t: ThreadId, time: u32) {
        let x = ev.var();
        let ls = self.hold.lockset(t);
        let v = &self.clocks[t.index()];
        if let Some(own) = self.shard.own::<WHOLE>(ev) {
            let table = &self.hold.table;
            self.pairs.check_push(table, ls, v, time, true, index, &own);
        }
        if x.index() >= self.last_write.len() {
            self.last_write
                .resize_with(x.index() + 1, LastWrite::default);
        }
        let lw = &mut self.last_write[x.index()];
        lw.thread = t;
        lw.time = time;
        lw.index = index;
        lw.loc = ev.loc;
        lw.ls = ls;
        // In place when the length is the same (the usual case: no call into the vector).
        let c = v.as_slice();
        if lw.clock.len() == c.len() {
            lw.clock.copy_from_slice(c);
        } else {
            lw.clock.clear();
            lw.clock.extend_from_slice(c);
        }
    }

    fn read<const WHOLE: bool>(&mut self, index: u64, ev: &Event, t: ThreadId, time: u32) {
        let x = ev.var();
        let ls = self.hold.lockset(t);
        if let Some(lw) = self
            .last_write
            .get(x.index())
            .filter(|w| w.thread != LastWrite::NONE)
        {
            let (u, wt) = (lw.thread, lw.time);
            if u != t && wt > self.clocks[t.index()].get(u) {
                // The WRD edge adds knowledge. For Def. 4.3 keep the join of every other
                // immediate predecessor (PO and weak-WCP releases) in `scratch`.
                let check = self.hold.table.disjoint(lw.ls, ls);
                let mut other = std::mem::take(&mut self.scratch);
                if check {
                    other.copy_from(&self.clocks[t.index()]);
                }
                let lw = &self.last_write[x.index()];
                self.clocks[t.index()].join_slice(&lw.clock);
                self.weak_wcp(t, if check { Some(&mut other) } else { None });
                if check && other.get(u) < wt {
                    if let Some(own) = self.shard.own::<WHOLE>(ev) {
                        let lw = &self.last_write[x.index()];
                        let first = Event::new(u, Op::Write, own.target, lw.loc);
                        self.pairs.add_events(lw.index, first, index, own);
                    }
                }
                self.scratch = other;
            }
        }
        // Def. 4.2 read-write pairs whose write comes first in the trace (the read runs
        // first in the reordering): earlier writes still W3-unordered after the WRD edge.
        if let Some(own) = self.shard.own::<WHOLE>(ev) {
            let v = &self.clocks[t.index()];
            let table = &self.hold.table;
            self.pairs
                .check_push(table, ls, v, time, false, index, &own);
        }
    }

    /// Joins a stored (thread, time, clock) edge source into `t`'s clock if it is news.
    fn join_edge(&mut self, t: ThreadId, src: Option<&(ThreadId, u32, VectorClock)>) -> bool {
        match src {
            Some((u, time, c)) if *u != t && *time > self.clocks[t.index()].get(*u) => {
                self.clocks[t.index()].join(c);
                true
            }
            _ => false,
        }
    }
}

impl W3po {
    /// The prefetch steps of [`W3po::on_events`] for the events that follow the current one
    /// (`next[0]` is the next event): each access's lockset is its thread's now.
    #[inline]
    fn prefetch<const WHOLE: bool>(&self, next: &[Event]) {
        let Some(log) = self.pairs.history_log() else {
            return;
        };
        // The shard's own accesses, as it sees them.
        let access = |k: usize| {
            next.get(k)
                .filter(|e| e.is_access())
                .and_then(|e| self.shard.own::<WHOLE>(e))
        };
        if let Some(e) = access(2) {
            log.prefetch_slot(self.hold.lockset(e.thread), &e);
        }
        if let Some(e) = access(1) {
            if let Some(v) = self.clocks.get(e.thread.index()) {
                log.prefetch_classes(self.hold.lockset(e.thread), v, &e);
            }
        }
        if let Some(e) = access(0) {
            log.prefetch_neighbours(self.hold.lockset(e.thread), &e);
        }
    }
}

/// Thread `t`'s cursors into the CS lists of lock `y` (one per thread of `per`), created on
/// first use (0: no CS known yet).
#[inline]
fn cursors_of(cursor: &mut Vec<Vec<Vec<u32>>>, y: usize, t: ThreadId, n: usize) -> &mut [u32] {
    if y >= cursor.len() {
        cursor.resize_with(y + 1, Vec::new);
    }
    let per = &mut cursor[y];
    if t.index() >= per.len() {
        per.resize_with(t.index() + 1, Vec::new);
    }
    let cur = &mut per[t.index()];
    if cur.len() < n {
        cur.resize(n, 0);
    }
    cur
}

/// The number of CSs of `list` whose acquire is at most `known`, given that it is at least
/// `from`: a galloping search forward from `from`.
#[inline]
fn advance(list: &[Cs], from: usize, known: u32) -> usize {
    if from >= list.len() || list[from].acq > known {
        return from;
    }
    // list[lo].acq <= known; look at lo + 1, lo + 2, lo + 4, ...
    let (mut lo, mut step) = (from, 1);
    loop {
        let probe = lo + step;
        if probe >= list.len() || list[probe].acq > known {
            let hi = probe.min(list.len());
            return lo + 1 + list[lo + 1..hi].partition_point(|c| c.acq <= known);
        }
        lo = probe;
        step *= 2;
    }
}

fn store_edge(v: &mut Vec<(ThreadId, u32, VectorClock)>, at: usize, t: ThreadId, c: &VectorClock) {
    if at >= v.len() {
        v.resize_with(at + 1, || (ThreadId(0), 0, VectorClock::new()));
    }
    let e = &mut v[at];
    e.0 = t;
    e.1 = c.get(t);
    e.2.copy_from(c);
}

impl W3po {
    /// One event; `WHOLE`: not run as a shard (no look at an access's shard).
    #[inline(never)]
    fn event<const WHOLE: bool>(&mut self, index: u64, ev: &Event) {
        let t = ev.thread;
        self.ensure_thread(t);
        self.clocks[t.index()].increment(t);
        let time = self.clocks[t.index()].get(t);
        match ev.op {
            Op::Acquire => self.acquire(t, ev, time),
            Op::Release => self.release(t, ev, time),
            Op::Write => self.write::<WHOLE>(index, ev, t, time),
            Op::Read => self.read::<WHOLE>(index, ev, t, time),
            // The child's clock starts from its parent's; a join takes the child's, and a
            // child without events still ends after its fork (fork → join edge).
            Op::Fork | Op::Join => {
                let u = ev.other_thread();
                if u != t {
                    self.ensure_thread(u);
                    let (a, b) = two(&mut self.clocks, t.index(), u.index());
                    if ev.op == Op::Fork {
                        b.join(a);
                    } else {
                        a.join(b);
                        self.weak_wcp(t, None);
                    }
                }
            }
            // The latest vw(X) / sig(C) publishes the thread's clock; vr(X) / wait(C) joins it.
            Op::VolatileWrite | Op::Signal => {
                let table = if ev.op == Op::Signal {
                    &mut self.signal
                } else {
                    &mut self.last_vw
                };
                store_edge(table, ev.target as usize, t, &self.clocks[t.index()]);
            }
            Op::VolatileRead | Op::Wait => {
                let wait = ev.op == Op::Wait;
                let src = std::mem::take(if wait {
                    &mut self.signal
                } else {
                    &mut self.last_vw
                });
                let changed = self.join_edge(t, src.get(ev.target as usize));
                *(if wait {
                    &mut self.signal
                } else {
                    &mut self.last_vw
                }) = src;
                if changed {
                    self.weak_wcp(t, None);
                }
            }
            Op::MethodBegin | Op::MethodEnd | Op::Begin | Op::End | Op::Local | Op::Branch => {}
        }
    }

    /// [`Analysis::on_events`] for a whole analysis (`WHOLE`) or a shard.
    fn run<const WHOLE: bool>(&mut self, first: u64, events: &[Event]) {
        let ahead = self
            .pairs
            .history_log()
            .is_some_and(|log| log.wants_prefetch());
        let (prefetch, event) = (Self::prefetch::<WHOLE>, Self::event::<WHOLE>);
        run_looking_ahead(self, ahead, first, events, prefetch, event);
    }
}

impl Analysis for W3po {
    fn name(&self) -> &'static str {
        AnalysisKind::W3po.name()
    }

    fn on_event(&mut self, index: u64, ev: &Event, _side: Side<'_>) {
        if self.shard.is_whole() {
            self.event::<true>(index, ev);
        } else {
            self.event::<false>(index, ev);
        }
    }

    /// With a bounded history (`--history N`, grouped) whose accesses land in long lists of
    /// lockset classes ([`wants_prefetch`](super::locksets::HistoryLog::wants_prefetch)),
    /// each access reaches classes in memory no cache holds. The next accesses' are asked
    /// for ahead, each step using what the one before brought in: variables and table slots
    /// three events ahead, classes two ahead, the neighbours a push relinks one ahead: each
    /// miss overlaps the work on the events before.
    fn on_events(&mut self, first: u64, events: &[Event]) {
        if self.shard.is_whole() {
            self.run::<true>(first, events);
        } else {
            self.run::<false>(first, events);
        }
    }

    /// Shardable in the grouped modes: every shard still sees every access and keeps the
    /// clocks, last writes and critical sections of all (accesses create W3 order: the WRD
    /// edge), but checks and logs only its own variables' accesses, nearly all of the work
    /// of `--history N`.
    fn restrict_to_shard(&mut self, shard: VarShard) -> bool {
        self.shard = shard;
        self.pairs.is_grouped()
    }

    fn finish(&mut self, _names: &Names) -> RaceReport {
        build_report(self)
    }
}

#[cold]
#[inline(never)]
fn build_report(a: &mut W3po) -> RaceReport {
    let mut r = a.pairs.report(AnalysisKind::W3po, &a.hold.table);
    match a.history {
        None => r.notes.push(
            "mode: complete (full history of replaced events): every Lockset-W3 potential \
             pair (Def. 4.4); complete for adjacent predictable pairs, not sound (not even on two \
             threads: the paper's Prop. 4.6 fails)"
                .into(),
        ),
        Some(n) => r.notes.push(format!(
            "mode: linear (history {n}: the current and {n} replaced accesses per variable, \
             thread, lockset and kind): may miss pairs of the complete mode"
        )),
    }
    r.extra.insert(
        "mode".into(),
        serde_json::Value::from(if a.history.is_some() {
            "linear"
        } else {
            "complete"
        }),
    );
    // Figures of the whole run, the same in every shard: only the first reports them
    // (`shard::merge` keeps a figure some shards lack as the first reports it).
    if a.shard.is_first() {
        if let Some(n) = a.history {
            r.extra.insert("history".into(), serde_json::Value::from(n));
        }
        r.extra.insert(
            "weak_wcp_joins".into(),
            serde_json::Value::from(a.rule_joins),
        );
    }
    r
}

/// The Lockset-W3 pairs of an in-memory trace (complete mode for `history = None`), every
/// pair (`--all-pairs`).
pub fn pairs(
    trace: &crate::trace::Trace,
    history: Option<usize>,
) -> std::collections::BTreeSet<(u64, u64)> {
    let mut a: Vec<Box<dyn Analysis>> = vec![Box::new(W3po::with_mode(history, true))];
    super::run_trace(trace, &mut a)
        .pop()
        .expect("one report")
        .pair_set()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::parse_events;
    use crate::trace::Trace;
    use Event as E;

    fn set(v: &[(u64, u64)]) -> std::collections::BTreeSet<(u64, u64)> {
        v.iter().copied().collect()
    }

    #[test]
    fn example_3_2_left_wrd_orders() {
        // T1: w(x) w(y); T2: r(y) w(x): the writes of x are ordered through the WRD edge
        // w(y) → r(y), so no pair for x (HB and WCP report one; it is not predictable).
        // The WRD pair (w(y), r(y)) itself is a write-read race.
        let t = Trace::from_events(parse_events("T0|w(V0) T0|w(V1) T1|r(V1) T1|w(V0)"));
        assert_eq!(pairs(&t, None), set(&[(1, 2)]));
    }

    #[test]
    fn example_3_9_alternative_schedule_wcp_misses() {
        // T1: w(z) acq(y) w(x) rel(y); T2: acq(y) w(x) rel(y) w(z): WCP orders the w(z)s
        // (rule (a) plus HB closure); W3 does not, and the pair is predictable.
        let t = Trace::from_events(parse_events(
            "T0|w(V1) T0|acq(L0) T0|w(V0) T0|rel(L0) T1|acq(L0) T1|w(V0) T1|rel(L0) T1|w(V1)",
        ));
        assert_eq!(pairs(&t, None), set(&[(0, 7)]));
    }

    #[test]
    fn example_3_2_right_alternative_schedule() {
        // T1: w(x) acq(y) rel(y); T2: acq(y) rel(y) w(x): W3 has no release → acquire edge.
        let t = Trace::from_events(parse_events(
            "T0|w(V0) T0|acq(L0) T0|rel(L0) T1|acq(L0) T1|rel(L0) T1|w(V0)",
        ));
        assert_eq!(pairs(&t, None), set(&[(0, 5)]));
    }

    #[test]
    fn example_5_1_replaced_events() {
        // T1: w(x) w(x); T2: w(x): both writes of T1 race with T2's. With history 0 the
        // first write has been replaced when T2 writes.
        let t = Trace::from_events(vec![E::write(0, 0), E::write(0, 0), E::write(1, 0)]);
        assert_eq!(pairs(&t, None), set(&[(0, 2), (1, 2)]));
        assert_eq!(pairs(&t, Some(0)), set(&[(1, 2)]));
        assert_eq!(pairs(&t, Some(1)), set(&[(0, 2), (1, 2)]));
    }

    #[test]
    fn wrd_pair_only_without_other_path() {
        // T1: w(x); T2: r(x) — a WRD pair.
        let t = Trace::from_events(vec![E::write(0, 0), E::read(1, 0)]);
        assert_eq!(pairs(&t, None), set(&[(0, 1)]));
        // T1: w(x) w(y); T2: r(y) r(x): the read of x is ordered through r(y) as well.
        let t = Trace::from_events(parse_events("T0|w(V0) T0|w(V1) T1|r(V1) T1|r(V0)"));
        assert_eq!(pairs(&t, None), set(&[(1, 2)]));
        // Not the last write: no write-read pair (T1: w(x) w(x); T2: r(x)).
        let t = Trace::from_events(vec![E::write(0, 0), E::write(0, 0), E::read(1, 0)]);
        assert_eq!(pairs(&t, None), set(&[(1, 2)]));
    }

    /// T1: `earlier` CSs on y writing w, then acq(y) w(x) w(z) rel(y); T2: acq(y) r(`read`)
    /// rel(y) w(z).
    fn cs_then_read(earlier: usize, read: u32) -> Trace {
        let mut ev = Vec::new();
        for _ in 0..earlier {
            ev.extend([E::acquire(0, 0), E::write(0, 2), E::release(0, 0)]);
        }
        ev.extend([
            E::acquire(0, 0),
            E::write(0, 0),
            E::write(0, 1),
            E::release(0, 0),
            E::acquire(1, 0),
            E::read(1, read),
            E::release(1, 0),
            E::write(1, 1),
        ]);
        Trace::from_events(ev)
    }

    #[test]
    fn weak_wcp_orders_critical_sections() {
        // T1: acq(y) w(x) rel(y) w(z)?; T2: acq(y) r(x) w(z) rel(y):
        // w(x) <WRD r(x), both in CSs on y ⇒ rel(CS1) <W3 r(x); locksets share y anyway.
        // The rule matters for the later write of a variable written before CS1's release:
        // T1: acq(y) w(x) w(z) rel(y); T2: acq(y) r(x) rel(y) w(z).
        assert_eq!(pairs(&cs_then_read(0, 0), None), set(&[]));
        // Without the read of x (T2 reads w instead) the CSs stay unordered and w(z) ‖ w(z).
        assert_eq!(pairs(&cs_then_read(0, 2), None), set(&[(2, 7)]));
    }

    #[test]
    fn weak_wcp_finds_the_latest_known_cs_after_a_gap() {
        // As above after two earlier CSs of T1 on y: the read makes T2 know T1's third CS
        // all at once (its cursor jumps from 0 to 3); the rule orders that CS's release,
        // hence its w(z), before T2's w(z).
        assert_eq!(pairs(&cs_then_read(2, 0), None), set(&[]));
    }

    #[test]
    fn prefetching_run_equals_event_by_event_run() {
        // Two threads access x and y under 40 different locks each: long lists of
        // classes, so a block run prefetches; it must report what single events do.
        let mut ev = Vec::new();
        for k in 0..40 {
            for t in 0..2 {
                ev.extend([
                    E::acquire(t, k),
                    E::write(t, k % 2),
                    E::read(t, 1 - k % 2),
                    E::release(t, k),
                ]);
            }
        }
        ev.extend([E::write(0, 0), E::read(1, 0), E::write(1, 1)]);
        let trace = Trace::from_events(ev);
        // The choice is made per block: the second one prefetches.
        let mut blocks = W3po::new(Some(2));
        let half = trace.events.len() / 2;
        blocks.on_events(0, &trace.events[..half]);
        assert!(blocks.pairs.history_log().unwrap().wants_prefetch());
        blocks.on_events(half as u64, &trace.events[half..]);
        let mut single = W3po::new(Some(2));
        for (i, e) in trace.events.iter().enumerate() {
            single.on_event(i as u64, e, Side::default());
        }
        let (a, b) = (blocks.finish(&trace.names), single.finish(&trace.names));
        assert!(!a.pairs.is_empty());
        assert_eq!(a.pairs, b.pairs);
        assert_eq!(a.group_counts, b.group_counts);
    }

    #[test]
    fn advance_equals_binary_search() {
        for n in 0..40u32 {
            let list: Vec<Cs> = (0..n)
                .map(|i| Cs {
                    acq: 3 * i + 1,
                    rel: 3 * i + 2,
                    at: 0,
                    len: 0,
                })
                .collect();
            for known in 0..3 * n + 3 {
                let want = list.partition_point(|c| c.acq <= known);
                for from in 0..=want {
                    assert_eq!(
                        advance(&list, from, known),
                        want,
                        "n {n} known {known} from {from}"
                    );
                }
            }
        }
    }

    #[test]
    fn report_names_mode() {
        let t = Trace::from_events(vec![E::write(0, 0), E::write(1, 0)]);
        for (h, word) in [(None, "complete"), (Some(4), "linear")] {
            let r = super::super::run_one(&t, Box::new(W3po::new(h)));
            assert!(r.notes.iter().any(|n| n.contains(word)));
            assert_eq!(r.extra["mode"], word);
        }
    }
}
