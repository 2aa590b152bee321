//! SSHB against brute force: HB from the explicit edges of Def. 3 (plus fork/join, vw→vr,
//! sig→wait), WRD candidates straight from Def. 6, and every ∃SHB instance (Def. 8)
//! enumerated. Reads without an HB-earlier write may also read the initial value (the
//! paper's initial writes, Def. 9).

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use racepred::analysis::sshb::{diagnose_trace, Diagnosis, SshbConfig};
use racepred::experiments::perturb::perturb_with_map;
use racepred::gen::{from_actions, GenConfig, Generator};
use racepred::report::Verdict;
use racepred::trace::{Event, Op, Trace};

/// Direct HB edges of a trace (their transitive closure is HB).
fn hb_edges(t: &Trace) -> Vec<(usize, usize)> {
    let ev = &t.events;
    let n = ev.len();
    let mut edges = Vec::new();
    for b in 0..n {
        // Program order: previous event of the thread.
        if let Some(a) = (0..b).rev().find(|&a| ev[a].thread == ev[b].thread) {
            edges.push((a, b));
        }
        let e = &ev[b];
        // The latest earlier event `op` on `e`'s target.
        let latest = |op: Op| {
            (0..b)
                .rev()
                .find(|&a| ev[a].op == op && ev[a].target == e.target)
        };
        match e.op {
            Op::Acquire => edges.extend(latest(Op::Release).map(|a| (a, b))),
            Op::VolatileRead => {
                for (a, w) in ev[..b].iter().enumerate() {
                    if w.op == Op::VolatileWrite && w.target == e.target {
                        edges.push((a, b));
                    }
                }
            }
            Op::Wait => edges.extend(latest(Op::Signal).map(|a| (a, b))),
            Op::Fork => {
                if let Some(c) = (b + 1..n).find(|&c| ev[c].thread.0 == e.target) {
                    edges.push((b, c));
                }
            }
            Op::Join => {
                if let Some(c) = (0..b).rev().find(|&c| ev[c].thread.0 == e.target) {
                    edges.push((c, b));
                }
                // A forked thread that never acted still orders its fork before its join.
                if let Some(f) = (0..b).find(|&f| ev[f].op == Op::Fork && ev[f].target == e.target)
                {
                    edges.push((f, b));
                }
            }
            _ => {}
        }
    }
    edges
}

/// `reach[a]` = bit set of nodes reachable from `a` by one or more edges.
fn closure(n: usize, edges: &[(usize, usize)]) -> Vec<u64> {
    let mut reach = vec![0u64; n];
    loop {
        let mut changed = false;
        for &(a, b) in edges {
            let new = reach[a] | (1 << b) | reach[b];
            if new != reach[a] {
                reach[a] = new;
                changed = true;
            }
        }
        if !changed {
            return reach;
        }
    }
}

struct Model {
    n: usize,
    edges: Vec<(usize, usize)>,
    hb: Vec<u64>,
    /// HB race pairs (a < b).
    races: Vec<(usize, usize)>,
    /// Per read: (read, W1, W2) by Def. 6.
    wrd: Vec<(usize, Vec<usize>, Vec<usize>)>,
}

impl Model {
    fn new(t: &Trace) -> Model {
        let n = t.len();
        assert!(n <= 64);
        let edges = hb_edges(t);
        let hb = closure(n, &edges);
        let lt = |a: usize, b: usize| hb[a] >> b & 1 == 1;
        let ev = &t.events;
        let mut races = Vec::new();
        for b in 0..n {
            for a in 0..b {
                if ev[a].conflicts_with(&ev[b]) && !lt(a, b) {
                    races.push((a, b));
                }
            }
        }
        races.sort_unstable();
        let mut wrd = Vec::new();
        for r in 0..n {
            if !ev[r].is_read() {
                continue;
            }
            let writes: Vec<usize> = (0..n)
                .filter(|&w| ev[w].is_write() && ev[w].target == ev[r].target)
                .collect();
            let conc = |w: usize| !lt(w, r) && !lt(r, w);
            let w1: Vec<usize> = writes
                .iter()
                .copied()
                .filter(|&w| conc(w) && !writes.iter().any(|&k| k != w && conc(k) && lt(w, k)))
                .collect();
            let w2: Vec<usize> = writes
                .iter()
                .copied()
                .filter(|&w| lt(w, r) && !writes.iter().any(|&k| k != w && lt(k, r) && lt(w, k)))
                .collect();
            wrd.push((r, w1, w2));
        }
        Model {
            n,
            edges,
            hb,
            races,
            wrd,
        }
    }

