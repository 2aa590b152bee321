//! `racepred record` end to end: small C and C++ programs built with the machine's
//! `gcc -fsanitize=thread`, run under racepred's runtime, analysed with `hb` and `shb`.
//! Racy programs report their race at the marked source lines (`// RACE-…`); race-free
//! ones (mutex, condition variable, rwlock, barrier, semaphore, once, C11 atomics, C++
//! threads) report none; every trace validates. Skipped, with a message, where gcc or its
//! ThreadSanitizer runtime is missing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn racepred() -> Command {
    Command::new(env!("CARGO_BIN_EXE_racepred"))
}

fn src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/record")
        .join(name)
}

/// Builds the runtime beside the racepred binary (cargo does not build another package's
/// `cdylib` for these tests) once; `None` when gcc cannot build -fsanitize=thread programs.
fn setup() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let bin = Path::new(env!("CARGO_BIN_EXE_racepred"));
        let mut build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        build.args(["build", "-q", "-p", "racepred-rt"]);
        if bin.parent().is_some_and(|d| d.ends_with("release")) {
            build.arg("--release");
        }
        let ok = build.status().map(|s| s.success()).unwrap_or(false);
        assert!(ok, "cargo build -p racepred-rt failed");
        assert!(bin.with_file_name("libracepred_rt.so").is_file());
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("record");
        std::fs::create_dir_all(&dir).unwrap();
        let probe = dir.join("probe.c");
        std::fs::write(&probe, "int main(void) { return 0; }\n").unwrap();
        let works = Command::new("gcc")
            .args(["-fsanitize=thread", "-o"])
            .arg(dir.join("probe"))
            .arg(&probe)
            .output()
            .is_ok_and(|o| o.status.success());
        if !works {
            eprintln!(
                "skipped: `gcc -fsanitize=thread` does not work here (gcc or libtsan missing)"
            );
            return None;
        }
        Some(dir)
    })
    .as_deref()
}

/// Compiles `name` with `-fsanitize=thread`; returns the executable.
fn compile(name: &str) -> Option<PathBuf> {
    static BUILT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let dir = setup()?;
    let stem = name.split('.').next().unwrap();
    // One executable per stem: sources must not share one (`racy.c`, `racy_cpp.cc`).
    let exe = dir.join(stem);
    // Tests run in parallel and share programs: compile each once, one at a time.
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if built.iter().any(|b| b == name) {
        return Some(exe);
    }
    let cxx = name.ends_with(".cc");
    let mut cc = Command::new(if cxx { "g++" } else { "gcc" });
    if cxx {
        cc.arg("-std=c++17");
    }
    let out = cc
        .args(["-fsanitize=thread", "-g", "-O1", "-o"])
        .arg(&exe)
        .arg(src(name))
        .arg("-lpthread")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    built.push(name.to_string());
    Some(exe)
}

/// `racepred record -o TRACE -- PROGRAM ARGS…`, run to its end.
fn run_record(trace: &Path, program: &Path, args: &[&str]) -> std::process::Output {
    racepred()
        .args(["record", "-o"])
        .arg(trace)
        .arg("--")
        .arg(program)
        .args(args)
        .output()
        .unwrap()
}

/// Compiles `name`, records a run into `NAME.EXT`, validates it; returns the trace.
fn record(name: &str, ext: &str) -> Option<PathBuf> {
    let exe = compile(name)?;
    let stem = name.split('.').next().unwrap();
    let trace = exe.with_file_name(format!("{stem}.{ext}"));
    let out = run_record(&trace, &exe, &[]);
    common::assert_recorded(&out, &trace, name);
    Some(trace)
}

