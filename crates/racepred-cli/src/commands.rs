//! One function per subcommand: validated config in, output and exit code out.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use racepred::analysis::{self, AnalysisKind, AnalysisOptions, ClockKind, Validation};
use racepred::gen::{GenConfig, Generator};
use racepred::oracle::{OracleConfig, OracleNotion};
use racepred::report::{self, RaceReport};
use racepred::trace::stats::StatsCounter;
use racepred::trace::validate::{validate_trace, Validator};
use racepred::trace::{self, EventSource, Format, Op, Trace};

use crate::args::ElideArgs;
use crate::args::{
    AnalyzeArgs, ClockArg, ConvertArgs, DiagnoseArgs, GenerateArgs, Input, OracleArgs, Output,
    PerturbArgs, SampleArgs, StatsArgs, ValidateArgs,
};
use crate::args::{Cli, Command, FormatArg};
use crate::locations;
use crate::progress::Progress;

pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Analyze(a) => analyze(a),
        Command::Validate(a) => validate(a),
        Command::Stats(a) => stats(a),
        Command::Convert(a) => convert(a),
        Command::Generate(a) => generate(a),
        Command::Oracle(a) => oracle(a),
        Command::Diagnose(a) => diagnose(a),
        Command::Perturb(a) => perturb(a),
        Command::Sample(a) => sample(a),
        Command::Elide(a) => elide(a),
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

fn open_input(input: &Input) -> Result<Box<dyn EventSource>> {
    Ok(trace::open_with(&input.trace, input.format.map(format_of))?)
}

/// Standard output or `-o FILE`, buffered.
fn open_output(output: &Output) -> Result<Box<dyn Write>> {
    Ok(match &output.output {
        Some(p) => Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(io::stdout().lock())),
    })
}

fn trace_name(path: &Path) -> String {
    path.display().to_string()
}

fn stats(a: StatsArgs) -> Result<ExitCode> {
    let mut src = open_input(&a.input)?;
    let mut counter = StatsCounter::new();
    let mut progress = Progress::new();
    let mut n = 0u64;
    while let Some(ev) = src.next_event()? {
        counter.add(&ev);
        n += 1;
        if n & ((1 << 20) - 1) == 0 {
            progress.update(n, src.bytes_read());
        }
    }
    progress.finish();
    let stats = counter.finish(src.names());
    let mut out = open_output(&a.output)?;
    if a.output.json {
        let mut v = serde_json::Map::new();
        v.insert("trace".into(), trace_name(&a.input.trace).into());
        if let serde_json::Value::Object(m) = serde_json::to_value(&stats)? {
            v.extend(m);
        }
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        writeln!(out, "trace      {}", trace_name(&a.input.trace))?;
        for (label, value) in stats.rows() {
            writeln!(out, "{label:<10} {value}")?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn validate(a: ValidateArgs) -> Result<ExitCode> {
    let mut src = open_input(&a.input)?;
    let path = trace_name(&a.input.trace);
    let mut validator = Validator::new();
    // (line, rule, explanation) of every problem, syntax errors included.
    let mut problems: Vec<(u64, String, String)> = Vec::new();
    let mut events = 0u64;
    let mut progress = Progress::new();
    let mut last_err_pos = None;
    loop {
        match src.next_event() {
            Ok(Some(ev)) => {
                events += 1;
                if let Some(v) = validator.check_lazy(&ev, || src.position().line, || src.names()) {
                    problems.push((v.line, v.rule.name().to_string(), v.explanation));
                }
                if events & ((1 << 20) - 1) == 0 {
                    progress.update(events, src.bytes_read());
                }
            }
            Ok(None) => break,
            Err(e) => {
                let pos = e.position();
                let line = pos.map_or(0, |p| p.line);
                // Text readers skip the bad line and go on; anything that does not advance
                // (binary data, I/O errors) ends the run.
                let stuck = line == 0 || last_err_pos == Some(line);
                let msg = e.kind().to_string();
                let (rule, expl) = match msg.split_once(": ") {
                    Some((r, x)) => (r.to_string(), x.to_string()),
                    None => ("error".to_string(), msg),
                };
                problems.push((line, rule, expl));
                if stuck {
                    break;
                }
                last_err_pos = Some(line);
            }
        }
        if problems.len() >= a.max_errors {
            break;
        }
    }
    progress.finish();
    let mut out = open_output(&a.output)?;
    if a.output.json {
        let v = serde_json::json!({
            "trace": path,
            "events": events,
            "well_formed": problems.is_empty(),
            "violations": problems.iter().map(|(line, rule, expl)| serde_json::json!({
                "line": line, "rule": rule, "explanation": expl,
            })).collect::<Vec<_>>(),
        });
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        for (line, rule, expl) in &problems {
            writeln!(out, "{path}:{line}: {rule}: {expl}")?;
        }
        if problems.is_empty() {
            writeln!(out, "{path}: well-formed ({events} events)")?;
        } else {
            let more = if problems.len() >= a.max_errors {
                " (stopped at --max-errors)"
            } else {
                ""
            };
            writeln!(out, "{path}: {} problem(s){more}", problems.len())?;
        }
    }
    out.flush()?;
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
            format!("cannot tell the output format from `{}`; name it .std or .rpb (optionally .gz/.xz/.zst) or pass --to", path.display())
        })?,
    };
    Ok(f)
}

