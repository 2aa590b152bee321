//! `racepred generate`: a random well-formed trace.

use std::process::ExitCode;

use anyhow::Result;
use racepred::gen::{GenConfig, Generator};
use racepred::trace::Format;

use super::*;
use crate::args::GenerateArgs;
use crate::checks;

pub(super) fn generate(a: GenerateArgs) -> Result<ExitCode> {
    let cfg = GenConfig {
        events: a.events,
        threads: checks::positive("--threads", a.threads)?,
        vars: checks::positive("--vars", a.vars)?,
        locks: a.locks,
        sync: checks::rate("--sync", a.sync)?,
        reads: checks::rate("--reads", a.reads)?,
        volatile: checks::rate("--volatile", a.volatile)?,
        fork_join: !a.no_fork_join,
        locs: checks::positive("--locs", a.locs)?,
        seed: a.seed,
        ..GenConfig::default()
    };
    anyhow::ensure!(
        a.sync + a.volatile <= 1.0,
        "--sync plus --volatile must be at most 1"
    );
    let to = out_format(&a.out)?;
    anyhow::ensure!(
        !(to == Format::GoLog && cfg.fork_join),
        "Go-log traces have no fork or join events: add --no-fork-join to generate {}",
        a.out.output.display()
    );
    write_trace(&a.out, to, &mut Generator::new(cfg))?;
    Ok(ExitCode::SUCCESS)
}
