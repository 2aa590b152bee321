//! Command-line flags, parsed raw by clap and then checked into configs by the commands.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use racepred::analysis::pacer::PacerConfig;

/// Dynamic data race prediction: reads the trace of one run of a concurrent program and
/// predicts which conflicting accesses can race in another schedule of the same program.
///
/// Exit status: 0 success (no race), 1 races found (or, for `validate`, violations found),
/// 2 usage error or an input that cannot be read.
#[derive(Parser, Debug)]
#[command(
    name = "racepred",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run one or more analyses over a trace in a single pass and report races.
    Analyze(AnalyzeArgs),
    /// Give every warning a verdict: race (with the analysis that proved it and a witness),
    /// no race (with the proof), or unknown (with the reason). Candidates: tsan-hybrid's
    /// location pairs; proofs: syncp, shbp, osr and trf, then the SMT predictor (mcm) on each
    /// open pair's slice within --budget.
    Check(CheckArgs),
    /// Check that a trace is well-formed; list every violation as file:line: rule: explanation.
    Validate(ValidateArgs),
    /// Count events, threads, variables, locks, locations and events per kind.
    Stats(StatsArgs),
    /// Convert a trace between formats (std, rr, csv, golog, bin; .gz/.xz/.zst by extension).
    Convert(ConvertArgs),
    /// Write a random well-formed trace (for tests and benchmarks).
    Generate(GenerateArgs),
    /// Exact predictable race pairs of a small trace, by exhaustive search.
    Oracle(OracleArgs),
    /// SSHB: split HB races into guaranteed and maybe for traces whose access order may be
    /// inaccurate (the summary of Table 2 of the SSHB paper; --details for every race).
    Diagnose(DiagnoseArgs),
    /// Write an inaccurate variant of a trace: unsynchronised accesses of different threads
    /// swapped within a window (SSHB §3), thread order and release/acquire order kept.
    Perturb(PerturbArgs),
    /// PACER: run many sampling trials and report how often each FastTrack race is found.
    Sample(SampleArgs),
    /// RDIT harness: remove regions of a complete trace, each becoming a barrier pair
    /// (mbegin/mend) whose address set is what the region touched.
    Elide(ElideArgs),
    /// Check a witness schedule written by `analyze -a mcm|recipe|recipe-alt --witness DIR`
    /// against its trace, without any solver (exit 0: it replays, 1: it does not).
    Replay(ReplayArgs),
    /// Run a C/C++ program built with `-fsanitize=thread` under racepred's runtime (our own
    /// libtsan.so.2) and write the trace of the run (`racepred record -o p.rpb -- ./p ARGS`),
    /// or run an analysis inside it (`--online fasttrack`, `--online pacer --rate 0.03`).
    /// A Java program (`racepred record -o p.rpb -- java ARGS`) runs with racepred's Java
    /// agent. Exit status: the program's.
    Record(RecordArgs),
}

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Trace to write: binary (`.rpb`) or STD (`.std`) by extension, compressed by
    /// `.gz`/`.xz`/`.zst`. Default: PROGRAM.rpb in the working directory. With --online:
    /// the report (JSON if FILE ends in `.json`, else text); default: standard error, after
    /// the program ends (its standard output stays its own).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[arg(long, value_name = "ANALYSIS", help = crate::help::online_help(),
          value_parser = clap::builder::PossibleValuesParser::new(crate::help::online()))]
    pub online: Option<String>,
    /// --online pacer: sampling rate in [0, 1].
    #[arg(long, default_value_t = 1.0, requires = "online")]
    pub rate: f64,
    /// --online pacer: sampling period length in operations.
    #[arg(long, default_value_t = PacerConfig::DEFAULT_PERIOD, requires = "online")]
    pub period: u64,
    /// --online pacer: seed of the sampler.
    #[arg(long, default_value_t = 0, requires = "online")]
    pub seed: u64,
    /// The runtime library (`libracepred_rt.so`); default: `$RACEPRED_RT`, else the one
    /// beside the racepred executable.
    #[arg(long, value_name = "FILE")]
    pub runtime: Option<PathBuf>,
    /// Java programs: record values for RECIPE (`-a recipe`, `-a recipe-alt`): each read's
    /// value, each write's as an expression over the thread's earlier reads, each branch
    /// over reads with its outcome (docs/recording.md).
    #[arg(long)]
    pub values: bool,
    /// The Java agent (`racepred-agent.jar`), added as `-javaagent:` when CMD is `java`;
    /// default: `$RACEPRED_AGENT`, else the one beside the racepred executable.
    #[arg(long, value_name = "FILE")]
    pub agent: Option<PathBuf>,
    /// The program and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub output: Output,
    #[command(flatten)]
    pub sarif: SarifArgs,
    #[command(flatten)]
    pub locations: LocationArgs,
    /// Write a witness schedule for each race into DIR (`racepred replay TRACE FILE`
    /// checks one without trusting racepred).
    #[arg(long, value_name = "DIR")]
    pub witness: Option<PathBuf>,
    /// Time limit of the SMT stage, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub budget: f64,
    #[command(flatten)]
    pub slices: SliceArgs,
    /// SMT stage: time limit of one solver query, in seconds.
    #[arg(long, value_name = "SECS",
          default_value_t = racepred_smt::SmtConfig::DEFAULT_QUERY_TIMEOUT.as_secs_f64())]
    pub query_timeout: f64,
    /// Skip the SMT stage (verdicts from the streaming analyses only).
    #[arg(long)]
    pub no_smt: bool,
    /// Warn about an ill-formed trace and go on instead of refusing it.
    #[arg(long)]
    pub lenient: bool,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub input: Input,
    /// The witness file (STD with `#@ N` event numbers).
    pub witness: PathBuf,
}

