//! RDIT: happens-before race detection on traces with missing events (`rdit`).
//!
//! Paper: Rajagopalan, Huang, "RDIT: Race Detection from Incomplete Traces", ESEC/FSE 2015
//! (new ideas track), `shared/papers/rdit-incomplete-traces.txt`: §1.2 (barrier pairs,
//! reachable addresses, the naive approach), §3 (Alg. 1, per-thread *BeginStack*, edges in
//! trace order, the caveat on global addresses), §4 (simulating missing events by excluding
//! classes; Table 1).
//!
//! A call into code that was not traced is recorded as `mbegin(M;a1,…)` … `mend(M)` (SPEC
//! §1) with the addresses reachable from its arguments: a *barrier pair*. Pairs are matched
//! with a per-thread stack (Alg. 1 l. 10–15; nested calls nest; an `mend` with an empty
//! stack is ignored and counted; a pair still open at the end of the trace is closed there —
//! no event follows, so that changes no answer). Recorded events between the two ends are
//! kept and analysed as usual.
//!
//! **Which edges.** Alg. 1 adds an HB edge between two barrier pairs of different threads
//! whose address sets intersect, "in the direction of increasing trace location", on the
//! begin/end events. The missing code of a pair may run anywhere between its `mbegin` and
//! its `mend`, and overlapping calls of different threads are the common case (Fig. 1: T2
//! spins in its call until T1's call sets `Y`), so we take the weakest ordering that still
//! covers every synchronisation the missing code could have done through the shared
//! addresses, transitively: while a pair is *live* (between its ends) its missing code may
//! acquire and release each of its addresses at any moment, so at every moment all live
//! pairs connected through shared addresses (or through the same thread's call stack)
//! exchange what they know. Concretely, every address is a synchronisation object with a
//! vector clock; at each `mbegin` and each `mend` of a pair `P` of thread `t`, let `K` be
//! `t`'s clock joined with the clocks of every address of the live component of `P`; every
//! address of the component gets `K`, `t` joins `K`, then increments (a publication). For
//! two pairs that do not overlap in time this orders the end of the first before the
//! begin of the second — Alg. 1's edge between the pairs as units; for overlapping pairs it
//! orders the begin of each before the end of the other. Per boundary the cost is the size
//! of the live component (bounded by the live pairs, i.e. threads × call depth, times their
//! address sets), not the number of pairs so far: Alg. 1's all-pairs loop is never run.
//!
//! What it promises (checked by `tests/rdit_props.rs`): with no barrier pair, exactly HB
//! (Djit+, [`super::hb`]); on a trace made incomplete by [`crate::experiments::elide`] (the
//! missing events of a region touched only objects in its address set, and every
//! synchronisation object is missing everywhere or nowhere), every RDIT race is an HB race
//! of the complete trace — no false positive (§1.2's guarantee). Two weaker rules fail it:
//! "join the address clocks at `mbegin`, publish at `mend`" (no edge between overlapping
//! pairs: the seeded test over 4000 elided traces finds false pairs), and exchanging at
//! both ends with the pair's own addresses only, without the relay through live pairs
//! (`relay_through_a_live_call` in the tests).
//!
//! Modes: normal (address sets as given, minus the addresses marked global — §3's caveat —
//! which [`IgnoreGlobal`] strips from the stream); *conservative* (§1.2's naive approach:
//! every pair gets one shared address, so any two pairs of different threads are ordered).
//! The report is HB's (racy events, or pairs with [`rdit_pairs`]) with `extra`: barrier
//! pairs, boundary joins, races of plain HB on the same trace and how many the barrier
//! edges removed (a plain HB engine runs alongside when `count_removed` is set).

use crate::analysis::AnalysisKind;
use rustc_hash::FxHashSet;

use crate::clock::{Clock, VectorClock};
use crate::error::{Position, Result};
use crate::report::{RaceReport, ReportKind};
use crate::trace::{AddrId, Event, EventSource, Names, Op, ThreadId};

use super::hb::{Accesses, Djit, HbEngine};
use super::hbp::PairAccesses;
use super::{Analysis, Side};

