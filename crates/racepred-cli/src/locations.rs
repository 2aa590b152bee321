//! Source locations for reports: `--locations FILE` or a sidecar table found beside the
//! trace, and the trace-file lines of the events a report shows (a cold second pass over
//! the input for streaming analyses, only when the file is not one event per line).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use racepred::report::locations::find_sidecar;
use racepred::report::{EventLines, LocationTable, SourceIndex};
use racepred::trace::{Format, Names};

use crate::args::{Input, LocationArgs, SarifArgs};
use crate::input::format_of;

/// The table `--locations` names (an error if it cannot be read), else the sidecar table of
/// `trace` (a warning, and none, if it is malformed).
pub fn load(args: &LocationArgs, trace: &Path) -> Result<Option<LocationTable>> {
    if let Some(p) = &args.locations {
        return Ok(Some(
            LocationTable::read(p).context("cannot read the --locations table")?,
        ));
    }
    if args.no_locations {
        return Ok(None);
    }
    let Some(p) = find_sidecar(trace) else {
        return Ok(None);
    };
    match LocationTable::read(&p) {
        Ok(t) => Ok(Some(t)),
        Err(e) => {
            eprintln!(
                "racepred: warning: not using the location table found beside the trace \
                 (--locations FILE to name one, --no-locations to skip): {}",
                crate::outfile::escaped(&e.to_string())
            );
            Ok(None)
        }
    }
}

/// Warns when a table maps none of the trace's locations (the table of another trace).
pub fn check_coverage(table: Option<&LocationTable>, names: &Names) {
    let Some(t) = table else {
        return;
    };
    if !names.locs.is_empty() && t.coverage(names) == 0 {
        let name = t
            .path()
            .map_or_else(String::new, |p| p.display().to_string());
        eprintln!(
            "racepred: warning: location table {name} maps none of the trace's {} location \
             names; is it the table of another trace?",
            names.locs.len()
        );
    }
}

/// The lines of the `wanted` events after a streaming pass that ended on line `last_line`
/// after `events` events: one event per line needs no second pass; otherwise the trace is
/// read again up to the last wanted event (not possible for standard input).
pub fn lines_after_stream(
    input: &Input,
    last_line: u64,
    events: u64,
    wanted: impl FnOnce() -> Vec<u64>,
) -> Result<EventLines<'static>> {
    // The wanted events are computed only when their lines must be looked up (building the
    // list walks every racy event of every report).
    if last_line == 0 {
        return Ok(EventLines::Unknown);
    }
    let format = input
        .format
        .map(format_of)
        .or_else(|| Format::from_path(&input.trace));
    // Every reader but CSV's gives at most one event per line, so the line count equals the
    // event count only if event i is on line i + 1. (A CSV `sync` row gives four events.)
    if last_line == events && format != Some(Format::Csv) {
        return Ok(EventLines::OnePerLine);
    }
    if input.trace.as_os_str() == "-" {
        return Ok(EventLines::Unknown);
    }
    let wanted = wanted();
    if wanted.is_empty() {
        return Ok(EventLines::Unknown);
    }
    // Read again as the first pass read it (`--format`, `--max-line`, `--no-mmap`).
    let mut src = crate::input::open_input(input)?;
    Ok(EventLines::scan(&mut *src, &wanted)?)
}

/// `--source-root DIR`, if given, as an absolute path, and the files under it (to complete
/// bare file names such as `A.java` to their paths).
pub fn source_root(args: &SarifArgs) -> Result<Option<(PathBuf, SourceIndex)>> {
    let Some(dir) = args.source_root.as_deref() else {
        return Ok(None);
    };
    let root = std::fs::canonicalize(dir)
        .with_context(|| format!("--source-root {}: no such directory", dir.display()))?;
    let ix = SourceIndex::build(&root)
        .with_context(|| format!("cannot list --source-root {}", dir.display()))?;
    if ix.truncated() {
        eprintln!(
            "racepred: warning: --source-root {} has more than {} files; only those were \
             searched for source paths",
            dir.display(),
            SourceIndex::MAX_FILES
        );
    }
    Ok(Some((root, ix)))
}
