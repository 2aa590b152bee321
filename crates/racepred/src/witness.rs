//! Witness schedules of predicted races, and their replay (independent of any solver).
//!
//! A witness for a race `(e, f)` is a reordered prefix of the trace — possibly with one
//! branch negated and its alternative path spliced in (RECIPE §IV) — after which `e` and `f`
//! are both the next event of their threads. [`replay`] executes it concretely and checks
//! every rule a schedule of the program must keep:
//!
//! - program order: each thread runs a prefix of its events (of its variant sequence when a
//!   branch is negated: the events before the branch, the branch, its alternative path);
//! - lock semantics (re-entrant acquires nest; a release of a lock its thread does not hold,
//!   which only an ill-formed trace has, releases nothing), a forked thread acts after its
//!   fork, a join after every event of the joined thread;
//! - data flow: every read gets the value of the latest write in the schedule (or the
//!   variable's initial value). Under [`Model::Maximal`] a read keeps what it read in the
//!   trace: the same write for a read without a value (plain STD traces, volatile reads,
//!   waits), the same value for a read with one. Under [`Model::Relaxed`] a read with a value
//!   may read any write whose value is known, and the values flow through the thread's
//!   registers; reads without a value keep their write;
//! - control flow: every branch of the schedule evaluates as recorded, the negated branch the
//!   other way;
//! - the race: `e` and `f` conflict and are both enabled at the end.
//!
//! Witnesses are written as STD files ([`render`]): one `#@ N` comment before each event
//! line with its number in the trace (numbers from the trace's length on are the events of
//! alternative paths, counted in the order of [`ValueTrace::alts`]); the last two events are
//! the racing pair, which the schedule does not execute.

use std::fmt::Write as _;

use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::trace::values::{
    alt_base, event_line, event_of, resolve, Ann, Concrete, EventRef, ValueTrace,
};
use crate::trace::Op;

/// Which reads must keep their values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// Every read keeps what it read (the maximal causal model; plain traces: the same write).
    Maximal,
    /// Reads with values may read other values as long as every branch keeps its outcome
    /// (RECIPE §III).
    Relaxed,
}

/// One witness: the schedule (event numbers as in the module doc) and the racing pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness {
    pub model: Model,
    /// The trace's first `prefix` events run first, in trace order (a window's fixed start).
    pub prefix: u64,
    /// Then these events, in this order.
    pub schedule: Vec<u64>,
    /// The racing pair `(e, f)`, not executed.
    pub race: (u64, u64),
}

/// The witness as an STD file (see the module doc), with a comment before each read that
/// reads another value in the schedule than the trace recorded ([`render_replayed`] with
/// the trace's [`ValueTrace::concrete`] computed here).
pub fn render(vt: &ValueTrace, w: &Witness, header: &str) -> String {
    let values = vt
        .concrete()
        .ok()
        .and_then(|c| read_values(vt, &c, w).ok())
        .unwrap_or_default();
    render_with(vt, w, header, &values)
}

fn render_with(vt: &ValueTrace, w: &Witness, header: &str, values: &FxHashMap<u64, i64>) -> String {
    let mut s = String::new();
    for line in header.lines() {
        let _ = writeln!(s, "# {line}");
    }
    let model = match w.model {
        Model::Maximal => "maximal",
        Model::Relaxed => "relaxed",
    };
    let _ = writeln!(s, "# model: {model}");
    if w.prefix > 0 {
        let _ = writeln!(
            s,
            "# the trace's first {} events run first, in trace order:\n#@prefix {}",
            w.prefix, w.prefix
        );
    }
    for &n in &w.schedule {
        if let (Some(&v), Some(rec)) = (values.get(&n), recorded_read(vt, n)) {
            if v != rec {
                let _ = writeln!(
                    s,
                    "# in this schedule the read below reads {v} (the trace recorded {rec})"
                );
            }
        }
        let _ = writeln!(s, "#@ {n}\n{}", event_line(vt, n));
    }
    let _ = writeln!(s, "# the race: both events below are enabled here");
    for n in [w.race.0, w.race.1] {
        let _ = writeln!(s, "#@ {n}\n{}", event_line(vt, n));
    }
    s
}

