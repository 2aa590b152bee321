//! [`Pairs`]: how a pair analysis of the lockset family collects its pairs (every pair,
//! or grouped by location pair), and the event loop that prefetches ahead.

use super::*;
use crate::analysis::shard::VarShard;
use crate::analysis::AnalysisKind;

/// How a pair analysis of this family collects its pairs.
#[derive(Debug)]
pub enum Pairs {
    /// Every pair (`--all-pairs`): a log of every access (or of the last ones, W3PO's
    /// history) and a sink listing pairs up to [`PAIR_LIMIT`].
    All { log: AccessLog, sink: PairSink },
    /// Grouped by location pair from the bounded shadow (the default).
    Grouped { shadow: Shadow, sink: GroupSink },
    /// Grouped by location pair, enumerating a bounded log (W3PO's `--history N`, whose
    /// pairs are those of the log's visible accesses).
    GroupedLog { log: HistoryLog, sink: GroupSink },
}

impl Pairs {
    /// `all`: every pair; `keep`: the access log's bound (only with `all` or a history).
    pub fn new(all: bool, keep: Option<usize>) -> Pairs {
        match (all, keep) {
            (true, _) => Pairs::All {
                log: AccessLog::new(keep),
                sink: PairSink::default(),
            },
            (false, None) => Pairs::Grouped {
                shadow: Shadow::new(),
                sink: GroupSink::default(),
            },
            (false, Some(k)) => Pairs::GroupedLog {
                log: HistoryLog::new(k),
                sink: GroupSink::default(),
            },
        }
    }

    /// The bounded history log, if that is how pairs are collected (W3PO's grouped
    /// `--history N`, which prefetches).
    #[inline]
    pub fn history_log(&self) -> Option<&HistoryLog> {
        match self {
            Pairs::GroupedLog { log, .. } => Some(log),
            _ => None,
        }
    }

    /// True for the grouped modes (the shadow or W3PO's bounded log), whose reports split
    /// by variable.
    pub fn is_grouped(&self) -> bool {
        matches!(self, Pairs::Grouped { .. } | Pairs::GroupedLog { .. })
    }

    /// True for the grouped shadow when asking its cache ahead pays
    /// ([`Shadow::wants_prefetch`], [`Pairs::prefetch_ahead`]).
    #[inline]
    pub fn shadow_wants_prefetch(&self) -> bool {
        match self {
            Pairs::Grouped { shadow, .. } => shadow.wants_prefetch(),
            _ => false,
        }
    }

    /// Asks the grouped shadow's cache ahead for the accesses among the events that follow
    /// the current one (`next[0]` is the next event; [`Shadow::wants_prefetch`]): the
    /// variable two events ahead, the newest entries of its sites one event ahead.
    #[inline]
    pub fn prefetch_ahead(&self, next: &[Event]) {
        let Pairs::Grouped { shadow, .. } = self else {
            return;
        };
        let access = |k: usize| next.get(k).filter(|e| e.is_access());
        if let Some(e) = access(1) {
            shadow.prefetch_var(e);
        }
        if let Some(e) = access(0) {
            shadow.prefetch_entries(e);
        }
    }

