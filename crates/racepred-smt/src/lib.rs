//! Sound SMT-based race prediction: the maximal causal model and RECIPE's relaxation.
//!
//! Papers: J. Huang, P. O. Meredith, G. Roşu, *Maximal Sound Predictive Race Detection with
//! Control Flow Abstraction*, PLDI 2014 (RV-Predict; the maximal causal model of Şerbănuţă,
//! Chen and Roşu, RV 2012), and *RECIPE: Relaxed Sound Predictive Analysis*
//! (`papers/recipe-relaxed-sound.txt`): §II–III value-level constraints, §IV unexplored
//! branches.
//!
//! A window of the trace becomes constraints over one integer order variable `O_i` per event
//! and one cut `R`: the events with `O_i < R` form the reordered prefix. Per thread the
//! prefix is a prefix of the thread (program order `O_a < O_b`), a forked thread starts
//! after its fork, a join follows the joined thread's last event. Only events in the prefix
//! carry obligations (each constraint below is guarded by `O_i < R`):
//!
//! - **locks**: two critical sections of one lock in different threads whose acquires are
//!   both in the prefix do not overlap (a section without release stays open);
//! - **data flow**: a read reads the latest write before it in the order (or the value at the
//!   window start). Under the maximal model ([`Model::Maximal`], `mcm`) every read keeps what
//!   it read: the same write for a read without a value (plain STD traces, `vr`, `wait`), a
//!   write of the same value for a read with one. Under RECIPE ([`Model::Relaxed`],
//!   `recipe`) a read with a value may read any write whose value is known, the values flow
//!   through the thread's registers (SSA per event, 64-bit vectors), and every branch in the
//!   prefix must evaluate as recorded;
//! - **race** `(e, f)`: `O_e ≥ R`, `O_f ≥ R` and their threads' previous events in the
//!   prefix: both are enabled after the prefix (SPEC §2, the standard notion the oracle
//!   computes).
//!
//! `recipe-alt` (§IV) also negates each branch that has an alternative path in the trace and
//! continues the thread with that path, whose executed events run atomically at the branch,
//! and asks for races of the path's events.
//!
//! Promise: every race reported comes with a witness schedule that
//! [`racepred::witness::replay`] accepts (checked before the race is reported); on a plain
//! trace that fits in one window, `mcm` reports exactly the oracle's predictable pairs.
//! Windows (`--window`) fix the state at the window start: races across windows are not
//! looked for. Queries that time out are counted, not reported.

mod encode;
pub mod slice;
mod slices;

use std::time::{Duration, Instant};

use racepred::error::{Error, Result};
use racepred::report::{RacePair, RaceReport, ReportKind};
use racepred::trace::values::{self, ValueTrace};
use racepred::witness::{self, Model, ReplayIndex, Replayer, Witness};

pub use encode::{PreState, Problem};
pub use slices::{
    predict_pairs, slice_evidence, slice_report, GroupAnswer, PairsOutcome, SliceLimits,
};

/// Which SMT analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmtKind {
    /// Maximal causal model (`mcm`).
    Mcm,
    /// RECIPE §III (`recipe`).
    Recipe,
    /// RECIPE §III–IV (`recipe-alt`).
    RecipeAlt,
}

impl SmtKind {
    pub const ALL: [SmtKind; 3] = [SmtKind::Mcm, SmtKind::Recipe, SmtKind::RecipeAlt];

    pub fn name(self) -> &'static str {
        match self {
            SmtKind::Mcm => "mcm",
            SmtKind::Recipe => "recipe",
            SmtKind::RecipeAlt => "recipe-alt",
        }
    }

    pub fn from_name(s: &str) -> Option<SmtKind> {
        SmtKind::ALL.into_iter().find(|k| k.name() == s)
    }

    pub fn model(self) -> Model {
        match self {
            SmtKind::Mcm => Model::Maximal,
            SmtKind::Recipe | SmtKind::RecipeAlt => Model::Relaxed,
        }
    }
}

/// Settings of one run.
#[derive(Clone, Debug)]
pub struct SmtConfig {
    pub kind: SmtKind,
    /// Events per window.
    pub window: usize,
    /// Time limit of one solver query.
    pub query_timeout: Duration,
    /// Time limit of the whole run (`None`: none).
    pub budget: Option<Duration>,
    /// Query every candidate pair, not only until each location pair has a race.
    pub all_pairs: bool,
    /// Largest encoding built for one window, in atoms ([`Problem::size`]); a larger window
    /// is counted as `too_large` and not looked at (use a smaller window).
    pub max_atoms: u64,
}

