//! Writers for the formats racepred reads from other tools: RoadRunner logs, RAPID CSV and
//! the SSHB Go-tool logs. Each writes what its reader (`rr.rs`, `csv.rs`, `golog.rs`) reads
//! back as the same events with the same names, within what the format can say:
//!
//! | format | line written | what it cannot say (an error naming the event, unless noted) |
//! |---|---|---|
//! | RoadRunner | `@ Rd(1,x) - LOC`, `@ Acquire(1,l)`, `@ Start(0,1)`, `@ Enter(1,m)` | `vr`, `vw`, `sig`, `wait`, `mbegin`, `mend`; `begin`/`end` without a method |
//! | RAPID CSV | `,,w(x)` (the column is the thread) | those, and `sig`, `wait`; locations (not an error: they are dropped, and the reader gives CSV events none) |
//! | Go-tool log | `1,WR,x,LOC,NUM` | everything but `acq`, `rel`, `r`, `w`, `sig`, `wait` |
//!
//! Threads are numbers in all three (RoadRunner's and the Go tool's thread ids, CSV's
//! columns, which the CSV reader names `T0`, `T1`, …). A thread whose name already is such a
//! number (`7`, or `T7` for CSV) keeps it; any other thread is written as its index in the
//! source's thread table (the first thread seen is 0). Two threads that would get the same
//! number are an error, never merged. An event without location is written with location
//! `-` (as the STD writer does), so a location named `-` is an error. The Go-tool log's
//! last field is the source's global access number when it has one, else the event's
//! 1-based index. Names a format cannot hold (containing its separators or whitespace,
//! surrounding whitespace) are rejected with an error naming the name.

use std::collections::HashMap;
use std::io::Write;

use super::{Event, NameKind, Names, Op};
use crate::error::{Error, Result};

/// Which of the three formats a [`FormatWriter`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextFormat {
    Rr,
    Csv,
    GoLog,
}

impl TextFormat {
    fn name(self) -> &'static str {
        match self {
            TextFormat::Rr => "RoadRunner",
            TextFormat::Csv => "RAPID CSV",
            TextFormat::GoLog => "Go-log",
        }
    }

    /// The prefix before a thread's number in its name (`T` for CSV).
    fn thread_prefix(self) -> &'static str {
        match self {
            TextFormat::Csv => "T",
            _ => "",
        }
    }

    /// The format's name for `op`, if it has one.
    fn op_name(self, op: Op) -> Option<&'static str> {
        Some(match (self, op) {
            (TextFormat::Rr, Op::Acquire) => "Acquire",
            (TextFormat::Rr, Op::Release) => "Release",
            (TextFormat::Rr, Op::Read) => "Rd",
            (TextFormat::Rr, Op::Write) => "Wr",
            (TextFormat::Rr, Op::Fork) => "Start",
            (TextFormat::Rr, Op::Join) => "Join",
            (TextFormat::Rr, Op::Begin) => "Enter",
            (TextFormat::Rr, Op::End) => "Exit",
            (TextFormat::Csv, Op::Acquire) => "acq",
            (TextFormat::Csv, Op::Release) => "rel",
            (TextFormat::Csv, Op::Read) => "r",
            (TextFormat::Csv, Op::Write) => "w",
            (TextFormat::Csv, Op::Fork) => "start",
            (TextFormat::Csv, Op::Join) => "join",
            (TextFormat::Csv, Op::Begin) => "enter",
            (TextFormat::Csv, Op::End) => "exit",
            (TextFormat::GoLog, Op::Acquire) => "LK",
            (TextFormat::GoLog, Op::Release) => "UK",
            (TextFormat::GoLog, Op::Read) => "RD",
            (TextFormat::GoLog, Op::Write) => "WR",
            (TextFormat::GoLog, Op::Signal) => "SIG",
            (TextFormat::GoLog, Op::Wait) => "WT",
            _ => return None,
        })
    }
}