    /// The pairs of the current access `ev` with the earlier accesses of its variable
    /// (writes, and reads when `reads` is set) that are unknown to `clock` and have a
    /// lockset disjoint from `ls`; then the access is logged at local time `time` (in the
    /// grouped shadow with one lookup of its site).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn check_push(
        &mut self,
        table: &LocksetTable,
        ls: LsId,
        clock: &VectorClock,
        time: u32,
        reads: bool,
        index: u64,
        ev: &Event,
    ) {
        self.check_and_push(table, ls, Some(clock), time, reads, index, ev);
    }

    /// [`Pairs::check_push`] without a clock (every earlier access is unordered), for a
    /// clockless analysis (`lockset`: its grouped shadow's logs drop entries dominated across
    /// threads too, see [`Shadow`]).
    #[inline(always)]
    pub fn check_push_without_clock(
        &mut self,
        table: &LocksetTable,
        ls: LsId,
        reads: bool,
        index: u64,
        ev: &Event,
    ) {
        self.check_and_push(table, ls, None, 0, reads, index, ev);
    }

    /// [`Pairs::check_push`] with the clock optional: `None` only for clockless analyses.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn check_and_push(
        &mut self,
        table: &LocksetTable,
        ls: LsId,
        clock: Option<&VectorClock>,
        time: u32,
        reads: bool,
        index: u64,
        ev: &Event,
    ) {
        match self {
            Pairs::Grouped { shadow, sink } => match clock {
                Some(c) => shadow.check_push(sink, table, ls, c, time, reads, index, ev),
                None => shadow.check_push_without_clock(sink, table, ls, reads, index, ev),
            },
            Pairs::GroupedLog { log, sink } => {
                log.check(sink, table, ls, clock, reads, index, ev);
                log.push(ls, time, index, ev);
            }
            Pairs::All { log, sink } => {
                log.pairs_into(sink, table, ls, clock, reads, index, ev);
                let a = Access {
                    index,
                    time,
                    ls,
                    loc: ev.loc,
                };
                log.push(ev.var(), ev.thread, ev.is_write(), a);
            }
        }
    }

    /// Adds the pair of two known events (W3PO's write-read dependency pairs).
    #[inline]
    pub fn add_events(&mut self, first: u64, first_ev: Event, second: u64, second_ev: Event) {
        match self {
            Pairs::All { sink, .. } => sink.add_events(first, first_ev, second, second_ev),
            Pairs::Grouped { sink, .. } | Pairs::GroupedLog { sink, .. } => {
                // A second way to a group: from now on every hit goes to the group, whose
                // last second event keeps a second event from counting twice (the site
                // pairs' counters so far are exact: no pair came this way before).
                sink.other_way = true;
                let g = sink.group_of(first_ev.loc, first_ev.is_write(), &second_ev);
                sink.hit(g, first, || first_ev, second, &second_ev);
            }
        }
    }

    /// A new report of kind [`ReportKind::Pairs`](crate::report::ReportKind::Pairs) by
    /// analysis `kind`, holding the pairs.
    #[cold]
    #[inline(never)]
    pub fn report(&mut self, kind: AnalysisKind, table: &LocksetTable) -> RaceReport {
        let mut r = RaceReport::new(kind.name(), crate::report::ReportKind::Pairs);
        self.into_report(&mut r, table);
        r
    }

    /// Moves the pairs into `report`.
    #[cold]
    #[inline(never)]
    pub fn into_report(&mut self, report: &mut RaceReport, table: &LocksetTable) {
        match self {
            Pairs::All { sink, .. } => sink.into_report(report),
            Pairs::Grouped { shadow, sink } => {
                sink.into_report(report);
                report.extra.insert(
                    "shadow_entries".into(),
                    serde_json::Value::from(shadow.undominated(table)),
                );
            }
            Pairs::GroupedLog { sink, .. } => sink.into_report(report),
        }
    }
}

/// Runs `event` (an analysis `a`'s handling of one event, with its index) on each of
/// `events`, the first with index `first`; when `ahead`, each event is preceded by
/// `prefetch` of the events that follow it (`next[0]` is the next event), which asks the
/// cache for what they will need.
#[inline(always)]
pub fn run_looking_ahead<A>(
    a: &mut A,
    ahead: bool,
    first: u64,
    events: &[Event],
    prefetch: impl Fn(&A, &[Event]),
    mut event: impl FnMut(&mut A, u64, &Event),
) {
    for (i, ev) in events.iter().enumerate() {
        if ahead {
            prefetch(a, &events[i + 1..]);
        }
        event(a, first + i as u64, ev);
    }
}

/// The fields every [`ShardedLockset`] has, implemented by [`sharded_lockset_analysis`].
pub trait LocksetFields {
    /// Its pairs (whose shadow says whether looking ahead pays).
    fn pairs(&self) -> &Pairs;

    /// Its shard and its buffer of selected events ([`VarShard::run_selected`]).
    fn shard_parts(&mut self) -> (VarShard, &mut Vec<u32>);

    /// The locks each thread holds.
    fn holdings(&mut self) -> &mut Holdings;
}

