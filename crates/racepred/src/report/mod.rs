//! Race reports: plain data, shared by every analysis. Formatting lives in `text`, `json`
//! and `sarif` and adds no logic (TSan's `tsan_report.h`). What printers need besides the
//! report — names, a location table, trace lines of shown events, a SARIF source root — is
//! a [`ReportContext`], read before printing ([`locations`]).

pub mod json;
pub mod locations;
pub mod sarif;
pub mod text;

use crate::trace::{Event, Names};

pub use locations::{EventLines, LocationTable, Locations, SourceIndex};

/// Kind of a race pair, by trace order (SPEC §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PairKind {
    /// Both writes.
    WriteWrite,
    /// The write comes first in the trace.
    WriteRead,
    /// The read comes first in the trace.
    ReadWrite,
}

impl PairKind {
    /// The kind of a conflicting pair with `first` earlier in the trace.
    pub fn of(first: &Event, second: &Event) -> PairKind {
        match (first.is_write(), second.is_write()) {
            (true, true) => PairKind::WriteWrite,
            (true, false) => PairKind::WriteRead,
            (false, true) => PairKind::ReadWrite,
            (false, false) => panic!("a read-read pair is not a race"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PairKind::WriteWrite => "write-write",
            PairKind::WriteRead => "write-read",
            PairKind::ReadWrite => "read-write",
        }
    }
}

/// Where reports place an access when they group races: its location id or, for an access
/// without a location, `2^32 +` its variable. A trace without locations (CSV has none) then
/// still gets one group per variable instead of one for every race, and a location never
/// shares a place with a variable.
#[inline]
pub fn place(ev: &Event) -> u64 {
    place_at(ev.loc, ev.target)
}

/// [`place`] of an access at `loc` to variable `var`.
#[inline]
pub fn place_at(loc: crate::trace::LocId, var: u32) -> u64 {
    if loc.is_none() {
        1 << 32 | var as u64
    } else {
        loc.0 as u64
    }
}

/// What a pair report groups by: the places ([`place`]) of the pair's first and second
/// events, and its kind. For accesses with locations, the location pair and kind.
pub type GroupKey = (u64, u64, PairKind);

/// The group ([`GroupKey`]) of the pair of events `e` (first) and `f`.
#[inline]
pub fn group_key_of(e: &Event, f: &Event) -> GroupKey {
    (place(e), place(f), PairKind::of(e, f))
}

impl RacePair {
    /// The group ([`GroupKey`]) of the pair.
    #[inline]
    pub fn group_key(&self) -> GroupKey {
        (
            place(&self.first_event),
            place(&self.second_event),
            self.kind,
        )
    }
}

/// What an analysis reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReportKind {
    /// Pairs of events (HBP, SHBP, W3PO, SSHB, …).
    Pairs,
    /// Racy events in one streaming pass (FastTrack style: the second access of each race).
    RacyEvents,
}

/// Classification of a pair by analyses that classify (SSHB: guaranteed / maybe).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Guaranteed,
    Maybe,
}

/// One race pair: `first < second` in trace order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RacePair {
    pub first: u64,
    pub second: u64,
    pub first_event: Event,
    pub second_event: Event,
    pub kind: PairKind,
    pub verdict: Option<Verdict>,
}

impl RacePair {
    pub fn new(first: u64, first_event: Event, second: u64, second_event: Event) -> RacePair {
        debug_assert!(first < second);
        RacePair {
            first,
            second,
            first_event,
            second_event,
            kind: PairKind::of(&first_event, &second_event),
            verdict: None,
        }
    }
}

/// One racy event: an access that races with an earlier one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RacyEvent {
    pub index: u64,
    pub event: Event,
}