/// Highest CSV column (thread number) written: a row is as long as its column number.
const MAX_CSV_COLUMN: u64 = 1 << 16;

/// Thread numbers for formats whose threads are numbers (see the module header).
#[derive(Default)]
struct ThreadNumbers {
    /// Per source thread id: its number, once assigned.
    of: Vec<Option<u64>>,
    /// Number → source thread id that has it.
    owner: HashMap<u64, u32>,
}

impl ThreadNumbers {
    #[inline]
    fn get(&mut self, names: &Names, id: u32, fmt: TextFormat) -> Result<u64> {
        if let Some(Some(n)) = self.of.get(id as usize) {
            return Ok(*n);
        }
        self.assign(names, id, fmt)
    }

    #[cold]
    #[inline(never)]
    fn assign(&mut self, names: &Names, id: u32, fmt: TextFormat) -> Result<u64> {
        let table = names.table(NameKind::Thread);
        if (id as usize) >= table.len() {
            return Err(Error::invalid(format!(
                "event refers to thread id {id}, but the source has only {} threads",
                table.len()
            )));
        }
        let name = table.name(id);
        let n = name
            .strip_prefix(fmt.thread_prefix())
            .and_then(|d| super::lines::parse_decimal(d.as_bytes()))
            .unwrap_or(id as u64);
        if let Some(&other) = self.owner.get(&n) {
            if other != id {
                return Err(Error::invalid(format!(
                    "threads {:?} and {:?} would both be written as thread {n} in {}",
                    super::lines::show(table.name(other).as_bytes()),
                    super::lines::show(name.as_bytes()),
                    fmt.name()
                )));
            }
        }
        self.owner.insert(n, id);
        if self.of.len() <= id as usize {
            self.of.resize(id as usize + 1, None);
        }
        self.of[id as usize] = Some(n);
        Ok(n)
    }
}

/// Writer of RoadRunner logs, RAPID CSV or Go-tool logs (see the module header).
pub struct FormatWriter<W: Write> {
    out: W,
    fmt: TextFormat,
    line: Vec<u8>,
    threads: ThreadNumbers,
    /// Per name table: which ids have had their name checked.
    checked: [Vec<bool>; 7],
    /// Events written so far.
    count: u64,
}

impl<W: Write> FormatWriter<W> {
    pub fn new(out: W, fmt: TextFormat) -> Self {
        FormatWriter {
            out,
            fmt,
            line: Vec::with_capacity(256),
            threads: ThreadNumbers::default(),
            checked: Default::default(),
            count: 0,
        }
    }

