//! The verdicts of `racepred check` ([`racepred::verdict::decide`] over `tsan-hybrid`,
//! `syncp`, `shbp`, `osr` and the SMT stage's evidence) against the exact oracle, on random small
//! traces that fit in one SMT window:
//!
//! - `race` exactly for the location pairs (groups) with a predictable pair;
//! - `no race` for every other candidate (the whole trace is one window, so absence is
//!   proved), and never for a group with a predictable pair;
//! - no `unknown`;
//! - every `syncp` and `osr` race carries a witness that replays.
//!
//! The same with the SMT stage `check` runs (each open group's pairs on their slices), on
//! longer traces. And with the SMT stage cut short (a window smaller than the trace), no
//! group is `no race`: absence is never claimed without a proof.

mod common;

use std::collections::BTreeSet;

use common::actions;
use proptest::prelude::*;
use racepred::analysis::{self, AnalysisKind, AnalysisOptions};
use racepred::gen::from_actions;
use racepred::oracle::{self, OracleConfig};
use racepred::report::{GroupKey, RaceReport};
use racepred::trace::values::ValueTrace;
use racepred::trace::{LocId, Trace};
use racepred::verdict::{decide, VerdictKind};
use racepred::witness;
use racepred_smt::{
    evidence, predict, predict_pairs, slice_evidence, SliceLimits, SmtConfig, SmtKind,
};

fn with_locs(t: &Trace, locs: &[u8]) -> Trace {
    let mut events = t.events.clone();
    for (i, ev) in events.iter_mut().enumerate() {
        ev.loc = LocId(locs[i % locs.len()] as u32);
    }
    Trace::from_events(events)
}

/// A trace of `from_actions` on `actions(max)` of 2 or 3 threads, 2 variables and 2 locks,
/// with 1 to 4 of 4 locations ([`with_locs`]).
fn located_trace(max: usize) -> impl Strategy<Value = Trace> {
    let locs = proptest::collection::vec(0u8..4, 1..5);
    (actions(max), 2u32..4, locs)
        .prop_map(|(a, threads, locs)| with_locs(&from_actions(threads, 2, 2, &a), &locs))
}

/// The reports of `check`'s streaming stage: (candidates, sound ones, `trf`).
fn streaming(t: &Trace) -> (RaceReport, [RaceReport; 3], RaceReport) {
    let opts = AnalysisOptions {
        group_racy: true,
        witness_cuts: true,
        ..AnalysisOptions::default()
    };
    let run = |k| analysis::run_one(t, analysis::create(k, &opts).unwrap());
    (
        run(AnalysisKind::TsanHybrid),
        [
            run(AnalysisKind::SyncP),
            run(AnalysisKind::Shbp),
            run(AnalysisKind::Osr),
        ],
        run(AnalysisKind::Trf),
    )
}

fn verdicts(t: &Trace, window: usize) -> racepred::verdict::Verdicts {
    let (cand, [syncp, shbp, osr], trf) = streaming(t);
    let vt = ValueTrace::from_trace(t.clone());
    let mut cfg = SmtConfig::new(SmtKind::Mcm);
    cfg.window = window;
    let out = predict(&vt, &cfg, |_| {}).unwrap();
    let ev = evidence(&vt, &cfg, &out);
    decide(&cand, &[&syncp, &shbp, &osr], &[&trf], Some(&ev))
}

/// The verdicts with the SMT stage `check` runs: `mcm` on the slices of the open groups.
fn verdicts_on_slices(t: &Trace) -> racepred::verdict::Verdicts {
    let (cand, [syncp, shbp, osr], trf) = streaming(t);
    let proved: BTreeSet<GroupKey> = [&syncp, &shbp, &osr]
        .iter()
        .flat_map(|r| r.pairs.iter().map(|p| p.group_key()))
        .collect();
    let open: rustc_hash::FxHashSet<GroupKey> = trf
        .pairs
        .iter()
        .map(|p| p.group_key())
        .filter(|k| !proved.contains(k))
        .collect();
    let vt = ValueTrace::from_trace(t.clone());
    let cfg = SmtConfig::new(SmtKind::Mcm);
    let limits = SliceLimits::default();
    let out = predict_pairs(&vt, &cfg, limits, Some(&open), |_, _| {}).unwrap();
    let ev = slice_evidence(&vt, &cfg, limits, &out);
    decide(&cand, &[&syncp, &shbp, &osr], &[&trf], Some(&ev))
}

/// The location groups of the oracle's predictable pairs.
fn racy_groups(t: &Trace, pairs: &BTreeSet<(u64, u64)>) -> BTreeSet<GroupKey> {
    common::groups(t, pairs)
}

/// `race` exactly for the location pairs with a predictable pair (each `syncp` witness
/// cut replaying), `no race` for the others, no `unknown`.
fn exact_verdicts(t: &Trace, v: &racepred::verdict::Verdicts) -> Result<(), TestCaseError> {
    let o = oracle::analyze(t, &OracleConfig::default()).unwrap();
    let racy = racy_groups(t, &o.predictable);
    let vt = ValueTrace::from_trace(t.clone());
    let concrete = vt.concrete().unwrap();
    let mut races = BTreeSet::new();
    for w in &v.warnings {
        let k = w.pair.group_key();
        match w.verdict {
            VerdictKind::Race => {
                races.insert(k);
                if let Some(c) = &w.cut {
                    let s = witness::of_cut(t, c);
                    prop_assert!(witness::replay(&vt, &concrete, &s).is_ok());
                }
            }
            VerdictKind::NoRace => prop_assert!(!racy.contains(&k), "no race claimed for {:?}", k),
            VerdictKind::Unknown => prop_assert!(false, "unknown: {:?}", w.reason),
        }
    }
    prop_assert_eq!(races, racy);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn verdicts_match_the_oracle(t in located_trace(18)) {
        exact_verdicts(&t, &verdicts(&t, 10_000))?;
    }

    /// With the SMT stage on slices (as `check` runs it): `race` exactly for the racy
    /// location pairs, `no race` for the others, no `unknown`, on traces of any length.
    #[test]
    fn verdicts_on_slices_match_the_oracle(t in located_trace(40)) {
        exact_verdicts(&t, &verdicts_on_slices(&t))?;
    }

    /// With windows smaller than the trace, absence is claimed only from the TRF order
    /// (never from the SMT stage), and never for a location pair the oracle finds racy.
    #[test]
    fn no_absence_claimed_from_windows(a in actions(18), threads in 2u32..4) {
        let t = from_actions(threads, 2, 2, &a);
        prop_assume!(t.len() > 4);
        let o = oracle::analyze(&t, &OracleConfig::default()).unwrap();
        let racy = racy_groups(&t, &o.predictable);
        let v = verdicts(&t, 4);
        for w in v.warnings.iter().filter(|w| w.verdict == VerdictKind::NoRace) {
            prop_assert!(w.by.starts_with("trf:"), "{}", w.by);
            prop_assert!(!racy.contains(&w.pair.group_key()));
        }
        prop_assert!(v.warnings.iter().filter(|w| w.verdict == VerdictKind::Unknown).all(|w| w.reason.is_some()));
    }
}