impl SmtConfig {
    pub const DEFAULT_WINDOW: usize = 10_000;
    pub const DEFAULT_QUERY_TIMEOUT: Duration = Duration::from_secs(10);
    /// An upper bound of the encoding before the events no constraint needs are dropped.
    pub const DEFAULT_MAX_ATOMS: u64 = 5_000_000;

    pub fn new(kind: SmtKind) -> SmtConfig {
        SmtConfig {
            kind,
            window: SmtConfig::DEFAULT_WINDOW,
            query_timeout: SmtConfig::DEFAULT_QUERY_TIMEOUT,
            budget: None,
            all_pairs: false,
            max_atoms: SmtConfig::DEFAULT_MAX_ATOMS,
        }
    }
}

/// Query counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub sat: u64,
    pub unsat: u64,
    pub timeout: u64,
    /// Candidates not asked because their location pair already had a race.
    pub skipped: u64,
    /// Candidates not asked because the budget ran out first.
    pub unasked: u64,
    /// Candidates never asked because program order, fork/join or a lock held across both
    /// orders them.
    pub pruned: u64,
    /// Models whose witness did not replay (a bug if ever non-zero; such races are dropped).
    pub replay_failed: u64,
    /// Problems (a window, or a window with one alternative path) not looked at because
    /// their encoding would exceed `max_atoms`.
    pub too_large: u64,
    pub windows: u64,
    /// Windows not looked at, or not to their end, because the budget ran out (building a
    /// window's problem and listing its candidates take time too).
    pub windows_unexamined: u64,
}

impl Counts {
    /// Puts the query counts into a report's figures `extra`: `sat`, `unsat`, `timeout`,
    /// `skipped` (if `skipped`: a slice run skips none), `unasked`, `pruned`,
    /// `replay_failed`, `too_large`, in this order.
    pub(crate) fn put_into(
        &self,
        extra: &mut serde_json::Map<String, serde_json::Value>,
        skipped: bool,
    ) {
        let mut put = |k: &str, v: u64| {
            extra.insert(k.to_string(), v.into());
        };
        put("sat", self.sat);
        put("unsat", self.unsat);
        put("timeout", self.timeout);
        if skipped {
            put("skipped", self.skipped);
        }
        put("unasked", self.unasked);
        put("pruned", self.pruned);
        put("replay_failed", self.replay_failed);
        put("too_large", self.too_large);
    }
}

/// One race with its witness.
#[derive(Clone, Debug)]
pub struct SmtRace {
    pub witness: Witness,
}

/// The result of one run.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Races in the order found.
    pub races: Vec<SmtRace>,
    pub counts: Counts,
    /// True when the budget ran out before every candidate was asked.
    pub out_of_budget: bool,
    pub elapsed: Duration,
}

/// Predicts the races of a value trace (a plain trace: [`ValueTrace::from_trace`]).
/// `progress` is called after every query.
pub fn predict(vt: &ValueTrace, cfg: &SmtConfig, progress: impl FnMut(&Counts)) -> Result<Outcome> {
    if cfg.window == 0 {
        return Err(Error::invalid("the window must hold at least one event"));
    }
    // Z3 does not always honour its `timeout` parameter (measured: its set-up of a window of
    // 10^4 events ran for minutes): a watchdog thread interrupts the context when a query's
    // deadline passes, and the query then answers "unknown".
    watched(|watch| predict_with(vt, cfg, progress, watch))
}

/// Runs `f` with a watchdog thread that interrupts this thread's Z3 context when the armed
/// deadline passes.
fn watched<T>(f: impl FnOnce(&Watchdog) -> T) -> T {
    let ctx = z3::Context::thread_local();
    let handle = ctx.handle();
    let watch = Watchdog::default();
    std::thread::scope(|scope| {
        scope.spawn(|| watch.run(&handle));
        // Stops the watchdog on every way out, a panic included: the scope waits for it.
        let _stop = StopOnDrop(&watch);
        f(&watch)
    })
}

/// Stops its watchdog when dropped (normal return or unwinding).
struct StopOnDrop<'a>(&'a Watchdog);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// The deadline of the running query, checked every 10 ms by a watchdog thread.
#[derive(Default)]
struct Watchdog {
    deadline: std::sync::Mutex<Option<Instant>>,
    done: std::sync::atomic::AtomicBool,
}

