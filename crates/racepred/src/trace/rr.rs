//! RoadRunner logs, read the way RAPID reads them (`parse/rr/Parse.java` and
//! `ParseRoadRunner.java` of RAPID, github.com/focs-lab/rapid).
//!
//! RAPID matches each line against
//!
//! ```text
//! ^@\s+(Acquire|Release|ARd|Rd|AWr|Wr|Start|Join|Enter|Exit|Dummy)\(THREAD,AUX\)(\s+F1)?(\s+F2)?
//! ```
//!
//! with `THREAD` and `AUX` free of commas and whitespace, e.g.
//!
//! ```text
//! @    ARd(2,null.test/Deadlock.value_I)  Final  Deadlock.java:50:7
//! @    Acquire(2,@03)
//! @   Exit(1,test/Deadlock.doSomething()V)
//! ```
//!
//! `AUX` runs to the last `)` of the token (method descriptors contain parentheses). The
//! operations map as RAPID maps them: `Acquire`/`Release` → `acq`/`rel` of lock `AUX`,
//! `Rd`/`ARd` → `r`, `Wr`/`AWr` → `w` of variable `AUX` (array accesses are plain
//! accesses), `Start`/`Join` → `fork`/`join` of thread `AUX`, `Enter`/`Exit` → transaction
//! `begin`/`end` of method `AUX`. Threads keep their RoadRunner token (`2`) as name.
//!
//! The location of an access is the second field after the call (`F2`, RAPID's group 7;
//! `F1` is a RoadRunner annotation such as `Final` and is ignored); an access without it is
//! an error. Other events take `F2` as location when present and have none otherwise.
//! Fields are whitespace-separated tokens; anything after `F2` is ignored, as RAPID does.
//!
//! Threads (the first argument, and the target of `Start`/`Join`) are decimal numbers, as
//! RoadRunner writes them; anything else is an error naming the line.
//!
//! Where we differ from RAPID, on purpose:
//! - RAPID silently skips `@` lines that do not match; we report them (`file:line`, what is
//!   wrong) so a damaged log is not read as a shorter one. Lines not starting with `@`
//!   (RoadRunner's banners and messages) are skipped, as in RAPID.
//! - `Dummy` events are skipped (RAPID builds them and then throws).
//! - `Enter`/`Exit` keep their method name (RAPID drops it).

use super::lines::{check_name, trim};
use super::text::{LineFormat, TextReader};
use super::{Event, LocId, Names, Op, ThreadId};
use crate::error::{Error, ErrorKind, Result};

/// What a RoadRunner operation name means (`None` for `Dummy`, which is skipped).
fn op_of(name: &[u8]) -> Option<Option<Op>> {
    Some(match name {
        b"Acquire" => Some(Op::Acquire),
        b"Release" => Some(Op::Release),
        b"Rd" | b"ARd" => Some(Op::Read),
        b"Wr" | b"AWr" => Some(Op::Write),
        b"Start" => Some(Op::Fork),
        b"Join" => Some(Op::Join),
        b"Enter" => Some(Op::Begin),
        b"Exit" => Some(Op::End),
        b"Dummy" => None,
        _ => return None,
    })
}

/// True if a line looks like a RoadRunner event line.
pub fn looks_like(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"@") else {
        return false;
    };
    if !rest.first().is_some_and(u8::is_ascii_whitespace) {
        return false;
    }
    let rest = trim(rest);
    match memchr::memchr(b'(', rest) {
        Some(p) => op_of(&rest[..p]).is_some() && memchr::memchr(b',', &rest[p..]).is_some(),
        None => false,
    }
}

/// Streaming RoadRunner log reader.
pub type RrReader<R> = TextReader<R, RrFormat>;

/// The RoadRunner [`LineFormat`]: lines not starting with `@` are skipped.
#[derive(Default)]
pub struct RrFormat;

impl LineFormat for RrFormat {
    fn skip(line: &[u8]) -> bool {
        line.first() != Some(&b'@')
    }

    fn parse(&mut self, line: &[u8], _lineno: u64, names: &mut Names) -> Result<Option<Event>> {
        parse_line(line, names)
    }
}

