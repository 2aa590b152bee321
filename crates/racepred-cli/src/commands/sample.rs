//! `racepred sample`: PACER's sampling trials against FastTrack (an experiment).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use racepred::trace;

use super::*;
use crate::args::SampleArgs;
use crate::checks;
use crate::locations;
use crate::outfile::refuse_inputs;
use crate::progress::Progress;

pub(super) fn sample(a: SampleArgs) -> Result<ExitCode> {
    use racepred::experiments::pacer_trials::{
        experiment_vs_fasttrack_with_progress, ExperimentConfig,
    };
    refuse_inputs(
        &[&a.input.trace],
        &[
            a.output.output.as_deref(),
            a.plot.as_deref(),
            a.csv.as_deref(),
        ],
    )?;
    let rates = match a.rate {
        Some(r) => vec![checks::rate("--rate", r)?],
        None if a.rates.is_empty() => ExperimentConfig::default().rates,
        None => a
            .rates
            .iter()
            .map(|&r| checks::rate("--rates", r))
            .collect::<Result<_>>()?,
    };
    checks::period("--period", a.period)?;
    let table = locations::load(&a.locations, &a.input.trace)?;
    let trace = read_whole(&a.input, false)?;
    locations::check_coverage(table.as_ref(), &trace.names);
    let cfg = ExperimentConfig {
        rates,
        trials: a.trials,
        seed: a.seed,
        period: a.period,
    };
    let mut progress = Progress::new();
    let exp = experiment_vs_fasttrack_with_progress(&trace, &cfg, &mut |done, total| {
        progress.trials(done, total)
    })?;
    progress.finish();
    let ops = trace.len() as u64;
    if let Some(note) =
        racepred::analysis::pacer::few_periods_note(ops.div_ceil(a.period), a.period, ops)
    {
        eprintln!("racepred: note: {note}");
    }
    if let Some(p) = &a.plot {
        racepred::experiments::plot::write_detection_plot(p, &exp)?;
    }
    if let Some(p) = &a.csv {
        let csv = match &table {
            Some(t) => exp.per_race_csv_with_sources(t),
            None => exp.per_race_csv(),
        };
        trace::write::write_atomic(p, csv.as_bytes())?;
    }
    let mut out = open_output(&a.output)?;
    if a.output.json {
        match &table {
            Some(t) => writeln!(out, "{}", exp.to_json_with_sources(t))?,
            None => writeln!(out, "{}", exp.to_json())?,
        }
    } else {
        if let Some(p) = table.as_ref().and_then(|t| t.path()) {
            // The summary is CSV on standard output; the table goes to the per-race CSV.
            eprintln!("racepred: locations: {}", p.display());
        }
        write!(out, "{}", exp.summary_csv())?;
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}
