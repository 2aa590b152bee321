//! `racepred record`: run a program built with `-fsanitize=thread` with racepred's runtime
//! (crates/racepred-rt) in place of gcc's `libtsan.so.2`, and check that it wrote a trace;
//! or, when the command is `java`, a JVM with racepred's Java agent ([`record_java`]).
//!
//! The program is not changed: a temporary directory holding `libtsan.so.2` (a symbolic
//! link to `libracepred_rt.so`) goes first on `LD_LIBRARY_PATH`, so only programs that
//! need `libtsan.so.2` load it (an uninstrumented shell or helper started by the program
//! does not). The runtime writes the trace to `$RACEPRED_RECORD_OUT` as the program runs
//! (it appears there, complete, at exit);
//! `$RACEPRED_RECORD_PPID` (this process) tells the program itself from processes it
//! starts, which write `NAME.PID.EXT` beside the trace. Where the runtime cannot write the
//! output (a full disk), it says why in `$RACEPRED_RECORD_STATUS`, and `record` ends with
//! that reason (exit status 2).
//!
//! The runtime writes plain traces only (it is built without the library's `compress`
//! feature): for a `.gz`, `.xz` or `.zst` output it writes into a temporary directory, and
//! each trace found there afterwards (the program's and its children's) is compressed to
//! its place beside the output, its calling contexts (`TRACE.stacks`) copied with it.
//!
//! `--online ANALYSIS` sets `$RACEPRED_ONLINE` (and PACER's `$RACEPRED_ONLINE_RATE`,
//! `_PERIOD`, `_SEED`): the runtime then analyses inside the program (crates/racepred-rt
//! `online.rs`) and writes the report where the trace would have gone; without `-o` that
//! is a temporary file printed here on standard error after the program ends (with the
//! reports of the processes it forked or execed, `report.PID….txt` beside it), so the
//! program's standard output stays its own.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use racepred::trace::open::Compression;
use racepred::trace::Format;

use crate::args::RecordArgs;

const RUNTIME: &str = "libracepred_rt.so";
const AGENT: &str = "racepred-agent.jar";

/// A file the recording needs (`what`, e.g. "the runtime"): `given` (`--runtime`,
/// `--agent`), else `$ENV`, else `FILE` beside the racepred executable; `how` says how to
/// build it when it is missing.
fn find_beside_exe(
    given: Option<&Path>,
    env: &str,
    file: &str,
    what: &str,
    how: &str,
) -> Result<PathBuf> {
    if let Some(p) = given
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os(env).map(PathBuf::from))
    {
        if !p.is_file() {
            bail!("{what} {} does not exist", p.display());
        }
        return Ok(std::fs::canonicalize(&p)?);
    }
    let exe = std::env::current_exe().context("cannot find the racepred executable")?;
    let path = exe.parent().unwrap_or(Path::new(".")).join(file);
    if path.is_file() {
        return Ok(std::fs::canonicalize(&path)?);
    }
    bail!(
        "racepred's {} {file} is not beside {}: {how}",
        what.trim_start_matches("the "),
        exe.display()
    )
}

fn find_runtime(given: Option<&Path>) -> Result<PathBuf> {
    find_beside_exe(
        given,
        "RACEPRED_RT",
        RUNTIME,
        "the runtime",
        "build it with `cargo build --release -p racepred-rt` (a plain `cargo build --release` builds it too) or name it with --runtime FILE",
    )
}

/// (device, inode, modification time) of an existing file, to tell a fresh trace from a
/// stale one (the runtime writes through a temporary file and a rename: a new inode).
fn identity(p: &Path) -> Option<(u64, u64, i64, i64)> {
    std::fs::metadata(p)
        .ok()
        .map(|m| (m.dev(), m.ino(), m.mtime(), m.mtime_nsec()))
}

/// Refuses an output that `record` must not write: a trace file whose name says no trace
/// format, one in a directory that does not exist (found before the program runs, not
/// after), or the program itself.
fn check_output(output: &Path, online: bool, program: &Path) -> Result<()> {
    if !online
        && !matches!(
            Format::from_path(output),
            Some(Format::Binary | Format::Std)
        )
    {
        bail!(
            "{}: a trace file must end in .rpb (binary) or .std, optionally followed by .gz, .xz or .zst",
            output.display()
        );
    }
    let parent = output.parent().unwrap_or(Path::new("."));
    if !parent.as_os_str().is_empty() && !parent.is_dir() {
        bail!(
            "cannot write {}: the directory {} does not exist",
            output.display(),
            parent.display()
        );
    }
    // The program, found the way the shell finds it (a bare name through $PATH).
    let program_file = if program.components().count() > 1 {
        Some(program.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(program))
                .find(|p| p.is_file())
        })
    };
    if let (Some(p), Some(o)) = (program_file.and_then(|p| identity(&p)), identity(output)) {
        if (p.0, p.1) == (o.0, o.1) {
            bail!(
                "refusing to write {}: it is the program being recorded",
                output.display()
            );
        }
    }
    Ok(())
}

