//! One function per subcommand: validated config in, output and exit code out.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::ArgMatches;
use racepred::analysis::{self, AnalysisKind, AnalysisOptions, ClockKind, Validation};
use racepred::gen::{GenConfig, Generator};
use racepred::oracle::{OracleConfig, OracleNotion};
use racepred::report::{self, RaceReport};
use racepred::trace::stats::StatsCounter;
use racepred::trace::validate::{validate_trace, Validator};
use racepred::trace::{self, EventSource, Format, Op, Trace};
use racepred_smt::SmtKind;

use crate::args::ElideArgs;
use crate::args::{
    AnalyzeArgs, ClockArg, ConvertArgs, DiagnoseArgs, GenerateArgs, Input, OracleArgs, Output,
    PerturbArgs, SampleArgs, StatsArgs, ValidateArgs,
};
use crate::args::{Cli, Command, FormatArg};
use crate::checks;
use crate::locations;
use crate::outfile::{escaped, refuse_inputs, Out};
use crate::progress::Progress;

/// Exit status of `analyze` when no race was found but some analysis did not examine
/// everything (a spent `--budget`, timed-out queries): not the "no race" of status 0.
pub const INCOMPLETE: u8 = 3;

/// Runs a command; `matches` are the raw flags (to tell options the user gave from defaults).
pub fn run(cli: Cli, matches: &ArgMatches) -> Result<ExitCode> {
    match cli.command {
        Command::Analyze(a) => analyze(a, matches.subcommand_matches("analyze")),
        Command::Check(a) => crate::check::check(a),
        Command::Validate(a) => validate(a),
        Command::Stats(a) => stats(a),
        Command::Convert(a) => convert(a),
        Command::Generate(a) => generate(a),
        Command::Oracle(a) => oracle(a),
        Command::Diagnose(a) => diagnose(a),
        Command::Perturb(a) => perturb(a),
        Command::Sample(a) => sample(a),
        Command::Elide(a) => elide(a),
        Command::Replay(a) => crate::smt::replay(a),
        Command::Record(a) => crate::record::record(a, matches.subcommand_matches("record")),
    }
}

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

fn open_trace(
    path: &Path,
    format: Option<FormatArg>,
    max_line: usize,
    no_mmap: bool,
) -> Result<Box<dyn EventSource + Send>> {
    let opts = trace::ReadOptions {
        format: format.map(format_of),
        max_line: checks::positive("--max-line", max_line)?,
        mmap: !no_mmap,
    };
    Ok(trace::open_opts(path, &opts)?)
}

/// Standard output or `-o FILE` (appears when finished), buffered.
fn open_output(output: &Output) -> Result<Out> {
    Out::create(output.output.as_deref())
}

fn trace_name(path: &Path) -> String {
    path.display().to_string()
}

