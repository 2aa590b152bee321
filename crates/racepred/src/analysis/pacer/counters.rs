//! Where the work goes (the paper's Table 3): vector clock joins and copies, reads and
//! writes, each split by the kind of period they ran in.

use serde::Serialize;

/// Counts for one kind of period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PeriodCounters {
    /// Operations (events) analysed in this kind of period.
    pub ops: u64,
    /// Joins that compared or combined whole clocks (O(n)).
    pub slow_joins: u64,
    /// Joins skipped in O(1) thanks to version epochs (or a bottom clock).
    pub fast_joins: u64,
    /// Element-by-element clock copies (O(n)).
    pub deep_copies: u64,
    /// Copies that share the thread's clock (O(1)).
    pub shallow_copies: u64,
    /// Clones of a shared clock before changing it (O(n)).
    pub clones: u64,
    /// Reads that looked at the variable's metadata (all reads while sampling).
    pub slow_reads: u64,
    /// Reads that did nothing: no metadata and not sampling.
    pub fast_reads: u64,
    pub slow_writes: u64,
    pub fast_writes: u64,
    /// Race checks that failed (one per racing earlier access).
    pub races: u64,
}

/// Counters of one run, split into sampling and non-sampling periods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub sampling: PeriodCounters,
    pub non_sampling: PeriodCounters,
    /// Sampling periods entered.
    pub sampling_periods: u64,
}

impl Counters {
    #[inline]
    pub(crate) fn period(&mut self, sampling: bool) -> &mut PeriodCounters {
        if sampling {
            &mut self.sampling
        } else {
            &mut self.non_sampling
        }
    }

    /// The counters as `key: value` pairs for a report's `extra` (flat, stable names).
    pub fn to_json(&self) -> serde_json::Map<String, serde_json::Value> {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        }
    }
}
