//! The multi-trial sampling experiment (the paper's §5.2, Figures 3–5): run PACER many
//! times per sampling rate and measure how often each FastTrack race is found.
//!
//! A *dynamic race* is one racy event of the baseline (FastTrack) report; a *distinct race*
//! is a pair of source locations (earlier access, racy access) when the baseline has pairs,
//! else the racy access's location. A distinct race is detected in a trial when any of its
//! dynamic races is. Detection rates are frequencies over trials; the per-rate figures are
//! unweighted means over races, as in the paper.

use serde::Serialize;

use crate::analysis::{create, run_trace, AnalysisKind, AnalysisOptions};
use crate::error::Result;
use crate::report::{place, RaceReport};
use crate::trace::{Event, Trace};

use crate::analysis::pacer::{Detector, PacerConfig};

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct ExperimentConfig {
    /// Sampling rates to sweep (each 0–1).
    pub rates: Vec<f64>,
    /// Trials per rate; 0 = the paper's `min(max(⌈10/r⌉, 50), 500)`.
    pub trials: u32,
    pub seed: u64,
    /// Period length in operations (0 = [`PacerConfig::DEFAULT_PERIOD`]).
    pub period: u64,
}

impl Default for ExperimentConfig {
    fn default() -> Self {
        ExperimentConfig {
            rates: vec![0.01, 0.03, 0.1, 0.25, 1.0],
            trials: 0,
            seed: 0,
            period: 0,
        }
    }
}

impl ExperimentConfig {
    /// The paper's number of trials for rate `r` (§5.1).
    pub fn paper_trials(r: f64) -> u32 {
        if r <= 0.0 {
            return 50;
        }
        ((10.0 / r).ceil() as u32).clamp(50, 500)
    }

    fn trials_for(&self, r: f64) -> u32 {
        if self.trials == 0 {
            Self::paper_trials(r)
        } else {
            self.trials
        }
    }
}

/// One distinct race of the baseline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DistinctRace {
    /// Location of the earlier access (absent when the baseline has no pairs).
    pub first_loc: Option<String>,
    pub second_loc: String,
    /// Positions (in [`Experiment::dynamic_races`]) of its dynamic races.
    pub dynamic: Vec<u32>,
}

/// Results at one sampling rate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RatePoint {
    pub rate: f64,
    pub trials: u32,
    pub effective_rate_mean: f64,
    pub effective_rate_sd: f64,
    /// Mean over dynamic races of their detection frequency (Figure 3).
    pub dynamic_detection: f64,
    /// Mean over distinct races of their detection frequency (Figure 4).
    pub distinct_detection: f64,
    /// Detection frequency of each distinct race, aligned with [`Experiment::distinct`]
    /// (Figure 5 sorts them).
    pub per_distinct: Vec<f64>,
    /// Number of trials that found each dynamic race, aligned with
    /// [`Experiment::dynamic_races`].
    pub per_dynamic: Vec<u32>,
    /// Mean racy events per trial.
    pub mean_racy_events: f64,
    /// Racy events reported that the baseline does not have, summed over trials.
    pub outside_baseline: u64,
}

/// The whole experiment, as plain data (JSON through serde; CSV below).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Experiment {
    pub baseline: String,
    pub events: u64,
    /// Trace indices of the baseline's racy events.
    pub dynamic_races: Vec<u64>,
    pub distinct: Vec<DistinctRace>,
    pub points: Vec<RatePoint>,
}

/// Runs the experiment against a baseline report (FastTrack's, normally).
pub fn experiment(trace: &Trace, baseline: &RaceReport, cfg: &ExperimentConfig) -> Experiment {
    experiment_with_progress(trace, baseline, cfg, &mut |_, _| {})
}

