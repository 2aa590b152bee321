//! `racepred diagnose`: SSHB's guaranteed / maybe split of the HB races.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use racepred::analysis::Validation;
use racepred::report::{self};
use racepred::trace::EventSource;

use super::*;
use crate::args::DiagnoseArgs;
use crate::locations;
use crate::outfile::{refuse_inputs, Out};
use crate::progress::Progress;

pub(super) fn diagnose(a: DiagnoseArgs) -> Result<ExitCode> {
    use racepred::analysis::sshb::{self, dot};
    refuse_inputs(
        &[&a.input.trace],
        &[a.output.output.as_deref(), a.dot.as_deref()],
    )?;
    let table = locations::load(&a.locations, &a.input.trace)?;
    let mut src = open_input(&a.input)?;
    let validation = if a.lenient {
        Validation::Lenient
    } else {
        Validation::Strict
    };
    let mut progress = Progress::for_input(src.total_bytes());
    let (d, summary) = sshb::diagnose(
        &mut *src,
        validation,
        &sshb::SshbConfig::default(),
        |e, b| progress.update(e, b),
    )
    .map_err(|e| e.in_file(&a.input.trace))?;
    progress.finish();
    warn_violations(&summary.violations, &a.input.trace);
    let names = src.names();
    locations::check_coverage(table.as_ref(), names);
    let shown = || {
        if a.details || a.dot.is_some() {
            dot::shown_events(&d)
        } else if a.output.json {
            d.report.shown_events()
        } else {
            Vec::new()
        }
    };
    let path = trace_name(&a.input.trace);
    let mut ctx = report::ReportContext::new(&path, names);
    ctx.locations = table.as_ref();
    ctx.lines =
        locations::lines_after_stream(&a.input, src.position().line, summary.events, shown)?;
    if let Some(p) = &a.dot {
        let maybe: Vec<usize> = (0..d.report.pairs.len())
            .filter(|&i| d.witness(i).is_some())
            .collect();
        let mut f = Out::create(Some(p))?;
        dot::write_dot(&d, &ctx, &maybe, &mut f)?;
        f.finish()?;
    }
    if a.output.json {
        write_reports(std::slice::from_ref(&d.report), &ctx, &a.output, false)?;
    } else {
        let mut out = open_output(&a.output)?;
        writeln!(out, "trace               {path}")?;
        if let Some(name) = ctx.table_name() {
            writeln!(out, "locations           {name}")?;
        }
        dot::write_summary(&d, &mut out)?;
        if a.details {
            writeln!(out)?;
            dot::write_details(&d, &ctx, &mut out)?;
        }
        out.finish()?;
    }
    Ok(if d.report.has_races() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
