//! Property and statistical tests of PACER (`analysis::pacer`).
//!
//! References written here, naive on purpose:
//! - `ref_fasttrack`: FastTrack as the PACER paper gives it (Alg. 7–8, read map cleared at
//!   writes) with plain vector clocks for every synchronisation object;
//! - `djit`: per-event vector clocks and the racy-event convention (an access is racy if it
//!   conflicts with an earlier access unordered by happens-before).
//!
//! Tests that need the project's FastTrack (`AnalysisKind::FastTrack` from the registry)
//! panic with "FastTrack not merged yet" until the `hb` branch is merged.

mod common;

use std::collections::BTreeSet;

use proptest::prelude::*;
use racepred::analysis::pacer::{Detector, PacerConfig};
use racepred::analysis::{create, run_trace, AnalysisKind, AnalysisOptions};
use racepred::clock::VectorClock;
use racepred::experiments::pacer_trials::{self, ExperimentConfig};
use racepred::gen::{from_actions, GenConfig, Generator};
use racepred::report::RaceReport;
use racepred::trace::{Event, Op, ThreadId, Trace};

// ---------------------------------------------------------------------------------------
// References

type Entry = (u32, u32, u64); // thread, clock, index

#[derive(Clone, Default)]
enum Reads {
    #[default]
    Empty,
    One(Entry),
    Map(Vec<Entry>),
}

struct Sync {
    threads: Vec<VectorClock>,
    locks: Vec<VectorClock>,
    vols: Vec<VectorClock>,
    conds: Vec<VectorClock>,
}

fn vc_at(v: &mut Vec<VectorClock>, i: u32) -> &mut VectorClock {
    let i = i as usize;
    if v.len() <= i {
        v.resize(i + 1, VectorClock::new());
    }
    &mut v[i]
}

impl Sync {
    fn new(trace: &Trace) -> Sync {
        let n = trace
            .events
            .iter()
            .map(|e| {
                e.thread
                    .0
                    .max(if e.op.target_kind() == racepred::trace::NameKind::Thread {
                        e.target
                    } else {
                        0
                    })
            })
            .max()
            .unwrap_or(0)
            + 1;
        let threads = (0..n)
            .map(|t| {
                let mut c = VectorClock::new();
                c.set(ThreadId(t), 1);
                c
            })
            .collect();
        Sync {
            threads,
            locks: vec![],
            vols: vec![],
            conds: vec![],
        }
    }

    /// Incoming edges of `e` (before it).
    fn before(&mut self, e: &Event) {
        let t = e.thread.0 as usize;
        let src = match e.op {
            Op::Acquire => vc_at(&mut self.locks, e.target).clone(),
            Op::VolatileRead => vc_at(&mut self.vols, e.target).clone(),
            Op::Wait => vc_at(&mut self.conds, e.target).clone(),
            Op::Join => self.threads[e.target as usize].clone(),
            _ => return,
        };
        self.threads[t].join(&src);
    }

    /// Outgoing edges of `e` (after it); returns true if FastTrack increments `C_t[t]`.
    fn after(&mut self, e: &Event) -> bool {
        let t = e.thread.0 as usize;
        let c = self.threads[t].clone();
        match e.op {
            Op::Release => vc_at(&mut self.locks, e.target).copy_from(&c),
            Op::Signal => vc_at(&mut self.conds, e.target).copy_from(&c),
            Op::VolatileWrite => vc_at(&mut self.vols, e.target).join(&c),
            Op::Fork => {
                let u = e.target as usize;
                self.threads[u].join(&c);
                self.threads[u].increment(ThreadId(u as u32));
            }
            _ => return false,
        }
        true
    }
}

/// FastTrack (Alg. 7–8). Returns (racy events, pairs).
fn ref_fasttrack(trace: &Trace) -> (BTreeSet<u64>, BTreeSet<(u64, u64)>) {
    let (r, p, _) = ref_fasttrack_aliases(trace);
    (r, p)
}

/// FastTrack, also returning for each access the earlier access whose entry its
/// same-epoch fast path kept instead (accesses of one thread in one epoch are
/// interchangeable as the first access of a race).
#[allow(clippy::type_complexity)]
fn ref_fasttrack_aliases(trace: &Trace) -> (BTreeSet<u64>, BTreeSet<(u64, u64)>, Vec<(u64, u64)>) {
    let (r, p, a, _) = ref_fasttrack_full(trace);
    (r, p, a)
}

