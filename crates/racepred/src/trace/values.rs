//! Value-level traces: the STD extension of RECIPE (`papers/recipe-relaxed-sound.txt` §II–IV).
//!
//! A value trace is an STD trace whose events may carry values:
//!
//! ```text
//! T1|w(x)=1|2            write the value of an expression
//! T2|r(y)->a=5|4         read y into register a; 5 is the value observed
//! T2|let(b=a*2+1)|5      local computation into register b
//! T2|br(a>2)|4           a branch whose condition held (br(!(a>2)) if it did not)
//! T2|w(x)=b|6            expressions over the thread's registers and i64 constants
//! T2|alt(4)|r(x)->c|7    a line of the alternative path of T2's branch at location 4
//! ```
//!
//! Expressions: i64 constants, register names, `+ - * / % & | ^ << >>`, comparisons
//! `< <= > >= == !=`, `&& || !`, unary `-` and parentheses, with C precedence. Arithmetic
//! wraps (two's complement, as the SMT encoding's 64-bit vectors); `x / 0` and `x % 0` are 0;
//! shift amounts are taken modulo 64; comparisons and logical operators give 0 or 1, and a
//! condition holds when it is not 0. Registers are local to their thread.
//!
//! `alt(L)` lines are not events of the trace: they are the path the thread would have taken
//! had its latest earlier branch at location `L` gone the other way (RECIPE §IV; the paper
//! obtains them by symbolic execution, a value trace carries them). Reads on an alternative
//! path may omit the observed value (`r(x)->c`), since they were never executed.
//!
//! A plain STD trace is a value trace without values: a read without a register keeps, for
//! the SMT analyses, the write it read from in the trace, as if a branch needed its value.
//! The streaming readers accept the extension and drop the values (every analysis but the
//! SMT predictor ignores them); [`ValueTrace::parse`] keeps them.

use std::fmt::Write as _;

use super::expr::parse_ann;
pub use super::expr::{parse_expr, Ann, BinOp, Expr, UnOp};
use super::lines::is_skippable;
use super::std_format::parse_line;
use super::{Event, Interner, Names, Op, Trace};
use crate::error::{Error, Position, Result};

/// The alternative path of one recorded branch (RECIPE §IV).
#[derive(Clone, Debug, Default)]
pub struct AltPath {
    /// Index of the branch event in the trace.
    pub branch: usize,
    pub events: Vec<Event>,
    pub anns: Vec<Ann>,
    /// Line of each alternative event in the file.
    pub lines: Vec<u64>,
}

/// A value trace in memory: the events (as any reader gives them), their values and the
/// alternative paths of their branches.
#[derive(Clone, Debug, Default)]
pub struct ValueTrace {
    pub trace: Trace,
    /// One per event of `trace`, or empty when no event has a value (use [`ValueTrace::ann`]).
    pub anns: Vec<Ann>,
    /// Register names.
    pub regs: Interner,
    /// Alternative paths, sorted by branch index, at most one per branch.
    pub alts: Vec<AltPath>,
}

impl ValueTrace {
    /// A plain trace as a value trace without values.
    pub fn from_trace(trace: Trace) -> ValueTrace {
        ValueTrace {
            trace,
            anns: Vec::new(),
            regs: Interner::default(),
            alts: Vec::new(),
        }
    }

    /// The value part of event `i`.
    #[inline]
    pub fn ann(&self, i: usize) -> &Ann {
        static NONE: Ann = Ann::None;
        self.anns.get(i).unwrap_or(&NONE)
    }

    /// Appends `ev` (value part `ann`, source line `line`) to the alternative path of the
    /// branch at index `branch`: the last path if it is that branch's, else a new one.
    /// False, appending nothing, if the branch has a path before the last one (a path is
    /// one run of lines).
    fn push_alt(&mut self, branch: usize, ev: Event, ann: Ann, line: u64) -> bool {
        if self.alts.last().is_none_or(|a| a.branch != branch) {
            if self.alts.iter().any(|a| a.branch == branch) {
                return false;
            }
            self.alts.push(AltPath {
                branch,
                ..AltPath::default()
            });
        }
        let a = self.alts.last_mut().expect("pushed above");
        a.events.push(ev);
        a.anns.push(ann);
        a.lines.push(line);
        true
    }

