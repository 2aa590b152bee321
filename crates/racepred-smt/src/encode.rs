//! One window (or one alternative-path variant of it) as constraints, and the queries on it.
//!
//! See the crate doc for the encoding. Clauses that program order and fork/join already
//! satisfy are not built: each event gets a vector clock of the must-happen-before order
//! (program order, fork, join), and a clause with a disjunct that order implies is dropped.

use std::time::Duration;

use racepred::clock::VectorClock;
use racepred::report::PairKind;
use racepred::trace::values::alt_base;
use racepred::trace::values::{Ann, BinOp, Concrete, Expr, UnOp, ValueTrace};
use racepred::trace::{Event, Op};
use racepred::witness::{Model, ReplayIndex};
use rustc_hash::FxHashMap;
use z3::ast::{Bool, Int, BV};
use z3::{Params, SatResult, Solver};

/// The state at a window's start: what the fixed prefix left behind.
#[derive(Clone, Debug, Default)]
pub struct PreState {
    /// Re-entrant depth of each (thread, lock) held.
    depth: FxHashMap<(u32, u32), u32>,
    /// Latest write / vw / sig of each (space, object): its event number.
    last: FxHashMap<(u8, u32), u64>,
    /// Concrete register values.
    regs: FxHashMap<(u32, u32), i64>,
}

impl PreState {
    /// Runs events `[from, to)` of the trace as recorded.
    pub fn advance(&mut self, vt: &ValueTrace, from: usize, to: usize) {
        for i in from..to {
            let ev = vt.trace.events[i];
            let t = ev.thread.0;
            match ev.op {
                Op::Acquire => *self.depth.entry((t, ev.target)).or_insert(0) += 1,
                Op::Release => {
                    if let Some(d) = self.depth.get_mut(&(t, ev.target)) {
                        *d = d.saturating_sub(1);
                    }
                }
                Op::Write | Op::VolatileWrite | Op::Signal => {
                    self.last.insert((space(ev.op), ev.target), i as u64);
                }
                _ => {}
            }
            match vt.ann(i) {
                Ann::Read {
                    reg,
                    observed: Some(v),
                } => {
                    self.regs.insert((t, *reg), *v);
                }
                Ann::Let { reg, expr } => {
                    let regs = &self.regs;
                    if let Some(v) = expr.eval(&|r| regs.get(&(t, r)).copied()) {
                        self.regs.insert((t, *reg), v);
                    }
                }
                _ => {}
            }
        }
    }
}

fn space(op: Op) -> u8 {
    match op {
        Op::Read | Op::Write => 0,
        Op::VolatileRead | Op::VolatileWrite => 1,
        _ => 2,
    }
}

/// Where a read that keeps its write reads from.
#[derive(Clone, Copy, Debug)]
enum Src {
    Node(usize),
    /// The write before the window (or the initial value).
    Before,
}

#[derive(Clone, Copy, Debug)]
enum ReadKind {
    SameWrite(Src),
    SameValue(i64),
    Relaxed,
}

#[derive(Clone, Copy, Debug)]
struct Section {
    thread: u32,
    acq: Option<usize>,
    rel: Option<usize>,
}

/// A window as nodes and relations, before any solver is involved.
pub struct Problem<'a> {
    model: Model,
    /// Event numbers (alternative-path events from the trace's length on).
    num: Vec<u64>,
    ev: Vec<Event>,
    ann: Vec<&'a Ann>,
    is_alt: Vec<bool>,
    prev: Vec<Option<usize>>,
    thread_nodes: FxHashMap<u32, Vec<usize>>,
    fork_node: FxHashMap<u32, usize>,
    /// Must-happen-before clocks (program order, fork, join).
    vc: Vec<VectorClock>,
    /// Locks held (outermost acquires) at each access, empty for other events.
    lockset: Vec<Vec<u32>>,
    sections: FxHashMap<u32, Vec<Section>>,
    writes: FxHashMap<(u8, u32), Vec<usize>>,
    reads: Vec<(usize, ReadKind)>,
    /// Concrete value of each node's write where known.
    write_value: Vec<Option<i64>>,
    /// Value of each (space, object) at the window start, where known.
    pre_value: FxHashMap<(u8, u32), Option<i64>>,
    pre_regs: &'a FxHashMap<(u32, u32), i64>,
    negated: Option<usize>,
    /// Candidate pairs dropped before asking.
    pub pruned: u64,
}

