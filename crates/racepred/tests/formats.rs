//! Trace formats: golden files per reader, round trips through the writers, compression,
//! sniffing, malformed input (messages name `file:line` or the byte), and readers that never
//! panic on arbitrary or damaged input.

#[cfg(feature = "compress")]
use std::io::Read;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use racepred::trace::binary::{BinaryReader, BinaryWriter};
use racepred::trace::csv::CsvReader;
use racepred::trace::golog::GoLogReader;
use racepred::trace::open::{open_reader, sniff};
use racepred::trace::rr::RrReader;
use racepred::trace::std_format::StdReader;
use racepred::trace::write::{copy, StdWriter, TraceWriter};
use racepred::trace::{
    open, open_with, AddrId, Event, EventSource, Format, LocId, NameKind, Names, Op, ThreadId,
    Trace,
};
use racepred::ErrorKind;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/traces/formats")
        .join(name)
}

fn read_fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A fresh scratch directory for this test process.
fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("racepred-formats-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn to_std(src: &mut dyn EventSource) -> racepred::Result<String> {
    let mut w = StdWriter::new(Vec::new());
    copy(src, &mut w)?;
    Ok(String::from_utf8(w.finish()?).unwrap())
}

fn to_bin(src: &mut dyn EventSource) -> racepred::Result<Vec<u8>> {
    let mut w = BinaryWriter::new(Vec::new());
    copy(src, &mut w)?;
    w.finish()
}

fn drain(src: &mut dyn EventSource) -> racepred::Result<u64> {
    let mut n = 0;
    while src.next_event()?.is_some() {
        // Side data must be callable after every event.
        let _ = (src.addresses(), src.seq(), src.position(), src.bytes_read());
        n += 1;
    }
    Ok(n)
}

// -----------------------------------------------------------------------------------------
// Golden files
// -----------------------------------------------------------------------------------------

fn golden(input: &str, format: Format) {
    let expected = String::from_utf8(read_fixture(&format!("{input}.expected"))).unwrap();
    // By explicit format, by extension, and by content (sniffing) all agree.
    let by_format = to_std(&mut *open_with(&fixture(input), Some(format)).unwrap()).unwrap();
    assert_eq!(by_format, expected, "{input}");
    let by_ext = to_std(&mut *open(&fixture(input)).unwrap()).unwrap();
    assert_eq!(by_ext, expected, "{input} by extension");
    assert_eq!(
        sniff(&read_fixture(input)),
        Some(format),
        "{input}: sniffed format"
    );
    let by_content =
        to_std(&mut *open_reader(std::io::Cursor::new(read_fixture(input)), None).unwrap())
            .unwrap();
    assert_eq!(by_content, expected, "{input} by content");
}

#[test]
fn golden_std() {
    golden("golden.std", Format::Std);
    let t = Trace::read_from(&mut *open(&fixture("golden.std")).unwrap()).unwrap();
    let mb = t
        .events
        .iter()
        .position(|e| e.op == Op::MethodBegin)
        .unwrap();
    let addrs: Vec<&str> = t
        .addresses(mb)
        .iter()
        .map(|a| t.names.addrs.name(a.0))
        .collect();
    assert_eq!(addrs, ["a1", "a2"]);
    assert_eq!(t.lines[0], 2);
}

#[test]
fn golden_rr() {
    golden("golden.rr", Format::Rr);
}

#[test]
fn golden_csv() {
    golden("golden.csv", Format::Csv);
    // CSV events have no location; written as STD (`-`) they read back without one too.
    let t = Trace::read_from(&mut *open(&fixture("golden.csv")).unwrap()).unwrap();
    assert!(t.events.iter().all(|e| e.loc.is_none()));
    let std = read_fixture("golden.csv.expected");
    let back =
        Trace::read_from(&mut *open_reader(std::io::Cursor::new(std), None).unwrap()).unwrap();
    assert_eq!(back.events, t.events);
}

#[test]
fn golden_golog() {
    golden("golden.golog", Format::GoLog);
    let t = Trace::read_from(&mut *open(&fixture("golden.golog")).unwrap()).unwrap();
    assert_eq!(
        t.seq,
        Some(vec![2773, 2776, 0, 1423414, 1423415, 0, 1423416, 1423417])
    );
    assert_eq!(t.lines, vec![2, 3, 4, 5, 6, 7, 8, 9]);
}

