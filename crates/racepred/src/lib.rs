//! racepred: dynamic data race prediction.
//!
//! Reads the trace of one run of a concurrent program and predicts which conflicting
//! accesses can race in another schedule of the same program. The library is organised as
//!
//! - [`trace`]: the event model, streaming readers and writers, validation, statistics;
//! - [`clock`]: vector clocks, epochs, tree clocks;
//! - [`analysis`]: one module per analysis behind the [`analysis::Analysis`] trait;
//! - [`report`]: race reports as plain data, location tables, and their text / JSON / SARIF
//!   forms;
//! - [`experiments`]: what measures the analyses — elided and perturbed traces, PACER's
//!   sampling trials and their plot;
//! - [`oracle`]: the exact, exhaustive checker for small traces;
//! - [`gen`]: random well-formed traces for tests and benchmarks;
//! - [`program`]: random small programs, their value traces and an exhaustive explorer;
//! - [`witness`]: witness schedules of predicted races and their solver-independent replay.

pub mod analysis;
pub mod clock;
pub mod error;
pub mod experiments;
pub mod gen;
pub mod oracle;
mod pipe;
pub mod program;
pub mod report;
pub mod trace;
pub mod verdict;
pub mod witness;

pub use error::{Error, ErrorKind, Position, Result, Rule};