/// FastTrack with aliases and each event's epoch (`C_t(t)` of its thread).
#[allow(clippy::type_complexity)]
fn ref_fasttrack_full(
    trace: &Trace,
) -> (
    BTreeSet<u64>,
    BTreeSet<(u64, u64)>,
    Vec<(u64, u64)>,
    Vec<u32>,
) {
    let mut aliases = Vec::new();
    let mut epochs = Vec::new();
    let mut s = Sync::new(trace);
    let nv = trace.events.iter().map(|e| e.target).max().unwrap_or(0) as usize + 1;
    let mut w: Vec<Option<Entry>> = vec![None; nv];
    let mut r: Vec<Reads> = vec![Reads::Empty; nv];
    let (mut racy, mut pairs) = (BTreeSet::new(), BTreeSet::new());
    for (i, e) in trace.events.iter().enumerate() {
        let i = i as u64;
        let t = e.thread.0;
        s.before(e);
        let ct = &s.threads[t as usize];
        let now = ct.get(e.thread);
        epochs.push(now);
        let ord = |x: &Entry| x.1 <= ct.get(ThreadId(x.0));
        let x = e.target as usize;
        match e.op {
            Op::Read => {
                if let Reads::One(o) = r[x] {
                    if o.0 == t && o.1 == now {
                        aliases.push((o.2, i));
                        continue;
                    }
                }
                // [READ SHARED SAME EPOCH] (Flanagan and Freund, PLDI 2009).
                if let Reads::Map(v) = &r[x] {
                    if let Some(o) = v.iter().find(|o| o.0 == t && o.1 == now) {
                        aliases.push((o.2, i));
                        continue;
                    }
                }
                if let Some(wx) = w[x] {
                    if !ord(&wx) {
                        racy.insert(i);
                        pairs.insert((wx.2, i));
                    }
                }
                let cur = (t, now, i);
                r[x] = match std::mem::take(&mut r[x]) {
                    Reads::Empty => Reads::One(cur),
                    Reads::One(o) if ord(&o) => Reads::One(cur),
                    Reads::One(o) => Reads::Map(vec![o, cur]),
                    Reads::Map(mut v) => {
                        v.retain(|o| o.0 != t);
                        v.push(cur);
                        Reads::Map(v)
                    }
                };
            }
            Op::Write => {
                if let Some(o) = w[x] {
                    if o.0 == t && o.1 == now {
                        aliases.push((o.2, i));
                        continue;
                    }
                }
                let mut earlier: Vec<Entry> = w[x].into_iter().collect();
                match &r[x] {
                    Reads::Empty => {}
                    Reads::One(o) => earlier.push(*o),
                    Reads::Map(v) => earlier.extend(v.iter().copied()),
                }
                for o in earlier {
                    if !ord(&o) {
                        racy.insert(i);
                        pairs.insert((o.2, i));
                    }
                }
                r[x] = Reads::Empty;
                w[x] = Some((t, now, i));
            }
            _ => {
                if s.after(e) {
                    s.threads[t as usize].increment(e.thread);
                }
            }
        }
    }
    (racy, pairs, aliases, epochs)
}

/// Accesses before `b` interchangeable with `f` as the first access of a race: same thread,
/// variable, kind and FastTrack epoch (they have the same happens-before successors in
/// other threads, and FastTrack keeps whichever its bookkeeping kept).
fn class_before(trace: &Trace, epochs: &[u32], f: u64, b: u64) -> Vec<u64> {
    class(trace, epochs, f, b, false)
}

/// Like `class_before`, keeping only the accesses with no access to the variable by another
/// thread between them and `f` (FastTrack's entry for `f` then certainly stands for them).
fn class_narrow(trace: &Trace, epochs: &[u32], f: u64, b: u64) -> Vec<u64> {
    class(trace, epochs, f, b, true)
}

fn class(trace: &Trace, epochs: &[u32], f: u64, b: u64, narrow: bool) -> Vec<u64> {
    let ef = trace.events[f as usize];
    (0..b)
        .filter(|&j| {
            let e = trace.events[j as usize];
            e.thread == ef.thread
                && e.op == ef.op
                && e.target == ef.target
                && epochs[j as usize] == epochs[f as usize]
                && (!narrow
                    || (j.min(f)..=j.max(f)).all(|i| {
                        let o = trace.events[i as usize];
                        o.thread == ef.thread || !o.is_access() || o.target != ef.target
                    }))
        })
        .collect()
}

