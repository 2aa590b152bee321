//! The exact oracle: exhaustive search over correctly reordered prefixes (SPEC §2).
//!
//! Sources: Sulzmann and Stadtmüller, *Efficient, Near Complete and Often Sound Hybrid
//! Dynamic Data Race Prediction* (extended version, 2020; `papers/w3po-hybrid-lockset.txt`),
//! Def. 2.5 (correctly reordered prefix), Def. 2.6 (trace-specific schedule), Def. 2.9
//! (predictable race pairs: `e` right before `f`); and the standard *enabled* notion of
//! predictable races (Kini et al. PLDI'17, Mathur et al. OOPSLA'18).
//!
//! A correctly reordered prefix `T'` of a well-formed trace `T`:
//!
//! - per thread, the events of `T'` are a prefix of that thread's events in `T`;
//! - every read in `T'` has the same last write in `T'` as in `T` (or none in both). This
//!   holds for plain reads (`r` sees the same `w`), volatile reads (`vr` sees the same
//!   `vw`) and waits (`wait(C)` sees the same latest `sig(C)`: a sig is a write of `C`, a
//!   wait a read of it);
//! - lock semantics: a lock held by another thread blocks an acquire; re-entrant acquires
//!   nest;
//! - a forked thread acts only after its fork; `join(u)` runs only after `u`'s last event
//!   and after `u`'s fork (a thread ends only after it starts, even without events).
//!
//! `mbegin`, `mend`, `begin`, `end` are thread-local and unconstrained.
//!
//! The oracle computes four sets of conflicting pairs `(e, f)`, `e < f` in trace order:
//!
//! - **predictable** (enabled): after some correctly reordered prefix, `e` and `f` are both
//!   the next event of their (forked) threads. The racing events are not executed.
//! - **trace-specific**: the same over prefixes that keep the order of critical sections on
//!   each lock (an acquire of `l` runs only if it is the next acquire of `l` in `T`) and,
//!   since SPEC §1 makes `vw → later vr` an HB edge, keep every earlier `vw` of a variable
//!   before a `vr` of it (our extension of Def. 2.6 to volatiles; without it HB and WCP
//!   would not be trace-specific complete on traces with volatiles).
//! - **adjacent** (w3po Def. 2.9): some correctly reordered prefix ends with `e` immediately
//!   followed by `f`, or `f` by `e`, both executed (so a racing read sees its last write).
//! - **trace-specific adjacent**: adjacent over trace-specific prefixes.
//!
//! It promises exactness, nothing about speed: a depth-first search over states, memoised.
//! A state is the per-thread positions plus, for each variable / condition that is read
//! somewhere, its current last writer. Lock holders and acquire counts are functions of the
//! positions, so they are not part of the key; a slot with no read left to execute is keyed
//! as "don't care" (its last writer can no longer matter). Traces and searches above the
//! budget ([`OracleConfig`]) give an [`ErrorKind::Budget`] error.

use std::collections::BTreeSet;

use rustc_hash::FxHashSet;

use crate::error::{Error, ErrorKind, Result};
use crate::report::{RacePair, RaceReport, ReportKind};
use crate::trace::validate::validate_trace;
use crate::trace::{Op, Trace};

/// Budgets of one oracle run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OracleConfig {
    /// Longest trace the oracle accepts.
    pub max_events: usize,
    /// Most states one search may visit (each of the two searches counts on its own).
    pub max_states: usize,
}

impl Default for OracleConfig {
    fn default() -> Self {
        OracleConfig {
            max_events: 200,
            max_states: 5_000_000,
        }
    }
}

/// Which of the oracle's notions a report is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OracleNotion {
    /// Both events enabled after some correctly reordered prefix (the standard notion).
    Predictable,
    /// As `Predictable`, critical sections kept in trace order.
    TraceSpecific,
    /// Some correctly reordered prefix ends with the two events, adjacent (w3po Def. 2.9).
    Adjacent,
    /// As `Adjacent`, critical sections kept in trace order.
    TraceSpecificAdjacent,
}

impl OracleNotion {
    pub const ALL: [OracleNotion; 4] = [
        OracleNotion::Predictable,
        OracleNotion::TraceSpecific,
        OracleNotion::Adjacent,
        OracleNotion::TraceSpecificAdjacent,
    ];

