//! `racepred record` end to end: small C and C++ programs built with the machine's
//! `gcc -fsanitize=thread`, run under racepred's runtime, analysed with `hb` and `shb`.
//! Racy programs report their race at the marked source lines (`// RACE-…`); race-free
//! ones (mutex, condition variable, rwlock, barrier, semaphore, once, C11 atomics, C++
//! threads) report none; every trace validates. Skipped, with a message, where gcc or its
//! ThreadSanitizer runtime is missing.

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
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{name} under record: {:?}\n{err}",
        out.status
    );
    assert!(err.contains("racepred: recorded"), "{err}");
    let v = racepred().arg("validate").arg(&trace).output().unwrap();
    assert!(
        v.status.success(),
        "{name}: trace not well-formed:\n{}{}",
        String::from_utf8_lossy(&v.stdout),
        String::from_utf8_lossy(&v.stderr)
    );
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
    for ext in ["rpb", "std"] {
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

/// `racepred record --online ANALYSIS ARGS -- PROG`: (report on standard output, stderr).
fn online(name: &str, analysis: &[&str]) -> Option<(String, String)> {
    let exe = compile(name)?;
    let out = racepred()
        .args(["record", "--online"])
        .args(analysis)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{name} under record --online {analysis:?}: {:?}\n{err}",
        out.status
    );
    assert!(err.contains("racepred: analysed"), "{err}");
    Some((String::from_utf8_lossy(&out.stdout).into_owned(), err))
}

#[test]
fn online_fasttrack_and_pacer_report_the_racy_counter() {
    for analysis in [&["fasttrack"][..], &["hb"], &["pacer", "--rate", "1"]] {
        let Some((report, _)) = online("racy.c", analysis) else {
            return;
        };
        // The program prints the counter first, then the report follows.
        let head = format!("\n{}: ", analysis[0]);
        assert!(report.contains(&head), "{report}");
        assert!(report.contains("racy event"), "{analysis:?}:\n{report}");
        assert_names_the_counter(&report, analysis[0]);
    }
    // Nothing sampled, nothing reported.
    let Some((report, _)) = online("racy.c", &["pacer", "--rate", "0"]) else {
        return;
    };
    assert!(report.contains("\npacer: no races"), "{report}");
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
            let Some((report, _)) = online(name, analysis) else {
                return;
            };
            assert!(
                report.starts_with(&format!("{}: no races", analysis[0])),
                "{name} {analysis:?}:\n{report}"
            );
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

#[test]
fn a_forked_child_writes_its_own_trace() {
    let Some(exe) = compile("forky.c") else {
        return;
    };
    let dir = exe.parent().unwrap().join("forky-out");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = run_record(&dir.join("fk.rpb"), &exe, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut traces: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    traces.sort();
    // The parent's `fk.rpb` and the child's `fk.PID.rpb`.
    assert_eq!(traces.len(), 2, "{traces:?}");
    assert!(traces.iter().any(|t| t == "fk.rpb"));
    let child = traces.iter().find(|t| *t != "fk.rpb").unwrap();
    assert!(
        child.starts_with("fk.") && child.ends_with(".rpb"),
        "{child}"
    );
    for t in &traces {
        let v = racepred()
            .arg("validate")
            .arg(dir.join(t))
            .output()
            .unwrap();
        assert!(v.status.success(), "{t}");
    }
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