/// The result of one analysis on one trace.
#[derive(Clone, Debug)]
pub struct RaceReport {
    /// The analysis's CLI name (`hb`, `shbp`, …).
    pub analysis: String,
    pub kind: ReportKind,
    /// Number of events analysed.
    pub events: u64,
    /// Pairs, sorted by (first, second), each once.
    pub pairs: Vec<RacePair>,
    /// Racy events, sorted by index, each once.
    pub racy_events: Vec<RacyEvent>,
    /// What ran and what it promises, for people (e.g. "streaming Alg. 3 as published: may
    /// miss pairs").
    pub notes: Vec<String>,
    /// Analysis-specific figures (counters, timings), printed as `key: value` and put in JSON.
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// Empty for a report that lists every pair. A *grouped* report (the lockset family's
    /// default) lists one pair per location group, its first instance, and here, at the
    /// same position, the number of racing accesses of the group: distinct second events
    /// that race with some earlier access of the group (not the number of pairs).
    pub group_counts: Vec<u64>,
    /// Empty for a report that lists every racy event. A report whose racy events are
    /// *grouped by location* ([`RacyLog`]: `hb`, `fasttrack`, `shb`, `wcp` from the CLI
    /// unless `--all-pairs`) lists the first racy event of each (location, operation) and
    /// here, at the same position, the number of racy events of that (location, operation).
    pub racy_counts: Vec<u64>,
    /// Witness cuts of reported pairs, sorted by pair, for analyses that build their
    /// witness as a cut (`syncp`, asked for with a witness directory): replaying the
    /// trace's events inside the cut, in trace order, leaves both events of the pair
    /// enabled ([`crate::witness::from_cut`]).
    pub cuts: Vec<RaceCut>,
    /// Why the analysis did not examine everything it was asked to (a spent time budget,
    /// windows or candidates left unasked); `None` for a complete run. An incomplete report
    /// without races does not say "no races": text, JSON (`"complete": false`,
    /// `"incomplete"`) and SARIF (`executionSuccessful: false`) say what was not examined.
    pub incomplete: Option<String>,
}

/// The witness of a pair as a cut: per thread (by id), how many of its first events run,
/// in trace order — or, where `schedule` is not empty, those events in that order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaceCut {
    pub first: u64,
    pub second: u64,
    pub cut: Vec<u32>,
    pub schedule: Vec<u64>,
}

impl RaceReport {
    pub fn new(analysis: &str, kind: ReportKind) -> RaceReport {
        RaceReport {
            analysis: analysis.to_string(),
            kind,
            events: 0,
            pairs: Vec::new(),
            racy_events: Vec::new(),
            notes: Vec::new(),
            extra: serde_json::Map::new(),
            group_counts: Vec::new(),
            racy_counts: Vec::new(),
            cuts: Vec::new(),
            incomplete: None,
        }
    }

    /// True if the racy events are grouped by location ([`RaceReport::racy_counts`]).
    pub fn racy_grouped(&self) -> bool {
        !self.racy_counts.is_empty()
    }

    /// The number of racy events, listed or (grouped) counted.
    pub fn racy_total(&self) -> u64 {
        if self.racy_grouped() {
            self.racy_counts.iter().sum()
        } else {
            self.racy_events.len() as u64
        }
    }

    /// The report with its racy events grouped by location as [`RacyLog`] groups them: the
    /// first racy event of each (location, operation), with the number of racy events
    /// there. A report grouped already is returned as it is.
    pub fn racy_grouped_report(&self) -> RaceReport {
        let mut r = self.clone();
        if self.racy_grouped() {
            return r;
        }
        RacyLog::regroup(self).finish(&mut r);
        r
    }

    /// True if the report is grouped ([`RaceReport::group_counts`]).
    pub fn is_grouped(&self) -> bool {
        !self.group_counts.is_empty()
    }

    /// Sorts and deduplicates pairs and racy events (analyses may call it from `finish`).
    pub fn normalize(&mut self) {
        if self.is_grouped() {
            // One pair per group: sort the pairs and their counts together.
            debug_assert_eq!(self.pairs.len(), self.group_counts.len());
            if !self.pairs.is_sorted_by_key(|p| (p.first, p.second)) {
                let mut v: Vec<(RacePair, u64)> = std::mem::take(&mut self.pairs)
                    .into_iter()
                    .zip(std::mem::take(&mut self.group_counts))
                    .collect();
                v.sort_by_key(|(p, _)| (p.first, p.second));
                (self.pairs, self.group_counts) = v.into_iter().unzip();
            }
        } else if !self.pairs.is_sorted_by_key(|p| (p.first, p.second)) {
            // Analyses mostly report in trace order already: check before sorting.
            self.pairs.sort_by_key(|p| (p.first, p.second));
        }
        // Strictly increasing (the usual case) has nothing to remove: one read-only pass.
        if !self
            .pairs
            .is_sorted_by(|a, b| (a.first, a.second) < (b.first, b.second))
        {
            self.pairs.dedup_by_key(|p| (p.first, p.second));
        }
        if self.racy_grouped() {
            // One event per group: sort the events and their counts together (analyses find
            // them in trace order already).
            debug_assert_eq!(self.racy_events.len(), self.racy_counts.len());
            if !self.racy_events.is_sorted_by_key(|e| e.index) {
                let mut v: Vec<(RacyEvent, u64)> = std::mem::take(&mut self.racy_events)
                    .into_iter()
                    .zip(std::mem::take(&mut self.racy_counts))
                    .collect();
                v.sort_by_key(|(e, _)| e.index);
                (self.racy_events, self.racy_counts) = v.into_iter().unzip();
            }
        } else if !self.racy_events.is_sorted_by(|a, b| a.index < b.index) {
            if !self.racy_events.is_sorted_by_key(|e| e.index) {
                self.racy_events.sort_by_key(|e| e.index);
            }
            self.racy_events.dedup_by_key(|e| e.index);
        }
    }