/// Parses a witness file written by [`render`], checking each event line against the trace.
pub fn parse(vt: &ValueTrace, text: &str) -> Result<Witness> {
    let mut model = None;
    let mut prefix = 0;
    let mut numbers = Vec::new();
    let mut pending: Option<u64> = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        let err = |m: String| Error::invalid(format!("witness line {}: {m}", i + 1));
        if let Some(m) = line.strip_prefix("# model:") {
            model = Some(match m.trim() {
                "maximal" => Model::Maximal,
                "relaxed" => Model::Relaxed,
                other => return Err(err(format!("unknown model `{other}`"))),
            });
        } else if let Some(p) = line.strip_prefix("#@prefix") {
            prefix = p
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|&p| p <= vt.trace.len() as u64)
                .ok_or_else(|| err(format!("bad prefix length `{}`", p.trim())))?;
        } else if let Some(n) = line.strip_prefix("#@") {
            let n = n
                .trim()
                .parse::<u64>()
                .map_err(|_| err(format!("bad event number `{}`", n.trim())))?;
            pending = Some(n);
        } else if line.is_empty() || line.starts_with('#') {
            continue;
        } else {
            let Some(n) = pending.take() else {
                return Err(err("an event line without its `#@ N` comment".into()));
            };
            if resolve(vt, n).is_none() {
                return Err(err(format!("the trace has no event {n}")));
            }
            let want = event_line(vt, n);
            if want.split_whitespace().collect::<String>()
                != line.split_whitespace().collect::<String>()
            {
                return Err(err(format!(
                    "event {n} of the trace is `{want}`, the witness says `{line}`"
                )));
            }
            numbers.push(n);
        }
    }
    let model = model.ok_or_else(|| Error::invalid("witness: no `# model:` line"))?;
    if numbers.len() < 2 {
        return Err(Error::invalid(
            "witness: fewer than two events (the racing pair is the last two)",
        ));
    }
    let f = numbers.pop().expect("two or more");
    let e = numbers.pop().expect("two or more");
    Ok(Witness {
        model,
        prefix,
        schedule: numbers,
        race: (e, f),
    })
}

/// The witness of a race given as a cut ([`crate::report::RaceCut`]): the events of each
/// thread `t` up to its `cut[t]`-th, in trace order, under the maximal model (every read
/// keeps its write). The longest run of the trace's first events inside the cut is the
/// fixed prefix.
pub fn from_cut(trace: &crate::trace::Trace, cut: &[u32], race: (u64, u64)) -> Witness {
    let mut seen = vec![0u32; cut.len()];
    let mut prefix = 0u64;
    let mut in_prefix = true;
    let mut schedule = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        let t = e.thread.index();
        let inside = match seen.get_mut(t) {
            Some(s) => {
                *s += 1;
                *s <= cut[t]
            }
            None => false,
        };
        if inside && in_prefix {
            prefix += 1;
        } else if inside {
            schedule.push(i as u64);
        } else {
            in_prefix = false;
        }
        if seen.iter().zip(cut).all(|(s, c)| s >= c) {
            break;
        }
    }
    Witness {
        model: Model::Maximal,
        prefix,
        schedule,
        race,
    }
}

/// The witness of a reported [`crate::report::RaceCut`]: its schedule if it has one, else
/// [`from_cut`].
pub fn of_cut(trace: &crate::trace::Trace, c: &crate::report::RaceCut) -> Witness {
    if c.schedule.is_empty() {
        return from_cut(trace, &c.cut, (c.first, c.second));
    }
    Witness {
        model: Model::Maximal,
        prefix: 0,
        schedule: c.schedule.clone(),
        race: (c.first, c.second),
    }
}

/// Why a witness does not replay.
fn fail(step: usize, n: u64, msg: impl std::fmt::Display) -> Error {
    Error::invalid(format!("witness step {step} (event {n}): {msg}"))
}

/// What a replay needs of the trace, computed once (shared by every replay).
pub struct ReplayIndex {
    /// Each thread's events, in order.
    seq: Vec<Vec<u64>>,
    /// Position of each event in its thread.
    tpos: Vec<u32>,
    /// The fork of each thread, if the trace forks it.
    fork_of: Vec<Option<u64>>,
    /// The write / vw / sig each read / vr / wait saw in the trace.
    orig_src: Vec<Option<u64>>,
}

