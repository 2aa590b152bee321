//! `racepred stats`: counts of events, threads, variables, locks and locations.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use racepred::trace::stats::StatsCounter;
use racepred::trace::EventSource;

use super::*;
use crate::args::StatsArgs;
use crate::outfile::refuse_inputs;
use crate::progress::Progress;

pub(super) fn stats(a: StatsArgs) -> Result<ExitCode> {
    refuse_inputs(&[&a.input.trace], &[a.output.output.as_deref()])?;
    let mut src = open_input(&a.input)?;
    let mut counter = StatsCounter::new();
    let mut progress = Progress::for_input(src.total_bytes());
    let mut n = 0u64;
    let mut block = racepred::trace::EventBlock::new();
    while src.read_block(&mut block, racepred::analysis::READ_BLOCK)? {
        counter.add_all(&block.events);
        n += block.len() as u64;
        if n & ((1 << 20) - 1) < block.len() as u64 {
            progress.update(n, block.bytes_read);
        }
    }
    progress.finish();
    let stats = counter.finish(src.names());
    let values = src.has_values();
    let mut out = open_output(&a.output)?;
    if a.output.json {
        let mut v = serde_json::Map::new();
        v.insert("trace".into(), trace_name(&a.input.trace).into());
        if let serde_json::Value::Object(m) = serde_json::to_value(&stats)? {
            v.extend(m);
        }
        v.insert("values".into(), values.into());
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        writeln!(out, "trace      {}", trace_name(&a.input.trace))?;
        for (label, value) in stats.rows() {
            writeln!(out, "{label:<10} {value}")?;
        }
        if values {
            writeln!(out, "values: yes (value-level STD extension)")?;
        }
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}
