//! The registry: one row per analysis the CLI can pick ([`ANALYSES`]), saying its name, what
//! it reports, which options it reads, whether `-j` can split it, whether it runs online
//! inside a recorded program, what it promises, and how to make it. The CLI's option checks,
//! its help texts, `-j`'s list ([`super::shard::shardable`]) and the online list are derived
//! from these rows; a new analysis is its module plus one row (docs/contributing.md).

use super::{eraser, fasttrack, hb, hbp, pacer, rdit, shard, shb, sshb, syncp, tsan_hybrid};
use super::{w3po, wcp, Analysis};
use crate::clock::{TreeClock, VectorClock};
use crate::error::{Error, Result};
use crate::report::{RaceReport, ReportKind};
use crate::trace::Names;

// The clock kind picks the monomorphisation (thread and lock clocks are type parameters).
macro_rules! by_clock {
    ($o:expr, $m:ident :: $f:ident $(, $arg:expr)*) => {
        match $o.clock {
            ClockKind::Vector => Box::new($m::$f::<VectorClock>($($arg),*)) as Box<dyn Analysis>,
            ClockKind::Tree => Box::new($m::$f::<TreeClock>($($arg),*)) as Box<dyn Analysis>,
        }
    };
}

// `hb`, `fasttrack`, `shb` with their racy events grouped by location if asked.
macro_rules! racy_by_clock {
    ($o:expr, $m:ident :: $f:ident) => {
        match ($o.clock, $o.group_racy) {
            (ClockKind::Vector, false) => Box::new($m::$f::<VectorClock>()) as Box<dyn Analysis>,
            (ClockKind::Vector, true) => Box::new($m::$f::<VectorClock>().racy_by_location()),
            (ClockKind::Tree, false) => Box::new($m::$f::<TreeClock>()),
            (ClockKind::Tree, true) => Box::new($m::$f::<TreeClock>().racy_by_location()),
        }
    };
}

/// Error for an analysis name the CLI does not know.
pub fn unknown_analysis(name: &str) -> Error {
    Error::invalid(format!("unknown analysis `{name}`"))
}

/// An option of `analyze` that only some analyses read. An option given on the command line
/// when none of the selected analyses reads it is an error naming those that do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opt {
    /// `--clock`: the clock type of thread and lock clocks.
    Clock,
    /// `--streaming`: the published single-pass algorithm.
    Streaming,
    /// `--history N`: a bounded history.
    History,
    /// `--rate`: a sampling rate.
    Rate,
    /// `--period`: a sampling period.
    Period,
    /// `--seed`: the seed of a randomised analysis.
    Seed,
    /// `--conservative`: RDIT's naive barrier order.
    Conservative,
    /// `--ignore-global`: addresses RDIT ignores.
    IgnoreGlobal,
    /// `--window`: the SMT window.
    Window,
    /// `--slices`: the SMT predictor on each candidate pair's slice instead of windows.
    Slices,
    /// `--max-slice N`: the largest slice encoded.
    MaxSlice,
    /// `--max-pairs N`: the candidate pairs asked per location pair.
    MaxPairs,
    /// `--query-timeout`: the time limit of one solver query.
    QueryTimeout,
    /// `--budget`: the time limit of an SMT run.
    Budget,
    /// `--witness DIR`: a witness schedule per race.
    Witness,
    /// `--all-pairs`: every pair (or racy event) instead of one per location (pair).
    AllPairs,
}

impl Opt {
    /// Every option, in the order of the CLI's checks.
    pub const ALL: [Opt; 16] = [
        Opt::Clock,
        Opt::Streaming,
        Opt::History,
        Opt::Rate,
        Opt::Period,
        Opt::Seed,
        Opt::Conservative,
        Opt::IgnoreGlobal,
        Opt::Window,
        Opt::Slices,
        Opt::MaxSlice,
        Opt::MaxPairs,
        Opt::QueryTimeout,
        Opt::Budget,
        Opt::Witness,
        Opt::AllPairs,
    ];

