//! Lockset: Eraser's state machine and lockset pairs.
//!
//! - S. Savage, M. Burrows, G. Nelson, P. Sobalvarro, T. Anderson: "Eraser: A Dynamic Data
//!   Race Detector for Multithreaded Programs", TOCS 1997 — the lock discipline checked by a
//!   per-variable state machine (virgin → exclusive → shared / shared-modified) with a
//!   candidate lockset `C(v)` refined by intersection.
//! - M. Sulzmann, K. Stadtmüller: "Efficient, Near Complete and Often Sound Hybrid Dynamic
//!   Data Race Prediction", MPLR 2020 (`papers/w3po-hybrid-lockset.txt`), Def. 3.10 (the
//!   lockset `LS(e)` of an access: the locks its thread holds) and §3.2 (two conflicting
//!   events with disjoint locksets are a potential race).
//!
//! The report (`ReportKind::Pairs`) carries
//! - `pairs`: every *lockset pair* — conflicting plain accesses (different threads, same
//!   variable, at least one write) whose locksets are disjoint. No ordering is used at all,
//!   so every predictable race pair (SPEC §2, both the standard and the adjacent notion) is
//!   among them (lockset completeness): two accesses holding a common lock cannot be
//!   enabled together. Unsound in general. By default grouped by location pair (one pair per
//!   location pair, its first instance, with the number of racing accesses: see
//!   `locksets::Shadow`), in time and memory linear in the events; with `--all-pairs`
//!   (`Lockset::all_pairs`) every pair, at most `PAIR_LIMIT` listed, `extra` `pairs_total`
//!   the exact count, in time linear in the pairs.
//! - `racy_events`: Eraser's discipline violations — accesses that leave their variable in
//!   the shared-modified state with an empty candidate lockset. By default the first of each
//!   variable (where Eraser warns: `C(v)` only shrinks, so every later access of the
//!   variable violates too), so memory stays bounded by the variables; with `--all-pairs`
//!   every violating access. `extra` has `eraser_violating_vars` (variables with at least
//!   one violation) and `eraser_violations` (every violating access, in both modes).
//!
//! Volatile accesses (`vr`/`vw`) are synchronisation, never racy, and are ignored; so are
//! fork/join and sig/wait (Eraser has no happens-before). Re-entrant acquires nest; releases
//! need not be LIFO.

use super::locksets::{
    sharded_lockset_analysis, Holdings, LocksetTable, LsId, Pairs, ShardedLockset,
};
use super::shard::VarShard;
use super::{Analysis, Side};
use crate::analysis::AnalysisKind;
use crate::report::{RaceReport, RacyEvent};
use crate::trace::{Event, Names, Op, ThreadId};

/// Eraser's per-variable state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum EraserState {
    /// Never accessed.
    #[default]
    Virgin,
    /// Accessed by one thread only (initialisation).
    Exclusive(ThreadId),
    /// Read by several threads, written by at most the first: `C(v)` refined, no reports.
    Shared(LsId),
    /// Written after being shared: `C(v)` refined, an empty `C(v)` is a violation.
    SharedModified(LsId),
}

/// Eraser plus lockset pairs.
pub struct Lockset {
    hold: Holdings,
    pairs: Pairs,
    state: Vec<EraserState>,
    violated: Vec<bool>,
    violations: Vec<RacyEvent>,
    /// Every violation listed (`--all-pairs`), not only each variable's first.
    all: bool,
    /// Violating accesses, listed or not.
    violation_count: u64,
    /// The variables analysed (all but when run as a shard).
    shard: VarShard,
    /// A shard's events of the current block ([`VarShard::select`]).
    selected: Vec<u32>,
}

impl Default for Lockset {
    fn default() -> Self {
        Lockset::new()
    }
}

impl Lockset {
    /// Pairs grouped by location pair (the default).
    pub fn new() -> Lockset {
        Lockset::with_mode(false)
    }