fn stats(a: StatsArgs) -> Result<ExitCode> {
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

/// True for reader errors that concern one line of a text trace, after which the reader
/// goes on with the next line; anything else (I/O, a corrupt compressed stream, a damaged
/// binary trace) means the input cannot be read further.
fn is_line_error(e: &racepred::Error) -> bool {
    use racepred::ErrorKind as K;
    e.position().is_some_and(|p| p.line > 0)
        && matches!(
            e.kind(),
            K::Syntax(_) | K::UnknownOp(_) | K::EmptyName(_) | K::NonUtf8
        )
}

/// A value trace (value-level STD extension) read whole, its recorded run checked
/// ([`ValueTrace::concrete`](racepred::trace::values::ValueTrace::concrete): reads observe
/// what the last write wrote, branches hold); a problem is added to `problems` unless its
/// line already has one (a syntax error the streaming pass reported).
fn check_values(input: &Input, problems: &mut Vec<Problem>) {
    use racepred::trace::values::ValueTrace;
    if input.trace == Path::new("-") {
        eprintln!(
            "racepred: warning: values not checked: standard input cannot be read twice \
             (pass the trace as a file)"
        );
        return;
    }
    let checked = std::fs::File::open(&input.trace)
        .map_err(racepred::Error::from)
        .and_then(trace::open::decompress)
        .and_then(ValueTrace::read_any)
        .and_then(|vt| vt.concrete().map(drop));
    if let Err(e) = checked {
        let line = e.position().map_or(0, |p| p.line);
        if problems.iter().any(|p| p.0 == line) {
            return;
        }
        let msg = e.kind().to_string();
        let (rule, expl) = match msg.split_once(": ") {
            Some((r, x)) => (r.to_string(), x.to_string()),
            None => ("error".to_string(), msg),
        };
        let event = e.position().and_then(|p| p.event);
        problems.push((line, event, rule, expl));
        problems.sort_by_key(|p| p.0);
    }
}

/// A problem `validate` lists: (line, 0 without lines; event index, where known; rule;
/// explanation).
type Problem = (u64, Option<u64>, String, String);

fn validate(a: ValidateArgs) -> Result<ExitCode> {
    refuse_inputs(&[&a.input.trace], &[a.output.output.as_deref()])?;
    let mut src = open_input(&a.input)?;
    let path = trace_name(&a.input.trace);
    let mut validator = Validator::new();
    // Every problem, syntax errors included.
    let mut problems: Vec<Problem> = Vec::new();
    let mut events = 0u64;
    let mut progress = Progress::for_input(src.total_bytes());
    let mut last_err_pos = None;
    // An error after which the input cannot be read: reported once, exit status 2.
    let mut fatal = None;
    // 0: no limit.
    let limit = if a.max_errors == 0 {
        usize::MAX
    } else {
        a.max_errors
    };
    loop {
        match src.next_event() {
            Ok(Some(ev)) => {
                events += 1;
                if let Some(v) = validator.check_lazy(&ev, || src.position().line, || src.names()) {
                    problems.push((
                        v.line,
                        Some(events - 1),
                        v.rule.name().to_string(),
                        v.explanation,
                    ));
                }
                if events & ((1 << 20) - 1) == 0 {
                    progress.update(events, src.bytes_read());
                }
            }
            Ok(None) => break,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line);
                // Text readers skip the bad line and go on; anything that does not advance
                // (binary data, I/O errors, a corrupt compressed stream) ends the run.
                if !is_line_error(&e) || last_err_pos == Some(line) {
                    fatal = Some(e);
                    break;
                }
                let msg = e.kind().to_string();
                let (rule, expl) = match msg.split_once(": ") {
                    Some((r, x)) => (r.to_string(), x.to_string()),
                    None => ("error".to_string(), msg),
                };
                problems.push((line, e.position().and_then(|p| p.event), rule, expl));
                last_err_pos = Some(line);
            }
        }
        if problems.len() >= limit {
            break;
        }
    }
    progress.finish();
    if fatal.is_none() && problems.len() < limit && src.has_values() {
        check_values(&a.input, &mut problems);
    }
    let mut out = open_output(&a.output)?;
    let fatal_msg = fatal.as_ref().map(|e| e.to_string());
    if a.output.json {
        let v = serde_json::json!({
            "trace": path,
            "events": events,
            "well_formed": problems.is_empty() && fatal.is_none(),
            "violations": problems.iter().map(|(line, event, rule, expl)| serde_json::json!({
                "line": line, "event": event, "rule": rule, "explanation": expl,
            })).collect::<Vec<_>>(),
            "error": fatal_msg,
        });
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        for (line, event, rule, expl) in &problems {
            match (line, event) {
                // A binary trace has no lines: its events (0-based) locate problems.
                (0, Some(e)) => writeln!(out, "{path}: event {e}: {rule}: {expl}")?,
                _ => writeln!(out, "{path}:{line}: {rule}: {expl}")?,
            }
        }
        if fatal.is_some() {
            // The error itself goes to stderr (once), like every command's.
        } else if problems.is_empty() {
            writeln!(out, "{path}: well-formed ({events} events)")?;
        } else {
            let more = if problems.len() >= limit {
                " (stopped at --max-errors)"
            } else {
                ""
            };
            writeln!(out, "{path}: {} problem(s){more}", problems.len())?;
        }
    }
    out.finish()?;
    if let Some(e) = fatal {
        return Err(e.in_file(&a.input.trace).into());
    }
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn output_format(path: &Path, to: Option<FormatArg>) -> Result<Format> {
    let f = match to {
        Some(f) => format_of(f),
        None => Format::from_path(path).with_context(|| {
            format!("cannot tell the output format from `{}`; name it .std, .rpb, .rr, .csv or .golog (optionally .gz/.xz/.zst) or pass --to", path.display())
        })?,
    };
    Ok(f)
}

