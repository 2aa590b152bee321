//! Well-formedness (SPEC §1), checked in one streaming pass.
//!
//! A trace is well-formed when each lock is held by at most one thread, a thread releases
//! only locks it holds (in any order: hand-over-hand locking is legal; re-entrant acquires
//! nest), a forked thread acts only after its fork, and a joined thread acts no more after
//! the join. Ending inside a critical section is fine (the paper's dummy release). We also
//! check that `mend(M)` closes the innermost open `mbegin(M)` of its thread (RDIT's barrier
//! pairs nest).

use super::{Event, MethodId, Names, Op, ThreadId};
use crate::error::{Error, Position, Rule};

/// The operations no rule of their own checks, only those of their thread (acted or
/// forked, not joined): a pattern, so that the matches on the operation stay exhaustive.
macro_rules! thread_rules_only {
    () => {
        Op::Read
            | Op::Write
            | Op::VolatileRead
            | Op::VolatileWrite
            | Op::Signal
            | Op::Wait
            | Op::Begin
            | Op::End
            | Op::Local
            | Op::Branch
    };
}

/// One broken rule at one event.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Violation {
    pub rule: Rule,
    pub explanation: String,
    /// 0-based event index.
    pub event: u64,
    /// 1-based source line (0 if the input has no lines).
    pub line: u64,
}

impl Violation {
    /// The violation as an [`Error`] at its position.
    pub fn to_error(&self) -> Error {
        Error::ill_formed(self.rule, self.explanation.clone()).at(Position {
            line: self.line,
            byte: 0,
            event: Some(self.event),
        })
    }
}

#[derive(Clone, Copy, Default)]
struct LockState {
    holder: Option<ThreadId>,
    depth: u32,
    /// Line of the outermost acquire of the current holder.
    since: u64,
}

#[derive(Clone, Copy, Default)]
struct ThreadState {
    /// Line of the thread's first event, if it acted before being forked.
    acted_at: Option<u64>,
    forked_at: Option<u64>,
    joined_at: Option<u64>,
}

/// Streaming well-formedness checker. Feed every event in order with [`Validator::check`].
#[derive(Default)]
pub struct Validator {
    locks: Vec<LockState>,
    threads: Vec<ThreadState>,
    methods: Vec<Vec<MethodId>>,
    events: u64,
}

fn grow<T: Default + Clone>(v: &mut Vec<T>, i: usize) {
    if i >= v.len() {
        v.resize(i + 1, T::default());
    }
}

impl Validator {
    pub fn new() -> Validator {
        Validator::default()
    }

