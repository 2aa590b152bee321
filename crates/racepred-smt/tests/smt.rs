//! The SMT predictor against the papers' examples and the exact oracle.
//!
//! - RECIPE Fig. 1 (`tests/traces/recipe_fig1.std`): race 2–5 by `recipe`, not `mcm`;
//!   race 2–7 only by `recipe-alt`; Fig. 6 (`recipe_fig6_bbuffer.std`): race 294–400 by
//!   `recipe`, not `mcm`;
//! - on random plain traces in one window, `mcm` pairs = the oracle's predictable pairs
//!   (sound and complete), `shbp` ⊆ `mcm`, and every witness replays on its own;
//! - `mcm` ⊆ `recipe` ⊆ `recipe-alt` on every trace.

use std::collections::BTreeSet;
use std::path::Path;

use proptest::prelude::*;
use racepred::analysis::{create, run_one, AnalysisKind, AnalysisOptions};
use racepred::gen::from_actions;
use racepred::oracle::{self, OracleConfig, OracleNotion};
use racepred::trace::values::{self, ValueTrace};
use racepred::trace::Trace;
use racepred::witness;
use racepred_smt::{predict, Outcome, SmtConfig, SmtKind};

fn run(vt: &ValueTrace, kind: SmtKind, all_pairs: bool) -> Outcome {
    let mut cfg = SmtConfig::new(kind);
    cfg.all_pairs = all_pairs;
    let out = predict(vt, &cfg, |_| {}).unwrap();
    assert_eq!(
        out.counts.timeout, 0,
        "no query may time out on a small trace"
    );
    assert_eq!(out.counts.replay_failed, 0, "every model must replay");
    // Every witness replays on its own, through its file form.
    let concrete = vt.concrete().unwrap();
    for r in &out.races {
        let text = witness::render(vt, &r.witness, "test");
        let w = witness::parse(vt, &text).unwrap();
        witness::replay(vt, &concrete, &w).unwrap_or_else(|e| panic!("{e}\n{text}"));
    }
    out
}

fn pairs(out: &Outcome) -> BTreeSet<(u64, u64)> {
    out.races.iter().map(|r| r.witness.race).collect()
}

fn fig1() -> ValueTrace {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/traces/recipe_fig1.std");
    ValueTrace::parse(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn recipe_fig1() {
    let vt = fig1();
    let mcm = pairs(&run(&vt, SmtKind::Mcm, true));
    let recipe = pairs(&run(&vt, SmtKind::Recipe, true));
    let alt = pairs(&run(&vt, SmtKind::RecipeAlt, true));
    // Line 2 is event 5, line 5 event 9, line 7 the alternative event 10.
    assert!(!mcm.contains(&(5, 9)), "mcm: {mcm:?}");
    assert!(recipe.contains(&(5, 9)), "recipe: {recipe:?}");
    assert!(!recipe.contains(&(5, 10)), "recipe: {recipe:?}");
    assert!(alt.contains(&(5, 10)), "recipe-alt: {alt:?}");
    assert!(mcm.is_subset(&recipe) && recipe.is_subset(&alt));
    // The writes of y race with the read of y in every model (the racing read is not run).
    for p in [(4, 7), (6, 7)] {
        assert!(mcm.contains(&p), "mcm: {mcm:?}");
    }
}

/// RECIPE §VII-B, Fig. 6 (bbuffer): the race 294-400 needs the branch at 291 to read another
/// value than the one it saw (`tests/traces/recipe_fig6_bbuffer.std`).
#[test]
fn recipe_fig6_bbuffer() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/traces/recipe_fig6_bbuffer.std");
    let vt = ValueTrace::parse(&std::fs::read(path).unwrap()).unwrap();
    let mcm = pairs(&run(&vt, SmtKind::Mcm, true));
    let recipe = pairs(&run(&vt, SmtKind::Recipe, true));
    assert_eq!(mcm, BTreeSet::from([(3, 4)]));
    assert_eq!(recipe, BTreeSet::from([(3, 4), (3, 6)]));
}

/// The papers' plain example traces: `mcm` equals the oracle's predictable pairs.
#[test]
fn paper_traces_equal_the_oracle() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/traces");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "std") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let vt = ValueTrace::parse(&bytes).unwrap();
        if vt.has_values() {
            continue;
        }
        let Ok(exact) = oracle::analyze(&vt.trace, &OracleConfig::default()) else {
            continue; // ill-formed on purpose (sshb Fig. 1c) or too large
        };
        let mcm = pairs(&run(&vt, SmtKind::Mcm, true));
        assert_eq!(
            &mcm,
            exact.pairs(OracleNotion::Predictable),
            "{}",
            path.display()
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} traces checked");
}

fn actions(max: usize) -> impl Strategy<Value = Vec<(u8, u8, u8)>> {
    prop::collection::vec((any::<u8>(), any::<u8>(), any::<u8>()), 0..max)
}

