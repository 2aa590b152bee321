//! Random well-formed traces, for property tests (small) and benchmarks (10^5–10^7 events).
//!
//! Two front ends share one legality model ([`World`]):
//!
//! - [`Generator`]: a seeded, streaming [`EventSource`] with parameters (events, threads,
//!   variables, locks, share of sync events, fork/join, …). Memory is O(threads + locks), so
//!   10^7-event traces stream straight into a writer or an analysis.
//! - [`from_actions`]: turns any list of small integer triples into a well-formed trace by
//!   skipping the actions that would break a rule. Property tests draw the triples with
//!   `proptest`, which then shrinks a failing trace to a minimal one.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::error::{Position, Result};
use crate::trace::{Event, EventSource, LocId, Names, Op, ThreadId, Trace};

/// Parameters of a generated trace.
#[derive(Clone, Debug, PartialEq)]
pub struct GenConfig {
    /// Number of events (exact).
    pub events: u64,
    pub threads: u32,
    pub vars: u32,
    pub locks: u32,
    /// Share of events that are lock acquires / releases (0–1).
    pub sync: f64,
    /// Share of accesses that are reads (0–1).
    pub reads: f64,
    /// Share of events that are volatile accesses (synchronisation) (0–1).
    pub volatile: f64,
    /// Thread 0 forks the others first and joins them last; otherwise all threads run from
    /// the start and nobody joins.
    pub fork_join: bool,
    /// Maximum number of locks one thread holds at once.
    pub max_nesting: u32,
    /// Number of distinct access locations (events get a location from their variable and
    /// kind, so the same statement keeps the same location).
    pub locs: u32,
    /// Probability that the next event comes from the same thread as the previous one
    /// (real traces come in runs of one thread).
    pub stickiness: f64,
    pub seed: u64,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            events: 1000,
            threads: 4,
            vars: 100,
            locks: 4,
            sync: 0.1,
            reads: 0.7,
            volatile: 0.0,
            fork_join: true,
            max_nesting: 2,
            locs: 1000,
            stickiness: 0.9,
            seed: 0,
        }
    }
}

/// Legality model: which event may come next in a well-formed trace.
#[derive(Clone, Debug, Default)]
pub struct World {
    /// Per lock: (holder, depth).
    holder: Vec<Option<(u32, u32)>>,
    /// Per thread: locks held, in acquire order (repeats for re-entrant acquires).
    held: Vec<Vec<u32>>,
    acted: Vec<bool>,
    forked: Vec<bool>,
    joined: Vec<bool>,
}

impl World {
    pub fn new(threads: u32, locks: u32) -> World {
        let t = threads as usize;
        World {
            holder: vec![None; locks as usize],
            held: vec![Vec::new(); t],
            acted: vec![false; t],
            forked: vec![false; t],
            joined: vec![false; t],
        }
    }

    /// True if `t` may act now.
    pub fn can_act(&self, t: u32) -> bool {
        !self.joined[t as usize]
    }

    /// True if `ev` is legal next (assumes ids are in range).
    pub fn allows(&self, ev: &Event) -> bool {
        let t = ev.thread.0;
        if !self.can_act(t) {
            return false;
        }
        match ev.op {
            Op::Acquire => match self.holder[ev.target as usize] {
                None => true,
                Some((h, _)) => h == t,
            },
            Op::Release => self.held[t as usize].contains(&ev.target),
            Op::Fork => {
                let u = ev.target as usize;
                ev.target != t && !self.acted[u] && !self.forked[u] && !self.joined[u]
            }
            Op::Join => ev.target != t && !self.joined[ev.target as usize],
            _ => true,
        }
    }

