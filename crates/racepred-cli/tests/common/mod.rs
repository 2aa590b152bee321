//! Helpers shared by the CLI test files: the binary, the repository, scratch directories and
//! running a command to (exit code, stdout, stderr).
#![allow(dead_code)] // each test file uses a different subset

use std::path::PathBuf;
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
