//! The analyses, behind one push-model trait, and the driver that feeds them.
//!
//! The driver reads the trace once and pushes each event to every selected analysis
//! (`on_event`), then calls `finish` for each report. Analyses that need several passes
//! (HBP/SHBP post-processing, W3PO) keep what they need and do the rest in `finish`.

pub mod lockset;
pub mod locksets;
pub mod pacer;
pub mod shard;
pub mod sshb;
pub mod tsan_hybrid;
pub mod w3po;
pub mod wcp;

pub mod fasttrack;
pub mod hb;
pub mod hbp;
pub mod osr;
pub mod rdit;
pub mod shb;
pub mod syncp;

use crate::clock::{TreeClock, VectorClock};
use crate::error::{Error, Result};
use crate::report::RaceReport;
use crate::trace::validate::{Validator, Violation};
use crate::trace::{AddrId, Event, EventBlock, EventSource, Names};

/// Side data of the current event.
#[derive(Clone, Copy, Debug, Default)]
pub struct Side<'a> {
    /// The address set of an `mbegin` (empty otherwise).
    pub addresses: &'a [AddrId],
    /// The global access number (SSHB Go logs), if the format has one.
    pub seq: Option<u64>,
}

/// A race analysis.
///
/// Analyses are `Send`: the pipelined driver runs each on a thread of its own.
pub trait Analysis: Send {
    /// The CLI name (`hb`, `fasttrack`, …).
    fn name(&self) -> &'static str;

    /// Consumes the next event; `index` is its 0-based position in the trace.
    fn on_event(&mut self, index: u64, ev: &Event, side: Side<'_>);

    /// Consumes a run of events without side data (no `mbegin` addresses, no access
    /// numbers), the first at position `first`: the drivers' path, one dynamic call per
    /// block instead of per event. The default feeds them to [`Analysis::on_event`], which
    /// the compiler inlines into this loop; an analysis may override it with a loop of its
    /// own (PACER skips whole non-sampling stretches).
    #[inline]
    fn on_events(&mut self, first: u64, events: &[Event]) {
        for (i, ev) in events.iter().enumerate() {
            self.on_event(first + i as u64, ev, Side::default());
        }
    }

    /// Makes a fresh analysis shard `shard` of a run split by variable ([`shard::Shard`]):
    /// it treats the plain accesses of other shards' variables as `br` events and sees its
    /// own through [`shard::VarShard::view`]. False (the default) if it cannot: only the
    /// [`shard::shardable`] ones can.
    fn restrict_to_shard(&mut self, shard: shard::VarShard) -> bool {
        let _ = shard;
        false
    }

    /// Produces the report once every event was pushed. `names` are the trace's final name
    /// tables (for analyses whose notes mention objects).
    fn finish(&mut self, names: &Names) -> RaceReport;
}

/// A borrowed analysis is an analysis: callers that need the concrete state after a run
/// (e.g. SSHB's diagnosis) push events through `&mut A` and keep `A`.
impl<A: Analysis + ?Sized> Analysis for &mut A {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    #[inline]
    fn on_event(&mut self, index: u64, ev: &Event, side: Side<'_>) {
        (**self).on_event(index, ev, side)
    }
    #[inline]
    fn on_events(&mut self, first: u64, events: &[Event]) {
        (**self).on_events(first, events)
    }
    fn restrict_to_shard(&mut self, shard: shard::VarShard) -> bool {
        (**self).restrict_to_shard(shard)
    }
    fn finish(&mut self, names: &Names) -> RaceReport {
        (**self).finish(names)
    }
}

/// What to do with an ill-formed trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Validation {
    /// Stop at the first violation with an error (the default).
    #[default]
    Strict,
    /// Report violations as warnings and go on.
    Lenient,
    /// Do not check.
    Off,
}

/// What a driver run saw besides the reports.
#[derive(Debug, Default)]
pub struct RunSummary {
    pub events: u64,
    /// Violations seen in lenient mode.
    pub violations: Vec<Violation>,
}

