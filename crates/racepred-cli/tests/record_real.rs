//! A real program traced end to end: `tests/real/pbzip2.sh` fetches pbzip2's source from
//! Debian, builds it with `g++ -fsanitize=thread`, records compressions and decompressions
//! with `racepred record` (and one with `--online fasttrack`), validates every trace and
//! fails on any race not explained in the README. Skipped (the script exits 77, with a
//! message) where the source cannot be fetched or built.

use std::path::Path;
use std::process::Command;

#[test]
fn pbzip2_traced_end_to_end() {
    let bin = Path::new(env!("CARGO_BIN_EXE_racepred"));
    // The runtime beside the racepred binary (cargo does not build another package's cdylib
    // for these tests).
    let mut build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    build.args(["build", "-q", "-p", "racepred-rt"]);
    if bin.parent().is_some_and(|d| d.ends_with("release")) {
        build.arg("--release");
    }
    assert!(
        build.status().unwrap().success(),
        "cargo build -p racepred-rt failed"
    );

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pbzip2");
    let out = Command::new("bash")
        .arg(root.join("tests/real/pbzip2.sh"))
        .arg(&work)
        .env("RACEPRED", bin)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => println!("{stdout}"),
        Some(77) => eprintln!("{}", stdout.trim()),
        _ => panic!(
            "tests/real/pbzip2.sh failed ({:?}):\n{stdout}\n{stderr}",
            out.status
        ),
    }
}
