//! `racepred record -- java …` end to end: small Java programs (`tests/record/java/`), one
//! racy and one race-free per kind of synchronisation (monitors and synchronized methods,
//! `ReentrantLock` and its conditions, `ReentrantReadWriteLock`, volatile fields,
//! start/join, wait/notify,
//! `CountDownLatch`/`Semaphore`/`CyclicBarrier`, atomics, `Thread.interrupt`, executors),
//! compiled
//! with the machine's `javac` and run under racepred's Java agent (`java/agent`, built here
//! beside the racepred binary). Every trace validates; `hb`, `shb` and `wcp` report the racy
//! program's race exactly at its marked lines (`// RACE`) and nothing on race-free ones.
//! Skipped, with a message, where `javac`/`jar` or ASM (`libasm-java`) is missing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn racepred() -> Command {
    Command::new(env!("CARGO_BIN_EXE_racepred"))
}

fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/record/java")
}

/// Builds the agent beside the racepred binary and compiles the test programs, once;
/// `None` (after saying why) where the JDK or ASM is missing.
fn setup() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let bin = Path::new(env!("CARGO_BIN_EXE_racepred"));
        let jar = bin.with_file_name("racepred-agent.jar");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../java/agent/build.sh");
        let out = Command::new("bash")
            .arg(&script)
            .arg(&jar)
            .output()
            .unwrap();
        if out.status.code() == Some(77) {
            eprintln!(
                "skipped: cannot build the Java agent: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        assert!(
            out.status.success(),
            "java/agent/build.sh failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("record_java");
        let classes = dir.join("classes");
        std::fs::create_dir_all(&classes).unwrap();
        let mut javac = Command::new("javac");
        javac.arg("-g").arg("-d").arg(&classes);
        for e in std::fs::read_dir(sources()).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "java") {
                javac.arg(p);
            }
        }
        let out = javac.output().unwrap();
        assert!(
            out.status.success(),
            "javac:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(dir)
    })
    .as_deref()
}

/// Records `class` into `DIR/CLASS.EXT` and validates the trace; returns it.
fn record(class: &str, ext: &str) -> Option<PathBuf> {
    let dir = setup()?;
    let trace = dir.join(format!("{class}.{ext}"));
    let out = racepred()
        .args(["record", "-o"])
        .arg(&trace)
        .args(["--", "java", "-cp"])
        .arg(dir.join("classes"))
        .arg(class)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{class} under record: {:?}\n{err}",
        out.status
    );
    assert!(err.contains("racepred: recorded"), "{class}: {err}");
    assert!(!err.contains("cannot instrument"), "{class}: {err}");
    let v = racepred().arg("validate").arg(&trace).output().unwrap();
    assert!(
        v.status.success(),
        "{class}: trace not well-formed:\n{}{}",
        String::from_utf8_lossy(&v.stdout),
        String::from_utf8_lossy(&v.stderr)
    );
    Some(trace)
}

const ANALYSES: [&str; 3] = ["hb", "shb", "wcp"];

/// `analyze --json -a hb -a shb -a wcp`: (exit code, per analysis the source locations of
/// its races, racy accesses and pairs alike).
fn analyze(trace: &Path) -> (i32, Vec<(String, BTreeSet<String>)>) {
    let mut cmd = racepred();
    cmd.args(["analyze", "--json"]);
    for a in ANALYSES {
        cmd.args(["-a", a]);
    }
    let out = cmd.arg(trace).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let json: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}{}", String::from_utf8_lossy(&out.stderr)));
    let reports = json.as_array().expect("one report per analysis").clone();
    assert_eq!(reports.len(), ANALYSES.len(), "{text}");
    let found = reports
        .iter()
        .map(|r| {
            let mut locs = BTreeSet::new();
            let text = |v: &serde_json::Value| v.as_str().unwrap_or("<no source>").to_string();
            for g in r["racy_location_groups"].as_array().into_iter().flatten() {
                locs.insert(text(&g["source"]));
            }
            for g in r["location_pairs"].as_array().into_iter().flatten() {
                locs.insert(text(&g["first_source"]));
                locs.insert(text(&g["second_source"]));
            }
            (r["analysis"].as_str().unwrap().to_string(), locs)
        })
        .collect();
    (out.status.code().unwrap(), found)
}