/// `racepred analyze -a A TRACE`: (exit code, report).
fn analyze(trace: &Path, analysis: &str) -> (i32, String) {
    let out = racepred()
        .args(["analyze", "-a", analysis])
        .arg(trace)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The line of `src/name` holding `marker`.
fn line_of(name: &str, marker: &str) -> usize {
    let text = std::fs::read_to_string(src(name)).unwrap();
    1 + text.lines().position(|l| l.contains(marker)).unwrap()
}

fn assert_race_free(name: &str) {
    let Some(trace) = record(name, "rpb") else {
        return;
    };
    for a in ["hb", "shb"] {
        let (code, report) = analyze(&trace, a);
        assert_eq!(code, 0, "{name}: {a} reports races:\n{report}");
    }
}

/// `racy.c`'s two increments, as `file:line:` (a racy-event report names the later one,
/// which depends on the schedule; a pair report both).
fn counter_lines() -> [String; 2] {
    ["RACE-MAIN", "RACE-WORKER"].map(|m| format!("racy.c:{}:", line_of("racy.c", m)))
}

/// `report` names one of `racy.c`'s increments.
fn assert_names_the_counter(report: &str, what: &str) {
    assert!(
        counter_lines().iter().any(|l| report.contains(l)),
        "{what}:\n{report}"
    );
}

#[test]
fn racy_counter_is_reported_at_its_lines() {
    // A compressed output is recorded plain and compressed by `record` afterwards.
    for ext in ["rpb", "std", "std.gz", "rpb.zst"] {
        let Some(trace) = record("racy.c", ext) else {
            return;
        };
        for a in ["hb", "shb"] {
            let (code, report) = analyze(&trace, a);
            assert_eq!(code, 1, "{a}:\n{report}");
            assert_names_the_counter(&report, a);
        }
        // Pair analysis: both lines.
        let (code, report) = analyze(&trace, "shbp");
        assert_eq!(code, 1);
        assert!(
            counter_lines().iter().all(|l| report.contains(l)),
            "shbp:\n{report}"
        );
    }
}

#[test]
fn relaxed_flag_does_not_synchronise() {
    let Some(trace) = record("racy_relaxed.c", "rpb") else {
        return;
    };
    let read = format!("racy_relaxed.c:{}:", line_of("racy_relaxed.c", "RACE-READ"));
    for a in ["hb", "shb"] {
        let (code, report) = analyze(&trace, a);
        assert_eq!(code, 1, "{a}:\n{report}");
        assert!(report.contains(&read), "{a}:\n{report}");
    }
}

#[test]
fn mutexes_spin_locks_and_heap_reuse_are_race_free() {
    assert_race_free("mutex.c");
}

#[test]
fn condition_variables_are_race_free() {
    assert_race_free("condvar.c");
}

#[test]
fn rwlocks_are_race_free() {
    assert_race_free("rwlock.c");
}

#[test]
fn barriers_semaphores_and_once_are_race_free() {
    assert_race_free("barrier_sem.c");
}

#[test]
fn c11_atomics_and_fences_are_race_free() {
    assert_race_free("atomics.c");
}

#[test]
fn cpp_threads_mutexes_atomics_are_race_free() {
    assert_race_free("threads.cc");
}

#[test]
fn program_without_the_runtime_is_an_error() {
    if setup().is_none() {
        return;
    }
    let none = Path::new(env!("CARGO_TARGET_TMPDIR")).join("none.rpb");
    let out = run_record(&none, Path::new("true"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote no trace"));
}

/// An output that cannot be written (here a name for `/dev/full`, as a full disk) ends
/// `record` with the runtime's reason and exit status 2, in both modes, not with a guess
/// at why there is no trace.
#[test]
fn an_output_that_cannot_be_written_is_an_error_with_its_reason() {
    let Some(exe) = compile("racy.c") else {
        return;
    };
    if !Path::new("/dev/full").exists() {
        return;
    }
    let dir = fresh_dir("full").unwrap();
    let full = dir.join("full.rpb");
    std::os::unix::fs::symlink("/dev/full", &full).unwrap();
    for (mode, what) in [
        (&[][..], "trace"),
        (&["--online", "fasttrack"][..], "report"),
    ] {
        let out = racepred()
            .arg("record")
            .args(mode)
            .arg("-o")
            .arg(&full)
            .arg("--")
            .arg(&exe)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("its {what} could not be written to"))
                && err.contains("No space left on device")
                && !err.contains("was it built with"),
            "{err}"
        );
    }
}

/// `racepred record --online ANALYSIS ARGS -- PROG`: (the report, on standard error
/// without the runtime's summary line; the program's standard output).
fn online(name: &str, analysis: &[&str]) -> Option<(String, Vec<u8>)> {
    let exe = compile(name)?;
    let out = racepred()
        .args(["record", "--online"])
        .args(analysis)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    let what = format!("{name} under record --online {analysis:?}");
    let err = common::assert_ran(&out, &what, "racepred: analysed");
    let report: String = err
        .lines()
        .filter(|l| !l.starts_with("racepred: analysed"))
        .flat_map(|l| [l, "\n"])
        .collect();
    Some((report, out.stdout))
}

/// `racepred record --online ANALYSIS…` of `name` reports no race (if `name` compiles).
fn assert_online_finds_no_race(name: &str, analysis: &[&str]) {
    if let Some((report, _)) = online(name, analysis) {
        let head = format!("{}: no races", analysis[0]);
        assert!(report.starts_with(&head), "{name}: {report}");
    }
}

#[test]
fn online_fasttrack_and_pacer_report_the_racy_counter() {
    for analysis in [&["fasttrack"][..], &["hb"], &["pacer", "--rate", "1"]] {
        let Some((report, stdout)) = online("racy.c", analysis) else {
            return;
        };
        // The program's output alone on standard output; the report on standard error.
        assert!(stdout == b"1\n" || stdout == b"2\n", "{stdout:?}");
        let head = format!("{}: ", analysis[0]);
        assert!(report.starts_with(&head), "{report}");
        assert!(report.contains("racy event"), "{analysis:?}:\n{report}");
        assert_names_the_counter(&report, analysis[0]);
    }
    // Nothing sampled, nothing reported.
    assert_online_finds_no_race("racy.c", &["pacer", "--rate", "0"]);
}

#[test]
fn online_report_as_json_file() {
    let Some(exe) = compile("racy.c") else {
        return;
    };
    let json = exe.with_file_name("racy-online.json");
    let out = racepred()
        .args(["record", "--online", "fasttrack", "-o"])
        .arg(&json)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout.starts_with(b"2\n"), "the program's output only");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["analysis"], "fasttrack");
    assert!(!v["racy_events"].as_array().unwrap().is_empty(), "{v}");
    let loc = v["racy_location_groups"][0]["loc"].as_str().unwrap();
    assert!(loc.contains("racy.c:"), "{loc}");
}