impl<'a> Problem<'a> {
    /// The window `[ws, we)` of `vt`, with alternative path `alt` spliced in if given.
    #[allow(clippy::too_many_arguments)]
    pub fn build(
        vt: &'a ValueTrace,
        concrete: &Concrete,
        ix: &ReplayIndex,
        pre: &'a PreState,
        ws: usize,
        we: usize,
        alt: Option<usize>,
        model: Model,
    ) -> Problem<'a> {
        let mut p = Problem::empty(model, pre);
        let cut = alt.map(|a| {
            let b = vt.alts[a].branch;
            (vt.trace.events[b].thread, b)
        });
        for i in ws..we {
            let ev = vt.trace.events[i];
            if let Some((t, b)) = cut {
                if ev.thread == t && i > b {
                    continue;
                }
            }
            p.push(i as u64, ev, vt.ann(i), false);
        }
        if let Some(a) = alt {
            let base = alt_base(vt, a);
            let path = &vt.alts[a];
            for (k, ev) in path.events.iter().enumerate() {
                p.push(base + k as u64, *ev, &path.anns[k], true);
            }
            p.negated = p.num.iter().position(|&n| n == path.branch as u64);
        }
        p.relations(concrete, ix, pre, ws);
        p
    }

    /// The events `events` of `vt` (trace indices, ascending), run from the initial state
    /// (`pre` is the state before the trace: empty): a slice ([`crate::slice`]). A read
    /// whose write is not among them gets no data-flow constraint; a slice holds every
    /// read's write except, perhaps, the racing pair's own, which never run in a witness.
    pub fn build_events(
        vt: &'a ValueTrace,
        concrete: &Concrete,
        ix: &ReplayIndex,
        pre: &'a PreState,
        events: &[usize],
        model: Model,
    ) -> Problem<'a> {
        let mut p = Problem::empty(model, pre);
        for &i in events {
            p.push(i as u64, vt.trace.events[i], vt.ann(i), false);
        }
        p.relations(concrete, ix, pre, 0);
        p
    }

    fn empty(model: Model, pre: &'a PreState) -> Problem<'a> {
        Problem {
            model,
            num: Vec::new(),
            ev: Vec::new(),
            ann: Vec::new(),
            is_alt: Vec::new(),
            prev: Vec::new(),
            thread_nodes: Default::default(),
            fork_node: Default::default(),
            vc: Vec::new(),
            lockset: Vec::new(),
            sections: Default::default(),
            writes: Default::default(),
            reads: Vec::new(),
            write_value: Vec::new(),
            pre_value: Default::default(),
            pre_regs: &pre.regs,
            negated: None,
            pruned: 0,
        }
    }

    fn push(&mut self, n: u64, ev: Event, ann: &'a Ann, is_alt: bool) {
        self.num.push(n);
        self.ev.push(ev);
        self.ann.push(ann);
        self.is_alt.push(is_alt);
    }

    /// The node of trace event `n`, if the problem holds it.
    pub fn node(&self, n: u64) -> Option<usize> {
        self.num.binary_search(&n).ok().filter(|&i| !self.is_alt[i])
    }

    /// The pair cannot race in any witness this problem can give: program order, fork or
    /// join orders it, or both hold a common lock.
    pub fn excluded(&self, (a, b): (usize, usize)) -> bool {
        self.mhb(a, b)
            || self.mhb(b, a)
            || self.lockset[a].iter().any(|l| self.lockset[b].contains(l))
    }

    fn relations(&mut self, concrete: &Concrete, ix: &ReplayIndex, pre: &PreState, ws: usize) {
        let n = self.num.len();
        self.prev = vec![None; n];
        self.vc = Vec::with_capacity(n);
        self.lockset = vec![Vec::new(); n];
        self.write_value = vec![None; n];
        let mut clocks: FxHashMap<u32, VectorClock> = Default::default();
        let mut fork_vc: FxHashMap<u32, VectorClock> = Default::default();
        let mut depth: FxHashMap<(u32, u32), u32> = pre.depth.clone();
        let mut open: FxHashMap<(u32, u32), usize> = Default::default();
        let mut held: FxHashMap<u32, Vec<u32>> = Default::default();
        // Sections held at the window start.
        for (&(t, l), &d) in &pre.depth {
            if d > 0 {
                held.entry(t).or_default().push(l);
                let secs = self.sections.entry(l).or_default();
                open.insert((t, l), secs.len());
                secs.push(Section {
                    thread: t,
                    acq: None,
                    rel: None,
                });
            }
        }
        let mut node_of: FxHashMap<u64, usize> = Default::default();
        for i in 0..n {
            node_of.insert(self.num[i], i);
        }
        for i in 0..n {
            let ev = self.ev[i];
            let t = ev.thread.0;
            let nodes = self.thread_nodes.entry(t).or_default();
            let first = nodes.is_empty();
            self.prev[i] = nodes.last().copied();
            nodes.push(i);
            let c = clocks.entry(t).or_default();
            if first {
                if let Some(f) = fork_vc.get(&t) {
                    c.join(f);
                }
            }
            c.increment(ev.thread);
            match ev.op {
                Op::Fork => {
                    self.fork_node.insert(ev.target, i);
                    fork_vc.insert(ev.target, c.clone());
                }
                Op::Join => {
                    // A joined thread without events still ends after its fork.
                    if let Some(u) = clocks.get(&ev.target).or(fork_vc.get(&ev.target)).cloned() {
                        clocks.get_mut(&t).expect("own clock").join(&u);
                    }
                }
                _ => {}
            }
            self.vc.push(clocks[&t].clone());
            // Locks held at an access, and critical sections.
            if ev.is_access() {
                self.lockset[i] = held.get(&t).cloned().unwrap_or_default();
            }
            match ev.op {
                Op::Acquire => {
                    let d = depth.entry((t, ev.target)).or_insert(0);
                    if *d == 0 {
                        held.entry(t).or_default().push(ev.target);
                        let secs = self.sections.entry(ev.target).or_default();
                        open.insert((t, ev.target), secs.len());
                        secs.push(Section {
                            thread: t,
                            acq: Some(i),
                            rel: None,
                        });
                    }
                    *d += 1;
                }
                Op::Release => {
                    let d = depth.entry((t, ev.target)).or_insert(0);
                    *d = d.saturating_sub(1);
                    if *d == 0 {
                        if let Some(h) = held.get_mut(&t) {
                            h.retain(|&l| l != ev.target);
                        }
                        if let Some(k) = open.remove(&(t, ev.target)) {
                            self.sections.get_mut(&ev.target).expect("open section")[k].rel =
                                Some(i);
                        }
                    }
                }
                _ => {}
            }
            // Data flow.
            let key = (space(ev.op), ev.target);
            match ev.op {
                Op::Write | Op::VolatileWrite | Op::Signal => {
                    self.writes.entry(key).or_default().push(i);
                    if !self.is_alt[i] {
                        self.write_value[i] = concrete.write_value[self.num[i] as usize];
                    }
                }
                Op::Read | Op::VolatileRead | Op::Wait => {
                    let kind = match (self.ann[i], self.is_alt[i], self.model) {
                        (Ann::Read { .. }, true, _) => Some(ReadKind::Relaxed),
                        (_, true, _) => None,
                        (
                            Ann::Read {
                                observed: Some(v), ..
                            },
                            false,
                            Model::Maximal,
                        ) => Some(ReadKind::SameValue(*v)),
                        (Ann::Read { .. }, false, Model::Relaxed) => Some(ReadKind::Relaxed),
                        _ => {
                            let src = ix.source(self.num[i] as usize);
                            match src {
                                Some(w) if w >= ws as u64 => {
                                    node_of.get(&w).map(|&n| ReadKind::SameWrite(Src::Node(n)))
                                }
                                _ => Some(ReadKind::SameWrite(Src::Before)),
                            }
                        }
                    };
                    if let Some(k) = kind {
                        self.reads.push((i, k));
                    }
                }
                _ => {}
            }
        }
        // Values at the window start.
        for &(i, _) in &self.reads {
            let ev = self.ev[i];
            let key = (space(ev.op), ev.target);
            self.pre_value
                .entry(key)
                .or_insert_with(|| match pre.last.get(&key) {
                    Some(&w) => concrete.write_value[w as usize],
                    None if key.0 == 2 => None,
                    None => concrete.init[ev.target as usize],
                });
        }
    }

    /// `a` must happen before `b` (program order, fork, join).
    fn mhb(&self, a: usize, b: usize) -> bool {
        let t = self.ev[a].thread;
        a != b && self.vc[b].get(t) >= self.vc[a].get(t)
    }

    /// Conflicting pairs worth asking about, in trace order (`alt_only`: with at least one
    /// event of the alternative path).
    /// `None` if `deadline` passes first (the enumeration is quadratic in the accesses of a
    /// variable: a large window takes long).
    pub fn candidates(
        &mut self,
        alt_only: bool,
        deadline: Option<std::time::Instant>,
    ) -> Option<Vec<(usize, usize)>> {
        let mut by_var: FxHashMap<u32, Vec<usize>> = Default::default();
        for i in 0..self.num.len() {
            if self.ev[i].is_access() {
                by_var.entry(self.ev[i].target).or_default().push(i);
            }
        }
        let mut out = Vec::new();
        let mut work = 0u64;
        for nodes in by_var.values() {
            for (k, &a) in nodes.iter().enumerate() {
                // The clock is read once per 2^16 pairs looked at.
                work += (nodes.len() - k) as u64;
                if work >= 1 << 16 {
                    work = 0;
                    if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                        return None;
                    }
                }
                for &b in &nodes[k + 1..] {
                    let (a, b) = if self.num[a] < self.num[b] {
                        (a, b)
                    } else {
                        (b, a)
                    };
                    if !self.ev[a].conflicts_with(&self.ev[b]) {
                        continue;
                    }
                    if alt_only && !self.is_alt[a] && !self.is_alt[b] {
                        continue;
                    }
                    let shared_lock = self.lockset[a].iter().any(|l| self.lockset[b].contains(l));
                    if self.mhb(a, b) || self.mhb(b, a) || shared_lock {
                        self.pruned += 1;
                        continue;
                    }
                    out.push((a, b));
                }
            }
        }
        out.sort_by_key(|&(a, b)| (self.num[a], self.num[b]));
        Some(out)
    }

    /// The pair's (first location, second location, kind), by variable too where a location
    /// is missing (racepred's [`place`](racepred::report::place), as reports group pairs).
    pub fn location_key(&self, (a, b): (usize, usize)) -> (u64, u64, u8) {
        (
            racepred::report::place(&self.ev[a]),
            racepred::report::place(&self.ev[b]),
            PairKind::of(&self.ev[a], &self.ev[b]) as u8,
        )
    }

    /// The pair's event numbers.
    pub fn race_numbers(&self, (a, b): (usize, usize)) -> (u64, u64) {
        (self.num[a], self.num[b])
    }

    /// How many atoms the encoding would hold (order literals of the data-flow and lock
    /// clauses), without building it.
    pub fn size(&self) -> u64 {
        let mut total = 0u64;
        // Writes per (variable, value), counted once: linear, not reads × writes.
        let mut same_value: FxHashMap<((u8, u32), i64), u64> = Default::default();
        for (&key, ws) in &self.writes {
            for &w in ws {
                if let Some(v) = self.write_value[w] {
                    *same_value.entry((key, v)).or_default() += 1;
                }
            }
        }
        for &(rd, kind) in &self.reads {
            let ev = self.ev[rd];
            let key = (space(ev.op), ev.target);
            // A read of a variable no write of the window wrote has no writes.
            let ws = self.writes.get(&key).map_or(0, |w| w.len() as u64);
            total = total.saturating_add(match kind {
                ReadKind::SameWrite(_) => ws + 1,
                ReadKind::SameValue(v) => {
                    let same = same_value.get(&(key, v)).copied().unwrap_or(0);
                    (same + 1).saturating_mul(ws + 1)
                }
                ReadKind::Relaxed => (ws + 1).saturating_mul(ws + 1),
            });
        }
        for secs in self.sections.values() {
            let k = secs.len() as u64;
            total += k * k.saturating_sub(1) * 2;
        }
        if self.negated.is_some() {
            total += 4 * self.num.len() as u64 * self.is_alt.iter().filter(|&&a| a).count() as u64;
        }
        total + self.num.len() as u64
    }

    /// Builds the solver for this problem, with order variables only for the events some
    /// constraint or one of `candidates` needs (the others follow their thread's next needed
    /// event in the witness); `None` if `deadline` passes first.
    pub fn encode(
        &self,
        candidates: &[(usize, usize)],
        deadline: Option<std::time::Instant>,
    ) -> Option<Session> {
        let solver = Solver::new();
        // Without values (`mcm`) every atom is an order constraint `o_i < o_j`: integer
        // difference logic. Z3's auto configuration picks the dense difference-logic solver
        // (an n×n matrix per window: minutes to set up for 10^4 events); its simplex-based
        // solvers (`smt.arith.solver` 2, 5, 6) ran for minutes on one window of
        // `jgf_lufact_n150_t2` at 10^4 events ignoring both the timeout and interrupts, and
        // the sparse difference-logic solver (1) answers such windows within the timeout.
        // RECIPE's values are
        // bit-vectors, which the difference-logic solver does not combine with (every query
        // answers "unknown"): those keep Z3's general arithmetic solver.
        let mut params = Params::new();
        params.set_bool("auto_config", false);
        if self.model != Model::Relaxed {
            params.set_u32("smt.arith.solver", 1);
        }
        solver.set_params(&params);
        let n = self.num.len();
        // Order variables, made on first use: an event no constraint mentions needs none.
        let vars: std::cell::RefCell<Vec<Option<Int>>> = std::cell::RefCell::new(vec![None; n]);
        let ov = |i: usize| -> Int {
            vars.borrow_mut()[i]
                .get_or_insert_with(|| Int::new_const(format!("o{i}")))
                .clone()
        };
        let r = Int::new_const("R");
        let inp = |i: usize| ov(i).lt(&r);
        // Locks.
        for secs in self.sections.values() {
            for (k, s1) in secs.iter().enumerate() {
                for s2 in &secs[k + 1..] {
                    if s1.thread == s2.thread {
                        continue;
                    }
                    let ordered = |x: &Section, y: &Section| match (x.rel, y.acq) {
                        (Some(rx), Some(ay)) => self.mhb(rx, ay),
                        _ => false,
                    };
                    if ordered(s1, s2) || ordered(s2, s1) {
                        continue;
                    }
                    let mut clause: Vec<Bool> = Vec::new();
                    for s in [s1, s2] {
                        if let Some(a) = s.acq {
                            clause.push(inp(a).not());
                        }
                    }
                    for (x, y) in [(s1, s2), (s2, s1)] {
                        if let (Some(rx), Some(ay)) = (x.rel, y.acq) {
                            clause.push(ov(rx).lt(ov(ay)));
                        }
                    }
                    solver.assert(Bool::or(&clause));
                }
            }
        }
        // Values (RECIPE): registers in SSA form, per thread.
        let mut val: Vec<Option<BV>> = vec![None; n];
        let mut write_sym: Vec<Option<BV>> = vec![None; n];
        if self.model == Model::Relaxed {
            for (&t, nodes) in &self.thread_nodes {
                let mut env: FxHashMap<u32, BV> = self
                    .pre_regs
                    .iter()
                    .filter(|(&(tt, _), _)| tt == t)
                    .map(|(&(_, reg), &v)| (reg, BV::from_i64(v, 64)))
                    .collect();
                for &i in nodes {
                    match self.ann[i] {
                        Ann::Read { reg, .. } => {
                            let v = BV::new_const(format!("v{i}"), 64);
                            env.insert(*reg, v.clone());
                            val[i] = Some(v);
                        }
                        Ann::Let { reg, expr } => {
                            let v = sym(expr, &env);
                            env.insert(*reg, v);
                        }
                        Ann::Write(e) => write_sym[i] = Some(sym(e, &env)),
                        Ann::Branch(c) => {
                            let holds = sym(c, &env).eq(BV::from_i64(0, 64)).not();
                            let want = if self.negated == Some(i) {
                                holds.not()
                            } else {
                                holds
                            };
                            solver.assert(inp(i).implies(&want));
                        }
                        Ann::None => {}
                    }
                    if write_sym[i].is_none() && self.ev[i].op != Op::Signal {
                        if let Some(v) = self.write_value[i] {
                            write_sym[i] = Some(BV::from_i64(v, 64));
                        }
                    }
                }
            }
        }
        // Data flow.
        let empty = Vec::new();
        for (k, &(rd, kind)) in self.reads.iter().enumerate() {
            if k % 64 == 63 && deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                return None;
            }
            let ev = self.ev[rd];
            let key = (space(ev.op), ev.target);
            let ws = self.writes.get(&key).unwrap_or(&empty);
            // Read from node w: w before rd, no other write between.
            // Read from node w: w before rd, no other write between. `None`: impossible;
            // an empty conjunction: always true (program order and fork/join imply it; most
            // reads of real traces read their own thread's write, so this keeps windows of
            // thousands of events small).
            let from = |w: usize| -> Option<Vec<Bool>> {
                if self.mhb(rd, w) || w == rd {
                    return None;
                }
                let mut conj = Vec::new();
                if !self.mhb(w, rd) {
                    conj.push(ov(w).lt(ov(rd)));
                }
                for &w2 in ws {
                    if w2 == w || self.mhb(w2, w) || self.mhb(rd, w2) {
                        continue;
                    }
                    if self.mhb(w, w2) && self.mhb(w2, rd) {
                        return None;
                    }
                    conj.push(Bool::or(&[ov(w2).lt(ov(w)), ov(w2).gt(ov(rd))]));
                }
                Some(conj)
            };
            // Read the value at the window start: every write of the window after rd.
            let before = || -> Option<Vec<Bool>> {
                let mut conj = Vec::new();
                for &w2 in ws {
                    if self.mhb(rd, w2) {
                        continue;
                    }
                    if self.mhb(w2, rd) {
                        return None;
                    }
                    conj.push(ov(w2).gt(ov(rd)));
                }
                Some(conj)
            };
            let pre_value = self.pre_value.get(&key).copied().flatten();
            let options: Vec<Vec<Bool>> = match kind {
                ReadKind::SameWrite(Src::Node(w)) => from(w).into_iter().collect(),
                ReadKind::SameWrite(Src::Before) => before().into_iter().collect(),
                ReadKind::SameValue(v) => {
                    let mut opts: Vec<Vec<Bool>> = ws
                        .iter()
                        .filter(|&&w| self.write_value[w] == Some(v))
                        .filter_map(|&w| from(w))
                        .collect();
                    if pre_value == Some(v) {
                        opts.extend(before());
                    }
                    opts
                }
                ReadKind::Relaxed => {
                    let me = val[rd]
                        .clone()
                        .expect("relaxed reads have a value variable");
                    let mut opts: Vec<Vec<Bool>> = ws
                        .iter()
                        .filter_map(|&w| {
                            let wv = write_sym[w].as_ref()?;
                            let mut c = from(w)?;
                            c.push(me.eq(wv));
                            Some(c)
                        })
                        .collect();
                    if let Some(v) = pre_value {
                        if let Some(mut b) = before() {
                            b.push(me.eq(BV::from_i64(v, 64)));
                            opts.push(b);
                        }
                    }
                    opts
                }
            };
            if options.iter().any(|c| c.is_empty()) {
                continue; // always satisfied
            }
            let options: Vec<Bool> = options.iter().map(|c| Bool::and(c)).collect();
            solver.assert(inp(rd).implies(Bool::or(&options)));
        }
        // The alternative path's executed events run atomically at the negated branch.
        if let Some(b) = self.negated {
            let bt = self.ev[b].thread;
            let alt_nodes: Vec<usize> = (0..n).filter(|&i| self.is_alt[i]).collect();
            for x in 0..n {
                if self.ev[x].thread == bt {
                    continue;
                }
                for &a in &alt_nodes {
                    if self.mhb(x, b) || self.mhb(a, x) {
                        continue;
                    }
                    solver.assert(Bool::or(&[
                        inp(x).not(),
                        inp(a).not(),
                        ov(x).lt(ov(b)),
                        ov(x).gt(ov(a)),
                    ]));
                }
            }
        }
        // The candidates' events, their threads' previous events and forks; forks, joins
        // and each joined thread's last event.
        for &(a, b) in candidates {
            for x in [a, b] {
                ov(x);
                if let Some(q) = self.prev[x] {
                    ov(q);
                }
                if let Some(&f) = self.fork_node.get(&self.ev[x].thread.0) {
                    ov(f);
                }
            }
        }
        for j in 0..n {
            match self.ev[j].op {
                Op::Fork => {
                    ov(j);
                }
                Op::Join => {
                    ov(j);
                    if let Some(&last) = self
                        .thread_nodes
                        .get(&self.ev[j].target)
                        .and_then(|v| v.last())
                    {
                        ov(last);
                    }
                }
                _ => {}
            }
        }
        let needed: Vec<bool> = vars.borrow().iter().map(Option::is_some).collect();
        // Program order over the needed events, fork, join.
        for nodes in self.thread_nodes.values() {
            let kept: Vec<usize> = nodes.iter().copied().filter(|&i| needed[i]).collect();
            for w in kept.windows(2) {
                solver.assert(ov(w[0]).lt(ov(w[1])));
            }
        }
        for (u, &f) in &self.fork_node {
            let first = self
                .thread_nodes
                .get(u)
                .and_then(|v| v.iter().copied().find(|&i| needed[i]));
            if let Some(first) = first {
                solver.assert(ov(f).lt(ov(first)));
            }
        }
        for j in 0..n {
            if self.ev[j].op == Op::Join {
                let u = self.ev[j].target;
                if let Some(&last) = self.thread_nodes.get(&u).and_then(|v| v.last()) {
                    solver.assert(ov(last).lt(ov(j)));
                }
                if let Some(&f) = self.fork_node.get(&u) {
                    solver.assert(ov(f).lt(ov(j)));
                }
            }
        }
        let o = vars.into_inner();
        Some(Session {
            solver,
            o,
            r,
            needed,
        })
    }
}