/// `File.java:N` of each line of `file` marked `// RACE`.
fn marked(file: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(sources().join(file)).unwrap();
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains("// RACE"))
        .map(|(i, _)| format!("{file}:{}", i + 1))
        .collect()
}

fn assert_racy(class: &str) {
    let Some(trace) = record(class, "rpb") else {
        return;
    };
    let expected = marked(&format!("{class}.java"));
    assert!(!expected.is_empty(), "{class}: no line marked `// RACE`");
    let (code, found) = analyze(&trace);
    assert_eq!(code, 1, "{class}: {found:?}");
    for (analysis, locs) in found {
        assert!(!locs.is_empty(), "{class}: {analysis} reports no race");
        assert!(
            locs.is_subset(&expected),
            "{class}: {analysis} reports {locs:?}, the race is at {expected:?}"
        );
    }
}

fn assert_race_free(class: &str) {
    let Some(trace) = record(class, "rpb") else {
        return;
    };
    let (code, found) = analyze(&trace);
    assert_eq!(code, 0, "{class}: {found:?}");
    assert!(
        found.iter().all(|(_, l)| l.is_empty()),
        "{class}: {found:?}"
    );
}

#[test]
fn synchronized_racy() {
    assert_racy("SyncRacy");
}

#[test]
fn synchronized_race_free() {
    assert_race_free("SyncSafe");
}

#[test]
fn reentrant_lock_racy() {
    assert_racy("LockRacy");
}

#[test]
fn reentrant_lock_race_free() {
    assert_race_free("LockSafe");
}

#[test]
fn volatile_racy() {
    assert_racy("VolatileRacy");
}

#[test]
fn volatile_race_free() {
    assert_race_free("VolatileSafe");
}

#[test]
fn start_join_racy() {
    assert_racy("JoinRacy");
}

#[test]
fn start_join_race_free() {
    assert_race_free("JoinSafe");
}

#[test]
fn wait_notify_racy() {
    assert_racy("WaitRacy");
}

#[test]
fn wait_notify_race_free() {
    assert_race_free("WaitSafe");
}

/// Any output format and compression: the agent's binary trace is converted, and the
/// location table follows it (`TRACE.locs`).
#[test]
fn std_output_compressed_keeps_locations() {
    let Some(trace) = record("JoinRacy", "std.gz") else {
        return;
    };
    let table = PathBuf::from(format!("{}.locs", trace.display()));
    assert!(table.is_file(), "{} missing", table.display());
    let (code, found) = analyze(&trace);
    assert_eq!(code, 1);
    let expected = marked("JoinRacy.java");
    assert!(
        found
            .iter()
            .all(|(_, l)| !l.is_empty() && l.is_subset(&expected)),
        "{found:?}"
    );
}

#[test]
fn synchronisers_racy() {
    assert_racy("SynchronisersRacy");
}

#[test]
fn synchronisers_race_free() {
    assert_race_free("SynchronisersSafe");
}

#[test]
fn atomics_racy() {
    assert_racy("AtomicRacy");
}

#[test]
fn atomics_race_free() {
    assert_race_free("AtomicSafe");
}

#[test]
fn read_write_lock_racy() {
    assert_racy("ReadWriteRacy");
}

#[test]
fn read_write_lock_race_free() {
    assert_race_free("ReadWriteSafe");
}

#[test]
fn interrupt_racy() {
    assert_racy("InterruptRacy");
}

#[test]
fn interrupt_race_free() {
    assert_race_free("InterruptSafe");
}

#[test]
fn executor_racy() {
    assert_racy("ExecutorRacy");
}

#[test]
fn executor_race_free() {
    assert_race_free("ExecutorSafe");
}

/// A missing agent and `--online` are errors (exit 2) that say what to do; neither needs a
/// JDK, since the JVM is not started.
#[test]
fn missing_agent_and_online_are_refused() {
    let out = racepred()
        .args([
            "record",
            "--agent",
            "/nonexistent/racepred-agent.jar",
            "--",
            "java",
            "Main",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("Java agent /nonexistent/racepred-agent.jar does not exist"),
        "{err}"
    );
    let out = racepred()
        .args([
            "record",
            "--online",
            "fasttrack",
            "--",
            "/usr/bin/java",
            "Main",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--online is not available for Java programs"),
        "{err}"
    );
}