/// Copies `src` into `dst`, validating as it goes, without the value-trace events (`let`,
/// `br`) if `drop_value_ops`; returns the event count.
fn copy_validated(
    src: &mut dyn EventSource,
    dst: &mut dyn trace::write::TraceWriter,
    lenient: bool,
    drop_value_ops: bool,
) -> Result<u64> {
    let mut validator = Validator::new();
    let mut progress = Progress::for_input(src.total_bytes());
    let mut n = 0u64;
    let mut warnings = 0u64;
    while let Some(ev) = src.next_event()? {
        if let Some(v) = validator.check_lazy(&ev, || src.position().line, || src.names()) {
            if !lenient {
                return Err(v.to_error().into());
            }
            warnings += 1;
            if warnings <= 10 {
                eprintln!("racepred: warning: {}", escaped(&v.to_error().to_string()));
            }
        }
        if drop_value_ops && ev.op.is_value_op() {
            continue;
        }
        let addrs = if ev.op == Op::MethodBegin {
            src.addresses()
        } else {
            &[]
        };
        dst.write_event(&ev, src.names(), addrs, src.seq())
            .map_err(|e| e.at(src.position()))?;
        n += 1;
        if n & ((1 << 20) - 1) == 0 {
            progress.update(n, src.bytes_read());
        }
    }
    if warnings > 10 {
        eprintln!(
            "racepred: warning: {} more violation(s) not shown",
            warnings - 10
        );
    }
    Ok(n)
}

pub(crate) fn convert(a: ConvertArgs) -> Result<ExitCode> {
    refuse_inputs(&[&a.input], &[Some(&a.output)])?;
    let to = output_format(&a.output, a.to)?;
    let mut src = open_trace(&a.input, a.from, a.max_line, a.no_mmap)?;
    let mut dst = trace::write::create(&a.output, to)?;
    // Formats without values have no `let`/`br` events either: --drop-values drops them.
    let drop_value_ops = a.drop_values && !matches!(to, Format::Std | Format::Binary);
    copy_validated(&mut *src, &mut *dst, a.lenient, drop_value_ops).map_err(|e| {
        match e.downcast::<racepred::Error>() {
            Ok(e) => anyhow::Error::from(e.in_file(&a.input)),
            Err(e) => e,
        }
    })?;
    if src.has_values() && !a.drop_values {
        if to == Format::Binary {
            // The events are written; the values follow as a values record.
            let vt = read_values_again(&a)?;
            dst.write_values(&vt.values_record())?;
            dst.finish()?;
            return Ok(ExitCode::SUCCESS);
        }
        // The streaming copy lost the values: `dst` is dropped unfinished (no file).
        drop(dst);
        anyhow::ensure!(
            to == Format::Std,
            "`{}` carries values (value-level STD extension); only STD and binary output \
             keep them — convert to .std or .rpb, or drop them explicitly with --drop-values",
            a.input.display()
        );
        convert_values(&a)?;
        return Ok(ExitCode::SUCCESS);
    }
    dst.finish()?;
    Ok(ExitCode::SUCCESS)
}