/// An expression on 64-bit vectors, mirroring [`BinOp::apply`].
fn sym(e: &Expr, env: &FxHashMap<u32, BV>) -> BV {
    let zero = || BV::from_i64(0, 64);
    let one = || BV::from_i64(1, 64);
    let b2v = |b: Bool| b.ite(&one(), &zero());
    match e {
        Expr::Const(c) => BV::from_i64(*c, 64),
        // A register the thread never set (only on an alternative path): unconstrained;
        // the witness replay refuses a schedule that uses it.
        Expr::Reg(r) => env
            .get(r)
            .cloned()
            .unwrap_or_else(|| BV::fresh_const("unset", 64)),
        Expr::Un(UnOp::Neg, a) => sym(a, env).bvneg(),
        Expr::Un(UnOp::Not, a) => b2v(sym(a, env).eq(zero())),
        Expr::Bin(op, a, b) => {
            let (a, b) = (sym(a, env), sym(b, env));
            let b_zero = b.eq(zero());
            match op {
                BinOp::Add => a.bvadd(&b),
                BinOp::Sub => a.bvsub(&b),
                BinOp::Mul => a.bvmul(&b),
                BinOp::Div => b_zero.ite(&zero(), &a.bvsdiv(&b)),
                BinOp::Rem => b_zero.ite(&zero(), &a.bvsrem(&b)),
                BinOp::BitAnd => a.bvand(&b),
                BinOp::BitOr => a.bvor(&b),
                BinOp::BitXor => a.bvxor(&b),
                BinOp::Shl => a.bvshl(b.bvand(BV::from_i64(63, 64))),
                BinOp::Shr => a.bvashr(b.bvand(BV::from_i64(63, 64))),
                BinOp::Lt => b2v(a.bvslt(&b)),
                BinOp::Le => b2v(a.bvsle(&b)),
                BinOp::Gt => b2v(a.bvsgt(&b)),
                BinOp::Ge => b2v(a.bvsge(&b)),
                BinOp::Eq => b2v(a.eq(&b)),
                BinOp::Ne => b2v(a.eq(&b).not()),
                BinOp::And => b2v(Bool::and(&[a.eq(zero()).not(), b.eq(zero()).not()])),
                BinOp::Or => b2v(Bool::or(&[a.eq(zero()).not(), b.eq(zero()).not()])),
            }
        }
    }
}