/// Per-event clocks: `hb(a, b)` for a < b.
struct Hb {
    clocks: Vec<VectorClock>,
    threads: Vec<u32>,
}

impl Hb {
    fn new(trace: &Trace) -> Hb {
        let mut s = Sync::new(trace);
        let mut clocks = Vec::new();
        for e in &trace.events {
            s.before(e);
            clocks.push(s.threads[e.thread.0 as usize].clone());
            s.after(e);
            s.threads[e.thread.0 as usize].increment(e.thread);
        }
        Hb {
            clocks,
            threads: trace.events.iter().map(|e| e.thread.0).collect(),
        }
    }
    fn hb(&self, a: u64, b: u64) -> bool {
        let ta = ThreadId(self.threads[a as usize]);
        self.clocks[a as usize].get(ta) <= self.clocks[b as usize].get(ta)
    }
}

/// Djit+ racy events: conflicts with an earlier access unordered by HB.
fn djit(trace: &Trace) -> BTreeSet<u64> {
    let hb = Hb::new(trace);
    let ev = &trace.events;
    (0..ev.len())
        .filter(|&b| (0..b).any(|a| ev[a].conflicts_with(&ev[b]) && !hb.hb(a as u64, b as u64)))
        .map(|b| b as u64)
        .collect()
}

/// The first racy event of FastTrack on each variable.
fn first_race_per_variable(trace: &Trace, ft_racy: &BTreeSet<u64>) -> Vec<u64> {
    let mut seen = BTreeSet::new();
    ft_racy
        .iter()
        .copied()
        .filter(|&b| seen.insert(trace.events[b as usize].target))
        .collect()
}

fn run_pacer(trace: &Trace, rate: f64, period: u64, seed: u64) -> Detector {
    let mut d = Detector::new(&PacerConfig {
        rate,
        period,
        seed,
        pairs: true,
    });
    // Half the runs go event by event (the online API), half in blocks as the drivers feed
    // them (`on_events`; the block size varies with the seed).
    if seed.is_multiple_of(2) {
        for (i, e) in trace.events.iter().enumerate() {
            d.on_event(i as u64, e);
        }
    } else {
        let block = 1 + (seed / 2 % 9) as usize;
        for (k, chunk) in trace.events.chunks(block).enumerate() {
            d.on_events((k * block) as u64, chunk);
        }
    }
    d
}

fn racy(d: &Detector) -> BTreeSet<u64> {
    d.racy_events().iter().map(|e| e.index).collect()
}

fn pairs(d: &Detector) -> BTreeSet<(u64, u64)> {
    d.pairs().iter().map(|p| (p.first, p.second)).collect()
}

fn sampled(d: &Detector, i: u64) -> bool {
    d.sampled_ranges().iter().any(|&(s, e)| s <= i && i < e)
}

/// The project's FastTrack, from the registry.
fn registry_fasttrack(trace: &Trace) -> RaceReport {
    let ft = create(AnalysisKind::FastTrack, &AnalysisOptions::default())
        .expect("FastTrack not merged yet");
    run_trace(trace, &mut [ft]).remove(0)
}

/// A FastTrack race (f, b) with a single earlier access f, some access of whose FastTrack
/// entry (`class_narrow`) was sampled, that PACER does not report; over the first race on
/// each variable only with `first_only`.
fn missed_entry_race(
    tr: &Trace,
    rate: f64,
    period: u64,
    seed: u64,
    first_only: bool,
) -> Option<(u64, u64)> {
    let (ft_racy, ft_pairs, _, epochs) = ref_fasttrack_full(tr);
    let d = run_pacer(tr, rate, period, seed);
    let got = racy(&d);
    let bs: Vec<u64> = if first_only {
        first_race_per_variable(tr, &ft_racy)
    } else {
        ft_racy.iter().copied().collect()
    };
    bs.into_iter().find_map(|b| {
        let firsts: Vec<u64> = ft_pairs.iter().filter(|p| p.1 == b).map(|p| p.0).collect();
        let sampled_entry = firsts.len() == 1
            && class_narrow(tr, &epochs, firsts[0], b)
                .iter()
                .any(|&j| sampled(&d, j));
        (sampled_entry && !got.contains(&b)).then(|| (firsts[0], b))
    })
}

