//! RAPID's CSV traces (`parse/csv/Parse.java`, `ParseCSV.java` of RAPID,
//! github.com/focs-lab/rapid): one event per row, one column per thread.
//!
//! A row is split at every `,`; the index `i` of its non-empty field is the thread, named
//! `T<i>` as RAPID names it, and the field is `OP(TARGET)` with `TARGET` free of whitespace
//! (running to the last `)`):
//!
//! ```text
//! ,w(x),
//! acq(l),,
//! sync(y),,
//! ```
//!
//! | CSV | event |
//! |---|---|
//! | `acq(L)`, `rel(L)` | `acq`, `rel` of lock `L` |
//! | `r(V)`, `w(V)` | `r`, `w` of variable `V` |
//! | `start(T)`, `join(T)` | `fork`, `join` of thread `T` (e.g. `start(T1)` forks column 1) |
//! | `enter(M)`, `exit(M)` | transaction `begin(M)`, `end(M)` |
//! | `sync(V)` | RAPID's expansion: `acq(VARLOCK-V-KCOLRAV)`, `r(V)`, `w(V)`, `rel(VARLOCK-V-KCOLRAV)` |
//! | `dummy(X)` | skipped |
//!
//! CSV has no locations, and its events get none ([`LocId::NONE`]): reports show each event's
//! row as its trace line, and group races without a location by variable
//! ([`place`](crate::report::place)). (RAPID uses the event number as location, which it
//! says is "useless here"; racepred used the row number until a grouped `lockset` report of
//! a 2·10^6-row trace, one group per pair of racing rows, ran out of memory.)
//!
//! Where we differ from RAPID, on purpose: RAPID treats any row it cannot parse as a comment
//! and keeps only the first non-empty field of a row. We skip rows that are empty (all
//! fields empty), start with `#`, or are the first row and contain no `(` (a header such as
//! `T0,T1,T2`); any other row must hold exactly one event, else it is an error naming the
//! line and what is wrong. RAPID rejects `enter`/`exit`/`dummy` when building events; we
//! accept them as above. Fields are trimmed of surrounding whitespace.

use super::lines::{check_name, trim};
use super::text::{FastLines, FastRun, LineFormat, TextReader};
use super::{Event, LocId, Names, Op, ThreadId};
use crate::error::{Error, ErrorKind, Result};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum CsvOp {
    Plain(Op),
    Sync,
    Dummy,
}

fn op_of(name: &[u8]) -> Option<CsvOp> {
    Some(match name {
        b"acq" => CsvOp::Plain(Op::Acquire),
        b"rel" => CsvOp::Plain(Op::Release),
        b"r" => CsvOp::Plain(Op::Read),
        b"w" => CsvOp::Plain(Op::Write),
        b"start" => CsvOp::Plain(Op::Fork),
        b"join" => CsvOp::Plain(Op::Join),
        b"enter" => CsvOp::Plain(Op::Begin),
        b"exit" => CsvOp::Plain(Op::End),
        b"sync" => CsvOp::Sync,
        b"dummy" => CsvOp::Dummy,
        _ => return None,
    })
}

/// Splits `OP(TARGET)`.
fn split_call(field: &[u8]) -> Result<(CsvOp, &[u8])> {
    let Some(open) = memchr::memchr(b'(', field) else {
        return Err(Error::syntax(format!(
            "expected `OP(TARGET)`, found `{}`",
            super::lines::Shown(field)
        )));
    };
    let name = &field[..open];
    let Some(op) = op_of(name) else {
        return Err(Error::new(ErrorKind::UnknownOp(super::lines::show(name))));
    };
    let Some(target) = field[open + 1..].strip_suffix(b")") else {
        return Err(Error::syntax(format!(
            "`{}` has `(` without a closing `)` at the end of the field",
            super::lines::Shown(field)
        )));
    };
    if target.iter().any(u8::is_ascii_whitespace) {
        return Err(Error::syntax("a target contains whitespace"));
    }
    Ok((op, target))
}

/// True if a first line looks like a RAPID CSV row.
pub fn looks_like(line: &[u8]) -> bool {
    let mut fields = line
        .split(|&b| b == b',')
        .map(trim)
        .filter(|f| !f.is_empty());
    match (fields.next(), fields.next()) {
        (Some(f), None) => split_call(f).is_ok(),
        _ => false,
    }
}

