//! Running the SMT predictors of `racepred-smt` for `analyze -a mcm|recipe|recipe-alt` and
//! `check`, and writing their witnesses. The trace comes read whole with its values, with
//! every reading option ([`crate::input::read_value_trace`]).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use racepred::report::RaceReport;
use racepred::trace::values::ValueTrace;
use racepred::witness;
use racepred_smt::{SmtConfig, SmtKind};

use crate::checks;
use crate::progress::Progress;

/// SMT options of `analyze`.
pub struct SmtOptions<'a> {
    pub window: usize,
    /// Ask each candidate pair on its slice, with these limits, instead of windows.
    pub slices: Option<racepred_smt::SliceLimits>,
    pub query_timeout: f64,
    pub budget: Option<f64>,
    pub all_pairs: bool,
    pub witness_dir: Option<&'a Path>,
}

/// Runs one SMT analysis; writes witnesses to the directory if asked.
pub fn run(
    vt: &ValueTrace,
    kind: SmtKind,
    opts: &SmtOptions<'_>,
    trace_path: &Path,
) -> Result<RaceReport> {
    let cfg = SmtConfig {
        kind,
        window: checks::positive("--window", opts.window)?,
        query_timeout: checks::seconds("--query-timeout", opts.query_timeout)?,
        budget: opts
            .budget
            .map(|b| checks::seconds("--budget", b))
            .transpose()?,
        all_pairs: opts.all_pairs,
        max_atoms: SmtConfig::DEFAULT_MAX_ATOMS,
    };
    let mut progress = Progress::new();
    let (races, mut report) = match opts.slices {
        Some(limits) => {
            anyhow::ensure!(
                kind != SmtKind::RecipeAlt,
                "--slices asks about pairs of the trace; recipe-alt's alternative paths are \
                 asked within windows (drop --slices, or use mcm or recipe)"
            );
            let out = racepred_smt::predict_pairs(vt, &cfg, limits, None, |c, left| {
                progress.message(&format!(
                    "{} on slices: {} sat, {} unsat, {} timed out; {left} location pair(s) left",
                    kind.name(),
                    c.sat,
                    c.unsat,
                    c.timeout
                ))
            })
            .map_err(|e| e.in_file(trace_path))?;
            let report = racepred_smt::slice_report(vt, &cfg, limits, &out);
            (out.races, report)
        }
        None => {
            let out = racepred_smt::predict(vt, &cfg, |c| {
                progress.message(&format!(
                    "{}: {} sat, {} unsat, {} timed out, {} skipped, {} not asked",
                    kind.name(),
                    c.sat,
                    c.unsat,
                    c.timeout,
                    c.skipped,
                    c.unasked
                ))
            })
            .map_err(|e| e.in_file(trace_path))?;
            let report = racepred_smt::report(vt, &cfg, &out);
            (out.races, report)
        }
    };
    progress.finish();
    // The last steps of each witness (text and JSON), and the files.
    let mut tails = Vec::new();
    // Under RECIPE a read may read another value than recorded: the tails and files say
    // which it reads in the witness (a replay of each; the maximal model keeps them all).
    let relaxed = kind.model() == witness::Model::Relaxed;
    let concrete = if relaxed || opts.witness_dir.is_some() {
        Some(vt.concrete().map_err(|e| e.in_file(trace_path))?)
    } else {
        None
    };
    let values_of = |w: &witness::Witness| match (&concrete, relaxed) {
        (Some(c), true) => witness::read_values(vt, c, w).unwrap_or_default(),
        _ => Default::default(),
    };
    for race in &races {
        let w = &race.witness;
        let values = values_of(w);
        let steps: Vec<String> = w
            .schedule
            .iter()
            .rev()
            .take(4)
            .rev()
            .map(|&n| {
                let line = racepred::trace::values::event_line(vt, n);
                match (values.get(&n), witness::recorded_read(vt, n)) {
                    (Some(v), Some(rec)) if *v != rec => {
                        format!("{n}: {line}  (reads {v} here)")
                    }
                    _ => format!("{n}: {line}"),
                }
            })
            .collect();
        tails.push(serde_json::json!({
            "first": w.race.0,
            "second": w.race.1,
            "steps": w.prefix + w.schedule.len() as u64,
            "last_steps": steps,
        }));
    }
    if let Some(dir) = opts.witness_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for race in &races {
            write_witness(
                vt,
                concrete.as_ref(),
                &race.witness,
                dir,
                kind.name(),
                trace_path,
            )?;
        }
        report.notes.push(format!(
            "{} witness file(s) in {} (racepred replay TRACE FILE checks one)",
            races.len(),
            dir.display()
        ));
    }
    report
        .extra
        .insert("witnesses".to_string(), serde_json::Value::Array(tails));
    Ok(report)
}

/// Writes witness `w` of a race found by `by` as `DIR/BY-E-F.std` (with the values relaxed
/// reads read in it, given the trace's concrete values) and returns the file's path.
pub fn write_witness(
    vt: &ValueTrace,
    concrete: Option<&racepred::trace::values::Concrete>,
    w: &witness::Witness,
    dir: &Path,
    by: &str,
    trace_path: &Path,
) -> Result<std::path::PathBuf> {
    let (e, f) = w.race;
    let file = dir.join(format!("{by}-{e}-{f}.std"));
    let header = format!(
        "racepred witness: {by} race between events {e} and {f} of {}\n\
         check it with: racepred replay {} {}",
        trace_path.display(),
        trace_path.display(),
        file.display()
    );
    let text = match concrete {
        Some(c) => witness::render_replayed(vt, c, w, &header),
        None => witness::render(vt, w, &header),
    };
    std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))?;
    Ok(file)
}

/// Writes the witness of each pair of `report` given as a cut ([`RaceReport::cuts`], e.g.
/// `syncp`) into `dir`, one STD file per pair, and notes where they are.
pub fn write_cut_witnesses(
    vt: &ValueTrace,
    report: &mut RaceReport,
    dir: &Path,
    trace_path: &Path,
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for c in &report.cuts {
        let w = witness::of_cut(&vt.trace, c);
        write_witness(vt, None, &w, dir, &report.analysis, trace_path)?;
    }
    report.notes.push(format!(
        "{} witness file(s) in {} (racepred replay TRACE FILE checks one)",
        report.cuts.len(),
        dir.display()
    ));
    Ok(())
}

/// Prints the witness tails of SMT reports after the text reports.
pub fn write_witness_tails(out: &mut dyn Write, reports: &[RaceReport]) -> Result<()> {
    for r in reports {
        let Some(serde_json::Value::Array(ws)) = r.extra.get("witnesses") else {
            continue;
        };
        if ws.is_empty() {
            continue;
        }
        writeln!(
            out,
            "\n{}: witness schedules (last steps before the race)",
            r.analysis
        )?;
        for w in ws {
            writeln!(
                out,
                "  events {} and {} after {} steps:",
                w["first"], w["second"], w["steps"]
            )?;
            if let serde_json::Value::Array(steps) = &w["last_steps"] {
                for s in steps {
                    writeln!(out, "    … {}", s.as_str().unwrap_or(""))?;
                }
            }
        }
    }
    Ok(())
}