    /// The name of `id` in table `kind`, checked to be writable in this format.
    fn name<'n>(&mut self, names: &'n Names, kind: NameKind, id: u32) -> Result<&'n str> {
        let fmt = self.fmt;
        super::writer::checked_name(&mut self.checked, names, kind, id, |n| {
            check_name(n, kind, fmt)
        })
    }

    /// Appends one event as a line; `seq` is its global access number if the source has one.
    pub fn write_event(&mut self, ev: &Event, names: &Names, seq: Option<u64>) -> Result<()> {
        let fmt = self.fmt;
        let Some(opname) = fmt.op_name(ev.op) else {
            return Err(Error::invalid(format!(
                "{} traces have no `{}` events",
                fmt.name(),
                ev.op.std_name()
            )));
        };
        if ev.target == u32::MAX {
            return Err(Error::invalid(format!(
                "`{}` without a target cannot be written in {}",
                ev.op.std_name(),
                fmt.name()
            )));
        }
        let thread = self.threads.get(names, ev.thread.0, fmt)?;
        let target_is_thread = ev.op.target_kind() == NameKind::Thread;
        let target_num = if target_is_thread {
            Some(self.threads.get(names, ev.target, fmt)?)
        } else {
            None
        };
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        let r = (|| {
            let target = match target_num {
                Some(_) => "",
                None => self.name(names, ev.op.target_kind(), ev.target)?,
            };
            let loc = if ev.loc.is_none() {
                "-"
            } else {
                self.name(names, NameKind::Loc, ev.loc.0)?
            };
            match fmt {
                TextFormat::Rr => {
                    write!(line, "@ {opname}({thread},")?;
                    match target_num {
                        Some(n) => write!(line, "{n}")?,
                        None => line.extend_from_slice(target.as_bytes()),
                    }
                    line.push(b')');
                    if !ev.loc.is_none() || ev.op.is_access() {
                        // RoadRunner's annotation field (ignored by the reader), then the location.
                        write!(line, " - {loc}")?;
                    }
                }
                TextFormat::Csv => {
                    if thread > MAX_CSV_COLUMN {
                        return Err(Error::invalid(format!(
                            "thread {thread} would be CSV column {thread}; rows wider than \
                             {MAX_CSV_COLUMN} columns are not written"
                        )));
                    }
                    line.resize(thread as usize, b',');
                    write!(line, "{opname}(")?;
                    match target_num {
                        Some(n) => write!(line, "T{n}")?,
                        None => line.extend_from_slice(target.as_bytes()),
                    }
                    line.push(b')');
                }
                TextFormat::GoLog => {
                    let num = seq.unwrap_or(self.count + 1);
                    write!(line, "{thread},{opname},{target},{loc},{num}")?;
                }
            }
            line.push(b'\n');
            self.out.write_all(&line)?;
            Ok(())
        })();
        self.line = line;
        self.count += 1;
        r
    }

    /// Flushes and returns the output.
    pub fn finish(mut self) -> Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Checks that the format's reader reads `name` back unchanged.
#[cold]
#[inline(never)]
fn check_name(name: &str, kind: NameKind, fmt: TextFormat) -> Result<()> {
    let what = super::binary::kind_what(kind);
    let fail = |why: &str| {
        Err(Error::invalid(format!(
            "{what} name {:?} cannot be written in {}: {why}",
            super::lines::show(name.as_bytes()),
            fmt.name()
        )))
    };
    let b = name.as_bytes();
    if b.is_empty() {
        return fail("it is empty");
    }
    if b.iter().any(|&c| c == b'\n' || c == b'\r' || c == 0) {
        return fail("it contains a line break or a NUL byte");
    }
    if kind == NameKind::Loc && b == b"-" {
        return fail("`-` reads back as no location");
    }
    match fmt {
        // Tokens end at whitespace; the target ends the call `(THREAD,TARGET)`.
        TextFormat::Rr | TextFormat::Csv if b.iter().any(u8::is_ascii_whitespace) => {
            fail("it contains whitespace")
        }
        TextFormat::Rr | TextFormat::Csv if kind != NameKind::Loc && b.contains(&b',') => {
            fail("it contains `,`")
        }
        TextFormat::GoLog if b.contains(&b',') => fail("it contains `,`"),
        TextFormat::GoLog
            if b.first().is_some_and(u8::is_ascii_whitespace)
                || b.last().is_some_and(u8::is_ascii_whitespace) =>
        {
            fail("it starts or ends with whitespace")
        }
        _ => Ok(()),
    }
}