    /// True when some event carries a value or a branch has an alternative path.
    pub fn has_values(&self) -> bool {
        !self.alts.is_empty() || self.anns.iter().any(|a| *a != Ann::None)
    }

    /// Parses STD text with the value extension. Errors name the line.
    pub fn parse(text: &[u8]) -> Result<ValueTrace> {
        ValueTrace::read(text)
    }

    /// Reads STD text with the value extension as a stream (memory grows with the events,
    /// not with the text). Errors name the line.
    pub fn read<R: std::io::Read>(rdr: R) -> Result<ValueTrace> {
        ValueTrace::read_lines(super::lines::LineReader::new(rdr))
    }

    /// As [`ValueTrace::read`], from an already buffered reader (e.g. a decompressor).
    pub fn read_buffered<R: std::io::BufRead>(rdr: R) -> Result<ValueTrace> {
        ValueTrace::read_lines(super::lines::LineReader::from_buf_read(rdr))
    }

    /// Reads a trace file (`-`: standard input) with its values, opened as every other
    /// reader opens it ([`open_opts`](super::open_opts): decompression, `opts.mmap`, the
    /// format from `opts`, the name or the content): STD text and binary traces keep their
    /// values, with lines up to `opts.max_line` bytes; the other formats have none. Errors
    /// carry the path.
    pub fn open(path: &std::path::Path, opts: &super::ReadOptions) -> Result<ValueTrace> {
        use super::open::{format_of, open_plain, PlainInput};
        use super::Format;
        let mut opts = opts.clone();
        opts.format = opts.format.or_else(|| Format::from_path(path));
        let read = || -> Result<ValueTrace> {
            let mut input = PlainInput::open(path, &opts)?;
            match format_of(&mut input.plain, &opts)? {
                Format::Std | Format::Binary => {
                    ValueTrace::read_any_max(input.plain, opts.max_line)
                }
                f => {
                    let mut src = open_plain(input.plain, f, opts.max_line)?;
                    Ok(ValueTrace::from_trace(Trace::read_from(&mut *src)?))
                }
            }
        };
        read().map_err(|e| e.in_file(path))
    }

    fn read_lines<R: std::io::BufRead>(
        mut lines: super::lines::LineReader<R>,
    ) -> Result<ValueTrace> {
        let mut vt = ValueTrace::default();
        let mut names = Names::new();
        let mut addrs = Vec::new();
        let mut last_thread = Vec::new();
        let mut last_thread_id = super::ThreadId::NONE;
        let mut any_value = false;
        loop {
            let lineno = lines.line() + 1;
            let byte = lines.byte();
            let Some(line) = lines.next_line()? else {
                break;
            };
            let pos = Position {
                line: lineno,
                byte,
                event: Some(vt.trace.events.len() as u64),
            };
            let at = move |e: Error| e.at(pos);
            if memchr::memchr(0, line).is_some() {
                return Err(at(Error::syntax(
                    "line contains NUL bytes: binary data, not a text trace",
                )));
            }
            if line.is_empty() || is_skippable(line) {
                continue;
            }
            let (ev, part, alt) = parse_line(
                line,
                &mut names,
                &mut addrs,
                &mut last_thread,
                &mut last_thread_id,
            )
            .map_err(at)?;
            let ann = parse_ann(part, &mut vt.regs).map_err(at)?;
            if let Some(alt_loc) = alt {
                // The latest earlier branch of this thread at that location.
                let loc = names.locs.get(std::str::from_utf8(alt_loc).unwrap_or(""));
                let branch = loc.and_then(|loc| {
                    vt.trace.events.iter().rposition(|e| {
                        e.thread == ev.thread && e.op == Op::Branch && e.loc.0 == loc
                    })
                });
                let Some(branch) = branch else {
                    return Err(at(Error::syntax(format!(
                        "`alt({})` names no earlier branch of this thread at that location",
                        String::from_utf8_lossy(&alt_loc[..alt_loc.len().min(64)])
                    ))));
                };
                if !vt.push_alt(branch, ev, ann, lineno) {
                    return Err(at(Error::syntax(
                        "the alternative path of a branch must be given in one run of lines",
                    )));
                }
                continue;
            }
            if matches!(ann, Ann::Read { observed: None, .. }) {
                return Err(at(Error::syntax(
                    "a read of the trace must say the value it observed: `r(x)->reg=VALUE`",
                )));
            }
            if ann != Ann::None && !any_value {
                // The first value: the events before it had none.
                any_value = true;
                vt.anns = vec![Ann::None; vt.trace.events.len()];
            }
            if any_value {
                vt.anns.push(ann);
            }
            vt.trace.events.push(ev);
            vt.trace.lines.push(lineno);
        }
        vt.alts.sort_by_key(|a| a.branch);
        vt.trace.names = names;
        Ok(vt)
    }

