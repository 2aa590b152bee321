//! `racepred validate`: every well-formedness violation of a trace, as file:line: rule:
//! explanation.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use racepred::trace::validate::Validator;
use racepred::trace::EventSource;

use super::*;
use crate::args::{Input, ValidateArgs};
use crate::outfile::refuse_inputs;
use crate::progress::Progress;

/// True for reader errors that concern one line of a text trace, after which the reader
/// goes on with the next line; anything else (I/O, a corrupt compressed stream, a damaged
/// binary trace) means the input cannot be read further.
fn is_line_error(e: &racepred::Error) -> bool {
    use racepred::ErrorKind as K;
    e.position().is_some_and(|p| p.line > 0)
        && matches!(
            e.kind(),
            K::Syntax(_) | K::UnknownOp(_) | K::EmptyName(_) | K::NonUtf8
        )
}

/// A value trace (value-level STD extension) read whole, its recorded run checked
/// ([`ValueTrace::concrete`](racepred::trace::values::ValueTrace::concrete): reads observe
/// what the last write wrote, branches hold); a problem is added to `problems` unless its
/// line already has one (a syntax error the streaming pass reported).
fn check_values(input: &Input, problems: &mut Vec<Problem>) {
    use racepred::trace::values::ValueTrace;
    if input.trace == Path::new("-") {
        eprintln!(
            "racepred: warning: values not checked: standard input cannot be read twice \
             (pass the trace as a file)"
        );
        return;
    }
    let checked = match read_options(input.format, input.max_line, input.no_mmap) {
        Ok(opts) => ValueTrace::open(&input.trace, &opts).and_then(|vt| vt.concrete().map(drop)),
        Err(e) => {
            eprintln!("racepred: warning: values not checked: {e}");
            return;
        }
    };
    if let Err(e) = checked {
        let line = e.position().map_or(0, |p| p.line);
        if problems.iter().any(|p| p.0 == line) {
            return;
        }
        let msg = e.kind().to_string();
        let (rule, expl) = match msg.split_once(": ") {
            Some((r, x)) => (r.to_string(), x.to_string()),
            None => ("error".to_string(), msg),
        };
        let event = e.position().and_then(|p| p.event);
        problems.push((line, event, rule, expl));
        problems.sort_by_key(|p| p.0);
    }
}

/// A problem `validate` lists: (line, 0 without lines; event index, where known; rule;
/// explanation).
type Problem = (u64, Option<u64>, String, String);

pub(super) fn validate(a: ValidateArgs) -> Result<ExitCode> {
    refuse_inputs(&[&a.input.trace], &[a.output.output.as_deref()])?;
    let mut src = open_input(&a.input)?;
    let path = trace_name(&a.input.trace);
    let mut validator = Validator::new();
    // Every problem, syntax errors included.
    let mut problems: Vec<Problem> = Vec::new();
    let mut events = 0u64;
    let mut progress = Progress::for_input(src.total_bytes());
    let mut last_err_pos = None;
    // An error after which the input cannot be read: reported once, exit status 2.
    let mut fatal = None;
    // 0: no limit.
    let limit = if a.max_errors == 0 {
        usize::MAX
    } else {
        a.max_errors
    };
    loop {
        match src.next_event() {
            Ok(Some(ev)) => {
                events += 1;
                if let Some(v) = validator.check_lazy(&ev, || src.position().line, || src.names()) {
                    problems.push((
                        v.line,
                        Some(events - 1),
                        v.rule.name().to_string(),
                        v.explanation,
                    ));
                }
                if events & ((1 << 20) - 1) == 0 {
                    progress.update(events, src.bytes_read());
                }
            }
            Ok(None) => break,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line);
                // Text readers skip the bad line and go on; anything that does not advance
                // (binary data, I/O errors, a corrupt compressed stream) ends the run.
                if !is_line_error(&e) || last_err_pos == Some(line) {
                    fatal = Some(e);
                    break;
                }
                let msg = e.kind().to_string();
                let (rule, expl) = match msg.split_once(": ") {
                    Some((r, x)) => (r.to_string(), x.to_string()),
                    None => ("error".to_string(), msg),
                };
                problems.push((line, e.position().and_then(|p| p.event), rule, expl));
                last_err_pos = Some(line);
            }
        }
        if problems.len() >= limit {
            break;
        }
    }
    progress.finish();
    if fatal.is_none() && problems.len() < limit && src.has_values() {
        check_values(&a.input, &mut problems);
    }
    let mut out = open_output(&a.output)?;
    let fatal_msg = fatal.as_ref().map(|e| e.to_string());
    if a.output.json {
        let v = serde_json::json!({
            "trace": path,
            "events": events,
            "well_formed": problems.is_empty() && fatal.is_none(),
            "violations": problems.iter().map(|(line, event, rule, expl)| serde_json::json!({
                "line": line, "event": event, "rule": rule, "explanation": expl,
            })).collect::<Vec<_>>(),
            "error": fatal_msg,
        });
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        for (line, event, rule, expl) in &problems {
            match (line, event) {
                // A binary trace has no lines: its events (0-based) locate problems.
                (0, Some(e)) => writeln!(out, "{path}: event {e}: {rule}: {expl}")?,
                _ => writeln!(out, "{path}:{line}: {rule}: {expl}")?,
            }
        }
        if fatal.is_some() {
            // The error itself goes to stderr (once), like every command's.
        } else if problems.is_empty() {
            writeln!(out, "{path}: well-formed ({events} events)")?;
        } else {
            let more = if problems.len() >= limit {
                " (stopped at --max-errors)"
            } else {
                ""
            };
            writeln!(out, "{path}: {} problem(s){more}", problems.len())?;
        }
    }
    out.finish()?;
    if let Some(e) = fatal {
        return Err(e.in_file(&a.input.trace).into());
    }
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
