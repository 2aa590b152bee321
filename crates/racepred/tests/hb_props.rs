//! Property tests of the happens-before family against brute force: a vector clock per
//! event built from the explicit edges of HB (sshb Def. 3, plus fork/join, volatile and
//! condition edges as SPEC §1 defines them) and SHB (Def. 4: plus last write → read).
//!
//! - `hbp` = the HB-unordered conflicting pairs; streaming `hbp` ⊆ that;
//! - `shbp` = the SHB-unordered conflicting pairs plus the SHB WRD race pairs (w3po
//!   Def. 3.4); streaming `shbp` ⊆ that;
//! - `hb` / `shb` racy events = the second events of those pair sets;
//! - `fasttrack` ⊆ `hb`, with the same first racy event;
//! - every analysis gives the same report with tree clocks as with vector clocks.

mod common;

use std::collections::BTreeSet;

use proptest::prelude::*;
use racepred::analysis::{create, run_trace, AnalysisKind, AnalysisOptions, ClockKind};
use racepred::gen::{from_actions, GenConfig, Generator};
use racepred::report::text::to_text;
use racepred::report::RaceReport;
use racepred::trace::{Event, LocId, Op, Trace};

type Pairs = BTreeSet<(u64, u64)>;

/// Per-event clocks: `pre` (program order and synchronisation edges) and `post` (plus the
/// last-write edge when `wrd`). `own[i]` is event `i`'s position in its thread, from 1.
struct Brute {
    pre: Vec<Vec<u32>>,
    post: Vec<Vec<u32>>,
    own: Vec<u32>,
    last_write: Vec<Option<usize>>,
}

