//! `syncp` (sync-preserving races, Mathur et al. POPL'21) against the exact oracle and
//! against its own witnesses (SPEC §4):
//!
//! - its pairs are exactly the sync-preserving races, found by brute force below: a search
//!   over correct reorderings in which the executed acquires of each lock keep their trace
//!   order (Mathur et al., Def. 3.1); they contain the oracle's trace-specific pairs (whose
//!   reorderings also run each lock's critical sections as a prefix of the trace's) and lie
//!   within its predictable pairs (sound);
//! - every pair's witness cut replays, without trusting the analysis;
//! - `shbp`'s pairs are among `syncp`'s;
//! - the grouped report equals the full list grouped by location pair (first instances and
//!   counts), on traces with few locations so that groups hold many pairs.

mod common;

use proptest::prelude::*;
use racepred::analysis::{self, syncp::SyncP, AnalysisKind, AnalysisOptions};
use racepred::gen::from_actions;
use racepred::oracle::{analyze, OracleConfig, OracleResult};
use racepred::report::RaceReport;
use racepred::trace::std_format::StdReader;
use racepred::trace::values::ValueTrace;
use racepred::trace::{Event, Op, Trace};
use racepred::witness;
use std::collections::{BTreeSet, HashSet};

fn syncp(t: &Trace, all_pairs: bool) -> RaceReport {
    analysis::run_one(t, Box::new(SyncP::new(all_pairs, true)))
}

fn osr(t: &Trace, all_pairs: bool) -> RaceReport {
    analysis::run_one(t, Box::new(SyncP::osr(all_pairs, true)))
}

fn actions(max: usize, kinds: u8) -> impl Strategy<Value = Vec<(u8, u8, u8)>> {
    proptest::collection::vec((0u8..4, 0u8..kinds, 0u8..4), 0..max)
}

/// [`witnesses_replay`] as a property: a failure names the trace.
fn replays(t: &Trace, r: &RaceReport) -> Result<(), TestCaseError> {
    witnesses_replay(t, r).map_err(|e| TestCaseError::fail(format!("{e} on {:?}", t.events)))
}

/// The oracle's answer on `t`, once it has checked that every pair of `r` is a predictable
/// race of `t`.
fn sound(t: &Trace, r: &RaceReport) -> Result<OracleResult, TestCaseError> {
    let o = analyze(t, &OracleConfig::default()).unwrap();
    let p = r.pair_set();
    let extra: Vec<_> = p.difference(&o.predictable).collect();
    prop_assert!(extra.is_empty(), "unsound: {:?} on {:?}", extra, t.events);
    Ok(o)
}

/// A trace of `from_actions` on `actions(max, 12)` of 2 to 4 threads, 2 variables and 2
/// locks, with 1 to 4 of 4 locations ([`common::with_locs`]).
fn located_trace(max: usize) -> impl Strategy<Value = Trace> {
    let locs = proptest::collection::vec(0u8..4, 1..5);
    (actions(max, 12), 2u32..5, locs)
        .prop_map(|(a, threads, locs)| common::with_locs(&from_actions(threads, 2, 2, &a), &locs))
}

/// Every cut of `r` replays as a witness of its pair.
fn witnesses_replay(t: &Trace, r: &RaceReport) -> Result<(), String> {
    let vt = ValueTrace::from_trace(t.clone());
    let c = vt.concrete().map_err(|e| e.to_string())?;
    if r.cuts.len() != r.pairs.len() {
        return Err(format!("{} cuts for {} pairs", r.cuts.len(), r.pairs.len()));
    }
    for cut in &r.cuts {
        let w = witness::of_cut(t, cut);
        witness::replay(&vt, &c, &w)
            .map_err(|e| format!("pair ({}, {}): {e}", cut.first, cut.second))?;
    }
    Ok(())
}

