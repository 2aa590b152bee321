//! The SMT predictor on candidate pairs, one slice each ([`crate::slice`]), wherever the
//! pair lies in the trace.
//!
//! The candidates are the TRF-unordered pairs of each location group ([`slice::trf_pairs`]),
//! limited to the groups asked about. Each pair is handled in one of four ways:
//! - it is ordered: no race;
//! - its slice is too large: the group is unknown, unless another pair of it races;
//! - its encoding is unsatisfiable: no race;
//! - its encoding has a model: the schedule is replayed on the whole trace, then reported.
//!
//! A group gets one answer ([`GroupAnswer`]): a race with a witness; no race when every one
//! of its pairs was examined and none races (with `mcm` this is a proof, by the
//! completeness of the slices); otherwise unknown, with the reason.

use std::time::{Duration, Instant};

use racepred::error::{Error, Result};
use racepred::report::{GroupKey, RacePair, RaceReport, ReportKind};
use racepred::trace::values::ValueTrace;
use racepred::witness::{self, Model, ReplayIndex, Replayer, Witness};
use rustc_hash::FxHashSet;

use crate::encode::{Answer, PreState, Problem};
use crate::slice::{self, Slice, Slicer};
use crate::{watched, Counts, SmtConfig, SmtKind, SmtRace, Watchdog};

/// The limits of the slice mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceLimits {
    /// Largest slice encoded, in events.
    pub max_slice: usize,
    /// Pairs examined per location group.
    pub max_pairs: usize,
}

impl SliceLimits {
    pub const DEFAULT_MAX_SLICE: usize = 200_000;
    pub const DEFAULT_MAX_PAIRS: usize = 200;
}

impl Default for SliceLimits {
    fn default() -> SliceLimits {
        SliceLimits {
            max_slice: SliceLimits::DEFAULT_MAX_SLICE,
            max_pairs: SliceLimits::DEFAULT_MAX_PAIRS,
        }
    }
}

/// What the slice mode established for one location group.
#[derive(Clone, Debug, PartialEq)]
pub enum GroupAnswer {
    /// A race; the index of its witness in [`PairsOutcome::races`].
    Race(usize),
    /// None of the group's `pairs` candidate pairs races: each is ordered or its slice's
    /// encoding is unsatisfiable.
    NoRace { pairs: u64 },
    /// Not decided, and why.
    Unknown(String),
}

/// The result of [`predict_pairs`].
#[derive(Clone, Debug, Default)]
pub struct PairsOutcome {
    pub races: Vec<SmtRace>,
    /// Every group asked about (or, without a list, every group with a candidate pair), in
    /// the order of its first candidate pair.
    pub groups: Vec<(GroupKey, GroupAnswer)>,
    /// `pruned`: pairs found ordered by their slice or excluded by its encoding;
    /// `too_large`: slices or encodings over the limits; `unasked`: pairs not examined
    /// because the budget ran out.
    pub counts: Counts,
    /// Events of the largest slice encoded.
    pub largest_slice: usize,
    pub out_of_budget: bool,
    pub elapsed: Duration,
}

impl PairsOutcome {
    /// (race, no race, unknown) group counts.
    pub fn answer_counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for (_, a) in &self.groups {
            match a {
                GroupAnswer::Race(_) => c.0 += 1,
                GroupAnswer::NoRace { .. } => c.1 += 1,
                GroupAnswer::Unknown(_) => c.2 += 1,
            }
        }
        c
    }
}

/// Asks the SMT predictor about the candidate pairs of the location groups `only` (every
/// group with a candidate pair if `None`), each pair on its own slice. `cfg.window` is not
/// used; `cfg.all_pairs` asks every pair of a group, not only until one races.
/// `progress(counts, groups left)` is called after every pair.
pub fn predict_pairs(
    vt: &ValueTrace,
    cfg: &SmtConfig,
    limits: SliceLimits,
    only: Option<&FxHashSet<GroupKey>>,
    progress: impl FnMut(&Counts, usize),
) -> Result<PairsOutcome> {
    if cfg.kind == SmtKind::RecipeAlt {
        return Err(Error::invalid(
            "slices hold events of the trace only: recipe-alt's alternative paths are asked \
             within windows (use mcm or recipe with slices)",
        ));
    }
    if limits.max_pairs == 0 || limits.max_slice == 0 {
        return Err(Error::invalid(
            "the slice and pair limits must be at least 1",
        ));
    }
    watched(|watch| pairs_with(vt, cfg, limits, only, progress, watch))
}

