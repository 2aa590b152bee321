//! Phase 2: guaranteed / maybe classification (Prop. 5 / 6), witnesses, lockset filter.

use crate::analysis::AnalysisKind;
use std::time::Instant;

use super::graph::{EdgeKind, Graph};
use super::phase1::{Phase1, WrdStats, NONE};
use super::{Diagnosis, PairDiagnosis, Stats, Step, Witness};
use crate::report::{PairKind, RacePair, RaceReport, ReportKind, Verdict};
use crate::trace::Names;

/// Everything phase 2 needs, kept after classification so witnesses can be found on demand.
pub(crate) struct State {
    pub p: Phase1,
    pub g: Graph,
    /// WRD candidates (W1) of each read: `wrd_writes[wrd_start[r]..wrd_start[r + 1]]`
    /// (a CSR by event: a binary search over all edges cost a third of phase 2).
    wrd_start: Vec<u32>,
    wrd_writes: Vec<u32>,
}

impl State {
    /// The WRD edge between a write-read pair, as `(write node, read node)`, if `w ∈ W1(r)`.
    fn direct(&self, a: u32, b: u32) -> Option<(u32, u32)> {
        let ea = &self.p.events[a as usize];
        let (w, r) = if ea.is_write() && self.p.events[b as usize].is_read() {
            (a, b)
        } else if ea.is_read() && self.p.events[b as usize].is_write() {
            (b, a)
        } else {
            return None;
        };
        let (s, e) = (
            self.wrd_start[r as usize] as usize,
            self.wrd_start[r as usize + 1] as usize,
        );
        self.wrd_writes[s..e]
            .contains(&w)
            .then(|| (self.g.node_of[w as usize], self.g.node_of[r as usize]))
    }

    /// True if some choice of WRD candidates orders the pair (a path in the graph, without
    /// the direct dependency edge of a write-read pair).
    /// Also says whether the pair has a direct dependency edge.
    fn ordered(&self, a: u32, b: u32) -> (bool, bool) {
        let (na, nb) = (self.g.node_of[a as usize], self.g.node_of[b as usize]);
        match self.direct(a, b) {
            None => (self.g.reaches(na, nb) || self.g.reaches(nb, na), false),
            Some((w, r)) => (
                self.g.reaches(r, w) || self.g.reaches_without(w, r, (r, EdgeKind::Wrd)),
                true,
            ),
        }
    }

    /// The witness path of a maybe pair: the choice of write-read dependencies under which
    /// the race goes away.
    pub fn witness(&self, pair: usize, a: u32, b: u32) -> Option<Witness> {
        let (na, nb) = (self.g.node_of[a as usize], self.g.node_of[b as usize]);
        let path = match self.direct(a, b) {
            None => self
                .g
                .path(na, nb, None)
                .map(|p| (na, p))
                .or_else(|| self.g.path(nb, na, None).map(|p| (nb, p))),
            Some((w, r)) => self
                .g
                .path(r, w, None)
                .map(|p| (r, p))
                .or_else(|| self.g.path(w, r, Some((r, EdgeKind::Wrd))).map(|p| (w, p))),
        }?;
        let (start, nodes) = path;
        let mut steps = Vec::with_capacity(nodes.len());
        let mut prev = start;
        let mut choice = Vec::new();
        for (v, kind) in nodes {
            let (from, to) = (
                self.g.node_event[prev as usize],
                self.g.node_event[v as usize],
            );
            if kind == EdgeKind::Wrd {
                choice.push((from as u64, to as u64));
            }
            steps.push(Step {
                from: from as u64,
                to: to as u64,
                kind,
            });
            prev = v;
        }
        let consistent = self.acyclic(&choice);
        Some(Witness {
            pair,
            from: self.g.node_event[start as usize] as u64,
            steps,
            choice,
            consistent,
        })
    }