/// `golden.rpb` is `golden.std` written by the binary writer; it pins the on-disk format.
#[test]
fn golden_binary() {
    let written = to_bin(&mut *open(&fixture("golden.std")).unwrap()).unwrap();
    let path = fixture("golden.rpb");
    if std::env::var_os("RACEPRED_BLESS").is_some() {
        std::fs::write(&path, &written).unwrap();
    }
    assert_eq!(
        written,
        read_fixture("golden.rpb"),
        "the binary writer's output changed (bump the version if intended; RACEPRED_BLESS=1 rewrites)"
    );
    let expected = String::from_utf8(read_fixture("golden.std.expected")).unwrap();
    let got = to_std(&mut *open(&path).unwrap()).unwrap();
    assert_eq!(got, expected);
    assert_eq!(sniff(&written), Some(Format::Binary));
    let got = to_std(&mut *open_reader(std::io::Cursor::new(written), None).unwrap()).unwrap();
    assert_eq!(got, expected);
    // `golden-v1.rpb`: the same trace as the version 1 writer wrote it still reads.
    let got = to_std(&mut *open(&fixture("golden-v1.rpb")).unwrap()).unwrap();
    assert_eq!(got, expected);
}

// -----------------------------------------------------------------------------------------
// Generated traces: every operation, arbitrary (STD-writable) names, side data
// -----------------------------------------------------------------------------------------

/// Names the STD reader reads back unchanged: no `|`, `;`, `,`, line breaks or surrounding
/// whitespace, not starting with `#`; parentheses, colons, slashes and non-ASCII included.
fn name() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_.:/()$@é漢-][a-zA-Z0-9_.:/()$@é漢 -]{0,6}[a-zA-Z0-9_.:/()é漢]?"
        .prop_filter("no trailing space", |s| !s.ends_with(' '))
}

/// (thread, op, target, location, addresses, seq) as raw draws; `build` takes them modulo
/// the table sizes.
type RawEvent = (u8, u8, u8, Option<u8>, Vec<u8>, Option<u64>);

#[derive(Clone, Debug)]
struct Gen {
    names: Vec<Vec<String>>,
    events: Vec<RawEvent>,
    with_seq: bool,
}

fn gen_trace() -> impl Strategy<Value = Gen> {
    (
        proptest::collection::vec(proptest::collection::vec(name(), 1..5), 7),
        proptest::collection::vec(
            (
                any::<u8>(),
                0u8..14,
                any::<u8>(),
                proptest::option::weighted(0.9, any::<u8>()),
                proptest::collection::vec(any::<u8>(), 0..4),
                proptest::option::of(any::<u64>()),
            ),
            0..40,
        ),
        any::<bool>(),
    )
        .prop_map(|(names, events, with_seq)| Gen {
            names,
            events,
            with_seq,
        })
}

/// Builds the trace; `none_loc` allows events without location.
fn build(g: &Gen, none_loc: bool) -> Trace {
    let mut names = Names::new();
    for (k, kind) in NameKind::ALL.into_iter().enumerate() {
        for n in &g.names[k] {
            // A location named `-` is no location in the text formats (their writers
            // refuse it): `--` instead.
            let n = if kind == NameKind::Loc && n == "-" {
                "--"
            } else {
                n
            };
            names.table_mut(kind).intern(n.as_bytes());
        }
    }
    let mut t = Trace::new();
    let mut seqs = Vec::new();
    for &(th, op, target, loc, ref addrs, seq) in &g.events {
        let op = Op::ALL[op as usize];
        let tl = names.table(op.target_kind()).len() as u32;
        let target = if op.target_optional() && target % 3 == 0 {
            u32::MAX
        } else {
            target as u32 % tl
        };
        let loc = match loc {
            None if none_loc => LocId::NONE,
            None => LocId(0),
            Some(l) => LocId(l as u32 % names.locs.len() as u32),
        };
        let ev = Event::new(
            ThreadId(th as u32 % names.threads.len() as u32),
            op,
            target,
            loc,
        );
        t.events.push(ev);
        if op == Op::MethodBegin {
            let a: Vec<AddrId> = addrs
                .iter()
                .map(|&a| AddrId(a as u32 % names.addrs.len() as u32))
                .collect();
            t.set_addresses(t.events.len() - 1, &a);
        }
        seqs.push(seq.filter(|&s| s != u64::MAX).unwrap_or(0));
    }
    t.names = names;
    if g.with_seq && !t.events.is_empty() {
        t.seq = Some(seqs);
    }
    t
}

