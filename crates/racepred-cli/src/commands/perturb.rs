//! `racepred perturb`: an inaccurate variant of a trace (an experiment of the SSHB paper).

use std::process::ExitCode;

use anyhow::Result;

use super::*;
use crate::args::PerturbArgs;
use crate::outfile::refuse_inputs;

pub(super) fn perturb(a: PerturbArgs) -> Result<ExitCode> {
    refuse_inputs(&[&a.input.trace], &[Some(&a.out.output)])?;
    let to = out_format(&a.out)?;
    let trace = read_whole(&a.input, false)?;
    let perturbed = racepred::experiments::perturb::perturb(&trace, a.window, a.seed);
    write_trace(&a.out, to, &mut perturbed.source())?;
    Ok(ExitCode::SUCCESS)
}