    /// `predictable`, `trace-specific`, `adjacent`, `trace-specific-adjacent`.
    pub fn name(self) -> &'static str {
        match self {
            OracleNotion::Predictable => "predictable",
            OracleNotion::TraceSpecific => "trace-specific",
            OracleNotion::Adjacent => "adjacent",
            OracleNotion::TraceSpecificAdjacent => "trace-specific-adjacent",
        }
    }

    pub fn from_name(s: &str) -> Option<OracleNotion> {
        OracleNotion::ALL.into_iter().find(|n| n.name() == s)
    }

    fn description(self) -> &'static str {
        match self {
            OracleNotion::Predictable => {
                "predictable races: both events enabled after some correctly reordered prefix \
                 (SPEC §2, standard notion)"
            }
            OracleNotion::TraceSpecific => {
                "trace-specific predictable races: both events enabled after some correctly \
                 reordered prefix that keeps critical sections in trace order"
            }
            OracleNotion::Adjacent => {
                "adjacent races (w3po Def. 2.9): some correctly reordered prefix ends with the \
                 two events next to each other"
            }
            OracleNotion::TraceSpecificAdjacent => {
                "trace-specific adjacent races (w3po Def. 2.9 with Def. 2.6): adjacent in a \
                 prefix that keeps critical sections in trace order"
            }
        }
    }
}

/// The oracle's answer: pairs `(first, second)` of trace indices, `first < second`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OracleResult {
    pub predictable: BTreeSet<(u64, u64)>,
    pub trace_specific: BTreeSet<(u64, u64)>,
    pub adjacent: BTreeSet<(u64, u64)>,
    pub trace_specific_adjacent: BTreeSet<(u64, u64)>,
    /// States visited by both searches together.
    pub states: usize,
}

impl OracleResult {
    /// The pair set of one notion.
    pub fn pairs(&self, which: OracleNotion) -> &BTreeSet<(u64, u64)> {
        match which {
            OracleNotion::Predictable => &self.predictable,
            OracleNotion::TraceSpecific => &self.trace_specific,
            OracleNotion::Adjacent => &self.adjacent,
            OracleNotion::TraceSpecificAdjacent => &self.trace_specific_adjacent,
        }
    }

    /// The pairs of one notion as a report (analysis name `oracle`).
    #[cold]
    #[inline(never)]
    pub fn report(&self, trace: &Trace, which: OracleNotion) -> RaceReport {
        let mut r = RaceReport::new("oracle", ReportKind::Pairs);
        r.events = trace.len() as u64;
        for &(a, b) in self.pairs(which) {
            let (ea, eb) = (trace.events[a as usize], trace.events[b as usize]);
            r.pairs.push(RacePair::new(a, ea, b, eb));
        }
        r.normalize();
        r.notes
            .push(format!("exact oracle, {}", which.description()));
        r.extra.insert("notion".into(), which.name().into());
        r.extra.insert("states".into(), (self.states as u64).into());
        r
    }
}

/// Runs the exact oracle on a small well-formed trace.
///
/// Errors: [`ErrorKind::IllFormed`] for an ill-formed trace, [`ErrorKind::Budget`] when
/// the trace is longer than `cfg.max_events` or a search visits more than `cfg.max_states`
/// states.
pub fn analyze(trace: &Trace, cfg: &OracleConfig) -> Result<OracleResult> {
    if trace.len() > cfg.max_events {
        return Err(Error::new(ErrorKind::Budget(format!(
            "the oracle accepts at most {} events and this trace has {} (the search is \
             exponential; raise the event budget, OracleConfig::max_events, at your own risk)",
            cfg.max_events,
            trace.len()
        ))));
    }
    if let Some(v) = validate_trace(trace).into_iter().next() {
        return Err(v.to_error());
    }
    let prep = Prep::new(trace);
    let mut out = OracleResult::default();

    let full = Search::run(&prep, false, cfg.max_states)?;
    out.states += full.states;
    out.predictable = full.pairs(&full.enabled);
    out.adjacent = full.pairs(&full.adjacent);
    if prep.has_acquire {
        let ts = Search::run(&prep, true, cfg.max_states)?;
        out.states += ts.states;
        out.trace_specific = ts.pairs(&ts.enabled);
        out.trace_specific_adjacent = ts.pairs(&ts.adjacent);
    } else {
        // Without critical sections every schedule is trace-specific.
        out.trace_specific = out.predictable.clone();
        out.trace_specific_adjacent = out.adjacent.clone();
    }
    Ok(out)
}

const NONE: u32 = u32::MAX;

/// What the search needs from the trace, in dense arrays.
struct Prep {
    n: usize,
    threads: usize,
    slots: usize,
    locks: usize,
    ops: Vec<Op>,
    /// Per event: its target (the variable of an access).
    var: Vec<u32>,
    /// Per thread: its events (trace indices), in order.
    tev: Vec<Vec<u32>>,
    /// Per event: its slot (read/written variable or condition), `NONE` if untracked.
    slot: Vec<u32>,
    /// Per event: for a write, its code (1 + rank among the slot's writes); for a read, the
    /// code of its last write in the trace (0: none); for an acquire, its rank among the
    /// lock's acquires; for a join, the joined thread.
    code: Vec<u32>,
    /// Per event: lock of acquire / release.
    lock: Vec<u32>,
    /// Per thread: `(parent thread, position of the fork in the parent)` or `NONE`.
    fork_at: Vec<(u32, u32)>,
    /// Per volatile read: `(thread, position in thread)` of every earlier `vw` of its
    /// variable in the trace. The trace-specific notion keeps them before the read, as
    /// HB's `vw → later vr` edge does (SPEC §1); empty for other events.
    vw_before: Vec<Vec<(u32, u32)>>,
    /// `[slot * threads + t]`: 1 + position of the last read of the slot in thread `t`,
    /// 0 if none. A slot is dead once every thread is past it.
    last_read: Vec<u32>,
    /// Bytes per key field.
    width: usize,
    /// The trace-specific search differs from the full one (acquires, or volatile reads
    /// after a volatile write).
    has_acquire: bool,
}