/// Options of [`Rdit`].
#[derive(Clone, Debug, Default)]
pub struct RditConfig {
    /// Order every two barrier pairs of different threads (§1.2's naive approach).
    pub conservative: bool,
    /// Addresses ignored for barrier edges, by id (for in-memory traces whose names are
    /// known before the run; see [`RditConfig::resolve`]).
    pub ignore: Vec<AddrId>,
    /// The names of the addresses marked global, for the report. Streams are filtered by
    /// [`IgnoreGlobal`]; the report warns if one of these names still reached a barrier.
    pub ignore_names: Vec<String>,
    /// Run a plain HB engine alongside to count the races the barrier edges removed.
    pub count_removed: bool,
}

impl RditConfig {
    /// Adds the ids of `ignore_names` that `names` already knows to `ignore`.
    pub fn resolve(&mut self, names: &Names) {
        for (i, n) in names.addrs.iter().enumerate() {
            if self.ignore_names.iter().any(|g| g == n) {
                self.ignore.push(AddrId::new(i));
            }
        }
    }
}

/// Slot 0 is the one address of conservative mode; address `a` lives in slot `a + 1`.
const ALL: u32 = 0;

#[derive(Default)]
struct AddrState {
    clock: VectorClock,
    /// Live pairs whose address set holds this address.
    live: Vec<u32>,
    mark: u32,
    ignored: bool,
    used: bool,
}

#[derive(Default)]
struct Pair {
    thread: u32,
    /// Address slots (deduplicated); the `Vec` is reused when the slot is.
    addrs: Vec<u32>,
    mark: u32,
}

/// Counters for the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BarrierStats {
    /// `mbegin` events (barrier pairs opened).
    pub pairs: u64,
    /// `mend` events that closed a pair.
    pub closed: u64,
    /// `mend` events with no open pair in their thread (ignored).
    pub unmatched_ends: u64,
    /// Address clocks joined into thread clocks at pair boundaries (barrier edges).
    pub joins: u64,
    /// Largest live component seen (addresses).
    pub max_component: u64,
    /// Address occurrences dropped because they were marked global.
    pub ignored_occurrences: u64,
}

/// The barrier-pair access policy: any [`Accesses`] `A` plus RDIT's synchronisation at
/// `mbegin` / `mend` (see the module documentation).
pub struct Barriers<A> {
    inner: A,
    conservative: bool,
    addrs: Vec<AddrState>,
    pairs: Vec<Pair>,
    free: Vec<u32>,
    /// Per thread: the open pairs, innermost last.
    stacks: Vec<Vec<u32>>,
    // Scratch for the component walk.
    mark: u32,
    queue: Vec<u32>,
    comp: Vec<u32>,
    k: VectorClock,
    stats: BarrierStats,
}

impl<A> Barriers<A> {
    pub fn new(inner: A, cfg: &RditConfig) -> Barriers<A> {
        let mut b = Barriers {
            inner,
            conservative: cfg.conservative,
            addrs: vec![AddrState::default()],
            pairs: Vec::new(),
            free: Vec::new(),
            stacks: Vec::new(),
            mark: 0,
            queue: Vec::new(),
            comp: Vec::new(),
            k: VectorClock::new(),
            stats: BarrierStats::default(),
        };
        for a in &cfg.ignore {
            b.addr(a.0 + 1).ignored = true;
        }
        b
    }

    pub fn stats(&self) -> BarrierStats {
        self.stats
    }

    /// Pairs still open (closed by the end of the trace).
    pub fn open(&self) -> u64 {
        self.stacks.iter().map(|s| s.len() as u64).sum()
    }

    #[inline]
    fn addr(&mut self, slot: u32) -> &mut AddrState {
        let i = slot as usize;
        if i >= self.addrs.len() {
            self.addrs.resize_with(i + 1, AddrState::default);
        }
        &mut self.addrs[i]
    }

