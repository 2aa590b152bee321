//! The drivers: read a trace once, validate it, and push its events to every selected
//! analysis, on the calling thread ([`run`]), with a reader thread ([`run_pipelined`]), or
//! with a thread per analysis ([`run_fanout`]); and the in-memory runs of tests and
//! multi-pass tools ([`run_trace`], [`run_one`]).

use super::{Analysis, Side};
use crate::error::{Error, Result};
use crate::report::RaceReport;
use crate::trace::validate::{Validator, Violation};
use crate::trace::{EventBlock, EventSource};

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
        // again (no allocation and page faults per block read).
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
/// reads it.
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