    /// The command-line flag.
    pub const fn flag(self) -> &'static str {
        match self {
            Opt::Clock => "--clock",
            Opt::Streaming => "--streaming",
            Opt::History => "--history",
            Opt::Rate => "--rate",
            Opt::Period => "--period",
            Opt::Seed => "--seed",
            Opt::Conservative => "--conservative",
            Opt::IgnoreGlobal => "--ignore-global",
            Opt::Window => "--window",
            Opt::Slices => "--slices",
            Opt::MaxSlice => "--max-slice",
            Opt::MaxPairs => "--max-pairs",
            Opt::QueryTimeout => "--query-timeout",
            Opt::Budget => "--budget",
            Opt::Witness => "--witness",
            Opt::AllPairs => "--all-pairs",
        }
    }

    /// The analyses that read this option, in registry order.
    pub fn readers(self) -> impl Iterator<Item = &'static Row> {
        ANALYSES.iter().filter(move |r| r.options.contains(&self))
    }
}

/// How an analysis is made.
#[derive(Clone, Copy)]
pub enum Engine {
    /// A streaming analysis of this library, fed by the drivers ([`super::driver`]).
    Streaming(AnalysisKind, fn(&AnalysisOptions) -> Box<dyn Analysis>),
    /// An SMT predictor (crate `racepred-smt`, which links Z3): it needs the whole trace with
    /// its values, so the CLI reads the trace into memory and runs it (`racepred-cli`'s
    /// `smt.rs`); its row here says what it reads and promises.
    Smt,
}

/// One analysis: everything the CLI and the docs say about it.
pub struct Row {
    /// The name of `-a NAME`, of reports and of `tests/golden/NAME/`.
    pub name: &'static str,
    /// What its report lists.
    pub report: ReportKind,
    /// The options it reads (besides those every analysis reads).
    pub options: &'static [Opt],
    /// `-j N` can split it by variable ([`shard::Shard`]), in its grouped mode (without
    /// `--all-pairs`).
    pub shardable: bool,
    /// It can run inside a recorded program (`racepred record --online NAME`).
    pub online: bool,
    /// What it promises, in one line (help texts, docs/analyses.md).
    pub promise: &'static str,
    /// How it is made.
    pub engine: Engine,
}

impl Row {
    /// The library's kind of a streaming analysis; `None` for an SMT predictor.
    pub fn kind(&self) -> Option<AnalysisKind> {
        match self.engine {
            Engine::Streaming(k, _) => Some(k),
            Engine::Smt => None,
        }
    }

    /// True if the analysis reads `opt`.
    pub fn reads(&self, opt: Opt) -> bool {
        self.options.contains(&opt)
    }
}

/// The clock-generic HB family, and RDIT: `--clock` picks the clock type.
const CLOCK_GROUPED: &[Opt] = &[Opt::Clock, Opt::AllPairs];
/// The SMT predictors' options.
const SMT: &[Opt] = &[
    Opt::Window,
    Opt::QueryTimeout,
    Opt::Budget,
    Opt::Witness,
    Opt::AllPairs,
];

/// The SMT predictors that also run on slices (`recipe-alt` negates branches in windows).
const SMT_SLICES: &[Opt] = &[
    Opt::Window,
    Opt::Slices,
    Opt::MaxSlice,
    Opt::MaxPairs,
    Opt::QueryTimeout,
    Opt::Budget,
    Opt::Witness,
    Opt::AllPairs,
];

/// Every analysis the CLI can pick, in the order of `-a`'s help.
pub static ANALYSES: [Row; ROWS.len()] = ROWS;

