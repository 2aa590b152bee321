//! Property tests of RDIT (`analysis::rdit`) and the elision harness (`experiments::elide`).
//!
//! - with no barrier pair, `rdit` = `hb` (racy events) and the pair version = `hbp`, with
//!   vector and tree clocks;
//! - on a trace elided from a complete one (random windows, lock critical sections, or
//!   both), every RDIT pair, mapped back through `original_index`, is an HB pair of the
//!   complete trace (no false positive), and likewise every racy event; conservative mode
//!   reports a subset of normal mode, which reports a subset of plain HB on the same trace;
//! - plain HB on the elided traces does report false pairs on some traces (counted);
//! - the shape of the paper's Table 1 on generated traces (printed by `table1_shape`).

mod common;

use std::collections::BTreeSet;

use proptest::prelude::*;
use racepred::analysis::rdit::{rdit, rdit_pairs, RditConfig};
use racepred::analysis::{create, run_trace, Analysis, AnalysisKind, AnalysisOptions};
use racepred::clock::{TreeClock, VectorClock};
use racepred::experiments::elide::{elide, ElideConfig, Elided, SYNTHETIC};
use racepred::gen::{from_actions, GenConfig, Generator};
use racepred::trace::std_format::StdReader;
use racepred::trace::validate::is_well_formed;
use racepred::trace::{AddrId, Event, LocId, Op, Trace};
use rand::{Rng, SeedableRng};

type Pairs = BTreeSet<(u64, u64)>;

fn pairs_of(a: Box<dyn Analysis>, t: &Trace) -> Pairs {
    run_trace(t, &mut [a]).remove(0).pair_set()
}

fn racy_of(a: Box<dyn Analysis>, t: &Trace) -> BTreeSet<u64> {
    run_trace(t, &mut [a]).remove(0).racy_set()
}

fn hbp() -> Box<dyn Analysis> {
    create(AnalysisKind::Hbp, &AnalysisOptions::default()).unwrap()
}

fn hb() -> Box<dyn Analysis> {
    create(AnalysisKind::Hb, &AnalysisOptions::default()).unwrap()
}

fn cfg(conservative: bool) -> RditConfig {
    RditConfig {
        conservative,
        ..RditConfig::default()
    }
}

fn map_pairs(e: &Elided, p: &Pairs) -> Pairs {
    p.iter()
        .map(|&(a, b)| {
            let (x, y) = (e.original_index[a as usize], e.original_index[b as usize]);
            assert!(
                x != SYNTHETIC && y != SYNTHETIC,
                "a barrier event in a race"
            );
            (x, y)
        })
        .collect()
}

fn map_events(e: &Elided, s: &BTreeSet<u64>) -> BTreeSet<u64> {
    s.iter().map(|&i| e.original_index[i as usize]).collect()
}

/// Wraps runs of each thread's events in calls `mbegin(lib;Pk)` … `mend(lib)`: `spans`
/// gives, per call, (thread, first event of the thread, length, address).
fn with_calls(t: &Trace, spans: &[(u8, u8, u8, u8)]) -> Trace {
    let threads = t.num_threads().max(1);
    let mut per: Vec<Vec<usize>> = vec![Vec::new(); threads];
    for (i, e) in t.events.iter().enumerate() {
        per[e.thread.index()].push(i);
    }
    // Per event: calls opening before it / closing after it (one per thread position).
    let mut open = vec![None; t.len()];
    let mut close = vec![0u32; t.len()];
    let mut used = vec![false; t.len()];
    for &(th, first, len, addr) in spans {
        let evs = &per[th as usize % threads];
        if evs.is_empty() {
            continue;
        }
        let a = first as usize % evs.len();
        let b = (a + len as usize % 8).min(evs.len() - 1);
        // Calls of one thread do not overlap (keeps them nested trivially).
        if (a..=b).any(|k| used[evs[k]]) {
            continue;
        }
        (a..=b).for_each(|k| used[evs[k]] = true);
        open[evs[a]] = Some(addr % 3);
        close[evs[b]] += 1;
    }
    let mut names = t.names.clone();
    let lib = names.methods.intern(b"lib");
    let addrs: Vec<u32> = (0..3)
        .map(|k| names.addrs.intern(format!("P{k}").as_bytes()))
        .collect();
    let mut events = Vec::new();
    let mut sets = Vec::new();
    for (i, e) in t.events.iter().enumerate() {
        if let Some(a) = open[i] {
            sets.push((events.len(), AddrId(addrs[a as usize])));
            events.push(Event::new(e.thread, Op::MethodBegin, lib, LocId::NONE));
        }
        events.push(*e);
        for _ in 0..close[i] {
            events.push(Event::new(e.thread, Op::MethodEnd, lib, LocId::NONE));
        }
    }
    let mut out = Trace::new();
    out.events = events;
    out.names = names;
    for (i, a) in sets {
        out.set_addresses(i, &[a]);
    }
    out
}