#[test]
fn online_analyses_find_no_race_in_race_free_programs() {
    for name in [
        "mutex.c",
        "condvar.c",
        "rwlock.c",
        "barrier_sem.c",
        "atomics.c",
        "threads.cc",
    ] {
        for analysis in [&["fasttrack"][..], &["pacer", "--rate", "1"]] {
            assert_online_finds_no_race(name, analysis);
        }
    }
}

#[test]
fn a_crashing_program_still_writes_its_trace() {
    // `racy.c crash` races, then raises SIGSEGV.
    let Some(exe) = compile("racy.c") else {
        return;
    };
    let trace = exe.with_file_name("crash.rpb");
    let out = run_record(&trace, &exe, &["crash"]);
    // The program's end: SIGSEGV, as a shell reports it.
    assert_eq!(out.status.code(), Some(128 + 11));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("killed by signal 11"), "{err}");
    let v = racepred().arg("validate").arg(&trace).output().unwrap();
    assert!(v.status.success());
    let (code, report) = analyze(&trace, "hb");
    assert_eq!(code, 1, "{report}");
    assert_names_the_counter(&report, "hb");
}

#[test]
fn cpp_race_is_reported_at_its_line() {
    let Some(trace) = record("racy_cpp.cc", "rpb") else {
        return;
    };
    let line = format!("racy_cpp.cc:{}:", line_of("racy_cpp.cc", "RACE-TOTAL"));
    for a in ["hb", "shb", "wcp"] {
        let (code, report) = analyze(&trace, a);
        assert_eq!(code, 1, "{a}:\n{report}");
        assert!(report.contains(&line), "{a}:\n{report}");
    }
    let Some((report, _)) = online("racy_cpp.cc", &["fasttrack"]) else {
        return;
    };
    assert!(report.contains(&line), "{report}");
}