/// [`experiment`], calling `progress(trials done, trials in all)` after every trial (for a
/// progress bar; a sweep over a large trace runs for minutes).
pub fn experiment_with_progress(
    trace: &Trace,
    baseline: &RaceReport,
    cfg: &ExperimentConfig,
    progress: &mut dyn FnMut(u64, u64),
) -> Experiment {
    let total_trials: u64 = cfg.rates.iter().map(|&r| cfg.trials_for(r) as u64).sum();
    let mut trials_done = 0u64;
    let dynamic: Vec<u64> = baseline.racy_set().into_iter().collect();
    let pos = |i: u64| dynamic.binary_search(&i).ok().map(|p| p as u32);
    let mut distinct: Vec<DistinctRace> = Vec::new();
    // Distinct races by location (pair), told apart by variable where a location is
    // missing ([`place`]); named by location, or `- (variable)` without one.
    let mut keys: rustc_hash::FxHashMap<(Option<u64>, u64), usize> = Default::default();
    let name = |e: &Event| {
        if e.loc.is_none() {
            format!("- ({})", trace.names.var(e.var()))
        } else {
            trace.names.loc(e.loc).to_string()
        }
    };
    let mut add =
        |first: Option<&Event>, second: &Event, p: u32, distinct: &mut Vec<DistinctRace>| {
            let key = (first.map(place), place(second));
            let g = *keys.entry(key).or_insert_with(|| {
                distinct.push(DistinctRace {
                    first_loc: first.map(name),
                    second_loc: name(second),
                    dynamic: Vec::new(),
                });
                distinct.len() - 1
            });
            if distinct[g].dynamic.last() != Some(&p) {
                distinct[g].dynamic.push(p);
            }
        };
    if baseline.pairs.is_empty() {
        for e in &baseline.racy_events {
            if let Some(p) = pos(e.index) {
                add(None, &e.event, p, &mut distinct);
            }
        }
    } else {
        for pr in &baseline.pairs {
            if let Some(p) = pos(pr.second) {
                add(Some(&pr.first_event), &pr.second_event, p, &mut distinct);
            }
        }
    }
    let period = if cfg.period == 0 {
        PacerConfig::DEFAULT_PERIOD
    } else {
        cfg.period
    };
    let mut points = Vec::new();
    let mut found = vec![false; dynamic.len()];
    for (ri, &rate) in cfg.rates.iter().enumerate() {
        let trials = cfg.trials_for(rate);
        let mut per_dynamic = vec![0u32; dynamic.len()];
        let mut per_distinct = vec![0u32; distinct.len()];
        let (mut eff_sum, mut eff_sq, mut racy_sum, mut outside) = (0.0, 0.0, 0u64, 0u64);
        for trial in 0..trials {
            let seed = trial_seed(cfg.seed, ri as u64, trial as u64);
            let mut det = Detector::new(&PacerConfig {
                rate,
                period,
                seed,
                pairs: false,
            });
            for (i, ev) in trace.events.iter().enumerate() {
                det.on_event(i as u64, ev);
            }
            let eff = det.effective_rate();
            eff_sum += eff;
            eff_sq += eff * eff;
            found.iter_mut().for_each(|f| *f = false);
            racy_sum += det.racy_events().len() as u64;
            for e in det.racy_events() {
                match pos(e.index) {
                    Some(p) => found[p as usize] = true,
                    None => outside += 1,
                }
            }
            for (c, &f) in per_dynamic.iter_mut().zip(&found) {
                *c += f as u32;
            }
            for (c, d) in per_distinct.iter_mut().zip(&distinct) {
                *c += d.dynamic.iter().any(|&p| found[p as usize]) as u32;
            }
            trials_done += 1;
            progress(trials_done, total_trials);
        }
        let n = trials.max(1) as f64;
        let mean = eff_sum / n;
        let freq = |c: &u32| *c as f64 / n;
        let per_distinct: Vec<f64> = per_distinct.iter().map(freq).collect();
        points.push(RatePoint {
            rate,
            trials,
            effective_rate_mean: mean,
            effective_rate_sd: (eff_sq / n - mean * mean).max(0.0).sqrt(),
            dynamic_detection: mean_of(per_dynamic.iter().map(freq)),
            distinct_detection: mean_of(per_distinct.iter().copied()),
            per_distinct,
            per_dynamic,
            mean_racy_events: racy_sum as f64 / n,
            outside_baseline: outside,
        });
    }
    Experiment {
        baseline: baseline.analysis.clone(),
        events: trace.len() as u64,
        dynamic_races: dynamic,
        distinct,
        points,
    }
}