impl Prep {
    fn new(trace: &Trace) -> Prep {
        let n = trace.len();
        let threads = trace
            .events
            .iter()
            .map(|e| e.thread.index() + 1)
            .chain(
                trace
                    .events
                    .iter()
                    .filter(|e| matches!(e.op, Op::Fork | Op::Join))
                    .map(|e| e.target as usize + 1),
            )
            .max()
            .unwrap_or(0);
        let mut tev = vec![Vec::new(); threads];
        for (i, e) in trace.events.iter().enumerate() {
            tev[e.thread.index()].push(i as u32);
        }
        // Slots: (class, id) for every object that is read somewhere. Class 0 plain, 1
        // volatile, 2 condition.
        let class = |op: Op| -> Option<(u32, bool)> {
            match op {
                Op::Read => Some((0, true)),
                Op::Write => Some((0, false)),
                Op::VolatileRead => Some((1, true)),
                Op::VolatileWrite => Some((1, false)),
                Op::Wait => Some((2, true)),
                Op::Signal => Some((2, false)),
                _ => None,
            }
        };
        let mut slot_map = rustc_hash::FxHashMap::<(u32, u32), u32>::default();
        for e in &trace.events {
            if let Some((c, true)) = class(e.op) {
                let k = slot_map.len() as u32;
                slot_map.entry((c, e.target)).or_insert(k);
            }
        }
        let slots = slot_map.len();
        let mut slot = vec![NONE; n];
        let mut code = vec![0u32; n];
        let mut lock = vec![NONE; n];
        let mut writers = vec![0u32; slots];
        let mut current = vec![0u32; slots];
        let mut locks = 0usize;
        let mut acq_count: Vec<u32> = Vec::new();
        let mut fork_at = vec![(NONE, NONE); threads];
        let mut tpos = vec![0u32; threads];
        let mut last_read = vec![0u32; slots * threads];
        let mut vw_before = vec![Vec::new(); n];
        let mut vws: rustc_hash::FxHashMap<u32, Vec<(u32, u32)>> = Default::default();
        for (i, e) in trace.events.iter().enumerate() {
            match e.op {
                Op::VolatileWrite => vws
                    .entry(e.target)
                    .or_default()
                    .push((e.thread.0, tpos[e.thread.index()])),
                Op::VolatileRead => vw_before[i] = vws.get(&e.target).cloned().unwrap_or_default(),
                _ => {}
            }
            let t = e.thread.index();
            if let Some((c, is_read)) = class(e.op) {
                if let Some(&s) = slot_map.get(&(c, e.target)) {
                    slot[i] = s;
                    let s = s as usize;
                    if is_read {
                        code[i] = current[s];
                        last_read[s * threads + t] = tpos[t] + 1;
                    } else {
                        writers[s] += 1;
                        code[i] = writers[s];
                        current[s] = writers[s];
                    }
                }
            }
            match e.op {
                Op::Acquire | Op::Release => {
                    let l = e.target as usize;
                    locks = locks.max(l + 1);
                    if acq_count.len() <= l {
                        acq_count.resize(l + 1, 0);
                    }
                    lock[i] = e.target;
                    if e.op == Op::Acquire {
                        code[i] = acq_count[l];
                        acq_count[l] += 1;
                    }
                }
                Op::Fork => fork_at[e.target as usize] = (t as u32, tpos[t]),
                Op::Join => code[i] = e.target,
                _ => {}
            }
            tpos[t] += 1;
        }
        let max_field = n.max(writers.iter().copied().max().unwrap_or(0) as usize);
        let width = if max_field <= u8::MAX as usize {
            1
        } else if max_field <= u16::MAX as usize {
            2
        } else {
            4
        };
        Prep {
            n,
            threads,
            slots,
            locks,
            ops: trace.events.iter().map(|e| e.op).collect(),
            var: trace.events.iter().map(|e| e.target).collect(),
            tev,
            slot,
            code,
            lock,
            fork_at,
            last_read,
            width,
            has_acquire: trace.events.iter().any(|e| e.op == Op::Acquire)
                || vw_before.iter().any(|v| !v.is_empty()),
            vw_before,
        }
    }
}

/// The visited set: keys of at most 16 bytes are packed into a `u128` (no allocation per
/// state), longer ones boxed.
enum Visited {
    Small(FxHashSet<u128>),
    Large(FxHashSet<Box<[u8]>>),
}