impl ReplayIndex {
    pub fn new(vt: &ValueTrace) -> ReplayIndex {
        let trace = &vt.trace;
        let nt = trace.num_threads();
        let mut seq: Vec<Vec<u64>> = vec![Vec::new(); nt];
        let mut tpos = Vec::with_capacity(trace.len());
        let mut fork_of = vec![None; nt];
        let mut orig_src = vec![None; trace.len()];
        let mut last: FxHashMap<(u8, u32), u64> = Default::default();
        for (i, ev) in trace.events.iter().enumerate() {
            let s = &mut seq[ev.thread.index()];
            tpos.push(s.len() as u32);
            s.push(i as u64);
            match ev.op {
                Op::Fork => fork_of[ev.target as usize] = Some(i as u64),
                Op::Write => {
                    last.insert((0, ev.target), i as u64);
                }
                Op::VolatileWrite => {
                    last.insert((1, ev.target), i as u64);
                }
                Op::Signal => {
                    last.insert((2, ev.target), i as u64);
                }
                Op::Read => orig_src[i] = last.get(&(0, ev.target)).copied(),
                Op::VolatileRead => orig_src[i] = last.get(&(1, ev.target)).copied(),
                Op::Wait => orig_src[i] = last.get(&(2, ev.target)).copied(),
                _ => {}
            }
        }
        ReplayIndex {
            seq,
            tpos,
            fork_of,
            orig_src,
        }
    }

    /// The write event `r` (a read, vr or wait of the trace) saw in the trace.
    pub fn source(&self, r: usize) -> Option<u64> {
        self.orig_src[r]
    }

    /// Number of threads (ids `0..threads()`).
    pub fn threads(&self) -> usize {
        self.seq.len()
    }

    /// Thread `t`'s events, in program order.
    pub fn thread_events(&self, t: usize) -> &[u64] {
        &self.seq[t]
    }

    /// The position of event `i` in its thread (0 for the first).
    pub fn position(&self, i: usize) -> u32 {
        self.tpos[i]
    }

    /// The fork of thread `t`, if the trace forks it.
    pub fn fork(&self, t: usize) -> Option<u64> {
        self.fork_of[t]
    }
}

/// The state of a replay: cheap to clone (no per-event data), so a caller can replay a
/// common prefix once and try many schedules from there.
#[derive(Clone, Debug)]
pub struct Replayer {
    model: Model,
    pos: Vec<usize>,
    /// The negated branch's thread, its position after the branch, the alternative path.
    alt: Option<(usize, usize, usize)>,
    holder: FxHashMap<u32, (u32, u32)>,
    mem: FxHashMap<(u8, u32), (u64, Option<i64>)>,
    regs: FxHashMap<(u32, u32), i64>,
    steps: usize,
    /// The value the last step read into a register, if it was a read with a value.
    last_read: Option<i64>,
}

impl Replayer {
    /// A replay from the start of the trace.
    pub fn new(vt: &ValueTrace, model: Model) -> Replayer {
        Replayer {
            model,
            pos: vec![0; vt.trace.num_threads()],
            alt: None,
            holder: Default::default(),
            mem: Default::default(),
            regs: Default::default(),
            steps: 0,
            last_read: None,
        }
    }

    /// Runs the trace's first `n` events in trace order.
    pub fn run_prefix(
        &mut self,
        vt: &ValueTrace,
        concrete: &Concrete,
        ix: &ReplayIndex,
        from: u64,
        to: u64,
    ) -> Result<()> {
        for n in from..to {
            self.step(vt, concrete, ix, n)?;
        }
        Ok(())
    }

    /// Switches to the alternative path `a` (before any event after its branch ran).
    pub fn use_alt(&mut self, vt: &ValueTrace, ix: &ReplayIndex, a: usize) {
        let b = vt.alts[a].branch;
        let t = vt.trace.events[b].thread.index();
        self.alt = Some((t, ix.tpos[b] as usize + 1, a));
    }

    /// The `p`-th event of thread `t`'s sequence.
    fn next_of(&self, vt: &ValueTrace, ix: &ReplayIndex, t: usize, p: usize) -> Option<u64> {
        match self.alt {
            Some((at, cut, a)) if at == t && p >= cut => {
                let k = p - cut;
                (k < vt.alts[a].events.len()).then(|| alt_base(vt, a) + k as u64)
            }
            _ => ix.seq[t].get(p).copied(),
        }
    }

    fn thread_len(&self, vt: &ValueTrace, ix: &ReplayIndex, t: usize) -> usize {
        match self.alt {
            Some((at, cut, a)) if at == t => cut + vt.alts[a].events.len(),
            _ => ix.seq[t].len(),
        }
    }

