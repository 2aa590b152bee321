//! PACER: proportional sampling race detection.
//!
//! Michael D. Bond, Katherine E. Coons, Kathryn S. McKinley, "PACER: Proportional Detection
//! of Data Races", PLDI 2010 — `../shared/papers/pacer-sampling.txt`.
//!
//! Execution is cut into global sampling periods (here: runs of `period` operations, each
//! entered with probability `r` by a seeded RNG, with the bias correction of §4; see
//! [`sampling`]). Inside a sampling period PACER is FastTrack (Alg. 7–8, the paper's variant
//! that clears the read map at writes). Outside it does almost nothing:
//!
//! - vector clocks are not incremented (non-sampling periods are *timeless*), so copies are
//!   shallow (shared clocks, Alg. 9) and joins whose source is a version the thread already
//!   received are skipped (version vectors per thread, version epochs per lock, volatile and
//!   condition; Alg. 10–11, Alg. 16 of App. C for volatile writes);
//! - reads and writes of variables without metadata do nothing (null read maps and write
//!   epochs); with metadata, they check for races with the sampled accesses and discard what
//!   FastTrack would replace or discard (Alg. 12–13), so metadata goes away as soon as a
//!   sampled access can no longer be the first access of a shortest race;
//! - every thread's clock is incremented at the start of each sampling period (§3.2), so a
//!   sampled access is never confused with an earlier unsampled one.
//!
//! Synchronisation: acquire/wait/volatile read join the object's clock into the thread's;
//! release and signal copy the thread's clock (a wait follows the latest signal only);
//! volatile write joins into the volatile's clock (App. C); fork and join as GENERIC
//! (Alg. 3–4). Transaction and method events are ignored.
//!
//! **Promises** (tested in `tests/pacer_props.rs`): at rate 1 it reports exactly
//! FastTrack's racy events and pairs; at rate 0 none; every pair it reports is a race (per
//! Djit+) whose first access was sampled, and every racy event is one FastTrack reports or
//! an access FastTrack skipped as a same-epoch repeat; every *sampled shortest race* is
//! reported (Theorem 2; tested on the first race on each variable, where FastTrack's state is
//! exact), so each FastTrack race is found with probability about `r` (a binomial test).
//! Reports are racy events ([`ReportKind::RacyEvents`]) plus the pairs (sampled earlier
//! access, racy access) behind them. Counters (Table 3) go into the report's `extra`.
//!
//! Where this follows FastTrack rather than the paper's extracted pseudo-code: the
//! same-epoch tests come before the race checks (as in Alg. 7–8), and they compare
//! FastTrack's epoch, which each thread keeps as a scalar besides PACER's clock (see
//! [`detector`]); without this PACER at rate 1 would report repeats that FastTrack skips.
//! Unsampled reads on the slow path leave a *ghost* read epoch (thread, FastTrack epoch),
//! used only for those tests.
//!
//! **What is not promised.** Outside sampling periods an unsampled repeat of a sampled
//! access (same thread, kind and FastTrack epoch) replaces it: the race with the sampled one
//! is then not a shortest race. FastTrack keeps one entry for such a run of repeats, so a
//! race FastTrack reports through that entry is found only if the *last* access of the run
//! was sampled (the ignored test `first_fasttrack_race_with_any_sampled_access_of_its_entry_is_reported`
//! shows the difference). After a first race on a variable FastTrack's same-epoch fast
//! paths depend on unsampled reads PACER does not see: PACER may then report a repeat
//! FastTrack skipped (always a true race), and rarely miss one it reports (ignored tests
//! `sampled_fasttrack_races_are_reported`, `pacer_races_are_fasttrack_races_strict`).

mod arena;
pub mod counters;
pub mod detector;
mod filter;
mod pages;
pub mod sampling;

pub use counters::{Counters, PeriodCounters};
pub use detector::{Detector, PacerConfig};
pub use sampling::Sampler;

use crate::analysis::AnalysisKind;
use crate::analysis::{Analysis, AnalysisOptions, Side};
use crate::report::{RaceReport, ReportKind};
use crate::trace::{Event, Names};

/// PACER as an [`Analysis`] (one trial).
pub struct Pacer {
    cfg: PacerConfig,
    det: Detector,
}