/// Records `forky.c` (which forks once) as `TRACE` in a fresh folder `DIR` beside it;
/// returns the folder and its two traces (the parent's `TRACE` and the child's
/// `fk.PID.…`), both valid.
fn record_forky(dir: &str, trace: &str) -> Option<(PathBuf, Vec<String>)> {
    let exe = compile("forky.c")?;
    let dir = exe.parent().unwrap().join(dir);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = run_record(&dir.join(trace), &exe, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The traces (each with its calling contexts beside it, `TRACE.stacks`).
    let traces = files_in(&dir, "fk.");
    assert_eq!(traces.len(), 2, "{traces:?}");
    assert!(traces.iter().any(|t| t == trace), "{traces:?}");
    for t in &traces {
        common::assert_valid(&dir.join(t));
    }
    Some((dir, traces))
}

#[test]
fn a_forked_child_writes_its_own_trace() {
    let Some((dir, traces)) = record_forky("forky-out", "fk.rpb") else {
        return;
    };
    let child = traces.iter().find(|t| *t != "fk.rpb").unwrap();
    assert!(
        child.starts_with("fk.") && child.ends_with(".rpb"),
        "{child}"
    );
    // The child's race (its thread and itself, on `x`), which the parent's run has not: a
    // pair of the worker's line and the child's main thread's, in either order (which one
    // runs second depends on the schedule, so racy events would name either).
    let (code, report) = analyze(&dir.join(child), "hbp");
    assert_eq!(code, 1, "{report}");
    let worker = format!("forky.c:{}:", line_of("forky.c", "RACE-CHILD"));
    let main = format!("forky.c:{}:", line_of("forky.c", "RACE-CHILD-MAIN"));
    assert!(
        report.contains(&worker) && report.contains(&main),
        "{report}"
    );
    let (code, report) = analyze(&dir.join("fk.rpb"), "hb");
    assert_eq!(code, 0, "{report}");
}

#[test]
fn a_compressed_output_compresses_the_childrens_traces_too() {
    let Some((dir, traces)) = record_forky("forky-xz", "fk.rpb.xz") else {
        return;
    };
    // The parent's `fk.rpb.xz` and the child's `fk.PID.rpb.xz`, both xz.
    for t in &traces {
        assert!(t.ends_with(".rpb.xz"), "{t}");
        let head = std::fs::read(dir.join(t)).unwrap();
        assert!(head.starts_with(b"\xfd7zXZ\0"), "{t} is not xz");
        // Its calling contexts, beside it under the compressed trace's name.
        assert!(dir.join(format!("{t}.stacks")).is_file(), "{t}.stacks");
    }
    let (code, report) = analyze(&dir.join("fk.rpb.xz"), "hb");
    assert_eq!(code, 0, "{report}");
}

/// The pair analysis's report of `name`'s recorded run names each pair of marked lines.
fn assert_pairs_at_lines(name: &str, pairs: &[(&str, &str)]) {
    let Some(trace) = record(name, "rpb") else {
        return;
    };
    let (code, report) = analyze(&trace, "shbp");
    assert_eq!(code, 1, "{name}:\n{report}");
    for (a, b) in pairs {
        let (a, b) = (
            format!("{name}:{}:", line_of(name, a)),
            format!("{name}:{}:", line_of(name, b)),
        );
        assert!(
            report.lines().any(|l| l.contains(&a) && l.contains(&b)),
            "{name}: no pair {a} / {b}:\n{report}"
        );
    }
}

#[test]
fn free_and_realloc_race_with_unordered_uses() {
    assert_pairs_at_lines(
        "free_race.c",
        &[("RACE-USE", "RACE-FREE"), ("RACE-READ", "RACE-REALLOC")],
    );
    // Online, the worker's accesses wait in its batch (it does not synchronise before the
    // free): the free hands them over first, so FastTrack sees both races at the frees.
    let Some((report, _)) = online("free_race.c", &["fasttrack"]) else {
        return;
    };
    for marker in ["RACE-FREE", "RACE-REALLOC"] {
        let line = format!("free_race.c:{}:", line_of("free_race.c", marker));
        assert!(report.contains(&line), "{marker}:\n{report}");
    }
}

#[test]
fn delete_races_with_an_unordered_use() {
    assert_pairs_at_lines("delete_race.cc", &[("RACE-USE", "RACE-DELETE")]);
}

/// A fresh directory `name` beside the test programs.
fn fresh_dir(name: &str) -> Option<PathBuf> {
    let dir = setup()?.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Some(dir)
}

/// `racepred record OPTIONS -o OUT -- EXE`, which must end well within two minutes.
fn record_within(exe: &Path, options: &[&str], out: &Path) {
    let mut cmd = racepred();
    cmd.arg("record")
        .args(options)
        .arg("-o")
        .arg(out)
        .arg("--")
        .arg(exe);
    let (code, _, err) = common::run_within(120, &mut cmd);
    assert_eq!(code, 0, "{} under record {options:?}: {err}", exe.display());
}

/// The files of `dir` whose names start with `prefix`, sorted, but the calling contexts
/// beside traces (`TRACE.stacks`).
fn files_in(dir: &Path, prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix) && !n.ends_with(".stacks"))
        .collect();
    v.sort();
    v
}

/// The source line numbers of the locations of an STD trace's events (`file:line:col`).
fn event_lines(std_trace: &Path) -> Vec<usize> {
    std::fs::read_to_string(std_trace)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let loc = l.rsplit('|').next().unwrap();
            let mut parts = loc.rsplit(':');
            let _col = parts.next();
            parts.next().unwrap().parse().unwrap()
        })
        .collect()
}

