//! A verdict for every warning: which of a complete analysis's location pairs are races,
//! which are not, and which are still open (SPEC §4, `check`).
//!
//! The candidates are the location groups ([`GroupKey`]) of an analysis that reports every
//! predictable pair (`tsan-hybrid`: lockset completeness). Each gets one verdict:
//!
//! - **race** when a sound analysis reports a pair of the group: `syncp` (with a witness cut
//!   that replays), `shbp` (every pair predictable), `osr` (with a schedule it checked), or
//!   the SMT predictor (with a witness it replayed itself). The first that has it is named,
//!   with its first instance.
//! - **no race** only with a proof: another complete analysis (`trf`: every pair of the group
//!   is ordered by program order, fork, join and reads-from) leaves the group out, or the
//!   SMT predictor proved it: either every candidate pair of the group was asked on its own
//!   slice and none has a witness (a slice holds every witness of its pair:
//!   `racepred_smt::slice`), or one window covered the whole trace, every query was
//!   answered, and no pair of the group is satisfiable (the maximal causal model holds
//!   every predictable race of a plain trace). A pair that no candidate analysis reports is not listed at all: the
//!   candidate analysis is the proof.
//! - **unknown** otherwise, with the reason (the SMT stage did not run, ran out of budget
//!   before the pair, a slice was over the limit, a query timed out).
//!
//! Plain data; the CLI prints it as text, JSON and SARIF.

use rustc_hash::FxHashMap;

use crate::report::{GroupKey, RaceCut, RacePair, RaceReport};

/// The verdict of one location pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum VerdictKind {
    Race,
    NoRace,
    Unknown,
}

impl VerdictKind {
    /// `race`, `no-race`, `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            VerdictKind::Race => "race",
            VerdictKind::NoRace => "no-race",
            VerdictKind::Unknown => "unknown",
        }
    }
}

/// One location pair and its verdict.
#[derive(Clone, Debug)]
pub struct Warning {
    /// The pair shown: the proving analysis's first instance for a race, else the
    /// candidate analysis's.
    pub pair: RacePair,
    pub verdict: VerdictKind,
    /// Which analysis or proof decided it (empty for unknown).
    pub by: String,
    /// The witness cut of a `syncp` race, if kept.
    pub cut: Option<RaceCut>,
    /// The witness file, once written.
    pub witness: Option<String>,
    /// Why a warning is unknown.
    pub reason: Option<String>,
}

/// What the SMT stage established.
#[derive(Clone, Debug)]
pub struct SmtEvidence {
    /// The SMT predictor's report (location groups with witness-checked races).
    pub report: RaceReport,
    /// Witness files of its races by (first, second), if written.
    pub witnesses: std::collections::HashMap<(u64, u64), String>,
    /// The location groups examined pair by pair on slices without a race: `Ok(pairs)` when
    /// absence is proved (each of the group's `pairs` candidate pairs is ordered, or the
    /// maximal causal model of its slice has no witness), `Err(reason)` when it is not.
    pub groups: FxHashMap<GroupKey, Result<u64, String>>,
    /// `Ok` when every pair of the trace was asked and answered in one window (absence is
    /// then proved); otherwise what kept it from proving absence ([`SmtGap::reason`] words
    /// it for each pair left open).
    pub exact: Result<(), SmtGap>,
}

/// Why the SMT stage proves no absence.
#[derive(Clone, Debug)]
pub enum SmtGap {
    /// It did not run, with the reason.
    NotRun(String),
    /// Its budget ran out; events from this one on were not fully examined.
    Budget { seconds: f64, examined_before: u64 },
    /// The trace spans several windows of this many events: pairs are asked inside one.
    Windows { window: u64 },
    /// Some query timed out or an encoding was too large (so a group may hide a race).
    Unanswered(String),
}

impl SmtGap {
    /// The reason for an unknown pair whose second event is `second` and first `first`.
    pub fn reason(&self, first: u64, second: u64) -> String {
        match self {
            SmtGap::NotRun(why) => format!("not proved by syncp, shbp or osr; SMT stage not run: {why}"),
            SmtGap::Budget {
                seconds,
                examined_before,
            } if second >= *examined_before => format!(
                "not proved by syncp, shbp or osr; SMT budget ({seconds} s) spent before event \
                 {second} (examined up to event {examined_before})"
            ),
            SmtGap::Budget { .. } => "not proved by syncp, shbp or osr; no SMT race in the windows \
                 examined before the budget ran out, which proves no absence"
                .into(),
            SmtGap::Windows { window } if second - first >= *window => format!(
                "not proved by syncp, shbp or osr; its first instance's events lie {} events apart, \
                 beyond one SMT window ({window} events)",
                second - first
            ),
            SmtGap::Windows { window } => format!(
                "not proved by syncp, shbp or osr; no SMT race inside {window}-event windows, which \
                 proves no absence over the whole trace"
            ),
            SmtGap::Unanswered(why) => {
                format!("not proved by syncp, shbp or osr; SMT stage incomplete: {why}")
            }
        }
    }
}

/// The verdicts of one trace.
#[derive(Clone, Debug, Default)]
pub struct Verdicts {
    pub warnings: Vec<Warning>,
    /// What each stage did, for people.
    pub notes: Vec<String>,
}

impl Verdicts {
    /// (race, no race, unknown) counts.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for w in &self.warnings {
            match w.verdict {
                VerdictKind::Race => c.0 += 1,
                VerdictKind::NoRace => c.1 += 1,
                VerdictKind::Unknown => c.2 += 1,
            }
        }
        c
    }
}

