//! The SMT predictor on slices (`predict_pairs`) against the exact oracle:
//!
//! - with every pair asked, the races are exactly the oracle's predictable pairs, on random
//!   traces and on adversarial ones (nested locks taken in opposite orders, many empty
//!   critical sections, fork/join, reads of values written under other locks), and every
//!   witness replays on the whole trace;
//! - a location group is `no race` exactly when the oracle has no pair in it;
//! - a pair whose events lie further apart than any window is found, from a small slice;
//! - with limits too small, a group is unknown with the reason, never `no race`.

mod common;

use std::collections::BTreeSet;

use common::{actions, group_of};
use proptest::prelude::*;
use racepred::gen::from_actions;
use racepred::oracle::{self, OracleConfig};
use racepred::report::GroupKey;
use racepred::trace::values::ValueTrace;
use racepred::trace::Trace;
use racepred::witness;
use racepred_smt::{predict, predict_pairs, GroupAnswer, SliceLimits, SmtConfig, SmtKind};

fn every_pair() -> SmtConfig {
    let mut cfg = SmtConfig::new(SmtKind::Mcm);
    cfg.all_pairs = true;
    cfg
}

fn check_against_oracle(t: &Trace) -> Result<(), TestCaseError> {
    let o = oracle::analyze(t, &OracleConfig::default()).unwrap();
    let vt = ValueTrace::from_trace(t.clone());
    let out = predict_pairs(&vt, &every_pair(), SliceLimits::default(), None, |_, _| {}).unwrap();
    let concrete = vt.concrete().unwrap();
    let mut found = BTreeSet::new();
    for r in &out.races {
        prop_assert!(witness::replay(&vt, &concrete, &r.witness).is_ok());
        found.insert(r.witness.race);
    }
    prop_assert_eq!(&found, &o.predictable, "slices vs oracle");
    let racy: BTreeSet<GroupKey> = o.predictable.iter().map(|&p| group_of(t, p)).collect();
    for (k, a) in &out.groups {
        match a {
            GroupAnswer::Race(_) => prop_assert!(racy.contains(k)),
            GroupAnswer::NoRace { .. } => {
                prop_assert!(!racy.contains(k), "no race claimed for {:?}", k)
            }
            GroupAnswer::Unknown(why) => prop_assert!(false, "unknown: {}", why),
        }
    }
    // Every racy group is among the candidates.
    let asked: BTreeSet<GroupKey> = out.groups.iter().map(|(k, _)| *k).collect();
    prop_assert!(racy.is_subset(&asked));
    Ok(())
}

