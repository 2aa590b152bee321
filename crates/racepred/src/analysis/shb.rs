//! Schedulable happens-before: racy events (`shb`) and race pairs (`shbp`).
//!
//! Papers: Mathur, Kini, Viswanathan, "What Happens-After the First Race? Enhancing the
//! Predictive Power of Happens-Before Based Dynamic Race Detection", OOPSLA 2018 (SHB and
//! its vector-clock algorithm); Sulzmann, Stadtmüller et al. on inaccurate traces
//! (`shared/papers/sshb-inaccurate-traces.txt`, Def. 4 SHB, App. C Alg. 4 SHBP); Genç et
//! al. (W3PO) (`shared/papers/w3po-hybrid-lockset.txt`, §3.1.2: Def. 3.3 SHB, Def. 3.4 SHB
//! WRD race pairs, Prop. 3.5 trace-specific soundness and completeness; §5 history).
//!
//! SHB is HB plus an edge from each read's last write (the closest earlier write of the
//! variable in the trace) to the read. Both analyses are the shared happens-before engine
//! ([`super::hb::HbEngine`]) with write-read edges on: every write copies its thread clock
//! into the variable's last-write clock and increments; every read joins that clock.
//!
//! `shb`: Djit+-style checks where reads are checked against the thread clock *before*
//! joining the last write (so a read races with its own last write when nothing else orders
//! them). A racy event is an access with some earlier conflicting access it is SHB-unordered
//! with, or whose last write reaches it only by the direct edge. Only the first racy event
//! is guaranteed sound (predictable): after a race, later events may depend on a reordering
//! of it. (Mathur et al. prove every SHB race *pair* sound; racy events as reported here
//! follow the FastTrack convention and inherit the first-race guarantee.)
//!
//! `shbp`: pairs (Alg. 4 with the history of replaced accesses, as in [`super::hbp`]):
//! write-write and read-write pairs unordered by SHB, write-read pairs `(w, r)` unordered
//! by SHB, and the SHB WRD race pairs of w3po Def. 3.4 — `w` is `r`'s last write, of
//! another thread, and no SHB path other than the direct edge orders them (checked against
//! the reader's clock before the join). Promise: every pair is predictable, and every
//! trace-specific predictable pair is reported (Prop. 3.5); `tests/hb_props.rs` checks the
//! pairs against per-event SHB clocks. `streaming: true` runs Alg. 4 as published (a
//! subset). Memory as for `hbp`, plus one clock per written variable.

use crate::analysis::AnalysisKind;
use crate::clock::Clock;

use super::hb::{Djit, HbEngine};
use super::hbp::PairAccesses;

/// SHB racy events (`shb`).
pub type Shb<C> = HbEngine<C, Djit>;

/// SHB race pairs (`shbp`).
pub type Shbp<C> = HbEngine<C, PairAccesses>;

/// Creates `shb` with clock kind `C`.
pub fn shb<C: Clock>() -> Shb<C> {
    HbEngine::new(AnalysisKind::Shb.name(), true, Djit::default()).note(
        "SHB (HB + last-write → read edges): racy events = accesses SHB-unordered with an \
         earlier conflicting access or reached from their last write only by the direct \
         edge; only the first is guaranteed sound",
    )
}

/// Creates `shbp` with clock kind `C`; `streaming` runs Alg. 4 as published.
pub fn shbp<C: Clock>(streaming: bool) -> Shbp<C> {
    shbp_with(streaming, false)
}

/// [`shbp`], with its pairs grouped by location pair if `grouped`.
pub fn shbp_with<C: Clock>(streaming: bool, grouped: bool) -> Shbp<C> {
    let complete = "(every SHB-unordered conflicting pair and every SHB WRD race pair)";
    super::hbp::pair_engine(AnalysisKind::Shbp, (4, complete), streaming, grouped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::hb::hb;
    use crate::analysis::hbp::hbp;
    use crate::analysis::{run_trace, Analysis};
    use crate::clock::{TreeClock, VectorClock};
    use crate::gen::parse_events;
    use crate::trace::{Event, Trace};
    use std::collections::BTreeSet;

    fn run(a: Box<dyn Analysis>, t: &Trace) -> crate::report::RaceReport {
        run_trace(t, &mut [a]).remove(0)
    }

    /// sshb Fig. 1 / w3po Ex. 3.2 in shape: a read's dependency on its last write orders
    /// what follows the read after that write.
    #[test]
    fn write_read_dependency_orders() {
        let t = Trace::from_events(vec![
            Event::write(0, 0), // T0 w(x)
            Event::read(1, 0),  // T1 r(x): last write 0
            Event::write(1, 1), // T1 w(y)
            Event::write(0, 1), // T0 w(y): unordered with T1's in both relations
        ]);
        let h = run(Box::new(hbp::<VectorClock>(false)), &t).pair_set();
        assert_eq!(h, [(0, 1), (2, 3)].into());
        // SHB: (0,1) is a WRD race pair (nothing else orders them), (2,3) unordered.
        let s = run(Box::new(shbp::<VectorClock>(false)), &t).pair_set();
        assert_eq!(s, [(0, 1), (2, 3)].into());
        // Now the classic: T0 writes x and y; T1 reads y (last write by T0) then writes x.
        let t = Trace::from_events(vec![
            Event::write(0, 0), // w(x)
            Event::write(0, 1), // w(y)
            Event::read(1, 1),  // r(y)
            Event::write(1, 0), // w(x)
        ]);
        assert_eq!(
            run(Box::new(hbp::<VectorClock>(false)), &t).pair_set(),
            [(0, 3), (1, 2)].into()
        );
        // SHB orders w(x)@0 before w(x)@3 through the dependency; (1,2) stays a WRD pair.
        let s = run(Box::new(shbp::<VectorClock>(false)), &t);
        assert_eq!(s.pair_set(), [(1, 2)].into());
        assert_eq!(
            run(Box::new(shb::<VectorClock>()), &t).racy_set(),
            [2].into()
        );
        assert_eq!(run(Box::new(shb::<TreeClock>()), &t).racy_set(), [2].into());
        assert_eq!(
            run(Box::new(hb::<VectorClock>()), &t).racy_set(),
            [2, 3].into()
        );
    }

    #[test]
    fn wrd_pair_needs_another_path_to_be_ordered() {
        // The last write is also ordered by a lock: not a race.
        let t = Trace::from_events(parse_events(
            "T0|acq(L0) T0|w(V0) T0|rel(L0) T1|acq(L0) T1|r(V0) T1|rel(L0)",
        ));
        assert!(run(Box::new(shbp::<VectorClock>(false)), &t)
            .pairs
            .is_empty());
        assert!(run(Box::new(shb::<VectorClock>()), &t)
            .racy_events
            .is_empty());
    }

    #[test]
    fn non_last_write_read_pair_is_reported_when_unordered() {
        // w(x)@T0, w(x)@T1, r(x)@T2: the read depends on T1's write only.
        let t = Trace::from_events(parse_events("T0|w(V0) T1|w(V0) T2|r(V0)"));
        let want: BTreeSet<_> = [(0, 1), (0, 2), (1, 2)].into();
        assert_eq!(
            run(Box::new(shbp::<VectorClock>(false)), &t).pair_set(),
            want
        );
        assert_eq!(run(Box::new(shbp::<TreeClock>(true)), &t).pair_set(), want);
    }
}