/// Elides `t` by `mode`: 0 windows, 1 locks, 2 both.
fn elide_by(t: &Trace, mode: u8, fraction: f64, seed: u64, lock_mask: u8) -> Elided {
    let locks: Vec<String> = t
        .names
        .locks
        .iter()
        .enumerate()
        .filter(|(i, _)| lock_mask >> (i % 8) & 1 == 1)
        .map(|(_, n)| n.to_string())
        .collect();
    let c = ElideConfig {
        fraction: if mode == 1 { 0.0 } else { fraction },
        seed,
        max_window: 1 + (seed % 6) as usize,
        locks: if mode == 0 { Vec::new() } else { locks },
        methods: if t.names.methods.iter().any(|m| m == "lib") {
            vec!["lib".into()]
        } else {
            Vec::new()
        },
    };
    elide(t, &c).unwrap()
}

/// Checks the no-false-positive properties on one complete trace and elision; returns
/// (false pairs of plain HB on the elided trace, RDIT pairs, HB pairs on elided).
fn check(t: &Trace, e: &Elided) -> Result<(usize, usize, usize), TestCaseError> {
    prop_assert!(is_well_formed(&e.trace));
    let complete = pairs_of(hbp(), t);
    let r = pairs_of(Box::new(rdit_pairs::<VectorClock>(&cfg(false))), &e.trace);
    let rc = pairs_of(Box::new(rdit_pairs::<VectorClock>(&cfg(true))), &e.trace);
    let h = pairs_of(hbp(), &e.trace);
    let mapped = map_pairs(e, &r);
    let extra: Vec<_> = mapped.difference(&complete).collect();
    prop_assert!(
        extra.is_empty(),
        "RDIT pairs {:?} are not HB pairs of the complete trace",
        extra
    );
    prop_assert!(rc.is_subset(&r), "conservative {:?} ⊄ normal {:?}", rc, r);
    prop_assert!(r.is_subset(&h), "rdit {:?} ⊄ hb {:?}", r, h);
    // Racy events, and the tree-clock build.
    let complete_racy = racy_of(hb(), t);
    let rr = racy_of(Box::new(rdit::<VectorClock>(&cfg(false))), &e.trace);
    prop_assert!(map_events(e, &rr).is_subset(&complete_racy));
    let rt = racy_of(Box::new(rdit::<TreeClock>(&cfg(false))), &e.trace);
    prop_assert_eq!(&rr, &rt);
    let fp = map_pairs(e, &h).difference(&complete).count();
    Ok((fp, r.len(), h.len()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn without_barrier_pairs_rdit_is_hb(acts in common::actions(40), threads in 2u32..5) {
        let t = from_actions(threads, 3, 2, &acts);
        prop_assert_eq!(
            racy_of(Box::new(rdit::<VectorClock>(&cfg(false))), &t),
            racy_of(hb(), &t)
        );
        prop_assert_eq!(
            racy_of(Box::new(rdit::<TreeClock>(&cfg(true))), &t),
            racy_of(hb(), &t)
        );
        prop_assert_eq!(
            pairs_of(Box::new(rdit_pairs::<VectorClock>(&cfg(false))), &t),
            pairs_of(hbp(), &t)
        );
    }

    #[test]
    fn elided_rdit_has_no_false_positive(
        acts in common::actions(40),
        threads in 2u32..5,
        mode in 0u8..3,
        fraction in 0.0f64..0.6,
        seed in 0u64..1000,
        lock_mask in 0u8..8,
    ) {
        let t = from_actions(threads, 3, 3, &acts);
        let e = elide_by(&t, mode, fraction, seed, lock_mask);
        check(&t, &e)?;
    }

    /// Complete traces with calls (`mbegin`/`mend` of `lib`) whose recorded events are
    /// removed: long calls overlap other threads' regions and relay between addresses.
    #[test]
    fn elided_calls_rdit_has_no_false_positive(
        acts in common::actions(40),
        threads in 2u32..5,
        spans in prop::collection::vec((0u8..4, 0u8..40, 0u8..8, 0u8..3), 0..5),
        mode in 0u8..3,
        fraction in 0.0f64..0.4,
        seed in 0u64..1000,
        lock_mask in 0u8..8,
    ) {
        let t = with_calls(&from_actions(threads, 3, 3, &acts), &spans);
        prop_assert!(is_well_formed(&t));
        let e = elide_by(&t, mode, fraction, seed, lock_mask);
        check(&t, &e)?;
    }
}

/// A call of T2 on `P` spans T1's region on `L` (begun after the call) and T3's on `M`
/// (ended before it): the call's missing code may take `L` after T1 released it and
/// release `M` before T3 takes it, so T1's write is ordered before T3's read. Without the
/// relay through live calls (each boundary exchanging only with the pair's own addresses)
/// RDIT reports that pair, a false positive.
#[test]
fn relay_through_a_live_call() {
    let src = "T1|w(x)|1\nT2|mbegin(lib;P)|2\nT1|acq(L)|3\nT1|rel(L)|4\nT2|acq(L)|5\n\
               T2|rel(L)|6\nT2|acq(M)|7\nT2|rel(M)|8\nT3|acq(M)|9\nT3|rel(M)|10\n\
               T2|mend(lib)|11\nT3|r(x)|12\n";
    let t = Trace::read_from(&mut StdReader::new(src.as_bytes())).unwrap();
    assert!(pairs_of(hbp(), &t).is_empty());
    let e = elide(&t, &ElideConfig::methods(&["lib"])).unwrap();
    assert_eq!(e.regions.len(), 3);
    assert_eq!(pairs_of(hbp(), &e.trace).len(), 1);
    check(&t, &e).unwrap();
    assert!(pairs_of(Box::new(rdit_pairs::<VectorClock>(&cfg(false))), &e.trace).is_empty());
}

/// Thousands of seeded random traces: RDIT never reports a false pair, plain HB on the
/// same elided traces does on some (the count is printed).
#[test]
fn plain_hb_has_false_positives_rdit_none() {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
    let (mut traces, mut hb_fp_traces, mut hb_fp, mut rdit_pairs_n, mut hb_pairs_n) =
        (0, 0, 0, 0, 0);
    for i in 0..4000u64 {
        let n = rng.gen_range(4..40);
        let acts: Vec<(u8, u8, u8)> = (0..n)
            .map(|_| {
                (
                    rng.gen_range(0..4),
                    rng.gen_range(0..12),
                    rng.gen_range(0..4),
                )
            })
            .collect();
        let t = from_actions(rng.gen_range(2..5), 3, 3, &acts);
        let e = elide_by(
            &t,
            (i % 3) as u8,
            rng.gen_range(0.05..0.6),
            i,
            rng.gen_range(0..8),
        );
        let (fp, r, h) = check(&t, &e).unwrap_or_else(|err| panic!("trace {i}: {err}"));
        traces += 1;
        hb_fp += fp;
        hb_fp_traces += (fp > 0) as usize;
        rdit_pairs_n += r;
        hb_pairs_n += h;
    }
    println!(
        "{traces} elided traces: plain HB reported {hb_pairs_n} pairs, {hb_fp} of them false \
         (on {hb_fp_traces} traces); RDIT reported {rdit_pairs_n} pairs, 0 false"
    );
    assert!(hb_fp_traces > 0);
}

/// The shape of Table 1: races of HB and RDIT as more of a trace is elided, against the
/// complete trace's HB races. Pairs are counted on the events that survive elision.
#[test]
fn table1_shape() {
    let t = Generator::trace(GenConfig {
        events: 4000,
        threads: 6,
        vars: 60,
        locks: 6,
        sync: 0.2,
        volatile: 0.02,
        seed: 11,
        ..GenConfig::default()
    });
    let complete = pairs_of(hbp(), &t);
    println!(
        "{:>8} {:>8} {:>10} {:>8} {:>8} {:>8} {:>8} {:>10} {:>9}",
        "fraction", "regions", "complete", "HB", "HB-FP", "RDIT", "RDIT-FP", "RDIT-cons", "removed"
    );
    for fraction in [0.0, 0.02, 0.05, 0.1, 0.2, 0.3] {
        let e = elide(
            &t,
            &ElideConfig {
                fraction,
                seed: 3,
                max_window: 4,
                ..ElideConfig::default()
            },
        )
        .unwrap();
        let surviving: BTreeSet<u64> = e
            .original_index
            .iter()
            .copied()
            .filter(|&i| i != SYNTHETIC)
            .collect();
        let c = complete
            .iter()
            .filter(|(a, b)| surviving.contains(a) && surviving.contains(b))
            .count();
        let h = map_pairs(&e, &pairs_of(hbp(), &e.trace));
        let r = map_pairs(
            &e,
            &pairs_of(Box::new(rdit_pairs::<VectorClock>(&cfg(false))), &e.trace),
        );
        let rc = pairs_of(Box::new(rdit_pairs::<VectorClock>(&cfg(true))), &e.trace);
        let hfp = h.difference(&complete).count();
        let rfp = r.difference(&complete).count();
        println!(
            "{fraction:>8} {:>8} {c:>10} {:>8} {hfp:>8} {:>8} {rfp:>8} {:>10} {:>9}",
            e.regions.len(),
            h.len(),
            r.len(),
            rc.len(),
            e.removed()
        );
        assert_eq!(rfp, 0);
        if fraction == 0.0 {
            assert_eq!(r, h);
            assert_eq!(h.len(), complete.len());
        }
    }
}
