//! SSHB: data race diagnosis for inaccurate traces.
//!
//! Martin Sulzmann and Kai Stadtmüller, "Data Race Prediction for Inaccurate Traces",
//! ESORICS 2019 workshops / arXiv 2019; `../shared/papers/sshb-inaccurate-traces.txt`.
//!
//! Tracing tools record unsynchronised reads and writes without synchronising the recording,
//! so the trace order of those events (and the write-read dependencies read off it) may be
//! wrong; HB itself (program order, release→acquire, fork/join, vw→vr, sig→wait) is
//! assumed accurate (INST_PO, INST_RA of §3). This module implements:
//!
//! - **WRD candidates** (Def. 6): per read, W1 = HB-maximal unsynchronised writes, W2 =
//!   HB-maximal writes HB-before it, with §6.1's pruning of W2 candidates HB-before a W1
//!   candidate (`phase1`). Table 2's #w(r) average and maximum are over reads with at
//!   least one candidate.
//! - **Phase 1** (Alg. 1, extended FastTrack): every HB race pair (write-write, write-read,
//!   read-write) and the graph of Def. 11 ([`graph`]), kept compact: nodes only for events
//!   on cross-thread edges or in race pairs, program order one implicit chain per thread,
//!   one HB edge per raised clock component, W2 edges omitted (they are HB edges).
//! - **Phase 2** (§5, Prop. 5 / 6): a pair is *maybe* if a path connects its events (for a
//!   write-read pair, without the direct dependency edge w → r), *guaranteed* otherwise.
//!   A simple path enters each read once, so it uses at most one W(r) edge per read. Paths
//!   are answered from per-component reach vectors (Tarjan condensation), not by a search
//!   per pair. Maybe pairs come with a witness path: the choice of write-read dependencies
//!   under which the race goes away ([`Witness`], [`dot`]).
//! - **Lockset filter** (§6.3): a guaranteed pair whose events hold a common lock is
//!   flagged as a likely false positive from inaccurately traced release/acquire order.
//! - **Perturbation** (§3): [`crate::experiments::perturb::perturb`] writes an inaccurate variant of a trace.
//!
//! Promises (checked by `tests/sshb_props.rs` against enumeration of every ∃SHB instance,
//! Def. 8): the pairs are exactly the HB-unordered conflicting pairs; a guaranteed pair is
//! unordered under every instance (Prop. 5). Reads without an HB-earlier write may read the
//! initial value (the paper assumes initial writes, Def. 9; this is the same thing).
//!
//! Known gap in the paper: Prop. 6 (a path gives an instance that orders the pair) fails
//! when the WRD edges of the path form a cycle with HB (two backward WRD edges, as in
//! Example 2 placed between the racing events). Such witnesses are marked
//! `consistent: false` and counted in `inconsistent_witnesses`; the pair stays *maybe* as
//! the paper defines it.

pub mod diagnose;
pub mod dot;
pub mod graph;
pub(crate) mod phase1;

use crate::analysis::AnalysisKind;
use std::time::{Duration, Instant};

use crate::analysis::{Analysis, RunSummary, Side, Validation};
use crate::error::Result;
use crate::report::{RaceReport, Verdict};
use crate::trace::{Event, EventSource, Names, Trace};

pub use graph::EdgeKind;

/// Options of the SSHB diagnosis.
#[derive(Clone, Debug)]
pub struct SshbConfig {
    /// How many maybe pairs get a witness path computed eagerly (others on demand with
    /// [`Diagnosis::witness`]).
    pub max_witnesses: usize,
}

impl Default for SshbConfig {
    fn default() -> Self {
        SshbConfig {
            max_witnesses: 1000,
        }
    }
}

/// Per-pair result, parallel to `Diagnosis::report.pairs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairDiagnosis {
    pub verdict: Verdict,
    /// Guaranteed, but both events hold a common lock (§6.3: likely a false positive).
    pub shared_lock: bool,
    /// A write-read pair whose write is a WRD candidate (W1) of the read: the direct
    /// dependency edge was left out of the search.
    pub direct: bool,
}