impl Visited {
    fn new(key_len: usize) -> Visited {
        if key_len <= 16 {
            Visited::Small(FxHashSet::default())
        } else {
            Visited::Large(FxHashSet::default())
        }
    }

    /// Inserts a key; false if it was there already.
    fn insert(&mut self, key: &[u8]) -> bool {
        match self {
            Visited::Small(s) => {
                let mut b = [0u8; 16];
                b[..key.len()].copy_from_slice(key);
                s.insert(u128::from_le_bytes(b))
            }
            Visited::Large(s) => {
                if s.contains(key) {
                    false
                } else {
                    s.insert(key.into())
                }
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Visited::Small(s) => s.len(),
            Visited::Large(s) => s.len(),
        }
    }
}

/// One depth-first search (full or trace-specific).
struct Search<'p> {
    p: &'p Prep,
    trace_specific: bool,
    max_states: usize,
    pos: Vec<u32>,
    /// Per slot: code of the current last writer (0: none).
    lw: Vec<u32>,
    /// Per lock: holder thread (`NONE`: free) and depth.
    holder: Vec<u32>,
    depth: Vec<u32>,
    /// Per lock: acquires executed so far (trace-specific search).
    acq_done: Vec<u32>,
    key: Vec<u8>,
    visited: Visited,
    /// `[e * n + f]`, `e < f`.
    enabled: Vec<bool>,
    adjacent: Vec<bool>,
    states: usize,
}