    /// Reads decompressed STD text or a binary trace (told apart by the binary magic), with
    /// values.
    pub fn read_any<R: std::io::BufRead>(rdr: R) -> Result<ValueTrace> {
        ValueTrace::read_any_max(rdr, super::lines::DEFAULT_MAX_LINE)
    }

    /// [`ValueTrace::read_any`] with lines of STD text up to `max_line` bytes.
    fn read_any_max<R: std::io::BufRead>(mut rdr: R, max_line: usize) -> Result<ValueTrace> {
        let head = rdr.fill_buf()?;
        let magic = super::binary::MAGIC;
        // A cut-off header goes to the binary reader too, which reports it.
        if head.starts_with(magic) || (!head.is_empty() && magic.starts_with(head)) {
            ValueTrace::from_binary(rdr)
        } else {
            let mut lines = super::lines::LineReader::from_buf_read(rdr);
            lines.set_max_line(max_line);
            ValueTrace::read_lines(lines)
        }
    }

    /// Reads a binary trace (`.rpb`) with its values records
    /// ([`BinaryReader::values_text`](super::binary::BinaryReader::values_text)).
    pub fn from_binary<R: std::io::BufRead>(rdr: R) -> Result<ValueTrace> {
        let mut r = super::binary::BinaryReader::from_buf_read(rdr)?;
        let trace = Trace::read_from(&mut r)?;
        ValueTrace::with_values_text(trace, r.values_text())
    }

    /// The values of this trace as the text of a binary values record: one line per event
    /// with a value part, `INDEX STD-LINE`, each branch's line followed by its alternative
    /// path as `alt BRANCH STD-LINE` lines. Names and registers are spelled out, so the
    /// record does not depend on the writer's ids (register ids may come out in another
    /// order than an STD reader's).
    pub fn values_record(&self) -> String {
        let mut out = String::new();
        let mut alts = self.alts.iter().enumerate().peekable();
        for i in 0..self.trace.events.len() {
            if *self.ann(i) != Ann::None {
                out.push_str(&format!("{i} {}\n", event_line(self, i as u64)));
            }
            while let Some((k, alt)) = alts.next_if(|(_, a)| a.branch == i) {
                let base = alt_base(self, k);
                for j in 0..alt.events.len() as u64 {
                    let line = event_line(self, base + j);
                    out.push_str(&format!("alt {i} {line}\n"));
                }
            }
        }
        out
    }