/// Limits of the SMT predictor on slices, shared by `analyze --slices` and `check`.
#[derive(Args, Debug, Clone)]
pub struct SliceArgs {
    /// Slices: the most events encoded for one pair; a pair whose slice is larger is left
    /// unknown (and said so), never skipped silently.
    #[arg(long, value_name = "N", default_value_t = racepred_smt::SliceLimits::DEFAULT_MAX_SLICE)]
    pub max_slice: usize,
    /// Slices: the most candidate pairs examined per location pair; a location pair with
    /// more is unknown unless one of the first races.
    #[arg(long, value_name = "N", default_value_t = racepred_smt::SliceLimits::DEFAULT_MAX_PAIRS)]
    pub max_pairs: usize,
}

impl SliceArgs {
    /// The limits, checked (each at least 1).
    pub fn limits(&self) -> anyhow::Result<racepred_smt::SliceLimits> {
        Ok(racepred_smt::SliceLimits {
            max_slice: crate::checks::positive("--max-slice", self.max_slice)?,
            max_pairs: crate::checks::positive("--max-pairs", self.max_pairs)?,
        })
    }
}

/// SARIF output, shared by `analyze` and `check`.
#[derive(Args, Debug, Clone)]
pub struct SarifArgs {
    /// Print SARIF 2.1.0 (for editors and code hosts) instead of text.
    #[arg(long, conflicts_with = "json")]
    pub sarif: bool,
    /// SARIF: write source paths relative to DIR (the `SRCROOT` base id, mapped to DIR); a
    /// bare `File.java` becomes the one path under DIR that ends with it.
    #[arg(long, value_name = "DIR", requires = "sarif")]
    pub source_root: Option<PathBuf>,
}

/// Location-table options shared by the commands that report races.
#[derive(Args, Debug, Clone, Default)]
pub struct LocationArgs {
    /// Location table (`id<TAB>File.java:line:col` lines); default: TRACE.locs, NAME.locs or
    /// locs/NAME.locs beside the trace.
    ///
    /// The table maps the trace's location names (e.g. RAPID's integers) to the source
    /// positions every report shows. Without this option the first of TRACE.locs, NAME.locs
    /// and locs/NAME.locs beside the trace is used, if one exists (NAME: the trace's file name
    /// without .std/.rpb/… and .gz/.xz/.zst). See docs/reports.md.
    #[arg(long, value_name = "FILE")]
    pub locations: Option<PathBuf>,
    /// Do not look for a location table beside the trace.
    #[arg(long, conflicts_with = "locations")]
    pub no_locations: bool,
}

/// The trace a command writes (`generate`, `perturb`, `elide`).
#[derive(Args, Debug, Clone)]
pub struct TraceOutput {
    /// Output trace; format from the extension (.std, .rpb, optionally compressed).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Output format; default: from the extension.
    #[arg(long, value_enum)]
    pub to: Option<FormatArg>,
}

/// Input options shared by commands that read a trace.
#[derive(Args, Debug, Clone)]
pub struct Input {
    /// Trace file (`-` for standard input). Compressed .gz/.xz/.zst inputs are read directly.
    pub trace: PathBuf,
    /// Input format; default: from the extension, else sniffed from the content.
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Longest line accepted in a text trace (bytes); a longer line is an error naming it.
    #[arg(long, value_name = "BYTES", default_value_t = racepred::trace::lines::DEFAULT_MAX_LINE)]
    pub max_line: usize,
    /// Read the trace file with read(2) instead of mapping it into memory (mapping is faster,
    /// but a file that another process truncates meanwhile ends the run with SIGBUS).
    #[arg(long)]
    pub no_mmap: bool,
}

