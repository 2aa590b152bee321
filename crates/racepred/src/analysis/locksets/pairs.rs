//! [`Pairs`]: how a pair analysis of the lockset family collects its pairs (every pair,
//! or grouped by location pair), and the event loop that prefetches ahead.

use super::*;

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