    /// Records a legal event.
    pub fn apply(&mut self, ev: &Event) {
        debug_assert!(self.allows(ev));
        let t = ev.thread.0;
        if !self.forked[t as usize] {
            self.acted[t as usize] = true;
        }
        match ev.op {
            Op::Acquire => {
                let h = &mut self.holder[ev.target as usize];
                *h = Some((t, h.map_or(0, |(_, d)| d) + 1));
                self.held[t as usize].push(ev.target);
            }
            Op::Release => {
                let held = &mut self.held[t as usize];
                let k = held.iter().rposition(|&l| l == ev.target).expect("allowed");
                held.remove(k);
                let h = &mut self.holder[ev.target as usize];
                let (_, d) = h.expect("held");
                *h = if d > 1 { Some((t, d - 1)) } else { None };
            }
            Op::Fork => self.forked[ev.target as usize] = true,
            Op::Join => self.joined[ev.target as usize] = true,
            _ => {}
        }
    }

    /// Locks `t` holds (innermost last).
    pub fn held(&self, t: u32) -> &[u32] {
        &self.held[t as usize]
    }

    /// True if nobody holds lock `l`, or `t` does.
    pub fn lock_free_for(&self, l: u32, t: u32) -> bool {
        self.holder[l as usize].is_none_or(|(h, _)| h == t)
    }
}

/// Builds a well-formed trace from arbitrary `(thread, kind, object)` triples, skipping the
/// ones that would break a rule. `kind % 12`: 0–3 read, 4–5 write, 6 acquire, 7 release,
/// 8 fork, 9 join, 10 volatile write, 11 volatile read. Objects are taken modulo the number
/// of variables / locks / threads; volatile accesses use variables `vars..vars+2`. Each
/// event's location is its position + 1 in the action list, so every event has its own.
pub fn from_actions(threads: u32, vars: u32, locks: u32, actions: &[(u8, u8, u8)]) -> Trace {
    let threads = threads.max(1);
    let vars = vars.max(1);
    let locks = locks.max(1);
    let mut world = World::new(threads, locks);
    let mut events = Vec::with_capacity(actions.len());
    for (i, &(t, kind, obj)) in actions.iter().enumerate() {
        let t = t as u32 % threads;
        let obj = obj as u32;
        let (op, target) = match kind % 12 {
            0..=3 => (Op::Read, obj % vars),
            4 | 5 => (Op::Write, obj % vars),
            6 => (Op::Acquire, obj % locks),
            7 => (Op::Release, obj % locks),
            8 => (Op::Fork, obj % threads),
            9 => (Op::Join, obj % threads),
            10 => (Op::VolatileWrite, vars + obj % 2),
            _ => (Op::VolatileRead, vars + obj % 2),
        };
        let ev = Event::new(ThreadId(t), op, target, LocId(i as u32 + 1));
        if world.allows(&ev) {
            world.apply(&ev);
            events.push(ev);
        }
    }
    Trace::from_events(events)
}

/// The events written in `literal`, STD's notation with the ids themselves for names:
/// `T<t>|op(<K><n>)`, optionally `|<loc>`, separated by white space. `"T0|w(V1) T0|acq(L0)
/// T1|fork(T2)|7"` is `[Event::write(0, 1), Event::acquire(0, 0), Event::new(ThreadId(1),
/// Op::Fork, 2, LocId(7))]`; the letter `K` before a target's number is not checked. For the
/// traces tests write by hand: a malformed literal panics, naming the event.
pub fn parse_events(literal: &str) -> Vec<Event> {
    literal.split_whitespace().map(parse_event).collect()
}

/// One event of [`parse_events`].
fn parse_event(text: &str) -> Event {
    let parsed = (|| {
        let (thread, rest) = text.strip_prefix('T')?.split_once('|')?;
        let (op, rest) = rest.split_once('(')?;
        let (target, loc) = rest.split_once(')')?;
        let target = target.trim_start_matches(|c: char| c.is_ascii_alphabetic());
        let loc = match loc.strip_prefix('|') {
            Some(l) => LocId(l.parse().ok()?),
            None if loc.is_empty() => LocId::NONE,
            None => return None,
        };
        let op = Op::from_std_name(op.as_bytes())?;
        Some(Event::new(
            ThreadId(thread.parse().ok()?),
            op,
            target.parse().ok()?,
            loc,
        ))
    })();
    parsed.unwrap_or_else(|| panic!("not an event literal: `{text}`"))
}

