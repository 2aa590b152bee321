//! `wcp`, `lockset`, `tsan-hybrid` and `w3po` against the exact oracle (SPEC §2, §4):
//! every predictable pair the oracle finds is reported by the complete analyses, by pair
//! and by location pair.

mod common;
use common::actions;
use racepred::gen::parse_events;

use proptest::prelude::*;
use racepred::analysis::{self, eraser::Lockset, tsan_hybrid::TsanHybrid, w3po, wcp, Analysis};
use racepred::gen::from_actions;
use racepred::oracle::{analyze, OracleConfig};
use racepred::report::{place, GroupKey};
use racepred::trace::Trace;
use std::collections::BTreeSet;

fn run(trace: &Trace, a: Box<dyn Analysis>) -> racepred::report::RaceReport {
    analysis::run_one(trace, a)
}

/// The (first location, second location, kind) of each pair (by variable where a location
/// is missing: [`place`]).
fn loc_pairs(t: &Trace, pairs: &BTreeSet<(u64, u64)>) -> BTreeSet<GroupKey> {
    common::groups(t, pairs)
}

/// The location pairs of a report.
fn report_loc_pairs(r: &racepred::report::RaceReport) -> BTreeSet<GroupKey> {
    r.pairs
        .iter()
        .map(|p| (place(&p.first_event), place(&p.second_event), p.kind))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Lockset completeness: every predictable pair has disjoint locksets.
    #[test]
    fn lockset_and_tsan_contain_predictable(a in actions(20), threads in 2u32..5) {
        let t = from_actions(threads, 2, 2, &a);
        let o = analyze(&t, &OracleConfig::default()).unwrap();
        prop_assert!(o.predictable.is_subset(&run(&t, Box::new(Lockset::all_pairs())).pair_set()));
        prop_assert!(o.predictable.is_subset(&run(&t, Box::new(TsanHybrid::all_pairs())).pair_set()));
    }

    /// The same promise for the default, grouped reports, by location pair: every location
    /// pair of a predictable pair is reported (traces with few locations, so that groups
    /// hold several pairs).
    #[test]
    fn grouped_contain_predictable_location_pairs(
        a in actions(20),
        threads in 2u32..5,
        locs in proptest::collection::vec(0u8..5, 1..6),
    ) {
        let t = common::with_locs(&from_actions(threads, 2, 2, &a), &locs);
        let o = analyze(&t, &OracleConfig::default()).unwrap();
        let predictable = loc_pairs(&t, &o.predictable);
        prop_assert!(predictable.is_subset(&report_loc_pairs(&run(&t, Box::new(Lockset::new())))));
        prop_assert!(predictable.is_subset(&report_loc_pairs(&run(&t, Box::new(TsanHybrid::new())))));
        let adjacent = loc_pairs(&t, &o.adjacent);
        let w = report_loc_pairs(&run(&t, Box::new(w3po::W3po::new(None))));
        prop_assert!(adjacent.is_subset(&w), "adjacent {:?} w3po {:?}", adjacent, w);
    }

    /// Prop. 4.5: complete mode reports every adjacent pair.
    #[test]
    fn w3po_contains_adjacent(a in actions(20), threads in 2u32..5) {
        let t = from_actions(threads, 2, 2, &a);
        let o = analyze(&t, &OracleConfig::default()).unwrap();
        let w = w3po::pairs(&t, None);
        prop_assert!(o.adjacent.is_subset(&w), "adjacent {:?} w3po {:?}", o.adjacent, w);
    }

    /// Prop. 4.6: on two threads every reported pair is predictable.
    /// FINDING: false, also on traces with the paper's initial writes (Def. 2.8) and no
    /// deadlock: see `w3po_prop_4_6_counterexample_rf`. Kept, and ignored, on purpose: its
    /// saved seeds fail (`cargo test -- --ignored` shows them).
    #[test]
    #[ignore = "paper claim fails: w3po Prop. 4.6 (see w3po_prop_4_6_counterexample_rf)"]
    fn w3po_sound_on_two_threads(a in actions(20)) {
        let t = from_actions(2, 2, 2, &a);
        let o = analyze(&t, &OracleConfig::default()).unwrap();
        let w = w3po::pairs(&t, None);
        prop_assert!(w.is_subset(&o.predictable), "w3po {:?} predictable {:?}", w, o.predictable);
    }

    /// WCP: the first racy event belongs to a predictable pair; Prop. 3.8: every
    /// trace-specific predictable pair is WCP-unordered.
    #[test]
    fn wcp_first_race_sound_and_trace_specific_complete(a in actions(20), threads in 2u32..5) {
        let t = from_actions(threads, 2, 2, &a);
        let o = analyze(&t, &OracleConfig::default()).unwrap();
        let r = wcp::analyze(&t);
        if let Some(first) = r.racy_events.first() {
            prop_assert!(o.predictable.iter().any(|p| p.1 == first.index));
        }
        prop_assert!(o.trace_specific.is_subset(&r.pair_set()));
    }
}

/// Prop. 4.5 does not extend to the standard notion: a write-read pair whose write is not
/// the read's last write is predictable (the read need not execute) but neither adjacent
/// nor a Lockset-W3 pair.
#[test]
fn w3po_misses_standard_predictable_pairs() {
    let t = Trace::from_events(parse_events("T0|w(V0) T0|w(V0) T1|r(V0)"));
    let o = analyze(&t, &OracleConfig::default()).unwrap();
    assert!(o.predictable.contains(&(0, 2)));
    assert!(!o.adjacent.contains(&(0, 2)));
    assert!(!w3po::pairs(&t, None).contains(&(0, 2)));
}