impl<'p> Search<'p> {
    fn run(p: &'p Prep, trace_specific: bool, max_states: usize) -> Result<Search<'p>> {
        let mut s = Search {
            p,
            trace_specific,
            max_states,
            pos: vec![0; p.threads],
            lw: vec![0; p.slots],
            holder: vec![NONE; p.locks],
            depth: vec![0; p.locks],
            acq_done: vec![0; p.locks],
            key: Vec::with_capacity((p.threads + p.slots) * p.width),
            visited: Visited::new((p.threads + p.slots) * p.width),
            enabled: vec![false; p.n * p.n],
            adjacent: vec![false; p.n * p.n],
            states: 0,
        };
        if !s.dfs() {
            return Err(Error::new(ErrorKind::Budget(format!(
                "the oracle's {} search visited more than {} states (raise the state budget, \
                 OracleConfig::max_states, or shorten the trace)",
                if trace_specific {
                    "trace-specific"
                } else {
                    "full"
                },
                max_states
            ))));
        }
        s.states = s.visited.len();
        Ok(s)
    }

    fn pairs(&self, set: &[bool]) -> BTreeSet<(u64, u64)> {
        let n = self.p.n;
        set.iter()
            .enumerate()
            .filter(|&(_, &b)| b)
            .map(|(i, _)| ((i / n) as u64, (i % n) as u64))
            .collect()
    }

    fn push_key(&mut self, v: u32) {
        match self.p.width {
            1 => self.key.push(v as u8),
            2 => self.key.extend_from_slice(&(v as u16).to_le_bytes()),
            _ => self.key.extend_from_slice(&v.to_le_bytes()),
        }
    }

    /// The next event of thread `t` if it has one and the thread was forked (or never is).
    #[inline]
    fn next_of(&self, t: usize) -> Option<usize> {
        let p = self.p;
        let e = *p.tev[t].get(self.pos[t] as usize)?;
        let (parent, at) = p.fork_at[t];
        if parent != NONE && self.pos[parent as usize] <= at {
            return None;
        }
        Some(e as usize)
    }

    /// True if enabled event `e` of thread `t` may execute now.
    #[inline]
    fn executable(&self, t: usize, e: usize) -> bool {
        let p = self.p;
        match p.ops[e] {
            Op::Read | Op::VolatileRead | Op::Wait => {
                (p.slot[e] == NONE || self.lw[p.slot[e] as usize] == p.code[e])
                    && (!self.trace_specific
                        || p.vw_before[e]
                            .iter()
                            .all(|&(u, k)| self.pos[u as usize] > k))
            }
            Op::Acquire => {
                let l = p.lock[e] as usize;
                let h = self.holder[l];
                (h == NONE || h == t as u32)
                    && (!self.trace_specific || self.acq_done[l] == p.code[e])
            }
            Op::Join => {
                // The joined thread has ended: all its events ran, and it was started (its
                // fork ran, if the trace forks it) — even a thread without events ends
                // only after it starts, as in HB's fork → child → join chain.
                let u = p.code[e] as usize;
                let (parent, at) = p.fork_at[u];
                self.pos[u] as usize == p.tev[u].len()
                    && (parent == NONE || self.pos[parent as usize] > at)
            }
            _ => true,
        }
    }

    /// True if the conflicting enabled accesses `a` then `b` can both execute, in this order.
    #[inline]
    fn runs_then(&self, a: usize, b: usize) -> bool {
        let p = self.p;
        let s = p.slot[a];
        if s == NONE {
            // Nobody reads this variable: two writes.
            return true;
        }
        let cur = self.lw[s as usize];
        match (p.ops[a], p.ops[b]) {
            (Op::Write, Op::Read) => p.code[b] == p.code[a],
            (Op::Read, Op::Write) => p.code[a] == cur,
            _ => true,
        }
    }

    /// Visits the current state; false when over budget.
    fn dfs(&mut self) -> bool {
        let p = self.p;
        self.key.clear();
        for t in 0..p.threads {
            self.push_key(self.pos[t]);
        }
        for s in 0..p.slots {
            let live = (0..p.threads).any(|t| self.pos[t] < p.last_read[s * p.threads + t]);
            self.push_key(if live { self.lw[s] } else { 0 });
        }
        if !self.visited.insert(&self.key) {
            return true;
        }
        if self.visited.len() > self.max_states {
            return false;
        }

        // Racing pairs at this state.
        for t in 0..p.threads {
            let Some(e) = self.next_of(t) else { continue };
            if !p.ops[e].is_access() {
                continue;
            }
            for u in t + 1..p.threads {
                let Some(f) = self.next_of(u) else { continue };
                if !p.ops[f].is_access() || !conflicting(p, e, f) {
                    continue;
                }
                let (a, b) = if e < f { (e, f) } else { (f, e) };
                let k = a * p.n + b;
                self.enabled[k] = true;
                if !self.adjacent[k] && (self.runs_then(a, b) || self.runs_then(b, a)) {
                    self.adjacent[k] = true;
                }
            }
        }

        // Successors.
        for t in 0..p.threads {
            let Some(e) = self.next_of(t) else { continue };
            if !self.executable(t, e) {
                continue;
            }
            // Apply.
            let s = p.slot[e];
            let mut old = 0;
            match p.ops[e] {
                Op::Write | Op::VolatileWrite | Op::Signal if s != NONE => {
                    old = self.lw[s as usize];
                    self.lw[s as usize] = p.code[e];
                }
                Op::Acquire => {
                    let l = p.lock[e] as usize;
                    self.holder[l] = t as u32;
                    self.depth[l] += 1;
                    self.acq_done[l] += 1;
                }
                Op::Release => {
                    let l = p.lock[e] as usize;
                    self.depth[l] -= 1;
                    if self.depth[l] == 0 {
                        self.holder[l] = NONE;
                    }
                }
                _ => {}
            }
            self.pos[t] += 1;
            let ok = self.dfs();
            // Undo.
            self.pos[t] -= 1;
            match p.ops[e] {
                Op::Write | Op::VolatileWrite | Op::Signal if s != NONE => {
                    self.lw[s as usize] = old;
                }
                Op::Acquire => {
                    let l = p.lock[e] as usize;
                    self.depth[l] -= 1;
                    self.acq_done[l] -= 1;
                    if self.depth[l] == 0 {
                        self.holder[l] = NONE;
                    }
                }
                Op::Release => {
                    let l = p.lock[e] as usize;
                    self.depth[l] += 1;
                    self.holder[l] = t as u32;
                }
                _ => {}
            }
            if !ok {
                return false;
            }
        }
        true
    }
}

/// Two plain accesses of one variable, at least one a write (threads differ by caller).
#[inline]
fn conflicting(p: &Prep, e: usize, f: usize) -> bool {
    (p.ops[e] == Op::Write || p.ops[f] == Op::Write) && p.var[e] == p.var[f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::from_actions;
    use crate::trace::std_format::StdReader;
    use crate::trace::{Event, ThreadId};
    use proptest::prelude::*;

    fn std(s: &str) -> Trace {
        let text: String = s
            .split("; ")
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .enumerate()
            .map(|(i, l)| format!("{l}|{i}\n"))
            .collect();
        Trace::read_from(&mut StdReader::new(text.as_bytes())).unwrap()
    }

    fn set(pairs: &[(u64, u64)]) -> BTreeSet<(u64, u64)> {
        pairs.iter().copied().collect()
    }

    fn run(s: &str) -> OracleResult {
        analyze(&std(s), &OracleConfig::default()).unwrap()
    }

    #[test]
    fn spec_example_enabled_but_not_adjacent() {
        let r = run("T2|r(x); T1|w(x); T1|w(x)");
        assert_eq!(r.predictable, set(&[(0, 1), (0, 2)]));
        assert_eq!(r.adjacent, set(&[(0, 1)]));
        assert_eq!(r.trace_specific, r.predictable);
        assert_eq!(r.trace_specific_adjacent, r.adjacent);
    }

    #[test]
    fn alternative_schedule_of_critical_sections() {
        // w3po Ex. 3.2 (right): the writes race only if T2's critical section goes first.
        let r = run("T1|w(x); T1|acq(y); T1|rel(y); T2|acq(y); T2|w(x); T2|rel(y)");
        assert_eq!(r.predictable, set(&[(0, 4)]));
        assert_eq!(r.adjacent, set(&[(0, 4)]));
        assert!(r.trace_specific.is_empty());
        assert!(r.trace_specific_adjacent.is_empty());
    }

    #[test]
    fn write_read_dependency_orders() {
        // w1 -> r2 must stay, so w0 can never meet w3.
        let r = run("T1|w(x); T1|w(y); T2|r(y); T2|w(x)");
        assert_eq!(r.predictable, set(&[(1, 2)]));
        assert_eq!(r.adjacent, set(&[(1, 2)]));
    }

    #[test]
    fn common_lock_protects() {
        let r = run("T1|acq(l); T1|w(x); T1|rel(l); T2|acq(l); T2|r(x); T2|rel(l)");
        assert!(r.predictable.is_empty());
        // Re-entrant acquires nest: the inner release does not free the lock.
        let r = run(
            "T1|acq(l); T1|acq(l); T1|w(x); T1|rel(l); T1|w(x); T1|rel(l); \
             T2|acq(l); T2|w(x); T2|rel(l)",
        );
        assert!(r.predictable.is_empty());
    }

    #[test]
    fn held_lock_at_end_blocks() {
        // T1 never releases: T2's critical section can only come first.
        let r = run("T2|acq(l); T2|w(x); T2|rel(l); T1|acq(l); T1|w(x)");
        assert!(r.predictable.is_empty());
        // An unprotected write still races with the write inside the open section.
        let r = run("T2|w(x); T2|acq(l); T2|rel(l); T1|acq(l); T1|w(x)");
        assert_eq!(r.predictable, set(&[(0, 4)]));
    }

    #[test]
    fn fork_and_join() {
        let r = run("T0|w(x); T0|fork(T1); T1|w(x); T0|join(T1); T0|w(x)");
        assert!(r.predictable.is_empty());
        let r = run("T0|fork(T1); T0|w(x); T1|w(x); T0|join(T1)");
        assert_eq!(r.predictable, set(&[(1, 2)]));
        // A forked thread cannot run before its fork even though its events are early in
        // another thread's order.
        let r = run("T0|w(x); T0|fork(T1); T0|r(x); T1|w(x)");
        assert_eq!(r.predictable, set(&[(2, 3)]));
        assert_eq!(r.adjacent, set(&[(2, 3)]));
    }

    #[test]
    fn volatile_orders_like_a_read() {
        let r = run("T1|w(x); T1|vw(v); T2|vr(v); T2|r(x)");
        assert!(r.predictable.is_empty());
        let r = run("T1|w(x); T1|vw(v); T2|r(x)");
        assert_eq!(r.predictable, set(&[(0, 2)]));
        // A volatile read that saw no write must still see none.
        let r = run("T2|vr(v); T2|w(x); T1|w(x); T1|vw(v)");
        assert_eq!(r.predictable, set(&[(1, 2)]));
        let r = run("T1|w(x); T1|vw(v); T2|vr(v); T2|w(x)");
        assert!(r.predictable.is_empty());
    }

    #[test]
    fn wait_sees_the_latest_signal() {
        let r = run("T1|w(x); T1|sig(c); T2|wait(c); T2|w(x)");
        assert!(r.predictable.is_empty());
        // The wait needs sig 2 to be the latest; sig 1 may come after the wait, so T1's
        // write can be postponed.
        let r = run("T1|w(x); T1|sig(c); T3|sig(c); T2|wait(c); T2|w(x)");
        assert_eq!(r.predictable, set(&[(0, 4)]));
        // Method and transaction markers are unconstrained.
        let r = run("T1|begin; T1|mbegin(m;a); T1|w(x); T1|mend(m); T1|end; T2|w(x)");
        assert_eq!(r.predictable, set(&[(2, 5)]));
    }

    #[test]
    fn trace_specific_keeps_critical_section_order() {
        // The read can meet T1's write only if T2's (empty) section goes first.
        let r = run("T1|acq(y); T1|w(x); T1|rel(y); T2|acq(y); T2|rel(y); T2|r(x)");
        assert_eq!(r.predictable, set(&[(1, 5)]));
        assert_eq!(r.adjacent, set(&[(1, 5)]));
        assert!(r.trace_specific.is_empty());
        assert!(r.trace_specific_adjacent.is_empty());
    }

    #[test]
    fn budgets_and_ill_formed_input() {
        let t = std("T1|w(x); T2|w(x); T3|w(x)");
        let e = analyze(
            &t,
            &OracleConfig {
                max_events: 2,
                ..OracleConfig::default()
            },
        )
        .unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Budget(m) if m.contains("max_events")));
        let e = analyze(
            &t,
            &OracleConfig {
                max_states: 3,
                ..OracleConfig::default()
            },
        )
        .unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Budget(m) if m.contains("max_states")));
        let bad = std("T1|rel(l)");
        assert!(analyze(&bad, &OracleConfig::default())
            .unwrap_err()
            .rule()
            .is_some());
    }

    #[test]
    fn report_orders_pairs_and_names_the_notion() {
        let t = std("T2|r(x); T1|w(x); T1|w(x)");
        let r = analyze(&t, &OracleConfig::default()).unwrap();
        let rep = r.report(&t, OracleNotion::Predictable);
        assert_eq!(rep.pair_set(), r.predictable);
        assert!(rep
            .pairs
            .iter()
            .all(|p| p.kind == crate::report::PairKind::ReadWrite));
        assert!(rep.notes[0].contains("predictable"));
        let rep = r.report(&t, OracleNotion::Adjacent);
        assert_eq!(rep.pair_set(), set(&[(0, 1)]));
    }

    // ----- brute force: all prefixes, each checked against the definition from scratch -----

    /// Class and slot key of a read-like / write-like event, and whether it reads.
    fn rw_key(e: &Event) -> Option<((u8, u32), bool)> {
        crate::analysis::osr::slot(e).map(|(key, write)| (key, !write))
    }

    /// Last write of event `seq[k]` within `seq` (as a trace index).
    fn last_write_in(t: &Trace, seq: &[usize], k: usize) -> Option<usize> {
        let (key, _) = rw_key(&t.events[seq[k]])?;
        seq[..k]
            .iter()
            .rev()
            .copied()
            .find(|&i| rw_key(&t.events[i]) == Some((key, false)))
    }

    /// Def. 2.5 + SPEC, checked directly on a candidate sequence of trace indices.
    fn valid(t: &Trace, seq: &[usize], ts: bool) -> bool {
        let ev = &t.events;
        let all: Vec<usize> = (0..ev.len()).collect();
        let mut seen = vec![false; ev.len()];
        let mut holder: std::collections::HashMap<u32, (ThreadId, u32)> = Default::default();
        let mut acq_seen: std::collections::HashMap<u32, Vec<usize>> = Default::default();
        for (k, &i) in seq.iter().enumerate() {
            if seen[i] {
                return false;
            }
            let e = ev[i];
            // Per-thread prefix.
            if (0..i).any(|j| ev[j].thread == e.thread && !seen[j]) {
                return false;
            }
            // Forked first.
            if let Some(f) =
                (0..ev.len()).find(|&j| ev[j].op == Op::Fork && ev[j].target == e.thread.0)
            {
                if !seen[f] {
                    return false;
                }
            }
            match e.op {
                Op::Read | Op::VolatileRead | Op::Wait
                    if last_write_in(t, seq, k) != last_write_in(t, &all, i) =>
                {
                    return false;
                }
                Op::Acquire => {
                    if let Some(&(h, _)) = holder.get(&e.target) {
                        if h != e.thread {
                            return false;
                        }
                    }
                    let d = holder.get(&e.target).map_or(0, |&(_, d)| d);
                    holder.insert(e.target, (e.thread, d + 1));
                    acq_seen.entry(e.target).or_default().push(i);
                }
                Op::Release => match holder.get(&e.target).copied() {
                    Some((h, d)) if h == e.thread => {
                        if d == 1 {
                            holder.remove(&e.target);
                        } else {
                            holder.insert(e.target, (h, d - 1));
                        }
                    }
                    _ => return false,
                },
                Op::Join
                    if (0..ev.len()).any(|j| {
                        !seen[j]
                            && (ev[j].thread.0 == e.target
                                || (ev[j].op == Op::Fork && ev[j].target == e.target))
                    }) =>
                {
                    return false;
                }
                _ => {}
            }
            seen[i] = true;
        }
        if ts {
            // A volatile read keeps every earlier vw of its variable before it.
            for (i, e) in ev.iter().enumerate() {
                if seen[i]
                    && e.op == Op::VolatileRead
                    && (0..i).any(|j| {
                        ev[j].op == Op::VolatileWrite && ev[j].target == e.target && !seen[j]
                    })
                {
                    return false;
                }
            }
            for (l, acqs) in acq_seen {
                let in_trace: Vec<usize> = (0..ev.len())
                    .filter(|&j| ev[j].op == Op::Acquire && ev[j].target == l)
                    .collect();
                if acqs[..] != in_trace[..acqs.len()] {
                    return false;
                }
            }
        }
        true
    }

    fn enabled(t: &Trace, seq: &[usize], e: usize) -> bool {
        let ev = &t.events;
        let inseq = |j: usize| seq.contains(&j);
        !inseq(e)
            && (0..e).all(|j| ev[j].thread != ev[e].thread || inseq(j))
            && (0..ev.len())
                .filter(|&j| ev[j].op == Op::Fork && ev[j].target == ev[e].thread.0)
                .all(inseq)
    }

    /// (predictable, adjacent) by enumerating every valid prefix without memoisation.
    type Pairs = BTreeSet<(u64, u64)>;

    fn brute(t: &Trace, ts: bool) -> (Pairs, Pairs) {
        let n = t.len();
        let mut pred = BTreeSet::new();
        let mut adj = BTreeSet::new();
        let mut stack: Vec<Vec<usize>> = vec![Vec::new()];
        while let Some(seq) = stack.pop() {
            for e in 0..n {
                for f in e + 1..n {
                    if !t.events[e].conflicts_with(&t.events[f]) {
                        continue;
                    }
                    if enabled(t, &seq, e) && enabled(t, &seq, f) {
                        pred.insert((e as u64, f as u64));
                    }
                    for (a, b) in [(e, f), (f, e)] {
                        let mut s = seq.clone();
                        s.extend([a, b]);
                        if valid(t, &s, ts) {
                            adj.insert((e as u64, f as u64));
                        }
                    }
                }
            }
            for e in 0..n {
                if seq.contains(&e) {
                    continue;
                }
                let mut s = seq.clone();
                s.push(e);
                if valid(t, &s, ts) {
                    stack.push(s);
                }
            }
        }
        (pred, adj)
    }

    /// `from_actions`, with volatile variable `vars + 1` turned into condition `C0`
    /// (vw → sig, vr → wait) so the search sees signals too.
    fn actions_trace(threads: u32, actions: &[(u8, u8, u8)], vars: u32, locks: u32) -> Trace {
        let t = from_actions(threads, vars, locks, actions);
        let events = t
            .events
            .iter()
            .map(|&e| match e.op {
                Op::VolatileWrite if e.target == vars + 1 => {
                    Event::new(e.thread, Op::Signal, 0, e.loc)
                }
                Op::VolatileRead if e.target == vars + 1 => {
                    Event::new(e.thread, Op::Wait, 0, e.loc)
                }
                _ => e,
            })
            .collect();
        Trace::from_events(events)
    }

    #[test]
    fn brute_force_agrees_on_examples() {
        for s in [
            "T2|r(x); T1|w(x); T1|w(x)",
            "T1|w(x); T1|acq(y); T1|rel(y); T2|acq(y); T2|w(x); T2|rel(y)",
            "T1|w(x); T1|sig(c); T3|sig(c); T2|wait(c); T2|w(x)",
            "T0|w(x); T0|fork(T1); T0|r(x); T1|w(x)",
            "T1|acq(l); T1|w(x); T1|rel(l); T2|acq(l); T2|w(x); T2|rel(l)",
            "T1|acq(l); T1|acq(l); T1|w(x); T1|rel(l); T1|w(x); T1|rel(l); T2|acq(l); T2|w(x)",
            "T1|w(x); T1|vw(v); T2|vr(v); T2|w(x); T3|vw(v); T3|w(x)",
        ] {
            let t = std(s);
            let r = analyze(&t, &OracleConfig::default()).unwrap();
            assert_eq!(brute(&t, false), (r.predictable, r.adjacent), "{s}");
            assert_eq!(
                brute(&t, true),
                (r.trace_specific, r.trace_specific_adjacent),
                "{s}"
            );
        }
    }

    /// Action kinds for `from_actions`, weighted towards synchronisation so that tiny traces
    /// often hold locks, fork, join and signal.
    fn kind() -> impl Strategy<Value = u8> {
        prop_oneof![4 => 0u8..6, 2 => Just(6u8), 2 => Just(7u8), 2 => 8u8..12]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]

        #[test]
        fn brute_force_agrees(
            threads in 2u32..4,
            locks in 1u32..3,
            actions in proptest::collection::vec((0u8..4, kind(), 0u8..4), 0..10),
        ) {
            let t = actions_trace(threads, &actions, 2, locks);
            prop_assume!(t.len() <= 8);
            let r = analyze(&t, &OracleConfig::default()).unwrap();
            prop_assert_eq!(brute(&t, false), (r.predictable.clone(), r.adjacent.clone()));
            prop_assert_eq!(brute(&t, true), (r.trace_specific, r.trace_specific_adjacent));
        }

        #[test]
        fn notions_nest(
            threads in 2u32..5,
            actions in proptest::collection::vec((0u8..4, 0u8..12, 0u8..4), 0..20),
        ) {
            let t = actions_trace(threads, &actions, 3, 2);
            let r = analyze(&t, &OracleConfig::default()).unwrap();
            prop_assert!(r.adjacent.is_subset(&r.predictable));
            prop_assert!(r.trace_specific.is_subset(&r.predictable));
            prop_assert!(r.trace_specific_adjacent.is_subset(&r.adjacent));
            prop_assert!(r.trace_specific_adjacent.is_subset(&r.trace_specific));
            for &(a, b) in &r.predictable {
                prop_assert!(a < b);
                prop_assert!(t.events[a as usize].conflicts_with(&t.events[b as usize]));
            }
        }
    }
}
