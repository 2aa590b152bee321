//! `racepred record -- java …` end to end: small Java programs (`tests/record/java/`), one
//! racy and one race-free per kind of synchronisation (monitors and synchronized methods,
//! `ReentrantLock` and its conditions, `ReentrantReadWriteLock`, volatile fields,
//! start/join, wait/notify,
//! `CountDownLatch`/`Semaphore`/`CyclicBarrier`/`Phaser`, atomics, `Thread.interrupt`, executors,
//! `CompletableFuture.supplyAsync`/`runAsync` with `join`/`get`,
//! class initialisation),
//! compiled
//! with the machine's `javac` and run under racepred's Java agent (`java/agent`, built here
//! beside the racepred binary). Every trace validates; `hb`, `shb` and `wcp` report the racy
//! program's race exactly at its marked lines (`// RACE`) and nothing on race-free ones.
//! With `--values` (value traces for RECIPE): RECIPE's Fig. 1 in Java gives `recipe` the race
//! `mcm` cannot see; the values and branch conditions of small programs are checked line by
//! line; racy programs recorded with values validate (values agree with the trace's order)
//! and give `hb`/`shb`/`wcp` the same races.
//! Skipped, with a message, where `javac`/`jar` or ASM (`libasm-java`) is missing.

mod common;
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
    record_with(class, ext, &[])
}

/// As [`record`], with more `record` options (`--values`); the trace is `DIR/CLASS.EXT`
/// with each option's name added (`CLASS.values.EXT`).
fn record_with(class: &str, ext: &str, options: &[&str]) -> Option<PathBuf> {
    let dir = setup()?;
    let tag: String = options
        .iter()
        .map(|o| format!(".{}", o.trim_start_matches('-')))
        .collect();
    let trace = dir.join(format!("{class}{tag}.{ext}"));
    let out = racepred()
        .arg("record")
        .args(options)
        .arg("-o")
        .arg(&trace)
        .args(["--", "java", "-cp"])
        .arg(dir.join("classes"))
        .arg(class)
        .output()
        .unwrap();
    let err = common::assert_recorded(&out, &trace, class);
    assert!(!err.contains("cannot instrument"), "{class}: {err}");
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
    assert_racy_with(class, &[]);
}

fn assert_racy_with(class: &str, options: &[&str]) {
    let Some(trace) = record_with(class, "rpb", options) else {
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

#[test]
fn phaser_racy() {
    assert_racy("PhaserRacy");
}

#[test]
fn phaser_race_free() {
    assert_race_free("PhaserSafe");
}

#[test]
fn completable_future_racy() {
    assert_racy("CompletableRacy");
}

#[test]
fn completable_future_race_free() {
    assert_race_free("CompletableSafe");
}

/// Class initialisation: the initialiser's writes (on whichever thread used the class
/// first) come before every other thread's first use of the class.
#[test]
fn class_initialisation_racy() {
    assert_racy("ClinitRacy");
}

#[test]
fn class_initialisation_race_free() {
    assert_race_free("ClinitSafe");
}

/// A missing agent and `--online` are errors (exit 2) that say what to do; neither needs a
/// JDK, since the JVM is not started.
#[test]
fn missing_agent_and_online_are_refused() {
    // `racepred ARGS` is a usage error (exit 2); its standard error.
    let refused = |args: &[&str]| {
        let out = racepred().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{err}");
        err
    };
    let err = refused(&[
        "record",
        "--agent",
        "/nonexistent/racepred-agent.jar",
        "--",
        "java",
        "Main",
    ]);
    assert!(
        err.contains("Java agent /nonexistent/racepred-agent.jar does not exist"),
        "{err}"
    );
    let err = refused(&[
        "record",
        "--online",
        "fasttrack",
        "--",
        "/usr/bin/java",
        "Main",
    ]);
    assert!(
        err.contains("--online is not available for Java programs"),
        "{err}"
    );
}

/// The location pairs an SMT analysis reports (`analyze --json -a ANALYSIS`), as
/// `(first_source, second_source)`, and its exit code.
fn smt_pairs(trace: &Path, analysis: &str) -> (i32, BTreeSet<(String, String)>) {
    let out = racepred()
        .args(["analyze", "--json", "-a", analysis])
        .arg(trace)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let json: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}{}", String::from_utf8_lossy(&out.stderr)));
    let report = if json.is_array() {
        json[0].clone()
    } else {
        json
    };
    assert_eq!(report["complete"], true, "{analysis}: {text}");
    let pairs = report["location_pairs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            let s = |k: &str| g[k].as_str().unwrap_or("<no source>").to_string();
            (s("first_source"), s("second_source"))
        })
        .collect();
    (out.status.code().unwrap(), pairs)
}