/// Reads `src` to the end, validating and pushing every event to every analysis, on the
/// calling thread. `progress` is called every 2^20 events with (events, bytes read).
pub fn run<S: EventSource + ?Sized>(
    src: &mut S,
    analyses: &mut [Box<dyn Analysis + '_>],
    validation: Validation,
    mut progress: impl FnMut(u64, u64),
) -> Result<RunSummary> {
    let mut validator = Validator::new();
    let mut summary = RunSummary::default();
    let mut block = EventBlock::new();
    let v = &mut summary.violations;
    while read_checked(src, &mut block, &mut validator, validation, v)? {
        feed(analyses, summary.events, &block);
        count(&mut summary.events, &block, &mut progress);
    }
    Ok(summary)
}

/// Reads the next block of `src` and validates it; false at the end of the input.
fn read_checked<S: EventSource + ?Sized>(
    src: &mut S,
    block: &mut EventBlock,
    validator: &mut Validator,
    validation: Validation,
    violations: &mut Vec<Violation>,
) -> Result<bool> {
    if !src.read_block(block, READ_BLOCK)? {
        return Ok(false);
    }
    validate_block(src, block, validator, validation, violations)?;
    Ok(true)
}

/// Adds a block's events to `events`, calling `progress` each time a multiple of 2^20 is
/// passed.
fn count(events: &mut u64, block: &EventBlock, progress: &mut impl FnMut(u64, u64)) {
    *events += block.len() as u64;
    if *events & PROGRESS_MASK < block.len() as u64 {
        progress(*events, block.bytes_read);
    }
}

/// [`run`] on several threads: a reader thread reads, decodes and validates blocks of events
/// while the calling thread runs the analysis on the blocks before, through a bounded
/// queue (at most [`PIPE_DEPTH`] blocks in flight, so memory stays bounded; `crate::pipe`,
/// which wakes a waiting side once per half queue, not per block). Wall time is
/// the larger of reading and analysing, not their sum. With several analyses each runs on a
/// thread of its own and the calling thread reads ([`run_fanout`]). Same events, same order,
/// same reports, same errors as [`run`].
pub fn run_pipelined<S: EventSource + Send + ?Sized>(
    src: &mut S,
    analyses: &mut [Box<dyn Analysis + '_>],
    validation: Validation,
    mut progress: impl FnMut(u64, u64),
) -> Result<RunSummary> {
    use std::sync::mpsc::sync_channel;
    if analyses.len() > 1 {
        return run_fanout(src, analyses, validation, progress);
    }
    let (full_tx, full_rx) = crate::pipe::pipe::<EventBlock>(PIPE_DEPTH);
    // Blocks come back for reuse; at most PIPE_DEPTH + 2 exist (queued, being read, being
    // analysed), so returning one never blocks.
    let (empty_tx, empty_rx) = sync_channel::<EventBlock>(PIPE_DEPTH + 2);
    std::thread::scope(|scope| {
        let reader = std::thread::Builder::new()
            .name("racepred-reader".into())
            .spawn_scoped(scope, move || -> Result<Vec<Violation>> {
                let mut validator = Validator::new();
                let mut violations = Vec::new();
                loop {
                    let mut block = empty_rx.try_recv().unwrap_or_default();
                    let v = &mut violations;
                    if !read_checked(src, &mut block, &mut validator, validation, v)? {
                        return Ok(violations);
                    }
                    if full_tx.send(block).is_err() {
                        return Ok(violations); // the analysing side stopped
                    }
                }
            })
            .map_err(Error::from)?;
        let mut events = 0u64;
        for block in full_rx {
            feed(analyses, events, &block);
            count(&mut events, &block, &mut progress);
            let _ = empty_tx.try_send(block);
        }
        let violations = match reader.join() {
            Ok(r) => r?,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        Ok(RunSummary { events, violations })
    })
}

/// [`run`] with one thread per analysis: the calling thread reads and validates, and hands
/// each block to every analysis thread through a bounded queue of its own (at most
/// [`PIPE_DEPTH`] blocks queued per analysis). The slowest analysis sets the pace.
pub fn run_fanout<S: EventSource + ?Sized>(
    src: &mut S,
    analyses: &mut [Box<dyn Analysis + '_>],
    validation: Validation,
    mut progress: impl FnMut(u64, u64),
) -> Result<RunSummary> {
    use std::collections::VecDeque;
    use std::sync::Arc;
    std::thread::scope(|scope| {
        let mut senders = Vec::with_capacity(analyses.len());
        let mut workers = Vec::with_capacity(analyses.len());
        for a in analyses.iter_mut() {
            let (tx, rx) = crate::pipe::pipe::<Arc<EventBlock>>(PIPE_DEPTH);
            senders.push(tx);
            let worker = std::thread::Builder::new()
                .name(format!("racepred-{}", a.name()))
                .spawn_scoped(scope, move || {
                    let mut first = 0u64;
                    for block in rx {
                        feed(std::slice::from_mut(a), first, &block);
                        first += block.len() as u64;
                    }
                })
                .map_err(Error::from)?;
            workers.push(worker);
        }
        let mut validator = Validator::new();
        let mut summary = RunSummary::default();
        // The blocks sent, oldest first: one that every analysis has let go of is read into
        // again. (A new block for each read, two `lockset` shards on the generated
        // 10^7-event trace took 0.09–0.15 s of system time, against 0.07–0.11 s now.)
        let mut sent: VecDeque<Arc<EventBlock>> = VecDeque::new();
        let read = (|| -> Result<()> {
            loop {
                // (Only this thread makes new references: a count of one stays one.)
                let mut block = match sent.front() {
                    Some(b) if Arc::strong_count(b) == 1 => sent
                        .pop_front()
                        .and_then(Arc::into_inner)
                        .unwrap_or_default(),
                    _ => EventBlock::new(),
                };
                let v = &mut summary.violations;
                if !read_checked(src, &mut block, &mut validator, validation, v)? {
                    return Ok(());
                }
                count(&mut summary.events, &block, &mut progress);
                let block = Arc::new(block);
                for tx in &senders {
                    if tx.send(block.clone()).is_err() {
                        return Ok(()); // that analysis panicked; its join below says so
                    }
                }
                // Bounded (an older block is freed by the analysis that drops it last).
                if sent.len() > PIPE_DEPTH + 2 {
                    sent.pop_front();
                }
                sent.push_back(block);
            }
        })();
        drop(senders);
        for w in workers {
            if let Err(panic) = w.join() {
                std::panic::resume_unwind(panic);
            }
        }
        read.map(|()| summary)
    })
}

/// Progress callbacks every 2^20 events.
const PROGRESS_MASK: u64 = (1 << 20) - 1;

/// Events per block read by the drivers (handed to the analyses in [`BLOCK`]-sized runs).
pub const READ_BLOCK: usize = 8 * BLOCK;

/// Blocks queued between the reader thread and the analyses in [`run_pipelined`] (8 × 128
/// KiB of events).
pub const PIPE_DEPTH: usize = 8;

/// Checks a block's events in order; in strict mode the first violation is the error.
fn validate_block<S: EventSource + ?Sized>(
    src: &S,
    block: &EventBlock,
    validator: &mut Validator,
    validation: Validation,
    violations: &mut Vec<Violation>,
) -> Result<()> {
    if validation == Validation::Off {
        return Ok(());
    }
    let mut err = None;
    validator.check_run(
        &block.events,
        &block.lines,
        || src.names(),
        |v| {
            if validation == Validation::Strict {
                err = Some(v.to_error());
                return false;
            }
            violations.push(v);
            true
        },
    );
    err.map_or(Ok(()), Err)
}

/// Pushes a block, whose first event has index `first`, to every analysis: runs without side
/// data through [`Analysis::on_events`] in [`BLOCK`]-sized pieces, the rest one by one.
fn feed(analyses: &mut [Box<dyn Analysis + '_>], first: u64, block: &EventBlock) {
    let events = &block.events;
    let mut start = 0;
    while start < events.len() {
        let mut end = (start + BLOCK).min(events.len());
        if !block.plain() {
            // Stop before the next event with side data (only `mbegin`s and access-numbered
            // formats have any).
            end = (start..end)
                .find(|&i| {
                    let (addrs, seq) = block.side(i);
                    !addrs.is_empty() || seq.is_some()
                })
                .unwrap_or(end);
        }
        if end > start {
            for a in analyses.iter_mut() {
                a.on_events(first + start as u64, &events[start..end]);
            }
            start = end;
            continue;
        }
        let (addresses, seq) = block.side(start);
        let side = Side { addresses, seq };
        for a in analyses.iter_mut() {
            a.on_event(first + start as u64, &events[start], side);
        }
        start += 1;
    }
}

/// Events per block handed to [`Analysis::on_events`] by the drivers: 16 KiB of events,
/// so a block stays in the L1 cache beside the analysis's hottest state while the analysis
/// reads it. With 4096-event blocks (64 KiB) PACER's per-event filter at r = 0 cost 0.24 of
/// FastTrack's time on the JavaGrande raytracer trace, with 1024 0.15 (runs minutes apart).
pub const BLOCK: usize = 1024;

/// Runs analyses over an in-memory trace and returns their reports (no validation: callers
/// check well-formedness themselves). Convenience for tests and multi-pass tools.
pub fn run_trace(
    trace: &crate::trace::Trace,
    analyses: &mut [Box<dyn Analysis + '_>],
) -> Vec<RaceReport> {
    let mut start = 0;
    // Runs of events without side data go in blocks; the others one by one.
    let plain = |i: usize| trace.addresses(i).is_empty() && trace.seq.is_none();
    while start < trace.events.len() {
        let mut end = start;
        while end < trace.events.len() && end - start < BLOCK && plain(end) {
            end += 1;
        }
        if end > start {
            for a in analyses.iter_mut() {
                a.on_events(start as u64, &trace.events[start..end]);
            }
            start = end;
            continue;
        }
        let side = Side {
            addresses: trace.addresses(start),
            seq: trace.seq.as_ref().map(|s| s[start]),
        };
        for a in analyses.iter_mut() {
            a.on_event(start as u64, &trace.events[start], side);
        }
        start += 1;
    }
    analyses
        .iter_mut()
        .map(|a| {
            let mut r = a.finish(&trace.names);
            r.events = trace.len() as u64;
            r
        })
        .collect()
}

/// Runs one analysis over an in-memory trace and returns its report.
pub fn run_one(trace: &crate::trace::Trace, analysis: Box<dyn Analysis>) -> RaceReport {
    run_trace(trace, &mut [analysis])
        .pop()
        .expect("one analysis, one report")
}

/// Error for an analysis name the CLI does not know.
pub fn unknown_analysis(name: &str) -> Error {
    Error::invalid(format!("unknown analysis `{name}`"))
}

/// The analyses the CLI can pick (a closed set, like Miri's data-race handler).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AnalysisKind {
    /// Djit+ happens-before with vector clocks (racy events).
    Hb,
    /// FastTrack epochs (racy events).
    FastTrack,
    /// Every HB-unordered conflicting pair.
    Hbp,
    /// Schedulable happens-before (racy events).
    Shb,
    /// Every SHB-unordered conflicting pair.
    Shbp,
    /// Weak-causally-precedes.
    Wcp,
    /// Eraser lockset.
    Lockset,
    /// ThreadSanitizer v1 style hybrid.
    TsanHybrid,
    /// Lockset + W3 (W3PO).
    W3po,
    /// SSHB guaranteed / maybe diagnosis.
    Sshb,
    /// RDIT for traces with missing events.
    Rdit,
    /// PACER proportional sampling.
    Pacer,
    /// Sync-preserving races (Mathur et al. POPL'21).
    SyncP,
    /// Optimistic sync-reversal races (Shi et al. ICSE'24).
    Osr,
    /// Location groups not ordered by program order, fork, join and reads-from.
    Trf,
}

impl AnalysisKind {
    pub const ALL: [AnalysisKind; 15] = [
        AnalysisKind::Hb,
        AnalysisKind::FastTrack,
        AnalysisKind::Hbp,
        AnalysisKind::Shb,
        AnalysisKind::Shbp,
        AnalysisKind::Wcp,
        AnalysisKind::Lockset,
        AnalysisKind::TsanHybrid,
        AnalysisKind::W3po,
        AnalysisKind::Sshb,
        AnalysisKind::Rdit,
        AnalysisKind::Pacer,
        AnalysisKind::SyncP,
        AnalysisKind::Osr,
        AnalysisKind::Trf,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AnalysisKind::Hb => "hb",
            AnalysisKind::FastTrack => "fasttrack",
            AnalysisKind::Hbp => "hbp",
            AnalysisKind::Shb => "shb",
            AnalysisKind::Shbp => "shbp",
            AnalysisKind::Wcp => "wcp",
            AnalysisKind::Lockset => "lockset",
            AnalysisKind::TsanHybrid => "tsan-hybrid",
            AnalysisKind::W3po => "w3po",
            AnalysisKind::Sshb => "sshb",
            AnalysisKind::Rdit => "rdit",
            AnalysisKind::Pacer => "pacer",
            AnalysisKind::SyncP => "syncp",
            AnalysisKind::Osr => "osr",
            AnalysisKind::Trf => "trf",
        }
    }

    pub fn from_name(s: &str) -> Option<AnalysisKind> {
        AnalysisKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// Which clock implementation thread and lock clocks use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClockKind {
    #[default]
    Vector,
    Tree,
}

/// Options shared by the analyses; each reads the fields it understands.
#[derive(Clone, Debug, Default)]
pub struct AnalysisOptions {
    pub clock: ClockKind,
    /// HBP / SHBP: run the published single-pass algorithm (may miss pairs).
    pub streaming: bool,
    /// W3PO: bounded history (linear mode); `None` = complete mode.
    pub history: Option<usize>,
    /// Lockset, TSan hybrid, W3PO, SyncP: list every pair instead of one per location pair.
    pub all_pairs: bool,
    /// SyncP: keep each reported pair's witness cut ([`crate::report::RaceReport::cuts`]).
    pub witness_cuts: bool,
    /// hb, fasttrack, shb, wcp: keep the first racy event of each (location, operation)
    /// with a count instead of every racy event ([`crate::report::RacyLog`]: memory bounded
    /// by the locations). Off by default (every racy event); the CLI turns it on unless
    /// `--all-pairs` is given.
    pub group_racy: bool,
    /// hbp, shbp: keep one pair per location pair (its first instance) with the number of
    /// racing accesses instead of every pair (memory bounded by the location pairs, as the
    /// lockset family reports). Off by default (every pair); the CLI turns it on unless
    /// `--all-pairs` is given.
    pub group_pairs: bool,
    /// PACER: sampling rate (0–1).
    pub rate: f64,
    /// PACER: sampling period length in operations.
    pub period: u64,
    /// Seed for randomised analyses.
    pub seed: u64,
    /// RDIT: conservative mode (order every two barrier pairs of different threads).
    pub conservative: bool,
    /// RDIT: addresses marked global (ignored for barrier edges).
    pub ignore_global: Vec<String>,
}

/// The analyses of one run, in the order of their kinds, each of the [`shard::shardable`]
/// ones split into shards (one [`shard::Shard`] per thread) when more than one job is
/// allowed. Run [`Plan::analyses`] through a driver, then [`Plan::finish`] gives one report
/// per kind.
pub struct Plan<'a> {
    pub analyses: Vec<Box<dyn Analysis + 'a>>,
    /// Per kind: its number of analyses in `analyses` (its shards, or 1).
    parts: Vec<usize>,
}

impl<'a> Plan<'a> {
    /// `kinds` with `opts`; each shardable one in `jobs` shards (`jobs` ≤ 1: none sharded).
    pub fn new(kinds: &[AnalysisKind], opts: &AnalysisOptions, jobs: usize) -> Result<Plan<'a>> {
        let mut plan = Plan {
            analyses: Vec::new(),
            parts: Vec::new(),
        };
        for &kind in kinds {
            let n = if jobs > 1 && shard::shardable(kind, opts) {
                jobs.min(u32::MAX as usize) as u32
            } else {
                1
            };
            for k in 0..n {
                let a = create(kind, opts)?;
                plan.analyses.push(if n == 1 {
                    a
                } else {
                    Box::new(shard::Shard::new(a, k, n))
                });
            }
            plan.parts.push(n as usize);
        }
        Ok(plan)
    }

    /// One report per kind, each with `events` as its event count.
    pub fn finish(&mut self, names: &Names, events: u64) -> Vec<RaceReport> {
        let mut reports = self.analyses.iter_mut().map(|a| a.finish(names));
        self.parts
            .iter()
            .map(|&n| {
                let mut r = shard::merge(reports.by_ref().take(n).collect());
                r.events = events;
                r
            })
            .collect()
    }
}

/// Creates an analysis. Returns an error for analyses not built yet.
pub fn create(kind: AnalysisKind, opts: &AnalysisOptions) -> Result<Box<dyn Analysis>> {
    // The clock kind picks the monomorphisation (thread and lock clocks are type parameters).
    macro_rules! by_clock {
        ($m:ident :: $f:ident $(, $arg:expr)*) => {
            match opts.clock {
                ClockKind::Vector => Box::new($m::$f::<VectorClock>($($arg),*)) as Box<dyn Analysis>,
                ClockKind::Tree => Box::new($m::$f::<TreeClock>($($arg),*)) as Box<dyn Analysis>,
            }
        };
    }
    // `hb`, `fasttrack`, `shb` with their racy events grouped by location if asked.
    macro_rules! racy_by_clock {
        ($m:ident :: $f:ident) => {
            match (opts.clock, opts.group_racy) {
                (ClockKind::Vector, false) => {
                    Box::new($m::$f::<VectorClock>()) as Box<dyn Analysis>
                }
                (ClockKind::Vector, true) => Box::new($m::$f::<VectorClock>().racy_by_location()),
                (ClockKind::Tree, false) => Box::new($m::$f::<TreeClock>()),
                (ClockKind::Tree, true) => Box::new($m::$f::<TreeClock>().racy_by_location()),
            }
        };
    }
    Ok(match kind {
        AnalysisKind::Hb => racy_by_clock!(hb::hb),
        AnalysisKind::FastTrack => racy_by_clock!(fasttrack::fasttrack),
        AnalysisKind::Hbp => by_clock!(hbp::hbp_with, opts.streaming, opts.group_pairs),
        AnalysisKind::Shb => racy_by_clock!(shb::shb),
        AnalysisKind::Shbp => by_clock!(shb::shbp_with, opts.streaming, opts.group_pairs),
        AnalysisKind::Wcp if opts.group_racy => Box::new(wcp::Wcp::new().racy_by_location()),
        AnalysisKind::Wcp => Box::new(wcp::Wcp::new()),
        AnalysisKind::Lockset => Box::new(lockset::Lockset::with_mode(opts.all_pairs)),
        AnalysisKind::TsanHybrid => Box::new(tsan_hybrid::TsanHybrid::with_mode(opts.all_pairs)),
        AnalysisKind::W3po => Box::new(w3po::W3po::with_mode(opts.history, opts.all_pairs)),
        AnalysisKind::Sshb => Box::new(sshb::Sshb::new(sshb::SshbConfig::default())),
        AnalysisKind::Pacer => Box::new(pacer::Pacer::from_options(opts)),
        AnalysisKind::SyncP => Box::new(syncp::SyncP::new(opts.all_pairs, opts.witness_cuts)),
        AnalysisKind::Osr => Box::new(syncp::SyncP::osr(opts.all_pairs, opts.witness_cuts)),
        AnalysisKind::Trf => Box::new(syncp::SyncP::trf_candidates()),
        AnalysisKind::Rdit => {
            let cfg = rdit::RditConfig {
                conservative: opts.conservative,
                ignore: Vec::new(),
                ignore_names: opts.ignore_global.clone(),
                count_removed: true,
            };
            by_clock!(rdit::rdit, &cfg)
        }
    })
}