    fn begin<C: Clock>(&mut self, ev: &Event, addresses: &[AddrId], c: &mut C) {
        self.stats.pairs += 1;
        let t = ev.thread.index();
        if t >= self.stacks.len() {
            self.stacks.resize_with(t + 1, Vec::new);
        }
        let p = match self.free.pop() {
            Some(p) => p,
            None => {
                self.pairs.push(Pair::default());
                (self.pairs.len() - 1) as u32
            }
        };
        let mut set = std::mem::take(&mut self.pairs[p as usize].addrs);
        set.clear();
        self.mark += 1;
        let m = self.mark;
        if self.conservative {
            set.push(ALL);
        } else {
            for a in addresses {
                let s = self.addr(a.0 + 1);
                if s.ignored {
                    self.stats.ignored_occurrences += 1;
                } else if s.mark != m {
                    s.mark = m;
                    s.used = true;
                    set.push(a.0 + 1);
                }
            }
        }
        for &s in &set {
            self.addrs[s as usize].live.push(p);
        }
        self.pairs[p as usize] = Pair {
            thread: t as u32,
            addrs: set,
            mark: 0,
        };
        self.stacks[t].push(p);
        self.exchange(p, ev.thread, c);
    }

    fn end<C: Clock>(&mut self, ev: &Event, c: &mut C) {
        let t = ev.thread.index();
        let Some(&p) = self.stacks.get(t).and_then(|s| s.last()) else {
            self.stats.unmatched_ends += 1;
            return;
        };
        self.stats.closed += 1;
        self.exchange(p, ev.thread, c);
        self.stacks[t].pop();
        for &s in &self.pairs[p as usize].addrs {
            let live = &mut self.addrs[s as usize].live;
            if let Some(i) = live.iter().position(|&q| q == p) {
                live.swap_remove(i);
            }
        }
        self.free.push(p);
    }

    /// The live component of pair `p` shares one clock with thread `t` (publish + join),
    /// then `t` increments.
    fn exchange<C: Clock>(&mut self, p: u32, t: ThreadId, c: &mut C) {
        self.mark += 1;
        let m = self.mark;
        self.comp.clear();
        self.queue.clear();
        self.pairs[p as usize].mark = m;
        self.queue.push(p);
        while let Some(q) = self.queue.pop() {
            let q = q as usize;
            // The same thread's open calls are connected through its program order.
            let th = self.pairs[q].thread as usize;
            for &r in &self.stacks[th] {
                if self.pairs[r as usize].mark != m {
                    self.pairs[r as usize].mark = m;
                    self.queue.push(r);
                }
            }
            for i in 0..self.pairs[q].addrs.len() {
                let s = self.pairs[q].addrs[i] as usize;
                if self.addrs[s].mark == m {
                    continue;
                }
                self.addrs[s].mark = m;
                self.comp.push(s as u32);
                for &r in &self.addrs[s].live {
                    if self.pairs[r as usize].mark != m {
                        self.pairs[r as usize].mark = m;
                        self.queue.push(r);
                    }
                }
            }
        }
        self.k.clear();
        c.join_into_vector(&mut self.k);
        for &s in &self.comp {
            self.k.join(&self.addrs[s as usize].clock);
        }
        for &s in &self.comp {
            // `k` is above every old value: a copy is the join.
            self.addrs[s as usize].clock.copy_from(&self.k);
        }
        c.join_vector(&self.k);
        c.increment(t);
        self.stats.joins += self.comp.len() as u64;
        self.stats.max_component = self.stats.max_component.max(self.comp.len() as u64);
    }
}

impl<C: Clock, A: Accesses<C>> Accesses<C> for Barriers<A> {
    #[inline]
    fn read(&mut self, index: u64, ev: &Event, c: &C) {
        self.inner.read(index, ev, c);
    }
    #[inline]
    fn read_after_wrd(&mut self, index: u64, ev: &Event, c: &C) {
        self.inner.read_after_wrd(index, ev, c);
    }
    #[inline]
    fn write(&mut self, index: u64, ev: &Event, c: &C) {
        self.inner.write(index, ev, c);
    }
    #[inline]
    fn method(&mut self, _index: u64, ev: &Event, addresses: &[AddrId], c: &mut C) {
        if ev.op == Op::MethodBegin {
            self.begin(ev, addresses, c);
        } else {
            self.end(ev, c);
        }
    }
    fn finish(&mut self, report: &mut RaceReport) {
        self.inner.finish(report);
        let s = self.stats;
        let x = &mut report.extra;
        x.insert("barrier_pairs".into(), s.pairs.into());
        x.insert("pairs_closed_at_end".into(), self.open().into());
        x.insert("unmatched_mend".into(), s.unmatched_ends.into());
        x.insert("barrier_joins".into(), s.joins.into());
        x.insert("max_live_component".into(), s.max_component.into());
        x.insert(
            "mode".into(),
            if self.conservative {
                "conservative"
            } else {
                "normal"
            }
            .into(),
        );
        x.insert(
            "ignored_address_occurrences".into(),
            s.ignored_occurrences.into(),
        );
    }
    fn report_kind(&self) -> ReportKind {
        self.inner.report_kind()
    }
}

