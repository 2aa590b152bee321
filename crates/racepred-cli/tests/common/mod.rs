//! Helpers shared by the CLI test files: the binary, the repository, scratch directories and
//! running a command to (exit code, stdout, stderr).
#![allow(dead_code)] // each test file uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_racepred"))
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh directory per test (`group` keeps the test files apart).
pub fn fresh_dir(group: &str, test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("racepred-{group}-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `cmd`: its exit code (-1 if killed) and its output as text.
pub fn run(cmd: &mut Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().unwrap();
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// Runs `cmd` as [`run`] does, but kills it and fails the test if it has not ended within
/// `secs` seconds (a hang is a failure, not a stuck test run).
pub fn run_within(secs: u64, cmd: &mut Command) -> (i32, String, String) {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            let err = String::from_utf8_lossy(&err.join().unwrap()).into_owned();
            panic!("{cmd:?} did not end within {secs} s; stderr: {err}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.join().unwrap()).into_owned(),
        String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
    )
}

/// Writes `content` to `dir/name`; returns the path.
pub fn write(dir: &Path, name: &str, content: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

/// Runs `cmd`, fails the test unless it exits with `code` (saying its standard error), and
/// returns its standard output and standard error.
pub fn expect(code: i32, cmd: &mut Command) -> (String, String) {
    let (got, out, err) = run(cmd);
    assert_eq!(got, code, "{cmd:?}: {err}");
    (out, err)
}

/// `text` (a command's output) parsed as JSON; panics showing it if it is none.
pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// `out`, a run of `racepred record -o trace` (`what`: the program recorded), succeeded,
/// said it recorded, and `racepred validate` accepts the trace; returns its standard error.
pub fn assert_recorded(out: &std::process::Output, trace: &Path, what: &str) -> String {
    let err = assert_ran(out, &format!("{what} under record"), "racepred: recorded");
    assert_valid(trace);
    err
}

/// `racepred validate` accepts `trace`.
pub fn assert_valid(trace: &Path) {
    let v = bin().arg("validate").arg(trace).output().unwrap();
    assert!(
        v.status.success(),
        "{}: not well-formed:\n{}{}",
        trace.display(),
        String::from_utf8_lossy(&v.stdout),
        String::from_utf8_lossy(&v.stderr)
    );
}

/// `out`, a run of `what`, succeeded and said `said` on standard error; returns that.
pub fn assert_ran(out: &std::process::Output, what: &str, said: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{what}: {:?}\n{err}", out.status);
    assert!(err.contains(said), "{what}: {err}");
    err
}