    /// [`check`](Self::check) for the hot path: `line` and `names` are asked for only when
    /// the event needs them (a thread's first event, lock hand-offs, fork/join, violations),
    /// so a driver pays no dynamic call per plain access.
    #[inline]
    pub fn check_lazy<'n>(
        &mut self,
        ev: &Event,
        line: impl FnOnce() -> u64,
        names: impl FnOnce() -> &'n Names,
    ) -> Option<Violation> {
        if self.fast(ev) {
            self.events += 1;
            return None;
        }
        self.check(ev, line(), names())
    }

    /// [`check_lazy`](Self::check_lazy) for a run of events (`lines[i]` the line of
    /// `events[i]`): calls `found` with each violation, in order, until it returns false.
    /// The event count stays in a register across the run's fast path instead of being
    /// stored at every event (the drivers' validation of each block: 23 instructions an
    /// event before, on a generated binary trace).
    pub fn check_run<'n>(
        &mut self,
        events: &[Event],
        lines: &[u64],
        names: impl Fn() -> &'n Names,
        mut found: impl FnMut(Violation) -> bool,
    ) {
        let start = self.events;
        for (k, ev) in events.iter().enumerate() {
            if self.fast(ev) {
                continue;
            }
            self.events = start + k as u64;
            if let Some(v) = self.check(ev, lines[k], names()) {
                if !found(v) {
                    return;
                }
            }
        }
        self.events = start + events.len() as u64;
    }

    /// True (and the state updated) if `ev` is legal and needs no line: an access, signal or
    /// transaction boundary of a thread that already acted or was forked and is not joined,
    /// or a nested acquire / release of a lock the thread holds.
    #[inline]
    fn fast(&mut self, ev: &Event) -> bool {
        let Some(ts) = self.threads.get(ev.thread.index()) else {
            return false;
        };
        if ts.joined_at.is_some() || (ts.forked_at.is_none() && ts.acted_at.is_none()) {
            return false;
        }
        match ev.op {
            thread_rules_only!() => true,
            Op::Acquire | Op::Release => match self.locks.get_mut(ev.target as usize) {
                Some(ls) if ls.holder == Some(ev.thread) && ls.depth > 0 => {
                    if ev.op == Op::Acquire {
                        ls.depth += 1;
                    } else if ls.depth == 1 {
                        *ls = LockState {
                            holder: None,
                            depth: 0,
                            since: 0,
                        };
                    } else {
                        ls.depth -= 1;
                    }
                    true
                }
                _ => false,
            },
            Op::Fork | Op::Join | Op::MethodBegin | Op::MethodEnd => false,
        }
    }

    /// Checks the next event; `line` is its source line (0 if none). Returns the broken
    /// rule, if any. After a violation the state is updated as if the event were legal, so a
    /// lenient run goes on with a sensible view of the trace.
    pub fn check(&mut self, ev: &Event, line: u64, names: &Names) -> Option<Violation> {
        let index = self.events;
        self.events += 1;
        let t = ev.thread;
        grow(&mut self.threads, t.index());
        let mut out = None;
        let mut fail = |rule: Rule, explanation: String| {
            if out.is_none() {
                out = Some(Violation {
                    rule,
                    explanation,
                    event: index,
                    line,
                });
            }
        };
        let tn = names.thread(t);

        let ts = &mut self.threads[t.index()];
        if let Some(j) = ts.joined_at {
            fail(
                Rule::ActAfterJoin,
                format!("thread {tn} acts after it was joined (line {j})"),
            );
        }
        if ts.forked_at.is_none() && ts.acted_at.is_none() {
            ts.acted_at = Some(line);
        }

        match ev.op {
            Op::Acquire => {
                let l = ev.lock();
                grow(&mut self.locks, l.index());
                let ls = &mut self.locks[l.index()];
                match ls.holder {
                    Some(h) if h == t && ls.depth > 0 => ls.depth += 1,
                    Some(h) if ls.depth > 0 => {
                        fail(
                            Rule::LockHeld,
                            format!(
                                "thread {tn} acquires lock {} held by thread {} since line {}",
                                names.lock(l),
                                names.thread(h),
                                ls.since
                            ),
                        );
                        *ls = LockState {
                            holder: Some(t),
                            depth: 1,
                            since: line,
                        };
                    }
                    _ => {
                        *ls = LockState {
                            holder: Some(t),
                            depth: 1,
                            since: line,
                        }
                    }
                }
            }
            Op::Release => {
                let l = ev.lock();
                grow(&mut self.locks, l.index());
                let ls = &mut self.locks[l.index()];
                match ls.holder {
                    Some(h) if h == t && ls.depth > 0 => {
                        ls.depth -= 1;
                        if ls.depth == 0 {
                            ls.holder = None;
                        }
                    }
                    Some(h) if ls.depth > 0 => fail(
                        Rule::ReleaseNotHeld,
                        format!(
                            "thread {tn} releases lock {} held by thread {} since line {}",
                            names.lock(l),
                            names.thread(h),
                            ls.since
                        ),
                    ),
                    _ => fail(
                        Rule::ReleaseNotHeld,
                        format!(
                            "thread {tn} releases lock {} that no thread holds",
                            names.lock(l)
                        ),
                    ),
                }
            }
            Op::Fork => {
                let u = ev.other_thread();
                grow(&mut self.threads, u.index());
                let un = names.thread(u);
                let us = &mut self.threads[u.index()];
                if u == t {
                    fail(Rule::SelfForkJoin, format!("thread {tn} forks itself"));
                } else if let Some(f) = us.forked_at {
                    fail(
                        Rule::DoubleFork,
                        format!("thread {un} is forked again (first fork at line {f})"),
                    );
                } else if let Some(a) = us.acted_at {
                    fail(
                        Rule::ActBeforeFork,
                        format!("thread {un} is forked after it already acted (line {a})"),
                    );
                } else if let Some(j) = us.joined_at {
                    fail(
                        Rule::ActAfterJoin,
                        format!("thread {un} is forked after it was joined (line {j})"),
                    );
                }
                us.forked_at.get_or_insert(line);
            }
            Op::Join => {
                let u = ev.other_thread();
                grow(&mut self.threads, u.index());
                if u == t {
                    fail(Rule::SelfForkJoin, format!("thread {tn} joins itself"));
                }
                self.threads[u.index()].joined_at.get_or_insert(line);
            }
            Op::MethodBegin => {
                grow(&mut self.methods, t.index());
                self.methods[t.index()].push(ev.method());
            }
            Op::MethodEnd => {
                grow(&mut self.methods, t.index());
                let m = ev.method();
                match self.methods[t.index()].last() {
                    Some(&top) if top == m => {
                        self.methods[t.index()].pop();
                    }
                    Some(&top) => {
                        fail(
                            Rule::MethodEndMismatch,
                            format!(
                                "thread {tn} ends method {} inside method {}",
                                names.methods.name_or(m.0),
                                names.methods.name_or(top.0)
                            ),
                        );
                        self.methods[t.index()].pop();
                    }
                    None => fail(
                        Rule::MethodEndMismatch,
                        format!(
                            "thread {tn} ends method {} that it did not begin",
                            names.methods.name_or(m.0)
                        ),
                    ),
                }
            }
            thread_rules_only!() => {}
        }
        out
    }
}

