//! `racepred convert`: a trace from one format into another, validated on the way.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use racepred::trace::validate::Validator;
use racepred::trace::write::Extras;
use racepred::trace::{self, EventSource, Format, Op};

use super::*;
use crate::args::ConvertArgs;
use crate::outfile::{escaped, refuse_inputs};
use crate::progress::Progress;

/// Copies `src` into `dst`, validating as it goes, without the value-trace events (`let`,
/// `br`) if `drop_value_ops`; returns the event count.
fn copy_validated(
    src: &mut dyn EventSource,
    dst: &mut dyn trace::write::TraceWriter,
    lenient: bool,
    drop_value_ops: bool,
) -> Result<u64> {
    let mut validator = Validator::new();
    let mut progress = Progress::for_input(src.total_bytes());
    let mut n = 0u64;
    let mut warnings = 0u64;
    while let Some(ev) = src.next_event()? {
        if let Some(v) = validator.check_lazy(&ev, || src.position().line, || src.names()) {
            if !lenient {
                return Err(v.to_error().into());
            }
            warnings += 1;
            if warnings <= 10 {
                eprintln!("racepred: warning: {}", escaped(&v.to_error().to_string()));
            }
        }
        if drop_value_ops && ev.op.is_value_op() {
            continue;
        }
        dst.write_event(&ev, src.names(), Extras::of(src, &ev))
            .map_err(|e| e.at(src.position()))?;
        n += 1;
        if n & ((1 << 20) - 1) == 0 {
            progress.update(n, src.bytes_read());
        }
    }
    if warnings > 10 {
        eprintln!(
            "racepred: warning: {} more violation(s) not shown",
            warnings - 10
        );
    }
    Ok(n)
}

pub(crate) fn convert(a: ConvertArgs) -> Result<ExitCode> {
    refuse_inputs(&[&a.input], &[Some(&a.output)])?;
    let to = output_format(&a.output, a.to)?;
    let mut src = open_trace(&a.input, a.from, a.max_line, a.no_mmap)?;
    let mut dst = trace::write::create(&a.output, to)?;
    // Formats without values have no `let`/`br` events either: --drop-values drops them.
    let drop_value_ops = a.drop_values && !matches!(to, Format::Std | Format::Binary);
    copy_validated(&mut *src, &mut *dst, a.lenient, drop_value_ops).map_err(|e| {
        match e.downcast::<racepred::Error>() {
            Ok(e) => anyhow::Error::from(e.in_file(&a.input)),
            Err(e) => e,
        }
    })?;
    if src.has_values() && !a.drop_values {
        if to == Format::Binary {
            // The events are written; the values follow as a values record.
            let vt = read_values_again(&a)?;
            dst.write_values(&vt.values_record())?;
            dst.finish()?;
            return Ok(ExitCode::SUCCESS);
        }
        // The streaming copy lost the values: `dst` is dropped unfinished (no file).
        drop(dst);
        anyhow::ensure!(
            to == Format::Std,
            "`{}` carries values (value-level STD extension); only STD and binary output \
             keep them — convert to .std or .rpb, or drop them explicitly with --drop-values",
            a.input.display()
        );
        convert_values(&a)?;
        return Ok(ExitCode::SUCCESS);
    }
    dst.finish()?;
    Ok(ExitCode::SUCCESS)
}

/// The input of `convert` read again, as a value trace (STD or binary): the streaming
/// readers drop values.
fn read_values_again(a: &ConvertArgs) -> Result<racepred::trace::values::ValueTrace> {
    anyhow::ensure!(
        a.input != Path::new("-"),
        "standard input carries values (value-level STD extension), and keeping them needs \
         the trace read twice; pass it as a file, or drop them explicitly with --drop-values"
    );
    let opts = read_options(a.from, a.max_line, a.no_mmap)?;
    Ok(racepred::trace::values::ValueTrace::open(&a.input, &opts)?)
}

/// Writes the value trace `a.input` to `a.output` as STD with its values: every event in
/// trace order ([`racepred::witness::event_line`]), each branch followed by its
/// alternative path. The input is read again as a
/// [`ValueTrace`](racepred::trace::values::ValueTrace) (the streaming readers drop values).
fn convert_values(a: &ConvertArgs) -> Result<()> {
    use racepred::trace::values::{alt_base, event_line};
    let vt = read_values_again(a)?;
    // `ValueTrace` keeps no `mbegin` address sets: a streaming reader, in step with the
    // trace's events, gives them.
    let mut addrs_src = if vt.trace.events.iter().any(|e| e.op == Op::MethodBegin) {
        Some(open_trace(&a.input, a.from, a.max_line, a.no_mmap)?)
    } else {
        None
    };
    let mut out = trace::write::Sink::create(&a.output).map_err(|e| e.in_file(&a.output))?;
    let mut alts = vt.alts.iter().enumerate().peekable();
    for (i, ev) in vt.trace.events.iter().enumerate() {
        let mut line = event_line(&vt, i as u64);
        if let Some(src) = addrs_src.as_mut() {
            let same = src.next_event()?;
            if ev.op == Op::MethodBegin && !src.addresses().is_empty() {
                debug_assert_eq!(same.map(|e| e.op), Some(Op::MethodBegin));
                let names = src.names();
                let list: Vec<&str> = src
                    .addresses()
                    .iter()
                    .map(|x| names.addrs.name(x.0))
                    .collect();
                // `THREAD|mbegin(M)|LOC`: neither the thread nor the location holds a `|`.
                let close = line.rfind(")|").expect("an mbegin line has a target");
                line.insert_str(close, &format!(";{}", list.join(",")));
            }
        }
        writeln!(out, "{line}")?;
        while let Some((k, alt)) = alts.next_if(|(_, alt)| alt.branch == i) {
            let base = alt_base(&vt, k);
            for j in 0..alt.events.len() as u64 {
                writeln!(out, "{}", event_line(&vt, base + j))?;
            }
        }
    }
    out.finish().map_err(|e| e.in_file(&a.output))?;
    Ok(())
}