    fn started(&self, vt: &ValueTrace, ix: &ReplayIndex, t: usize) -> bool {
        ix.fork_of[t].is_none_or(|f| {
            let ft = vt.trace.events[f as usize].thread.index();
            self.pos[ft] > ix.tpos[f as usize] as usize
        })
    }

    fn negated(&self, vt: &ValueTrace) -> Option<u64> {
        self.alt.map(|(_, _, a)| vt.alts[a].branch as u64)
    }

    /// Executes event `n` (it must be the next event of its thread).
    pub fn step(
        &mut self,
        vt: &ValueTrace,
        concrete: &Concrete,
        ix: &ReplayIndex,
        n: u64,
    ) -> Result<()> {
        let step = self.steps;
        self.steps += 1;
        self.last_read = None;
        let r = resolve(vt, n).ok_or_else(|| fail(step, n, "no such event"))?;
        let (ev, ann) = event_of(vt, r);
        let t = ev.thread.index();
        if self.next_of(vt, ix, t, self.pos[t]) != Some(n) {
            return Err(fail(step, n, "not the next event of its thread"));
        }
        if !self.started(vt, ix, t) {
            return Err(fail(step, n, "its thread has not been forked yet"));
        }
        let tt = t as u32;
        let space = match ev.op {
            Op::Read | Op::Write => 0u8,
            Op::VolatileRead | Op::VolatileWrite => 1,
            _ => 2,
        };
        match ev.op {
            Op::Acquire => {
                let h = self.holder.entry(ev.target).or_insert((tt, 0));
                if h.0 != tt && h.1 > 0 {
                    return Err(fail(step, n, "acquires a lock another thread holds"));
                }
                *h = (tt, h.1 + 1);
            }
            Op::Release => match self.holder.get_mut(&ev.target) {
                Some(h) if h.0 == tt && h.1 > 0 => h.1 -= 1,
                // A release its thread does not hold can only come from an ill-formed trace
                // (read with --lenient; in a well-formed one, program order runs the acquire
                // first): it releases nothing, as the SMT encoding and the lockset analyses
                // take it.
                _ => {}
            },
            Op::Fork => {}
            Op::Join => {
                let u = ev.target as usize;
                if u < self.pos.len()
                    && (self.pos[u] < self.thread_len(vt, ix, u) || !self.started(vt, ix, u))
                {
                    return Err(fail(step, n, "joins a thread that has not finished"));
                }
            }
            Op::Write | Op::VolatileWrite | Op::Signal => {
                let regs = &self.regs;
                let v = match (ann, r) {
                    (Ann::Write(e), _) => e.eval(&|x| regs.get(&(tt, x)).copied()),
                    (_, EventRef::Trace(i)) => concrete.write_value[i],
                    _ => None,
                };
                self.mem.insert((space, ev.target), (n, v));
            }
            Op::Read | Op::VolatileRead | Op::Wait => {
                let seen = self.mem.get(&(space, ev.target)).copied();
                let value = match seen {
                    Some((_, v)) => v,
                    None if space == 2 => None,
                    None => concrete.init[ev.target as usize],
                };
                match (r, ann) {
                    (EventRef::Trace(_), Ann::Read { reg, observed }) => {
                        let v = match self.model {
                            Model::Maximal if value != *observed => {
                                return Err(fail(
                                    step,
                                    n,
                                    format!(
                                        "reads {} where the trace read {}",
                                        show(value),
                                        show(*observed)
                                    ),
                                ))
                            }
                            _ => value.ok_or_else(|| {
                                fail(step, n, "reads a value the trace does not determine")
                            })?,
                        };
                        self.regs.insert((tt, *reg), v);
                        self.last_read = Some(v);
                    }
                    (EventRef::Trace(i), _) => {
                        if seen.map(|s| s.0) != ix.orig_src[i] {
                            return Err(fail(
                                step,
                                n,
                                "reads from another write than in the trace (a read without a \
                                 value keeps its write)",
                            ));
                        }
                    }
                    (EventRef::Alt { .. }, Ann::Read { reg, .. }) => {
                        let v = value.ok_or_else(|| {
                            fail(step, n, "reads a value the trace does not determine")
                        })?;
                        self.regs.insert((tt, *reg), v);
                        self.last_read = Some(v);
                    }
                    (EventRef::Alt { .. }, _) => {}
                }
            }
            Op::Local => {
                if let Ann::Let { reg, expr } = ann {
                    let regs = &self.regs;
                    let v = expr
                        .eval(&|x| regs.get(&(tt, x)).copied())
                        .ok_or_else(|| fail(step, n, "uses an unset register"))?;
                    self.regs.insert((tt, *reg), v);
                }
            }
            Op::Branch => {
                if let Ann::Branch(c) = ann {
                    let regs = &self.regs;
                    let v = c
                        .eval(&|x| regs.get(&(tt, x)).copied())
                        .ok_or_else(|| fail(step, n, "uses an unset register"))?;
                    let want_true = self.negated(vt) != Some(n);
                    if (v != 0) != want_true {
                        return Err(fail(
                            step,
                            n,
                            if want_true {
                                "the branch condition no longer holds"
                            } else {
                                "the negated branch condition holds"
                            },
                        ));
                    }
                }
            }
            Op::MethodBegin | Op::MethodEnd | Op::Begin | Op::End => {}
        }
        self.pos[t] += 1;
        Ok(())
    }