impl Watchdog {
    fn run(&self, handle: &z3::ContextHandle<'_>) {
        use std::sync::atomic::Ordering;
        while !self.done.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(10));
            // A poisoned lock (a panic while it was held) still holds a valid deadline.
            let mut d = self.deadline.lock().unwrap_or_else(|e| e.into_inner());
            if d.is_some_and(|d| Instant::now() >= d) {
                *d = None;
                handle.interrupt();
            }
        }
    }

    fn arm(&self, deadline: Instant) {
        *self.deadline.lock().unwrap_or_else(|e| e.into_inner()) = Some(deadline);
    }

    fn disarm(&self) {
        *self.deadline.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Builds the problem's solver for `candidates` (`None` if `deadline` passes first,
    /// interrupting Z3 if it does not stop by itself).
    fn encode(
        &self,
        problem: &Problem<'_>,
        candidates: &[(usize, usize)],
        deadline: Option<Instant>,
    ) -> Option<encode::Session> {
        // Building asserts nothing hard; the deadline bounds it.
        if let Some(d) = deadline {
            self.arm(d);
        }
        let built = problem.encode(candidates, deadline);
        self.disarm();
        built
    }

    /// Asks about pair `ab` within `query_timeout` and the run's `deadline`.
    fn query(
        &self,
        session: &mut encode::Session,
        problem: &Problem<'_>,
        ab: (usize, usize),
        query_timeout: Duration,
        deadline: Option<Instant>,
    ) -> encode::Answer {
        let timeout = match deadline {
            Some(d) => query_timeout.min(d.saturating_duration_since(Instant::now())),
            None => query_timeout,
        };
        // A little after Z3's own timeout, in case it does not stop by itself.
        if let Some(d) =
            Instant::now().checked_add(timeout.saturating_add(Duration::from_millis(200)))
        {
            self.arm(d);
        }
        let answer = session.query(problem, ab, timeout);
        self.disarm();
        answer
    }

    fn stop(&self) {
        self.done.store(true, std::sync::atomic::Ordering::Release);
    }
}