/// A seeded random trace as a stream of events.
pub struct Generator {
    cfg: GenConfig,
    rng: Pcg64Mcg,
    world: World,
    names: Names,
    emitted: u64,
    current: u32,
    /// Events reserved at the end for thread 0's joins.
    joins_left: u32,
    forks_done: u32,
}

impl Generator {
    pub fn new(cfg: GenConfig) -> Generator {
        let threads = cfg.threads.max(1);
        let locks = cfg.locks;
        let mut names = Names::new();
        for t in 0..threads {
            names.threads.intern(format!("T{t}").as_bytes());
        }
        for v in 0..cfg.vars.max(1) + if cfg.volatile > 0.0 { 4 } else { 0 } {
            names.vars.intern(format!("V{v}").as_bytes());
        }
        for l in 0..locks {
            names.locks.intern(format!("L{l}").as_bytes());
        }
        let nlocs = cfg.locs.max(1) + locks + threads;
        for l in 0..nlocs {
            names.locs.intern(format!("{}", l + 1).as_bytes());
        }
        let joins_left = if cfg.fork_join { threads - 1 } else { 0 };
        Generator {
            rng: Pcg64Mcg::seed_from_u64(cfg.seed),
            world: World::new(threads, locks.max(1)),
            names,
            emitted: 0,
            current: 0,
            joins_left,
            forks_done: 0,
            cfg: GenConfig { threads, ..cfg },
        }
    }

    /// Reads the whole generated trace into memory.
    pub fn trace(cfg: GenConfig) -> Trace {
        Trace::read_from(&mut Generator::new(cfg)).expect("generator does not fail")
    }

    fn access_loc(&self, var: u32, write: bool) -> LocId {
        LocId((var.wrapping_mul(2) + write as u32) % self.cfg.locs.max(1))
    }

    fn sync_loc(&self, lock: u32) -> LocId {
        LocId(self.cfg.locs.max(1) + lock)
    }

    fn next(&mut self) -> Event {
        let threads = self.cfg.threads;
        let fj = self.cfg.fork_join;
        // Forks first, joins last.
        if fj && self.forks_done + 1 < threads {
            self.forks_done += 1;
            let u = self.forks_done;
            return Event::new(
                ThreadId(0),
                Op::Fork,
                u,
                LocId(self.cfg.locs.max(1) + self.cfg.locks),
            );
        }
        let remaining = self.cfg.events - self.emitted;
        if fj && remaining <= self.joins_left as u64 {
            let u = threads - self.joins_left;
            self.joins_left -= 1;
            return Event::new(
                ThreadId(0),
                Op::Join,
                u,
                LocId(self.cfg.locs.max(1) + self.cfg.locks + 1),
            );
        }
        // Pick a thread: stay with the current one, or switch. Thread 0 only does fork/join
        // work in fork/join mode when there are others.
        let lo = if fj && threads > 1 { 1 } else { 0 };
        if self.current < lo || !self.rng.gen_bool(self.cfg.stickiness.clamp(0.0, 1.0)) {
            self.current = self.rng.gen_range(lo..threads);
        }
        let t = self.current;
        let r: f64 = self.rng.gen();
        if r < self.cfg.sync && self.cfg.locks > 0 {
            let held = self.world.held(t);
            let release = !held.is_empty()
                && (held.len() as u32 >= self.cfg.max_nesting || self.rng.gen_bool(0.5));
            if release {
                // Any held lock: hand-over-hand release orders happen.
                let k = if self.rng.gen_bool(0.8) {
                    held.len() - 1
                } else {
                    self.rng.gen_range(0..held.len())
                };
                let l = held[k];
                return Event::new(ThreadId(t), Op::Release, l, self.sync_loc(l));
            }
            let l = self.rng.gen_range(0..self.cfg.locks);
            if self.world.lock_free_for(l, t) && !self.world.held(t).contains(&l) {
                return Event::new(ThreadId(t), Op::Acquire, l, self.sync_loc(l));
            }
        } else if r >= self.cfg.sync && r < self.cfg.sync + self.cfg.volatile {
            // (`r < sync` with no locks falls through to a plain access.)
            let v = self.cfg.vars.max(1) + self.rng.gen_range(0..4);
            let op = if self.rng.gen_bool(0.5) {
                Op::VolatileRead
            } else {
                Op::VolatileWrite
            };
            return Event::new(
                ThreadId(t),
                op,
                v,
                self.access_loc(v, op == Op::VolatileWrite),
            );
        }
        // Accesses: a quarter of them go to a few hot variables, so races exist.
        let vars = self.cfg.vars.max(1);
        let v = if self.rng.gen_bool(0.25) {
            self.rng.gen_range(0..vars.min(8))
        } else {
            self.rng.gen_range(0..vars)
        };
        let write = !self.rng.gen_bool(self.cfg.reads.clamp(0.0, 1.0));
        let op = if write { Op::Write } else { Op::Read };
        Event::new(ThreadId(t), op, v, self.access_loc(v, write))
    }
}