    fn choices(&self) -> Vec<Vec<Option<usize>>> {
        self.wrd
            .iter()
            .map(|(_, w1, w2)| {
                let mut c: Vec<Option<usize>> =
                    w1.iter().chain(w2.iter()).map(|&w| Some(w)).collect();
                if w2.is_empty() {
                    c.push(None);
                }
                c
            })
            .collect()
    }

    fn instance_count(&self) -> usize {
        self.choices()
            .iter()
            .map(|c| c.len())
            .fold(1usize, |a, b| a.saturating_mul(b))
    }

    /// Calls `f(edges of the instance)` for every choice that is a partial order.
    fn for_each_instance(&self, mut f: impl FnMut(&[(usize, usize)], &[u64])) {
        let choices = self.choices();
        let mut idx = vec![0usize; choices.len()];
        loop {
            let mut edges = self.edges.clone();
            for (k, (r, _, _)) in self.wrd.iter().enumerate() {
                if let Some(w) = choices[k][idx[k]] {
                    edges.push((w, *r));
                }
            }
            let reach = closure(self.n, &edges);
            if (0..self.n).all(|v| reach[v] >> v & 1 == 0) {
                f(&edges, &reach);
            }
            // Next combination.
            let mut k = 0;
            loop {
                if k == idx.len() {
                    return;
                }
                idx[k] += 1;
                if idx[k] < choices[k].len() {
                    break;
                }
                idx[k] = 0;
                k += 1;
            }
        }
    }

    /// Is the pair ordered in the instance (without the direct edge between them)?
    fn ordered(&self, edges: &[(usize, usize)], reach: &[u64], a: usize, b: usize) -> bool {
        let direct = edges.contains(&(a, b)) && !self.hb_edge(a, b)
            || edges.contains(&(b, a)) && !self.hb_edge(b, a);
        if !direct {
            return reach[a] >> b & 1 == 1 || reach[b] >> a & 1 == 1;
        }
        let e: Vec<(usize, usize)> = edges
            .iter()
            .copied()
            .filter(|&(x, y)| !((x, y) == (a, b) || (x, y) == (b, a)) || self.hb_edge(x, y))
            .collect();
        let r = closure(self.n, &e);
        r[a] >> b & 1 == 1 || r[b] >> a & 1 == 1
    }

    fn hb_edge(&self, a: usize, b: usize) -> bool {
        self.edges.contains(&(a, b))
    }
}

fn verdicts(d: &Diagnosis) -> Vec<(usize, usize, Verdict)> {
    d.report
        .pairs
        .iter()
        .map(|p| (p.first as usize, p.second as usize, p.verdict.unwrap()))
        .collect()
}

/// Checks one trace; returns the maybe pairs no instance orders (Prop. 6 failures).
fn check(t: &Trace, max_instances: usize) -> Result<Vec<(usize, usize)>, TestCaseError> {
    let d = diagnose_trace(t, &SshbConfig::default());
    let m = Model::new(t);
    let got = verdicts(&d);
    let pairs: Vec<(usize, usize)> = got.iter().map(|&(a, b, _)| (a, b)).collect();
    prop_assert_eq!(&pairs, &m.races, "pairs are the HB races");
    // Candidate counts (Def. 6, §6.1 pruning of W2).
    let lt = |a: usize, b: usize| m.hb[a] >> b & 1 == 1;
    let w1: usize = m.wrd.iter().map(|(_, w1, _)| w1.len()).sum();
    let w2: usize = m
        .wrd
        .iter()
        .map(|(_, w1, w2)| {
            w2.iter()
                .filter(|&&g| !w1.iter().any(|&f| lt(g, f)))
                .count()
        })
        .sum();
    prop_assert_eq!((d.stats.w1 as usize, d.stats.w2 as usize), (w1, w2));
    if m.instance_count() > max_instances {
        return Ok(Vec::new());
    }
    let mut ordered_somewhere = vec![false; got.len()];
    let mut instances = 0;
    m.for_each_instance(|edges, reach| {
        instances += 1;
        for (k, &(a, b, _)) in got.iter().enumerate() {
            if !ordered_somewhere[k] && m.ordered(edges, reach, a, b) {
                ordered_somewhere[k] = true;
            }
        }
    });
    prop_assert!(instances > 0, "HB itself is an instance (Prop. 4)");
    let mut prop6_failures = Vec::new();
    for (k, &(a, b, v)) in got.iter().enumerate() {
        match v {
            Verdict::Guaranteed => prop_assert!(
                !ordered_somewhere[k],
                "guaranteed pair ({}, {}) is ordered in some instance (Prop. 5)",
                a,
                b
            ),
            Verdict::Maybe => {
                let w = d.witness(k).expect("maybe pairs have a witness");
                if w.consistent == Some(true) {
                    prop_assert!(
                        ordered_somewhere[k],
                        "maybe pair ({}, {}) with a consistent witness is ordered nowhere",
                        a,
                        b
                    );
                }
                if !ordered_somewhere[k] {
                    prop6_failures.push((a, b));
                }
            }
        }
    }
    Ok(prop6_failures)
}