    /// Attaches the values of a values record ([`ValueTrace::values_record`]) to `trace`.
    /// Errors name the line of the record.
    pub fn with_values_text(trace: Trace, text: &[u8]) -> Result<ValueTrace> {
        let mut vt = ValueTrace::from_trace(trace);
        let n = vt.trace.events.len();
        let mut scratch = Names::new();
        let mut addrs = Vec::new();
        let (mut lt, mut lt_id) = (Vec::new(), super::ThreadId::NONE);
        let (mut alt_lt, mut alt_lt_id) = (Vec::new(), super::ThreadId::NONE);
        for (k, line) in text.split(|&b| b == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            let at = |e: Error| Error::syntax(format!("values record, line {}: {e}", k + 1));
            let bad = |what: &str| at(Error::syntax(what.to_string()));
            let index = |s: &[u8]| {
                std::str::from_utf8(s)
                    .ok()
                    .and_then(|s| s.parse::<usize>().ok())
                    .filter(|&i| i < n)
                    .ok_or_else(|| bad("expected an event index of the trace"))
            };
            let Some(sp) = line.iter().position(|&b| b == b' ') else {
                return Err(bad("expected `INDEX LINE` or `alt BRANCH LINE`"));
            };
            let (head, rest) = (&line[..sp], &line[sp + 1..]);
            if head == b"alt" {
                let Some(sp) = rest.iter().position(|&b| b == b' ') else {
                    return Err(bad("expected `alt BRANCH LINE`"));
                };
                let branch = index(&rest[..sp])?;
                if vt.trace.events[branch].op != Op::Branch {
                    return Err(bad("`alt` names an event that is not a branch"));
                }
                let (ev, part, alt) = parse_line(
                    &rest[sp + 1..],
                    &mut vt.trace.names,
                    &mut addrs,
                    &mut alt_lt,
                    &mut alt_lt_id,
                )
                .map_err(at)?;
                if alt.is_none() {
                    return Err(bad("an `alt` entry holds an `alt(LOC)` line"));
                }
                let ann = parse_ann(part, &mut vt.regs).map_err(at)?;
                if !vt.push_alt(branch, ev, ann, 0) {
                    return Err(bad(
                        "the alternative path of a branch must be one run of lines",
                    ));
                }
            } else {
                let i = index(head)?;
                let (ev, part, alt) =
                    parse_line(rest, &mut scratch, &mut addrs, &mut lt, &mut lt_id).map_err(at)?;
                if alt.is_some() || ev.op != vt.trace.events[i].op {
                    return Err(bad("the line does not match the event at that index"));
                }
                let ann = parse_ann(part, &mut vt.regs).map_err(at)?;
                if matches!(ann, Ann::Read { observed: None, .. }) {
                    return Err(bad(
                        "a read of the trace must say the value it observed: `r(x)->reg=VALUE`",
                    ));
                }
                if vt.anns.is_empty() {
                    vt.anns = vec![Ann::None; n];
                }
                vt.anns[i] = ann;
            }
        }
        vt.alts.sort_by_key(|a| a.branch);
        Ok(vt)
    }