/// RECIPE's Fig. 1 written in Java, recorded with values: `recipe` (and `recipe-alt`)
/// report the race between T1's write of x and T2's read of x, which needs T2's read of y
/// to see 3 instead of 5 with its branch going the same way; `mcm`, which keeps every
/// read's write, does not.
#[test]
fn values_recipe_fig1_race_only_value_prediction_sees() {
    let Some(trace) = record_with("RecipeFig1", "rpb", &["--values"]) else {
        return;
    };
    let marked: Vec<String> = marked("RecipeFig1.java").into_iter().collect();
    assert_eq!(marked.len(), 2, "{marked:?}");
    let race = (marked[0].clone(), marked[1].clone());
    let (code, mcm) = smt_pairs(&trace, "mcm");
    assert_eq!(code, 1, "mcm: {mcm:?}");
    assert!(!mcm.contains(&race), "mcm reports {race:?}: {mcm:?}");
    for analysis in ["recipe", "recipe-alt"] {
        let (code, found) = smt_pairs(&trace, analysis);
        assert_eq!(code, 1, "{analysis}: {found:?}");
        assert!(
            found.contains(&race),
            "{analysis} misses {race:?}: {found:?}"
        );
        // Everything mcm finds, value prediction finds too.
        assert!(
            found.is_superset(&mcm),
            "{analysis}: {found:?} vs mcm {mcm:?}"
        );
    }
}

/// The lines of a value trace written as STD (by `convert`, which spells expressions its
/// own way: `br((r1==3))`), without the location field (locations are
/// the agent's numbers) and with each register renamed `r<k>` by first appearance.
fn value_lines(trace: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(trace).unwrap();
    let mut regs: Vec<String> = Vec::new();
    text.lines()
        .map(|l| {
            let body = &l[..l.rfind('|').unwrap()];
            let mut out = String::new();
            let b = body.as_bytes();
            let mut i = 0;
            while i < b.len() {
                let starts = b[i] == b'r'
                    && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'.'))
                    && b.get(i + 1).is_some_and(u8::is_ascii_digit);
                if starts {
                    let mut j = i + 1;
                    while j < b.len() && b[j].is_ascii_digit() {
                        j += 1;
                    }
                    let name = body[i..j].to_string();
                    let k = regs.iter().position(|r| *r == name).unwrap_or_else(|| {
                        regs.push(name);
                        regs.len() - 1
                    });
                    out.push_str(&format!("r<{k}>"));
                    i = j;
                } else {
                    out.push(b[i] as char);
                    i += 1;
                }
            }
            out
        })
        .collect()
}