/// Checks a whole in-memory trace; all violations in order.
pub fn validate_trace(trace: &super::Trace) -> Vec<Violation> {
    let mut v = Validator::new();
    trace
        .events
        .iter()
        .enumerate()
        .filter_map(|(i, ev)| v.check(ev, trace.lines.get(i).copied().unwrap_or(0), &trace.names))
        .collect()
}

/// True if the trace is well-formed.
pub fn is_well_formed(trace: &super::Trace) -> bool {
    let mut v = Validator::new();
    trace
        .events
        .iter()
        .all(|ev| v.check(ev, 0, &trace.names).is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{std_format::StdReader, Trace};

    fn rules(s: &str) -> Vec<(Rule, u64)> {
        let t = Trace::read_from(&mut StdReader::new(s.as_bytes())).unwrap();
        validate_trace(&t)
            .into_iter()
            .map(|v| (v.rule, v.line))
            .collect()
    }

    #[test]
    fn legal_traces() {
        // Hand-over-hand locking, re-entrancy, ending inside a critical section.
        assert!(rules("T0|acq(a)|1\nT0|acq(b)|2\nT0|rel(a)|3\nT0|acq(c)|4\nT0|rel(b)|5\nT0|acq(c)|6\nT0|rel(c)|7\nT0|rel(c)|8\nT1|acq(a)|9\n").is_empty());
        assert!(rules("T0|fork(T1)|1\nT1|w(x)|2\nT0|join(T1)|3\nT0|r(x)|4\n").is_empty());
        assert!(rules(
            "T0|mbegin(m;a)|1\nT0|mbegin(n)|2\nT0|mend(n)|3\nT0|mend(m)|4\nT1|mbegin(m)|5\n"
        )
        .is_empty());
    }

    #[test]
    fn each_rule() {
        // Each trace breaks one rule once, at the line given.
        for (trace, rule, line) in [
            ("T0|acq(a)|1\nT1|acq(a)|2\n", Rule::LockHeld, 2),
            ("T0|acq(a)|1\nT1|rel(a)|2\n", Rule::ReleaseNotHeld, 2),
            ("T0|rel(a)|1\n", Rule::ReleaseNotHeld, 1),
            (
                "T0|acq(a)|1\nT0|rel(a)|2\nT0|rel(a)|3\n",
                Rule::ReleaseNotHeld,
                3,
            ),
            ("T1|w(x)|1\nT0|fork(T1)|2\n", Rule::ActBeforeFork, 2),
            ("T0|fork(T1)|1\nT0|fork(T1)|2\n", Rule::DoubleFork, 2),
            ("T0|fork(T0)|1\n", Rule::SelfForkJoin, 1),
            (
                "T0|fork(T1)|1\nT0|join(T1)|2\nT1|w(x)|3\n",
                Rule::ActAfterJoin,
                3,
            ),
            ("T0|mbegin(m)|1\nT0|mend(n)|2\n", Rule::MethodEndMismatch, 2),
            ("T0|mend(n)|1\n", Rule::MethodEndMismatch, 1),
        ] {
            assert_eq!(rules(trace), [(rule, line)], "{trace:?}");
        }
    }

    proptest::proptest! {
        /// The lazy fast path gives the same violations as the eager check, on legal and
        /// illegal traces alike.
        #[test]
        fn lazy_check_equals_eager(
            acts in proptest::collection::vec((0u32..3, 0u8..8, 0u32..3), 0..40),
            cuts in proptest::collection::vec(0usize..41, 0..4),
        ) {
            let ops = [Op::Read, Op::Write, Op::Acquire, Op::Release, Op::Fork, Op::Join, Op::MethodBegin, Op::MethodEnd];
            let events: Vec<Event> = acts
                .iter()
                .map(|&(t, k, o)| Event::new(ThreadId(t), ops[k as usize], o, crate::trace::LocId(0)))
                .collect();
            let t = crate::trace::Trace::from_events(events);
            let (mut a, mut b) = (Validator::new(), Validator::new());
            let mut eager_all = Vec::new();
            for (i, ev) in t.events.iter().enumerate() {
                let line = i as u64 + 1;
                let eager = a.check(ev, line, &t.names);
                let lazy = b.check_lazy(ev, || line, || &t.names);
                proptest::prop_assert_eq!(&eager, &lazy);
                eager_all.extend(eager);
            }
            // In runs (cut wherever `cuts` says): the same violations in order; stopping at
            // the first, that one.
            let lines: Vec<u64> = (1..=t.len() as u64).collect();
            let (mut c, mut all) = (Validator::new(), Vec::new());
            let mut from = 0;
            for cut in cuts.iter().map(|&k| k % (t.len() + 1)).chain([t.len()]) {
                let to = cut.max(from);
                c.check_run(&t.events[from..to], &lines[from..to], || &t.names, |v| {
                    all.push(v);
                    true
                });
                from = to;
            }
            proptest::prop_assert_eq!(&all, &eager_all);
            proptest::prop_assert_eq!(c.events, t.len() as u64);
            let (mut d, mut first) = (Validator::new(), Vec::new());
            d.check_run(&t.events, &lines, || &t.names, |v| {
                first.push(v);
                false
            });
            proptest::prop_assert_eq!(&first[..], &eager_all[..eager_all.len().min(1)]);
        }
    }

    #[test]
    fn lenient_goes_on_and_reports_all() {
        let r = rules("T0|acq(a)|1\nT1|acq(a)|2\nT1|rel(a)|3\nT0|rel(a)|4\n");
        assert_eq!(r, [(Rule::LockHeld, 2), (Rule::ReleaseNotHeld, 4)]);
    }

    #[test]
    fn message_names_file_line_and_rule() {
        let t = Trace::read_from(&mut StdReader::new(&b"T0|acq(a)|1\nT1|acq(a)|2\n"[..])).unwrap();
        let v = &validate_trace(&t)[0];
        let msg = v.to_error().in_file("x.std").to_string();
        assert_eq!(
            msg,
            "x.std:2: lock-held: thread T1 acquires lock a held by thread T0 since line 1"
        );
    }
}