/// One step of a witness path (event indices).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Step {
    pub from: u64,
    pub to: u64,
    pub kind: EdgeKind,
}

/// Why a maybe pair may not be a race: a path between its events.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Witness {
    /// Index into `report.pairs`.
    pub pair: usize,
    /// The event the path starts at (either end of the pair).
    pub from: u64,
    pub steps: Vec<Step>,
    /// The write-read dependencies the path chooses: `(write, read)` event indices.
    pub choice: Vec<(u64, u64)>,
    /// True if HB plus `choice` is acyclic, i.e. the choice (with every other read taking
    /// an HB-earlier write or its initial value) is an ∃SHB instance ordering the pair;
    /// `None` if the choice was too long to check (more than 256 edges).
    pub consistent: Option<bool>,
}

/// Table 2 figures and graph size.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Pairs per kind: write-write, write-read, read-write.
    pub pairs: [u64; 3],
    pub guaranteed: [u64; 3],
    pub lockset_flagged: u64,
    pub inconsistent_witnesses: u64,
    pub witnesses_checked: u64,
    pub reads: u64,
    pub reads_with_candidates: u64,
    pub candidates: u64,
    pub max_candidates: u64,
    pub w1: u64,
    pub w2: u64,
    pub pruned_w2: u64,
    pub threads: u64,
    pub nodes: u64,
    pub edges: u64,
    pub po_edges: u64,
    pub sync_edges: u64,
    pub wrd_edges: u64,
    pub sccs: u64,
    pub largest_scc: u64,
    pub phase1: Duration,
    pub phase2: Duration,
}

impl Stats {
    pub fn total_pairs(&self) -> u64 {
        self.pairs.iter().sum()
    }
    pub fn total_guaranteed(&self) -> u64 {
        self.guaranteed.iter().sum()
    }
    /// Average number of WRD candidates per read with at least one.
    pub fn avg_candidates(&self) -> f64 {
        if self.reads_with_candidates == 0 {
            0.0
        } else {
            self.candidates as f64 / self.reads_with_candidates as f64
        }
    }

    fn to_extra(&self, report: &RaceReport) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::json;
        let mut m = serde_json::Map::new();
        let mut put = |k: &str, v: serde_json::Value| {
            m.insert(k.to_string(), v);
        };
        // Location pairs (Table 2 counts distinct location pairs); a group is guaranteed
        // if any of its pairs is (App. D: the first occurrence alone can miss one).
        let groups = report.location_groups();
        let mut guaranteed_keys = rustc_hash::FxHashSet::default();
        for p in &report.pairs {
            if p.verdict == Some(Verdict::Guaranteed) {
                guaranteed_keys.insert((p.first_event.loc, p.second_event.loc, p.kind));
            }
        }
        let gl = groups
            .iter()
            .filter(|g| {
                let f = &report.pairs[g.first_pair];
                guaranteed_keys.contains(&(f.first_event.loc, f.second_event.loc, f.kind))
            })
            .count();
        put("pairs", json!(self.total_pairs()));
        put("guaranteed", json!(self.total_guaranteed()));
        put("maybe", json!(self.total_pairs() - self.total_guaranteed()));
        put("write_write", json!(self.pairs[0]));
        put("write_write_guaranteed", json!(self.guaranteed[0]));
        put("write_read", json!(self.pairs[1]));
        put("write_read_guaranteed", json!(self.guaranteed[1]));
        put("read_write", json!(self.pairs[2]));
        put("read_write_guaranteed", json!(self.guaranteed[2]));
        put("location_pairs", json!(groups.len()));
        put("location_pairs_guaranteed", json!(gl));
        put("lockset_flagged", json!(self.lockset_flagged));
        put(
            "wr_avg",
            json!((self.avg_candidates() * 100.0).round() / 100.0),
        );
        put("wr_max", json!(self.max_candidates));
        put("reads", json!(self.reads));
        put("w1_candidates", json!(self.w1));
        put("w2_candidates", json!(self.w2));
        put("w2_pruned", json!(self.pruned_w2));
        put("graph_nodes", json!(self.nodes));
        put("graph_edges", json!(self.edges));
        put("graph_po_edges", json!(self.po_edges));
        put("graph_sync_edges", json!(self.sync_edges));
        put("graph_wrd_edges", json!(self.wrd_edges));
        put("graph_sccs", json!(self.sccs));
        put("graph_largest_scc", json!(self.largest_scc));
        put("inconsistent_witnesses", json!(self.inconsistent_witnesses));
        put("phase1_ms", json!(self.phase1.as_secs_f64() * 1e3));
        put("phase2_ms", json!(self.phase2.as_secs_f64() * 1e3));
        m
    }
}