    /// The concrete run of the trace as recorded: the value of every write (where known)
    /// and the initial value of every variable that some read observed before any write.
    /// Checks that reads observe what the last write wrote and that branches hold.
    pub fn concrete(&self) -> Result<Concrete> {
        let nv = self.trace.num_vars();
        let mut c = Concrete {
            write_value: vec![None; self.trace.len()],
            init: vec![None; nv],
        };
        let mut last_write: Vec<Option<usize>> = vec![None; nv];
        let mut regs: rustc_hash::FxHashMap<(u32, u32), i64> = Default::default();
        for (i, ev) in self.trace.events.iter().enumerate() {
            let t = ev.thread.0;
            let at = |e: Error| {
                e.at(Position {
                    line: self.trace.lines.get(i).copied().unwrap_or(0),
                    byte: 0,
                    event: Some(i as u64),
                })
            };
            let env = |r: u32| regs.get(&(t, r)).copied();
            match (self.ann(i), ev.op) {
                (Ann::Write(e), Op::Write | Op::VolatileWrite) => {
                    c.write_value[i] = e.eval(&env);
                    last_write[ev.target as usize] = Some(i);
                }
                (Ann::None, Op::Write | Op::VolatileWrite) => {
                    last_write[ev.target as usize] = Some(i);
                }
                (Ann::Read { reg, observed }, Op::Read | Op::VolatileRead) => {
                    let v = observed.expect("trace reads carry their value");
                    let slot = match last_write[ev.target as usize] {
                        Some(w) => &mut c.write_value[w],
                        None => &mut c.init[ev.target as usize],
                    };
                    match *slot {
                        Some(w) if w != v => {
                            return Err(at(Error::invalid(format!(
                                "the read observed {v} but the last write to its variable wrote {w}"
                            ))))
                        }
                        // A write without an expression wrote what its readers saw.
                        _ => *slot = Some(v),
                    }
                    regs.insert((t, *reg), v);
                }
                (Ann::Let { reg, expr }, Op::Local) => {
                    let Some(v) = expr.eval(&env) else {
                        return Err(at(Error::invalid(
                            "the expression uses a register the thread has not set",
                        )));
                    };
                    regs.insert((t, *reg), v);
                }
                (Ann::Branch(cond), Op::Branch) => match cond.eval(&env) {
                    None => {
                        return Err(at(Error::invalid(
                            "the condition uses a register the thread has not set",
                        )))
                    }
                    Some(0) => {
                        return Err(at(Error::invalid(
                            "the branch condition does not hold with the values of the trace",
                        )))
                    }
                    Some(_) => {}
                },
                _ => {}
            }
        }
        Ok(c)
    }
}

/// What [`ValueTrace::concrete`] computed.
#[derive(Clone, Debug)]
pub struct Concrete {
    /// Per event: the value a write wrote (`None` for other events and for writes whose value
    /// nobody observed and no expression gives).
    pub write_value: Vec<Option<i64>>,
    /// Per variable: its initial value, if a read observed it before any write.
    pub init: Vec<Option<i64>>,
}

// ---------------------------------------------------------------------------------------
// Events by number, as STD lines
// ---------------------------------------------------------------------------------------

/// Where an event number points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventRef {
    Trace(usize),
    /// Event `k` of alternative path `alt`.
    ///
    /// The executed events of an alternative path run atomically at their branch (RECIPE §IV:
    /// no other thread's event between the branch and them); a racing event on the path is
    /// not executed, so other threads may run between the branch and the race.
    Alt {
        alt: usize,
        k: usize,
    },
}

/// Resolves an event number: below the trace's length an event of the trace, from there on
/// the events of the alternative paths, counted in the order of [`ValueTrace::alts`].
pub fn resolve(vt: &ValueTrace, n: u64) -> Option<EventRef> {
    let len = vt.trace.len() as u64;
    if n < len {
        return Some(EventRef::Trace(n as usize));
    }
    let mut base = len;
    for (a, alt) in vt.alts.iter().enumerate() {
        if n < base + alt.events.len() as u64 {
            return Some(EventRef::Alt {
                alt: a,
                k: (n - base) as usize,
            });
        }
        base += alt.events.len() as u64;
    }
    None
}

/// The number of the first event of alternative path `alt`.
pub fn alt_base(vt: &ValueTrace, alt: usize) -> u64 {
    vt.trace.len() as u64
        + vt.alts[..alt]
            .iter()
            .map(|a| a.events.len() as u64)
            .sum::<u64>()
}

/// The event a resolved number points to, with its value part.
pub fn event_of(vt: &ValueTrace, r: EventRef) -> (Event, &Ann) {
    match r {
        EventRef::Trace(i) => (vt.trace.events[i], vt.ann(i)),
        EventRef::Alt { alt, k } => (vt.alts[alt].events[k], &vt.alts[alt].anns[k]),
    }
}