pub fn record(a: RecordArgs, matches: Option<&clap::ArgMatches>) -> Result<ExitCode> {
    if is_java(&a.command[0]) {
        return record_java(a);
    }
    if a.values {
        bail!("--values is available for Java programs only (the command must be `java`)");
    }
    let program = PathBuf::from(&a.command[0]);
    if a.online.as_deref() != Some("pacer") {
        for (id, flag) in [
            ("rate", "--rate"),
            ("period", "--period"),
            ("seed", "--seed"),
        ] {
            if matches.is_some_and(|m| crate::checks::given(m, id)) {
                bail!(
                    "{flag} applies to --online pacer only; it has no effect on {} (use --online pacer or drop {flag})",
                    a.online.as_deref().map_or("a recorded trace".to_string(), |o| format!("--online {o}"))
                );
            }
        }
    }
    crate::checks::rate("--rate", a.rate)?;
    crate::checks::period("--period", a.period)?;
    let dir = std::env::temp_dir().join(format!("racepred-rt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Online without -o: the report goes to a file of ours, printed when the program ends.
    let print_report = a.online.is_some() && a.output.is_none();
    let output = match a.output {
        Some(o) => o,
        None if print_report => dir.join("report.txt"),
        None => {
            let stem = program
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "trace".into());
            PathBuf::from(format!("{stem}.rpb"))
        }
    };
    let output = std::path::absolute(&output)
        .with_context(|| format!("cannot resolve {}", output.display()))?;
    if output.file_name().is_none() {
        bail!("{}: not a file name", output.display());
    }
    let runtime = check_output(&output, a.online.is_some(), &program)
        .and_then(|()| find_runtime(a.runtime.as_deref()));
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e);
        }
    };
    // What the runtime writes: the output itself, or a plain trace to be compressed.
    let compression = Compression::from_path(&output).filter(|_| a.online.is_none());
    let plain_dir = dir.join("plain");
    let written = match (compression, output.file_stem()) {
        (Some(_), Some(stem)) => {
            std::fs::create_dir_all(&plain_dir)
                .with_context(|| format!("cannot create {}", plain_dir.display()))?;
            plain_dir.join(stem)
        }
        _ => output.clone(),
    };
    let before = identity(&written);

    let link = dir.join("libtsan.so.2");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&runtime, &link)
        .with_context(|| format!("cannot create {}", link.display()))?;
    let mut path = OsString::from(&dir);
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|v| !v.is_empty()) {
        path.push(":");
        path.push(old);
    }
    let mut cmd = std::process::Command::new(&a.command[0]);
    cmd.args(&a.command[1..])
        .env("LD_LIBRARY_PATH", path)
        .env("RACEPRED_RECORD_OUT", &written)
        .env("RACEPRED_RECORD_PPID", std::process::id().to_string())
        .env("RACEPRED_RECORD_STATUS", dir.join("status"))
        .env_remove("RACEPRED_RECORD_EXECED")
        .env_remove("RACEPRED_ONLINE")
        .env_remove("RACEPRED_RECORD_PRINTS");
    if let Some(analysis) = &a.online {
        cmd.env("RACEPRED_ONLINE", analysis)
            .env("RACEPRED_ONLINE_RATE", a.rate.to_string())
            .env("RACEPRED_ONLINE_PERIOD", a.period.to_string())
            .env("RACEPRED_ONLINE_SEED", a.seed.to_string());
        if print_report {
            cmd.env("RACEPRED_RECORD_PRINTS", "1");
        }
    }
    let status = run_outliving_signals(&mut cmd);
    let after = identity(&written);
    let compressed = match compression {
        Some(c) if after.is_some() && after != before => {
            Some(compress_traces(&plain_dir, &output, c))
        }
        _ => None,
    };
    let report = if print_report && after.is_some() {
        Some(std::fs::read(&output).with_context(|| format!("cannot read {}", output.display())))
    } else {
        None
    };
    let others = if print_report {
        other_reports(&dir, &output)
    } else {
        Vec::new()
    };
    // Why the runtime could not write the output, if it said so.
    let failure = std::fs::read_to_string(dir.join("status")).ok();
    let _ = std::fs::remove_dir_all(&dir);
    let status = status.with_context(|| format!("cannot run {}", program.display()))?;

    if report.is_some() || !others.is_empty() {
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        if let Some(report) = report {
            crate::outfile::write_escaped(&mut err, &report?)?;
        }
        for (name, text) in others {
            writeln!(err, "racepred: report of {name}:")?;
            crate::outfile::write_escaped(&mut err, &text)?;
        }
        err.flush()?;
    }
    let what = if a.online.is_some() {
        "report"
    } else {
        "trace"
    };
    if let Some(why) = failure {
        bail!(
            "{} ran, but its {what} could not be written to {}: {why}",
            program.display(),
            output.display()
        );
    }
    if after.is_none() || after == before {
        bail!(
            "{} wrote no {what} to {}: was it built with `gcc -fsanitize=thread` (it must load libtsan.so.2; clang links its runtime statically unless given -shared-libsan), and did it end by exit, by returning from main or by a signal whose default action it kept (not SIGKILL)?",
            program.display(),
            if print_report { "standard error".into() } else { output.display().to_string() }
        );
    }
    compressed.transpose()?;
    Ok(exit_code(status, &program))
}