/// The input of `convert` read again, as a value trace (STD or binary): the streaming
/// readers drop values.
fn read_values_again(a: &ConvertArgs) -> Result<racepred::trace::values::ValueTrace> {
    anyhow::ensure!(
        a.input != Path::new("-"),
        "standard input carries values (value-level STD extension), and keeping them needs \
         the trace read twice; pass it as a file, or drop them explicitly with --drop-values"
    );
    let in_file = |e: racepred::Error| e.in_file(&a.input);
    let f = std::fs::File::open(&a.input).map_err(|e| in_file(e.into()))?;
    let plain = trace::open::decompress(f).map_err(in_file)?;
    Ok(racepred::trace::values::ValueTrace::read_any(plain).map_err(in_file)?)
}

/// Writes the value trace `a.input` to `a.output` as STD with its values: every event in
/// trace order ([`racepred::witness::event_line`]), each branch followed by its
/// alternative path. The input is read again as a
/// [`ValueTrace`](racepred::trace::values::ValueTrace) (the streaming readers drop values).
fn convert_values(a: &ConvertArgs) -> Result<()> {
    use racepred::witness::{alt_base, event_line};
    let vt = read_values_again(a)?;
    // `ValueTrace` keeps no `mbegin` address sets: a streaming reader, in step with the
    // trace's events, gives them.
    let mut addrs_src = if vt.trace.events.iter().any(|e| e.op == Op::MethodBegin) {
        Some(open_trace(&a.input, a.from, a.max_line, a.no_mmap)?)
    } else {
        None
    };
    let mut out = trace::write::Sink::create(&a.output).map_err(|e| e.in_file(&a.output))?;
    let mut alts = vt.alts.iter().enumerate().peekable();
    for (i, ev) in vt.trace.events.iter().enumerate() {
        let mut line = event_line(&vt, i as u64);
        if let Some(src) = addrs_src.as_mut() {
            let same = src.next_event()?;
            if ev.op == Op::MethodBegin && !src.addresses().is_empty() {
                debug_assert_eq!(same.map(|e| e.op), Some(Op::MethodBegin));
                let names = src.names();
                let list: Vec<&str> = src
                    .addresses()
                    .iter()
                    .map(|x| names.addrs.name(x.0))
                    .collect();
                // `THREAD|mbegin(M)|LOC`: neither the thread nor the location holds a `|`.
                let close = line.rfind(")|").expect("an mbegin line has a target");
                line.insert_str(close, &format!(";{}", list.join(",")));
            }
        }
        writeln!(out, "{line}")?;
        while let Some((k, alt)) = alts.next_if(|(_, alt)| alt.branch == i) {
            let base = alt_base(&vt, k);
            for j in 0..alt.events.len() as u64 {
                writeln!(out, "{}", event_line(&vt, base + j))?;
            }
        }
    }
    out.finish().map_err(|e| e.in_file(&a.output))?;
    Ok(())
}

fn generate(a: GenerateArgs) -> Result<ExitCode> {
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
    let to = output_format(&a.output, a.to)?;
    anyhow::ensure!(
        !(to == Format::GoLog && cfg.fork_join),
        "Go-log traces have no fork or join events: add --no-fork-join to generate {}",
        a.output.display()
    );
    let mut src = Generator::new(cfg);
    let mut dst = trace::write::create(&a.output, to)?;
    trace::write::copy(&mut src, &mut *dst).map_err(|e| e.in_file(&a.output))?;
    dst.finish()?;
    Ok(ExitCode::SUCCESS)
}

fn read_whole(input: &Input, lenient: bool) -> Result<Trace> {
    let mut src = open_input(input)?;
    let trace = Trace::read_from(&mut *src)?;
    if let Some(v) = validate_trace(&trace).first() {
        let e = v.to_error().in_file(&input.trace);
        if !lenient {
            return Err(e.into());
        }
        eprintln!("racepred: warning: {}", escaped(&e.to_string()));
    }
    Ok(trace)
}