fn actions() -> impl Strategy<Value = (u32, Vec<(u8, u8, u8)>)> {
    (
        2u32..5,
        proptest::collection::vec((0u8..4, 0u8..12, 0u8..4), 0..18),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Pairs = HB races; candidates = Def. 6; guaranteed ⇒ race under every ∃SHB instance
    /// (Prop. 5); maybe with a consistent witness ⇒ ordered under some instance.
    #[test]
    fn guaranteed_and_maybe_against_enumeration((threads, acts) in actions()) {
        let t = from_actions(threads, 2, 2, &acts);
        check(&t, 4096)?;
    }

    /// Read/write-heavy traces: more WRD candidates, backward edges and cycles.
    #[test]
    fn access_heavy_traces((threads, acts) in (2u32..4, proptest::collection::vec((0u8..4, 0u8..6, 0u8..4), 0..16))) {
        let t = from_actions(threads, 2, 1, &acts);
        check(&t, 4096)?;
    }
}

/// Prop. 6 as the paper states it: every maybe pair is ordered under some instance.
/// Fails: counterexample (kept as the unit test `prop6_counterexample` in
/// `analysis/sshb/diagnose.rs`) — T3: acq(M) w(z) rel(M); T1: acq(L) r(y) rel(L) acq(M)
/// w(x) rel(M); T4: acq(L) w(z) rel(L); T2: r(x) w(y). The only path from the first w(z)
/// to the second chooses w(x) for r(x) and w(y) for r(y), which with program order forms
/// Example 2's cycle, so no ∃SHB instance orders the two writes.
#[test]
#[ignore = "Prop. 6 fails when a witness path's WRD choices are cyclic with HB (see comment)"]
fn prop6_as_stated() {
    let mut failures = 0;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for _ in 0..3000 {
        let (threads, acts) = actions().new_tree(&mut runner).unwrap().current();
        let t = from_actions(threads, 2, 2, &acts);
        failures += check(&t, 4096).unwrap().len();
    }
    assert_eq!(failures, 0);
}

#[test]
fn prop6_failures_are_rare_and_detected() {
    // Every Prop. 6 failure found by enumeration is one whose witness is flagged
    // inconsistent (checked inside `check`); count them for the report.
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut traces, mut maybe, mut failures) = (0, 0, 0);
    for _ in 0..1500 {
        let (threads, acts) = (
            2u32..4,
            proptest::collection::vec((0u8..4, 0u8..6, 0u8..4), 0..16),
        )
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let t = from_actions(threads, 2, 1, &acts);
        let d = diagnose_trace(&t, &SshbConfig::default());
        maybe += d.stats.total_pairs() - d.stats.total_guaranteed();
        failures += check(&t, 4096).unwrap().len();
        traces += 1;
    }
    eprintln!("prop6: {failures} maybe pairs ordered under no instance, of {maybe} maybe pairs in {traces} traces");
}

// ---- Perturbed traces (§3): guaranteed races vs SHB races of the accurate trace ----