/// Each event with its names resolved: (thread, op, target, loc, addresses).
fn resolved(t: &Trace) -> Vec<(String, Op, String, String, Vec<String>)> {
    t.events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            (
                t.names.thread(e.thread).to_string(),
                e.op,
                t.names.target(e).to_string(),
                t.names.loc(e.loc).to_string(),
                t.addresses(i)
                    .iter()
                    .map(|a| t.names.addrs.name(a.0).to_string())
                    .collect(),
            )
        })
        .collect()
}

fn tables(n: &Names) -> Vec<Vec<String>> {
    NameKind::ALL
        .into_iter()
        .map(|k| n.table(k).iter().map(str::to_string).collect())
        .collect()
}

fn read_std(text: &[u8]) -> Trace {
    Trace::read_from(&mut StdReader::new(text)).unwrap()
}

fn read_bin(bytes: &[u8]) -> Trace {
    Trace::read_from(&mut BinaryReader::from_buf_read(bytes).unwrap()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// trace → STD → read: the same events by name, the same address sets.
    #[test]
    fn std_round_trip(g in gen_trace()) {
        let t = build(&g, true);
        let text = to_std(&mut t.source()).unwrap();
        let u = read_std(text.as_bytes());
        prop_assert_eq!(resolved(&u), resolved(&t));
        // Writing what was read gives the same text again.
        prop_assert_eq!(to_std(&mut u.source()).unwrap(), text);
    }

    /// trace → binary → read: the same events by name, address sets and seq; and the same
    /// ids and name tables as reading the STD form of the trace.
    #[test]
    fn binary_round_trip(g in gen_trace()) {
        let t = build(&g, true);
        let bytes = to_bin(&mut t.source()).unwrap();
        let u = read_bin(&bytes);
        prop_assert_eq!(resolved(&u), resolved(&t));
        prop_assert_eq!(&u.seq, &t.seq);
        // Ids: binary and STD readers intern in the same order.
        let t2 = build(&g, false);
        let s = read_std(to_std(&mut t2.source()).unwrap().as_bytes());
        let b = read_bin(&to_bin(&mut t2.source()).unwrap());
        prop_assert_eq!(&b.events, &s.events);
        prop_assert_eq!(tables(&b.names), tables(&s.names));
        // Binary → binary is the identity on bytes once normalised.
        prop_assert_eq!(to_bin(&mut u.source()).unwrap(), bytes);
    }

    /// The generator's traces (from_actions) survive both formats unchanged by name.
    #[test]
    fn from_actions_round_trip(actions in proptest::collection::vec((0u8..4, 0u8..12, 0u8..4), 0..30)) {
        let t = racepred::gen::from_actions(3, 3, 2, &actions);
        let u = read_std(to_std(&mut t.source()).unwrap().as_bytes());
        prop_assert_eq!(resolved(&u), resolved(&t));
        let b = read_bin(&to_bin(&mut t.source()).unwrap());
        prop_assert_eq!(&b.events, &u.events);
        prop_assert_eq!(tables(&b.names), tables(&u.names));
    }
}

// -----------------------------------------------------------------------------------------
// Never panic: arbitrary bytes and damaged valid inputs
// -----------------------------------------------------------------------------------------

/// Runs every reader (and sniffing) over `bytes`; returns the binary reader's result.
fn all_readers(bytes: &[u8]) -> racepred::Result<u64> {
    let _ = drain(&mut StdReader::new(bytes));
    let _ = drain(&mut RrReader::new(bytes));
    let _ = drain(&mut CsvReader::new(bytes));
    let _ = drain(&mut GoLogReader::new(bytes));
    let _ = sniff(bytes);
    if let Ok(mut s) = open_reader(std::io::Cursor::new(bytes.to_vec()), None) {
        let _ = drain(&mut *s);
    }
    BinaryReader::from_buf_read(bytes).and_then(|mut r| drain(&mut r))
}

/// Valid inputs in every format, to damage.
fn valid_inputs() -> &'static [Vec<u8>] {
    static INPUTS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    INPUTS.get_or_init(make_valid_inputs)
}

fn make_valid_inputs() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = [
        "golden.std",
        "golden.rr",
        "golden.csv",
        "golden.golog",
        "golden.rpb",
    ]
    .iter()
    .map(|n| read_fixture(n))
    .collect();
    let t = racepred::gen::Generator::trace(racepred::gen::GenConfig {
        events: 200,
        volatile: 0.1,
        ..Default::default()
    });
    v.push(to_bin(&mut t.source()).unwrap());
    v
}