/// Compresses each trace the runtime wrote into `plain` (`NAME.EXT`, and `NAME.PID.EXT` of
/// the processes the program started) to `NAME….EXT.C` beside `output`, and copies the
/// calling contexts (`TRACE.stacks`) to the compressed traces' sidecars.
fn compress_traces(plain: &Path, output: &Path, c: Compression) -> Result<()> {
    let out_dir = output.parent().unwrap_or(Path::new("."));
    let suffix = format!(".{}", c.extension());
    for entry in
        std::fs::read_dir(plain).with_context(|| format!("cannot read {}", plain.display()))?
    {
        let src = entry?.path();
        let Some(name) = src.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if let Some(trace) = name.strip_suffix(".stacks") {
            let dst = racepred::trace::stacks::sidecar(&out_dir.join(format!("{trace}{suffix}")));
            std::fs::copy(&src, &dst).with_context(|| format!("cannot write {}", dst.display()))?;
            continue;
        }
        let dst = out_dir.join(format!("{name}{suffix}"));
        let mut sink = racepred::trace::write::Sink::create(&dst)?;
        let mut file =
            std::fs::File::open(&src).with_context(|| format!("cannot read {}", src.display()))?;
        std::io::copy(&mut file, &mut sink)
            .with_context(|| format!("cannot write {}", dst.display()))?;
        sink.finish()?;
        eprintln!("racepred: compressed {name} to {}", dst.display());
    }
    Ok(())
}

/// The reports other processes of the run (forked children, images after an exec) wrote
/// beside `main` in `dir` (`report.PID.txt`, `report.PID.execN.txt`): (process, report),
/// in name order.
fn other_reports(dir: &Path, main: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(String, PathBuf)> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.as_path() != main)
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?;
            let tag = name.strip_prefix("report.")?.strip_suffix(".txt")?;
            let what = match tag.split_once('.') {
                Some((pid, exec)) => format!("process {pid} ({exec})"),
                None => format!("process {tag}"),
            };
            Some((what, p))
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .filter_map(|(what, p)| Some((what, std::fs::read(p).ok()?)))
        .collect()
}

/// Runs `cmd` to its end. Ctrl-C reaches the whole process group: the program writes its
/// trace and ends by the signal, and we must outlive it to report (a handler, not SIG_IGN,
/// which the program would inherit).
fn run_outliving_signals(
    cmd: &mut std::process::Command,
) -> std::io::Result<std::process::ExitStatus> {
    extern "C" fn noop(_: libc::c_int) {}
    // SAFETY: `sigaction` is plain old data, for which all-zero bytes are a valid value.
    let mut old: [libc::sigaction; 3] = unsafe { std::mem::zeroed() };
    let sigs = [libc::SIGINT, libc::SIGTERM, libc::SIGQUIT];
    for (s, o) in sigs.iter().zip(old.iter_mut()) {
        // SAFETY: `sa` is fully initialised, `noop` is async-signal-safe (it does nothing),
        // and `o` is valid memory for the old action.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = noop as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESTART;
            libc::sigaction(*s, &sa, o);
        }
    }
    let status = cmd.status();
    for (s, o) in sigs.iter().zip(old.iter()) {
        // SAFETY: `o` is the action `sigaction` stored above for the same signal.
        unsafe { libc::sigaction(*s, o, std::ptr::null_mut()) };
    }
    status
}