    /// True if HB plus the chosen `(write, read)` edges is acyclic (the witness is an
    /// ∃SHB instance once every other read takes a W2 candidate or its initial value).
    fn acyclic(&self, choice: &[(u64, u64)]) -> Option<bool> {
        if choice.is_empty() {
            return Some(true);
        }
        if choice.len() > MAX_CHECKED_CHOICES {
            return None;
        }
        // Points 2k (write) and 2k+1 (read) of chosen edge k; edges: HB between points,
        // and the chosen edges. A cycle of HB ∪ choice projects onto these points.
        let pts: Vec<u32> = choice
            .iter()
            .flat_map(|&(w, r)| [w as u32, r as u32])
            .collect();
        let n = pts.len();
        let edge = |x: usize, y: usize| -> bool {
            x != y && (self.p.hb_le(pts[x], pts[y]) || (x.is_multiple_of(2) && y == x + 1))
        };
        let adj: Vec<Vec<usize>> = (0..n)
            .map(|x| (0..n).filter(|&y| edge(x, y)).collect())
            .collect();
        // Colour DFS for a cycle.
        let mut colour = vec![0u8; n];
        for root in 0..n {
            if colour[root] != 0 {
                continue;
            }
            let mut stack = vec![(root, 0usize)];
            colour[root] = 1;
            while let Some(&mut (v, ref mut k)) = stack.last_mut() {
                if *k < adj[v].len() {
                    let u = adj[v][*k];
                    *k += 1;
                    match colour[u] {
                        0 => {
                            colour[u] = 1;
                            stack.push((u, 0));
                        }
                        1 => return Some(false),
                        _ => {}
                    }
                } else {
                    colour[v] = 2;
                    stack.pop();
                }
            }
        }
        Some(true)
    }
}

/// Witnesses choosing more WRD edges than this are not checked for consistency.
const MAX_CHECKED_CHOICES: usize = 256;

fn st_events_len(p: &Phase1) -> usize {
    p.events.len()
}

/// Runs WRD, builds the graph, classifies every pair.
pub(crate) fn run(
    p: Phase1,
    names: &Names,
    phase1_stream: std::time::Duration,
    max_witnesses: usize,
) -> Diagnosis {
    let t1 = Instant::now();
    let mut p = p;
    p.pairs.sort_unstable();
    p.pairs.dedup();
    let mut wrd: Vec<(u32, u32)> = Vec::new();
    let wst: WrdStats = p.wrd(|r, w1, _w2| {
        for &w in w1 {
            wrd.push((w, r));
        }
    });
    let phase1 = phase1_stream + t1.elapsed();

    let t2 = Instant::now();
    let mut marked = vec![false; p.events.len()];
    for &(a, b) in &p.pairs {
        marked[a as usize] = true;
        marked[b as usize] = true;
    }
    let g = Graph::build(&p, marked, &wrd);
    let n = st_events_len(&p);
    let mut wrd_start = vec![0u32; n + 1];
    for &(_, r) in &wrd {
        wrd_start[r as usize + 1] += 1;
    }
    for i in 0..n {
        wrd_start[i + 1] += wrd_start[i];
    }
    let mut fill = wrd_start.clone();
    let mut wrd_writes = vec![0u32; wrd.len()];
    for &(w, r) in &wrd {
        wrd_writes[fill[r as usize] as usize] = w;
        fill[r as usize] += 1;
    }
    drop(fill);
    drop(wrd);
    let st = State {
        p,
        g,
        wrd_start,
        wrd_writes,
    };

    let mut report = RaceReport::new(AnalysisKind::Sshb.name(), ReportKind::Pairs);
    report.events = st.p.events.len() as u64;
    let mut diag = Vec::with_capacity(st.p.pairs.len());
    let mut stats = Stats::default();
    for &(a, b) in &st.p.pairs {
        let (ea, eb) = (st.p.events[a as usize], st.p.events[b as usize]);
        let mut rp = RacePair::new(a as u64, ea, b as u64, eb);
        let (maybe, direct) = st.ordered(a, b);
        let verdict = if maybe {
            Verdict::Maybe
        } else {
            Verdict::Guaranteed
        };
        rp.verdict = Some(verdict);
        let la = &st.p.locksets[st.p.lockset_of[a as usize] as usize];
        let lb = &st.p.locksets[st.p.lockset_of[b as usize] as usize];
        let shared_lock = !maybe && la.iter().any(|l| lb.binary_search(l).is_ok());
        let k = match rp.kind {
            PairKind::WriteWrite => 0,
            PairKind::WriteRead => 1,
            PairKind::ReadWrite => 2,
        };
        stats.pairs[k] += 1;
        if !maybe {
            stats.guaranteed[k] += 1;
        }
        stats.lockset_flagged += shared_lock as u64;
        diag.push(PairDiagnosis {
            verdict,
            shared_lock,
            direct,
        });
        report.pairs.push(rp);
    }
    let mut witnesses = Vec::new();
    for (i, rp) in report.pairs.iter().enumerate() {
        if witnesses.len() >= max_witnesses {
            break;
        }
        if diag[i].verdict == Verdict::Maybe {
            if let Some(w) = st.witness(i, rp.first as u32, rp.second as u32) {
                stats.inconsistent_witnesses += (w.consistent == Some(false)) as u64;
                witnesses.push(w);
            }
        }
    }
    let phase2 = t2.elapsed();

    stats.reads = wst.reads;
    stats.reads_with_candidates = wst.reads_with_candidates;
    stats.candidates = wst.candidates;
    stats.max_candidates = wst.max;
    stats.w1 = wst.w1;
    stats.w2 = wst.w2;
    stats.pruned_w2 = wst.pruned_w2;
    stats.nodes = st.g.nodes() as u64;
    stats.edges = st.g.edges() as u64;
    stats.po_edges = st.g.po_edges as u64;
    stats.sync_edges = st.g.sync_edges as u64;
    stats.wrd_edges = st.g.wrd_edges as u64;
    stats.sccs = st.g.scc_size.len() as u64;
    stats.largest_scc = st.g.scc_size.iter().copied().max().unwrap_or(0) as u64;
    stats.witnesses_checked = witnesses.len() as u64;
    stats.phase1 = phase1;
    stats.phase2 = phase2;
    stats.threads = st.g.k as u64;
    let _ = NONE;

    report.extra = stats.to_extra(&report);
    report.notes.push(
        "SSHB (Sulzmann & Stadtmüller): every HB race pair, classified guaranteed (a race \
         under every choice of write-read dependency, Prop. 5) or maybe (a path in the \
         graph of HB and WRD-candidate edges, Prop. 6)"
            .to_string(),
    );
    if stats.lockset_flagged > 0 {
        report.notes.push(format!(
            "{} guaranteed pair(s) share a lock: likely false positives from an inaccurately \
             traced release/acquire order (§6.3)",
            stats.lockset_flagged
        ));
    }
    if stats.inconsistent_witnesses > 0 {
        report.notes.push(format!(
            "{} maybe pair(s) have a witness path whose WRD choices form a cycle with HB: \
             Prop. 6 does not give an ∃SHB instance for them",
            stats.inconsistent_witnesses
        ));
    }
    let _ = names;
    Diagnosis {
        report,
        pairs: diag,
        stats,
        witnesses,
        state: st,
    }
}