/// Copies `src` into `dst`, validating as it goes; returns the event count.
fn copy_validated(
    src: &mut dyn EventSource,
    dst: &mut dyn trace::write::TraceWriter,
    lenient: bool,
) -> Result<u64> {
    let mut validator = Validator::new();
    let mut progress = Progress::new();
    let mut n = 0u64;
    let mut warnings = 0u64;
    while let Some(ev) = src.next_event()? {
        if let Some(v) = validator.check_lazy(&ev, || src.position().line, || src.names()) {
            if !lenient {
                return Err(v.to_error().into());
            }
            warnings += 1;
            if warnings <= 10 {
                eprintln!("racepred: warning: {}", v.to_error());
            }
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

fn convert(a: ConvertArgs) -> Result<ExitCode> {
    let to = output_format(&a.output, a.to)?;
    let mut src = trace::open_with(&a.input, a.from.map(format_of))?;
    let mut dst = trace::write::create(&a.output, to)?;
    copy_validated(&mut *src, &mut *dst, a.lenient).map_err(|e| {
        match e.downcast::<racepred::Error>() {
            Ok(e) => anyhow::Error::from(e.in_file(&a.input)),
            Err(e) => e,
        }
    })?;
    dst.finish()?;
    Ok(ExitCode::SUCCESS)
}

fn generate(a: GenerateArgs) -> Result<ExitCode> {
    for (name, v) in [
        ("--sync", a.sync),
        ("--reads", a.reads),
        ("--volatile", a.volatile),
    ] {
        anyhow::ensure!(
            (0.0..=1.0).contains(&v),
            "{name} must be between 0 and 1, not {v}"
        );
    }
    anyhow::ensure!(
        a.sync + a.volatile <= 1.0,
        "--sync plus --volatile must be at most 1"
    );
    anyhow::ensure!(a.threads >= 1, "--threads must be at least 1");
    let to = output_format(&a.output, a.to)?;
    let cfg = GenConfig {
        events: a.events,
        threads: a.threads,
        vars: a.vars.max(1),
        locks: a.locks,
        sync: a.sync,
        reads: a.reads,
        volatile: a.volatile,
        fork_join: !a.no_fork_join,
        locs: a.locs.max(1),
        seed: a.seed,
        ..GenConfig::default()
    };
    let mut src = Generator::new(cfg);
    let mut dst = trace::write::create(&a.output, to)?;
    trace::write::copy(&mut src, &mut *dst)?;
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
        eprintln!("racepred: warning: {e}");
    }
    Ok(trace)
}

fn oracle(a: OracleArgs) -> Result<ExitCode> {
    let table = locations::load(&a.locations, &a.input.trace)?;
    let trace = read_whole(&a.input, false)?;
    locations::check_coverage(table.as_ref(), &trace.names);
    let cfg = OracleConfig {
        max_events: a.max_events,
        max_states: a.max_states,
    };
    let result = racepred::oracle::analyze(&trace, &cfg).map_err(|e| e.in_file(&a.input.trace))?;
    let reports: Vec<RaceReport> = OracleNotion::ALL
        .iter()
        .map(|&n| result.report(&trace, n))
        .collect();
    let path = trace_name(&a.input.trace);
    let mut ctx = report::ReportContext::new(&path, &trace.names);
    ctx.locations = table.as_ref();
    ctx.lines = report::EventLines::of_trace(&trace.lines);
    write_reports(&reports, &ctx, &a.output, false, false)?;
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
    _all: bool,
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
    }
    out.flush()?;
    Ok(())
}

fn analysis_options(a: &AnalyzeArgs) -> Result<AnalysisOptions> {
    anyhow::ensure!(
        (0.0..=1.0).contains(&a.rate),
        "--rate must be between 0 and 1, not {}",
        a.rate
    );
    anyhow::ensure!(a.period > 0, "--period must be positive");
    Ok(AnalysisOptions {
        clock: match a.clock {
            ClockArg::Vector => ClockKind::Vector,
            ClockArg::Tree => ClockKind::Tree,
        },
        streaming: a.streaming,
        history: a.history,
        rate: a.rate,
        period: a.period,
        seed: a.seed,
        conservative: a.conservative,
        ignore_global: a.ignore_global.clone(),
    })
}

fn analysis_kinds(names: &[String]) -> Result<Vec<AnalysisKind>> {
    let mut kinds = Vec::new();
    for n in names.iter().flat_map(|s| s.split(',')) {
        let k = AnalysisKind::from_name(n.trim()).with_context(|| {
            let all: Vec<&str> = AnalysisKind::ALL.iter().map(|k| k.name()).collect();
            format!("unknown analysis `{n}` (known: {})", all.join(", "))
        })?;
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    Ok(kinds)
}

fn analyze(a: AnalyzeArgs) -> Result<ExitCode> {
    let opts = analysis_options(&a)?;
    let kinds = analysis_kinds(&a.analyses)?;
    let mut analyses = kinds
        .iter()
        .map(|&k| analysis::create(k, &opts))
        .collect::<racepred::Result<Vec<_>>>()?;
    let table = locations::load(&a.locations, &a.input.trace)?;
    let source_root = a
        .source_root
        .as_deref()
        .map(locations::source_root)
        .transpose()?;
    let mut src = open_input(&a.input)?;
    if !a.ignore_global.is_empty() {
        // RDIT sees addresses as ids only; the wrapper drops the named ones from each mbegin.
        src = Box::new(analysis::rdit::IgnoreGlobal::new(src, &a.ignore_global));
    }
    let validation = if a.lenient {
        Validation::Lenient
    } else {
        Validation::Strict
    };
    let mut progress = Progress::new();
    let summary = analysis::run(&mut *src, &mut analyses, validation, |e, b| {
        progress.update(e, b)
    })
    .map_err(|e| e.in_file(&a.input.trace))?;
    progress.finish();
    for v in summary.violations.iter().take(10) {
        eprintln!(
            "racepred: warning: {}",
            v.to_error().in_file(&a.input.trace)
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
    let reports: Vec<RaceReport> = analyses
        .iter_mut()
        .map(|an| {
            let mut r = an.finish(names);
            r.events = summary.events;
            r
        })
        .collect();
    let shown: Vec<u64> = reports.iter().flat_map(|r| r.shown_events()).collect();
    let path = trace_name(&a.input.trace);
    let mut ctx = report::ReportContext::new(&path, names);
    ctx.locations = table.as_ref();
    ctx.lines =
        locations::lines_after_stream(&a.input, src.position().line, summary.events, &shown)?;
    if let Some((root, index)) = &source_root {
        ctx.source_root = Some(root);
        ctx.source_index = Some(index);
    }
    write_reports(&reports, &ctx, &a.output, a.sarif, a.all)?;
    Ok(if reports.iter().any(|r| r.has_races()) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn diagnose(a: DiagnoseArgs) -> Result<ExitCode> {
    use racepred::analysis::sshb::{self, dot};
    let table = locations::load(&a.locations, &a.input.trace)?;
    let mut src = open_input(&a.input)?;
    let validation = if a.lenient {
        Validation::Lenient
    } else {
        Validation::Strict
    };
    let mut progress = Progress::new();
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
            v.to_error().in_file(&a.input.trace)
        );
    }
    let names = src.names();
    locations::check_coverage(table.as_ref(), names);
    let shown = if a.details || a.dot.is_some() {
        dot::shown_events(&d)
    } else if a.output.json {
        d.report.shown_events()
    } else {
        Vec::new()
    };
    let path = trace_name(&a.input.trace);
    let mut ctx = report::ReportContext::new(&path, names);
    ctx.locations = table.as_ref();
    ctx.lines =
        locations::lines_after_stream(&a.input, src.position().line, summary.events, &shown)?;
    if let Some(p) = &a.dot {
        let maybe: Vec<usize> = (0..d.report.pairs.len())
            .filter(|&i| d.witness(i).is_some())
            .collect();
        let mut f = BufWriter::new(
            File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        );
        dot::write_dot(&d, &ctx, &maybe, &mut f)?;
        f.flush()?;
    }
    if a.output.json {
        write_reports(
            std::slice::from_ref(&d.report),
            &ctx,
            &a.output,
            false,
            false,
        )?;
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
        out.flush()?;
    }
    Ok(if d.report.has_races() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn perturb(a: PerturbArgs) -> Result<ExitCode> {
    let to = output_format(&a.output, a.to)?;
    let trace = read_whole(&a.input, false)?;
    let perturbed = racepred::analysis::sshb::perturb::perturb(&trace, a.window, a.seed);
    let mut dst = trace::write::create(&a.output, to)?;
    trace::write::copy(&mut perturbed.source(), &mut *dst)?;
    dst.finish()?;
    Ok(ExitCode::SUCCESS)
}

fn sample(a: SampleArgs) -> Result<ExitCode> {
    use racepred::analysis::pacer::{experiment_vs_fasttrack, ExperimentConfig};
    let rates = match a.rate {
        Some(r) => vec![r],
        None if a.rates.is_empty() => ExperimentConfig::default().rates,
        None => a.rates.clone(),
    };
    for &r in &rates {
        anyhow::ensure!(
            (0.0..=1.0).contains(&r),
            "sampling rates must be between 0 and 1, not {r}"
        );
    }
    let table = locations::load(&a.locations, &a.input.trace)?;
    let trace = read_whole(&a.input, false)?;
    locations::check_coverage(table.as_ref(), &trace.names);
    let cfg = ExperimentConfig {
        rates,
        trials: a.trials,
        seed: a.seed,
        period: a.period,
    };
    let exp = experiment_vs_fasttrack(&trace, &cfg)?;
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
        std::fs::write(p, csv).with_context(|| format!("cannot write {}", p.display()))?;
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
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn elide(a: ElideArgs) -> Result<ExitCode> {
    use racepred::trace::elide::{elide, ElideConfig};
    anyhow::ensure!(
        (0.0..=1.0).contains(&a.fraction),
        "--fraction must be between 0 and 1, not {}",
        a.fraction
    );
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
    eprintln!(
        "racepred: elided {} region(s), {} of {} events remain (barrier events included)",
        e.regions.len(),
        e.trace.len(),
        trace.len()
    );
    Ok(ExitCode::SUCCESS)
}
