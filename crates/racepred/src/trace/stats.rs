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

    /// [`add`](Self::add) for each event of `events`. Four tables of counts, each event's
    /// going to the next: consecutive events of one kind (runs of reads) then bump four
    /// counters in turn instead of one, whose every increment waited for the store of the
    /// one before (a fifth of `stats` on a binary trace).
    pub fn add_all(&mut self, events: &[Event]) {
        let mut by = [[0u64; Op::ALL.len()]; 4];
        let mut quads = events.chunks_exact(4);
        for q in &mut quads {
            by[0][q[0].op as usize] += 1;
            by[1][q[1].op as usize] += 1;
            by[2][q[2].op as usize] += 1;
            by[3][q[3].op as usize] += 1;
        }
        for ev in quads.remainder() {
            self.add(ev);
        }
        for table in &by {
            for (total, n) in self.by_op.iter_mut().zip(table) {
                *total += n;
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{LocId, ThreadId};

    /// Counting a block at once counts what counting its events one by one does, for every
    /// length (whole groups of four and every remainder) and every operation.
    #[test]
    fn block_counts_equal_event_counts() {
        for len in 0..40usize {
            let events: Vec<Event> = (0..len)
                .map(|i| {
                    let op = Op::ALL[(i * 7 + len) % Op::ALL.len()];
                    Event::new(ThreadId(0), op, 0, LocId::NONE)
                })
                .collect();
            let (mut one, mut all) = (StatsCounter::new(), StatsCounter::new());
            for ev in &events {
                one.add(ev);
            }
            all.add(&Event::read(0, 0));
            one.add(&Event::read(0, 0));
            all.add_all(&events);
            assert_eq!(one.by_op, all.by_op, "{len} events");
        }
    }
}
