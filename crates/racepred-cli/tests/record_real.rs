//! A real program traced end to end: `tests/real/pbzip2.sh` fetches pbzip2 1.1.13's Debian
//! source, builds it with `g++ -fsanitize=thread`, records compressions and decompressions
//! with this `racepred`, checks the round trips, validates every trace and fails on any race
//! that `tests/real/pbzip2.expected` does not explain (docs/recording.md). The script exits
//! 77 with a `skipped: …` line where it cannot fetch or build pbzip2 (no apt-get, network,
//! g++, libtsan or libbz2-dev); the test then passes.

use std::path::Path;
use std::process::Command;

#[test]
fn pbzip2_records_validates_and_reports_only_explained_races() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/real/pbzip2.sh");
    // Kept between runs: the downloaded source and the build are reused.
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("real-pbzip2");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").into());
    let out = Command::new("bash")
        .arg(&script)
        .arg(&work)
        .env("RACEPRED", env!("CARGO_BIN_EXE_racepred"))
        .env("CARGO", cargo)
        .env("PBZIP2_KEEP_TRACES", "0")
        .output()
        .expect("cannot run bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => println!("{stdout}{stderr}"),
        Some(77) => eprintln!("{}", stdout.trim_end()),
        code => panic!("tests/real/pbzip2.sh failed ({code:?}):\n{stdout}\n{stderr}"),
    }
}