/// The program's exit status as ours (128 + N for a signal, as shells do).
fn exit_code(status: std::process::ExitStatus, program: &Path) -> ExitCode {
    match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(c.clamp(0, 255) as u8),
        (None, Some(sig)) => {
            eprintln!("racepred: {} was killed by signal {sig}", program.display());
            ExitCode::from((128 + sig).clamp(0, 255) as u8)
        }
        _ => ExitCode::from(2),
    }
}

/// Whether the command runs a JVM: its file name is `java`.
fn is_java(program: &OsString) -> bool {
    Path::new(program).file_name().is_some_and(|n| n == "java")
}

fn find_agent(given: Option<&Path>) -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the racepred executable")?;
    let jar = exe.parent().unwrap_or(Path::new(".")).join(AGENT);
    find_beside_exe(
        given,
        "RACEPRED_AGENT",
        AGENT,
        "the Java agent",
        &format!(
            "build it with `java/agent/build.sh {}` (needs a JDK and libasm-java) or name it with --agent FILE",
            jar.display()
        ),
    )
}

/// `racepred record -- java ARGS`: the JVM runs with `-javaagent:racepred-agent.jar`
/// (java/agent), which instruments the application's classes as they load and, when the
/// JVM exits, writes a binary trace and its location table (`TRACE.locs`) to
/// `$RACEPRED_RECORD_OUT`. A `.rpb` output is written there directly; any other format or
/// compression is converted from a binary trace in a temporary directory.
fn record_java(a: RecordArgs) -> Result<ExitCode> {
    if a.online.is_some() {
        bail!("--online is not available for Java programs: record a trace and analyse it");
    }
    let agent = find_agent(a.agent.as_deref())?;
    let program = PathBuf::from(&a.command[0]);
    let output = std::path::absolute(a.output.as_deref().unwrap_or(Path::new("java.rpb")))
        .context("cannot resolve the output path")?;
    if output.file_name().is_none() {
        bail!("{}: not a file name", output.display());
    }
    let format = Format::from_path(&output).unwrap_or(Format::Binary);
    let direct = output.extension().is_some_and(|e| e == "rpb");
    let dir = std::env::temp_dir().join(format!("racepred-java-{}", std::process::id()));
    let written = if direct {
        output.clone()
    } else {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        dir.join("trace.rpb")
    };
    let locs = |p: &Path| {
        let mut s = p.as_os_str().to_owned();
        s.push(".locs");
        PathBuf::from(s)
    };
    let before = identity(&written);
    let mut flag = OsString::from("-javaagent:");
    flag.push(&agent);
    let mut cmd = std::process::Command::new(&a.command[0]);
    cmd.arg(flag)
        .args(&a.command[1..])
        .env("RACEPRED_RECORD_OUT", &written)
        .env("RACEPRED_VALUES", if a.values { "1" } else { "0" });
    let status = run_outliving_signals(&mut cmd);
    let result = (|| -> Result<ExitCode> {
        let status = status.with_context(|| format!("cannot run {}", program.display()))?;
        let after = identity(&written);
        if after.is_none() || after == before {
            bail!(
                "{} wrote no trace to {}: did the JVM load the agent {} and end by exit or by returning from main (not SIGKILL or Runtime.halt)?",
                program.display(),
                written.display(),
                agent.display()
            );
        }
        if !direct && a.values {
            // `convert` keeps the values (the streaming copy below would drop them).
            super::convert::convert(crate::args::ConvertArgs {
                input: written.clone(),
                output: output.clone(),
                from: None,
                max_line: racepred::trace::lines::DEFAULT_MAX_LINE,
                no_mmap: false,
                to: None,
                lenient: false,
                drop_values: false,
            })?;
        } else if !direct {
            let mut src = racepred::trace::open(&written)?;
            let mut dst = racepred::trace::write::create(&output, format)?;
            racepred::trace::write::copy(&mut *src, &mut *dst)?;
            dst.finish()?;
        }
        if !direct {
            let table = locs(&written);
            if table.is_file() {
                std::fs::copy(&table, locs(&output))
                    .with_context(|| format!("cannot write {}", locs(&output).display()))?;
            }
        }
        Ok(exit_code(status, &program))
    })();
    if !direct {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}