const ROWS: [Row; 18] = [
    Row {
        name: "hb",
        report: ReportKind::RacyEvents,
        options: CLOCK_GROUPED,
        shardable: false,
        online: true,
        promise: "Djit+ happens-before: racy events; the first is a predictable race",
        engine: Engine::Streaming(AnalysisKind::Hb, |o| racy_by_clock!(o, hb::hb)),
    },
    Row {
        name: "fasttrack",
        report: ReportKind::RacyEvents,
        options: CLOCK_GROUPED,
        shardable: false,
        online: true,
        promise: "FastTrack epochs: the racy events of hb, faster",
        engine: Engine::Streaming(AnalysisKind::FastTrack, |o| {
            racy_by_clock!(o, fasttrack::fasttrack)
        }),
    },
    Row {
        name: "hbp",
        report: ReportKind::Pairs,
        options: &[Opt::Clock, Opt::Streaming, Opt::AllPairs],
        shardable: false,
        online: false,
        promise: "every HB-unordered conflicting pair",
        engine: Engine::Streaming(AnalysisKind::Hbp, |o| {
            by_clock!(o, hbp::hbp_with, o.streaming, o.group_pairs)
        }),
    },
    Row {
        name: "shb",
        report: ReportKind::RacyEvents,
        options: CLOCK_GROUPED,
        shardable: false,
        online: false,
        promise: "schedulable happens-before: every racy event is a predictable race",
        engine: Engine::Streaming(AnalysisKind::Shb, |o| racy_by_clock!(o, shb::shb)),
    },
    Row {
        name: "shbp",
        report: ReportKind::Pairs,
        options: &[Opt::Clock, Opt::Streaming, Opt::AllPairs],
        shardable: false,
        online: false,
        promise: "every SHB-unordered conflicting pair",
        engine: Engine::Streaming(AnalysisKind::Shbp, |o| {
            by_clock!(o, shb::shbp_with, o.streaming, o.group_pairs)
        }),
    },
    Row {
        name: "wcp",
        report: ReportKind::RacyEvents,
        options: &[Opt::AllPairs],
        shardable: false,
        online: false,
        promise: "weak-causally-precedes: a race or a deadlock behind each first racy event",
        engine: Engine::Streaming(AnalysisKind::Wcp, |o| {
            if o.group_racy {
                Box::new(wcp::Wcp::new().racy_by_location())
            } else {
                Box::new(wcp::Wcp::new())
            }
        }),
    },
    Row {
        name: "lockset",
        report: ReportKind::Pairs,
        options: &[Opt::AllPairs],
        shardable: true,
        online: false,
        promise: "Eraser lockset: accesses not protected by a common lock (warnings, unsound)",
        engine: Engine::Streaming(AnalysisKind::Lockset, |o| {
            Box::new(eraser::Lockset::with_mode(o.all_pairs))
        }),
    },
    Row {
        name: "tsan-hybrid",
        report: ReportKind::Pairs,
        options: &[Opt::AllPairs],
        shardable: true,
        online: false,
        promise: "ThreadSanitizer v1 hybrid: lockset warnings not ordered by HB (unsound)",
        engine: Engine::Streaming(AnalysisKind::TsanHybrid, |o| {
            Box::new(tsan_hybrid::TsanHybrid::with_mode(o.all_pairs))
        }),
    },
    Row {
        name: "w3po",
        report: ReportKind::Pairs,
        options: &[Opt::History, Opt::AllPairs],
        shardable: true,
        online: false,
        promise: "lockset + weak WCP (W3PO): pairs not ordered by locks or W3 order",
        engine: Engine::Streaming(AnalysisKind::W3po, |o| {
            Box::new(w3po::W3po::with_mode(o.history, o.all_pairs))
        }),
    },
    Row {
        name: "sshb",
        report: ReportKind::Pairs,
        options: &[],
        shardable: false,
        online: false,
        promise: "SSHB: HB races split into guaranteed and maybe for inaccurate traces",
        engine: Engine::Streaming(AnalysisKind::Sshb, |_| {
            Box::new(sshb::Sshb::new(sshb::SshbConfig::default()))
        }),
    },
    Row {
        name: "rdit",
        report: ReportKind::RacyEvents,
        options: &[Opt::Clock, Opt::Conservative, Opt::IgnoreGlobal],
        shardable: false,
        online: false,
        promise: "RDIT: HB races of traces with missing events (barrier pairs)",
        engine: Engine::Streaming(AnalysisKind::Rdit, |o| {
            let cfg = rdit::RditConfig {
                conservative: o.conservative,
                ignore: Vec::new(),
                ignore_names: o.ignore_global.clone(),
                count_removed: true,
            };
            by_clock!(o, rdit::rdit, &cfg)
        }),
    },
    Row {
        name: "pacer",
        report: ReportKind::RacyEvents,
        options: &[Opt::Rate, Opt::Period, Opt::Seed],
        shardable: false,
        online: true,
        promise: "PACER sampling: FastTrack's races, each found with probability about --rate",
        engine: Engine::Streaming(AnalysisKind::Pacer, |o| {
            Box::new(pacer::Pacer::from_options(o))
        }),
    },
    Row {
        name: "syncp",
        report: ReportKind::Pairs,
        options: &[Opt::Witness, Opt::AllPairs],
        shardable: false,
        online: false,
        promise: "sync-preserving races: sound, each with a witness schedule",
        engine: Engine::Streaming(AnalysisKind::SyncP, |o| {
            Box::new(syncp::SyncP::new(o.all_pairs, o.witness_cuts))
        }),
    },
    Row {
        name: "osr",
        report: ReportKind::Pairs,
        options: &[Opt::Witness, Opt::AllPairs],
        shardable: false,
        online: false,
        promise: "optimistic sync-reversal races: sound, beyond sync-preserving ones",
        engine: Engine::Streaming(AnalysisKind::Osr, |o| {
            Box::new(syncp::SyncP::osr(o.all_pairs, o.witness_cuts))
        }),
    },
    Row {
        name: "trf",
        report: ReportKind::Pairs,
        options: &[],
        shardable: false,
        online: false,
        promise: "location groups not ordered by program order, fork, join and reads-from",
        engine: Engine::Streaming(AnalysisKind::Trf, |_| {
            Box::new(syncp::SyncP::trf_candidates())
        }),
    },
    Row {
        name: "mcm",
        report: ReportKind::Pairs,
        options: SMT_SLICES,
        shardable: false,
        online: false,
        promise: "SMT, maximal causal model: sound, each race with a replayable witness",
        engine: Engine::Smt,
    },
    Row {
        name: "recipe",
        report: ReportKind::Pairs,
        options: SMT_SLICES,
        shardable: false,
        online: false,
        promise: "SMT over value traces with branches (RECIPE): sound, with witnesses",
        engine: Engine::Smt,
    },
    Row {
        name: "recipe-alt",
        report: ReportKind::Pairs,
        options: SMT,
        shardable: false,
        online: false,
        promise: "RECIPE that may also take the recorded alternative paths",
        engine: Engine::Smt,
    },
];