/// The sync-preserving races of a small trace by exhaustive search: states are the
/// threads' positions and the last writer of each variable, volatile variable and
/// condition; an acquire runs only if no later acquire of its lock (in the trace) has run
/// and the lock is free (re-entrant acquires nest); a read, volatile read or wait only if
/// it sees what it saw in the trace; a fork's child acts after it; a join after every
/// event of the joined thread. At each state, conflicting next events of two started
/// threads are a race.
fn brute_sync_preserving(t: &Trace) -> BTreeSet<(u64, u64)> {
    let ev = &t.events;
    let nt = common::thread_count(t);
    let mut seq = vec![Vec::new(); nt];
    let mut fork_of = vec![None; nt];
    let mut src = vec![None; ev.len()];
    let mut last = std::collections::HashMap::new();
    let slot = |e: &Event| match e.op {
        Op::Read | Op::Write => Some((0u8, e.target)),
        Op::VolatileRead | Op::VolatileWrite => Some((1, e.target)),
        Op::Wait | Op::Signal => Some((2, e.target)),
        _ => None,
    };
    for (i, e) in ev.iter().enumerate() {
        seq[e.thread.index()].push(i);
        match e.op {
            Op::Fork => fork_of[e.target as usize] = Some(i),
            Op::Write | Op::VolatileWrite | Op::Signal => {
                last.insert(slot(e).unwrap(), i);
            }
            Op::Read | Op::VolatileRead | Op::Wait => src[i] = last.get(&slot(e).unwrap()).copied(),
            _ => {}
        }
    }
    let slots: Vec<(u8, u32)> = {
        let s: BTreeSet<_> = ev.iter().filter_map(slot).collect();
        s.into_iter().collect()
    };
    let mut races = BTreeSet::new();
    let mut seen = HashSet::new();
    // State: positions, last writer per slot (index + 1, 0 none).
    let mut stack = vec![(vec![0usize; nt], vec![0usize; slots.len()])];
    while let Some((pos, lw)) = stack.pop() {
        if !seen.insert((pos.clone(), lw.clone())) {
            continue;
        }
        let executed = |i: usize| {
            pos[ev[i].thread.index()]
                > seq[ev[i].thread.index()]
                    .iter()
                    .position(|&j| j == i)
                    .unwrap()
        };
        let started = |u: usize| fork_of[u].is_none_or(&executed);
        let next = |u: usize| seq[u].get(pos[u]).copied();
        for a in 0..nt {
            for b in a + 1..nt {
                if let (Some(i), Some(j)) = (next(a), next(b)) {
                    if started(a) && started(b) && ev[i].conflicts_with(&ev[j]) {
                        races.insert((i.min(j) as u64, i.max(j) as u64));
                    }
                }
            }
        }
        for u in 0..nt {
            let Some(i) = next(u) else { continue };
            if !started(u) {
                continue;
            }
            let e = &ev[i];
            let ok = match e.op {
                Op::Acquire => {
                    // Holders and re-entrance from the executed events.
                    let mut depth = std::collections::HashMap::<(usize, u32), i32>::new();
                    let mut later_ran = false;
                    for v in 0..nt {
                        for &k in &seq[v][..pos[v]] {
                            let f = &ev[k];
                            if f.target != e.target {
                                continue;
                            }
                            match f.op {
                                Op::Acquire => *depth.entry((v, f.target)).or_default() += 1,
                                Op::Release => *depth.entry((v, f.target)).or_default() -= 1,
                                _ => {}
                            }
                            if f.op == Op::Acquire && k > i {
                                later_ran = true;
                            }
                        }
                    }
                    let reentrant = depth.get(&(u, e.target)).copied().unwrap_or(0) > 0;
                    let held_by_other = (0..nt)
                        .any(|v| v != u && depth.get(&(v, e.target)).copied().unwrap_or(0) > 0);
                    reentrant || (!held_by_other && !later_ran)
                }
                Op::Read | Op::VolatileRead | Op::Wait => {
                    let s = slots.iter().position(|&x| Some(x) == slot(e)).unwrap();
                    lw[s] == src[i].map_or(0, |w| w + 1)
                }
                Op::Join => {
                    let c = e.target as usize;
                    c >= nt || (pos[c] == seq[c].len() && started(c))
                }
                _ => true,
            };
            if !ok {
                continue;
            }
            let mut p2 = pos.clone();
            p2[u] += 1;
            let mut lw2 = lw.clone();
            if matches!(e.op, Op::Write | Op::VolatileWrite | Op::Signal) {
                let s = slots.iter().position(|&x| Some(x) == slot(e)).unwrap();
                lw2[s] = i + 1;
            }
            stack.push((p2, lw2));
        }
    }
    races
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Exactly the sync-preserving races.
    #[test]
    fn pairs_are_the_sync_preserving_races(a in actions(18, 12), threads in 2u32..5) {
        let t = from_actions(threads, 2, 2, &a);
        let r = syncp(&t, true);
        prop_assert_eq!(r.pair_set(), brute_sync_preserving(&t), "trace {:?}", t.events);
        replays(&t, &r)?;
    }

    /// With volatiles, forks and joins: sound, and at least the trace-specific pairs.
    #[test]
    fn sound_with_volatiles(a in actions(22, 12), threads in 2u32..5) {
        let t = from_actions(threads, 2, 2, &a);
        let r = syncp(&t, true);
        let (o, p) = (sound(&t, &r)?, r.pair_set());
        prop_assert!(o.trace_specific.is_subset(&p), "missed: {:?}", o.trace_specific.difference(&p).collect::<Vec<_>>());
        replays(&t, &r)?;
    }

    /// OSR: sound (every pair predictable, every witness schedule replays) and contains the
    /// sync-preserving races.
    #[test]
    fn osr_sound_and_contains_syncp(a in actions(22, 12), threads in 2u32..5) {
        let t = from_actions(threads, 2, 2, &a);
        let r = osr(&t, true);
        sound(&t, &r)?;
        let (p, s) = (r.pair_set(), syncp(&t, true).pair_set());
        prop_assert!(s.is_subset(&p), "syncp only: {:?}", s.difference(&p).collect::<Vec<_>>());
        replays(&t, &r)?;
    }

    /// OSR's grouped report: the location groups of its full list (each group's first
    /// instance may differ: a later access of a group is only looked at when its own group
    /// has not yet counted it).
    #[test]
    fn osr_grouped_has_the_groups_of_all_pairs(t in located_trace(30)) {
        let all = osr(&t, true);
        let grouped = osr(&t, false);
        prop_assert_eq!(grouped.group_keys(), all.grouped().group_keys());
        prop_assert_eq!(&grouped.group_counts, &all.grouped().group_counts);
        replays(&t, &grouped)?;
    }

    /// `trf` is complete: every location group with a predictable pair is among its groups.
    #[test]
    fn trf_contains_every_predictable_group(t in located_trace(22)) {
        let o = analyze(&t, &OracleConfig::default()).unwrap();
        let r = analysis::run_one(&t, Box::new(SyncP::trf_candidates()));
        let groups = r.group_keys();
        for &(x, y) in &o.predictable {
            let (e, f) = (t.events[x as usize], t.events[y as usize]);
            let k = racepred::report::group_key_of(&e, &f);
            prop_assert!(groups.contains(&k), "missed {:?} of ({}, {}) on {:?}", k, x, y, t.events);
        }
    }

    /// SHB's pairs are sync-preserving races.
    #[test]
    fn contains_shbp(a in actions(30, 12), threads in 2u32..5) {
        let t = from_actions(threads, 3, 2, &a);
        let opts = AnalysisOptions::default();
        let shbp = analysis::run_one(&t, analysis::create(AnalysisKind::Shbp, &opts).unwrap());
        let p = syncp(&t, true).pair_set();
        prop_assert!(shbp.pair_set().is_subset(&p), "shbp only: {:?}", shbp.pair_set().difference(&p).collect::<Vec<_>>());
    }

    /// Grouped mode: the full list grouped, with the same first instances and counts; the
    /// racy events are the second events of the pairs.
    #[test]
    fn grouped_equals_all_pairs_grouped(t in located_trace(40)) {
        let all = syncp(&t, true);
        let grouped = syncp(&t, false);
        let want = all.grouped();
        prop_assert_eq!(grouped.pair_set(), want.pair_set());
        prop_assert_eq!(&grouped.group_counts, &want.group_counts);
        let seconds: std::collections::BTreeSet<u64> = all.pairs.iter().map(|p| p.second).collect();
        prop_assert_eq!(all.racy_set(), seconds);
        prop_assert_eq!(grouped.racy_total(), all.racy_events.len() as u64);
        replays(&t, &grouped)?;
    }
}

