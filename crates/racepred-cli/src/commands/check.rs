//! `racepred check TRACE`: a verdict for every warning ([`racepred::verdict`]).
//!
//! Stages, each shown on the progress line: (1) one streaming pass of the candidate analysis
//! (`tsan-hybrid`), the proof of absence (`trf`) and the fast sound ones (`syncp`, `shbp`,
//! `osr`); then, only if needed, the trace is read into memory for
//! (2) the SMT predictor (`mcm`) within `--budget`, if some candidate is still open: each of
//! its pairs on its own slice of the trace (`racepred_smt::slice`);
//! (3) the verdicts, with a witness file per race when `--witness DIR` is given.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use racepred::analysis::{self, AnalysisKind, AnalysisOptions, Validation};
use racepred::report::{self, GroupKey};
use racepred::verdict::{self, SmtEvidence, SmtGap, VerdictKind};
use racepred::witness;
use racepred_smt::{SliceLimits, SmtConfig, SmtKind};
use rustc_hash::FxHashSet;

use crate::args::CheckArgs;
use crate::outfile::{refuse_inputs, Out};
use crate::progress::Progress;
use crate::smt::write_witness;
use crate::{checks, locations};

pub fn check(a: CheckArgs) -> Result<ExitCode> {
    refuse_inputs(&[&a.input.trace], &[a.output.output.as_deref()])?;
    checks::positive("--max-line", a.input.max_line)?;
    let limits = a.slices.limits()?;
    checks::seconds("--budget", a.budget)?;
    checks::seconds("--query-timeout", a.query_timeout)?;
    let table = locations::load(&a.locations, &a.input.trace)?;
    let source_root = locations::source_root(&a.sarif)?;
    let mut progress = Progress::new();

    // Stage 1: candidates and the fast sound analyses, one streaming pass.
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
    // Standard input can be read once: into memory, then.
    let stdin_trace = if a.input.trace == Path::new("-") {
        Some(crate::input::read_value_trace(&a.input)?)
    } else {
        None
    };
    let mut src: Box<dyn racepred::trace::EventSource + Send + '_> = match &stdin_trace {
        Some(vt) => Box::new(vt.trace.source()),
        None => crate::input::open_input(&a.input)?,
    };
    let summary = analysis::run_pipelined(&mut *src, &mut plan.analyses, validation, |_, _| {})
        .map_err(|e| e.in_file(&a.input.trace))?;
    for v in summary.violations.iter().take(10) {
        eprintln!(
            "racepred: warning: {}",
            v.to_error().in_file(&a.input.trace)
        );
    }
    let names = src.names();
    locations::check_coverage(table.as_ref(), names);
    let mut reports = plan.finish(names, summary.events);
    let osr = reports.pop().expect("five reports");
    let syncp = reports.pop().expect("five reports");
    let shbp = reports.pop().expect("five reports");
    let trf = reports.pop().expect("five reports");
    let candidates = reports.pop().expect("five reports");

    // Stage 2: the SMT predictor, if some candidate is still open.
    let sound = [&syncp, &shbp, &osr];
    let proved: std::collections::HashSet<GroupKey> =
        sound.iter().flat_map(|r| r.group_keys()).collect();
    let trf_groups = trf.group_keys();
    let open: FxHashSet<GroupKey> = candidates
        .pairs
        .iter()
        .map(|p| p.group_key())
        .filter(|k| !proved.contains(k) && trf_groups.contains(k))
        .collect();
    // The SMT stage and the witness files need the whole trace (with its values) in memory:
    // read it only then.
    let races = candidates
        .pairs
        .iter()
        .any(|p| proved.contains(&p.group_key()));
    let need_trace = (!open.is_empty() && !a.no_smt) || (a.witness.is_some() && races);
    let read;
    let vt = match &stdin_trace {
        Some(vt) => Some(vt),
        None if need_trace => {
            progress.message("check: reading the trace into memory");
            read = crate::input::read_value_trace(&a.input)?;
            Some(&read)
        }
        None => None,
    };
    let smt = match vt {
        _ if a.no_smt => Some(not_run("--no-smt")),
        _ if open.is_empty() => None,
        Some(vt) => Some(smt_stage(&a, vt, &open, limits, &mut progress)?),
        None => unreachable!("the trace is read when a candidate is open"),
    };
    progress.finish();
    let mut v = verdict::decide(&candidates, &sound, &[&trf], smt.as_ref());
    if smt.is_none() {
        v.notes
            .push("every candidate was decided by syncp, shbp, osr or trf: no SMT stage".into());
    }

    // Witness files of the syncp and osr races.
    if let (Some(dir), Some(vt)) = (&a.witness, vt) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for w in v
            .warnings
            .iter_mut()
            .filter(|w| w.verdict == VerdictKind::Race)
        {
            if let Some(cut) = &w.cut {
                let sched = witness::of_cut(&vt.trace, cut);
                let file = write_witness(vt, None, &sched, dir, &w.by, &a.input.trace)?;
                w.witness = Some(file.display().to_string());
            }
        }
    }

    let path = a.input.trace.display().to_string();
    let mut ctx = report::ReportContext::new(&path, names);
    ctx.locations = table.as_ref();
    let shown = || {
        (v.warnings.iter())
            .flat_map(|w| [w.pair.first, w.pair.second])
            .collect()
    };
    ctx.lines =
        locations::lines_after_stream(&a.input, src.position().line, summary.events, shown)?;
    if let Some((root, index)) = &source_root {
        ctx.source_root = Some(root);
        ctx.source_index = Some(index);
    }
    let mut out = Out::create(a.output.output.as_deref())?;
    let events = summary.events;
    if a.sarif.sarif {
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
        groups: Default::default(),
        exact: Err(SmtGap::NotRun(why.into())),
    }
}

/// Runs `mcm` on each open location pair's candidate pairs, each on its own slice, within
/// the budget, and says what it proved.
fn smt_stage(
    a: &CheckArgs,
    vt: &racepred::trace::values::ValueTrace,
    open: &FxHashSet<GroupKey>,
    limits: SliceLimits,
    progress: &mut Progress,
) -> Result<SmtEvidence> {
    let cfg = SmtConfig {
        query_timeout: checks::seconds("--query-timeout", a.query_timeout)?,
        budget: Some(checks::seconds("--budget", a.budget)?),
        ..SmtConfig::new(SmtKind::Mcm)
    };
    progress.message(&format!(
        "check: mcm on the slices of {} open location pair(s)",
        open.len()
    ));
    let out = racepred_smt::predict_pairs(vt, &cfg, limits, Some(open), |c, left| {
        progress.message(&format!(
            "check: mcm on slices, {left} of {} open location pair(s) left: {} sat, {} unsat, \
             {} timed out",
            open.len(),
            c.sat,
            c.unsat,
            c.timeout
        ))
    })
    .map_err(|e| e.in_file(&a.input.trace))?;
    let mut witnesses = std::collections::HashMap::new();
    if let Some(dir) = &a.witness {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for race in &out.races {
            let file = write_witness(vt, None, &race.witness, dir, "mcm", &a.input.trace)?;
            witnesses.insert(race.witness.race, file.display().to_string());
        }
    }
    let mut ev = racepred_smt::slice_evidence(vt, &cfg, limits, &out);
    ev.witnesses = witnesses;
    Ok(ev)
}