/// Streaming RAPID CSV reader.
pub type CsvReader<R> = TextReader<R, CsvFormat>;

/// The RAPID CSV [`LineFormat`]: the events of a `sync` row still to return, and whether the
/// (possible header) first row has been seen.
pub struct CsvFormat {
    pending: [Event; 4],
    pending_len: u8,
    pending_next: u8,
    seen_row: bool,
    scratch: Vec<u8>,
}

impl Default for CsvFormat {
    fn default() -> Self {
        CsvFormat {
            pending: [Event::read(0, 0); 4],
            pending_len: 0,
            pending_next: 0,
            seen_row: false,
            scratch: Vec::new(),
        }
    }
}

impl LineFormat for CsvFormat {
    /// Nothing: `parse_row` skips comments, empty rows and the header itself.
    fn skip(_line: &[u8]) -> bool {
        false
    }

    fn parse(&mut self, line: &[u8], _lineno: u64, names: &mut Names) -> Result<Option<Event>> {
        let n = parse_row(
            line,
            &mut self.seen_row,
            names,
            &mut self.scratch,
            &mut self.pending,
        )?;
        if n == 0 {
            return Ok(None);
        }
        self.pending_len = n as u8;
        self.pending_next = 1;
        Ok(Some(self.pending[0]))
    }

    /// Rows of exactly the shape `,,,op(V<n>),,` (no whitespace, a plain operation, its
    /// thread and target interned already) after the first row.
    #[inline]
    fn fast_lines(&mut self, lines: FastLines<'_>, names: &mut Names) -> FastRun {
        if !self.seen_row || self.pending_next < self.pending_len {
            return FastRun::default();
        }
        let max_line = lines.max_line;
        lines.collect(|s, _| {
            let (t, op, target, len) = fast_row(s, names)?;
            if len > max_line {
                return None; // the general path reports it
            }
            Some((Event::new(t, op, target, LocId::NONE), len))
        })
    }

    fn pending(&mut self) -> Option<Event> {
        if self.pending_next < self.pending_len {
            let ev = self.pending[self.pending_next as usize];
            self.pending_next += 1;
            Some(ev)
        } else {
            None
        }
    }
}

/// One fast-path row at the start of `s`: thread, operation, target and the row's length
/// without its `\n`; `None` for anything [`parse_row`] must see.
#[inline(always)]
fn fast_row(s: &[u8], names: &Names) -> Option<(ThreadId, Op, u32, usize)> {
    let col = s.iter().take_while(|&&b| b == b',').count();
    let rest = &s[col..];
    let (op, k) = match rest {
        [b'r', b'(', ..] => (Op::Read, 2),
        [b'w', b'(', ..] => (Op::Write, 2),
        [b'a', b'c', b'q', b'(', ..] => (Op::Acquire, 4),
        [b'r', b'e', b'l', b'(', ..] => (Op::Release, 4),
        [b's', b't', b'a', b'r', b't', b'(', ..] => (Op::Fork, 6),
        [b'j', b'o', b'i', b'n', b'(', ..] => (Op::Join, 5),
        _ => return None,
    };
    let thread = names.threads.lookup_number(b"T", col)?;
    let (target, q) = names
        .table(op.target_kind())
        .lookup_numbered(&rest[k..], b')')?;
    let mut i = col + k + q + 1;
    while *s.get(i)? == b',' {
        i += 1;
    }
    if s[i] != b'\n' {
        return None;
    }
    Some((ThreadId(thread), op, target, i))
}