impl EventSource for Generator {
    fn next_event(&mut self) -> Result<Option<Event>> {
        if self.emitted >= self.cfg.events {
            return Ok(None);
        }
        let ev = self.next();
        debug_assert!(
            self.world.allows(&ev),
            "generator produced an illegal event {ev:?}"
        );
        self.world.apply(&ev);
        self.emitted += 1;
        Ok(Some(ev))
    }

    fn names(&self) -> &Names {
        &self.names
    }

    fn position(&self) -> Position {
        Position {
            line: 0,
            byte: 0,
            event: self.emitted.checked_sub(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::validate::is_well_formed;
    use proptest::prelude::*;

    #[test]
    fn event_literals_parse_to_their_events() {
        let ev = parse_events("T0|w(V1) T0|acq(L0)\n T1|fork(T2)|7 T3|vr(V12)");
        assert_eq!(
            ev,
            [
                Event::write(0, 1),
                Event::acquire(0, 0),
                Event::new(ThreadId(1), Op::Fork, 2, LocId(7)),
                Event::new(ThreadId(3), Op::VolatileRead, 12, LocId::NONE),
            ]
        );
        for bad in ["T0|w(V1", "0|w(V1)", "T0|x(V1)", "T0|w(V1)|", "T0|w(V1)z"] {
            let r = std::panic::catch_unwind(|| parse_events(bad));
            assert!(r.is_err(), "{bad}");
        }
    }

    #[test]
    fn generated_traces_are_well_formed_and_exact_length() {
        for seed in 0..50 {
            for fork_join in [false, true] {
                let cfg = GenConfig {
                    events: 500,
                    threads: 1 + seed as u32 % 5,
                    locks: 3,
                    sync: 0.3,
                    volatile: 0.05,
                    fork_join,
                    seed,
                    ..GenConfig::default()
                };
                let t = Generator::trace(cfg);
                assert_eq!(t.len(), 500);
                assert!(is_well_formed(&t), "seed {seed}");
            }
        }
    }

    #[test]
    fn same_seed_same_trace() {
        let cfg = GenConfig {
            events: 1000,
            seed: 7,
            ..GenConfig::default()
        };
        assert_eq!(
            Generator::trace(cfg.clone()).events,
            Generator::trace(cfg).events
        );
    }

    proptest! {
        #[test]
        fn from_actions_is_well_formed(actions in proptest::collection::vec((0u8..4, 0u8..12, 0u8..4), 0..40)) {
            let t = from_actions(3, 3, 2, &actions);
            prop_assert!(is_well_formed(&t));
        }
    }
}