impl<W: Write> super::writer::TraceWriter for FormatWriter<W> {
    fn write_event(
        &mut self,
        ev: &Event,
        names: &Names,
        x: super::writer::Extras<'_>,
    ) -> Result<()> {
        FormatWriter::write_event(self, ev, names, x.seq)
    }
    fn finish(self: Box<Self>) -> Result<()> {
        FormatWriter::finish(*self).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::csv::CsvReader;
    use crate::trace::golog::GoLogReader;
    use crate::trace::rr::RrReader;
    use crate::trace::std_format::StdReader;
    use crate::trace::writer::copy;
    use crate::trace::{EventSource, Trace};

    fn std(text: &str) -> Trace {
        Trace::read_from(&mut StdReader::new(text.as_bytes())).unwrap()
    }

    fn write(t: &Trace, fmt: TextFormat) -> Result<String> {
        let mut w = FormatWriter::new(Vec::new(), fmt);
        copy(&mut t.source(), &mut w)?;
        Ok(String::from_utf8(w.finish()?).unwrap())
    }

    fn read(text: &str, fmt: TextFormat) -> Trace {
        let mut src: Box<dyn EventSource> = match fmt {
            TextFormat::Rr => Box::new(RrReader::new(text.as_bytes())),
            TextFormat::Csv => Box::new(CsvReader::new(text.as_bytes())),
            TextFormat::GoLog => Box::new(GoLogReader::new(text.as_bytes())),
        };
        Trace::read_from(&mut *src).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    /// Each event as (thread name, op, target name, location name).
    fn named(t: &Trace) -> Vec<(String, Op, String, String)> {
        t.events
            .iter()
            .map(|e| {
                let target = if e.target == u32::MAX {
                    String::new()
                } else {
                    t.names.table(e.op.target_kind()).name(e.target).to_string()
                };
                let loc = if e.loc.is_none() {
                    "-".to_string()
                } else {
                    t.names.loc(e.loc).to_string()
                };
                (t.names.thread(e.thread).to_string(), e.op, target, loc)
            })
            .collect()
    }

    fn without_locs(v: Vec<(String, Op, String, String)>) -> Vec<(String, Op, String)> {
        v.into_iter().map(|(a, b, c, _)| (a, b, c)).collect()
    }

    #[test]
    fn rr_round_trip_keeps_events_and_names() {
        let t = std(
            "0|fork(1)|Main.java:3:1\n1|acq(@03)|4\n1|w(test/D.value_I)|D.java:41:9\n1|rel(@03)|5\n1|begin(test/D.m()V)|6\n1|r([I@1b6d)|D.java:50:7\n1|end(test/D.m()V)|7\n0|r(x)|-\n0|join(1)|8\n",
        );
        let text = write(&t, TextFormat::Rr).unwrap();
        assert!(text.starts_with("@ Start(0,1) - Main.java:3:1\n"), "{text}");
        let back = read(&text, TextFormat::Rr);
        assert_eq!(named(&back), named(&t));
        // And back out again: the same text.
        assert_eq!(write(&back, TextFormat::Rr).unwrap(), text);
    }

    #[test]
    fn csv_round_trip_keeps_events_and_names() {
        let t = std("T0|fork(T1)|1\nT1|acq(l)|2\nT1|w(x)|3\nT1|rel(l)|4\nT2|begin(m)|5\nT2|r(x)|6\nT2|end(m)|7\nT0|join(T1)|8\n");
        let text = write(&t, TextFormat::Csv).unwrap();
        assert!(text.starts_with("start(T1)\n,acq(l)\n"), "{text}");
        let back = read(&text, TextFormat::Csv);
        assert_eq!(without_locs(named(&back)), without_locs(named(&t)));
        assert_eq!(write(&back, TextFormat::Csv).unwrap(), text);
    }

    #[test]
    fn golog_round_trip_keeps_events_names_and_numbers() {
        let text = "24,LK,633,nil,2773\n1,WR,2657,JkMain.java:339:237,1423414\n24,RD,2657,T.java:1:2,1423415\n24,UK,633,nil,0\n3,SIG,c,x.go:1,5\n4,WT,c,x.go:2,6\n";
        let t = read(text, TextFormat::GoLog);
        assert_eq!(write(&t, TextFormat::GoLog).unwrap(), text);
        let t = std("5|acq(l)|1\n5|w(x)|2\n7|r(x)|3\n5|rel(l)|4\n");
        let text = write(&t, TextFormat::GoLog).unwrap();
        assert_eq!(text, "5,LK,l,1,1\n5,WR,x,2,2\n7,RD,x,3,3\n5,UK,l,4,4\n");
        assert_eq!(named(&read(&text, TextFormat::GoLog)), named(&t));
    }

    /// Generated traces through each format and back: the same events, threads renamed
    /// only from `T7` to `7` (RoadRunner, Go logs), locations only lost in CSV.
    #[test]
    fn generated_traces_round_trip() {
        use crate::gen::{GenConfig, Generator};
        let norm = |v: Vec<(String, Op, String, String)>, fork_targets: bool, locs: bool| {
            v.into_iter()
                .map(|(t, op, target, loc)| {
                    let t = t.trim_start_matches('T').to_string();
                    let target = if fork_targets && matches!(op, Op::Fork | Op::Join) {
                        target.trim_start_matches('T').to_string()
                    } else {
                        target
                    };
                    (t, op, target, if locs { loc } else { String::new() })
                })
                .collect::<Vec<_>>()
        };
        for seed in 0..20 {
            for fmt in [TextFormat::Rr, TextFormat::Csv, TextFormat::GoLog] {
                let t = Generator::trace(GenConfig {
                    events: 300,
                    threads: 1 + seed as u32 % 5,
                    locks: seed as u32 % 3,
                    fork_join: fmt != TextFormat::GoLog,
                    seed,
                    ..GenConfig::default()
                });
                let text = write(&t, fmt).unwrap();
                let back = read(&text, fmt);
                assert_eq!(back.len(), t.len(), "{fmt:?} seed {seed}");
                let locs = fmt != TextFormat::Csv;
                assert_eq!(
                    norm(named(&back), true, locs),
                    norm(named(&t), true, locs),
                    "{fmt:?} seed {seed}"
                );
                if fmt == TextFormat::Csv {
                    // CSV keeps `T<n>` names as they are.
                    assert_eq!(without_locs(named(&back)), without_locs(named(&t)));
                }
            }
        }
    }

    #[test]
    fn thread_names_that_are_not_numbers_are_numbered() {
        let t = std("main|w(x)|1\nworker|w(x)|2\n");
        assert_eq!(
            write(&t, TextFormat::GoLog).unwrap(),
            "0,WR,x,1,1\n1,WR,x,2,2\n"
        );
        let t = std("main|w(x)|1\n0|w(x)|2\n");
        let e = write(&t, TextFormat::Rr).unwrap_err().to_string();
        assert!(
            e.contains("\"main\" and \"0\" would both be written as thread 0"),
            "{e}"
        );
    }

    #[test]
    fn what_a_format_cannot_say_is_an_error() {
        for (text, fmt, want) in [
            ("T0|vw(x)|1\n", TextFormat::Rr, "no `vw` events"),
            ("T0|fork(T1)|1\n", TextFormat::GoLog, "no `fork` events"),
            ("T0|sig(c)|1\n", TextFormat::Csv, "no `sig` events"),
            ("T0|begin|1\n", TextFormat::Rr, "without a target"),
            ("T0|w(a b)|1\n", TextFormat::Rr, "contains whitespace"),
            ("T0|w(a,b)|1\n", TextFormat::Csv, "contains `,`"),
            ("T0|w(x)|a,b\n", TextFormat::GoLog, "contains `,`"),
            (
                "T18446744073709551615|w(x)|1\n",
                TextFormat::Csv,
                "rows wider than 65536 columns",
            ),
        ] {
            let e = write(&std(text), fmt).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?} {fmt:?}: {e}");
        }
        // A location named `-` (no reader makes one; a library user may): it would read
        // back as no location.
        let mut t = std("0|w(x)|1\n");
        t.names.locs = Default::default();
        t.events[0].loc = crate::trace::LocId(t.names.locs.intern(b"-"));
        for fmt in [TextFormat::Rr, TextFormat::GoLog] {
            let e = write(&t, fmt).unwrap_err().to_string();
            assert!(e.contains("`-` reads back as no location"), "{fmt:?}: {e}");
        }
    }
}
