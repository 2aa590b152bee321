//! The Go-tool logs of the SSHB paper (Sulzmann and Stadtmüller, "Data race prediction for
//! inaccurate traces", `papers/sshb-inaccurate-traces.txt`, Appendix F, Figure 10).
//!
//! One event per line, five comma-separated fields, optionally prefixed by the event's
//! number and a colon (as printed in Figure 10):
//!
//! ```text
//! [N:]TID,OP,OBJ,LOC,NUM
//! 1428960:24,LK,633,nil,2773
//! 1429007:1,WR,2657,JkMain.java:339:237,1423414
//! ```
//!
//! | OP | event |
//! |---|---|
//! | `LK`, `UK` | `acq`, `rel` of lock `OBJ` |
//! | `RD`, `WR` | `r`, `w` of variable `OBJ` |
//! | `SIG`, `WT` | `sig`, `wait` of condition `OBJ` |
//!
//! Names: the thread is the raw `TID` token, a decimal number (`24`, not `T24`), so reports use the Go tool's
//! own numbering; `OBJ` and `LOC` are kept as tokens too, and `nil` is an ordinary location
//! name (the paper logs lock operations with location `nil`). `NUM` (the paper's global
//! access number; a lock-operation counter or `0` for lock events) must be a decimal `u64`
//! and is returned by [`EventSource::seq`](super::EventSource::seq). The `N:` prefix must be decimal when present;
//! it is checked and otherwise ignored. Fields are trimmed of surrounding whitespace; blank
//! lines and `#` lines are skipped. Annotation lines such as the figure's `STUCK` are
//! errors: any line that is not an event is reported with its line number.

use super::lines::{check_name, trim};
use super::text::{LineFormat, TextReader};
use super::{Event, Names, Op, ThreadId};
use crate::error::{Error, ErrorKind, Result};

fn op_of(name: &[u8]) -> Option<Op> {
    Some(match name {
        b"LK" => Op::Acquire,
        b"UK" => Op::Release,
        b"RD" => Op::Read,
        b"WR" => Op::Write,
        b"SIG" => Op::Signal,
        b"WT" => Op::Wait,
        _ => return None,
    })
}

/// True if a first line looks like a Go-tool log line.
pub fn looks_like(line: &[u8]) -> bool {
    let mut f = line.split(|&b| b == b',');
    let _tid = f.next();
    let op = f.next().map(trim);
    f.count() == 3 && op.and_then(op_of).is_some()
}

/// Streaming reader of the SSHB Go-tool logs.
pub type GoLogReader<R> = TextReader<R, GoLogFormat>;

/// The Go-tool log [`LineFormat`]: keeps the `NUM` field of the last event.
#[derive(Default)]
pub struct GoLogFormat {
    seq: u64,
}

impl LineFormat for GoLogFormat {
    fn parse(&mut self, line: &[u8], _lineno: u64, names: &mut Names) -> Result<Option<Event>> {
        let (ev, seq) = parse_line(line, names)?;
        self.seq = seq;
        Ok(Some(ev))
    }

    fn seq(&self) -> Option<u64> {
        Some(self.seq)
    }
}

fn parse_line(line: &[u8], names: &mut Names) -> Result<(Event, u64)> {
    let mut fields: [&[u8]; 5] = [&[]; 5];
    let mut n = 0;
    for f in line.split(|&b| b == b',') {
        if n == 5 {
            return Err(Error::syntax(
                "expected 5 comma-separated fields `TID,OP,OBJ,LOC,NUM`, found more",
            ));
        }
        fields[n] = trim(f);
        n += 1;
    }
    if n < 5 {
        return Err(Error::syntax(format!(
            "expected 5 comma-separated fields `TID,OP,OBJ,LOC,NUM`, found {n}"
        )));
    }
    let [mut tid, op, obj, loc, num] = fields;
    if let Some(colon) = memchr::memchr(b':', tid) {
        if super::lines::parse_decimal(trim(&tid[..colon])).is_none() {
            return Err(Error::syntax(format!(
                "event number `{}` before `:` is not a decimal number",
                super::lines::Shown(&tid[..colon])
            )));
        }
        tid = trim(&tid[colon + 1..]);
    }
    let Some(op) = op_of(op) else {
        return Err(Error::new(ErrorKind::UnknownOp(super::lines::show(op))));
    };
    check_name(tid, "thread")?;
    if super::lines::parse_decimal(tid).is_none() {
        return Err(Error::syntax(format!(
            "thread id `{}` is not a decimal number",
            super::lines::Shown(tid)
        )));
    }
    check_name(obj, super::binary::kind_what(op.target_kind()))?;
    check_name(loc, "location")?;
    let Some(seq) = super::lines::parse_decimal(num) else {
        return Err(Error::syntax(format!(
            "global access number `{}` is not a decimal number",
            super::lines::Shown(num)
        )));
    };
    let t = ThreadId(names.threads.intern(tid));
    let target = names.table_mut(op.target_kind()).intern(obj);
    let loc = names.intern_loc(loc);
    Ok((Event::new(t, op, target, loc), seq))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    #[test]
    fn figure_10() {
        let text = "1428960:24,LK,633,nil,2773\n1429001:1,LK,633,nil,2776\n1429004:1,UK,633,nil,0\n1429007:1,WR,2657, JkMain.java:339:237,1423414\n1429008:24,RD,54437,ThreadPool.java:661:12,1423415\n1429012:24,UK,633,nil,0\n3,SIG,c,x.go:1,5\n4,WT,c,x.go:2,6\n";
        let t = Trace::read_from(&mut GoLogReader::new(text.as_bytes())).unwrap();
        assert_eq!(t.len(), 8);
        assert_eq!(t.names.thread(t.events[0].thread), "24");
        assert_eq!(t.events[0].op, Op::Acquire);
        assert_eq!(t.names.lock(t.events[0].lock()), "633");
        assert_eq!(t.names.loc(t.events[0].loc), "nil");
        assert_eq!(t.names.loc(t.events[3].loc), "JkMain.java:339:237");
        assert_eq!(t.events[4].op, Op::Read);
        assert_eq!(t.events[6].op, Op::Signal);
        assert_eq!(t.events[7].op, Op::Wait);
        assert_eq!(t.seq, Some(vec![2773, 2776, 0, 1423414, 1423415, 0, 5, 6]));
    }

    #[test]
    fn errors() {
        for (input, want) in [
            ("1,WR,x,l\n", "found 4"),
            ("1,WR,x,l,2,3\n", "found more"),
            ("1,XX,x,l,2\n", "unknown operation `XX`"),
            ("1,WR,x,l,two\n", "not a decimal"),
            ("a:1,WR,x,l,2\n", "event number `a`"),
            (",WR,x,l,2\n", "empty thread name"),
            ("x,WR,x,l,2\n", "thread id `x` is not a decimal number"),
            ("7:x,WR,x,l,2\n", "thread id `x` is not a decimal number"),
            ("STUCK\n", "found 1"),
        ] {
            let e = Trace::read_from(&mut GoLogReader::new(input.as_bytes()))
                .unwrap_err()
                .in_file("t.log")
                .to_string();
            assert!(
                e.contains(want) && e.starts_with("t.log:1:"),
                "{input:?}: {e}"
            );
        }
    }
}