/// The RDIT analysis: an HB engine with [`Barriers`], and optionally a plain HB engine
/// alongside to count the races the barrier edges removed.
pub struct Rdit<C: Clock, A: Accesses<C>> {
    main: HbEngine<C, Barriers<A>>,
    plain: Option<HbEngine<C, A>>,
    ignore_names: Vec<String>,
}

impl<C: Clock, A: Accesses<C>> Rdit<C, A> {
    /// `make` builds a fresh access policy (called twice with `count_removed`).
    pub fn new(cfg: &RditConfig, make: impl Fn() -> A) -> Self {
        let what = if cfg.conservative {
            "conservative mode (§1.2's naive approach): every two barrier pairs of \
             different threads are ordered"
        } else {
            "barrier pairs whose address sets meet are ordered (live pairs exchange clocks \
             through shared addresses at every mbegin/mend)"
        };
        Rdit {
            main: HbEngine::new(AnalysisKind::Rdit.name(), false, Barriers::new(make(), cfg)).note(
                format!(
                    "RDIT: happens-before plus barrier edges; {what}; no false positive when the \
                 missing code synchronised only through the recorded addresses"
                ),
            ),
            plain: cfg
                .count_removed
                .then(|| HbEngine::new("hb", false, make())),
            ignore_names: cfg.ignore_names.clone(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> BarrierStats {
        self.main.acc.stats()
    }
}

impl<C: Clock, A: Accesses<C>> Analysis for Rdit<C, A> {
    fn name(&self) -> &'static str {
        AnalysisKind::Rdit.name()
    }

    #[inline]
    fn on_event(&mut self, index: u64, ev: &Event, side: Side<'_>) {
        self.main.on_event(index, ev, side);
        if let Some(p) = &mut self.plain {
            p.on_event(index, ev, side);
        }
    }

    fn finish(&mut self, names: &Names) -> RaceReport {
        let mut r = self.main.finish(names);
        let count = |r: &RaceReport| (r.pairs.len() + r.racy_events.len()) as u64;
        if let Some(p) = &mut self.plain {
            let h = p.finish(names);
            let (hb, rdit) = (count(&h), count(&r));
            r.extra.insert("hb_races".into(), hb.into());
            r.extra
                .insert("races_removed".into(), hb.saturating_sub(rdit).into());
        }
        r.extra.insert(
            "ignored_addresses".into(),
            serde_json::Value::from(self.ignore_names.clone()),
        );
        let b = &self.main.acc;
        for g in &self.ignore_names {
            if let Some(i) = names.addrs.iter().position(|n| n == g) {
                if b.addrs.get(i + 1).is_some_and(|s| s.used) {
                    r.notes.push(format!(
                        "warning: address `{g}` is marked global but reached a barrier \
                         pair (read the trace through rdit::IgnoreGlobal)"
                    ));
                }
            }
        }
        r
    }
}

/// `rdit`: racy events (Djit+ policy).
pub fn rdit<C: Clock>(cfg: &RditConfig) -> Rdit<C, Djit> {
    Rdit::new(cfg, Djit::default)
}

/// RDIT with the pair policy of `hbp` (every conflicting pair unordered by RDIT's order).
pub fn rdit_pairs<C: Clock>(cfg: &RditConfig) -> Rdit<C, PairAccesses> {
    Rdit::new(cfg, || PairAccesses::new(false, false))
}

/// An [`EventSource`] that drops the addresses marked global from every `mbegin` (§3's
/// caveat). Names are resolved once per new address id, as the inner reader interns them.
pub struct IgnoreGlobal<S> {
    inner: S,
    global: FxHashSet<String>,
    /// Per address id: 0 not looked up yet, 1 kept, 2 global.
    verdict: Vec<u8>,
    kept: Vec<AddrId>,
    /// Address occurrences dropped so far.
    pub dropped: u64,
}

impl<S: EventSource> IgnoreGlobal<S> {
    pub fn new(inner: S, global: &[String]) -> Self {
        IgnoreGlobal {
            inner,
            global: global.iter().cloned().collect(),
            verdict: Vec::new(),
            kept: Vec::new(),
            dropped: 0,
        }
    }

    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: EventSource> EventSource for IgnoreGlobal<S> {
    fn next_event(&mut self) -> Result<Option<Event>> {
        let ev = self.inner.next_event()?;
        self.kept.clear();
        if let Some(e) = &ev {
            if e.op == Op::MethodBegin {
                for &a in self.inner.addresses() {
                    let i = a.index();
                    if i >= self.verdict.len() {
                        self.verdict.resize(i + 1, 0);
                    }
                    if self.verdict[i] == 0 {
                        let name = self.inner.names().addrs.name(a.0);
                        self.verdict[i] = if self.global.contains(name) { 2 } else { 1 };
                    }
                    if self.verdict[i] == 1 {
                        self.kept.push(a);
                    } else {
                        self.dropped += 1;
                    }
                }
            }
        }
        Ok(ev)
    }
    fn names(&self) -> &Names {
        self.inner.names()
    }
    fn position(&self) -> Position {
        self.inner.position()
    }
    fn addresses(&self) -> &[AddrId] {
        &self.kept
    }
    fn seq(&self) -> Option<u64> {
        self.inner.seq()
    }
    fn bytes_read(&self) -> u64 {
        self.inner.bytes_read()
    }
    fn total_bytes(&self) -> Option<u64> {
        self.inner.total_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::run_trace;
    use crate::clock::TreeClock;
    use crate::trace::{std_format::StdReader, Trace};

    fn read(s: &str) -> Trace {
        Trace::read_from(&mut StdReader::new(s.as_bytes())).unwrap()
    }

    fn racy(a: Box<dyn Analysis>, t: &Trace) -> (Vec<u64>, RaceReport) {
        let r = run_trace(t, &mut [a]).remove(0);
        (r.racy_events.iter().map(|e| e.index).collect(), r)
    }

    fn cfg() -> RditConfig {
        RditConfig {
            count_removed: true,
            ..RditConfig::default()
        }
    }

    const FIG1: &str = "T1|w(X)|1\nT1|mbegin(set;Y)|2\nT1|mend(set)|3\n\
                        T2|mbegin(spin;Y)|4\nT2|mend(spin)|5\nT2|r(X)|6\n";

    #[test]
    fn shared_address_orders_disjoint_does_not() {
        let t = read(FIG1);
        let (v, r) = racy(Box::new(rdit::<VectorClock>(&cfg())), &t);
        assert!(v.is_empty());
        assert_eq!(r.extra["hb_races"], 1);
        assert_eq!(r.extra["races_removed"], 1);
        assert_eq!(r.extra["barrier_pairs"], 2);
        let t = read(&FIG1.replace("spin;Y", "spin;Z"));
        assert_eq!(racy(Box::new(rdit::<VectorClock>(&cfg())), &t).0, vec![5]);
        // Conservative mode orders them anyway.
        let c = RditConfig {
            conservative: true,
            ..cfg()
        };
        assert!(racy(Box::new(rdit::<TreeClock>(&c)), &t).0.is_empty());
    }

    #[test]
    fn overlapping_pairs_order_both_ways() {
        // T2's call starts before T1's ends: each begin is before the other's end.
        let t = read(
            "T1|w(X)|1\nT2|w(Z)|2\nT1|mbegin(a;Y)|3\nT2|mbegin(b;Y)|4\n\
             T1|mend(a)|5\nT2|mend(b)|6\nT2|r(X)|7\nT1|r(Z)|8\n",
        );
        assert!(racy(Box::new(rdit::<VectorClock>(&cfg())), &t).0.is_empty());
        assert!(racy(Box::new(rdit::<TreeClock>(&cfg())), &t).0.is_empty());
    }

    #[test]
    fn chain_through_a_long_call() {
        // T2's long call on {L, M} relays T1's call (on L, begun after T2's) to T3's
        // call (on M), which ends before T2's.
        let t = read(
            "T1|w(X)|1\nT2|mbegin(long;L,M)|2\nT1|mbegin(a;L)|3\nT1|mend(a)|4\n\
             T3|mbegin(b;M)|5\nT3|mend(b)|6\nT3|r(X)|7\nT2|mend(long)|8\n",
        );
        assert!(racy(Box::new(rdit::<VectorClock>(&cfg())), &t).0.is_empty());
        // The pair that relays must be live: once T2's call ended, no relay.
        let t = read(
            "T1|w(X)|1\nT2|mbegin(long;L,M)|2\nT2|mend(long)|3\nT1|mbegin(a;L)|4\n\
             T1|mend(a)|5\nT3|mbegin(b;M)|6\nT3|mend(b)|7\nT3|r(X)|8\n",
        );
        assert_eq!(racy(Box::new(rdit::<VectorClock>(&cfg())), &t).0, vec![7]);
    }

    #[test]
    fn recorded_events_inside_a_pair_and_unclosed_calls() {
        let t = read("T1|mbegin(a;Y)|1\nT1|w(X)|2\nT1|mend(a)|3\nT2|mbegin(b;Y)|4\nT2|r(X)|5\n");
        let (v, r) = racy(Box::new(rdit::<VectorClock>(&cfg())), &t);
        assert!(v.is_empty());
        assert_eq!(r.extra["pairs_closed_at_end"], 1);
        // A stray mend is counted and ignored.
        let t = read("T1|mend(a)|1\nT1|w(X)|2\nT2|r(X)|3\n");
        let (v, r) = racy(Box::new(rdit::<VectorClock>(&cfg())), &t);
        assert_eq!(v, vec![2]);
        assert_eq!(r.extra["unmatched_mend"], 1);
    }

    #[test]
    fn ignored_global_address() {
        let src = "T1|w(X)|1\nT1|mbegin(a;G,P)|2\nT1|mend(a)|3\n\
                   T2|mbegin(b;G,Q)|4\nT2|mend(b)|5\nT2|r(X)|6\n";
        let t = read(src);
        assert!(racy(Box::new(rdit::<VectorClock>(&cfg())), &t).0.is_empty());
        let mut c = RditConfig {
            ignore_names: vec!["G".into()],
            ..cfg()
        };
        // Not filtered: the report warns.
        let (v, r) = racy(Box::new(rdit::<VectorClock>(&c)), &t);
        assert!(v.is_empty());
        assert!(r.notes.iter().any(|n| n.contains("warning")));
        // By id.
        c.resolve(&t.names);
        let (v, r) = racy(Box::new(rdit::<VectorClock>(&c)), &t);
        assert_eq!(v, vec![5]);
        assert_eq!(r.extra["ignored_address_occurrences"], 2);
        // Through the stream filter.
        let mut f = IgnoreGlobal::new(StdReader::new(src.as_bytes()), &["G".into()]);
        let filtered = Trace::read_from(&mut f).unwrap();
        assert_eq!(f.dropped, 2);
        c.ignore.clear();
        let (v, r) = racy(Box::new(rdit::<VectorClock>(&c)), &filtered);
        assert_eq!(v, vec![5]);
        assert!(!r.notes.iter().any(|n| n.contains("warning")));
    }

    #[test]
    fn pairs_policy() {
        let t = read(&FIG1.replace("spin;Y", "spin;Z"));
        let r = run_trace(&t, &mut [Box::new(rdit_pairs::<VectorClock>(&cfg()))]).remove(0);
        assert_eq!(r.pair_set().into_iter().collect::<Vec<_>>(), vec![(0, 5)]);
    }
}