/// SHB race pairs of a trace (Mathur et al.; a read's own last-write edge does not order
/// it with that write), by brute force over bit sets.
fn shb_pairs(t: &Trace) -> std::collections::HashSet<(usize, usize)> {
    let ev = &t.events;
    let n = ev.len();
    let words = n.div_ceil(64);
    let mut edges = hb_edges(t);
    let mut lw: Vec<Option<usize>> = vec![None; n];
    for r in 0..n {
        if ev[r].is_read() {
            lw[r] = (0..r)
                .rev()
                .find(|&w| ev[w].is_write() && ev[w].target == ev[r].target);
            if let Some(w) = lw[r] {
                edges.push((w, r));
            }
        }
    }
    edges.sort_by_key(|&(a, b)| (b, a));
    // pred[b] = events ordered before b; pred_excl[b] without b's own last-write edge.
    let mut pred = vec![0u64; n * words];
    let mut pred_excl = vec![0u64; n * words];
    let mut k = 0;
    for b in 0..n {
        while k < edges.len() && edges[k].1 == b {
            let a = edges[k].0;
            for x in 0..words {
                let v = pred[a * words + x];
                pred[b * words + x] |= v;
                if lw[b] != Some(a) || ev[a].thread == ev[b].thread {
                    pred_excl[b * words + x] |= v;
                }
            }
            pred[b * words + a / 64] |= 1 << (a % 64);
            if lw[b] != Some(a) || ev[a].thread == ev[b].thread {
                pred_excl[b * words + a / 64] |= 1 << (a % 64);
            }
            k += 1;
        }
    }
    let mut out = std::collections::HashSet::new();
    for b in 0..n {
        for a in 0..b {
            if !ev[a].conflicts_with(&ev[b]) {
                continue;
            }
            let set = if lw[b] == Some(a) { &pred_excl } else { &pred };
            if set[b * words + a / 64] >> (a % 64) & 1 == 0 {
                out.insert((a, b));
            }
        }
    }
    out
}

fn gen(seed: u64) -> Trace {
    Generator::trace(GenConfig {
        events: 1500,
        threads: 4,
        vars: 300,
        locks: 3,
        sync: 0.3,
        reads: 0.5,
        stickiness: 0.6,
        seed,
        ..GenConfig::default()
    })
}

/// Guaranteed races of a perturbed trace are SHB races of the accurate one (the accurate
/// trace's SHB is one ∃SHB instance of the perturbed trace); SHB on the perturbed trace
/// has no such guarantee. Prints the shares for windows 2, 8, 32.
#[test]
fn perturbed_guaranteed_races_are_real() {
    for window in [2u64, 8, 32] {
        let (mut g_total, mut g_in) = (0usize, 0usize);
        let (mut s_total, mut s_in) = (0usize, 0usize);
        let mut hb_in = 0usize;
        for seed in 0..4 {
            let t = gen(seed);
            let truth = shb_pairs(&t);
            let hb_truth: std::collections::HashSet<(usize, usize)> =
                diagnose_trace(&t, &SshbConfig::default())
                    .report
                    .pairs
                    .iter()
                    .map(|p| (p.first as usize, p.second as usize))
                    .collect();
            let (p, map) = perturb_with_map(&t, window, seed + 100);
            let orig = |a: usize, b: usize| {
                let (x, y) = (map[a] as usize, map[b] as usize);
                (x.min(y), x.max(y))
            };
            let d = diagnose_trace(&p, &SshbConfig::default());
            for pr in &d.report.pairs {
                if pr.verdict == Some(Verdict::Guaranteed) {
                    let o = orig(pr.first as usize, pr.second as usize);
                    g_total += 1;
                    g_in += truth.contains(&o) as usize;
                    hb_in += hb_truth.contains(&o) as usize;
                }
            }
            for &(a, b) in &shb_pairs(&p) {
                s_total += 1;
                s_in += truth.contains(&orig(a, b)) as usize;
            }
        }
        eprintln!(
            "window {window}: guaranteed {g_in}/{g_total} are SHB races of the accurate trace \
             ({hb_in} HB races); SHB on the perturbed trace {s_in}/{s_total}"
        );
        assert_eq!(g_in, g_total, "window {window}");
        assert_eq!(hb_in, g_total);
    }
}

/// SSHB's pairs equal HBP's (the pair-reporting HB of the other branch).
#[test]
fn pairs_equal_hbp() {
    use racepred::analysis::{create, run_trace, AnalysisKind, AnalysisOptions};
    for seed in 0..20 {
        let t = gen(seed);
        let hbp =
            create(AnalysisKind::Hbp, &AnalysisOptions::default()).expect("HBP not merged yet");
        let sshb = create(AnalysisKind::Sshb, &AnalysisOptions::default()).unwrap();
        let r = run_trace(&t, &mut [hbp, sshb]);
        assert_eq!(r[0].pair_set(), r[1].pair_set(), "seed {seed}");
    }
}

#[test]
fn registry_creates_sshb() {
    use racepred::analysis::{create, run_trace, AnalysisKind, AnalysisOptions};
    let t = Trace::from_events(vec![Event::write(0, 0), Event::write(1, 0)]);
    let a = create(AnalysisKind::Sshb, &AnalysisOptions::default()).unwrap();
    let r = run_trace(&t, &mut [a]);
    assert_eq!(r[0].pairs.len(), 1);
    assert_eq!(r[0].pairs[0].verdict, Some(Verdict::Guaranteed));
}