/// The first instance of each location group of `r` (grouped or not), by group.
fn first_instances(r: &RaceReport) -> FxHashMap<GroupKey, usize> {
    let mut m = FxHashMap::default();
    for g in r.location_groups() {
        m.insert(r.pairs[g.first_pair].group_key(), g.first_pair);
    }
    m
}

/// Combines the candidates' groups with the sound analyses' reports (in order of
/// preference, each with its name) and the SMT stage's evidence.
pub fn decide(
    candidates: &RaceReport,
    sound: &[&RaceReport],
    complete: &[&RaceReport],
    smt: Option<&SmtEvidence>,
) -> Verdicts {
    let mut v = Verdicts::default();
    let mut order: Vec<GroupKey> = Vec::new();
    let mut shown: FxHashMap<GroupKey, RacePair> = FxHashMap::default();
    for g in candidates.location_groups() {
        let p = candidates.pairs[g.first_pair];
        let k = p.group_key();
        if shown.insert(k, p).is_none() {
            order.push(k);
        }
    }
    let sound_groups: Vec<FxHashMap<GroupKey, usize>> =
        sound.iter().map(|r| first_instances(r)).collect();
    let smt_groups = smt.map(|s| first_instances(&s.report));
    let complete_groups: Vec<FxHashMap<GroupKey, usize>> =
        complete.iter().map(|r| first_instances(r)).collect();
    // A race of a sound analysis outside the candidates would break the candidate
    // analysis's promise: list it anyway, and say so.
    let mut outside = 0usize;
    let mut extra = |k: GroupKey, p: RacePair, order: &mut Vec<GroupKey>| {
        if let std::collections::hash_map::Entry::Vacant(e) = shown.entry(k) {
            e.insert(p);
            order.push(k);
            outside += 1;
        }
    };
    for (r, gs) in sound.iter().zip(&sound_groups) {
        for (&k, &i) in gs {
            extra(k, r.pairs[i], &mut order);
        }
    }
    if let (Some(s), Some(gs)) = (smt, &smt_groups) {
        for (&k, &i) in gs {
            extra(k, s.report.pairs[i], &mut order);
        }
    }
    for k in order {
        let candidate = shown[&k];
        let mut w = Warning {
            pair: candidate,
            verdict: VerdictKind::Unknown,
            by: String::new(),
            cut: None,
            witness: None,
            reason: None,
        };
        let proved = sound
            .iter()
            .zip(&sound_groups)
            .find_map(|(r, gs)| gs.get(&k).map(|&i| (r, i)));
        let excluded = complete
            .iter()
            .zip(&complete_groups)
            .find(|(_, gs)| !gs.contains_key(&k));
        if let Some((r, i)) = proved {
            let p = r.pairs[i];
            w.verdict = VerdictKind::Race;
            w.by = r.analysis.clone();
            w.cut = r
                .cuts
                .iter()
                .find(|c| (c.first, c.second) == (p.first, p.second))
                .cloned();
            w.pair = p;
        } else if let Some((r, _)) = excluded {
            w.verdict = VerdictKind::NoRace;
            w.by = format!(
                "{}: in every pair of this location pair the first access is ordered before the \
                 second's thread by program order, fork, join and reads-from",
                r.analysis
            );
        } else if let (Some(s), Some(gs)) = (smt, &smt_groups) {
            if let Some(&i) = gs.get(&k) {
                let p = s.report.pairs[i];
                w.verdict = VerdictKind::Race;
                w.by = s.report.analysis.clone();
                w.witness = s.witnesses.get(&(p.first, p.second)).cloned();
                w.pair = p;
            } else if let Some(g) = s.groups.get(&k) {
                match g {
                    Ok(pairs) => {
                        w.verdict = VerdictKind::NoRace;
                        w.by = format!(
                            "{}: every pair of this location pair is ordered by program order, \
                             fork, join and reads-from, or holds a lock in common{}",
                            s.report.analysis,
                            match pairs {
                                0 => String::new(),
                                n => format!(
                                    ", or ({n} pair(s)) has no witness in the maximal causal \
                                     model of its slice"
                                ),
                            }
                        );
                    }
                    Err(why) => {
                        w.reason = Some(format!("not proved by syncp, shbp or osr; {why}"));
                    }
                }
            } else {
                match &s.exact {
                    Ok(()) => {
                        w.verdict = VerdictKind::NoRace;
                        w.by = format!(
                            "{}: the encoding of the whole trace has no race of this pair",
                            s.report.analysis
                        );
                    }
                    Err(gap) => w.reason = Some(gap.reason(candidate.first, candidate.second)),
                }
            }
        } else {
            w.reason = Some(
                SmtGap::NotRun("no SMT stage".into()).reason(candidate.first, candidate.second),
            );
        }
        v.warnings.push(w);
    }
    v.warnings
        .sort_by_key(|w| (w.verdict, w.pair.second, w.pair.first));
    v.notes.push(format!(
        "candidates: {} location pair(s) of {}",
        candidates.location_groups().len(),
        candidates.analysis
    ));
    if outside > 0 {
        v.notes.push(format!(
            "{outside} race location pair(s) of the sound analyses are not among {}'s \
             candidates: listed as races (the candidate analysis missed them)",
            candidates.analysis
        ));
    }
    v
}