#[cfg(test)]
mod tests {
    //! The paper's figures and examples (positions in comments are the paper's, 1-based;
    //! indices in asserts are 0-based).
    use super::super::{diagnose_trace, Diagnosis, SshbConfig};
    use crate::report::{written, PairKind, Verdict};
    use crate::trace::std_format::StdReader;
    use crate::trace::Trace;

    fn trace(s: &str) -> Trace {
        let text: String = s
            .split(';')
            .enumerate()
            .map(|(i, l)| {
                let (t, op) = l.trim().split_once(' ').unwrap();
                format!("{t}|{op}|{}\n", i + 1)
            })
            .collect();
        Trace::read_from(&mut StdReader::new(text.as_bytes())).unwrap()
    }

    fn diag(s: &str) -> Diagnosis {
        diagnose_trace(&trace(s), &SshbConfig::default())
    }

    /// (first, second, kind, verdict) with 1-based paper positions.
    fn pairs(d: &Diagnosis) -> Vec<(u64, u64, PairKind, Verdict)> {
        d.report
            .pairs
            .iter()
            .map(|p| (p.first + 1, p.second + 1, p.kind, p.verdict.unwrap()))
            .collect()
    }

    use PairKind::*;
    use Verdict::*;

    #[test]
    fn fig1_release_acquire() {
        // (b) actual trace: mutually exclusive writes, no race.
        let d = diag("T1 acq(y); T1 w(x); T1 rel(y); T2 acq(y); T2 w(x); T2 rel(y)");
        assert!(pairs(&d).is_empty());
        // (c) inaccurate (ill-formed: T2 acquires y while T1 holds it) = Fig. 6: a
        // guaranteed race that lockset flags (§6.3).
        let d = diag("T1 acq(y); T1 w(x); T2 acq(y); T2 w(x); T1 rel(y); T2 rel(y)");
        assert_eq!(pairs(&d), vec![(2, 4, WriteWrite, Guaranteed)]);
        assert!(d.pairs[0].shared_lock);
        assert_eq!(d.stats.lockset_flagged, 1);
    }