/// Output options shared by commands that print a result.
#[derive(Args, Debug, Clone)]
pub struct Output {
    /// Write the result to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print machine-readable JSON (fields in docs/reports.md).
    #[arg(long)]
    pub json: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatArg {
    Std,
    Rr,
    Csv,
    Golog,
    Bin,
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    pub input: Input,
    #[arg(short, long = "analysis", value_name = "NAME", required = true,
          help = crate::help::analysis(false), long_help = crate::help::analysis(true))]
    pub analyses: Vec<String>,
    #[command(flatten)]
    pub output: Output,
    #[command(flatten)]
    pub sarif: SarifArgs,
    #[command(flatten)]
    pub locations: LocationArgs,
    /// Warn about an ill-formed trace and go on instead of refusing it.
    #[arg(long)]
    pub lenient: bool,
    #[arg(long, value_enum, default_value = "vector", help = crate::help::clock())]
    pub clock: ClockArg,
    /// HBP/SHBP: run the published single-pass algorithm (may miss pairs).
    #[arg(long)]
    pub streaming: bool,
    /// W3PO: linear mode with a history of N replaced events per variable (may miss pairs).
    #[arg(long, value_name = "N")]
    pub history: Option<usize>,
    /// PACER: sampling rate in [0, 1].
    #[arg(long, default_value_t = 1.0)]
    pub rate: f64,
    /// PACER: sampling period length in operations (shorter for traces under ~10^7 events).
    #[arg(long, default_value_t = PacerConfig::DEFAULT_PERIOD)]
    pub period: u64,
    /// Seed for randomised analyses.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// RDIT: order every two barrier pairs of different threads (the naive approach).
    #[arg(long)]
    pub conservative: bool,
    /// RDIT: comma-separated addresses to ignore for barrier edges (globals).
    #[arg(long, value_name = "ADDRS", value_delimiter = ',')]
    pub ignore_global: Vec<String>,
    /// mcm/recipe/recipe-alt: events per window (races across windows are not looked for).
    #[arg(long, value_name = "N", default_value_t = racepred_smt::SmtConfig::DEFAULT_WINDOW)]
    pub window: usize,
    /// mcm/recipe: instead of windows, ask about each candidate pair (those program order,
    /// fork, join and reads-from leave unordered) on its own slice of the trace: the events
    /// that pair needs, wherever they lie; with mcm, a location pair none of whose pairs
    /// races is proved race-free.
    #[arg(long, conflicts_with = "window")]
    pub slices: bool,
    #[command(flatten)]
    pub slice_limits: SliceArgs,
    /// mcm/recipe/recipe-alt: time limit of one solver query, in seconds.
    #[arg(long, value_name = "SECS",
          default_value_t = racepred_smt::SmtConfig::DEFAULT_QUERY_TIMEOUT.as_secs_f64())]
    pub query_timeout: f64,
    /// mcm/recipe/recipe-alt: time limit of the whole run, in seconds.
    #[arg(long, value_name = "SECS")]
    pub budget: Option<f64>,
    /// mcm/recipe/recipe-alt/syncp: write a witness schedule per race into DIR (an STD file
    /// each; `racepred replay TRACE FILE` checks one; syncp: one per location pair, or per
    /// pair with --all-pairs).
    #[arg(long, value_name = "DIR")]
    pub witness: Option<PathBuf>,
    #[arg(long, visible_aliases = ["all-events", "all"], help = crate::help::all_pairs())]
    pub all_pairs: bool,
    #[arg(short, long, value_name = "N", help = crate::help::jobs())]
    pub jobs: Option<std::num::NonZeroUsize>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockArg {
    Vector,
    Tree,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub output: Output,
    /// Stop after this many violations (0: no limit, list them all).
    #[arg(long, default_value_t = 1000)]
    pub max_errors: usize,
}

#[derive(Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub output: Output,
}

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// Input trace (`-` for standard input).
    pub input: PathBuf,
    /// Output trace; format from the extension (.std, .rpb/.bin, .rr, .csv, .golog, optionally
    /// .gz/.xz/.zst). RoadRunner, CSV and Go logs cannot hold every event (vr/vw, mbegin, …):
    /// such an event is an error naming it.
    pub output: PathBuf,
    /// Input format; default: from the extension, else sniffed.
    #[arg(long, value_enum)]
    pub from: Option<FormatArg>,
    /// Longest line accepted in a text trace (bytes); a longer line is an error naming it.
    #[arg(long, value_name = "BYTES", default_value_t = racepred::trace::lines::DEFAULT_MAX_LINE)]
    pub max_line: usize,
    /// Read the trace file with read(2) instead of mapping it into memory (mapping is faster,
    /// but a file that another process truncates meanwhile ends the run with SIGBUS).
    #[arg(long)]
    pub no_mmap: bool,
    /// Output format; default: from the output extension.
    #[arg(long, value_enum)]
    pub to: Option<FormatArg>,
    /// Convert an ill-formed trace anyway (with warnings).
    #[arg(long)]
    pub lenient: bool,
    /// Drop the values and alternative paths of a value trace (value-level STD extension):
    /// without it, only STD output accepts a trace that has them, and keeps them. Into a
    /// format other than STD and binary, the `let` and `br` events go too (the events after
    /// them are then numbered differently).
    #[arg(long)]
    pub drop_values: bool,
}