/// The row named `name`.
pub fn row(name: &str) -> Option<&'static Row> {
    ANALYSES.iter().find(|r| r.name == name)
}

/// The names of the rows that satisfy `f`, in registry order.
pub fn names(f: impl Fn(&Row) -> bool) -> Vec<&'static str> {
    ANALYSES.iter().filter(|r| f(r)).map(|r| r.name).collect()
}

/// The analyses the CLI can pick (a closed set, like Miri's data-race handler).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AnalysisKind {
    /// Djit+ happens-before with vector clocks (racy events).
    Hb,
    /// FastTrack epochs (racy events).
    FastTrack,
    /// Every HB-unordered conflicting pair.
    Hbp,
    /// Schedulable happens-before (racy events).
    Shb,
    /// Every SHB-unordered conflicting pair.
    Shbp,
    /// Weak-causally-precedes.
    Wcp,
    /// Eraser lockset.
    Lockset,
    /// ThreadSanitizer v1 style hybrid.
    TsanHybrid,
    /// Lockset + W3 (W3PO).
    W3po,
    /// SSHB guaranteed / maybe diagnosis.
    Sshb,
    /// RDIT for traces with missing events.
    Rdit,
    /// PACER proportional sampling.
    Pacer,
    /// Sync-preserving races (Mathur et al. POPL'21).
    SyncP,
    /// Optimistic sync-reversal races (Shi et al. ICSE'24).
    Osr,
    /// Location groups not ordered by program order, fork, join and reads-from.
    Trf,
}