/// Splits off the next whitespace-separated token.
fn token(s: &[u8]) -> (&[u8], &[u8]) {
    let s = trim(s);
    let end = s
        .iter()
        .position(u8::is_ascii_whitespace)
        .unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// Parses one `@` line; `Ok(None)` for a skipped `Dummy`.
fn parse_line(line: &[u8], names: &mut Names) -> Result<Option<Event>> {
    let body = &line[1..];
    if !body.first().is_some_and(u8::is_ascii_whitespace) {
        return Err(Error::syntax(
            "expected whitespace after `@` (`@ OP(THREAD,TARGET) ...`)",
        ));
    }
    let body = trim(body);
    let Some(open) = memchr::memchr(b'(', body) else {
        return Err(Error::syntax("expected `OP(THREAD,TARGET)` after `@`"));
    };
    let opname = &body[..open];
    let Some(op) = op_of(opname) else {
        return Err(Error::new(ErrorKind::UnknownOp(super::lines::show(opname))));
    };
    // The call token runs to the first whitespace; it must end with `)`.
    let after = &body[open + 1..];
    let end = after
        .iter()
        .position(u8::is_ascii_whitespace)
        .unwrap_or(after.len());
    let (call, rest) = after.split_at(end);
    let Some(inner) = call.strip_suffix(b")") else {
        return Err(Error::syntax(format!(
            "`{}(` has no closing `)` before whitespace or the end of the line",
            super::lines::Shown(opname)
        )));
    };
    let Some(comma) = memchr::memchr(b',', inner) else {
        return Err(Error::syntax(
            "expected two arguments `(THREAD,TARGET)`, found one",
        ));
    };
    let thread = &inner[..comma];
    let aux = &inner[comma + 1..];
    if memchr::memchr(b',', aux).is_some() {
        return Err(Error::syntax(
            "expected two arguments `(THREAD,TARGET)`, found more",
        ));
    }
    let Some(op) = op else {
        return Ok(None); // Dummy
    };
    check_name(thread, "thread")?;
    check_name(aux, super::binary::kind_what(op.target_kind()))?;
    for (t, what) in [(thread, "thread"), (aux, "started or joined thread")] {
        if (what == "thread" || op.target_kind() == super::NameKind::Thread)
            && super::lines::parse_decimal(t).is_none()
        {
            return Err(Error::syntax(format!(
                "{what} `{}` is not a number (RoadRunner numbers its threads)",
                super::lines::Shown(t)
            )));
        }
    }
    let (_f1, rest) = token(rest);
    let (f2, _) = token(rest);
    let loc = if f2.is_empty() {
        if op.is_access() {
            return Err(Error::syntax(
                "an access needs a location: `@ Rd(T,V) ANNOTATION LOCATION`",
            ));
        }
        LocId::NONE
    } else {
        check_name(f2, "location")?;
        LocId(names.locs.intern(f2))
    };
    let t = ThreadId(names.threads.intern(thread));
    let target = names.table_mut(op.target_kind()).intern(aux);
    Ok(Some(Event::new(t, op, target, loc)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    fn read(s: &str) -> Result<Trace> {
        Trace::read_from(&mut RrReader::new(s.as_bytes()))
    }

    #[test]
    fn rapid_examples() {
        let t = read(
            "[RR: banner]\n@    ARd(2,null.test/Deadlock.value_I)  Final  Deadlock.java:50:7\n@    Acquire(2,@03)\n@   Exit(1,test/Deadlock.doSomething()V)\n@ Dummy(1,x)\n@ Start(1,2) x 9\n",
        )
        .unwrap();
        assert_eq!(t.len(), 4);
        assert_eq!(t.events[0].op, Op::Read);
        assert_eq!(t.names.var(t.events[0].var()), "null.test/Deadlock.value_I");
        assert_eq!(t.names.loc(t.events[0].loc), "Deadlock.java:50:7");
        assert_eq!(t.names.thread(t.events[0].thread), "2");
        assert_eq!(t.names.lock(t.events[1].lock()), "@03");
        assert!(t.events[1].loc.is_none());
        assert_eq!(t.events[2].op, Op::End);
        assert_eq!(
            t.names.methods.name(t.events[2].target),
            "test/Deadlock.doSomething()V"
        );
        assert_eq!(t.events[3].op, Op::Fork);
        assert_eq!(t.names.loc(t.events[3].loc), "9");
        assert_eq!(t.lines, vec![2, 3, 4, 6]);
    }

    #[test]
    fn threads_are_numbers() {
        for (input, want) in [
            ("@ Rd(x,y) F L\n", "thread `x` is not a number"),
            (
                "@ Start(1,t2)\n",
                "started or joined thread `t2` is not a number",
            ),
            ("@ Rd(x,y)\n", "thread `x` is not a number"),
            ("@ Rd(1,y)\n", "needs a location"),
        ] {
            let e = read(input).unwrap_err().in_file("t.rr").to_string();
            assert!(
                e.starts_with("t.rr:1: syntax: ") && e.contains(want),
                "{input:?}: {e}"
            );
        }
    }

    #[test]
    fn looks_like_rr() {
        assert!(looks_like(b"@    Acquire(2,@03)"));
        assert!(!looks_like(b"@Acquire(2,@03)"));
        assert!(!looks_like(b"T0|acq(L)|1"));
    }
}