// ---------------------------------------------------------------------------------------
// Properties

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// At rate 1 PACER is FastTrack: same racy events, same pairs.
    #[test]
    fn rate_one_is_fasttrack(a in common::actions(40), threads in 2u32..5, period in 1u64..6, seed: u64) {
        let tr = from_actions(threads, 3, 2, &a);
        let (ft_racy, ft_pairs) = ref_fasttrack(&tr);
        let d = run_pacer(&tr, 1.0, period, seed);
        prop_assert_eq!(racy(&d), ft_racy);
        prop_assert_eq!(pairs(&d), ft_pairs);
    }

    /// At rate 0 PACER reports nothing and keeps no metadata work.
    #[test]
    fn rate_zero_reports_nothing(a in common::actions(40), threads in 2u32..5, seed: u64) {
        let tr = from_actions(threads, 3, 2, &a);
        let d = run_pacer(&tr, 0.0, 1, seed);
        prop_assert!(d.racy_events().is_empty());
        let c = d.counters();
        prop_assert_eq!(c.non_sampling.slow_reads + c.non_sampling.slow_writes, 0);
        prop_assert_eq!(c.sampling.ops, 0);
    }

    /// Every pair PACER reports is a real race (conflicting, unordered by HB), its first
    /// access was sampled, and every racy event is a Djit+ racy event.
    #[test]
    fn reports_are_true_races(a in common::actions(40), threads in 2u32..5, rate in 0.0f64..1.0,
                              period in 1u64..6, seed: u64) {
        let tr = from_actions(threads, 3, 2, &a);
        let d = run_pacer(&tr, rate, period, seed);
        let hb = Hb::new(&tr);
        for p in d.pairs() {
            prop_assert!(tr.events[p.first as usize].conflicts_with(&tr.events[p.second as usize]));
            prop_assert!(!hb.hb(p.first, p.second), "pair {:?} is ordered", (p.first, p.second));
            prop_assert!(sampled(&d, p.first), "first access {} not sampled", p.first);
        }
        let dj = djit(&tr);
        prop_assert!(racy(&d).is_subset(&dj));
        prop_assert_eq!(racy(&d), d.pairs().iter().map(|p| p.second).collect::<BTreeSet<_>>());
    }

    /// Every racy event PACER reports is one FastTrack reports, or an access FastTrack
    /// skipped by a same-epoch fast path (a repeat of an access of the same thread and epoch
    /// that FastTrack keeps instead); and it is always a Djit+ racy event (checked above).
    #[test]
    fn pacer_races_are_fasttrack_races_or_skipped_repeats(a in common::actions(40), threads in 2u32..5,
            rate in 0.0f64..1.0, period in 1u64..6, seed: u64) {
        let tr = from_actions(threads, 3, 2, &a);
        let (ft_racy, _, aliases) = ref_fasttrack_aliases(&tr);
        let skipped: BTreeSet<u64> = aliases.iter().map(|&(_, j)| j).collect();
        let d = run_pacer(&tr, rate, period, seed);
        for b in racy(&d) {
            prop_assert!(ft_racy.contains(&b) || skipped.contains(&b),
                         "pacer reports {} ft {:?}", b, ft_racy);
        }
    }

    /// Theorem 2 (statistical soundness: every *sampled shortest race* is reported), on
    /// the first FastTrack race on each variable (before it FastTrack's state for the
    /// variable is exact). FastTrack keeps one entry for a run of accesses of the same kind,
    /// thread, variable and FastTrack epoch; of such a run the race with `b` is shortest
    /// (§1: no intervening racy access) only for the last access before `b`, so that is the
    /// one that must have been sampled.
    #[test]
    fn first_sampled_shortest_race_per_variable_is_reported(a in common::actions(40), threads in 2u32..5,
                                            rate in 0.0f64..1.0, period in 1u64..6, seed: u64) {
        let tr = from_actions(threads, 3, 2, &a);
        let (ft_racy, ft_pairs, _, epochs) = ref_fasttrack_full(&tr);
        let d = run_pacer(&tr, rate, period, seed);
        let got = racy(&d);
        for b in first_race_per_variable(&tr, &ft_racy) {
            let firsts: Vec<u64> = ft_pairs.iter().filter(|p| p.1 == b).map(|p| p.0).collect();
            if firsts.len() != 1 {
                continue;
            }
            let last = *class_before(&tr, &epochs, firsts[0], b).last().expect("f is in it");
            if sampled(&d, last) {
                prop_assert!(got.contains(&b), "shortest race ({}, {}) with sampled first access \
                             missed (FastTrack's pair: ({}, {}))", last, b, firsts[0], b);
            }
        }
    }

    /// The reference FastTrack itself: racy events ⊆ Djit+'s, same first one.
    #[test]
    fn reference_fasttrack_is_sane(a in common::actions(40), threads in 2u32..5) {
        let tr = from_actions(threads, 3, 2, &a);
        let (ft, _) = ref_fasttrack(&tr);
        let dj = djit(&tr);
        prop_assert!(ft.is_subset(&dj));
        prop_assert_eq!(ft.iter().next(), dj.iter().next());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Stronger than the paper's Theorem 2, and no longer promised: the first FastTrack
    /// race on each variable is reported if *any* access of FastTrack's entry (a run of
    /// accesses of the same kind, thread, variable and FastTrack epoch with no access of
    /// another thread in between, `class_narrow`) was sampled, not only the last one. PACER
    /// kept a sampled access while unsampled repeats of it followed in the same FastTrack
    /// epoch, so this held; but then a read-shared variable sampled once is looked at on
    /// every later access until its readers synchronise, which on the JavaGrande traces
    /// (raytracer, montecarlo) made PACER at r = 0.01 cost as much as FastTrack. An
    /// unsampled repeat now replaces the sampled access, as one of a later epoch would:
    /// the race with the replaced access is not a shortest race (§1, Def. 5), so Theorem 2
    /// and the detection rate r per race are kept (tests above).
    #[test]
    #[ignore = "stronger than Theorem 2; given up for proportional cost, see the doc comment"]
    fn first_fasttrack_race_with_any_sampled_access_of_its_entry_is_reported(a in common::actions(40),
            threads in 2u32..5, rate in 0.0f64..1.0, period in 1u64..6, seed: u64) {
        let tr = from_actions(threads, 3, 2, &a);
        let missed = missed_entry_race(&tr, rate, period, seed, true);
        prop_assert!(missed.is_none(), "race {:?} with sampled first access missed", missed);
    }

    /// Every FastTrack race whose only earlier access was sampled is reported. Fails after a
    /// first race on the variable: FastTrack's same-epoch fast paths then depend on the
    /// shape of its read map, which depends on unsampled reads PACER does not see; PACER
    /// takes the conservative side (check rather than skip) where it can tell, but
    /// proptest still finds rare traces (e.g. 40-event traces with a repeated racy read)
    /// where PACER skips a repeat that FastTrack reports. (An earlier access
    /// stands for the accesses of the same kind, thread, variable and epoch with no access of
    /// another thread to the variable in between: see `class_narrow`.)
    #[test]
    #[ignore = "fails after a first race on the variable; see the doc comment"]
    fn sampled_fasttrack_races_are_reported(a in common::actions(40), threads in 2u32..5,
                                            rate in 0.0f64..1.0, period in 1u64..6, seed: u64) {
        let tr = from_actions(threads, 3, 2, &a);
        let missed = missed_entry_race(&tr, rate, period, seed, false);
        prop_assert!(missed.is_none(), "race {:?} with sampled first access missed", missed);
    }

}