fn pairs_with(
    vt: &ValueTrace,
    cfg: &SmtConfig,
    limits: SliceLimits,
    only: Option<&FxHashSet<GroupKey>>,
    mut progress: impl FnMut(&Counts, usize),
    watch: &Watchdog,
) -> Result<PairsOutcome> {
    let start = Instant::now();
    let deadline = cfg.budget.and_then(|b| start.checked_add(b));
    let mut out = PairsOutcome::default();
    let concrete = vt.concrete()?;
    let ix = ReplayIndex::new(vt);
    let model = cfg.kind.model();
    let budget_words = || {
        format!(
            "the SMT budget ({} s) ran out before its pairs were examined",
            cfg.budget.map_or(0.0, |b| b.as_secs_f64())
        )
    };
    let Some(cands) = slice::trf_pairs(vt, &ix, only, limits.max_pairs, deadline) else {
        out.out_of_budget = true;
        if let Some(only) = only {
            let mut keys: Vec<GroupKey> = only.iter().copied().collect();
            keys.sort();
            out.groups = keys
                .into_iter()
                .map(|k| (k, GroupAnswer::Unknown(budget_words())))
                .collect();
        }
        out.elapsed = start.elapsed();
        return Ok(out);
    };
    let slicer = Slicer::new(vt, &ix);
    let pre = PreState::default();
    let n_groups = cands.groups.len();
    for (g, (key, pairs)) in cands.groups.iter().enumerate() {
        let mut race = None;
        let mut gap: Option<String> = None;
        for (k, &(e, f)) in pairs.iter().enumerate() {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                out.out_of_budget = true;
                out.counts.unasked += (pairs.len() - k) as u64;
                gap.get_or_insert_with(budget_words);
                break;
            }
            let events = match slicer.slice(e as usize, f as usize, limits.max_slice) {
                Slice::Ordered => {
                    out.counts.pruned += 1;
                    continue;
                }
                Slice::TooLarge => {
                    out.counts.too_large += 1;
                    gap.get_or_insert_with(|| {
                        format!(
                            "the slice of pair {e}→{f} holds over {} events (--max-slice)",
                            limits.max_slice
                        )
                    });
                    continue;
                }
                Slice::Events(v) => v,
            };
            out.largest_slice = out.largest_slice.max(events.len());
            let problem = Problem::build_events(vt, &concrete, &ix, &pre, &events, model);
            if problem.size() > cfg.max_atoms {
                out.counts.too_large += 1;
                gap.get_or_insert_with(|| {
                    format!(
                        "the encoding of pair {e}→{f}'s slice ({} events) exceeds {} atoms",
                        events.len(),
                        cfg.max_atoms
                    )
                });
                continue;
            }
            let ab = (
                problem.node(e).expect("the slice holds the pair"),
                problem.node(f).expect("the slice holds the pair"),
            );
            if problem.excluded(ab) {
                out.counts.pruned += 1;
                continue;
            }
            let answer = ask(&problem, ab, cfg, deadline, watch);
            match answer {
                None => {
                    out.out_of_budget = true;
                    out.counts.unasked += (pairs.len() - k) as u64;
                    gap.get_or_insert_with(budget_words);
                    break;
                }
                Some(Answer::Sat(schedule)) => {
                    let w = Witness {
                        model,
                        prefix: 0,
                        schedule,
                        race: (e, f),
                    };
                    let from = Replayer::new(vt, model);
                    match witness::replay_from(vt, &concrete, &ix, from, &w) {
                        Ok(()) => {
                            out.counts.sat += 1;
                            out.races.push(SmtRace { witness: w });
                            race.get_or_insert(out.races.len() - 1);
                            if !cfg.all_pairs {
                                break;
                            }
                        }
                        Err(_) => {
                            out.counts.replay_failed += 1;
                            gap.get_or_insert_with(|| {
                                format!("the witness of pair {e}→{f} did not replay")
                            });
                        }
                    }
                }
                Some(Answer::Unsat) => out.counts.unsat += 1,
                Some(Answer::Unknown) => {
                    out.counts.timeout += 1;
                    gap.get_or_insert_with(|| {
                        format!("the query of pair {e}→{f} timed out (--query-timeout)")
                    });
                }
            }
            progress(&out.counts, n_groups - g);
        }
        let answer = match (race, gap) {
            (Some(i), _) => GroupAnswer::Race(i),
            (None, Some(why)) => GroupAnswer::Unknown(why),
            (None, None) if cands.overflow[g] > 0 => GroupAnswer::Unknown(format!(
                "{} candidate pairs, more than --max-pairs {}: none of the first {} races",
                pairs.len() as u64 + cands.overflow[g],
                limits.max_pairs,
                pairs.len()
            )),
            (None, None) => GroupAnswer::NoRace {
                pairs: pairs.len() as u64,
            },
        };
        out.groups.push((*key, answer));
    }
    // A group asked about without a candidate pair: TRF orders all its pairs.
    if let Some(only) = only {
        let found: FxHashSet<GroupKey> = out.groups.iter().map(|(k, _)| *k).collect();
        let mut rest: Vec<GroupKey> = only.difference(&found).copied().collect();
        rest.sort();
        out.groups.extend(
            rest.into_iter()
                .map(|k| (k, GroupAnswer::NoRace { pairs: 0 })),
        );
    }
    out.elapsed = start.elapsed();
    Ok(out)
}

