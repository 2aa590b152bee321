//! FastTrack (`fasttrack`): epochs and adaptive read maps.
//!
//! Papers: Flanagan and Freund, "FastTrack: Efficient and Precise Dynamic Race Detection",
//! PLDI 2009, as presented by Bond, Coons, McKinley, PACER, PLDI 2010
//! (`shared/papers/pacer-sampling.txt`, §2.2, Alg. 7 read and Alg. 8 write, with PACER's
//! change of clearing the read map at every write); also
//! `shared/papers/sshb-inaccurate-traces.txt`, App. B, Alg. 2.
//!
//! Synchronisation is the shared happens-before engine ([`super::hb::HbEngine`], GENERIC
//! Alg. 1–4 and 14–15). Per variable: the last write as an epoch `W`, the reads as an
//! epoch `R` while they are totally ordered and as a vector clock once two concurrent reads
//! are seen. Same-epoch accesses are skipped (O(1) fast path).
//!
//! Promise: the racy events are a subset of Djit+'s (`hb`) with the same first one; on a
//! race-free trace both report nothing (FastTrack is exact up to the first race; after a
//! race it may forget accesses, e.g. the reads cleared by a racing write). Only the first
//! racy event is guaranteed predictable (Mathur, Kini, Viswanathan, OOPSLA 2018).
//! Memory: O(variables), plus a vector clock for each variable with concurrent reads.

use crate::analysis::AnalysisKind;
use crate::clock::{epoch_le, vector_le, Clock, Epoch, Time, VectorClock};
use crate::report::{RaceReport, RacyLog, ReportKind};
use crate::trace::{Event, ThreadId};

use super::hb::{Accesses, HbEngine};

/// Per-variable state: 16 bytes.
#[derive(Clone, Copy, Default)]
struct VarState {
    w: Epoch,
    /// The read epoch, or `SHARED` when the reads live in `shared[x]`.
    r: Epoch,
}

/// Marks a read map held as a vector clock: the largest thread at the largest time, never
/// a real epoch.
#[inline(always)]
fn shared() -> Epoch {
    Epoch::new(ThreadId((1 << 24) - 1), Time::MAX)
}

/// FastTrack's access checks (Alg. 7–8).
#[derive(Default)]
pub struct FastTrackAccesses {
    vars: Vec<VarState>,
    shared: Vec<VectorClock>,
    racy: RacyLog,
    /// Read maps promoted to vector clocks (a counter for the report).
    promotions: u64,
}

impl FastTrackAccesses {
    /// An access `ev` with its thread's clock `c`: its variable, its epoch and the
    /// variable's state before it.
    #[inline(always)]
    fn access<C: Clock>(&mut self, ev: &Event, c: &C) -> (usize, Epoch, VarState) {
        let x = ev.target as usize;
        (x, Epoch::new(ev.thread, c.get(ev.thread)), *self.var(x))
    }

    #[inline]
    fn var(&mut self, x: usize) -> &mut VarState {
        if x >= self.vars.len() {
            self.grow(x);
        }
        &mut self.vars[x]
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, x: usize) {
        self.vars.resize(x + 1, VarState::default());
    }

    #[cold]
    #[inline(never)]
    fn promote<C: Clock>(&mut self, x: usize, old: Epoch, c: &C, ev: &Event) {
        if x >= self.shared.len() {
            self.shared.resize_with(x + 1, VectorClock::new);
        }
        let v = &mut self.shared[x];
        v.clear();
        v.set(old.thread(), old.time());
        v.set(ev.thread, c.get(ev.thread));
        self.vars[x].r = shared();
        self.promotions += 1;
    }
}

impl<C: Clock> Accesses<C> for FastTrackAccesses {
    #[inline(always)]
    fn read(&mut self, index: u64, ev: &Event, c: &C) {
        let (x, now, s) = self.access(ev, c);
        if s.r == now {
            return; // [READ SAME EPOCH]
        }
        if s.r == shared() && self.shared[x].get(ev.thread) == now.time() {
            return; // [READ SHARED SAME EPOCH]
        }
        if !epoch_le(s.w, c) {
            self.racy.push(index, ev);
        }
        if s.r != shared() {
            if epoch_le(s.r, c) {
                self.vars[x].r = now; // [READ EXCLUSIVE]
            } else {
                self.promote(x, s.r, c, ev); // [READ SHARE]
            }
        } else {
            self.shared[x].set(ev.thread, now.time()); // [READ SHARED]
        }
    }

    #[inline(always)]
    fn write(&mut self, index: u64, ev: &Event, c: &C) {
        let (x, now, s) = self.access(ev, c);
        if s.w == now {
            return; // [WRITE SAME EPOCH]
        }
        let mut racy = !epoch_le(s.w, c);
        if s.r != shared() {
            racy |= !epoch_le(s.r, c);
        } else {
            racy |= !vector_le(&self.shared[x], c);
            self.shared[x].clear();
        }
        if racy {
            self.racy.push(index, ev);
        }
        // PACER's variant: the read map is cleared at every write.
        self.vars[x] = VarState {
            w: now,
            r: Epoch::ZERO,
        };
    }

    fn group_racy(&mut self) {
        self.racy = RacyLog::new(false);
    }

    fn finish(&mut self, report: &mut RaceReport) {
        self.racy.finish(report);
        report
            .extra
            .insert("read_map_promotions".into(), self.promotions.into());
    }

    fn report_kind(&self) -> ReportKind {
        ReportKind::RacyEvents
    }
}

/// FastTrack (`fasttrack`).
pub type FastTrack<C> = HbEngine<C, FastTrackAccesses>;

/// Creates `fasttrack` with clock kind `C`.
pub fn fasttrack<C: Clock>() -> FastTrack<C> {
    HbEngine::new(
        AnalysisKind::FastTrack.name(),
        false,
        FastTrackAccesses::default(),
    )
    .note(
        "FastTrack (epochs, adaptive read maps, read map cleared at writes): racy events \
         are a subset of hb's with the same first one; only the first is guaranteed \
         predictable",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::hb::hb;
    use crate::analysis::run_trace;
    use crate::analysis::Analysis;
    use crate::clock::TreeClock;
    use crate::gen::parse_events;
    use crate::trace::Trace;

    fn racy(a: Box<dyn Analysis>, t: &Trace) -> Vec<u64> {
        run_trace(t, &mut [a])
            .remove(0)
            .racy_set()
            .into_iter()
            .collect()
    }

    #[test]
    fn concurrent_reads_then_write() {
        // Two concurrent reads promote the read map; a write by a third thread races with
        // both (one racy event).
        let t = Trace::from_events(parse_events("T0|r(V0) T1|r(V0) T2|w(V0) T0|r(V0)"));
        assert_eq!(racy(Box::new(fasttrack::<VectorClock>()), &t), vec![2, 3]);
        assert_eq!(racy(Box::new(fasttrack::<TreeClock>()), &t), vec![2, 3]);
        assert_eq!(racy(Box::new(hb::<VectorClock>()), &t), vec![2, 3]);
    }

    #[test]
    fn cleared_reads_make_a_strict_subset() {
        // T1's write races with T0's read and clears it; T2's write, ordered after T1's
        // write but not after T0's read, is racy for Djit+ only.
        let t = Trace::from_events(parse_events(
            "T0|r(V0) T1|w(V0) T1|rel(L0) T2|acq(L0) T2|w(V0)",
        ));
        assert_eq!(racy(Box::new(fasttrack::<VectorClock>()), &t), vec![1]);
        assert_eq!(racy(Box::new(hb::<VectorClock>()), &t), vec![1, 4]);
    }
}