/// The STD line of an event, with its value part.
pub fn event_line(vt: &ValueTrace, n: u64) -> String {
    let Some(r) = resolve(vt, n) else {
        return format!("# no event {n}");
    };
    let (ev, ann) = event_of(vt, r);
    let names = &vt.trace.names;
    let mut s = String::new();
    let thread = names.thread(ev.thread);
    if let EventRef::Alt { alt, .. } = r {
        let b = vt.alts[alt].branch;
        let _ = write!(s, "{thread}|alt({})|", names.loc(vt.trace.events[b].loc));
    } else {
        let _ = write!(s, "{thread}|");
    }
    let regs = &vt.regs;
    match (ev.op, ann) {
        (Op::Local, Ann::Let { reg, expr }) => {
            let _ = write!(s, "let({}={})", regs.name(*reg), expr.display(regs));
        }
        (Op::Branch, Ann::Branch(c)) => {
            let _ = write!(s, "br({})", c.display(regs));
        }
        _ => {
            if ev.target == u32::MAX {
                s.push_str(ev.op.std_name());
            } else {
                let _ = write!(s, "{}({})", ev.op.std_name(), names.target(&ev));
            }
            match ann {
                Ann::Write(e) => {
                    let _ = write!(s, "={}", e.display(regs));
                }
                Ann::Read { reg, observed } => {
                    let _ = write!(s, "->{}", regs.name(*reg));
                    if let Some(v) = observed {
                        let _ = write!(s, "={v}");
                    }
                }
                _ => {}
            }
        }
    }
    let _ = write!(s, "|{}", names.loc(ev.loc));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value trace written as binary (events, then its values record) reads back the
    /// same: events, values, alternative paths, registers, and so the same values record.
    #[test]
    fn binary_round_trip_keeps_values_and_alternative_paths() {
        let fig1 = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/traces/recipe_fig1.std"
        ))
        .unwrap();
        let other = b"T0|fork(T1)|1\nT0|w(x)=7|2\nT1|r(x)->a=7|3\nT1|let(b=a*2+1)|4\n\
            T1|br(!(b>20))|5\nT1|alt(5)|w(z)=b|9\nT1|alt(5)|r(q)->c|9\nT1|w(y)=b|6\n\
            T0|acq(L)|7\nT0|r(y)->d=15|8\nT0|br(d==15)|9\nT0|rel(L)|10\n";
        for text in [&fig1[..], &other[..]] {
            let vt = ValueTrace::parse(text).unwrap();
            assert!(vt.has_values());
            let mut w = super::super::binary::BinaryWriter::new(Vec::new());
            let mut src = vt.trace.source();
            while let Some(ev) = crate::trace::EventSource::next_event(&mut src).unwrap() {
                w.write_event(&ev, &vt.trace.names, &[], None).unwrap();
            }
            w.write_values(&vt.values_record()).unwrap();
            let bytes = w.finish().unwrap();
            let back = ValueTrace::from_binary(&bytes[..]).unwrap();
            // Name ids may differ (names only the alternative paths use come last), so
            // events are compared as rendered lines below.
            assert_eq!(back.trace.len(), vt.trace.len());
            assert_eq!(back.anns.len(), vt.anns.len());
            assert_eq!(back.alts.len(), vt.alts.len());
            for (a, b) in back.alts.iter().zip(&vt.alts) {
                assert_eq!(a.branch, b.branch);
                assert_eq!(a.events.len(), b.events.len());
            }
            // Every event, alternative ones too, renders the same (registers by name).
            let total = vt.trace.len() + vt.alts.iter().map(|a| a.events.len()).sum::<usize>();
            for e in 0..total as u64 {
                assert_eq!(event_line(&back, e), event_line(&vt, e));
            }
            assert_eq!(back.values_record(), vt.values_record());
            assert_eq!(
                back.concrete().is_ok(),
                vt.concrete().is_ok(),
                "the concrete run checks the same"
            );
        }
        // A record line that does not fit the trace is an error naming the line.
        let vt = ValueTrace::parse(&fig1).unwrap();
        let e = ValueTrace::with_values_text(vt.trace.clone(), b"0 T0|w(x)=0|0\n99 T0|w(x)=1|0\n")
            .unwrap_err();
        assert!(e.to_string().contains("values record, line 2"), "{e}");
        let e = ValueTrace::with_values_text(vt.trace.clone(), b"2 T0|w(x)=0|0\n").unwrap_err();
        assert!(e.to_string().contains("does not match"), "{e}");
    }

    fn ev(s: &str) -> i64 {
        let mut regs = Interner::default();
        let a = regs.intern(b"a");
        let e = parse_expr(s.as_bytes(), &mut regs).unwrap();
        e.eval(&|r| (r == a).then_some(5)).unwrap()
    }

    #[test]
    fn expressions_follow_c_precedence() {
        assert_eq!(ev("1+2*3"), 7);
        assert_eq!(ev("(1+2)*3"), 9);
        assert_eq!(ev("a*2+1"), 11);
        assert_eq!(ev("a>2"), 1);
        assert_eq!(ev("!(a>2)"), 0);
        assert_eq!(ev("a>2 && a<4 || a==5"), 1);
        assert_eq!(ev("1<<3>>1"), 4);
        assert_eq!(ev("7/0"), 0);
        assert_eq!(ev("-7%3"), -1);
        assert_eq!(ev("-a"), -5);
        assert_eq!(ev("-9223372036854775808"), i64::MIN);
        assert_eq!(ev("9223372036854775807+1"), i64::MIN);
        assert_eq!(ev("6&3|8^1"), 11);
        assert_eq!(ev("1 << 65"), 2);
    }

    #[test]
    fn bad_expressions_are_errors() {
        let mut regs = Interner::default();
        for s in ["", "1+", "(1", "1)", "a b", "99999999999999999999", "#"] {
            assert!(parse_expr(s.as_bytes(), &mut regs).is_err(), "{s:?}");
        }
    }

    /// RECIPE Fig. 1 as a value trace (events 0–9; the alternative event is 10).
    const FIG1: &str = include_str!("../../../../tests/traces/recipe_fig1.std");

    #[test]
    fn parses_values_and_alternative_paths() {
        let vt = ValueTrace::parse(FIG1.as_bytes()).unwrap();
        assert_eq!(vt.trace.len(), 10);
        assert_eq!(vt.trace.events[8].op, Op::Branch);
        assert!(matches!(
            vt.ann(7),
            Ann::Read {
                observed: Some(5),
                ..
            }
        ));
        assert_eq!(vt.alts.len(), 1);
        assert_eq!(vt.alts[0].branch, 8);
        assert_eq!(vt.alts[0].events[0].op, Op::Read);
        let alt_line = FIG1.lines().position(|l| l.contains("|alt(4)|")).unwrap() as u64 + 1;
        assert_eq!(vt.alts[0].lines, vec![alt_line]);
        let c = vt.concrete().unwrap();
        assert_eq!(c.write_value[4], Some(3));
        assert_eq!(c.write_value[6], Some(5));
    }

    #[test]
    fn inconsistent_values_are_errors() {
        let bad = "T0|w(x)=1|1\nT0|r(x)->a=2|2\n";
        let vt = ValueTrace::parse(bad.as_bytes()).unwrap();
        let err = vt.concrete().unwrap_err().to_string();
        assert!(err.starts_with("2:") && err.contains("observed 2"), "{err}");
        let bad = "T0|r(x)->a=2|1\nT0|br(a>2)|2\n";
        let vt = ValueTrace::parse(bad.as_bytes()).unwrap();
        assert!(vt
            .concrete()
            .unwrap_err()
            .to_string()
            .contains("does not hold"));
        for bad in [
            "T0|r(x)->a|1\n",
            "T0|alt(9)|w(x)=1|1\n",
            "T0|w(x)=1+|1\n",
            "T0|r(x)->1a=2|1\n",
            "T0|let(a)|1\n",
        ] {
            assert!(ValueTrace::parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }
}