#[derive(Clone, Debug)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(mut b: Vec<u8>, muts: &[Mutation]) -> Vec<u8> {
    for m in muts {
        let n = b.len().max(1);
        match *m {
            Mutation::Flip(i, x) if !b.is_empty() => b[i % n] ^= x | 1,
            Mutation::Insert(i, x) => b.insert(i % (b.len() + 1), x),
            Mutation::Delete(i) if !b.is_empty() => {
                b.remove(i % n);
            }
            Mutation::Truncate(i) => b.truncate(i % (b.len() + 1)),
            _ => {}
        }
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn readers_never_panic_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = all_readers(&bytes);
        // Also behind a valid binary header.
        let mut b = b"RACEPRED\x01\0\0\0\0\0\0\0".to_vec();
        b.extend_from_slice(&bytes);
        let _ = all_readers(&b);
    }

    #[test]
    fn readers_never_panic_on_damaged_input(
        which in 0usize..6,
        muts in proptest::collection::vec(mutation(), 1..4),
    ) {
        let inputs = valid_inputs();
        let b = apply(inputs[which].clone(), &muts);
        let _ = all_readers(&b);
    }

    /// Cutting a binary trace anywhere is reported as truncation.
    #[test]
    fn binary_truncation_is_detected(cut in any::<usize>()) {
        let inputs = valid_inputs();
        let full = &inputs[5];
        let cut = cut % full.len();
        let e = BinaryReader::from_buf_read(&full[..cut])
            .and_then(|mut r| drain(&mut r))
            .unwrap_err();
        prop_assert!(matches!(e.kind(), ErrorKind::Truncated(_)), "{}", e);
        prop_assert!(e.to_string().contains("byte "), "{}", e);
    }
}

// -----------------------------------------------------------------------------------------
// Malformed input: the message names the file and line (or byte) and what is wrong
// -----------------------------------------------------------------------------------------

/// Writes `content` to a scratch file and reads it in `format`; returns the error message.
fn error_of(file: &str, content: &[u8], format: Option<Format>) -> String {
    let path = scratch().join(file);
    std::fs::write(&path, content).unwrap();
    let r = open_with(&path, format).and_then(|mut s| drain(&mut *s));
    let e = r.expect_err("malformed input must be an error");
    let msg = e.to_string();
    let prefix = format!("{}:", path.display());
    assert!(
        msg.starts_with(&prefix),
        "{msg:?} does not start with {prefix:?}"
    );
    msg[prefix.len()..].to_string()
}

#[track_caller]
fn assert_error(file: &str, content: &[u8], format: Option<Format>, want: &[&str]) {
    let msg = error_of(file, content, format);
    for w in want {
        assert!(msg.contains(w), "{file}: {msg:?} lacks {w:?}");
    }
}

/// Each `(line, message)`: `file` holding `before`, `line` and a newline fails at line
/// `at` (`before` has `at - 1` lines) with an error containing `message`.
fn assert_line_errors(file: &str, before: &str, at: u64, cases: &[(&str, &str)]) {
    let prefix = format!("{at}: ");
    for (line, want) in cases {
        let content = format!("{before}{line}\n");
        assert_error(file, content.as_bytes(), None, &[&prefix, want]);
    }
}

#[test]
fn malformed_std() {
    assert_error(
        "a.std",
        b"T0|w(V)|1\nT0|r(V)\n",
        None,
        &["2: ", "missing location"],
    );
    assert_error(
        "b.std",
        b"T0|w(V)|1\n\nT0|frob(V)|1\n",
        None,
        &["3: ", "unknown operation `frob`"],
    );
    assert_error(
        "c.std",
        b"T0|w()|1\n",
        None,
        &["1: ", "empty variable name"],
    );
    assert_error("d.std", b"T0|w(\xff)|1\n", None, &["1: ", "UTF-8"]);
}

#[test]
fn malformed_rr() {
    let h = "[RR: banner]\n@ Acquire(1,l)\n";
    assert_line_errors(
        "t.rr",
        h,
        3,
        &[
            ("@ Rd(1,x)", "needs a location"),
            ("@ Rd(1,x) Final", "needs a location"),
            ("@ Frob(1,x) a b", "unknown operation `Frob`"),
            ("@ Rd(1) a b", "found one"),
            ("@ Rd(1,x,y) a b", "found more"),
            ("@ Rd(1,x a b", "no closing"),
            ("@ Rd(,x) a b", "empty thread name"),
            ("@ Rd(1,) a b", "empty variable name"),
            ("@Rd(1,x) a b", "whitespace after `@`"),
        ],
    );
    assert_error("u.rr", b"@ Rd(1,x) a \xff\xfe\n", None, &["1: ", "UTF-8"]);
}