    /// True if the analysis found any race.
    pub fn has_races(&self) -> bool {
        !self.pairs.is_empty() || !self.racy_events.is_empty()
    }

    /// The pairs as `(first, second)` index pairs.
    pub fn pair_set(&self) -> std::collections::BTreeSet<(u64, u64)> {
        self.pairs.iter().map(|p| (p.first, p.second)).collect()
    }

    /// The groups ([`GroupKey`]) of the pairs.
    pub fn group_keys(&self) -> std::collections::BTreeSet<GroupKey> {
        self.pairs.iter().map(RacePair::group_key).collect()
    }

    /// The racy event indices.
    pub fn racy_set(&self) -> std::collections::BTreeSet<u64> {
        self.racy_events.iter().map(|e| e.index).collect()
    }

    /// Distinct source locations among racy events (RAPID's "racy locations"); racy events
    /// without a location count one per variable ([`place`]).
    pub fn racy_locations(&self) -> usize {
        // Location ids are dense: one flag per id.
        let mut seen = DenseSet::default();
        self.racy_events
            .iter()
            .filter(|e| seen.insert(place(&e.event)))
            .count()
    }

    /// Pairs grouped by distinct (first location, second location, kind) ([`GroupKey`]: by
    /// variable too where a location is missing), most frequent first, ties by first
    /// occurrence (position of the first instance in `pairs`).
    ///
    /// A group's *first instance* is its pair with the earliest second event and, among
    /// those, the latest first event: the moment the race first shows, with the closest
    /// earlier access (what a bounded shadow keeps, so that grouped reports name the same
    /// instance). Its count is the number of pairs, or, in a grouped report, the number of
    /// racing accesses ([`RaceReport::group_counts`]).
    pub fn location_groups(&self) -> Vec<LocationGroup> {
        if self.is_grouped() {
            let mut groups: Vec<LocationGroup> = (self.pairs.iter().zip(&self.group_counts))
                .enumerate()
                .map(|(i, (_, &c))| LocationGroup {
                    first_pair: i,
                    count: c as usize,
                })
                .collect();
            groups.sort_by_key(|g| (std::cmp::Reverse(g.count), g.first_pair));
            return groups;
        }
        let mut map: rustc_hash::FxHashMap<GroupKey, usize> = Default::default();
        let mut groups: Vec<LocationGroup> = Vec::new();
        for (i, p) in self.pairs.iter().enumerate() {
            let key = p.group_key();
            let g = *map.entry(key).or_insert_with(|| {
                groups.push(LocationGroup {
                    first_pair: i,
                    count: 0,
                });
                groups.len() - 1
            });
            let g = &mut groups[g];
            g.count += 1;
            let q = &self.pairs[g.first_pair];
            if (p.second, std::cmp::Reverse(p.first)) < (q.second, std::cmp::Reverse(q.first)) {
                g.first_pair = i;
            }
        }
        groups.sort_by_key(|g| (std::cmp::Reverse(g.count), g.first_pair));
        groups
    }