/// Locks nested in opposite orders (the lecture notes' lockset false positive, kept as
/// `tests/traces/w3po_lockset_deadlock.std`): the two writes of x can only meet in a
/// schedule that deadlocks, so the pair is not predictable.
fn opposite_lock_orders() -> Trace {
    Trace::from_events(parse_events(
        "T0|acq(L1) T0|acq(L2) T0|rel(L2) T0|w(V0) T0|rel(L1) T1|acq(L2) T1|acq(L1) \
         T1|rel(L1) T1|w(V0) T1|rel(L2)",
    ))
}

/// FINDING: Prop. 4.6 (Lockset+W3 sound on two threads) fails on a two-thread trace whose
/// only reordering that makes the writes adjacent deadlocks. The paper's own Def. 2.9
/// remark says its notion "does not rule out deadlocks"; with the oracle's (SPEC §2) notion
/// the claim is false. Kept as a failing test on purpose.
#[test]
#[ignore = "paper claim fails: w3po Prop. 4.6 counterexample (race only through a deadlocking schedule)"]
fn w3po_prop_4_6_counterexample_deadlock() {
    assert_w3po_pairs_predictable(&opposite_lock_orders());
}

/// Prop. 4.6's claim on `t`: every pair W3PO reports is predictable (per the oracle).
fn assert_w3po_pairs_predictable(t: &Trace) {
    let o = analyze(t, &OracleConfig::default()).unwrap();
    let w = w3po::pairs(t, None);
    assert!(
        w.is_subset(&o.predictable),
        "w3po {w:?} predictable {:?}",
        o.predictable
    );
}

/// Two threads, with an initial write of x (w3po Def. 2.8) and no deadlock: T0 `w(x)
/// acq(L0)`, T1 `r(x)`, T0 `r(x) r(x)`, T1 `w(x)`, T0 `rel(L0)`, T1 `acq(L0) rel(L0) w(x)`
/// (found by `w3po_sound_on_two_threads`). T0's second read (5) and T1's last write (10) are
/// W3-unordered with disjoint locksets, so Def. 4.2 reports them. No correct reordering
/// makes them adjacent: T1's write 6 comes after 0 (T1's read 3 reads 0), and must not come
/// between 0 and T0's reads, so it follows them; T1's critical section then follows 6 and
/// so T0's, whose release lies between 5 and 10. W3 has no edge for "no other write between
/// a write and its reader", which is what rules the pair out.
fn read_from_excludes_a_write() -> Trace {
    Trace::from_events(parse_events(
        "T0|w(V0) T0|w(V1) T0|acq(L0) T1|r(V0) T0|r(V0) T0|r(V0) T1|w(V0) T0|rel(L0) \
         T1|acq(L0) T1|rel(L0) T1|w(V0)",
    ))
}

/// FINDING: Prop. 4.6 is false as stated (with the W3 of SPEC §4 reconstructed from Def.
/// 4.1, which this trace satisfies as well as the paper's initial-write property). Kept as a
/// failing test on purpose.
#[test]
#[ignore = "paper claim fails: w3po Prop. 4.6 counterexample (write between a read and its write)"]
fn w3po_prop_4_6_counterexample_rf() {
    assert_w3po_pairs_predictable(&read_from_excludes_a_write());
}

/// What that finding rests on: the pair is reported and is not predictable; without T1's
/// read, T1's first write may move before the initial write and the pair is predictable.
#[test]
fn read_from_excludes_a_write_is_not_predictable_but_reported() {
    let t = read_from_excludes_a_write();
    let o = analyze(&t, &OracleConfig::default()).unwrap();
    assert!(w3po::pairs(&t, None).contains(&(5, 10)));
    assert!(!o.predictable.contains(&(5, 10)));
    let mut events = t.events.clone();
    events.remove(3);
    let t = Trace::from_events(events);
    let o = analyze(&t, &OracleConfig::default()).unwrap();
    assert!(w3po::pairs(&t, None).contains(&(4, 9)));
    assert!(o.predictable.contains(&(4, 9)));
}

/// FINDING: SPEC §4's "WCP: first race sound" holds only up to deadlocks. Kini et al. promise
/// that the first WCP race witnesses a predictable race *or a predictable deadlock*; here it
/// is a deadlock. Kept as a failing test on purpose.
#[test]
#[ignore = "SPEC claim fails: WCP's first race may be a predictable deadlock (Kini et al. PLDI'17 Thm. 1)"]
fn wcp_first_race_counterexample_deadlock() {
    let t = opposite_lock_orders();
    let o = analyze(&t, &OracleConfig::default()).unwrap();
    let r = wcp::analyze(&t);
    let first = r.racy_events.first().expect("WCP flags the second write");
    assert!(o.predictable.iter().any(|p| p.1 == first.index));
}

/// What the two findings above rest on, checked so it cannot silently change: the pair is
/// reported by both analyses and is not predictable.
#[test]
fn opposite_lock_orders_is_not_predictable_but_reported() {
    let t = opposite_lock_orders();
    let o = analyze(&t, &OracleConfig::default()).unwrap();
    assert!(o.predictable.is_empty());
    assert!(w3po::pairs(&t, None).contains(&(3, 8)));
    assert_eq!(
        wcp::analyze(&t).racy_events.first().map(|e| e.index),
        Some(8)
    );
}