fn check_plain(t: Trace) -> Result<(), TestCaseError> {
    let exact = oracle::analyze(&t, &OracleConfig::default()).unwrap();
    let shbp = run_one(
        &t,
        create(AnalysisKind::Shbp, &AnalysisOptions::default()).unwrap(),
    )
    .pair_set();
    let vt = ValueTrace::from_trace(t);
    let mcm = pairs(&run(&vt, SmtKind::Mcm, true));
    prop_assert_eq!(&mcm, exact.pairs(OracleNotion::Predictable));
    prop_assert!(shbp.is_subset(&mcm), "shbp {:?} ⊄ mcm {:?}", shbp, mcm);
    // Without values, RECIPE is the maximal model.
    let recipe = pairs(&run(&vt, SmtKind::Recipe, true));
    prop_assert_eq!(&recipe, &mcm);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn mcm_equals_the_oracle(a in actions(18), threads in 2u32..5) {
        check_plain(from_actions(threads, 2, 2, &a))?;
    }
}

/// Windows: a window of a few events finds a subset of the one-window answer, every race
/// with a witness that replays from the window's fixed start.
#[test]
fn windows_find_a_subset() {
    let mut runner = proptest::test_runner::TestRunner::default();
    runner
        .run(
            &(actions(24), 2u32..4, 3usize..8),
            |(a, threads, window)| {
                let t = from_actions(threads, 2, 2, &a);
                let vt = ValueTrace::from_trace(t);
                let whole = pairs(&run(&vt, SmtKind::Mcm, true));
                let mut cfg = SmtConfig::new(SmtKind::Mcm);
                cfg.all_pairs = true;
                cfg.window = window;
                let out = predict(&vt, &cfg, |_| {}).unwrap();
                prop_assert_eq!(out.counts.replay_failed, 0);
                let concrete = vt.concrete().unwrap();
                for r in &out.races {
                    witness::replay(&vt, &concrete, &r.witness).unwrap();
                }
                prop_assert!(pairs(&out).is_subset(&whole));
                Ok(())
            },
        )
        .unwrap();
}

/// A spent budget stops the run before the next window, and the report says how many
/// windows it did not look at.
#[test]
fn a_spent_budget_stops_before_the_next_window() {
    let vt = fig1();
    let mut cfg = SmtConfig::new(SmtKind::Mcm);
    cfg.window = 3;
    cfg.budget = Some(std::time::Duration::ZERO);
    let out = predict(&vt, &cfg, |_| {}).unwrap();
    assert!(out.out_of_budget);
    assert_eq!(out.counts.windows, 0);
    assert_eq!(
        out.counts.windows_unexamined as usize,
        vt.trace.len().div_ceil(3)
    );
    assert!(out.races.is_empty());
    let r = racepred_smt::report(&vt, &cfg, &out);
    assert!(
        r.notes.iter().any(|n| n.contains("not looked at")),
        "{:?}",
        r.notes
    );
}

/// Random programs (`racepred::program`): on their value traces every witness replays,
/// `mcm` ⊆ `recipe` ⊆ `recipe-alt`, and every `recipe-alt` race is a race of the program
/// (its exhaustive explorer over all schedules).
#[test]
fn programs_relaxed_races_are_program_races() {
    use racepred::program::{Program, ProgramConfig};
    let mut checked = 0;
    let mut gained = (0usize, 0usize);
    let (mut found_locs, mut truth_total) = (0usize, 0usize);
    for seed in 0..150u64 {
        let cfg = ProgramConfig {
            workers: 2 + (seed % 2) as u32,
            statements: 3 + (seed % 4) as u32,
            ..ProgramConfig::default()
        };
        let p = Program::random(cfg, seed);
        let Some(vt) = p.run(seed * 7 + 1) else {
            continue;
        };
        let Some(truth) = p.races(2_000_000) else {
            continue;
        };
        let mcm = pairs(&run(&vt, SmtKind::Mcm, true));
        let recipe = pairs(&run(&vt, SmtKind::Recipe, true));
        let alt = pairs(&run(&vt, SmtKind::RecipeAlt, true));
        assert!(
            mcm.is_subset(&recipe),
            "seed {seed}: mcm {mcm:?} ⊄ recipe {recipe:?}"
        );
        assert!(
            recipe.is_subset(&alt),
            "seed {seed}: recipe {recipe:?} ⊄ alt {alt:?}"
        );
        gained.0 += recipe.len() - mcm.len();
        gained.1 += alt.len() - recipe.len();
        truth_total += truth.len();
        let mut locs_found = BTreeSet::new();
        for &(e, f) in &alt {
            let loc = |n: u64| {
                values::event_of(&vt, values::resolve(&vt, n).unwrap())
                    .0
                    .loc
                    .0
            };
            let (a, b) = (loc(e), loc(f));
            locs_found.insert((a.min(b), a.max(b)));
            assert!(
                truth.contains(&(a.min(b), a.max(b))),
                "seed {seed}: race ({e}, {f}) at locations {a}, {b} is not a race of the program {truth:?}\n{p:?}"
            );
        }
        found_locs += locs_found.len();
        checked += 1;
    }
    eprintln!(
        "{checked} programs: recipe found {} pairs more than mcm, recipe-alt {} more than recipe; \
         {} of the programs' {} racing location pairs found by recipe-alt",
        gained.0, gained.1, found_locs, truth_total
    );
    assert!(checked >= 100, "only {checked} programs checked");
    // The relaxations must find something the maximal model does not, on some program.
    assert!(
        gained.0 > 0 && gained.1 > 0,
        "recipe gained {}, recipe-alt {}",
        gained.0,
        gained.1
    );
}
