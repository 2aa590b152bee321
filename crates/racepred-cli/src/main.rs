//! `racepred`: the command-line front end. Parses flags, turns them into library configs,
//! runs, prints. All analysis logic lives in the `racepred` library.

mod args;
mod checks;
mod commands;
mod help;
mod input;
mod locations;
mod outfile;
mod progress;
mod signals;
mod smt;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

fn main() -> ExitCode {
    let matches = args::Cli::command().get_matches();
    let cli = args::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if !matches!(cli.command, args::Command::Record(_)) {
        signals::remove_temporaries_on_signal();
    }
    match commands::run(cli, &matches) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            // Messages quote input (names, tokens): no control characters reach the terminal.
            eprintln!("racepred: {}", outfile::escaped(&format!("{err:#}")));
            ExitCode::from(2)
        }
    }
}

/// A closed pipe (`racepred … | head`) is not an error.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || e.downcast_ref::<racepred::Error>().is_some_and(|r| {
                matches!(r.kind(), racepred::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe)
            })
    })
}