fn predict_with(
    vt: &ValueTrace,
    cfg: &SmtConfig,
    mut progress: impl FnMut(&Counts),
    watch: &Watchdog,
) -> Result<Outcome> {
    let concrete = vt.concrete()?;
    let ix = ReplayIndex::new(vt);
    let start = Instant::now();
    // A budget too large to add to the clock is no limit.
    let deadline = cfg.budget.and_then(|b| start.checked_add(b));
    let mut out = Outcome::default();
    let mut found_locs: rustc_hash::FxHashSet<(u64, u64, u8)> = Default::default();
    let mut snapshot = Replayer::new(vt, cfg.kind.model());
    let mut pre = PreState::default();
    let n = vt.trace.len();
    let mut ws = 0usize;
    let debug = std::env::var_os("RACEPRED_SMT_DEBUG").is_some();
    // Debugging aid: ask nothing in the windows before this event (to reach a slow one).
    let skip_to: usize = std::env::var("RACEPRED_SMT_SKIP_TO")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            out.out_of_budget = true;
            out.counts.windows_unexamined += (n - ws).div_ceil(cfg.window) as u64;
            break;
        }
        let we = (ws + cfg.window).min(n);
        out.counts.windows += 1;
        // One problem for the window, then one per alternative path in it.
        let mut variants: Vec<Option<usize>> = vec![None];
        if cfg.kind == SmtKind::RecipeAlt {
            variants.extend(
                vt.alts
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| a.branch >= ws && a.branch < we)
                    .map(|(k, _)| Some(k)),
            );
        }
        for alt in variants.into_iter().filter(|_| ws >= skip_to) {
            let mut problem =
                Problem::build(vt, &concrete, &ix, &pre, ws, we, alt, cfg.kind.model());
            if problem.size() > cfg.max_atoms {
                // Not even its candidates are listed: that is quadratic in a variable's
                // accesses, and none of them could be asked.
                out.counts.too_large += 1;
                continue;
            }
            let t0 = Instant::now();
            let Some(candidates) = problem.candidates(alt.is_some(), deadline) else {
                out.out_of_budget = true;
                out.counts.windows_unexamined += 1;
                break;
            };
            if debug {
                eprintln!(
                    "window {ws}: {} candidates, built in {:.3}s",
                    candidates.len(),
                    t0.elapsed().as_secs_f64()
                );
            }
            out.counts.pruned += problem.pruned;
            let mut session = None;
            for &c in &candidates {
                let loc_key = problem.location_key(c);
                if !cfg.all_pairs && found_locs.contains(&loc_key) {
                    out.counts.skipped += 1;
                    continue;
                }
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    out.counts.unasked += 1;
                    out.out_of_budget = true;
                    continue;
                }
                if session.is_none() {
                    let t0 = Instant::now();
                    let built = watch.encode(&problem, &candidates, deadline);
                    if debug {
                        eprintln!(
                            "window {ws}: encoded {} atoms in {:.3}s",
                            problem.size(),
                            t0.elapsed().as_secs_f64()
                        );
                    }
                    match built {
                        Some(s) => session = Some(s),
                        None => {
                            out.counts.unasked += 1;
                            out.out_of_budget = true;
                            continue;
                        }
                    }
                }
                let s = session.as_mut().expect("encoded above");
                if let Some(path) = std::env::var_os("RACEPRED_SMT_DUMP") {
                    let _ = std::fs::write(path, s.smt2());
                }
                let t0 = Instant::now();
                let answer = watch.query(s, &problem, c, cfg.query_timeout, deadline);
                if debug {
                    eprintln!(
                        "window {ws}: query {:?} in {:.3}s (size {})",
                        problem.race_numbers(c),
                        t0.elapsed().as_secs_f64(),
                        problem.size()
                    );
                }
                match answer {
                    encode::Answer::Sat(schedule) => {
                        let (e, f) = problem.race_numbers(c);
                        let w = Witness {
                            model: cfg.kind.model(),
                            prefix: ws as u64,
                            schedule,
                            race: (e, f),
                        };
                        match witness::replay_from(vt, &concrete, &ix, snapshot.clone(), &w) {
                            Ok(()) => {
                                out.counts.sat += 1;
                                found_locs.insert(loc_key);
                                out.races.push(SmtRace { witness: w });
                            }
                            Err(_) => out.counts.replay_failed += 1,
                        }
                    }
                    encode::Answer::Unsat => out.counts.unsat += 1,
                    encode::Answer::Unknown => out.counts.timeout += 1,
                }
                progress(&out.counts);
            }
        }
        if we >= n {
            break;
        }
        snapshot.run_prefix(vt, &concrete, &ix, ws as u64, we as u64)?;
        pre.advance(vt, ws, we);
        ws = we;
    }
    out.elapsed = start.elapsed();
    Ok(out)
}

