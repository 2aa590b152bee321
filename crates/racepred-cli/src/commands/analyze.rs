//! `racepred analyze`: the selected analyses in one pass over a trace, and their reports.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::ArgMatches;
use racepred::analysis::{self, AnalysisKind, AnalysisOptions, ClockKind, Engine, Validation};
use racepred::report::{self, RaceReport};
use racepred::trace::EventSource;
use racepred_smt::SmtKind;

use super::*;
use crate::args::{AnalyzeArgs, ClockArg};
use crate::checks;
use crate::locations;
use crate::outfile::refuse_inputs;
use crate::progress::Progress;

fn analysis_options(a: &AnalyzeArgs) -> Result<AnalysisOptions> {
    checks::rate("--rate", a.rate)?;
    checks::period("--period", a.period)?;
    Ok(AnalysisOptions {
        clock: match a.clock {
            ClockArg::Vector => ClockKind::Vector,
            ClockArg::Tree => ClockKind::Tree,
        },
        streaming: a.streaming,
        history: a.history,
        all_pairs: a.all_pairs,
        witness_cuts: a.witness.is_some(),
        group_racy: !a.all_pairs,
        group_pairs: !a.all_pairs,
        rate: a.rate,
        period: a.period,
        seed: a.seed,
        conservative: a.conservative,
        ignore_global: a.ignore_global.clone(),
    })
}

/// The analyses named by `-a`, each once, in the order given: the streaming ones and the
/// SMT predictors.
fn analysis_kinds(names: &[String]) -> Result<(Vec<AnalysisKind>, Vec<SmtKind>)> {
    let mut kinds = Vec::new();
    let mut smt = Vec::new();
    for n in names.iter().flat_map(|s| s.split(',')) {
        let row = analysis::row(n.trim()).with_context(|| {
            let all = analysis::names(|_| true);
            format!("unknown analysis `{n}` (known: {})", all.join(", "))
        })?;
        match row.engine {
            Engine::Streaming(k, _) if !kinds.contains(&k) => kinds.push(k),
            Engine::Streaming(..) => {}
            Engine::Smt => {
                let k = SmtKind::from_name(row.name)
                    .with_context(|| format!("`{}` is not an SMT predictor", row.name))?;
                if !smt.contains(&k) {
                    smt.push(k);
                }
            }
        }
    }
    Ok((kinds, smt))
}

pub(super) fn analyze(a: AnalyzeArgs, matches: Option<&ArgMatches>) -> Result<ExitCode> {
    refuse_inputs(&[&a.input.trace], &[a.output.output.as_deref()])?;
    let opts = analysis_options(&a)?;
    let (kinds, smt_kinds) = analysis_kinds(&a.analyses)?;
    if let Some(m) = matches {
        let names: Vec<&str> = kinds
            .iter()
            .map(|k| k.name())
            .chain(smt_kinds.iter().map(|k| k.name()))
            .collect();
        checks::options_belong(m, &names)?;
        for (id, flag) in [("max_slice", "--max-slice"), ("max_pairs", "--max-pairs")] {
            anyhow::ensure!(
                a.slices || !checks::given(m, id),
                "{flag} limits the slices of --slices: give both or neither"
            );
        }
    }
    let jobs = checks::jobs(matches, a.jobs.map_or(1, |n| n.get()), a.all_pairs)?;
    let mut plan = analysis::Plan::new(&kinds, &opts, jobs)?;
    let table = locations::load(&a.locations, &a.input.trace)?;
    let source_root = locations::source_root(&a.sarif)?;
    // The SMT predictors need the whole trace with its values: read it into memory and feed
    // the streaming analyses from there too, so that every report shares one name table.
    // Witnesses given as cuts (`syncp --witness DIR`) are rendered from the trace in memory.
    let cut_witnesses = a.witness.is_some()
        && (kinds.contains(&AnalysisKind::SyncP) || kinds.contains(&AnalysisKind::Osr));
    let value_trace = if smt_kinds.is_empty() && !cut_witnesses {
        None
    } else {
        Some(crate::input::read_value_trace(&a.input)?)
    };
    let mut src: Box<dyn EventSource + Send + '_> = match &value_trace {
        Some(vt) => Box::new(vt.trace.source()),
        None => open_input(&a.input)?,
    };
    if !a.ignore_global.is_empty() {
        // RDIT sees addresses as ids only; the wrapper drops the named ones from each mbegin.
        src = Box::new(analysis::rdit::IgnoreGlobal::new(src, &a.ignore_global));
    }
    let validation = if a.lenient {
        Validation::Lenient
    } else {
        Validation::Strict
    };
    let mut progress = Progress::for_input(src.total_bytes());
    let summary = analysis::run_pipelined(&mut *src, &mut plan.analyses, validation, |e, b| {
        progress.update(e, b)
    })
    .map_err(|e| e.in_file(&a.input.trace))?;
    progress.finish();
    warn_violations(&summary.violations, &a.input.trace);
    if summary.violations.len() > 10 {
        eprintln!(
            "racepred: warning: {} more violation(s) not shown",
            summary.violations.len() - 10
        );
    }
    let names = src.names();
    locations::check_coverage(table.as_ref(), names);
    let mut reports: Vec<RaceReport> = plan.finish(names, summary.events);
    if let (Some(vt), Some(dir)) = (&value_trace, a.witness.as_deref()) {
        for r in reports.iter_mut().filter(|r| !r.cuts.is_empty()) {
            crate::smt::write_cut_witnesses(vt, r, dir, &a.input.trace)?;
        }
    }
    if let Some(vt) = &value_trace {
        let smt_opts = crate::smt::SmtOptions {
            window: a.window,
            slices: a.slices.then(|| a.slice_limits.limits()).transpose()?,
            query_timeout: a.query_timeout,
            budget: a.budget,
            all_pairs: a.all_pairs,
            witness_dir: a.witness.as_deref(),
        };
        for &k in &smt_kinds {
            reports.push(crate::smt::run(vt, k, &smt_opts, &a.input.trace)?);
        }
    }
    let shown = || reports.iter().flat_map(|r| r.shown_events()).collect();
    let path = trace_name(&a.input.trace);
    // The calling contexts `racepred record` wrote beside the trace, if any.
    let stacks = racepred::trace::stacks::Stacks::beside(&a.input.trace)?;
    let mut ctx = report::ReportContext::new(&path, names);
    ctx.locations = table.as_ref();
    ctx.stacks = stacks.as_ref();
    ctx.lines =
        locations::lines_after_stream(&a.input, src.position().line, summary.events, shown)?;
    if let Some((root, index)) = &source_root {
        ctx.source_root = Some(root);
        ctx.source_index = Some(index);
    }
    write_reports(&reports, &ctx, &a.output, a.sarif.sarif)?;
    Ok(if reports.iter().any(|r| r.has_races()) {
        ExitCode::from(1)
    } else if reports.iter().any(|r| r.incomplete.is_some()) {
        // No race found, but not everything was examined: not the "no race" of status 0.
        ExitCode::from(INCOMPLETE)
    } else {
        ExitCode::SUCCESS
    })
}