impl Pacer {
    pub fn new(cfg: PacerConfig) -> Pacer {
        Pacer {
            det: Detector::new(&cfg),
            cfg,
        }
    }

    /// From the shared options: `rate`, `period` (0 = [`PacerConfig::DEFAULT_PERIOD`]),
    /// `seed`.
    pub fn from_options(opts: &AnalysisOptions) -> Pacer {
        Pacer::new(config_from_options(opts))
    }

    pub fn detector(&self) -> &Detector {
        &self.det
    }

    /// The detector, for a caller that counts some operations itself
    /// ([`Detector::skip_unsampled`]).
    pub fn detector_mut(&mut self) -> &mut Detector {
        &mut self.det
    }
}

/// The detector configuration the shared options describe.
pub fn config_from_options(opts: &AnalysisOptions) -> PacerConfig {
    PacerConfig {
        rate: opts.rate,
        period: if opts.period == 0 {
            PacerConfig::DEFAULT_PERIOD
        } else {
            opts.period
        },
        seed: opts.seed,
        pairs: true,
    }
}

impl Analysis for Pacer {
    fn name(&self) -> &'static str {
        AnalysisKind::Pacer.name()
    }

    #[inline]
    fn on_event(&mut self, index: u64, ev: &Event, _side: Side<'_>) {
        self.det.on_event(index, ev);
    }

    #[inline]
    fn on_events(&mut self, first: u64, events: &[Event]) {
        self.det.on_events(first, events);
    }

    fn finish(&mut self, _names: &Names) -> RaceReport {
        build_report(&mut self.det, &self.cfg)
    }
}

#[cold]
#[inline(never)]
fn build_report(det: &mut Detector, cfg: &PacerConfig) -> RaceReport {
    let mut r = RaceReport::new(AnalysisKind::Pacer.name(), ReportKind::RacyEvents);
    let (racy, pairs) = det.take_races();
    r.racy_events = racy;
    r.pairs = pairs;
    r.normalize();
    let s = det.sampler();
    let (periods, sampled) = (s.periods(), s.sampling_periods());
    r.notes.push(format!(
        "PACER sampling: rate {}, period {} operations, seed {}; effective rate {:.4} \
         ({sampled} of {periods} periods sampled). Each race is reported with probability \
         about the rate (racy events; pairs name the sampled earlier access).",
        cfg.rate,
        cfg.period,
        cfg.seed,
        det.effective_rate()
    ));
    if cfg.rate > 0.0 && cfg.rate < 1.0 && cfg.period > 0 {
        r.notes
            .extend(few_periods_note(periods, cfg.period, s.total_ops()));
    }
    let c = det.counters();
    r.extra.insert("rate".into(), cfg.rate.into());
    r.extra.insert("period".into(), cfg.period.into());
    r.extra.insert("seed".into(), cfg.seed.into());
    r.extra.insert("periods".into(), periods.into());
    r.extra.insert("sampling_periods".into(), sampled.into());
    r.extra
        .insert("effective_rate".into(), det.effective_rate().into());
    r.extra
        .insert("counters".into(), serde_json::Value::Object(c.to_json()));
    r
}

/// Below this many periods a single trial's effective rate is called out as coarse.
pub const FEW_PERIODS: u64 = 100;

/// The longest period length, a power of ten, that cuts `ops` operations into at least
/// [`FEW_PERIODS`] periods (1 when none does).
pub fn suggest_period(ops: u64) -> u64 {
    let mut p = 1;
    while p * 10 * FEW_PERIODS <= ops {
        p *= 10;
    }
    p
}

/// For a trial of `ops` operations cut into `periods` periods of `period` operations:
/// when they are fewer than [`FEW_PERIODS`], a note saying the trial is coarse and which
/// `--period` is finer (the report's and `racepred sample`'s).
pub fn few_periods_note(periods: u64, period: u64, ops: u64) -> Option<String> {
    if periods >= FEW_PERIODS {
        return None;
    }
    let p = suggest_period(ops);
    Some(format!(
        "This trace is {periods} period(s) of {period} operations, each sampled whole: each \
         race is still found with probability about the rate over many trials, but a single \
         trial's effective rate is coarse (--period {p} gives {} periods).",
        ops.div_ceil(p)
    ))
}

#[cfg(test)]
mod tests;