/// The paper's claim (§3.3) taken literally for racy events: "PACER reports a race if and
/// only if the first access is sampled and FASTTRACK would report it". It fails after a
/// first race, through FastTrack's same-epoch fast paths, which depend on accesses PACER
/// does not record. Minimal counterexample (from proptest), threads T0, T1:
///
/// ```text
/// 0 T1|w(V0)   1 T0|r(V0)   2 T0|r(V0)   3 T1|w(V0)
/// ```
///
/// with 0–2 sampled and 3 not: both report 1 (races with the write); FastTrack skips 3 (its
/// write epoch is 0's, the same as 3's), while PACER, outside a sampling period, no longer
/// trusts that epoch (an unsampled write replaces a sampled one: see the module docs on
/// shortest races) and reports 3's race with the sampled read 2. Keeping FastTrack's exact
/// state would need the unsampled accesses PACER avoids looking at. Every such extra report
/// is still a true (Djit+) race and an access FastTrack skipped by a fast path (tested
/// above).
#[test]
#[ignore = "paper claim fails for racy events after a first race; see the doc comment"]
fn pacer_races_are_fasttrack_races_strict() {
    let tr = from_actions(2, 3, 2, &[(1, 4, 0), (0, 0, 0), (0, 0, 0), (1, 4, 0)]);
    let (ft_racy, _) = ref_fasttrack(&tr);
    // Find a seed that samples 0-2 and not 3 with period 1.
    for seed in 0..10_000 {
        let d = run_pacer(&tr, 0.5, 1, seed);
        if (0..3).all(|i| sampled(&d, i)) && !sampled(&d, 3) {
            assert!(
                racy(&d).is_subset(&ft_racy),
                "pacer {:?} ft {:?}",
                racy(&d),
                ft_racy
            );
            return;
        }
    }
    panic!("no seed samples 0-2 but not 3");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Against the project's FastTrack (fails until branch `hb` is merged).
    #[test]
    fn rate_one_is_registry_fasttrack(a in common::actions(40), threads in 2u32..5, seed: u64) {
        let tr = from_actions(threads, 3, 2, &a);
        let ft = registry_fasttrack(&tr);
        let d = run_pacer(&tr, 1.0, 1, seed);
        prop_assert_eq!(racy(&d), ft.racy_set());
    }

    /// The reference here and the project's FastTrack agree, so every property above holds
    /// for the latter (fails until branch `hb` is merged).
    #[test]
    fn registry_fasttrack_is_the_reference(a in common::actions(40), threads in 2u32..5) {
        let tr = from_actions(threads, 3, 2, &a);
        let ft = registry_fasttrack(&tr);
        prop_assert_eq!(ft.racy_set(), ref_fasttrack(&tr).0);
    }

    /// Against the project's FastTrack (fails until branch `hb` is merged).
    #[test]
    fn pacer_races_are_registry_fasttrack_races(a in common::actions(40), threads in 2u32..5,
                                                 rate in 0.0f64..1.0, period in 1u64..6,
                                                 seed: u64) {
        let tr = from_actions(threads, 3, 2, &a);
        let ft = registry_fasttrack(&tr).racy_set();
        let skipped: BTreeSet<u64> = ref_fasttrack_aliases(&tr).2.iter().map(|&(_, j)| j).collect();
        let d = run_pacer(&tr, rate, period, seed);
        for b in racy(&d) {
            prop_assert!(ft.contains(&b) || skipped.contains(&b));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Statistics

/// ln C(n, k).
fn ln_choose(n: u64, k: u64) -> f64 {
    (1..=k).map(|i| ((n - k + i) as f64 / i as f64).ln()).sum()
}

/// Two-sided exact binomial test: probability, under Bin(n, p), of an outcome at most as
/// likely as `k` (the usual "sum of small probabilities" p-value).
fn binomial_p_value(n: u64, k: u64, p: f64) -> f64 {
    let pmf =
        |j: u64| (ln_choose(n, j) + j as f64 * p.ln() + (n - j) as f64 * (1.0 - p).ln()).exp();
    let pk = pmf(k) * (1.0 + 1e-9);
    (0..=n).map(pmf).filter(|&q| q <= pk).sum::<f64>().min(1.0)
}

/// Statistical test of proportionality. For the first FastTrack race on each variable whose
/// racy event has a single earlier access (a single access of that thread, kind, variable
/// and epoch before it: see `class_before`), the number of trials, out of `N` independent
/// ones (fresh seeds), in which PACER reports that race pair is Binomial(N, r) if the
/// paper's claim holds (a race is reported iff its earlier access is sampled). The racy
/// event alone may be found more often: PACER sometimes keeps an earlier access FastTrack
/// replaced by a later one it happens before, and reports the race through it. Test used: exact two-sided
/// binomial test per race (p-value = total probability of outcomes no more likely than the
/// observed count) at level 0.01/m, Bonferroni over the m races tested, so family-wise
/// level 1%. Deterministic (fixed seeds). The pooled detection rate of all FastTrack races
/// is printed for information (it is at least `r`: later races on a variable may also be
/// found through other sampled accesses).
#[test]
fn detection_frequency_is_the_rate() {
    let mut tested = 0;
    for (gseed, rate, period, trials) in [
        (1u64, 0.25, 1u64, 400u32),
        (2, 0.1, 7, 600),
        (3, 0.5, 25, 300),
    ] {
        let tr = Generator::trace(GenConfig {
            events: 4000,
            threads: 4,
            vars: 300,
            locks: 3,
            sync: 0.15,
            volatile: 0.02,
            seed: gseed,
            ..GenConfig::default()
        });
        let (ft_racy, ft_pairs, aliases, epochs) = ref_fasttrack_full(&tr);
        let skipped: BTreeSet<u64> = aliases.iter().map(|&(_, j)| j).collect();
        // (earlier access, racy event) of the races tested.
        let races: Vec<(u64, u64)> = first_race_per_variable(&tr, &ft_racy)
            .into_iter()
            .filter_map(|b| {
                let firsts: Vec<u64> = ft_pairs.iter().filter(|p| p.1 == b).map(|p| p.0).collect();
                (firsts.len() == 1 && class_before(&tr, &epochs, firsts[0], b).len() == 1)
                    .then(|| (firsts[0], b))
            })
            .collect();
        assert!(
            races.len() >= 20,
            "trace {gseed} has only {} testable races",
            races.len()
        );
        let mut counts = vec![0u64; races.len()];
        let (mut outside, mut all_found) = (0, 0u64);
        for trial in 0..trials {
            let d = run_pacer(
                &tr,
                rate,
                period,
                pacer_trials::trial_seed(gseed, 0, trial as u64),
            );
            let got = racy(&d);
            let got_pairs = pairs(&d);
            outside += got
                .difference(&ft_racy)
                .filter(|b| !skipped.contains(b))
                .count();
            all_found += got.intersection(&ft_racy).count() as u64;
            for (c, p) in counts.iter_mut().zip(&races) {
                *c += got_pairs.contains(p) as u64;
            }
        }
        assert_eq!(
            outside, 0,
            "reported races FastTrack neither has nor skipped"
        );
        let m = races.len() as f64;
        let alpha = 0.01 / m;
        let n = trials as u64;
        let mut worst = (1.0f64, 0u64);
        for (&k, &(_, b)) in counts.iter().zip(&races) {
            let pv = binomial_p_value(n, k, rate);
            if pv < worst.0 {
                worst = (pv, b);
            }
            assert!(
                pv >= alpha,
                "race at {b}: found {k}/{n} times at rate {rate} (p = {pv:.2e} < {alpha:.1e})"
            );
        }
        tested += races.len();
        let pooled = counts.iter().sum::<u64>() as f64 / (n as f64 * m);
        let pooled_all = all_found as f64 / (n as f64 * ft_racy.len() as f64);
        eprintln!("rate {rate} period {period}: {} races tested, detection {pooled:.3}, smallest p {:.3} (race {}); all {} FastTrack races: {pooled_all:.3}",
                  races.len(), worst.0, worst.1, ft_racy.len());
    }
    assert!(tested >= 60);
}

/// The experiment's figures on a small trace: detection grows with the rate and is 1 at
/// rate 1; nothing outside the baseline.
#[test]
fn experiment_against_reference() {
    let tr = Generator::trace(GenConfig {
        events: 2000,
        threads: 3,
        vars: 30,
        seed: 9,
        ..GenConfig::default()
    });
    let (ft_racy, ft_pairs) = ref_fasttrack(&tr);
    let mut base = RaceReport::new("fasttrack", racepred::report::ReportKind::RacyEvents);
    for &b in &ft_racy {
        base.racy_events.push(racepred::report::RacyEvent {
            index: b,
            event: tr.events[b as usize],
        });
    }
    for &(a, b) in &ft_pairs {
        base.pairs.push(racepred::report::RacePair::new(
            a,
            tr.events[a as usize],
            b,
            tr.events[b as usize],
        ));
    }
    let exp = pacer_trials::experiment(
        &tr,
        &base,
        &ExperimentConfig {
            rates: vec![0.0, 0.1, 0.5, 1.0],
            trials: 60,
            seed: 4,
            period: 5,
        },
    );
    assert!(!exp.dynamic_races.is_empty());
    let p = &exp.points;
    assert_eq!(p[0].dynamic_detection, 0.0);
    assert!(p[1].dynamic_detection < p[2].dynamic_detection);
    assert_eq!(p[3].dynamic_detection, 1.0);
    assert_eq!(p[3].distinct_detection, 1.0);
    // Outside the baseline: only repeats FastTrack skipped (see the strict test below).
    assert_eq!(p[3].outside_baseline, 0);
    assert!((p[2].effective_rate_mean - 0.5).abs() < 0.1);
    assert!(exp.summary_csv().lines().count() == 5);
    assert!(exp.to_json().contains("\"per_distinct\""));
}
