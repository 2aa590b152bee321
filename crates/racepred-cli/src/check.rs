//! `racepred check TRACE`: a verdict for every warning ([`racepred::verdict`]).
//!
//! Stages, each shown on the progress line: (1) one pass of the candidate analysis
//! (`tsan-hybrid`) and the fast sound ones (`syncp`, `shbp`, `osr`) over the trace in memory;
//! (2) the SMT predictor (`mcm`) within `--budget`, only if some candidate is still open;
//! (3) the verdicts, with a witness file per race when `--witness DIR` is given.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use racepred::analysis::{self, AnalysisKind, AnalysisOptions, Validation};
use racepred::report::{self, GroupKey};
use racepred::verdict::{self, SmtEvidence, SmtGap, VerdictKind};
use racepred::witness;
use racepred_smt::{SmtConfig, SmtKind};

use crate::args::CheckArgs;
use crate::outfile::{refuse_inputs, Out};
use crate::progress::Progress;
use crate::{checks, locations};

pub fn check(a: CheckArgs) -> Result<ExitCode> {
    refuse_inputs(&[&a.input.trace], &[a.output.output.as_deref()])?;
    checks::positive("--max-line", a.input.max_line)?;
    anyhow::ensure!(a.window > 0, "--window must be at least 1");
    for (flag, v) in [("--budget", a.budget), ("--query-timeout", a.query_timeout)] {
        anyhow::ensure!(
            v.is_finite() && v > 0.0 && v < 1e9,
            "{flag} must be a positive number of seconds (below 10^9), not {v}"
        );
    }
    let table = locations::load(&a.locations, &a.input.trace)?;
    let source_root = a
        .source_root
        .as_deref()
        .map(locations::source_root)
        .transpose()?;
    let mut progress = Progress::new();
    progress.message("check: reading the trace");
    let vt = crate::smt::read_value_trace(&a.input)?;
    let trace = &vt.trace;

    // Stage 1: candidates and the fast sound analyses, one pass.
    progress.message("check: tsan-hybrid, trf, shbp, syncp, osr");
    let opts = AnalysisOptions {
        group_racy: true,
        witness_cuts: a.witness.is_some(),
        ..AnalysisOptions::default()
    };
    let kinds = [
        AnalysisKind::TsanHybrid,
        AnalysisKind::Trf,
        AnalysisKind::Shbp,
        AnalysisKind::SyncP,
        AnalysisKind::Osr,
    ];
    let mut plan = analysis::Plan::new(&kinds, &opts, 1)?;
    let validation = if a.lenient {
        Validation::Lenient
    } else {
        Validation::Strict
    };
    let mut src = trace.source();
    let summary = analysis::run_pipelined(&mut src, &mut plan.analyses, validation, |_, _| {})
        .map_err(|e| e.in_file(&a.input.trace))?;
    for v in summary.violations.iter().take(10) {
        eprintln!(
            "racepred: warning: {}",
            v.to_error().in_file(&a.input.trace)
        );
    }
    let names = &trace.names;
    locations::check_coverage(table.as_ref(), names);
    let mut reports = plan.finish(names, summary.events);
    let osr = reports.pop().expect("five reports");
    let syncp = reports.pop().expect("five reports");
    let shbp = reports.pop().expect("five reports");
    let trf = reports.pop().expect("five reports");
    let candidates = reports.pop().expect("five reports");

    // Stage 2: the SMT predictor, if some candidate is still open.
    let sound = [&syncp, &shbp, &osr];
    let proved: std::collections::HashSet<GroupKey> = sound
        .iter()
        .flat_map(|r| r.pairs.iter().map(|p| p.group_key()))
        .collect();
    let trf_groups: std::collections::HashSet<GroupKey> =
        trf.pairs.iter().map(|p| p.group_key()).collect();
    let open = candidates
        .pairs
        .iter()
        .map(|p| p.group_key())
        .filter(|k| !proved.contains(k) && trf_groups.contains(k))
        .count();
    let smt = if a.no_smt {
        Some(not_run("--no-smt"))
    } else if open == 0 {
        None
    } else {
        Some(smt_stage(&a, &vt, open, &mut progress)?)
    };
    progress.finish();
    let mut v = verdict::decide(&candidates, &sound, &[&trf], smt.as_ref());
    if smt.is_none() {
        v.notes
            .push("every candidate was decided by syncp, shbp, osr or trf: no SMT stage".into());
    }

    // Witness files of the syncp races.
    if let Some(dir) = &a.witness {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for w in v
            .warnings
            .iter_mut()
            .filter(|w| w.verdict == VerdictKind::Race)
        {
            if let Some(cut) = &w.cut {
                let (e, f) = (cut.first, cut.second);
                let sched = witness::of_cut(trace, cut);
                let file = dir.join(format!("{}-{e}-{f}.std", w.by));
                write_witness(&vt, &sched, &file, &w.by, &a.input.trace)?;
                w.witness = Some(file.display().to_string());
            }
        }
    }

    let path = a.input.trace.display().to_string();
    let mut ctx = report::ReportContext::new(&path, names);
    ctx.locations = table.as_ref();
    ctx.lines = report::EventLines::of_trace(&trace.lines);
    if let Some((root, index)) = &source_root {
        ctx.source_root = Some(root);
        ctx.source_index = Some(index);
    }
    let mut out = Out::create(a.output.output.as_deref())?;
    let events = summary.events;
    if a.sarif {
        serde_json::to_writer_pretty(&mut out, &report::sarif::verdicts_sarif(&v, &ctx, events))?;
        writeln!(out)?;
    } else if a.output.json {
        serde_json::to_writer_pretty(&mut out, &report::json::verdicts_json(&v, &ctx, events))?;
        writeln!(out)?;
    } else {
        report::text::write_verdicts(&mut out, &v, &ctx, events)?;
    }
    out.finish()?;
    // 1: some pair is a race; 3: none is, but some pair has no verdict (as `analyze` for an
    // incomplete run without races); 0: every pair proved race-free (or none to check).
    let (race, _, unknown) = v.counts();
    Ok(if race > 0 {
        ExitCode::from(1)
    } else if unknown > 0 {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}

fn not_run(why: &str) -> SmtEvidence {
    SmtEvidence {
        report: racepred::report::RaceReport::new("mcm", racepred::report::ReportKind::Pairs),
        witnesses: Default::default(),
        exact: Err(SmtGap::NotRun(why.into())),
    }
}

/// Runs `mcm` over the trace's windows within the budget and says what it proved.
fn smt_stage(
    a: &CheckArgs,
    vt: &racepred::trace::values::ValueTrace,
    open: usize,
    progress: &mut Progress,
) -> Result<SmtEvidence> {
    let cfg = SmtConfig {
        kind: SmtKind::Mcm,
        window: a.window,
        query_timeout: Duration::from_secs_f64(a.query_timeout),
        budget: Some(Duration::from_secs_f64(a.budget)),
        all_pairs: false,
        max_atoms: SmtConfig::DEFAULT_MAX_ATOMS,
    };
    let out = racepred_smt::predict(vt, &cfg, |c| {
        progress.message(&format!(
            "check: mcm on {open} open candidate location pair(s): {} sat, {} unsat, {} timed \
             out, window {}",
            c.sat, c.unsat, c.timeout, c.windows
        ))
    })
    .map_err(|e| e.in_file(&a.input.trace))?;
    let mut ev = racepred_smt::evidence(vt, &cfg, &out);
    let mut witnesses = std::collections::HashMap::new();
    if let Some(dir) = &a.witness {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for race in &out.races {
            let (e, f) = race.witness.race;
            let file = dir.join(format!("mcm-{e}-{f}.std"));
            write_witness(vt, &race.witness, &file, "mcm", &a.input.trace)?;
            witnesses.insert((e, f), file.display().to_string());
        }
    }
    ev.witnesses = witnesses;
    Ok(ev)
}

fn write_witness(
    vt: &racepred::trace::values::ValueTrace,
    w: &witness::Witness,
    file: &Path,
    by: &str,
    trace: &Path,
) -> Result<()> {
    let (e, f) = w.race;
    let header = format!(
        "racepred witness: {by} race between events {e} and {f} of {}\n\
         check it with: racepred replay {} {}",
        trace.display(),
        trace.display(),
        file.display()
    );
    std::fs::write(file, witness::render(vt, w, &header))
        .with_context(|| format!("cannot write {}", file.display()))
}