/// The outcome as a race report (pairs; events of alternative paths are numbered from the
/// trace's length on).
pub fn report(vt: &ValueTrace, cfg: &SmtConfig, out: &Outcome) -> RaceReport {
    let mut r = RaceReport::new(cfg.kind.name(), ReportKind::Pairs);
    r.events = vt.trace.len() as u64;
    for race in &out.races {
        let (e, f) = race.witness.race;
        let ev = |n| match values::resolve(vt, n) {
            Some(r) => values::event_of(vt, r).0,
            None => unreachable!("races name events of the trace"),
        };
        r.pairs.push(RacePair::new(e, ev(e), f, ev(f)));
    }
    r.normalize();
    let c = &out.counts;
    let what = match cfg.kind {
        SmtKind::Mcm => "maximal causal model (every read keeps what it read)",
        SmtKind::Recipe => {
            "RECIPE: reads may read other values while every branch keeps its outcome"
        }
        SmtKind::RecipeAlt => {
            "RECIPE with unexplored branches: each branch with an alternative path is also negated"
        }
    };
    r.notes.push(format!(
        "{what}; sound: every pair comes with a witness schedule that replays"
    ));
    r.notes.push(format!(
        "queries: {} sat, {} unsat, {} timed out, {} skipped (location pair found already), {} not asked (budget spent) ({} pruned before asking); {} window(s) of {} events{}",
        c.sat,
        c.unsat,
        c.timeout,
        c.skipped,
        c.unasked,
        c.pruned,
        c.windows,
        cfg.window,
        if cfg.all_pairs {
            ""
        } else {
            "; one race per location pair (--all-pairs for every pair)"
        }
    ));
    if c.too_large > 0 {
        r.notes.push(format!(
            "{} window(s) not looked at: the encoding would exceed {} atoms (try a smaller --window)",
            c.too_large, cfg.max_atoms
        ));
    }
    if out.out_of_budget {
        r.notes
            .push("the budget ran out before every candidate was asked".to_string());
    }
    if c.windows_unexamined > 0 {
        r.notes.push(format!(
            "{} window(s) not looked at, or not to their end: the budget ran out",
            c.windows_unexamined
        ));
    }
    if c.windows > 1 {
        r.notes
            .push("races between events of different windows are not looked for".to_string());
    }
    if !vt.alts.is_empty() {
        r.notes.push(format!(
            "events numbered from {} on lie on alternative paths (`alt` lines)",
            vt.trace.len()
        ));
    }
    r.incomplete = incompleteness(c, out.out_of_budget);
    c.put_into(&mut r.extra, true);
    let mut extra = |k: &str, v: serde_json::Value| {
        r.extra.insert(k.to_string(), v);
    };
    extra("windows", c.windows.into());
    extra("windows_unexamined", c.windows_unexamined.into());
    extra("out_of_budget", out.out_of_budget.into());
    extra("window", (cfg.window as u64).into());
    extra("seconds", out.elapsed.as_secs_f64().into());
    r
}
/// What a run proves for `racepred check` ([`racepred::verdict`]): its races, and whether
/// their absence elsewhere is proved — only when the whole trace was one window, the budget
/// held and every query was answered (the maximal causal model of a plain trace holds every
/// predictable race: SPEC §4).
pub fn evidence(vt: &ValueTrace, cfg: &SmtConfig, out: &Outcome) -> racepred::verdict::SmtEvidence {
    use racepred::verdict::{SmtEvidence, SmtGap};
    let n = vt.trace.len() as u64;
    let c = out.counts;
    let window = cfg.window as u64;
    let exact = if out.out_of_budget || c.unasked > 0 || c.windows_unexamined > 0 {
        Err(SmtGap::Budget {
            seconds: cfg.budget.map_or(0.0, |b| b.as_secs_f64()),
            examined_before: (c.windows.saturating_sub(1) * window).min(n),
        })
    } else if c.timeout > 0 || c.too_large > 0 || c.replay_failed > 0 {
        Err(SmtGap::Unanswered(format!(
            "{} query(ies) timed out, {} candidate(s) in windows too large to encode, {} \
             model(s) whose witness did not replay",
            c.timeout, c.too_large, c.replay_failed
        )))
    } else if n > window {
        Err(SmtGap::Windows { window })
    } else {
        Ok(())
    };
    SmtEvidence {
        report: report(vt, cfg, out),
        witnesses: Default::default(),
        groups: Default::default(),
        exact,
    }
}

/// Why a run did not examine every candidate it had (`None`: it did): what was left out
/// may hold races, so the report must not say "no races".
fn incompleteness(c: &Counts, out_of_budget: bool) -> Option<String> {
    let mut why = Vec::new();
    if out_of_budget || c.unasked > 0 || c.windows_unexamined > 0 {
        why.push(format!(
            "the --budget ran out: {} candidate(s) not asked, {} window(s) not looked at",
            c.unasked, c.windows_unexamined
        ));
    }
    if c.timeout > 0 {
        why.push(format!(
            "{} query(ies) timed out (--query-timeout)",
            c.timeout
        ));
    }
    if c.too_large > 0 {
        why.push(format!(
            "{} window(s) too large to encode (try a smaller --window)",
            c.too_large
        ));
    }
    if c.replay_failed > 0 {
        why.push(format!(
            "{} race(s) dropped because their witness did not replay",
            c.replay_failed
        ));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic inside the run (here in the progress callback) reaches the caller instead of
    /// leaving the scope waiting forever on the watchdog thread.
    #[test]
    fn a_panic_inside_the_run_is_no_hang() {
        let text = "T0|fork(T1)|0\nT0|w(x)|1\nT1|w(x)|2\n";
        let vt = ValueTrace::read(text.as_bytes()).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let cfg = SmtConfig::new(SmtKind::Mcm);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                predict(&vt, &cfg, |_| panic!("progress fails"))
            }));
            let _ = tx.send(r.is_err());
        });
        let panicked = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("predict did not return within 60 s after a panic");
        assert!(panicked);
    }
}
