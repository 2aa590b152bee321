//! Checks of option values, shared by every command: the same flag gets the same check and
//! the same message wherever it appears. Errors here are usage errors (exit status 2).

use anyhow::{bail, Result};
use clap::parser::ValueSource;
use clap::ArgMatches;
use racepred::analysis::{self, Opt};

/// A rate or share: a number in [0, 1] (`--rate`, `--rates`, `--sync`, `--fraction`, …).
pub fn rate(flag: &str, v: f64) -> Result<f64> {
    if !(0.0..=1.0).contains(&v) {
        // `{:e}` past 10^6: a value like 1e300 is not echoed as 300 digits.
        if v.abs() >= 1e6 {
            bail!("{flag} must be between 0 and 1, not {v:e}");
        }
        bail!("{flag} must be between 0 and 1, not {v}");
    }
    Ok(v)
}

/// A PACER sampling period in operations: positive (`--period`).
pub fn period(flag: &str, v: u64) -> Result<u64> {
    positive(flag, v)
}

/// A count that must be at least 1 (`--threads`, `--max-states`, `--max-line`, …).
pub fn positive<T: PartialEq + Default + std::fmt::Display>(flag: &str, v: T) -> Result<T> {
    if v == T::default() {
        bail!("{flag} must be positive, not {v}");
    }
    Ok(v)
}

/// A positive, finite number of seconds as a duration (`--budget`, `--query-timeout`); one
/// too long for a `Duration` (more than 584 billion years) is the longest there is: no
/// limit in practice.
pub fn seconds(flag: &str, secs: f64) -> Result<std::time::Duration> {
    if !(secs.is_finite() && secs > 0.0) {
        bail!("{flag} must be a positive number of seconds, not {secs}");
    }
    Ok(std::time::Duration::try_from_secs_f64(secs).unwrap_or(std::time::Duration::MAX))
}

/// The clap argument id of a flag (`--ignore-global` → `ignore_global`).
fn arg_id(flag: &str) -> String {
    flag.trim_start_matches('-').replace('-', "_")
}

/// The analyses `--jobs` splits over threads (without `--all-pairs`): the registry's
/// shardable rows.
fn sharded() -> Vec<&'static str> {
    analysis::names(|r| r.shardable)
}

/// Most analysis threads `--jobs` starts: far more than any machine has cores, few enough
/// that the threads (and their stacks) can always be made.
pub const MAX_JOBS: usize = 1024;

/// `--jobs N`: at most [`MAX_JOBS`], and only where it splits something.
pub fn jobs(m: Option<&ArgMatches>, jobs: usize, all_pairs: bool) -> Result<usize> {
    if jobs > MAX_JOBS {
        bail!("--jobs must be at most {MAX_JOBS}, not {jobs}");
    }
    if all_pairs && m.is_some_and(|m| given(m, "jobs")) {
        bail!(
            "--jobs splits {} only without --all-pairs; it has no effect with it (drop one)",
            sharded().join(", ")
        );
    }
    Ok(jobs)
}

/// True if the user gave argument `id` (not a default).
pub fn given(m: &ArgMatches, id: &str) -> bool {
    matches!(
        m.try_get_raw(id).ok().flatten().and(m.value_source(id)),
        Some(ValueSource::CommandLine | ValueSource::EnvVariable)
    )
}

/// Refuses analysis options given for analyses that do not read them: each flag of an
/// [`Opt`] belongs to the registry rows that list it, `--jobs` to the shardable ones.
pub fn options_belong(m: &ArgMatches, selected: &[&str]) -> Result<()> {
    let table = Opt::ALL
        .iter()
        .map(|o| (o.flag(), o.readers().map(|r| r.name).collect::<Vec<_>>()))
        .chain(std::iter::once(("--jobs", sharded())));
    for (flag, owners) in table {
        if given(m, &arg_id(flag)) && !selected.iter().any(|s| owners.contains(s)) {
            bail!(
                "{flag} applies to {} only; it has no effect on {} (add -a {} or drop {flag})",
                owners.join(", "),
                selected.join(", "),
                owners[0]
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_messages() {
        assert!(rate("--rate", 0.5).is_ok());
        assert_eq!(
            rate("--rate", 1.5).unwrap_err().to_string(),
            "--rate must be between 0 and 1, not 1.5"
        );
        assert!(rate("--rate", f64::NAN).is_err());
        assert_eq!(
            period("--period", 0).unwrap_err().to_string(),
            "--period must be positive, not 0"
        );
        assert!(positive("--threads", 0u32).is_err());
        assert_eq!(positive("--threads", 3u32).unwrap(), 3);
    }
}