/// Encodes the problem and asks about its one pair; `None` if the deadline passes while
/// encoding.
fn ask(
    problem: &Problem<'_>,
    ab: (usize, usize),
    cfg: &SmtConfig,
    deadline: Option<Instant>,
    watch: &Watchdog,
) -> Option<Answer> {
    let mut session = watch.encode(problem, &[ab], deadline)?;
    Some(watch.query(&mut session, problem, ab, cfg.query_timeout, deadline))
}

/// The outcome as a race report: the races found, and notes on what was and was not
/// examined.
pub fn slice_report(
    vt: &ValueTrace,
    cfg: &SmtConfig,
    limits: SliceLimits,
    out: &PairsOutcome,
) -> RaceReport {
    let mut r = RaceReport::new(cfg.kind.name(), ReportKind::Pairs);
    r.events = vt.trace.len() as u64;
    for race in &out.races {
        let (e, f) = race.witness.race;
        let (a, b) = (vt.trace.events[e as usize], vt.trace.events[f as usize]);
        r.pairs.push(RacePair::new(e, a, f, b));
    }
    r.normalize();
    let c = &out.counts;
    let (race, none, unknown) = out.answer_counts();
    let model = match cfg.kind.model() {
        Model::Maximal => "maximal causal model (every read keeps what it read)",
        Model::Relaxed => {
            "RECIPE: reads may read other values while every branch keeps its outcome"
        }
    };
    r.notes.push(format!(
        "{model}, each candidate pair on its own slice of the trace (the events it needs); \
         sound: every pair comes with a witness schedule that replays"
    ));
    r.notes.push(format!(
        "location pairs: {race} race, {none} no race{}, {unknown} unknown; queries: {} sat, {} \
         unsat, {} timed out; {} pair(s) ordered or excluded before asking; largest slice {} \
         events",
        if cfg.kind.model() == Model::Maximal {
            " (proved)"
        } else {
            " (no race found)"
        },
        c.sat,
        c.unsat,
        c.timeout,
        c.pruned,
        out.largest_slice
    ));
    let mut why: Vec<&str> = Vec::new();
    for (_, a) in &out.groups {
        if let GroupAnswer::Unknown(reason) = a {
            if why.len() < 3 && !why.contains(&reason.as_str()) {
                why.push(reason);
            }
        }
    }
    if unknown > 0 {
        r.incomplete = Some(format!(
            "{unknown} location pair(s) not decided: {}",
            why.join("; ")
        ));
    } else if out.out_of_budget {
        r.incomplete = Some(
            "the --budget ran out while the candidate pairs were listed: location pairs \
             beyond that point were not looked at"
                .into(),
        );
    }
    r.extra.insert("mode".to_string(), "slices".into());
    c.put_into(&mut r.extra, false);
    let mut extra = |k: &str, v: serde_json::Value| {
        r.extra.insert(k.to_string(), v);
    };
    extra("groups_race", (race as u64).into());
    extra("groups_no_race", (none as u64).into());
    extra("groups_unknown", (unknown as u64).into());
    extra("largest_slice", (out.largest_slice as u64).into());
    extra("max_slice", (limits.max_slice as u64).into());
    extra("max_pairs", (limits.max_pairs as u64).into());
    extra("out_of_budget", out.out_of_budget.into());
    extra("seconds", out.elapsed.as_secs_f64().into());
    r
}

/// What a slice run proves for `racepred check` ([`racepred::verdict`]): its races, and per
/// location group asked about without a race, absence (`mcm`: every candidate pair ordered
/// or without a witness on its slice) or the reason it is unknown.
pub fn slice_evidence(
    vt: &ValueTrace,
    cfg: &SmtConfig,
    limits: SliceLimits,
    out: &PairsOutcome,
) -> racepred::verdict::SmtEvidence {
    use racepred::verdict::{SmtEvidence, SmtGap};
    let proves = cfg.kind.model() == Model::Maximal;
    let groups = out
        .groups
        .iter()
        .filter_map(|(k, g)| match g {
            GroupAnswer::Race(_) => None,
            GroupAnswer::NoRace { pairs } if proves => Some((*k, Ok(*pairs))),
            GroupAnswer::NoRace { .. } => Some((
                *k,
                Err(
                    "no race found on the slices, which RECIPE's relaxed reads do not prove"
                        .to_string(),
                ),
            )),
            GroupAnswer::Unknown(why) => Some((*k, Err(why.clone()))),
        })
        .collect();
    SmtEvidence {
        report: slice_report(vt, cfg, limits, out),
        witnesses: Default::default(),
        groups,
        // Every group asked about has an answer above; nothing else is asked.
        exact: Err(SmtGap::NotRun(
            "only the open location pairs are asked".into(),
        )),
    }
}