/// A lockset analysis that can run as a shard of the variables ([`VarShard`]): what
/// [`run_block`] needs of it.
pub trait ShardedLockset: LocksetFields + Sized {
    /// True for the operations a shard still needs besides its own accesses.
    fn shard_needs(op: Op) -> bool;

    /// A plain access to a variable of its shard (`ev` as the shard sees it).
    fn access(&mut self, index: u64, ev: &Event);

    /// One event; `WHOLE`: not run as a shard, so no look at which shard an access's
    /// variable belongs to, which can only say "this one" (a test on every access).
    fn event<const WHOLE: bool>(&mut self, index: u64, ev: &Event);

    /// The part of [`ShardedLockset::event`] they all share: a lock event updates the
    /// holdings, an access of its shard goes to [`ShardedLockset::access`], the rest is
    /// ignored.
    #[inline(always)]
    fn lock_or_access<const WHOLE: bool>(&mut self, index: u64, ev: &Event) {
        match ev.op {
            Op::Acquire => {
                self.holdings().acquire(ev.thread, ev.lock());
            }
            Op::Release => {
                self.holdings().release(ev.thread, ev.lock());
            }
            Op::Read | Op::Write => {
                if let Some(ev) = self.shard_parts().0.own::<WHOLE>(ev) {
                    self.access(index, &ev);
                }
            }
            Op::Fork
            | Op::Join
            | Op::VolatileRead
            | Op::VolatileWrite
            | Op::Signal
            | Op::Wait
            | Op::MethodBegin
            | Op::MethodEnd
            | Op::Begin
            | Op::End
            | Op::Local
            | Op::Branch => {}
        }
    }
}

/// Runs a block of events (the first numbered `first`) through `a`. Whole: every event, with
/// the shadow's look-ahead when it pays ([`Shadow::wants_prefetch`]). As a shard: only its
/// own accesses and the events [`ShardedLockset::shard_needs`], picked in one pass
/// ([`VarShard::select`]), without the look-ahead (asking ahead for the selected accesses
/// gained nothing) and without a branch per event on its shard.
#[inline(always)]
pub fn run_block<A: ShardedLockset>(a: &mut A, first: u64, events: &[Event]) {
    if a.shard_parts().0.is_whole() {
        let ahead = a.pairs().shadow_wants_prefetch();
        let prefetch = |a: &A, next: &[Event]| a.pairs().prefetch_ahead(next);
        return run_looking_ahead(a, ahead, first, events, prefetch, A::event::<true>);
    }
    VarShard::run_selected(
        a,
        first,
        events,
        A::shard_needs,
        A::shard_parts,
        A::event::<false>,
    );
}

/// The [`Analysis`](crate::analysis::Analysis) and [`LocksetFields`] impls of a
/// [`ShardedLockset`] `$ty` named by `$kind`, with fields `hold`, `pairs`, `shard` and
/// `selected`: its events through [`ShardedLockset::event`], a block at a time through
/// [`run_block`]; shardable in its grouped mode; its report from its module's
/// `build_report`.
macro_rules! sharded_lockset_analysis {
    ($ty:ty, $kind:expr) => {
        impl $crate::analysis::locksets::LocksetFields for $ty {
            #[inline(always)]
            fn pairs(&self) -> &Pairs {
                &self.pairs
            }

            #[inline(always)]
            fn shard_parts(&mut self) -> (VarShard, &mut Vec<u32>) {
                (self.shard, &mut self.selected)
            }

            #[inline(always)]
            fn holdings(&mut self) -> &mut Holdings {
                &mut self.hold
            }
        }

        impl Analysis for $ty {
            fn name(&self) -> &'static str {
                $kind.name()
            }

            fn on_event(&mut self, index: u64, ev: &Event, _side: Side<'_>) {
                self.event::<false>(index, ev);
            }

            fn on_events(&mut self, first: u64, events: &[Event]) {
                $crate::analysis::locksets::run_block(self, first, events);
            }

            fn restrict_to_shard(&mut self, shard: VarShard) -> bool {
                self.shard = shard;
                self.pairs.is_grouped()
            }

            fn finish(&mut self, _names: &Names) -> RaceReport {
                build_report(self)
            }
        }
    };
}
pub(crate) use sharded_lockset_analysis;
