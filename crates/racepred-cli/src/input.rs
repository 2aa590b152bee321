//! How every command reads its trace: `--format`, `--max-line` and `--no-mmap` turned into
//! the library's [`ReadOptions`](trace::ReadOptions), for the streaming readers and for the
//! value-trace reader of the SMT predictors alike.

use std::path::Path;

use anyhow::Result;
use racepred::trace::values::ValueTrace;
use racepred::trace::{self, EventSource, Format};

use crate::args::{FormatArg, Input};
use crate::checks;

pub fn format_of(f: FormatArg) -> Format {
    match f {
        FormatArg::Std => Format::Std,
        FormatArg::Rr => Format::Rr,
        FormatArg::Csv => Format::Csv,
        FormatArg::Golog => Format::GoLog,
        FormatArg::Bin => Format::Binary,
    }
}

pub(crate) fn open_input(input: &Input) -> Result<Box<dyn EventSource + Send>> {
    open_trace(&input.trace, input.format, input.max_line, input.no_mmap)
}

/// How every command reads its trace: `--format`, `--max-line`, `--no-mmap`.
pub(crate) fn read_options(
    format: Option<FormatArg>,
    max_line: usize,
    no_mmap: bool,
) -> Result<trace::ReadOptions> {
    Ok(trace::ReadOptions {
        format: format.map(format_of),
        max_line: checks::positive("--max-line", max_line)?,
        mmap: !no_mmap,
    })
}

pub(crate) fn open_trace(
    path: &Path,
    format: Option<FormatArg>,
    max_line: usize,
    no_mmap: bool,
) -> Result<Box<dyn EventSource + Send>> {
    let opts = read_options(format, max_line, no_mmap)?;
    Ok(trace::open_opts(path, &opts)?)
}

/// The input read whole with its values (STD text and binary traces keep them; the other
/// formats have none), opened with the same options as [`open_input`].
pub(crate) fn read_value_trace(input: &Input) -> Result<ValueTrace> {
    let opts = read_options(input.format, input.max_line, input.no_mmap)?;
    Ok(ValueTrace::open(&input.trace, &opts)?)
}