/// Parses one row into `out`; returns how many events it holds (0: skipped).
fn parse_row(
    line: &[u8],
    seen_row: &mut bool,
    names: &mut Names,
    thread_buf: &mut Vec<u8>,
    out: &mut [Event; 4],
) -> Result<usize> {
    if trim(line).first() == Some(&b'#') {
        return Ok(0);
    }
    if line.iter().all(|&b| b == b',' || b.is_ascii_whitespace()) {
        return Ok(0);
    }
    let first_row = !std::mem::replace(seen_row, true);
    if first_row && memchr::memchr(b'(', line).is_none() {
        return Ok(0); // header row
    }
    let mut col = None;
    for (i, f) in line.split(|&b| b == b',').enumerate() {
        let f = trim(f);
        if f.is_empty() {
            continue;
        }
        if col.is_some() {
            return Err(Error::syntax(format!(
                "more than one non-empty column (second at column {i}); a row holds one event"
            )));
        }
        col = Some((i, f));
    }
    let Some((i, field)) = col else {
        return Ok(0);
    };
    let (op, target) = split_call(field)?;
    if op == CsvOp::Dummy {
        return Ok(0);
    }
    if std::str::from_utf8(target).is_err() {
        return Err(Error::new(ErrorKind::NonUtf8));
    }
    thread_buf.clear();
    thread_buf.push(b'T');
    thread_buf.extend_from_slice(i.to_string().as_bytes());
    let t = ThreadId(names.threads.intern(thread_buf));
    let loc = LocId::NONE;
    match op {
        CsvOp::Plain(op) => {
            check_name(target, super::binary::kind_what(op.target_kind()))?;
            let target = names.table_mut(op.target_kind()).intern(target);
            out[0] = Event::new(t, op, target, loc);
            Ok(1)
        }
        CsvOp::Sync => {
            check_name(target, "variable")?;
            let v = names.vars.intern(target);
            thread_buf.clear();
            thread_buf.extend_from_slice(b"VARLOCK-");
            thread_buf.extend_from_slice(target);
            thread_buf.extend_from_slice(b"-KCOLRAV");
            let l = names.locks.intern(thread_buf);
            out[0] = Event::new(t, Op::Acquire, l, loc);
            out[1] = Event::new(t, Op::Read, v, loc);
            out[2] = Event::new(t, Op::Write, v, loc);
            out[3] = Event::new(t, Op::Release, l, loc);
            Ok(4)
        }
        CsvOp::Dummy => Ok(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::text::{check_blocks_equal_events, read_error, read_str};

    /// The block path (with its fast path) says exactly what the event-by-event path says
    /// on rows it takes and rows it must leave (the header, `sync` rows that expand to
    /// four events, whitespace, two columns, new names).
    #[test]
    fn blocks_equal_events() {
        check_blocks_equal_events::<CsvFormat>(
            3,
            (["r", "w", "acq", "rel", "start", "join"], "VVLLTT"),
            |t, op, target, trail| {
                let (before, after) = (t as usize, trail as usize);
                format!("{}{op}({target}){}", ",".repeat(before), ",".repeat(after))
            },
            &[
                "",
                "# c",
                "T0,T1,T2",
                ",r(V1)\r",
                ", r(V1)",
                "r(V1),w(V2)",
                "sync(V1)",
                ",,sync(V2),",
                "dummy(x)",
                "enter(m)",
                ",r(V01)",
                ",r(x)",
                ",,,",
                "r(V1) ",
                ",zz(V1)",
                ",r(V1",
                "r(V12345678)",
            ],
        );
    }

    #[test]
    fn rows_columns_and_sync() {
        let t = read_str::<CsvFormat>(
            "T0,T1\nstart(T1),\n,w(x)\n\n,,\n# c\nsync(x),\n,dummy(q)\njoin(T1),\n",
        )
        .unwrap();
        let ops: Vec<Op> = t.events.iter().map(|e| e.op).collect();
        assert_eq!(
            ops,
            [
                Op::Fork,
                Op::Write,
                Op::Acquire,
                Op::Read,
                Op::Write,
                Op::Release,
                Op::Join
            ]
        );
        assert_eq!(t.names.thread(t.events[1].thread), "T1");
        assert_eq!(t.names.lock(t.events[2].lock()), "VARLOCK-x-KCOLRAV");
        assert!(t.events.iter().all(|e| e.loc.is_none()));
        assert!(t.names.locs.is_empty());
        assert_eq!(t.events[1].thread, t.events[0].other_thread());
        assert_eq!(t.lines, vec![2, 3, 7, 7, 7, 7, 9]);
    }

    #[test]
    fn errors() {
        for (input, want) in [
            ("w(x),r(y)\n", "more than one non-empty column"),
            (",foo(x)\n", "unknown operation `foo`"),
            (",w(x\n", "without a closing"),
            (",w()\n", "empty variable name"),
            ("w(x)\nT0\n", "expected `OP(TARGET)`, found `T0`"),
        ] {
            let e = read_error::<CsvFormat>(input, "t.csv");
            assert!(
                e.contains(want) && e.starts_with("t.csv:"),
                "{input:?}: {e}"
            );
        }
    }
}