/// Values of a one-thread program, line by line: reads carry what they saw; writes are
/// expressions over earlier reads with Java's 32-bit wrap-around and narrowing stores; a
/// float is copied as its bits; a bitwise or is spelled without `|`; a branch over two reads is recorded with its outcome;
/// reads that select an address (the array, its index) or reach a call are pinned by a
/// branch on their value. The trace validates, which checks every value against the
/// expressions (`validate` evaluates them).
#[test]
fn values_and_branch_conditions_of_a_small_program() {
    let Some(trace) = record_with("ValuesExprs", "std", &["--values"]) else {
        return;
    };
    let lines = value_lines(&trace);
    let f15 = f32::to_bits(1.5) as i64;
    let expected: Vec<String> = [
        "T0|w(ValuesExprs.arr)=ARR".to_string(),
        "T0|w(ValuesExprs.a)=2147483647".into(),
        "T0|w(ValuesExprs.b)=3".into(),
        "T0|r(ValuesExprs.a)->r<0>=2147483647".into(),
        "T0|r(ValuesExprs.b)->r<1>=3".into(),
        // c = a + b wraps to -2147483646.
        "T0|w(ValuesExprs.c)=(((r<0>+r<1>)<<32)>>32)".into(),
        "T0|r(ValuesExprs.a)->r<2>=2147483647".into(),
        "T0|r(ValuesExprs.b)->r<3>=3".into(),
        // l = (long) a * b - 1, in 64 bits.
        "T0|w(ValuesExprs.l)=((r<2>*r<3>)-1)".into(),
        "T0|r(ValuesExprs.c)->r<4>=-2147483646".into(),
        // by = (byte) (c >> 1): the cast, then the byte field's own narrowing.
        "T0|w(ValuesExprs.by)=(((((r<4>>>(1&31))<<56)>>56)<<56)>>56)".into(),
        "T0|r(ValuesExprs.a)->r<5>=2147483647".into(),
        "T0|w(ValuesExprs.ch)=(((((r<5>+1)<<32)>>32)&65535)&65535)".into(),
        format!("T0|w(ValuesExprs.f)={f15}"),
        format!("T0|r(ValuesExprs.f)->r<6>={f15}"),
        "T0|w(ValuesExprs.g)=r<6>".into(),
        "T0|r(ValuesExprs.a)->r<7>=2147483647".into(),
        "T0|r(ValuesExprs.b)->r<8>=3".into(),
        // a | b, as (a ^ b) ^ (a & b).
        "T0|w(ValuesExprs.o)=((r<7>^r<8>)^(r<7>&r<8>))".into(),
        "T0|r(ValuesExprs.a)->r<9>=2147483647".into(),
        "T0|r(ValuesExprs.b)->r<10>=3".into(),
        // `if (a > b)`: javac jumps on a <= b, which did not hold.
        "T0|br(!((r<9><=r<10>)))".into(),
        "T0|r(ValuesExprs.arr)->r<11>=ARR".into(),
        "T0|br((r<11>==ARR))".into(),
        "T0|r(ValuesExprs.b)->r<12>=3".into(),
        "T0|br((r<12>==3))".into(),
        "T0|r(ValuesExprs.c)->r<13>=-2147483646".into(),
        "T0|w(int[]@ARR[3])=r<13>".into(),
    ]
    .into_iter()
    .collect();
    // The array's number is the first write's value.
    let arr = lines[0].rsplit('=').next().unwrap().to_string();
    let expected: Vec<String> = expected.iter().map(|l| l.replace("ARR", &arr)).collect();
    assert!(lines.len() > expected.len(), "{}", lines.join("\n"));
    assert_eq!(
        &lines[..expected.len()],
        &expected[..],
        "{}",
        lines.join("\n")
    );
    // The rest reads the array element and the fields printed: each read reaches a call
    // (string concatenation), so each is pinned.
    let rest = &lines[expected.len()..];
    assert_eq!(rest.len() % 2, 0, "{rest:?}");
    for pair in rest.chunks(2) {
        let (reg, value) = pair[0].split_once("->").unwrap().1.split_once('=').unwrap();
        value.parse::<i64>().unwrap();
        assert_eq!(pair[1], format!("T0|br(({reg}=={value}))"), "{rest:?}");
    }
    let (code, found) = smt_pairs(&trace, "recipe");
    assert_eq!(
        (code, found.len()),
        (0, 0),
        "one thread, no race: {found:?}"
    );
}

/// Racy read-modify-writes of a field and an array element by two threads, recorded with
/// values: the trace validates (each access is recorded atomically with it, so every
/// read's value is the last recorded write's) and `hb`/`shb`/`wcp` report the marked lines.
#[test]
fn values_of_racy_accesses_agree_with_the_trace_order() {
    assert_racy_with("ValuesCounter", &["--values"]);
}

/// Recording with values changes no event the race analyses look at: the racy programs
/// of each synchronisation kind give the same races, the race-free ones none.
#[test]
fn values_keep_the_races_of_every_synchronisation_kind() {
    for class in [
        "SyncRacy",
        "LockRacy",
        "VolatileRacy",
        "WaitRacy",
        "SynchronisersRacy",
        "ExecutorRacy",
        "ClinitRacy",
    ] {
        assert_racy_with(class, &["--values"]);
    }
    for class in [
        "SyncSafe",
        "VolatileSafe",
        "ReadWriteSafe",
        "ExecutorSafe",
        "ClinitSafe",
    ] {
        let Some(trace) = record_with(class, "rpb", &["--values"]) else {
            return;
        };
        let (code, found) = analyze(&trace);
        assert_eq!(code, 0, "{class}: {found:?}");
    }
}

/// `--values` is for Java programs: elsewhere it is refused (exit 2) before anything runs.
#[test]
fn values_outside_java_are_refused() {
    let out = racepred()
        .args(["record", "--values", "--", "/bin/true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--values is available for Java programs only"),
        "{err}"
    );
}

/// A `CyclicBarrier` and a `Phaser` met 500 times each by two threads racing between the
/// meetings: the thread leaving a round last must not synchronise with the other's
/// arrival at the next round. `hb` finds every round's race (one racy event a round) at
/// all four marked lines.
#[test]
fn barrier_rounds_left_late_do_not_order_the_next_rounds_accesses() {
    let class = "BarrierRoundsRacy";
    let Some(trace) = record(class, "rpb") else {
        return;
    };
    let (code, found) = analyze(&trace);
    assert_eq!(code, 1, "{found:?}");
    let expected = marked(&format!("{class}.java"));
    let hb = &found.iter().find(|(a, _)| a == "hb").unwrap().1;
    assert_eq!(hb, &expected);
    let out = racepred()
        .args(["analyze", "--json", "-a", "hb"])
        .arg(&trace)
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["summary"]["racy_events"], 1000, "{}", json["summary"]);
}