fn join(a: &mut [u32], b: &[u32]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

fn brute(t: &Trace, wrd: bool) -> Brute {
    let ev = &t.events;
    let n = common::thread_count(t);
    let mut b = Brute {
        pre: Vec::new(),
        post: Vec::new(),
        own: Vec::new(),
        last_write: Vec::new(),
    };
    let mut count = vec![0u32; n];
    for (i, e) in ev.iter().enumerate() {
        let a = e.thread.index();
        let mut c = vec![0u32; n];
        for j in 0..i {
            let f = &ev[j];
            let edge = f.thread == e.thread // program order
                || (f.op == Op::Fork && f.target == e.thread.0)
                // A joined thread ended after its events and after its fork (its start).
                || (e.op == Op::Join
                    && (f.thread.0 == e.target || (f.op == Op::Fork && f.target == e.target)))
                || (e.op == Op::Acquire && f.op == Op::Release && f.target == e.target)
                || (e.op == Op::VolatileRead && f.op == Op::VolatileWrite && f.target == e.target)
                || (e.op == Op::Wait
                    && f.op == Op::Signal
                    && f.target == e.target
                    && !ev[j + 1..i]
                        .iter()
                        .any(|g| g.op == Op::Signal && g.target == e.target));
            if edge {
                let pj = b.post[j].clone();
                join(&mut c, &pj);
            }
        }
        count[a] += 1;
        c[a] = count[a];
        let lw = if e.op == Op::Read {
            (0..i)
                .rev()
                .find(|&j| ev[j].op == Op::Write && ev[j].target == e.target)
        } else {
            None
        };
        let mut post = c.clone();
        if wrd {
            if let Some(j) = lw {
                let pj = b.post[j].clone();
                join(&mut post, &pj);
            }
        }
        b.pre.push(c);
        b.post.push(post);
        b.own.push(count[a]);
        b.last_write.push(lw);
    }
    b
}

/// The HB-unordered conflicting pairs.
fn hb_pairs(t: &Trace) -> Pairs {
    let b = brute(t, false);
    let mut out = Pairs::new();
    for (j, f) in t.events.iter().enumerate() {
        for (i, e) in t.events[..j].iter().enumerate() {
            if e.conflicts_with(f) && b.post[j][e.thread.index()] < b.own[i] {
                out.insert((i as u64, j as u64));
            }
        }
    }
    out
}

/// The SHB-unordered conflicting pairs and the SHB WRD race pairs.
fn shb_pairs(t: &Trace) -> Pairs {
    let b = brute(t, true);
    let mut out = Pairs::new();
    for (j, f) in t.events.iter().enumerate() {
        for (i, e) in t.events[..j].iter().enumerate() {
            if !e.conflicts_with(f) {
                continue;
            }
            let clock = if b.last_write[j] == Some(i) {
                &b.pre[j] // only the direct edge may be missing
            } else {
                &b.post[j]
            };
            if clock[e.thread.index()] < b.own[i] {
                out.insert((i as u64, j as u64));
            }
        }
    }
    out
}

fn seconds(p: &Pairs) -> BTreeSet<u64> {
    p.iter().map(|&(_, s)| s).collect()
}

const KINDS: [(AnalysisKind, bool); 7] = [
    (AnalysisKind::Hb, false),
    (AnalysisKind::FastTrack, false),
    (AnalysisKind::Hbp, false),
    (AnalysisKind::Hbp, true),
    (AnalysisKind::Shb, false),
    (AnalysisKind::Shbp, false),
    (AnalysisKind::Shbp, true),
];

/// All analyses in one pass, with the given clock kind.
fn run_all(t: &Trace, clock: ClockKind) -> Vec<RaceReport> {
    let mut analyses: Vec<_> = KINDS
        .iter()
        .map(|&(k, streaming)| {
            let opts = AnalysisOptions {
                clock,
                streaming,
                ..Default::default()
            };
            create(k, &opts).expect("analysis exists")
        })
        .collect();
    run_trace(t, &mut analyses)
}

/// Turns the second volatile variable into a condition: `vw` → `sig`, `vr` → `wait`.
fn with_conditions(t: &Trace, vars: u32) -> Trace {
    let events = t
        .events
        .iter()
        .map(|e| match e.op {
            Op::VolatileWrite if e.target == vars + 1 => Event::new(e.thread, Op::Signal, 0, e.loc),
            Op::VolatileRead if e.target == vars + 1 => Event::new(e.thread, Op::Wait, 0, e.loc),
            _ => *e,
        })
        .collect();
    Trace::from_events(events)
}

fn check_trace(t: &Trace) -> Result<(), TestCaseError> {
    let v = run_all(t, ClockKind::Vector);
    let tc = run_all(t, ClockKind::Tree);
    for (a, b) in v.iter().zip(&tc) {
        prop_assert_eq!(a.pair_set(), b.pair_set(), "{} tree ≠ vector", a.analysis);
        prop_assert_eq!(a.racy_set(), b.racy_set(), "{} tree ≠ vector", a.analysis);
    }
    let [hb, ft, hbp, hbp_s, shb, shbp, shbp_s] = &v[..] else {
        unreachable!()
    };
    let want_hb = hb_pairs(t);
    let want_shb = shb_pairs(t);
    prop_assert_eq!(
        hbp.pair_set(),
        want_hb.clone(),
        "hbp ≠ brute-force HB pairs"
    );
    prop_assert!(hbp_s.pair_set().is_subset(&want_hb), "streaming hbp ⊄ hbp");
    prop_assert_eq!(
        hb.racy_set(),
        seconds(&want_hb),
        "hb ≠ second events of HB pairs"
    );
    prop_assert!(ft.racy_set().is_subset(&hb.racy_set()), "fasttrack ⊄ hb");
    let (ft_set, hb_set) = (ft.racy_set(), hb.racy_set());
    prop_assert_eq!(
        ft_set.first(),
        hb_set.first(),
        "fasttrack's first racy event differs from hb's"
    );
    prop_assert_eq!(
        shbp.pair_set(),
        want_shb.clone(),
        "shbp ≠ brute-force SHB pairs"
    );
    prop_assert!(
        shbp_s.pair_set().is_subset(&want_shb),
        "streaming shbp ⊄ shbp"
    );
    prop_assert_eq!(
        shb.racy_set(),
        seconds(&want_shb),
        "shb ≠ second events of SHB pairs"
    );
    // SHB orders more than HB, and a WRD race pair is HB-unordered: SHB pairs ⊆ HB pairs.
    for p in &want_shb {
        prop_assert!(want_hb.contains(p), "SHB pair {:?} not an HB pair", p);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn hb_family_matches_brute_force(
        threads in 2u32..5, vars in 1u32..4, locks in 1u32..3, acts in common::actions(24)
    ) {
        let t = from_actions(threads, vars, locks, &acts);
        check_trace(&t)?;
    }

    #[test]
    fn hb_family_with_conditions_matches_brute_force(
        threads in 2u32..5, vars in 1u32..3, acts in common::actions(24)
    ) {
        let t = with_conditions(&from_actions(threads, vars, 1, &acts), vars);
        check_trace(&t)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Up to 24 threads, appearing in any order: Djit+'s table of clocks widens (4, 8, 16
    /// components) and moves to one clock per variable past 16 threads, with clocks already
    /// in it.
    #[test]
    fn hb_family_with_many_threads_matches_brute_force(
        threads in 5u32..25,
        vars in 1u32..4,
        acts in prop::collection::vec((0u8..24, 0u8..12, 0u8..4), 0..40),
    ) {
        let t = from_actions(threads, vars, 2, &acts);
        check_trace(&t)?;
    }
}

/// Larger generated traces (many threads, hand-over-hand locking, volatiles): tree clocks
/// agree with vector clocks, FastTrack with Djit+, and the pair analyses with each other.
#[test]
fn generated_traces_tree_equals_vector() {
    for (seed, threads) in [(1u64, 8u32), (2, 64), (3, 200)] {
        let t = Generator::trace(GenConfig {
            events: 6000,
            threads,
            vars: 40,
            locks: 6,
            sync: 0.3,
            volatile: 0.05,
            seed,
            ..GenConfig::default()
        });
        let v = run_all(&t, ClockKind::Vector);
        let tc = run_all(&t, ClockKind::Tree);
        for (a, b) in v.iter().zip(&tc) {
            assert_eq!(a.pair_set(), b.pair_set(), "{} seed {seed}", a.analysis);
            assert_eq!(a.racy_set(), b.racy_set(), "{} seed {seed}", a.analysis);
        }
        assert_eq!(v[0].racy_set(), seconds(&v[2].pair_set()));
        assert!(v[1].racy_set().is_subset(&v[0].racy_set()));
        assert_eq!(v[4].racy_set(), seconds(&v[5].pair_set()));
        assert!(v[3].pair_set().is_subset(&v[2].pair_set()));
    }
}

#[test]
fn streaming_is_noted() {
    let t = from_actions(2, 1, 1, &[(0, 4, 0), (0, 4, 0), (1, 4, 0)]);
    let r = run_all(&t, ClockKind::Vector);
    assert!(r[3].notes.iter().any(|n| n.starts_with("streaming")));
    assert!(r[2].notes.iter().any(|n| n.starts_with("complete")));
    assert!(r[3].pair_set().len() < r[2].pair_set().len());
}

/// `t` with its accesses' locations folded onto `locs` locations (by position), so that
/// racy events of different threads and variables share locations.
fn fold_locations(t: &Trace, locs: u32) -> Trace {
    let events = t
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| match e.op {
            Op::Read | Op::Write => Event::new(e.thread, e.op, e.target, LocId(i as u32 % locs)),
            _ => *e,
        })
        .collect();
    Trace::from_events(events)
}

/// The racy-event analyses' grouped report (the CLI's default) against their exhaustive
/// one grouped by location: the same first racy event of each (location, operation), the
/// same counts, the same text.
fn check_grouped_racy(t: &Trace) -> Result<(), TestCaseError> {
    for kind in [
        AnalysisKind::Hb,
        AnalysisKind::FastTrack,
        AnalysisKind::Shb,
        AnalysisKind::Wcp,
    ] {
        let run = |group_racy| {
            let opts = AnalysisOptions {
                group_racy,
                ..AnalysisOptions::default()
            };
            run_trace(t, &mut [create(kind, &opts).unwrap()]).remove(0)
        };
        let (all, grouped) = (run(false), run(true));
        prop_assert!(!all.racy_grouped());
        prop_assert_eq!(grouped.racy_grouped(), !all.racy_events.is_empty());
        let want = all.racy_grouped_report();
        prop_assert_eq!(&grouped.racy_events, &want.racy_events, "{:?}", kind);
        prop_assert_eq!(&grouped.racy_counts, &want.racy_counts, "{:?}", kind);
        prop_assert_eq!(grouped.racy_total(), all.racy_events.len() as u64);
        prop_assert_eq!(
            to_text(&grouped, "t", &t.names),
            to_text(&all, "t", &t.names),
            "{:?}",
            kind
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn grouped_racy_events_equal_exhaustive_grouped(
        threads in 2u32..5, vars in 1u32..4, locks in 1u32..3, locs in 1u32..5,
        acts in common::actions(24)
    ) {
        check_grouped_racy(&fold_locations(&from_actions(threads, vars, locks, &acts), locs))?;
    }

    #[test]
    fn grouped_racy_events_equal_exhaustive_grouped_on_generated_traces(
        seed in 0u64..1_000_000, threads in 2u32..9, locs in 1u32..20,
    ) {
        let t = Generator::trace(GenConfig {
            events: 400,
            threads,
            vars: 6,
            locks: 3,
            locs,
            seed,
            ..GenConfig::default()
        });
        check_grouped_racy(&t)?;
    }
}