impl AnalysisKind {
    /// The streaming analyses, in registry order.
    pub const ALL: [AnalysisKind; STREAMING] = {
        let mut all = [AnalysisKind::Hb; STREAMING];
        let (mut i, mut n) = (0, 0);
        while i < ROWS.len() {
            if let Engine::Streaming(k, _) = ROWS[i].engine {
                all[n] = k;
                n += 1;
            }
            i += 1;
        }
        all
    };

    /// Its registry row.
    pub fn row(self) -> &'static Row {
        ANALYSES
            .iter()
            .find(|r| r.kind() == Some(self))
            .expect("every analysis kind has a registry row")
    }

    /// The CLI name (`hb`, `fasttrack`, …).
    pub fn name(self) -> &'static str {
        self.row().name
    }

    pub fn from_name(s: &str) -> Option<AnalysisKind> {
        row(s).and_then(Row::kind)
    }
}

/// The number of streaming rows.
const STREAMING: usize = {
    let (mut i, mut n) = (0, 0);
    while i < ROWS.len() {
        if let Engine::Streaming(..) = ROWS[i].engine {
            n += 1;
        }
        i += 1;
    }
    n
};

/// Which clock implementation thread and lock clocks use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClockKind {
    #[default]
    Vector,
    Tree,
}

/// Options shared by the analyses; each reads the fields it understands.
#[derive(Clone, Debug, Default)]
pub struct AnalysisOptions {
    pub clock: ClockKind,
    /// HBP / SHBP: run the published single-pass algorithm (may miss pairs).
    pub streaming: bool,
    /// W3PO: bounded history (linear mode); `None` = complete mode.
    pub history: Option<usize>,
    /// Lockset, TSan hybrid, W3PO, SyncP: list every pair instead of one per location pair.
    pub all_pairs: bool,
    /// SyncP: keep each reported pair's witness cut ([`crate::report::RaceReport::cuts`]).
    pub witness_cuts: bool,
    /// hb, fasttrack, shb, wcp: keep the first racy event of each (location, operation)
    /// with a count instead of every racy event ([`crate::report::RacyLog`]: memory bounded
    /// by the locations). Off by default (every racy event); the CLI turns it on unless
    /// `--all-pairs` is given.
    pub group_racy: bool,
    /// hbp, shbp: keep one pair per location pair (its first instance) with the number of
    /// racing accesses instead of every pair (memory bounded by the location pairs, as the
    /// lockset family reports). Off by default (every pair); the CLI turns it on unless
    /// `--all-pairs` is given.
    pub group_pairs: bool,
    /// PACER: sampling rate (0–1).
    pub rate: f64,
    /// PACER: sampling period length in operations.
    pub period: u64,
    /// Seed for randomised analyses.
    pub seed: u64,
    /// RDIT: conservative mode (order every two barrier pairs of different threads).
    pub conservative: bool,
    /// RDIT: addresses marked global (ignored for barrier edges).
    pub ignore_global: Vec<String>,
}