/// A race that needs a critical section reversed: `T1`'s write inside its critical section
/// and `T2`'s read after its own, later critical section are enabled together only if
/// `T2`'s critical section runs first. Not sync-preserving; OSR finds it, with a schedule
/// that replays.
#[test]
fn osr_reverses_a_critical_section() {
    let text = "T1|acq(l)|1\nT1|w(x)|2\nT1|rel(l)|3\nT2|acq(l)|4\nT2|rel(l)|5\nT2|r(x)|6\n";
    let t = Trace::read_from(&mut StdReader::new(text.as_bytes())).unwrap();
    let o = analyze(&t, &OracleConfig::default()).unwrap();
    assert!(o.predictable.contains(&(1, 5)));
    let s = syncp(&t, true);
    assert!(s.pair_set().is_empty());
    assert_eq!(s.pair_set(), brute_sync_preserving(&t));
    let r = osr(&t, true);
    assert_eq!(r.pair_set(), [(1, 5)].into_iter().collect());
    witnesses_replay(&t, &r).unwrap();
}

/// `T1`'s write inside its critical section and `T2`'s read inside its own race only if
/// `T2`'s critical section comes first, which reverses them: not sync-preserving (both
/// acquires inside force `T1`'s release, after the write). The write before the critical
/// section races with the read: `T1`'s critical section need not run at all.
#[test]
fn reversal_is_not_sync_preserving_skipping_is() {
    let text =
        "T1|w(x)|1\nT1|acq(l)|2\nT1|w(x)|3\nT1|rel(l)|4\nT2|acq(l)|5\nT2|r(x)|6\nT2|rel(l)|7\n";
    let t = Trace::read_from(&mut StdReader::new(text.as_bytes())).unwrap();
    let r = syncp(&t, true);
    assert_eq!(r.pair_set(), brute_sync_preserving(&t));
    // The oracle's trace-specific notion also runs T1's critical section first.
    let o = analyze(&t, &OracleConfig::default()).unwrap();
    assert!(o.trace_specific.is_empty());
    assert!(o.predictable.contains(&(0, 5)));
    assert_eq!(r.pair_set(), [(0, 5)].into_iter().collect());
}