    /// Checks that `e` and `f` conflict and are both enabled now.
    pub fn check_race(&self, vt: &ValueTrace, ix: &ReplayIndex, (e, f): (u64, u64)) -> Result<()> {
        let (re, rf) = (
            resolve(vt, e).ok_or_else(|| Error::invalid(format!("witness: no event {e}")))?,
            resolve(vt, f).ok_or_else(|| Error::invalid(format!("witness: no event {f}")))?,
        );
        let (ee, _) = event_of(vt, re);
        let (fe, _) = event_of(vt, rf);
        if !ee.conflicts_with(&fe) {
            return Err(Error::invalid(format!(
                "witness: events {e} and {f} do not conflict"
            )));
        }
        for (n, ev) in [(e, ee), (f, fe)] {
            let t = ev.thread.index();
            if self.next_of(vt, ix, t, self.pos[t]) != Some(n) || !self.started(vt, ix, t) {
                return Err(Error::invalid(format!(
                    "witness: event {n} is not enabled at the end of the schedule"
                )));
            }
        }
        Ok(())
    }
}

/// The alternative path a witness uses, if any (at most one: RECIPE splices one path).
pub fn used_alt(vt: &ValueTrace, w: &Witness) -> Result<Option<usize>> {
    let mut used: Option<usize> = None;
    for &n in w.schedule.iter().chain([&w.race.0, &w.race.1]) {
        if let Some(EventRef::Alt { alt, .. }) = resolve(vt, n) {
            if used.is_some_and(|a| a != alt) {
                return Err(Error::invalid(
                    "witness uses the alternative paths of two branches",
                ));
            }
            used = Some(alt);
        }
    }
    Ok(used)
}

/// Checks that the executed part of the alternative path runs atomically at its branch.
fn check_atomic(vt: &ValueTrace, w: &Witness, alt: usize) -> Result<()> {
    let b = vt.alts[alt].branch as u64;
    let base = alt_base(vt, alt);
    let is_alt = |n: u64| n >= base && n < base + vt.alts[alt].events.len() as u64;
    if let (Some(start), Some(end)) = (
        w.schedule.iter().position(|&n| n == b),
        w.schedule.iter().rposition(|&n| is_alt(n)),
    ) {
        if let Some(k) = (start..end).find(|&k| w.schedule[k] != b && !is_alt(w.schedule[k])) {
            return Err(fail(
                k,
                w.schedule[k],
                "runs inside the alternative path, which runs atomically at its branch",
            ));
        }
    }
    Ok(())
}

/// Replays a witness against the trace it was predicted from (see the module doc).
/// `concrete` is `vt.concrete()`.
pub fn replay(vt: &ValueTrace, concrete: &Concrete, w: &Witness) -> Result<()> {
    let ix = ReplayIndex::new(vt);
    let mut r = Replayer::new(vt, w.model);
    r.run_prefix(vt, concrete, &ix, 0, w.prefix)?;
    replay_from(vt, concrete, &ix, r, w)
}

/// Replays the part of a witness after its fixed prefix, from a replayer that ran it.
pub fn replay_from(
    vt: &ValueTrace,
    concrete: &Concrete,
    ix: &ReplayIndex,
    mut r: Replayer,
    w: &Witness,
) -> Result<()> {
    if let Some(a) = used_alt(vt, w)? {
        if (vt.alts[a].branch as u64) < w.prefix {
            return Err(Error::invalid(
                "witness: the negated branch lies in the fixed prefix",
            ));
        }
        check_atomic(vt, w, a)?;
        r.use_alt(vt, ix, a);
    }
    for &n in &w.schedule {
        r.step(vt, concrete, ix, n)?;
    }
    r.check_race(vt, ix, w.race)
}

