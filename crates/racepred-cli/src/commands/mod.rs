//! One module per subcommand: validated config in, output and exit code out; here the
//! dispatch and what several commands share (opening inputs and outputs, reading a trace
//! whole, printing reports).

mod analyze;
mod check;
mod convert;
mod diagnose;
mod elide;
mod generate;
mod oracle;
mod perturb;
mod record;
mod replay;
mod sample;
mod stats;
mod validate;

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::ArgMatches;
use racepred::report::{self, RaceReport};
use racepred::trace::validate::validate_trace;
use racepred::trace::{EventSource, Format, Trace};

use crate::args::{Cli, Command, FormatArg};
use crate::args::{Input, Output, TraceOutput};
use crate::input::{format_of, open_input, open_trace, read_options};
use crate::outfile::{escaped, Out};

/// Exit status of `analyze` when no race was found but some analysis did not examine
/// everything (a spent `--budget`, timed-out queries): not the "no race" of status 0.
pub const INCOMPLETE: u8 = 3;

/// Runs a command; `matches` are the raw flags (to tell options the user gave from defaults).
pub fn run(cli: Cli, matches: &ArgMatches) -> Result<ExitCode> {
    match cli.command {
        Command::Analyze(a) => analyze::analyze(a, matches.subcommand_matches("analyze")),
        Command::Check(a) => check::check(a),
        Command::Validate(a) => validate::validate(a),
        Command::Stats(a) => stats::stats(a),
        Command::Convert(a) => convert::convert(a),
        Command::Generate(a) => generate::generate(a),
        Command::Oracle(a) => oracle::oracle(a),
        Command::Diagnose(a) => diagnose::diagnose(a),
        Command::Perturb(a) => perturb::perturb(a),
        Command::Sample(a) => sample::sample(a),
        Command::Elide(a) => elide::elide(a),
        Command::Replay(a) => replay::replay(a),
        Command::Record(a) => record::record(a, matches.subcommand_matches("record")),
    }
}

/// Standard output or `-o FILE` (appears when finished), buffered.
fn open_output(output: &Output) -> Result<Out> {
    Out::create(output.output.as_deref())
}

fn trace_name(path: &Path) -> String {
    path.display().to_string()
}

fn output_format(path: &Path, to: Option<FormatArg>) -> Result<Format> {
    let f = match to {
        Some(f) => format_of(f),
        None => Format::from_path(path).with_context(|| {
            format!("cannot tell the output format from `{}`; name it .std, .rpb, .rr, .csv or .golog (optionally .gz/.xz/.zst) or pass --to", path.display())
        })?,
    };
    Ok(f)
}

/// The format `out` asks for (checked before any work: a name that says no format is an
/// error now, not after the run).
fn out_format(out: &TraceOutput) -> Result<Format> {
    output_format(&out.output, out.to)
}

/// Writes the events of `src` to `out` in format `to`; the file appears only when whole.
fn write_trace(out: &TraceOutput, to: Format, src: &mut dyn EventSource) -> Result<()> {
    let path = &out.output;
    let mut dst = racepred::trace::write::create(path, to)?;
    racepred::trace::write::copy(src, &mut *dst).map_err(|e| e.in_file(path))?;
    dst.finish()?;
    Ok(())
}

fn read_whole(input: &Input, lenient: bool) -> Result<Trace> {
    let mut src = open_input(input)?;
    let trace = Trace::read_from(&mut *src)?;
    if let Some(v) = validate_trace(&trace).first() {
        let e = v.to_error().in_file(&input.trace);
        if !lenient {
            return Err(e.into());
        }
        eprintln!("racepred: warning: {}", escaped(&e.to_string()));
    }
    Ok(trace)
}

/// Prints reports as text, JSON (one object, or an array for several) or SARIF.
fn write_reports(
    reports: &[RaceReport],
    ctx: &report::ReportContext<'_>,
    output: &Output,
    sarif: bool,
) -> Result<()> {
    let mut out = open_output(output)?;
    if sarif {
        serde_json::to_writer_pretty(&mut out, &report::sarif::sarif_log(reports, ctx))?;
        writeln!(out)?;
    } else if output.json {
        let values: Vec<serde_json::Value> = reports
            .iter()
            .map(|r| report::json::report_json(r, ctx))
            .collect();
        if values.len() == 1 {
            serde_json::to_writer_pretty(&mut out, &values[0])?;
        } else {
            serde_json::to_writer_pretty(&mut out, &values)?;
        }
        writeln!(out)?;
    } else {
        report::text::write_reports(&mut out, reports, ctx)?;
        // The SMT predictors' witness tails (nothing for other reports).
        crate::smt::write_witness_tails(&mut out, reports)?;
    }
    out.finish()?;
    Ok(())
}

/// Prints the first ten violations of a lenient run as warnings.
fn warn_violations(violations: &[racepred::trace::validate::Violation], trace: &Path) {
    for v in violations.iter().take(10) {
        eprintln!(
            "racepred: warning: {}",
            escaped(&v.to_error().in_file(trace).to_string())
        );
    }
}