#[test]
fn malformed_csv() {
    assert_line_errors(
        "t.csv",
        "T0,T1\nw(x),\n",
        3,
        &[
            ("w(x),r(y)", "more than one non-empty column"),
            (",frob(x)", "unknown operation `frob`"),
            (",w(x", "without a closing"),
            (",w()", "empty variable name"),
            (",w(a b)", "whitespace"),
            ("x", "expected `OP(TARGET)`"),
        ],
    );
    assert_error("u.csv", b"w(\xff),\n", None, &["1: ", "UTF-8"]);
}

#[test]
fn malformed_golog() {
    assert_line_errors(
        "t.golog",
        "1,LK,m,nil,0\n",
        2,
        &[
            ("1,WR,x,l", "5 comma-separated fields"),
            ("1,WR,x,l,2,3", "found more"),
            ("1,XX,x,l,2", "unknown operation `XX`"),
            ("1,WR,x,l,-2", "not a decimal"),
            ("z:1,WR,x,l,2", "event number"),
            ("1,WR,,l,2", "empty variable name"),
            ("1,LK,,l,2", "empty lock name"),
            ("1,WR,x,,2", "empty location name"),
            ("STUCK", "found 1"),
        ],
    );
    assert_error("u.golog", b"1,WR,\xff,l,2\n", None, &["1: ", "UTF-8"]);
}