    /// The report grouped by location pair, as a grouped analysis reports it: one pair per
    /// group (its first instance, see [`RaceReport::location_groups`]) with the number of
    /// distinct second events of the group. A grouped report is returned as it is.
    pub fn grouped(&self) -> RaceReport {
        let mut r = self.clone();
        if self.is_grouped() {
            return r;
        }
        let mut map: rustc_hash::FxHashMap<GroupKey, usize> = Default::default();
        // (first instance, distinct second events, last second event counted)
        let mut groups: Vec<(RacePair, u64, u64)> = Vec::new();
        // Pairs sorted by (second, first descending): the first instance comes first.
        let mut order: Vec<&RacePair> = self.pairs.iter().collect();
        order.sort_by_key(|p| (p.second, std::cmp::Reverse(p.first)));
        for p in order {
            let key = p.group_key();
            let g = *map.entry(key).or_insert_with(|| {
                groups.push((*p, 0, u64::MAX));
                groups.len() - 1
            });
            let g = &mut groups[g];
            if g.2 != p.second {
                g.1 += 1;
                g.2 = p.second;
            }
        }
        (r.pairs, r.group_counts) = groups.into_iter().map(|(p, c, _)| (p, c)).unzip();
        r.normalize();
        r
    }

    /// Racing accesses of a grouped report (the sum of its group counts).
    pub fn racing_accesses(&self) -> u64 {
        self.group_counts.iter().sum()
    }

    /// Counts per kind: (write-write, write-read, read-write); of location pairs in a
    /// grouped report.
    pub fn kind_counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for p in &self.pairs {
            match p.kind {
                PairKind::WriteWrite => c.0 += 1,
                PairKind::WriteRead => c.1 += 1,
                PairKind::ReadWrite => c.2 += 1,
            }
        }
        c
    }
}

/// Pairs of one source-location pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocationGroup {
    /// Index into `RaceReport::pairs` of the group's first pair (its first occurrence).
    pub first_pair: usize,
    pub count: usize,
}

/// What printers need besides the report: the trace's name and names, and the location
/// side (a location table, the trace lines of shown events, a source root for SARIF).
/// Printers only format; everything here is read before printing.
#[derive(Clone, Debug)]
pub struct ReportContext<'a> {
    pub trace_path: &'a str,
    pub names: &'a Names,
    /// Maps location names to `File:line:col` text (`--locations`, or a sidecar table).
    pub locations: Option<&'a LocationTable>,
    /// Trace-file lines of the events the report shows ([`RaceReport::shown_events`]).
    pub lines: EventLines<'a>,
    /// SARIF: artifact URIs are made relative to this absolute directory (`--source-root`).
    pub source_root: Option<&'a std::path::Path>,
    /// SARIF: the files under `source_root`, to complete bare file names to their paths.
    pub source_index: Option<&'a SourceIndex>,
    /// The calling contexts of the trace's events (`TRACE.stacks`, written by `racepred
    /// record`): each shown access's call sites.
    pub stacks: Option<&'a crate::trace::stacks::Stacks>,
}

impl<'a> ReportContext<'a> {
    /// A context with names only: raw location names, no lines.
    pub fn new(trace_path: &'a str, names: &'a Names) -> ReportContext<'a> {
        ReportContext {
            trace_path,
            names,
            locations: None,
            lines: EventLines::Unknown,
            source_root: None,
            source_index: None,
            stacks: None,
        }
    }

    /// The call sites of event `index`, innermost first (empty without stacks).
    pub fn stack(&self, index: u64) -> &'a [String] {
        self.stacks.map_or(&[], |s| s.of(index))
    }

    /// Location names resolved through the table.
    pub fn locs(&self) -> Locations<'a> {
        Locations {
            names: self.names,
            table: self.locations,
        }
    }

    /// What reports show of pair `p` besides its events: its variable, and of its first and
    /// second access the location and the thread.
    pub fn pair_places(&self, p: &RacePair) -> (&'a str, [&'a str; 2], [&'a str; 2]) {
        let (names, locs) = (self.names, self.locs());
        let (a, b) = (&p.first_event, &p.second_event);
        let var = names.var(a.var());
        (
            var,
            [locs.show(a.loc), locs.show(b.loc)],
            [names.thread(a.thread), names.thread(b.thread)],
        )
    }

    /// The table's file, as the report names it (`None` without a table).
    pub fn table_name(&self) -> Option<String> {
        self.locations.map(|t| {
            t.path()
                .map_or_else(|| "(in memory)".to_string(), |p| p.display().to_string())
        })
    }
}