/// Adversarial shapes: per thread, blocks that take two locks nested in a thread-dependent
/// order, empty sections, accesses outside any lock, writes under one lock and reads under
/// it or under the other (values passed through locks), sections with two accesses, forks
/// and joins.
fn adversarial() -> impl Strategy<Value = Trace> {
    let block = (0u8..4, 0u8..9, 0u8..2, any::<bool>(), any::<bool>());
    (2u32..4, proptest::collection::vec(block, 2..14)).prop_map(|(threads, blocks)| {
        // Every thread started first, so that each block can run.
        let mut a: Vec<(u8, u8, u8)> = (1..threads as u8).map(|u| (0, 8, u)).collect();
        for (t, shape, var, write, reverse) in blocks {
            let t = t % threads as u8;
            let (l1, l2) = if reverse ^ (t % 2 == 1) {
                (1, 0)
            } else {
                (0, 1)
            };
            let access = if write { 4 } else { 0 };
            match shape {
                // Nested locks, access inside.
                0 => a.extend([
                    (t, 6, l1),
                    (t, 6, l2),
                    (t, access, var),
                    (t, 7, l2),
                    (t, 7, l1),
                ]),
                // An empty section.
                1 => a.extend([(t, 6, l1), (t, 7, l1)]),
                // An access outside any lock.
                2 => a.push((t, access, var)),
                // A write under one lock, a read under the other.
                3 => a.extend([
                    (t, 6, l1),
                    (t, 4, var),
                    (t, 7, l1),
                    (t, 6, l2),
                    (t, 0, var),
                    (t, 7, l2),
                ]),
                // A write, or a read, under one lock.
                4 => a.extend([(t, 6, l1), (t, 4, var), (t, 7, l1)]),
                5 => a.extend([(t, 6, l1), (t, 0, var), (t, 7, l1)]),
                // Two accesses in one section (one of each variable).
                6 => a.extend([(t, 6, l1), (t, access, var), (t, 4, 1 - var), (t, 7, l1)]),
                // Fork or join of the next thread.
                7 => a.push((t, 8, t + 1)),
                _ => a.push((t, 9, t + 1)),
            }
        }
        from_actions(threads, 2, 2, &a)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn slices_find_exactly_the_predictable_pairs(a in actions(48), threads in 2u32..4) {
        let t = from_actions(threads, 2, 2, &a);
        prop_assume!(t.len() >= 6);
        check_against_oracle(&t)?;
    }

    #[test]
    fn slices_are_exact_on_adversarial_traces(t in adversarial()) {
        prop_assume!(t.len() <= 40);
        check_against_oracle(&t)?;
    }

    /// Limits too small to examine every pair leave groups unknown, never `no race` for a
    /// racy one.
    #[test]
    fn small_limits_never_claim_absence(a in actions(20), threads in 2u32..4, slice in 1usize..6) {
        let t = from_actions(threads, 2, 2, &a);
        let o = oracle::analyze(&t, &OracleConfig::default()).unwrap();
        let racy: BTreeSet<GroupKey> = o.predictable.iter().map(|&p| group_of(&t, p)).collect();
        let vt = ValueTrace::from_trace(t.clone());
        let limits = SliceLimits { max_slice: slice, max_pairs: 1 };
        let out = predict_pairs(&vt, &SmtConfig::new(SmtKind::Mcm), limits, None, |_, _| {}).unwrap();
        for (k, a) in &out.groups {
            if let GroupAnswer::NoRace { .. } = a {
                prop_assert!(!racy.contains(k));
            }
        }
    }
}

/// A race whose events are 90 000 events apart: windows of 10 000 events cannot ask it,
/// its slice holds six events.
#[test]
fn a_far_apart_pair_is_asked_on_a_small_slice() {
    let mut text = String::from("T0|fork(T1)|0\nT0|w(x)|1\n");
    for _ in 0..30_000 {
        text.push_str("T0|acq(l)|2\nT0|w(y)|3\nT0|rel(l)|4\n");
    }
    text.push_str("T1|acq(l)|5\nT1|r(z)|6\nT1|rel(l)|7\nT1|w(x)|8\n");
    let vt = ValueTrace::read(text.as_bytes()).unwrap();
    let windows = predict(&vt, &SmtConfig::new(SmtKind::Mcm), |_| {}).unwrap();
    assert!(windows.races.is_empty(), "windows do not see the pair");
    let out = predict_pairs(
        &vt,
        &SmtConfig::new(SmtKind::Mcm),
        SliceLimits::default(),
        None,
        |_, _| {},
    )
    .unwrap();
    let n = vt.trace.len() as u64;
    let x_pair = out
        .races
        .iter()
        .find(|r| r.witness.race == (1, n - 1))
        .expect("the x pair is a race");
    // T1's section may run before all of T0's (a reversal of the trace's order): the
    // witness runs the fork and T1's section, nothing of T0's 90 000 events.
    assert!(
        x_pair.witness.schedule.len() <= 4,
        "{:?}",
        x_pair.witness.schedule
    );
    assert!(out.largest_slice <= 6, "{}", out.largest_slice);
    let concrete = vt.concrete().unwrap();
    assert!(witness::replay(&vt, &concrete, &x_pair.witness).is_ok());
}

fn answers(text: &str) -> (Vec<(u64, u64)>, racepred_smt::Counts) {
    let vt = ValueTrace::read(text.as_bytes()).unwrap();
    let out = predict_pairs(&vt, &every_pair(), SliceLimits::default(), None, |_, _| {}).unwrap();
    let t = &vt.trace;
    let o = oracle::analyze(t, &OracleConfig::default()).unwrap();
    let races: Vec<(u64, u64)> = out.races.iter().map(|r| r.witness.race).collect();
    assert_eq!(
        races.iter().copied().collect::<BTreeSet<_>>(),
        o.predictable,
        "slices vs oracle"
    );
    (races, out.counts)
}

/// T1's section reads what T2's section wrote, so T2's section must end first: the slice
/// of the x pair needs T2's release, though no read needs it and neither access's thread
/// is T2.
#[test]
fn a_section_the_pair_needs_closed_gets_its_release() {
    let (races, _) = answers(
        "T0|fork(T1)|0\nT0|fork(T2)|1\nT0|w(x)|2\n\
         T2|acq(l)|3\nT2|w(y)|4\nT2|rel(l)|5\nT2|w(z)|6\n\
         T1|acq(l)|7\nT1|r(y)|8\nT1|rel(l)|9\nT1|w(x)|10\n",
    );
    assert!(races.contains(&(2, 10)), "{races:?}");
}

/// T1's section reads what T0 wrote in the section that holds the first access: T0's
/// section ends first in every reordering, so the first access runs: TRF leaves the pair
/// unordered, its slice's encoding is unsatisfiable.
#[test]
fn a_pair_the_locks_order_is_unsatisfiable() {
    let (races, counts) = answers(
        "T0|fork(T1)|0\nT0|acq(l)|1\nT0|w(y)|2\nT0|w(x)|3\nT0|rel(l)|4\n\
         T1|acq(l)|5\nT1|r(y)|6\nT1|rel(l)|7\nT1|w(x)|8\n",
    );
    assert!(!races.contains(&(3, 8)), "{races:?}");
    assert!(counts.unsat >= 1, "{counts:?}");
}

/// T2's release follows a read of what T0 wrote after the first access: no witness runs
/// it, and none needs to (T1 reads y outside any section), so the slice leaves T2's
/// section open instead of calling the pair ordered.
#[test]
fn a_release_that_needs_the_pair_stays_out() {
    let (races, _) = answers(
        "T0|fork(T1)|0\nT0|fork(T2)|1\nT0|w(x)|2\nT0|w(q)|3\n\
         T2|acq(l)|4\nT2|w(y)|5\nT2|r(q)|6\nT2|rel(l)|7\n\
         T1|r(y)|8\nT1|w(x)|9\n",
    );
    assert!(races.contains(&(2, 9)), "{races:?}");
}

/// A join of a thread that has no events still comes after that thread's fork: the read
/// before the fork and the write after the join are ordered (no candidate, no "unknown"
/// from a witness that joins before the fork).
#[test]
fn a_join_of_a_thread_without_events_follows_its_fork() {
    // T1: r(x) fork(T2); T0: join(T2) w(x) r(y) r(y).
    let a = [
        (1, 0, 1),
        (1, 8, 2),
        (3, 9, 2),
        (3, 4, 1),
        (0, 0, 0),
        (0, 0, 0),
    ];
    let t = from_actions(3, 2, 2, &a);
    check_against_oracle(&t).unwrap();
}