/// A solver answer.
pub enum Answer {
    /// The schedule: the prefix's event numbers in order.
    Sat(Vec<u64>),
    Unsat,
    /// Timed out or gave up.
    Unknown,
}

/// The solver of one problem; one query per candidate pair, each in a push/pop scope.
pub struct Session {
    solver: Solver,
    /// Order variables of the needed events.
    o: Vec<Option<Int>>,
    r: Int,
    needed: Vec<bool>,
}

impl Session {
    /// The encoding in SMT-LIB 2 (for debugging with the `z3` command).
    pub fn smt2(&self) -> String {
        self.solver.to_smt2()
    }

    pub fn query(&mut self, p: &Problem<'_>, (a, b): (usize, usize), timeout: Duration) -> Answer {
        let s = &self.solver;
        let mut params = Params::new();
        params.set_u32(
            "timeout",
            timeout.as_millis().clamp(1, u32::MAX as u128) as u32,
        );
        s.set_params(&params);
        // The query's constraints as assumptions (no push/pop): Z3 keeps what it learnt
        // about the window between queries.
        let mut assumptions = Vec::with_capacity(4);
        let o = |i: usize| self.o[i].as_ref().expect("candidates' events are needed");
        for x in [a, b] {
            assumptions.push(o(x).ge(&self.r));
            match p.prev[x] {
                Some(q) => assumptions.push(o(q).lt(&self.r)),
                None => {
                    if let Some(&f) = p.fork_node.get(&p.ev[x].thread.0) {
                        assumptions.push(o(f).lt(&self.r));
                    }
                }
            }
        }

        match s.check_assumptions(&assumptions) {
            SatResult::Sat => {
                let m = s.get_model().expect("a model after sat");
                let get = |x: &Int| m.eval(x, true).and_then(|v| v.as_i64()).unwrap_or(0);
                let r = get(&self.r);
                let mut prefix: Vec<(i64, usize)> = (0..p.num.len())
                    .filter_map(|i| {
                        let v = get(self.o[i].as_ref()?);
                        (v < r).then_some((v, i))
                    })
                    .collect();
                prefix.sort_unstable_by_key(|&(v, i)| (v, p.num[i]));
                // Each needed event is preceded by its thread's events that need no order
                // variable since the thread's previous needed event.
                let mut schedule = Vec::with_capacity(prefix.len());
                for (_, i) in prefix {
                    let t = p.ev[i].thread.0;
                    let nodes = &p.thread_nodes[&t];
                    let k = nodes
                        .iter()
                        .position(|&x| x == i)
                        .expect("node of its thread");
                    let from = nodes[..k]
                        .iter()
                        .rposition(|&x| self.needed[x])
                        .map_or(0, |j| j + 1);
                    schedule.extend(nodes[from..k].iter().map(|&x| p.num[x]));
                    schedule.push(p.num[i]);
                }
                Answer::Sat(schedule)
            }
            SatResult::Unsat => Answer::Unsat,
            SatResult::Unknown => Answer::Unknown,
        }
    }
}
