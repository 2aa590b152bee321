//! `racepred elide`: a trace with regions removed into barrier pairs (RDIT's harness).

use std::process::ExitCode;

use anyhow::Result;

use super::*;
use crate::args::ElideArgs;
use crate::checks;
use crate::outfile::refuse_inputs;

pub(super) fn elide(a: ElideArgs) -> Result<ExitCode> {
    use racepred::experiments::elide::{elide, ElideConfig};
    refuse_inputs(&[&a.input.trace], &[Some(&a.out.output)])?;
    checks::rate("--fraction", a.fraction)?;
    checks::positive("--max-window", a.max_window)?;
    anyhow::ensure!(
        !a.methods.is_empty() || !a.locks.is_empty() || a.fraction > 0.0,
        "nothing to elide: pass --methods, --locks or --fraction"
    );
    let to = out_format(&a.out)?;
    let trace = read_whole(&a.input, false)?;
    let cfg = ElideConfig {
        methods: a.methods.clone(),
        locks: a.locks.clone(),
        fraction: a.fraction,
        seed: a.seed,
        max_window: a.max_window,
    };
    let e = elide(&trace, &cfg).map_err(|e| e.in_file(&a.input.trace))?;
    write_trace(&a.out, to, &mut e.trace.source())?;
    let removed = e.removed();
    eprintln!(
        "racepred: elided {} region(s): {removed} of {} events removed, {} barrier event(s) added, {} events written",
        e.regions.len(),
        trace.len(),
        (e.trace.len() + removed).saturating_sub(trace.len()),
        e.trace.len()
    );
    Ok(ExitCode::SUCCESS)
}