/// [`experiment`] against FastTrack from the analysis registry.
pub fn experiment_vs_fasttrack(trace: &Trace, cfg: &ExperimentConfig) -> Result<Experiment> {
    experiment_vs_fasttrack_with_progress(trace, cfg, &mut |_, _| {})
}

/// [`experiment_vs_fasttrack`] with a progress callback (see [`experiment_with_progress`]).
pub fn experiment_vs_fasttrack_with_progress(
    trace: &Trace,
    cfg: &ExperimentConfig,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Experiment> {
    let ft = create(AnalysisKind::FastTrack, &AnalysisOptions::default())?;
    let baseline = run_trace(trace, &mut [ft]).remove(0);
    Ok(experiment_with_progress(trace, &baseline, cfg, progress))
}

fn mean_of(it: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut n) = (0.0, 0usize);
    for x in it {
        s += x;
        n += 1;
    }
    if n == 0 {
        f64::NAN
    } else {
        s / n as f64
    }
}

/// Distinct, well-mixed seeds per (rate, trial) (SplitMix64 finaliser).
pub fn trial_seed(seed: u64, rate_index: u64, trial: u64) -> u64 {
    let mut z = seed
        .wrapping_add(rate_index.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(trial.wrapping_mul(0xD1B5_4A32_D192_ED03));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Experiment {
    /// One row per rate: `rate,trials,effective_rate,effective_rate_sd,dynamic_detection,
    /// distinct_detection,mean_racy_events,outside_baseline`.
    pub fn summary_csv(&self) -> String {
        let mut s = String::from(
            "rate,trials,effective_rate,effective_rate_sd,dynamic_detection,distinct_detection,mean_racy_events,outside_baseline\n",
        );
        for p in &self.points {
            s.push_str(&format!(
                "{},{},{:.6},{:.6},{:.6},{:.6},{:.3},{}\n",
                p.rate,
                p.trials,
                p.effective_rate_mean,
                p.effective_rate_sd,
                p.dynamic_detection,
                p.distinct_detection,
                p.mean_racy_events,
                p.outside_baseline
            ));
        }
        s
    }

    /// One row per (rate, distinct race): `rate,race,first_loc,second_loc,dynamic_races,
    /// detection`.
    pub fn per_race_csv(&self) -> String {
        let mut s = String::from("rate,race,first_loc,second_loc,dynamic_races,detection\n");
        for p in &self.points {
            for (i, (d, f)) in self.distinct.iter().zip(&p.per_distinct).enumerate() {
                s.push_str(&format!(
                    "{},{},{},{},{},{:.6}\n",
                    p.rate,
                    i,
                    csv_field(d.first_loc.as_deref().unwrap_or("")),
                    csv_field(&d.second_loc),
                    d.dynamic.len(),
                    f
                ));
            }
        }
        s
    }

    /// The experiment as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".into())
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The experiment's printers with source locations (`racepred sample` with a location
/// table): the raw location names stay, the table's text comes beside them.
impl Experiment {
    /// [`Experiment::per_race_csv`] with two more columns, `first_source,second_source`
    /// (empty where the table has no entry).
    pub fn per_race_csv_with_sources(&self, table: &crate::report::LocationTable) -> String {
        let src = |l: &str| csv_field(table.get(l).unwrap_or(""));
        let mut s = String::from(
            "rate,race,first_loc,second_loc,dynamic_races,detection,first_source,second_source\n",
        );
        for p in &self.points {
            for (i, (d, f)) in self.distinct.iter().zip(&p.per_distinct).enumerate() {
                let first = d.first_loc.as_deref().unwrap_or("");
                s.push_str(&format!(
                    "{},{},{},{},{},{:.6},{},{}\n",
                    p.rate,
                    i,
                    csv_field(first),
                    csv_field(&d.second_loc),
                    d.dynamic.len(),
                    f,
                    if first.is_empty() {
                        String::new()
                    } else {
                        src(first)
                    },
                    src(&d.second_loc),
                ));
            }
        }
        s
    }

    /// [`Experiment::to_json`] with `locations` (the table's file) and, per distinct race,
    /// `first_source` / `second_source` (`null` where the table has no entry).
    pub fn to_json_with_sources(&self, table: &crate::report::LocationTable) -> String {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        let get = |l: Option<&str>| -> serde_json::Value {
            l.and_then(|l| table.get(l))
                .map_or(serde_json::Value::Null, Into::into)
        };
        if let Some(races) = v.get_mut("distinct").and_then(|d| d.as_array_mut()) {
            for (r, d) in races.iter_mut().zip(&self.distinct) {
                r["first_source"] = get(d.first_loc.as_deref());
                r["second_source"] = get(Some(&d.second_loc));
            }
        }
        if let Some(o) = v.as_object_mut() {
            let name = table
                .path()
                .map_or_else(|| "(in memory)".to_string(), |p| p.display().to_string());
            o.insert("locations".into(), name.into());
        }
        serde_json::to_string_pretty(&v).unwrap_or_else(|_| "{}".into())
    }
}

#[cfg(test)]
mod source_tests {
    use super::*;
    use crate::report::LocationTable;

    #[test]
    fn sources_beside_location_names() {
        let exp = Experiment {
            baseline: "fasttrack".into(),
            events: 10,
            dynamic_races: vec![3],
            distinct: vec![DistinctRace {
                first_loc: Some("1".into()),
                second_loc: "2".into(),
                dynamic: vec![0],
            }],
            points: vec![RatePoint {
                rate: 1.0,
                trials: 1,
                effective_rate_mean: 1.0,
                effective_rate_sd: 0.0,
                dynamic_detection: 1.0,
                distinct_detection: 1.0,
                per_distinct: vec![1.0],
                per_dynamic: vec![1],
                mean_racy_events: 1.0,
                outside_baseline: 0,
            }],
        };
        let t = LocationTable::parse("1\tA.java:3:4\n").unwrap();
        let csv = exp.per_race_csv_with_sources(&t);
        assert_eq!(csv.lines().nth(1), Some("1,0,1,2,1,1.000000,A.java:3:4,"));
        let v: serde_json::Value = serde_json::from_str(&exp.to_json_with_sources(&t)).unwrap();
        assert_eq!(v["distinct"][0]["first_source"], "A.java:3:4");
        assert_eq!(v["distinct"][0]["second_source"], serde_json::Value::Null);
        assert_eq!(v["locations"], "(in memory)");
    }

    /// Races without locations (a CSV trace's) are distinct per variable, named by it.
    #[test]
    fn distinct_races_without_locations_by_variable() {
        let t = Trace::read_from(&mut crate::trace::csv::CsvReader::new(
            "w(x),\n,w(x)\nw(y),\n,w(y)\nw(x),\n,w(x)\n".as_bytes(),
        ))
        .unwrap();
        let base = crate::analysis::run_one(
            &t,
            crate::analysis::create(AnalysisKind::FastTrack, &AnalysisOptions::default()).unwrap(),
        );
        let exp = experiment(
            &t,
            &base,
            &ExperimentConfig {
                rates: vec![1.0],
                trials: 1,
                ..ExperimentConfig::default()
            },
        );
        let names: Vec<&str> = exp.distinct.iter().map(|d| d.second_loc.as_str()).collect();
        assert_eq!(names, ["- (x)", "- (y)"]);
        assert_eq!(exp.distinct[0].dynamic.len(), 3); // the second, fifth and sixth rows
    }
}