    #[test]
    fn fig2_false_positive() {
        // (b) actual: w(y)1 <SHB w(y)4 through w(x)2 → r(x)3; HB still reports it, maybe.
        let d = diag("T1 w(y); T1 w(x); T2 r(x); T2 w(y)");
        assert_eq!(
            pairs(&d),
            vec![(1, 4, WriteWrite, Maybe), (2, 3, WriteRead, Guaranteed)]
        );
        // (c) inaccurate (Fig. 4): the read is recorded first.
        let d = diag("T2 r(x); T1 w(y); T1 w(x); T2 w(y)");
        assert_eq!(
            pairs(&d),
            vec![(1, 3, ReadWrite, Guaranteed), (2, 4, WriteWrite, Maybe)]
        );
        let w = d.witness(1).unwrap();
        assert_eq!(w.from, 1);
        assert_eq!(w.choice, vec![(2, 0)]);
        assert_eq!(w.consistent, Some(true));
        assert_eq!(
            w.steps.iter().map(|s| s.to).collect::<Vec<_>>(),
            vec![2, 0, 3]
        );
    }

    #[test]
    fn fig3_false_negative() {
        // (c) inaccurate trace (Fig. 5): two candidates for the read.
        let d = diag("T1 w(y); T1 w(x); T2 r(x); T2 w(y); T3 w(x)");
        assert_eq!(
            pairs(&d),
            vec![
                (1, 4, WriteWrite, Maybe),
                (2, 3, WriteRead, Guaranteed),
                (2, 5, WriteWrite, Guaranteed),
                (3, 5, ReadWrite, Guaranteed),
            ]
        );
        assert_eq!(d.stats.w1, 2);
        assert_eq!(d.stats.max_candidates, 2);
    }

    #[test]
    fn example2_cyclic_strong_shb() {
        let d = diag("T1 r(y); T1 w(x); T2 r(x); T2 w(y)");
        assert_eq!(
            pairs(&d),
            vec![(1, 4, ReadWrite, Maybe), (2, 3, WriteRead, Maybe)]
        );
        assert_eq!((d.stats.w1, d.stats.w2), (2, 0));
        // Each witness uses the other read's candidate only: consistent.
        assert_eq!(d.witness(0).unwrap().consistent, Some(true));
        assert_eq!(d.witness(1).unwrap().consistent, Some(true));
    }

    #[test]
    fn example3_three_instances() {
        let d = diag("T2 w(x); T1 w(y); T1 r(y); T1 w(x); T2 r(x); T2 w(y)");
        // W(r(y)3) = {w(y)2, w(y)6}, W(r(x)5) = {w(x)1, w(x)4}.
        assert_eq!((d.stats.w1, d.stats.w2, d.stats.candidates), (2, 2, 4));
        assert_eq!(
            pairs(&d),
            vec![
                (1, 4, WriteWrite, Maybe),
                (2, 6, WriteWrite, Maybe),
                (3, 6, ReadWrite, Maybe),
                (4, 5, WriteRead, Maybe),
            ]
        );
    }

    #[test]
    fn example4_run_of_the_algorithm() {
        // Reconstructed from the narrative (the table is lost): edge 1 = w(x)1 → r(x)2,
        // edge 2 = w(y)3 → w(x)4 (po), edge 3 = w(x)4 → r(x)2, edge 4 = r(x)2 → w(y)5 (po).
        let d = diag("T1 w(x); T2 r(x); T3 w(y); T3 w(x); T2 w(y)");
        assert_eq!(
            pairs(&d),
            vec![
                (1, 2, WriteRead, Guaranteed),
                // Not in the paper's narrative, but T1 and T3 never synchronise.
                (1, 4, WriteWrite, Guaranteed),
                (2, 4, ReadWrite, Guaranteed),
                (3, 5, WriteWrite, Maybe),
            ]
        );
        let w = d.witness(3).unwrap();
        assert_eq!(w.from, 2);
        assert_eq!(
            w.steps.iter().map(|s| s.to).collect::<Vec<_>>(),
            vec![3, 1, 4]
        );
    }

    #[test]
    fn example5_and_pruning() {
        let d = diag(
            "T1 acq(y1); T1 acq(y2); T1 w(x); T1 rel(y2); T1 rel(y1); T3 acq(y2); T3 w(x); \
             T3 rel(y2); T2 acq(y1); T2 r(x); T2 rel(y1)",
        );
        // W1 = {w(x)7}, W2 = {w(x)3} with w(x)3 <HB w(x)7: pruned (§6.1).
        assert_eq!((d.stats.w1, d.stats.w2, d.stats.pruned_w2), (1, 0, 1));
        assert_eq!(pairs(&d), vec![(7, 10, WriteRead, Guaranteed)]);
    }