/// The value each read with a value reads in the witness's schedule (by event number): under
/// [`Model::Relaxed`] it may differ from the value the trace recorded. Replays the witness.
pub fn read_values(
    vt: &ValueTrace,
    concrete: &Concrete,
    w: &Witness,
) -> Result<FxHashMap<u64, i64>> {
    let ix = ReplayIndex::new(vt);
    let mut r = Replayer::new(vt, w.model);
    r.run_prefix(vt, concrete, &ix, 0, w.prefix)?;
    if let Some(a) = used_alt(vt, w)? {
        r.use_alt(vt, &ix, a);
    }
    let mut values = FxHashMap::default();
    for &n in &w.schedule {
        r.step(vt, concrete, &ix, n)?;
        if let Some(v) = r.last_read {
            values.insert(n, v);
        }
    }
    Ok(values)
}

/// The recorded value of a read with a value (`None` for other events).
pub fn recorded_read(vt: &ValueTrace, n: u64) -> Option<i64> {
    match event_of(vt, resolve(vt, n)?).1 {
        Ann::Read { observed, .. } => *observed,
        _ => None,
    }
}

/// The witness as an STD file, as [`render`], with a comment before each read of the
/// schedule that reads another value than the trace recorded (the event lines themselves
/// stay the trace's, so that [`parse`] can check them).
pub fn render_replayed(vt: &ValueTrace, concrete: &Concrete, w: &Witness, header: &str) -> String {
    let values = read_values(vt, concrete, w).unwrap_or_default();
    render_with(vt, w, header, &values)
}

fn show(v: Option<i64>) -> String {
    v.map_or_else(|| "an unknown value".to_string(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RECIPE Fig. 1 as a value trace (events 0–9; the alternative event is 10).
    const FIG1: &str = include_str!("../../../tests/traces/recipe_fig1.std");

    fn check(model: Model, schedule: &[u64], race: (u64, u64)) -> Result<()> {
        let vt = ValueTrace::parse(FIG1.as_bytes()).unwrap();
        let c = vt.concrete().unwrap();
        let w = Witness {
            model,
            prefix: 0,
            schedule: schedule.to_vec(),
            race,
        };
        // Through the file form and back.
        let text = render(&vt, &w, "test");
        if model == Model::Relaxed && schedule == [0, 1, 2, 3, 4, 7, 8] && race == (5, 9) {
            // Event 7, T2's read of y, reads 3 from line 1 here, not the recorded 5.
            assert!(
                text.contains(
                    "# in this schedule the read below reads 3 (the trace recorded 5)\n#@ 7\n"
                ),
                "{text}"
            );
        }
        let back = parse(&vt, &text).unwrap();
        assert_eq!(back, w);
        replay(&vt, &c, &w)
    }

    #[test]
    fn recipe_fig1_races_replay() {
        // [1, 4, 5] with 2 enabled: r(y) reads 3 from line 1, 3 > 2 holds.
        check(Model::Relaxed, &[0, 1, 2, 3, 4, 7, 8], (5, 9)).unwrap();
        // Not under the maximal model: the read of y must see 5.
        let e = check(Model::Maximal, &[0, 1, 2, 3, 4, 7, 8], (5, 9)).unwrap_err();
        assert!(
            e.to_string().contains("reads 3 where the trace read 5"),
            "{e}"
        );
        // The else branch: y reads 0, the negated branch holds, line 7 races with line 2.
        check(Model::Relaxed, &[0, 1, 2, 3, 7, 8, 4], (5, 10)).unwrap();
        // The alternative path runs atomically at its branch... (here it has no executed
        // event, so T1 may run between the branch and the race).
        let e = check(Model::Relaxed, &[0, 1, 2, 3, 4, 7, 8], (5, 10)).unwrap_err();
        assert!(
            e.to_string().contains("negated branch condition holds"),
            "{e}"
        );
    }

    #[test]
    fn broken_schedules_are_refused() {
        // Out of program order.
        assert!(check(Model::Relaxed, &[0, 1, 2, 3, 5], (6, 7)).is_err());
        // Before the fork.
        assert!(check(Model::Relaxed, &[0, 1, 2, 7], (4, 8)).is_err());
        // Race event not enabled (already executed).
        assert!(check(Model::Relaxed, &[0, 1, 2, 3, 4, 5], (5, 9)).is_err());
    }
}