#[derive(Args, Debug)]
pub struct GenerateArgs {
    #[command(flatten)]
    pub out: TraceOutput,
    /// Number of events (forks and joins included).
    #[arg(long, default_value_t = 1000)]
    pub events: u64,
    /// Number of threads (at least 1; thread T0 forks and joins the others).
    #[arg(long, default_value_t = 4)]
    pub threads: u32,
    /// Number of shared variables (at least 1).
    #[arg(long, default_value_t = 100)]
    pub vars: u32,
    /// Number of locks (0: no lock events; the --sync share becomes plain accesses).
    #[arg(long, default_value_t = 4)]
    pub locks: u32,
    /// Share of events that are lock acquires/releases.
    #[arg(long, default_value_t = 0.1)]
    pub sync: f64,
    /// Share of accesses that are reads.
    #[arg(long, default_value_t = 0.7)]
    pub reads: f64,
    /// Share of events that are volatile accesses.
    #[arg(long, default_value_t = 0.0)]
    pub volatile: f64,
    /// All threads run from the start instead of thread 0 forking and joining them.
    #[arg(long)]
    pub no_fork_join: bool,
    /// Number of distinct access locations (at least 1).
    #[arg(long, default_value_t = 1000)]
    pub locs: u32,
    /// Seed of the random generator: the same seed and options give the same trace.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

#[derive(Args, Debug)]
pub struct OracleArgs {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub output: Output,
    /// Refuse traces with more events than this.
    #[arg(long, default_value_t = 200)]
    pub max_events: usize,
    /// Refuse searches that visit more states than this (at least 1).
    #[arg(long, default_value_t = 5_000_000)]
    pub max_states: usize,
    #[command(flatten)]
    pub locations: LocationArgs,
}

#[derive(Args, Debug)]
pub struct DiagnoseArgs {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub output: Output,
    /// Print every race with its verdict and, for maybe races, the write-read choice that
    /// orders it.
    #[arg(long)]
    pub details: bool,
    /// Write the witness paths of the maybe races as a DOT graph to FILE.
    #[arg(long, value_name = "FILE")]
    pub dot: Option<PathBuf>,
    #[command(flatten)]
    pub locations: LocationArgs,
    /// Warn about an ill-formed trace and go on instead of refusing it.
    #[arg(long)]
    pub lenient: bool,
}

#[derive(Args, Debug)]
pub struct PerturbArgs {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub out: TraceOutput,
    /// Largest distance (in events) over which two accesses may be swapped.
    #[arg(long, default_value_t = 8)]
    pub window: u64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

#[derive(Args, Debug)]
pub struct SampleArgs {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub output: Output,
    /// Sampling rate of every trial (use --rates to sweep several).
    #[arg(long, conflicts_with = "rates")]
    pub rate: Option<f64>,
    /// Comma-separated sampling rates to sweep, e.g. 0.01,0.03,0.1,0.25,1.
    #[arg(long, value_delimiter = ',')]
    pub rates: Vec<f64>,
    /// Trials per rate (0: the paper's min(max(ceil(10/r), 50), 500)).
    #[arg(long, default_value_t = 0)]
    pub trials: u32,
    /// Sampling period length in operations (shorter for traces under ~10^7 events).
    #[arg(long, default_value_t = PacerConfig::DEFAULT_PERIOD)]
    pub period: u64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write a plot of detection rate against sampling rate (SVG) to FILE.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Write the per-race detection rates as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    #[command(flatten)]
    pub locations: LocationArgs,
}

#[derive(Args, Debug)]
pub struct ElideArgs {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub out: TraceOutput,
    /// Comma-separated methods whose recorded calls (mbegin..mend) lose their events.
    #[arg(long, value_delimiter = ',')]
    pub methods: Vec<String>,
    /// Comma-separated locks whose critical sections become barrier pairs.
    #[arg(long, value_delimiter = ',')]
    pub locks: Vec<String>,
    /// Share of short per-thread windows to remove (0-1).
    #[arg(long, default_value_t = 0.0)]
    pub fraction: f64,
    /// Longest window removed by --fraction (events).
    #[arg(long, default_value_t = 4)]
    pub max_window: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}