impl RaceReport {
    /// The events a printer shows: both events of each location group's first pair and the
    /// first event of each racy location group (the ones whose trace lines are looked up).
    pub fn shown_events(&self) -> Vec<u64> {
        let mut v: Vec<u64> = Vec::new();
        for g in self.location_groups() {
            let p = &self.pairs[g.first_pair];
            v.push(p.first);
            v.push(p.second);
        }
        v.extend(text::racy_location_groups(self).iter().map(|g| g.2));
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Where an analysis keeps its racy events: every one, or (grouped by location) the first
/// of each (location, operation) with a count — what the text report shows in either case,
/// in memory bounded by the locations instead of growing with the racy events (a racy
/// trace has millions of racy events at a few thousand locations).
///
/// Racy events arrive in trace order, so a group's first event is its earliest.
#[derive(Debug)]
pub struct RacyLog {
    /// Every racy event (`--all-pairs`), not one per (location, operation).
    all: bool,
    events: Vec<RacyEvent>,
    counts: Vec<u64>,
    groups: LocOpIndex,
}

impl RacyLog {
    /// `all`: every racy event; otherwise grouped by location.
    pub fn new(all: bool) -> RacyLog {
        RacyLog {
            all,
            events: Vec::new(),
            counts: Vec::new(),
            groups: LocOpIndex::default(),
        }
    }

    /// Records the racy event `ev` (event number `index`). Inlined for its usual case, a
    /// grouped event of a (location, operation) seen before: one table lookup and a count.
    #[inline(always)]
    pub fn push(&mut self, index: u64, ev: &Event) {
        if !self.all {
            if let Some(g) = self.groups.existing(ev) {
                self.counts[g] += 1;
                return;
            }
        }
        self.push_new(index, ev);
    }

    /// [`push`](Self::push) of a listed event or a new group's first.
    #[cold]
    #[inline(never)]
    fn push_new(&mut self, index: u64, ev: &Event) {
        if self.all {
            self.events.push(RacyEvent { index, event: *ev });
            return;
        }
        self.add(index, ev, 1);
    }

    /// Grouped: adds `count` racy events at `ev`'s (location, operation), `ev` (event
    /// number `index`) being the group's first if it has none yet.
    #[inline]
    fn add(&mut self, index: u64, ev: &Event, count: u64) {
        let g = self.groups.group(ev, self.counts.len());
        if g == self.counts.len() {
            self.events.push(RacyEvent { index, event: *ev });
            self.counts.push(0);
        }
        self.counts[g] += count;
    }

    /// `report`'s racy events, each with its count (1 unless grouped), grouped by
    /// (location, operation) in their order: what [`RacyLog::finish`] then hands on.
    pub(crate) fn regroup(report: &RaceReport) -> RacyLog {
        let mut log = RacyLog::new(false);
        for (i, e) in report.racy_events.iter().enumerate() {
            log.add(
                e.index,
                &e.event,
                report.racy_counts.get(i).map_or(1, |&c| c),
            );
        }
        log
    }

    /// Racy events recorded so far (listed or counted).
    pub fn total(&self) -> u64 {
        if self.all {
            self.events.len() as u64
        } else {
            self.counts.iter().sum()
        }
    }

    /// The racy events so far: every one, or each group's first.
    pub fn events(&self) -> &[RacyEvent] {
        &self.events
    }

    /// Moves the racy events (and, grouped, their counts) into `report`.
    pub fn finish(&mut self, report: &mut RaceReport) {
        report.racy_events = std::mem::take(&mut self.events);
        report.racy_counts = std::mem::take(&mut self.counts);
        self.groups = LocOpIndex::default();
    }
}

impl Default for RacyLog {
    /// Every racy event (what a library user of an analysis gets unless asked otherwise).
    fn default() -> Self {
        RacyLog::new(true)
    }
}

/// Group numbers of (location, operation) keys: a table indexed by location id and
/// operation below 2^24 locations (ids are dense), a hash map beyond (by [`place`]: an
/// event without location is grouped by its variable; sparse ids of hand-built reports).
#[derive(Debug, Default)]
struct LocOpIndex {
    /// Group number + 1 per `loc * OPS + op` (0: none yet).
    table: Vec<u32>,
    rest: rustc_hash::FxHashMap<(u64, u8), usize>,
}

impl LocOpIndex {
    const OPS: usize = 16;

    /// The group of `ev`'s (location, operation) if it has one in the direct table. (Its
    /// slots are for locations below 2^24 only: it never grows past 2^28 slots.)
    #[inline(always)]
    fn existing(&self, ev: &Event) -> Option<usize> {
        let slot = (ev.loc.0 as usize)
            .checked_mul(Self::OPS)?
            .checked_add(ev.op as usize)?;
        match self.table.get(slot) {
            Some(&g) if g != 0 => Some(g as usize - 1),
            _ => None,
        }
    }

    /// The group of `ev`'s (location, operation); `next` (the number of groups so far),
    /// recorded as its group, if it has none yet.
    #[inline]
    fn group(&mut self, ev: &Event, next: usize) -> usize {
        let (loc, op) = (ev.loc.0 as usize, ev.op as usize);
        if loc < 1 << 24 && op < Self::OPS {
            let slot = loc * Self::OPS + op;
            if slot >= self.table.len() {
                self.table.resize((slot + 1).next_power_of_two(), 0);
            }
            if self.table[slot] == 0 {
                self.table[slot] = u32::try_from(next + 1).expect("under 2^32 groups");
            }
            self.table[slot] as usize - 1
        } else {
            *self.rest.entry((place(ev), op as u8)).or_insert(next)
        }
    }
}

/// A set of dense ids (places, [`place`]): one flag per id below 2^24, a hash set above
/// (variables of events without location, sparse ids of hand-built reports), so its memory
/// follows the ids in use.
#[derive(Default)]
pub(crate) struct DenseSet {
    flags: Vec<bool>,
    rest: rustc_hash::FxHashSet<u64>,
}

impl DenseSet {
    /// Inserts `id`; true if it was new.
    #[inline]
    pub(crate) fn insert(&mut self, id: u64) -> bool {
        if id >= 1 << 24 {
            return self.rest.insert(id);
        }
        let i = id as usize;
        if i >= self.flags.len() {
            self.flags.resize((i + 1).next_power_of_two(), false);
        }
        !std::mem::replace(&mut self.flags[i], true)
    }
}

/// The text that `write` writes into a buffer (for the report writers' tests).
#[cfg(test)]
pub(crate) fn written<E: std::fmt::Debug>(
    write: impl FnOnce(&mut Vec<u8>) -> std::result::Result<(), E>,
) -> String {
    let mut out = Vec::new();
    write(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{LocId, Op, ThreadId};

    #[test]
    fn racy_log_groups_by_location_and_operation() {
        let ev = |t, op, l| Event::new(ThreadId(t), op, 0, LocId(l));
        // Dense locations, no location (`NONE`: by variable) and one beyond the table.
        let far = (1 << 24) + 5;
        let events = [
            ev(0, Op::Write, 3),
            ev(1, Op::Read, 3),
            ev(1, Op::Write, 3),
            ev(0, Op::Read, u32::MAX),
            ev(2, Op::Read, far),
            ev(1, Op::Read, 3),
            ev(0, Op::Read, u32::MAX),
            ev(0, Op::Read, far),
            Event::new(ThreadId(1), Op::Read, 1, LocId::NONE),
            Event::new(ThreadId(1), Op::Read, far, LocId::NONE),
            Event::new(ThreadId(2), Op::Read, 1, LocId::NONE),
        ];
        let (mut all, mut grouped) = (RacyLog::default(), RacyLog::new(false));
        for (i, e) in events.iter().enumerate() {
            all.push(i as u64 + 10, e);
            grouped.push(i as u64 + 10, e);
        }
        assert_eq!((all.total(), grouped.total()), (11, 11));
        let firsts: Vec<u64> = grouped.events().iter().map(|e| e.index).collect();
        // write@3, read@3, read of variable 0 @NONE, read@far, reads of variables 1 and
        // 2^24 + 5 @NONE
        assert_eq!(firsts, [10, 11, 13, 14, 18, 19]);
        let mut r = RaceReport::new("hb", ReportKind::RacyEvents);
        grouped.finish(&mut r);
        assert_eq!(r.racy_counts, [2, 2, 2, 2, 2, 1]);
        assert_eq!(r.racy_total(), 11);
        // Locations 3 and far, and the three variables without a location.
        assert_eq!(r.racy_locations(), 5);
        let mut e = RaceReport::new("hb", ReportKind::RacyEvents);
        all.finish(&mut e);
        assert!(!e.racy_grouped() && e.racy_total() == 11);
        let g = e.racy_grouped_report();
        assert_eq!(
            (&g.racy_events, &g.racy_counts),
            (&r.racy_events, &r.racy_counts)
        );
        assert_eq!(r.racy_locations(), e.racy_locations());
        assert_eq!(
            text::racy_location_groups(&r),
            text::racy_location_groups(&e)
        );
    }
}