    #[test]
    fn appendix_a3_k_candidates() {
        let d = diag(
            "T5 w(x); T4 w(x); T3 acq(y1); T3 w(x); T3 rel(y1); T2 acq(y2); T2 w(x); \
             T2 rel(y2); T1 acq(y1); T1 acq(y2); T1 rel(y2); T1 rel(y1); T1 r(x)",
        );
        assert_eq!((d.stats.w1, d.stats.w2, d.stats.max_candidates), (2, 2, 4));
    }

    #[test]
    fn prop6_counterexample() {
        // Example 2's cycle placed between two racing writes: the only path from w(z)2 to
        // w(z)11 uses w(x)8 → r(x)13 and w(y)14 → r(y)5, which together with HB form a
        // cycle, so no ∃SHB instance orders the pair, yet the graph has a path.
        let d = diag(
            "T3 acq(M); T3 w(z); T3 rel(M); T1 acq(L); T1 r(y); T1 rel(L); T1 acq(M); \
             T1 w(x); T1 rel(M); T4 acq(L); T4 w(z); T4 rel(L); T2 r(x); T2 w(y)",
        );
        let i = d
            .report
            .pairs
            .iter()
            .position(|p| (p.first, p.second) == (1, 10))
            .unwrap();
        assert_eq!(d.pairs[i].verdict, Maybe);
        let w = d.witness(i).unwrap();
        assert_eq!(w.consistent, Some(false));
        assert_eq!(d.stats.inconsistent_witnesses, 1);
    }

    #[test]
    fn report_extra_and_text() {
        let d = diag("T1 w(y); T1 w(x); T2 r(x); T2 w(y); T3 w(x)");
        let x = &d.report.extra;
        assert_eq!(x["pairs"], 4);
        assert_eq!(x["guaranteed"], 3);
        assert_eq!(x["wr_max"], 2);
        assert!(x.contains_key("graph_nodes") && x.contains_key("phase2_ms"));
        let t = trace("T1 w(y); T1 w(x); T2 r(x); T2 w(y); T3 w(x)");
        let ctx = crate::report::ReportContext::new("t", &t.names);
        let s = written(|out| super::super::dot::write_details(&d, &ctx, out));
        assert!(s.contains("maybe") && s.contains("-W(r)->"), "{s}");
        let s = written(|out| super::super::dot::write_dot(&d, &ctx, &[0, 2], out));
        assert!(s.starts_with("digraph") && s.contains("dotted"), "{s}");
        assert!(written(|out| super::super::dot::write_summary(&d, out)).contains("4/3"));
    }

    #[test]
    fn details_and_dot_show_source_locations_and_lines() {
        use crate::report::{EventLines, LocationTable, ReportContext};
        // Locations 1..5 (the helper numbers lines), a table for two of them, and a
        // comment line before the trace so every event is on line i + 2.
        let t = trace("T1 w(y); T1 w(x); T2 r(x); T2 w(y); T3 w(x)");
        let d = diagnose_trace(&t, &SshbConfig::default());
        let table = LocationTable::parse("1\tA.java:10:3\n4\tB.java:20:5\n").unwrap();
        let lines: Vec<u64> = (0..t.len() as u64).map(|i| i + 2).collect();
        let mut ctx = ReportContext::new("t", &t.names);
        ctx.locations = Some(&table);
        ctx.lines = EventLines::of_trace(&lines);
        let s = written(|out| super::super::dot::write_details(&d, &ctx, out));
        let first = s.lines().next().unwrap();
        assert_eq!(
            first,
            "0 write-write T1#w(y)@0 (line 2) at A.java:10:3 — T2#w(y)@3 (line 5) at B.java:20:5: maybe"
        );
        // Locations without a table entry show their trace name.
        assert!(s.contains("T1#w(x)@1 (line 3) at 2"), "{s}");
        let s = written(|out| super::super::dot::write_dot(&d, &ctx, &[0], out));
        assert!(
            s.contains(r#"e0 [label="T1#w(y)@0\nA.java:10:3, line 2"];"#),
            "{s}"
        );
        assert_eq!(super::super::dot::shown_events(&d), vec![0, 1, 2, 3, 4]);
    }
}