#[test]
fn fork_while_other_threads_are_inside_the_runtime_ends_in_both_modes() {
    let Some(exe) = compile("fork_busy.c") else {
        return;
    };
    let forks = 20;
    let first = line_of("fork_busy.c", "pid_t p = fork()");
    let last = line_of("fork_busy.c", "exit(0)");

    // Recorded: the parent's trace and one per child, each holding only the child's events.
    let dir = fresh_dir("fork-busy").unwrap();
    record_within(&exe, &[], &dir.join("fb.std"));
    let traces = files_in(&dir, "fb.");
    assert_eq!(traces.len(), 1 + forks, "{traces:?}");
    common::assert_valid(&dir.join("fb.std"));
    for child in traces.iter().filter(|t| *t != "fb.std") {
        let path = dir.join(child);
        common::assert_valid(&path);
        let lines = event_lines(&path);
        assert!(!lines.is_empty(), "{child}: empty");
        let worker_line = line_of("fork_busy.c", "CHILD-RACE-WORKER");
        assert!(
            lines
                .iter()
                .all(|l| (first..=last).contains(l) || *l == worker_line),
            "{child}: events outside the child's code (lines {first}–{last}, {worker_line}): {lines:?}"
        );
        // The child's own race.
        let (code, report) = analyze(&path, "hbp");
        assert_eq!(code, 1, "{child}:\n{report}");
        let worker = format!(
            "fork_busy.c:{}:",
            line_of("fork_busy.c", "CHILD-RACE-WORKER")
        );
        assert!(report.contains(&worker), "{child}:\n{report}");
    }

    // Online: every child analyses only what it did.
    let dir = fresh_dir("fork-busy-online").unwrap();
    record_within(&exe, &["--online", "fasttrack"], &dir.join("r.txt"));
    let reports = files_in(&dir, "r.");
    assert_eq!(reports.len(), 1 + forks, "{reports:?}");
    for child in reports.iter().filter(|t| *t != "r.txt") {
        let report = std::fs::read_to_string(dir.join(child)).unwrap();
        let head = report.lines().next().unwrap_or_default();
        // `fasttrack: N racy events at 1 location in E events of PROGRAM (online)`
        let events: u64 = head
            .split(" events of ")
            .next()
            .and_then(|h| h.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{child}: {head}"));
        assert!(events < 50, "{child}: the parent's events too:\n{report}");
        let worker = format!(
            "fork_busy.c:{}:",
            line_of("fork_busy.c", "CHILD-RACE-WORKER")
        );
        assert!(report.contains(&worker), "{child}:\n{report}");
    }
}

#[test]
fn a_child_forked_while_holding_a_lock_starts_by_acquiring_it() {
    let Some(exe) = compile("fork_locked.c") else {
        return;
    };
    let dir = fresh_dir("fork-locked").unwrap();
    let out = run_record(&dir.join("fl.std"), &exe, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let traces = files_in(&dir, "fl.");
    assert_eq!(traces.len(), 2, "{traces:?}");
    for t in &traces {
        common::assert_valid(&dir.join(t));
    }
    let child = traces.iter().find(|t| *t != "fl.std").unwrap();
    let text = std::fs::read_to_string(dir.join(child)).unwrap();
    let fork = format!("fork_locked.c:{}:", line_of("fork_locked.c", "// FORK"));
    let first = text.lines().find(|l| !l.starts_with('#')).unwrap();
    assert!(
        first.starts_with("T0|acq(") && first.contains(&fork),
        "{child}:\n{text}"
    );
}

#[test]
fn exec_writes_the_trace_first_and_the_new_image_its_own() {
    let Some(exe) = compile("exec.c") else {
        return;
    };
    let before = ["RACE-BEFORE-MAIN", "RACE-BEFORE-WORKER"]
        .map(|m| format!("exec.c:{}:", line_of("exec.c", m)));
    let after = ["RACE-AFTER-MAIN", "RACE-AFTER-WORKER"]
        .map(|m| format!("exec.c:{}:", line_of("exec.c", m)));
    for how in [
        "execv", "execve", "execvp", "execvpe", "execl", "execlp", "execle", "fexecve", "execveat",
    ] {
        let dir = fresh_dir(&format!("exec-{how}")).unwrap();
        let out = run_record(&dir.join("e.rpb"), &exe, &[how]);
        assert!(
            out.status.success(),
            "{how}: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, b"after\n", "{how}");
        let traces = files_in(&dir, "e.");
        assert_eq!(traces.len(), 2, "{how}: {traces:?}");
        // Before the exec: the main trace, with the race of the first image.
        let main = dir.join("e.rpb");
        common::assert_valid(&main);
        let (code, report) = analyze(&main, "hbp");
        assert_eq!(code, 1, "{how}:\n{report}");
        assert!(
            before.iter().all(|l| report.contains(l)),
            "{how}:\n{report}"
        );
        assert!(
            !after.iter().any(|l| report.contains(l)),
            "{how}:\n{report}"
        );
        // After it: `e.PID.exec1.rpb`, the new image's race only.
        let new = traces.iter().find(|t| *t != "e.rpb").unwrap();
        assert!(new.ends_with(".exec1.rpb"), "{how}: {new}");
        let new = dir.join(new);
        common::assert_valid(&new);
        let (code, report) = analyze(&new, "hbp");
        assert_eq!(code, 1, "{how}:\n{report}");
        assert!(after.iter().all(|l| report.contains(l)), "{how}:\n{report}");
        assert!(
            !before.iter().any(|l| report.contains(l)),
            "{how}:\n{report}"
        );
    }

    // A failed exec: recording goes on, and the trace at exit holds both races.
    let dir = fresh_dir("exec-fail").unwrap();
    let out = run_record(&dir.join("e.rpb"), &exe, &["fail"]);
    assert!(
        out.status.success(),
        "{:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"failed\n");
    assert_eq!(files_in(&dir, "e."), ["e.rpb"]);
    let main = dir.join("e.rpb");
    common::assert_valid(&main);
    let (code, report) = analyze(&main, "hbp");
    assert_eq!(code, 1, "{report}");
    let failed = ["RACE-FAILED-MAIN", "RACE-FAILED-WORKER"]
        .map(|m| format!("exec.c:{}:", line_of("exec.c", m)));
    assert!(
        before.iter().chain(&failed).all(|l| report.contains(l)),
        "{report}"
    );
}

#[test]
fn a_cancelled_condition_wait_gives_a_well_formed_trace() {
    let Some(exe) = compile("cancel.c") else {
        return;
    };
    for how in ["wait", "timed"] {
        let trace = exe.with_file_name(format!("cancel-{how}.rpb"));
        let out = run_record(&trace, &exe, &[how]);
        assert!(
            out.status.success(),
            "{how}: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        common::assert_valid(&trace);
        for a in ["hb", "shb"] {
            let (code, report) = analyze(&trace, a);
            assert_eq!(code, 0, "{how} {a}:\n{report}");
        }
    }
    assert_online_finds_no_race("cancel.c", &["fasttrack"]);
}

#[test]
fn online_leaves_the_programs_standard_output_byte_identical() {
    let Some(exe) = compile("print_bytes.c") else {
        return;
    };
    let expected: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 256) as u8).collect();
    // The later of the two increments is the racy event; which one depends on the schedule.
    let lines = ["RACE-MAIN", "RACE-WORKER"]
        .map(|m| format!("print_bytes.c:{}:", line_of("print_bytes.c", m)));
    let names_race = |r: &str| lines.iter().any(|l| r.contains(l));
    for analysis in [&["fasttrack"][..], &["hb"], &["pacer", "--rate", "1"]] {
        // Without -o: the report on standard error.
        let Some((report, stdout)) = online("print_bytes.c", analysis) else {
            return;
        };
        assert!(stdout == expected, "{analysis:?}: standard output changed");
        assert!(
            report.starts_with(&format!("{}: ", analysis[0])),
            "{report}"
        );
        assert!(names_race(&report), "{analysis:?}:\n{report}");
        // With -o: the report in the file, nothing added to either stream.
        let file = exe.with_file_name(format!("print-bytes-{}.txt", analysis[0]));
        let out = racepred()
            .args(["record", "--online"])
            .args(analysis)
            .arg("-o")
            .arg(&file)
            .arg("--")
            .arg(&exe)
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(
            out.stdout == expected,
            "{analysis:?} -o: standard output changed"
        );
        let report = std::fs::read_to_string(&file).unwrap();
        assert!(names_race(&report), "{analysis:?}:\n{report}");
    }
    // Recording leaves it alone too.
    let trace = exe.with_file_name("print-bytes.rpb");
    let out = run_record(&trace, &exe, &[]);
    assert!(out.status.success());
    assert!(out.stdout == expected, "record: standard output changed");
}

#[test]
fn online_reports_of_forked_children_follow_the_main_one() {
    let Some((report, stdout)) = online("forky.c", &["fasttrack"]) else {
        return;
    };
    assert_eq!(stdout, b"2\n");
    // The parent's (no race), then the child's, which races.
    assert!(report.starts_with("fasttrack: no races"), "{report}");
    let child = report
        .find("racepred: report of process ")
        .unwrap_or_else(|| panic!("{report}"));
    let worker = format!("forky.c:{}:", line_of("forky.c", "RACE-CHILD"));
    assert!(report[child..].contains(&worker), "{report}");
}

#[test]
fn reports_show_each_racing_access_with_its_call_sites() {
    let Some(trace) = record("stacks.c", "rpb") else {
        return;
    };
    assert!(trace.with_file_name("stacks.rpb.stacks").is_file());
    let at = |m: &str| format!("stacks.c:{}:", line_of("stacks.c", m));
    let (code, report) = analyze(&trace, "hbp");
    assert_eq!(code, 1, "{report}");
    // Text: under each pair, the call sites of both accesses, innermost first.
    let stack_lines: Vec<&str> = report
        .lines()
        .filter(|l| l.trim_start().starts_with("event ") && l.contains(" called from "))
        .collect();
    assert!(
        stack_lines.iter().any(|l| {
            let (b, u) = (l.find(&at("CALL-BUMP")), l.find(&at("CALL-UPDATE")));
            matches!((b, u), (Some(b), Some(u)) if b < u)
        }),
        "{report}"
    );
    assert!(
        stack_lines.iter().any(|l| l.contains(&at("CALL-TOUCH"))),
        "{report}"
    );
    // JSON: both stacks of each pair.
    let out = racepred()
        .args(["analyze", "-a", "hbp", "--json"])
        .arg(&trace)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pair = &v["location_pairs"][0];
    let stacks: Vec<String> = ["first_stack", "second_stack"]
        .iter()
        .flat_map(|k| pair[k].as_array().unwrap().iter())
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    for m in ["CALL-BUMP", "CALL-UPDATE", "CALL-TOUCH"] {
        assert!(stacks.iter().any(|f| f.contains(&at(m))), "{m}: {pair}");
    }
    // SARIF: a `stacks` entry per racing access, call sites as physical locations.
    let out = racepred()
        .args(["analyze", "-a", "hbp", "--sarif"])
        .arg(&trace)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let result = &v["runs"][0]["results"][0];
    let frames = result["stacks"][0]["frames"].as_array().unwrap();
    assert!(frames.len() >= 2, "{result}");
    assert_eq!(result["stacks"].as_array().unwrap().len(), 2, "{result}");
}

#[test]
fn a_long_run_is_written_as_it_goes_in_bounded_memory() {
    let Some(exe) = compile("long_run.c") else {
        return;
    };
    let trace = exe.with_file_name("long_run.rpb");
    let out = run_record(&trace, &exe, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{err}", out.status);
    common::assert_valid(&trace);
    // The program's own peak memory, which holds every buffered event: 24 bytes an event
    // kept to the end would be over 200 MB.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let peak_kb: u64 = stdout
        .split_whitespace()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    let stats = racepred().arg("stats").arg(&trace).output().unwrap();
    let stats = String::from_utf8_lossy(&stats.stdout);
    let events: u64 = stats
        .lines()
        .find_map(|l| l.strip_prefix("events"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{stats}"));
    assert!(events > 9_000_000, "{events} events");
    assert!(
        peak_kb < 120 * 1024,
        "peak {peak_kb} kB for {events} events"
    );
    // The race of the loner's first write with main's late read, across the whole run.
    let (code, report) = analyze(&trace, "hbp");
    assert_eq!(code, 1, "{report}");
    let (early, late) = (
        format!("long_run.c:{}:", line_of("long_run.c", "RACE-EARLY")),
        format!("long_run.c:{}:", line_of("long_run.c", "RACE-LATE")),
    );
    assert!(
        report
            .lines()
            .any(|l| l.contains(&early) && l.contains(&late)),
        "{report}"
    );
    let (code, report) = analyze(&trace, "shb");
    assert_eq!(code, 1, "{report}");
    assert!(report.contains(&late), "{report}");
}

#[test]
fn a_vectors_destruction_is_shown_with_the_function_that_destroyed_it() {
    assert_pairs_at_lines("vector_race.cc", &[("RACE-STORE", "RACE-DESTROY")]);
    let Some(trace) = record("vector_race.cc", "rpb") else {
        return;
    };
    let (code, report) = analyze(&trace, "hbp");
    assert_eq!(code, 1, "{report}");
    // The free's stack: where `delete` ran, in the destroying function, then its caller;
    // not the runtime's or the C library's frames of the thread's start.
    let destroy = format!(
        "vector_race.cc:{}:",
        line_of("vector_race.cc", "RACE-DESTROY")
    );
    let call = format!(
        "vector_race.cc:{}:",
        line_of("vector_race.cc", "CALL-DESTROY")
    );
    let stack = report
        .lines()
        .find(|l| l.contains(" called from ") && l.contains(&destroy))
        .unwrap_or_else(|| panic!("{report}"));
    let (d, c) = (stack.find(&destroy).unwrap(), stack.find(&call));
    assert!(
        stack.contains(" in destroy_items()") && c.is_some_and(|c| d < c),
        "{stack}"
    );
    for l in report.lines().filter(|l| l.contains(" called from ")) {
        assert!(!l.contains("racepred-rt") && !l.contains("libc.so"), "{l}");
    }
}

/// `racepred record --online ONLINE… -o JSON -- EXE` with `$RACEPRED_ONLINE_FAST` set to
/// `fast` (the runtime's fast paths on or off): the JSON report.
fn online_json(exe: &Path, online: &[&str], fast: &str, json: &Path) -> serde_json::Value {
    let out = racepred()
        .env("RACEPRED_ONLINE_FAST", fast)
        .args(["record", "--online"])
        .args(online)
        .arg("-o")
        .arg(json)
        .arg("--")
        .arg(exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

/// Online PACER's fast path (accesses outside sampling periods to variables without
/// metadata counted without the analysis's lock) changes no answer: on a program whose
/// analysed order is its own (threads one after another), the JSON report (races, events,
/// periods, counters) is the same as with the fast path off.
#[test]
fn online_pacer_fast_path_changes_no_answer() {
    let Some(exe) = compile("pacer_window.c") else {
        return;
    };
    let dir = fresh_dir("pacer-window").unwrap();
    let report = |fast: &str, rate: &str, period: &str| {
        let json = dir.join(format!("fast{fast}-{rate}-{period}.json"));
        let online = ["pacer", "--rate", rate, "--period", period, "--seed", "3"];
        online_json(&exe, &online, fast, &json)
    };
    for (rate, period) in [("0.3", "50"), ("0.1", "1000"), ("0.5", "7"), ("0", "100")] {
        let (slow, fast) = (report("0", rate, period), report("1", rate, period));
        assert_eq!(slow, fast, "rate {rate} period {period}");
        let ns = &fast["extra"]["counters"]["non_sampling"];
        assert!(ns["fast_reads"].as_u64().unwrap() > 1000, "{ns}");
        if rate != "0" {
            assert!(fast["extra"]["sampling_periods"].as_u64().unwrap() > 0);
        }
    }
}

/// Online FastTrack skips, in the hook, the accesses it would skip itself (a thread's
/// repeated reads and writes between two of its synchronisation events): on a program whose
/// analysed order is its own (threads one after another, racing), the JSON report (races,
/// their event numbers, events, counters) is the same as with every access analysed.
#[test]
fn online_fasttrack_skipping_repeats_changes_no_answer() {
    let Some(exe) = compile("repeats.c") else {
        return;
    };
    let dir = fresh_dir("repeats-online").unwrap();
    let report = |fast: &str| {
        let json = dir.join(format!("fast{fast}.json"));
        let mut v = online_json(&exe, &["fasttrack"], fast, &json);
        // Variables are named by address, which differs from run to run.
        for g in v["racy_location_groups"].as_array_mut().unwrap() {
            g.as_object_mut().unwrap().remove("variable");
        }
        v
    };
    let (all, mut skipping) = (report("0"), report("1"));
    let skipped = skipping["extra"]
        .as_object_mut()
        .unwrap()
        .remove("same_epoch_skipped_in_hook")
        .and_then(|v| v.as_u64())
        .unwrap();
    // `grid` and `shared` are read and written at most 30 * (4 * 64 * (64 + 32 + 22)) +
    // 30 * 2 * 512 * 3 = 998 400 times in all: more skipped accesses are repeats of the
    // `int` array `own` too (two `int`s share an 8-byte word: they must not evict each
    // other in the hook's table).
    assert!(skipped > 998_400, "{skipped} accesses skipped");
    assert!(all["extra"].get("same_epoch_skipped_in_hook").is_none());
    assert_eq!(all, skipping);
    let race = format!("repeats.c:{}:", line_of("repeats.c", "REPEATS-RACE"));
    assert!(all.to_string().contains(&race), "{all}");
}

/// Two threads meet at a barrier 2 000 times and race on `x` between meetings. The one
/// that leaves a round last must not synchronise with the other's arrival at the next
/// round (with one variable for every round it nearly always did, and every race was
/// missed): each round's race is found, recorded and online.
#[test]
fn a_barrier_round_left_late_does_not_order_the_next_rounds_accesses() {
    let Some(trace) = record("barrier_rounds.c", "rpb") else {
        return;
    };
    let lines = ["BARRIER-RACE-WRITE", "BARRIER-RACE-READ"]
        .map(|m| format!("barrier_rounds.c:{}:", line_of("barrier_rounds.c", m)));
    for analysis in ["hb", "fasttrack"] {
        let (code, report) = analyze(&trace, analysis);
        assert_eq!(code, 1, "{analysis}: {report}");
        let head = format!("{analysis}: 2000 racy events at 2 locations");
        assert!(report.starts_with(&head), "{analysis}: {report}");
        for l in &lines {
            assert!(report.contains(l.as_str()), "{analysis}: {l}\n{report}");
        }
    }
    let exe = compile("barrier_rounds.c").unwrap();
    for fast in ["0", "1"] {
        let out = racepred()
            .env("RACEPRED_ONLINE_FAST", fast)
            .args(["record", "--online", "fasttrack", "--"])
            .arg(&exe)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("fasttrack: 2000 racy events at 2 locations"),
            "online, fast path {fast}: {err}"
        );
    }
}
