//! The analyses, behind one push-model trait ([`Analysis`]); the drivers that feed them
//! ([`driver`]); the registry of what the CLI can run ([`registry`]).
//!
//! The driver reads the trace once and pushes each event to every selected analysis
//! (`on_event`), then calls `finish` for each report. Analyses that need several passes
//! (HBP/SHBP post-processing, W3PO) keep what they need and do the rest in `finish`.

mod driver;
mod registry;
mod slices;

pub mod eraser;
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

pub use driver::{run, run_fanout, run_one, run_pipelined, run_trace, RunSummary, Validation};
pub use driver::{BLOCK, PIPE_DEPTH, READ_BLOCK};
pub use registry::{
    create, names, row, unknown_analysis, AnalysisKind, AnalysisOptions, ClockKind,
};
pub use registry::{Engine, Opt, Plan, Row, ANALYSES};

use crate::report::RaceReport;
use crate::trace::{AddrId, Event, Names};

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