#[test]
fn malformed_binary() {
    let good = read_fixture("golden.rpb");
    // Truncated: within the header, a record, and before the end record.
    for cut in [4, 12, 20, good.len() - 16, good.len() - 1] {
        assert_error("t.rpb", &good[..cut], None, &["byte ", "truncated"]);
    }
    // Bad header: magic (explicit format), version, flags.
    assert_error(
        "m.rpb",
        b"RACEPREX\x01\0\0\0\0\0\0\0",
        Some(Format::Binary),
        &[" byte 0: ", "bad header", "magic"],
    );
    let mut b = good.clone();
    b[8] = 3;
    assert_error(
        "v.rpb",
        &b,
        None,
        &[" byte 8: ", "bad header", "unsupported version 3"],
    );
    let mut b = good.clone();
    b[10] = 1;
    assert_error("f.rpb", &b, None, &["bad header", "flags"]);
    // Garbage record tag right after the header.
    let mut b = good.clone();
    b[16] = b'?';
    assert_error("g.rpb", &b, None, &[" byte 16: ", "unknown record tag"]);
    // Data after the end record.
    let mut b = good.clone();
    b.push(0);
    assert_error("x.rpb", &b, None, &["data after the end record"]);
    // An event with a bad operation code / undefined id (built by hand).
    let mut b = b"RACEPRED\x01\0\0\0\0\0\0\0".to_vec();
    b.extend_from_slice(&[b'N', 0, 2, 0, 0, 0, b'T', b'0']); // thread T0
    b.extend_from_slice(&[b'N', 1, 1, 0, 0, 0, b'x']); // var x
    b.extend_from_slice(&[b'E', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
    b.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 1, 0, 0, 0]); // w(x)
    let ok_len = b.len();
    b.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 99, 0, 0, 0]);
    b.extend_from_slice(&[b'Z', 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
    assert_error(
        "o.rpb",
        &b,
        None,
        &[&format!(" byte {}: ", ok_len), "unknown operation code 99"],
    );
    b[ok_len + 12] = 1;
    b[ok_len + 4] = 7;
    assert_error("i.rpb", &b, None, &["variable id 7 of `w` is not defined"]);
    b[ok_len + 4] = 0;
    b[ok_len + 8] = 0;
    assert_error("l.rpb", &b, None, &["location id"]);
    // Empty and non-UTF-8 names.
    let mut b = b"RACEPRED\x01\0\0\0\0\0\0\0".to_vec();
    b.extend_from_slice(&[b'N', 0, 0, 0, 0, 0]);
    assert_error("e.rpb", &b, None, &[" byte 16: ", "empty thread name"]);
    let mut b = b"RACEPRED\x01\0\0\0\0\0\0\0".to_vec();
    b.extend_from_slice(&[b'N', 0, 1, 0, 0, 0, 0xff]);
    assert_error("u.rpb", &b, None, &["UTF-8"]);
}

#[test]
fn unknown_format_is_an_error() {
    let msg = error_of("t.data", b"hello world\n", None);
    assert!(msg.contains("cannot tell the trace format"), "{msg}");
}

// -----------------------------------------------------------------------------------------
// Compression and files
// -----------------------------------------------------------------------------------------

#[cfg(feature = "compress")]
fn compress(data: &[u8], ext: &str) -> Vec<u8> {
    use std::io::Write;
    match ext {
        "gz" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "xz" => {
            let mut e = xz2::write::XzEncoder::new(Vec::new(), 1);
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "zst" => zstd::encode_all(data, 1).unwrap(),
        _ => unreachable!(),
    }
}

#[cfg(feature = "compress")]
#[test]
fn compressed_inputs_by_extension_and_by_content() {
    for input in [
        "golden.std",
        "golden.rr",
        "golden.csv",
        "golden.golog",
        "golden.rpb",
    ] {
        let plain = read_fixture(input);
        let expected = to_std(&mut *open(&fixture(input)).unwrap()).unwrap();
        for ext in ["gz", "xz", "zst"] {
            let packed = compress(&plain, ext);
            // By extension: `golden.csv.gz`.
            let p = scratch().join(format!("{input}.{ext}"));
            std::fs::write(&p, &packed).unwrap();
            assert_eq!(to_std(&mut *open(&p).unwrap()).unwrap(), expected, "{p:?}");
            // By content: no telling extension at all.
            let p = scratch().join(format!("{input}-{ext}.data"));
            std::fs::write(&p, &packed).unwrap();
            assert_eq!(to_std(&mut *open(&p).unwrap()).unwrap(), expected, "{p:?}");
        }
    }
}

#[cfg(feature = "compress")]
#[test]
fn create_writes_compressed_files_that_read_back() {
    let t = racepred::gen::Generator::trace(racepred::gen::GenConfig {
        events: 5000,
        ..Default::default()
    });
    let want = resolved(&t);
    for (name, format) in [
        ("w.std", Format::Std),
        ("w.std.gz", Format::Std),
        ("w.std.xz", Format::Std),
        ("w.std.zst", Format::Std),
        ("w.rpb", Format::Binary),
        ("w.rpb.gz", Format::Binary),
        ("w.rpb.xz", Format::Binary),
        ("w.rpb.zst", Format::Binary),
    ] {
        let p = scratch().join(name);
        let mut w = racepred::trace::write::create(&p, format).unwrap();
        assert_eq!(copy(&mut t.source(), &mut *w).unwrap(), 5000);
        w.finish().unwrap();
        let mut head = [0u8; 6];
        std::fs::File::open(&p)
            .unwrap()
            .read_exact(&mut head)
            .unwrap();
        let compressed = racepred::trace::open::Compression::sniff(&head).is_some();
        assert_eq!(
            compressed,
            !name.ends_with(".std") && !name.ends_with(".rpb"),
            "{name}"
        );
        let u = Trace::read_from(&mut *open(&p).unwrap()).unwrap();
        assert_eq!(resolved(&u), want, "{name}");
    }
    // Every format read is written too (round trips in `trace::write_formats`);
    // a writer that is not finished leaves no file.
    let p = scratch().join("x.csv");
    let w = racepred::trace::write::create(&p, Format::Csv).unwrap();
    drop(w);
    assert!(!p.exists());
}

#[test]
fn std_writer_refuses_names_it_cannot_write() {
    for (kind, bad) in [
        (NameKind::Thread, "a|b"),
        (NameKind::Thread, "#x"),
        (NameKind::Thread, " x"),
        (NameKind::Var, "x;y"),
        (NameKind::Loc, "l\nm"),
        (NameKind::Loc, "-"),
    ] {
        let mut names = Names::new();
        names.threads.intern(b"T");
        names.vars.intern(b"V");
        names.locs.intern(b"1");
        let id = names.table_mut(kind).intern(bad.as_bytes());
        let mut ev = Event::new(ThreadId(0), Op::Write, 0, LocId(0));
        match kind {
            NameKind::Thread => ev.thread = ThreadId(id),
            NameKind::Var => ev.target = id,
            _ => ev.loc = LocId(id),
        }
        let mut w = StdWriter::new(Vec::new());
        let e = TraceWriter::write_event(&mut w, &ev, &names, Default::default()).unwrap_err();
        assert!(
            e.to_string().contains("cannot be written in STD"),
            "{bad:?}: {e}"
        );
    }
}