fn oracle(a: OracleArgs) -> Result<ExitCode> {
    refuse_inputs(&[&a.input.trace], &[a.output.output.as_deref()])?;
    let table = locations::load(&a.locations, &a.input.trace)?;
    let trace = read_whole(&a.input, false)?;
    locations::check_coverage(table.as_ref(), &trace.names);
    let cfg = OracleConfig {
        max_events: a.max_events,
        max_states: checks::positive("--max-states", a.max_states)?,
    };
    let result = racepred::oracle::analyze(&trace, &cfg).map_err(|e| {
        // The library's message names its config fields; a CLI user has flags.
        if let racepred::ErrorKind::Budget(_) = e.kind() {
            let path = trace_name(&a.input.trace);
            if trace.len() > cfg.max_events {
                return anyhow::anyhow!(
                    "{path}: over budget: {} events is more than --max-events {} (the search is \
                     exponential; raise --max-events at your own risk)",
                    trace.len(),
                    cfg.max_events
                );
            }
            return anyhow::anyhow!(
                "{path}: over budget: the exact search visited more than --max-states {} \
                 states; raise --max-states or shorten the trace",
                cfg.max_states
            );
        }
        e.in_file(&a.input.trace).into()
    })?;
    let reports: Vec<RaceReport> = OracleNotion::ALL
        .iter()
        .map(|&n| result.report(&trace, n))
        .collect();
    let path = trace_name(&a.input.trace);
    let mut ctx = report::ReportContext::new(&path, &trace.names);
    ctx.locations = table.as_ref();
    ctx.lines = report::EventLines::of_trace(&trace.lines);
    write_reports(&reports, &ctx, &a.output, false)?;
    Ok(if result.predictable.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Prints reports as text, JSON (one object, or an array for several) or SARIF.
fn write_reports(
    reports: &[RaceReport],
    ctx: &report::ReportContext<'_>,
    output: &Output,
    sarif: bool,
) -> Result<()> {
    let mut out = open_output(output)?;
    if sarif {
        serde_json::to_writer_pretty(&mut out, &report::sarif::sarif_log(reports, ctx))?;
        writeln!(out)?;
    } else if output.json {
        let values: Vec<serde_json::Value> = reports
            .iter()
            .map(|r| report::json::report_json(r, ctx))
            .collect();
        if values.len() == 1 {
            serde_json::to_writer_pretty(&mut out, &values[0])?;
        } else {
            serde_json::to_writer_pretty(&mut out, &values)?;
        }
        writeln!(out)?;
    } else {
        report::text::write_reports(&mut out, reports, ctx)?;
        // The SMT predictors' witness tails (nothing for other reports).
        crate::smt::write_witness_tails(&mut out, reports)?;
    }
    out.finish()?;
    Ok(())
}

fn analysis_options(a: &AnalyzeArgs) -> Result<AnalysisOptions> {
    checks::rate("--rate", a.rate)?;
    checks::period("--period", a.period)?;
    Ok(AnalysisOptions {
        clock: match a.clock {
            ClockArg::Vector => ClockKind::Vector,
            ClockArg::Tree => ClockKind::Tree,
        },
        streaming: a.streaming,
        history: a.history,
        all_pairs: a.all_pairs,
        witness_cuts: a.witness.is_some(),
        group_racy: !a.all_pairs,
        group_pairs: !a.all_pairs,
        rate: a.rate,
        period: a.period,
        seed: a.seed,
        conservative: a.conservative,
        ignore_global: a.ignore_global.clone(),
    })
}

/// The analyses named by `-a`: the streaming ones and the SMT predictors.
fn analysis_kinds(names: &[String]) -> Result<(Vec<AnalysisKind>, Vec<SmtKind>)> {
    let mut kinds = Vec::new();
    let mut smt = Vec::new();
    for n in names.iter().flat_map(|s| s.split(',')) {
        if let Some(k) = SmtKind::from_name(n.trim()) {
            if !smt.contains(&k) {
                smt.push(k);
            }
            continue;
        }
        let k = AnalysisKind::from_name(n.trim()).with_context(|| {
            let all: Vec<&str> = AnalysisKind::ALL
                .iter()
                .map(|k| k.name())
                .chain(SmtKind::ALL.iter().map(|k| k.name()))
                .collect();
            format!("unknown analysis `{n}` (known: {})", all.join(", "))
        })?;
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    Ok((kinds, smt))
}

fn analyze(a: AnalyzeArgs, matches: Option<&ArgMatches>) -> Result<ExitCode> {
    refuse_inputs(&[&a.input.trace], &[a.output.output.as_deref()])?;
    let opts = analysis_options(&a)?;
    let (kinds, smt_kinds) = analysis_kinds(&a.analyses)?;
    if let Some(m) = matches {
        let names: Vec<&str> = kinds
            .iter()
            .map(|k| k.name())
            .chain(smt_kinds.iter().map(|k| k.name()))
            .collect();
        checks::options_belong(m, &names, checks::ANALYSIS_OPTIONS)?;
        for (id, flag) in [("max_slice", "--max-slice"), ("max_pairs", "--max-pairs")] {
            anyhow::ensure!(
                a.slices || !checks::given(m, id),
                "{flag} limits the slices of --slices: give both or neither"
            );
        }
    }
    let jobs = checks::jobs(matches, a.jobs.map_or(1, |n| n.get()), a.all_pairs)?;
    let mut plan = analysis::Plan::new(&kinds, &opts, jobs)?;
    let table = locations::load(&a.locations, &a.input.trace)?;
    let source_root = a.sarif.source_root()?;
    // The SMT predictors need the whole trace with its values: read it into memory and feed
    // the streaming analyses from there too, so that every report shares one name table.
    // Witnesses given as cuts (`syncp --witness DIR`) are rendered from the trace in memory.
    let cut_witnesses = a.witness.is_some()
        && (kinds.contains(&AnalysisKind::SyncP) || kinds.contains(&AnalysisKind::Osr));
    let value_trace = if smt_kinds.is_empty() && !cut_witnesses {
        None
    } else {
        Some(crate::smt::read_value_trace(&a.input)?)
    };
    let mut src: Box<dyn EventSource + Send + '_> = match &value_trace {
        Some(vt) => Box::new(vt.trace.source()),
        None => open_input(&a.input)?,
    };
    if !a.ignore_global.is_empty() {
        // RDIT sees addresses as ids only; the wrapper drops the named ones from each mbegin.
        src = Box::new(analysis::rdit::IgnoreGlobal::new(src, &a.ignore_global));
    }
    let validation = if a.lenient {
        Validation::Lenient
    } else {
        Validation::Strict
    };
    let mut progress = Progress::for_input(src.total_bytes());
    let summary = analysis::run_pipelined(&mut *src, &mut plan.analyses, validation, |e, b| {
        progress.update(e, b)
    })
    .map_err(|e| e.in_file(&a.input.trace))?;
    progress.finish();
    for v in summary.violations.iter().take(10) {
        eprintln!(
            "racepred: warning: {}",
            escaped(&v.to_error().in_file(&a.input.trace).to_string())
        );
    }
    if summary.violations.len() > 10 {
        eprintln!(
            "racepred: warning: {} more violation(s) not shown",
            summary.violations.len() - 10
        );
    }
    let names = src.names();
    locations::check_coverage(table.as_ref(), names);
    let mut reports: Vec<RaceReport> = plan.finish(names, summary.events);
    if let (Some(vt), Some(dir)) = (&value_trace, a.witness.as_deref()) {
        for r in reports.iter_mut().filter(|r| !r.cuts.is_empty()) {
            crate::smt::write_cut_witnesses(vt, r, dir, &a.input.trace)?;
        }
    }
    if let Some(vt) = &value_trace {
        let smt_opts = crate::smt::SmtOptions {
            window: a.window,
            slices: a.slices.then(|| a.slice_limits.limits()).transpose()?,
            query_timeout: a.query_timeout,
            budget: a.budget,
            all_pairs: a.all_pairs,
            witness_dir: a.witness.as_deref(),
        };
        for &k in &smt_kinds {
            reports.push(crate::smt::run(vt, k, &smt_opts, &a.input.trace)?);
        }
    }
    let shown = || reports.iter().flat_map(|r| r.shown_events()).collect();
    let path = trace_name(&a.input.trace);
    // The calling contexts `racepred record` wrote beside the trace, if any.
    let stacks = racepred::trace::stacks::Stacks::beside(&a.input.trace)?;
    let mut ctx = report::ReportContext::new(&path, names);
    ctx.locations = table.as_ref();
    ctx.stacks = stacks.as_ref();
    ctx.lines =
        locations::lines_after_stream(&a.input, src.position().line, summary.events, shown)?;
    if let Some((root, index)) = &source_root {
        ctx.source_root = Some(root);
        ctx.source_index = Some(index);
    }
    write_reports(&reports, &ctx, &a.output, a.sarif.sarif)?;
    Ok(if reports.iter().any(|r| r.has_races()) {
        ExitCode::from(1)
    } else if reports.iter().any(|r| r.incomplete.is_some()) {
        // No race found, but not everything was examined: not the "no race" of status 0.
        ExitCode::from(INCOMPLETE)
    } else {
        ExitCode::SUCCESS
    })
}

fn diagnose(a: DiagnoseArgs) -> Result<ExitCode> {
    use racepred::analysis::sshb::{self, dot};
    refuse_inputs(
        &[&a.input.trace],
        &[a.output.output.as_deref(), a.dot.as_deref()],
    )?;
    let table = locations::load(&a.locations, &a.input.trace)?;
    let mut src = open_input(&a.input)?;
    let validation = if a.lenient {
        Validation::Lenient
    } else {
        Validation::Strict
    };
    let mut progress = Progress::for_input(src.total_bytes());
    let (d, summary) = sshb::diagnose(
        &mut *src,
        validation,
        &sshb::SshbConfig::default(),
        |e, b| progress.update(e, b),
    )
    .map_err(|e| e.in_file(&a.input.trace))?;
    progress.finish();
    for v in summary.violations.iter().take(10) {
        eprintln!(
            "racepred: warning: {}",
            escaped(&v.to_error().in_file(&a.input.trace).to_string())
        );
    }
    let names = src.names();
    locations::check_coverage(table.as_ref(), names);
    let shown = || {
        if a.details || a.dot.is_some() {
            dot::shown_events(&d)
        } else if a.output.json {
            d.report.shown_events()
        } else {
            Vec::new()
        }
    };
    let path = trace_name(&a.input.trace);
    let mut ctx = report::ReportContext::new(&path, names);
    ctx.locations = table.as_ref();
    ctx.lines =
        locations::lines_after_stream(&a.input, src.position().line, summary.events, shown)?;
    if let Some(p) = &a.dot {
        let maybe: Vec<usize> = (0..d.report.pairs.len())
            .filter(|&i| d.witness(i).is_some())
            .collect();
        let mut f = Out::create(Some(p))?;
        dot::write_dot(&d, &ctx, &maybe, &mut f)?;
        f.finish()?;
    }
    if a.output.json {
        write_reports(std::slice::from_ref(&d.report), &ctx, &a.output, false)?;
    } else {
        let mut out = open_output(&a.output)?;
        writeln!(out, "trace               {path}")?;
        if let Some(name) = ctx.table_name() {
            writeln!(out, "locations           {name}")?;
        }
        dot::write_summary(&d, &mut out)?;
        if a.details {
            writeln!(out)?;
            dot::write_details(&d, &ctx, &mut out)?;
        }
        out.finish()?;
    }
    Ok(if d.report.has_races() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn perturb(a: PerturbArgs) -> Result<ExitCode> {
    refuse_inputs(&[&a.input.trace], &[Some(&a.output)])?;
    let to = output_format(&a.output, a.to)?;
    let trace = read_whole(&a.input, false)?;
    let perturbed = racepred::analysis::sshb::perturb::perturb(&trace, a.window, a.seed);
    let mut dst = trace::write::create(&a.output, to)?;
    trace::write::copy(&mut perturbed.source(), &mut *dst)?;
    dst.finish()?;
    Ok(ExitCode::SUCCESS)
}

fn sample(a: SampleArgs) -> Result<ExitCode> {
    use racepred::analysis::pacer::{experiment_vs_fasttrack_with_progress, ExperimentConfig};
    refuse_inputs(
        &[&a.input.trace],
        &[
            a.output.output.as_deref(),
            a.plot.as_deref(),
            a.csv.as_deref(),
        ],
    )?;
    let rates = match a.rate {
        Some(r) => vec![checks::rate("--rate", r)?],
        None if a.rates.is_empty() => ExperimentConfig::default().rates,
        None => a
            .rates
            .iter()
            .map(|&r| checks::rate("--rates", r))
            .collect::<Result<_>>()?,
    };
    checks::period("--period", a.period)?;
    let table = locations::load(&a.locations, &a.input.trace)?;
    let trace = read_whole(&a.input, false)?;
    locations::check_coverage(table.as_ref(), &trace.names);
    let cfg = ExperimentConfig {
        rates,
        trials: a.trials,
        seed: a.seed,
        period: a.period,
    };
    let mut progress = Progress::new();
    let exp = experiment_vs_fasttrack_with_progress(&trace, &cfg, &mut |done, total| {
        progress.trials(done, total)
    })?;
    progress.finish();
    let ops = trace.len() as u64;
    if let Some(note) =
        racepred::analysis::pacer::few_periods_note(ops.div_ceil(a.period), a.period, ops)
    {
        eprintln!("racepred: note: {note}");
    }
    if let Some(p) = &a.plot {
        racepred::report::plot::write_detection_plot(p, &exp)?;
    }
    if let Some(p) = &a.csv {
        let csv = match &table {
            Some(t) => exp.per_race_csv_with_sources(t),
            None => exp.per_race_csv(),
        };
        trace::write::write_atomic(p, csv.as_bytes())?;
    }
    let mut out = open_output(&a.output)?;
    if a.output.json {
        match &table {
            Some(t) => writeln!(out, "{}", exp.to_json_with_sources(t))?,
            None => writeln!(out, "{}", exp.to_json())?,
        }
    } else {
        if let Some(p) = table.as_ref().and_then(|t| t.path()) {
            // The summary is CSV on standard output; the table goes to the per-race CSV.
            eprintln!("racepred: locations: {}", p.display());
        }
        write!(out, "{}", exp.summary_csv())?;
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}

fn elide(a: ElideArgs) -> Result<ExitCode> {
    use racepred::trace::elide::{elide, ElideConfig};
    refuse_inputs(&[&a.input.trace], &[Some(&a.output)])?;
    checks::rate("--fraction", a.fraction)?;
    checks::positive("--max-window", a.max_window)?;
    anyhow::ensure!(
        !a.methods.is_empty() || !a.locks.is_empty() || a.fraction > 0.0,
        "nothing to elide: pass --methods, --locks or --fraction"
    );
    let to = output_format(&a.output, a.to)?;
    let trace = read_whole(&a.input, false)?;
    let cfg = ElideConfig {
        methods: a.methods.clone(),
        locks: a.locks.clone(),
        fraction: a.fraction,
        seed: a.seed,
        max_window: a.max_window,
    };
    let e = elide(&trace, &cfg).map_err(|e| e.in_file(&a.input.trace))?;
    let mut dst = trace::write::create(&a.output, to)?;
    trace::write::copy(&mut e.trace.source(), &mut *dst)?;
    dst.finish()?;
    let removed = e.removed();
    eprintln!(
        "racepred: elided {} region(s): {removed} of {} events removed, {} barrier event(s) added, {} events written",
        e.regions.len(),
        trace.len(),
        (e.trace.len() + removed).saturating_sub(trace.len()),
        e.trace.len()
    );
    Ok(ExitCode::SUCCESS)
}