    /// Every pair (`--all-pairs`): time and memory grow with the pairs.
    pub fn all_pairs() -> Lockset {
        Lockset::with_mode(true)
    }

    /// `all`: every pair; otherwise grouped by location pair.
    pub fn with_mode(all: bool) -> Lockset {
        Lockset {
            hold: Holdings::new(),
            pairs: Pairs::new(all, None),
            state: Vec::new(),
            violated: Vec::new(),
            violations: Vec::new(),
            all,
            violation_count: 0,
            shard: VarShard::WHOLE,
            selected: Vec::new(),
        }
    }

    /// The Eraser state of variable `x` now.
    pub fn eraser_state(&self, x: u32) -> EraserState {
        self.state.get(x as usize).copied().unwrap_or_default()
    }

    #[inline(always)]
    fn eraser(&mut self, index: u64, ev: &Event, ls: LsId) {
        let x = ev.target as usize;
        if x >= self.state.len() {
            self.state.resize(x + 1, EraserState::Virgin);
            self.violated.resize(x + 1, false);
        }
        // Most accesses of a racy variable come after its first violation: the state stays,
        // the access violates again. Tested before the `match`, whose jump table the
        // states' mix would mispredict.
        if self.state[x] == EraserState::SharedModified(LocksetTable::EMPTY) && !self.all {
            self.violation_count += 1;
            return;
        }
        let table = &mut self.hold.table;
        let next = match self.state[x] {
            EraserState::Virgin => EraserState::Exclusive(ev.thread),
            EraserState::Exclusive(t) if t == ev.thread => EraserState::Exclusive(t),
            EraserState::Exclusive(_) if ev.is_write() => EraserState::SharedModified(ls),
            EraserState::Exclusive(_) => EraserState::Shared(ls),
            EraserState::Shared(c) if ev.is_write() => {
                EraserState::SharedModified(table.intersect(c, ls))
            }
            EraserState::Shared(c) => EraserState::Shared(table.intersect(c, ls)),
            // An empty candidate set stays empty (most accesses of a racy variable, once it
            // has violated: no intersection to look up).
            EraserState::SharedModified(LocksetTable::EMPTY) => {
                EraserState::SharedModified(LocksetTable::EMPTY)
            }
            EraserState::SharedModified(c) => EraserState::SharedModified(table.intersect(c, ls)),
        };
        self.state[x] = next;
        if next == EraserState::SharedModified(LocksetTable::EMPTY) {
            self.violation_count += 1;
            if self.all || !self.violated[x] {
                self.violations.push(RacyEvent { index, event: *ev });
            }
            self.violated[x] = true;
        }
    }
}

sharded_lockset_analysis!(Lockset, AnalysisKind::Lockset);

impl ShardedLockset for Lockset {
    /// The lock events (the others change nothing to a shard).
    #[inline(always)]
    fn shard_needs(op: Op) -> bool {
        matches!(op, Op::Acquire | Op::Release)
    }

    #[inline(always)]
    fn access(&mut self, index: u64, ev: &Event) {
        let ls = self.hold.lockset(ev.thread);
        let (table, w) = (&self.hold.table, ev.is_write());
        self.pairs.check_push_without_clock(table, ls, w, index, ev);
        self.eraser(index, ev, ls);
    }

    #[inline(never)]
    fn event<const WHOLE: bool>(&mut self, index: u64, ev: &Event) {
        self.lock_or_access::<WHOLE>(index, ev);
    }
}

