//! `racepred perturb`: an inaccurate variant of a trace (an experiment of the SSHB paper).

use std::process::ExitCode;

use anyhow::Result;
use racepred::trace::{self};

use super::*;
use crate::args::PerturbArgs;
use crate::outfile::refuse_inputs;

pub(super) fn perturb(a: PerturbArgs) -> Result<ExitCode> {
    refuse_inputs(&[&a.input.trace], &[Some(&a.output)])?;
    let to = output_format(&a.output, a.to)?;
    let trace = read_whole(&a.input, false)?;
    let perturbed = racepred::experiments::perturb::perturb(&trace, a.window, a.seed);
    let mut dst = trace::write::create(&a.output, to)?;
    trace::write::copy(&mut perturbed.source(), &mut *dst)?;
    dst.finish()?;
    Ok(ExitCode::SUCCESS)
}