/// The analyses of one run, in the order of their kinds, each of the [`shard::shardable`]
/// ones split into shards (one [`shard::Shard`] per thread) when more than one job is
/// allowed. Run [`Plan::analyses`] through a driver, then [`Plan::finish`] gives one report
/// per kind.
pub struct Plan<'a> {
    pub analyses: Vec<Box<dyn Analysis + 'a>>,
    /// Per kind: its number of analyses in `analyses` (its shards, or 1).
    parts: Vec<usize>,
}

impl<'a> Plan<'a> {
    /// `kinds` with `opts`; each shardable one in `jobs` shards (`jobs` ≤ 1: none sharded).
    pub fn new(kinds: &[AnalysisKind], opts: &AnalysisOptions, jobs: usize) -> Result<Plan<'a>> {
        let mut plan = Plan {
            analyses: Vec::new(),
            parts: Vec::new(),
        };
        for &kind in kinds {
            let n = if jobs > 1 && shard::shardable(kind, opts) {
                jobs.min(u32::MAX as usize) as u32
            } else {
                1
            };
            for k in 0..n {
                let a = create(kind, opts)?;
                plan.analyses.push(if n == 1 {
                    a
                } else {
                    Box::new(shard::Shard::new(a, k, n))
                });
            }
            plan.parts.push(n as usize);
        }
        Ok(plan)
    }

    /// One report per kind, each with `events` as its event count.
    pub fn finish(&mut self, names: &Names, events: u64) -> Vec<RaceReport> {
        let mut reports = self.analyses.iter_mut().map(|a| a.finish(names));
        self.parts
            .iter()
            .map(|&n| {
                let mut r = shard::merge(reports.by_ref().take(n).collect());
                r.events = events;
                r
            })
            .collect()
    }
}

/// Creates a streaming analysis from its row.
pub fn create(kind: AnalysisKind, opts: &AnalysisOptions) -> Result<Box<dyn Analysis>> {
    match kind.row().engine {
        Engine::Streaming(_, make) => Ok(make(opts)),
        Engine::Smt => Err(unknown_analysis(kind.name())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    #[test]
    fn names_are_unique_and_kinds_have_one_row_each() {
        for (i, r) in ANALYSES.iter().enumerate() {
            assert!(
                ANALYSES[..i].iter().all(|s| s.name != r.name),
                "{} twice",
                r.name
            );
        }
        for k in AnalysisKind::ALL {
            let rows = ANALYSES.iter().filter(|r| r.kind() == Some(k)).count();
            assert_eq!(rows, 1, "{k:?}");
            assert_eq!(AnalysisKind::from_name(k.name()), Some(k));
        }
        assert_eq!(
            AnalysisKind::ALL.len(),
            ANALYSES.iter().filter(|r| r.kind().is_some()).count()
        );
    }

    /// What a row says of an analysis is what the analysis does: its reports carry the
    /// row's name and report kind, with every mode of the options it reads.
    #[test]
    fn rows_describe_their_analyses() {
        let text = &b"T0|w(x)|1\nT1|w(x)|2\n"[..];
        let trace = Trace::read_from(&mut crate::trace::std_format::StdReader::new(text)).unwrap();
        for all_pairs in [false, true] {
            let opts = AnalysisOptions {
                all_pairs,
                group_racy: !all_pairs,
                group_pairs: !all_pairs,
                rate: 1.0,
                ..AnalysisOptions::default()
            };
            for k in AnalysisKind::ALL {
                let a = create(k, &opts).unwrap();
                assert_eq!(a.name(), k.name());
                let r = super::super::run_one(&trace, a);
                assert_eq!(r.analysis, k.name());
                assert_eq!(r.kind, k.row().report, "{}", k.name());
            }
        }
    }

    #[test]
    fn every_option_has_a_reader_and_only_streaming_rows_shard_or_run_online() {
        for o in Opt::ALL {
            assert!(o.readers().next().is_some(), "{}", o.flag());
        }
        for r in &ANALYSES {
            if r.shardable || r.online {
                assert!(r.kind().is_some(), "{}", r.name);
            }
        }
    }
}
