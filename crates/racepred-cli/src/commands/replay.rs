//! `racepred replay`: checks a witness file against its trace, without a solver
//! ([`racepred::witness::replay`]).

use std::process::ExitCode;

use anyhow::{Context, Result};
use racepred::witness;

use crate::args::ReplayArgs;
use crate::input::read_value_trace;

/// `racepred replay TRACE WITNESS`: checks a witness without any solver.
pub fn replay(a: ReplayArgs) -> Result<ExitCode> {
    let vt = read_value_trace(&a.input)?;
    let concrete = vt.concrete().map_err(|e| e.in_file(&a.input.trace))?;
    let text = std::fs::read_to_string(&a.witness)
        .with_context(|| format!("cannot read {}", a.witness.display()))?;
    let w = witness::parse(&vt, &text).with_context(|| a.witness.display().to_string())?;
    match witness::replay(&vt, &concrete, &w) {
        Ok(()) => {
            println!(
                "{}: replays: after {} steps events {} and {} race (both enabled, conflicting)",
                a.witness.display(),
                w.prefix + w.schedule.len() as u64,
                w.race.0,
                w.race.1
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            println!("{}: does not replay: {e}", a.witness.display());
            Ok(ExitCode::from(1))
        }
    }
}