#[cold]
#[inline(never)]
fn build_report(a: &mut Lockset) -> RaceReport {
    let mut r = a.pairs.report(AnalysisKind::Lockset, &a.hold.table);
    r.racy_events = std::mem::take(&mut a.violations);
    r.normalize();
    let vars = a.violated.iter().filter(|&&v| v).count();
    r.extra.insert(
        "eraser_violating_vars".into(),
        serde_json::Value::from(vars),
    );
    r.extra.insert(
        "eraser_violations".into(),
        serde_json::Value::from(a.violation_count),
    );
    r.notes.push(if a.all {
        "pairs: conflicting accesses with disjoint locksets (complete, unsound); racy events: \
         Eraser lock-discipline violations (shared-modified with empty candidate lockset)"
            .into()
    } else {
        "pairs: conflicting accesses with disjoint locksets (complete, unsound); racy events: \
         the first Eraser lock-discipline violation (shared-modified with empty candidate \
         lockset) of each variable; eraser_violations counts them all, --all-pairs lists them"
            .into()
    });
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::parse_events;
    use crate::trace::Trace;

    /// `a`'s report on the trace written `literal` ([`parse_events`]).
    fn run_on(a: Lockset, literal: &str) -> RaceReport {
        let t = Trace::from_events(parse_events(literal));
        crate::analysis::run_one(&t, Box::new(a))
    }

    /// [`Lockset::all_pairs`]'s report on the trace written `literal`.
    fn run(literal: &str) -> RaceReport {
        run_on(Lockset::all_pairs(), literal)
    }

    #[test]
    fn protected_accesses_are_not_pairs() {
        let r = run("T0|acq(L0) T0|w(V0) T0|rel(L0) T1|acq(L0) T1|w(V0) T1|rel(L0) T1|r(V0)");
        assert_eq!(r.pair_set().into_iter().collect::<Vec<_>>(), vec![(1, 6)]);
        // Eraser: exclusive(T0) → shared-modified {L0} → read with {} empties C(v).
        assert_eq!(r.racy_set().into_iter().collect::<Vec<_>>(), vec![6]);
        assert_eq!(r.extra["eraser_violating_vars"], 1);
    }

    #[test]
    fn eraser_tolerates_initialisation_and_read_sharing() {
        // Exclusive writes by T0, then unprotected reads by T1 and T2: shared, no report.
        let r = run("T0|w(V0) T0|w(V0) T1|r(V0) T2|r(V0)");
        assert!(r.racy_events.is_empty());
        // Lockset pairs do not know about initialisation.
        assert_eq!(r.pair_set().len(), 4);
    }

    #[test]
    fn paper_example_3_2_lockset_is_complete() {
        // w3po Example 3.2 (right): T1: w(x) acq(y) rel(y); T2: acq(y) rel(y) w(x)
        // (our reading). HB orders the writes; lockset reports them.
        let r = run("T0|w(V0) T0|acq(L0) T0|rel(L0) T1|acq(L0) T1|rel(L0) T1|w(V0)");
        assert_eq!(r.pair_set().into_iter().collect::<Vec<_>>(), vec![(0, 5)]);
    }

    #[test]
    fn volatile_and_reentrant() {
        // T0's write still holds L0 after the inner release.
        let r = run(
            "T0|acq(L0) T0|acq(L0) T0|rel(L0) T0|w(V0) T0|rel(L0) T0|vw(V1) T1|vr(V1) \
             T1|acq(L0) T1|r(V0) T1|rel(L0)",
        );
        assert!(r.pairs.is_empty());
    }

    #[test]
    fn default_lists_each_variables_first_violation() {
        let trace = "T0|w(V0) T1|w(V0) T0|r(V0) T0|w(V1) T1|w(V1) T1|w(V0)";
        let all = run(trace);
        assert_eq!(
            all.racy_set().into_iter().collect::<Vec<_>>(),
            vec![1, 2, 4, 5]
        );
        assert_eq!(all.extra["eraser_violations"], 4);
        let first = run_on(Lockset::new(), trace);
        assert_eq!(first.racy_set().into_iter().collect::<Vec<_>>(), vec![1, 4]);
        assert_eq!(first.extra["eraser_violations"], 4);
        assert_eq!(first.extra["eraser_violating_vars"], 2);
    }
}
