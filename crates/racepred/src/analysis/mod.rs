//! The analyses, behind one push-model trait, and the driver that feeds them.
//!
//! The driver reads the trace once and pushes each event to every selected analysis
//! (`on_event`), then calls `finish` for each report. Analyses that need several passes
//! (HBP/SHBP post-processing, W3PO) keep what they need and do the rest in `finish`.

use crate::error::{Error, Result};
use crate::report::RaceReport;
use crate::trace::validate::{Validator, Violation};
use crate::trace::{AddrId, Event, EventSource, Names};

/// Side data of the current event.
#[derive(Clone, Copy, Debug, Default)]
pub struct Side<'a> {
    /// The address set of an `mbegin` (empty otherwise).
    pub addresses: &'a [AddrId],
    /// The global access number (SSHB Go logs), if the format has one.
    pub seq: Option<u64>,
}

/// A race analysis.
pub trait Analysis {
    /// The CLI name (`hb`, `fasttrack`, …).
    fn name(&self) -> &'static str;

    /// Consumes the next event; `index` is its 0-based position in the trace.
    fn on_event(&mut self, index: u64, ev: &Event, side: Side<'_>);

    /// Produces the report once every event was pushed. `names` are the trace's final name
    /// tables (for analyses whose notes mention objects).
    fn finish(&mut self, names: &Names) -> RaceReport;
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

/// Reads `src` to the end, validating and pushing every event to every analysis.
/// `progress` is called every 2^20 events with (events, bytes read).
pub fn run<S: EventSource + ?Sized>(
    src: &mut S,
    analyses: &mut [Box<dyn Analysis>],
    validation: Validation,
    mut progress: impl FnMut(u64, u64),
) -> Result<RunSummary> {
    let mut validator = Validator::new();
    let mut summary = RunSummary::default();
    let mut index = 0u64;
    while let Some(ev) = src.next_event()? {
        if validation != Validation::Off {
            if let Some(v) = validator.check(&ev, src.position().line, src.names()) {
                match validation {
                    Validation::Strict => return Err(v.to_error()),
                    _ => summary.violations.push(v),
                }
            }
        }
        let side = Side {
            addresses: src.addresses(),
            seq: src.seq(),
        };
        for a in analyses.iter_mut() {
            a.on_event(index, &ev, side);
        }
        index += 1;
        if index & ((1 << 20) - 1) == 0 {
            progress(index, src.bytes_read());
        }
    }
    summary.events = index;
    Ok(summary)
}

/// Runs analyses over an in-memory trace and returns their reports (no validation: callers
/// check well-formedness themselves). Convenience for tests and multi-pass tools.
pub fn run_trace(
    trace: &crate::trace::Trace,
    analyses: &mut [Box<dyn Analysis>],
) -> Vec<RaceReport> {
    for (i, ev) in trace.events.iter().enumerate() {
        let side = Side {
            addresses: trace.addresses(i),
            seq: trace.seq.as_ref().map(|s| s[i]),
        };
        for a in analyses.iter_mut() {
            a.on_event(i as u64, ev, side);
        }
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

/// Error for an analysis name the CLI does not know.
pub fn unknown_analysis(name: &str) -> Error {
    Error::invalid(format!("unknown analysis `{name}`"))
}