/// The result of a diagnosis: the report (pairs with verdicts, Table 2 figures in `extra`),
/// per-pair details, statistics and witness paths of maybe pairs.
pub struct Diagnosis {
    pub report: RaceReport,
    pub pairs: Vec<PairDiagnosis>,
    pub stats: Stats,
    /// Witnesses of the first `max_witnesses` maybe pairs, in pair order.
    pub witnesses: Vec<Witness>,
    state: diagnose::State,
}

impl Diagnosis {
    /// The witness path of pair `i` (`None` for guaranteed pairs).
    pub fn witness(&self, i: usize) -> Option<Witness> {
        if self.pairs.get(i)?.verdict != Verdict::Maybe {
            return None;
        }
        let p = &self.report.pairs[i];
        self.state.witness(i, p.first as u32, p.second as u32)
    }

    /// The event at trace index `i`.
    pub fn event(&self, i: u64) -> Event {
        self.state.p.events[i as usize]
    }

    /// Number of events analysed.
    pub fn events(&self) -> usize {
        self.state.p.events.len()
    }
}

/// The SSHB analysis (push model). `finish` returns the report; use [`diagnose()`] or
/// [`diagnose_trace`] to keep the witnesses.
pub struct Sshb {
    cfg: SshbConfig,
    p: phase1::Phase1,
    started: Option<Instant>,
}

impl Sshb {
    pub fn new(cfg: SshbConfig) -> Sshb {
        Sshb {
            cfg,
            p: phase1::Phase1::new(),
            started: None,
        }
    }

    /// Ends phase 1 and runs phase 2.
    pub fn into_diagnosis(self, names: &Names) -> Diagnosis {
        let stream = self.started.map_or(Duration::ZERO, |s| s.elapsed());
        diagnose::run(self.p, names, stream, self.cfg.max_witnesses)
    }
}

impl Analysis for Sshb {
    fn name(&self) -> &'static str {
        AnalysisKind::Sshb.name()
    }

    #[inline]
    fn on_event(&mut self, _index: u64, ev: &Event, _side: Side<'_>) {
        if self.started.is_none() {
            self.started = Some(Instant::now());
        }
        self.p.on_event(ev);
    }

    fn finish(&mut self, names: &Names) -> RaceReport {
        let me = std::mem::replace(self, Sshb::new(self.cfg.clone()));
        me.into_diagnosis(names).report
    }
}

/// Diagnoses an in-memory trace (no validation).
pub fn diagnose_trace(trace: &Trace, cfg: &SshbConfig) -> Diagnosis {
    let mut a = Sshb::new(cfg.clone());
    for (i, ev) in trace.events.iter().enumerate() {
        a.on_event(i as u64, ev, Side::default());
    }
    let mut d = a.into_diagnosis(&trace.names);
    d.report.events = trace.len() as u64;
    d
}

/// Reads and diagnoses a trace through the standard driver (validation as given).
pub fn diagnose<S: EventSource + ?Sized>(
    src: &mut S,
    validation: Validation,
    cfg: &SshbConfig,
    progress: impl FnMut(u64, u64),
) -> Result<(Diagnosis, RunSummary)> {
    let mut a = Sshb::new(cfg.clone());
    let summary = {
        let mut list: Vec<Box<dyn Analysis + '_>> = vec![Box::new(&mut a)];
        crate::analysis::run(src, &mut list, validation, progress)?
    };
    let mut d = a.into_diagnosis(src.names());
    d.report.events = summary.events;
    Ok((d, summary))
}
