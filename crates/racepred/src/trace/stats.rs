//! Trace statistics: the columns of Table 1 of the SSHB paper.

use super::{Event, Names, Op};

/// Counts of a trace's events and objects.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TraceStats {
    pub events: u64,
    pub threads: u64,
    pub variables: u64,
    pub locks: u64,
    pub locations: u64,
    pub reads: u64,
    pub writes: u64,
    pub acquires: u64,
    pub releases: u64,
    pub forks: u64,
    pub joins: u64,
    /// Volatile accesses, sig/wait, method and transaction boundaries.
    pub other: u64,
}

/// Accumulates [`TraceStats`] one event at a time.
#[derive(Default)]
pub struct StatsCounter {
    by_op: [u64; Op::ALL.len()],
}

impl StatsCounter {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn add(&mut self, ev: &Event) {
        self.by_op[ev.op as usize] += 1;
    }

    /// The totals, with object counts taken from the name tables.
    pub fn finish(&self, names: &Names) -> TraceStats {
        let c = |op: Op| self.by_op[op as usize];
        let events: u64 = self.by_op.iter().sum();
        let core = c(Op::Read)
            + c(Op::Write)
            + c(Op::Acquire)
            + c(Op::Release)
            + c(Op::Fork)
            + c(Op::Join);
        TraceStats {
            events,
            threads: names.threads.len() as u64,
            variables: names.vars.len() as u64,
            locks: names.locks.len() as u64,
            locations: names.locs.len() as u64,
            reads: c(Op::Read),
            writes: c(Op::Write),
            acquires: c(Op::Acquire),
            releases: c(Op::Release),
            forks: c(Op::Fork),
            joins: c(Op::Join),
            other: events - core,
        }
    }
}

impl TraceStats {
    /// (label, value) rows in Table 1's order.
    pub fn rows(&self) -> [(&'static str, u64); 12] {
        [
            ("events", self.events),
            ("threads", self.threads),
            ("variables", self.variables),
            ("locks", self.locks),
            ("locations", self.locations),
            ("reads", self.reads),
            ("writes", self.writes),
            ("acquires", self.acquires),
            ("releases", self.releases),
            ("forks", self.forks),
            ("joins", self.joins),
            ("other", self.other),
        ]
    }
}
