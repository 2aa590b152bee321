//! `racepred oracle`: the exact predictable races of a small trace.

use std::process::ExitCode;

use anyhow::Result;
use racepred::oracle::{OracleConfig, OracleNotion};
use racepred::report::{self, RaceReport};

use super::*;
use crate::args::OracleArgs;
use crate::checks;
use crate::locations;
use crate::outfile::refuse_inputs;

pub(super) fn oracle(a: OracleArgs) -> Result<ExitCode> {
    refuse_inputs(&[&a.input.trace], &[a.output.output.as_deref()])?;
    let table = locations::load(&a.locations, &a.input.trace)?;
    let trace = read_whole(&a.input, false)?;
    locations::check_coverage(table.as_ref(), &trace.names);
    let cfg = OracleConfig {
        max_events: a.max_events,
        max_states: checks::positive("--max-states", a.max_states)?,
    };
    let result = racepred::oracle::analyze(&trace, &cfg).map_err(|e| {
        // The library's message names its config fields; a CLI user has flags.
        if let racepred::ErrorKind::Budget(_) = e.kind() {
            let path = trace_name(&a.input.trace);
            if trace.len() > cfg.max_events {
                return anyhow::anyhow!(
                    "{path}: over budget: {} events is more than --max-events {} (the search is \
                     exponential; raise --max-events at your own risk)",
                    trace.len(),
                    cfg.max_events
                );
            }
            return anyhow::anyhow!(
                "{path}: over budget: the exact search visited more than --max-states {} \
                 states; raise --max-states or shorten the trace",
                cfg.max_states
            );
        }
        e.in_file(&a.input.trace).into()
    })?;
    let reports: Vec<RaceReport> = OracleNotion::ALL
        .iter()
        .map(|&n| result.report(&trace, n))
        .collect();
    let path = trace_name(&a.input.trace);
    let mut ctx = report::ReportContext::new(&path, &trace.names);
    ctx.locations = table.as_ref();
    ctx.lines = report::EventLines::of_trace(&trace.lines);
    write_reports(&reports, &ctx, &a.output, false)?;
    Ok(if result.predictable.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
