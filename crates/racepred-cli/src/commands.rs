//! One function per subcommand: validated config in, output and exit code out.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use racepred::trace::stats::StatsCounter;
use racepred::trace::validate::Validator;
use racepred::trace::{self, EventSource, Format};

use crate::args::{Cli, Command, FormatArg, Input, Output, StatsArgs, ValidateArgs};
use crate::progress::Progress;

pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Analyze(a) => analyze(a),
        Command::Validate(a) => validate(a),
        Command::Stats(a) => stats(a),
        Command::Convert(a) => convert(a),
        Command::Generate(a) => generate(a),
        Command::Oracle(a) => oracle(a),
    }
}

pub fn format_of(f: FormatArg) -> Format {
    match f {
        FormatArg::Std => Format::Std,
        FormatArg::Rr => Format::Rr,
        FormatArg::Csv => Format::Csv,
        FormatArg::Golog => Format::GoLog,
        FormatArg::Bin => Format::Binary,
    }
}

fn open_input(input: &Input) -> Result<Box<dyn EventSource>> {
    Ok(trace::open_with(&input.trace, input.format.map(format_of))?)
}

/// Standard output or `-o FILE`, buffered.
fn open_output(output: &Output) -> Result<Box<dyn Write>> {
    Ok(match &output.output {
        Some(p) => Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(io::stdout().lock())),
    })
}

fn trace_name(path: &Path) -> String {
    path.display().to_string()
}

fn stats(a: StatsArgs) -> Result<ExitCode> {
    let mut src = open_input(&a.input)?;
    let mut counter = StatsCounter::new();
    let mut progress = Progress::new();
    let mut n = 0u64;
    while let Some(ev) = src.next_event()? {
        counter.add(&ev);
        n += 1;
        if n & ((1 << 20) - 1) == 0 {
            progress.update(n, src.bytes_read());
        }
    }
    progress.finish();
    let stats = counter.finish(src.names());
    let mut out = open_output(&a.output)?;
    if a.output.json {
        let mut v = serde_json::Map::new();
        v.insert("trace".into(), trace_name(&a.input.trace).into());
        if let serde_json::Value::Object(m) = serde_json::to_value(&stats)? {
            v.extend(m);
        }
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        writeln!(out, "trace      {}", trace_name(&a.input.trace))?;
        for (label, value) in stats.rows() {
            writeln!(out, "{label:<10} {value}")?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn validate(a: ValidateArgs) -> Result<ExitCode> {
    let mut src = open_input(&a.input)?;
    let path = trace_name(&a.input.trace);
    let mut validator = Validator::new();
    // (line, rule, explanation) of every problem, syntax errors included.
    let mut problems: Vec<(u64, String, String)> = Vec::new();
    let mut events = 0u64;
    let mut progress = Progress::new();
    let mut last_err_pos = None;
    loop {
        match src.next_event() {
            Ok(Some(ev)) => {
                events += 1;
                if let Some(v) = validator.check(&ev, src.position().line, src.names()) {
                    problems.push((v.line, v.rule.name().to_string(), v.explanation));
                }
                if events & ((1 << 20) - 1) == 0 {
                    progress.update(events, src.bytes_read());
                }
            }
            Ok(None) => break,
            Err(e) => {
                let pos = e.position();
                let line = pos.map_or(0, |p| p.line);
                // Text readers skip the bad line and go on; anything that does not advance
                // (binary data, I/O errors) ends the run.
                let stuck = line == 0 || last_err_pos == Some(line);
                let msg = e.kind().to_string();
                let (rule, expl) = match msg.split_once(": ") {
                    Some((r, x)) => (r.to_string(), x.to_string()),
                    None => ("error".to_string(), msg),
                };
                problems.push((line, rule, expl));
                if stuck {
                    break;
                }
                last_err_pos = Some(line);
            }
        }
        if problems.len() >= a.max_errors {
            break;
        }
    }
    progress.finish();
    let mut out = open_output(&a.output)?;
    if a.output.json {
        let v = serde_json::json!({
            "trace": path,
            "events": events,
            "well_formed": problems.is_empty(),
            "violations": problems.iter().map(|(line, rule, expl)| serde_json::json!({
                "line": line, "rule": rule, "explanation": expl,
            })).collect::<Vec<_>>(),
        });
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        for (line, rule, expl) in &problems {
            writeln!(out, "{path}:{line}: {rule}: {expl}")?;
        }
        if problems.is_empty() {
            writeln!(out, "{path}: well-formed ({events} events)")?;
        } else {
            let more = if problems.len() >= a.max_errors {
                " (stopped at --max-errors)"
            } else {
                ""
            };
            writeln!(out, "{path}: {} problem(s){more}", problems.len())?;
        }
    }
    out.flush()?;
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn analyze(_a: crate::args::AnalyzeArgs) -> Result<ExitCode> {
    anyhow::bail!("analyze: not wired yet")
}

fn convert(_a: crate::args::ConvertArgs) -> Result<ExitCode> {
    anyhow::bail!("convert: not wired yet")
}

fn generate(_a: crate::args::GenerateArgs) -> Result<ExitCode> {
    anyhow::bail!("generate: not wired yet")
}

fn oracle(_a: crate::args::OracleArgs) -> Result<ExitCode> {
    anyhow::bail!("oracle: not wired yet")
}
