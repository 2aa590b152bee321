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
use super::text::{FastLines, FastRun, LineFormat, TextReader};
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

    const SKIPS: Option<&'static str> = Some("RoadRunner banners (lines not starting with `@`)");

    fn parse(&mut self, line: &[u8], _lineno: u64, names: &mut Names) -> Result<Option<Event>> {
        parse_line(line, names)
    }

    /// Lines of exactly the shape `@ Op(<n>,<target>) ANNOTATION <n>` (single spaces, names
    /// already interned as numbered names, the common operations): what RoadRunner writes.
    #[inline]
    fn fast_lines(&mut self, lines: FastLines<'_>, names: &mut Names) -> FastRun {
        lines.collect(|s, _| fast_line(s, names))
    }
}

/// One fast-path line at the start of `s`: the event and the line's length without its
/// `\n`; `None` for anything [`parse_line`] must see.
#[inline(always)]
fn fast_line(s: &[u8], names: &Names) -> Option<(Event, usize)> {
    let (op, k) = match s {
        [b'@', b' ', b'R', b'd', b'(', ..] => (Op::Read, 5),
        [b'@', b' ', b'W', b'r', b'(', ..] => (Op::Write, 5),
        [b'@', b' ', b'A', b'c', b'q', b'u', b'i', b'r', b'e', b'(', ..] => (Op::Acquire, 10),
        [b'@', b' ', b'R', b'e', b'l', b'e', b'a', b's', b'e', b'(', ..] => (Op::Release, 10),
        [b'@', b' ', b'S', b't', b'a', b'r', b't', b'(', ..] => (Op::Fork, 8),
        [b'@', b' ', b'J', b'o', b'i', b'n', b'(', ..] => (Op::Join, 7),
        _ => return None,
    };
    let (thread, p) = names.threads.lookup_numbered(&s[k..], b',')?;
    let t = k + p + 1;
    let (target, q) = names
        .table(op.target_kind())
        .lookup_numbered(&s[t..], b')')?;
    let mut i = t + q + 1;
    if s.get(i) != Some(&b' ') {
        return None;
    }
    i += 1;
    if s.get(i..i + 2) == Some(b"- ") {
        // No annotation (what racepred writes): no scan.
        i += 1;
    } else {
        let annotation = i;
        while !s.get(i)?.is_ascii_whitespace() {
            // NUL bytes are an error: the line goes to the general path, which says so.
            if s[i] == 0 {
                return None;
            }
            i += 1;
        }
        if i == annotation || s[i] != b' ' {
            return None;
        }
    }
    let (loc, r) = names.locs.lookup_numbered(&s[i + 1..], b'\n')?;
    Some((
        Event::new(ThreadId(thread), op, target, LocId(loc)),
        i + 1 + r,
    ))
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
        names.intern_loc(f2)
    };
    let t = ThreadId(names.threads.intern(thread));
    let target = names.table_mut(op.target_kind()).intern(aux);
    Ok(Some(Event::new(t, op, target, loc)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::text::{check_blocks_equal_events, read_error, read_str};

    /// The block path (with its fast path) says exactly what the event-by-event path says
    /// on lines it takes and lines it must leave.
    #[test]
    fn blocks_equal_events() {
        check_blocks_equal_events::<RrFormat>(
            12,
            (
                ["Rd", "Wr", "Acquire", "Release", "Start", "Join"],
                "VVLLNN",
            ),
            |t, op, target, l| format!("@ {op}({t},{target}) - {l}"),
            &[
                "",
                "# c",
                "@ Rd(0,V1) - 3\r",
                "@  Rd(0,V1) - 3",
                "@ Rd(00,V1) - 3",
                "@ Rd(0,V1) - 03",
                "@ Rd(0,V12345678) - 3",
                "@ Rd(x,V1) - 3",
                "@ Rd(0,V1) -  3",
                "@ Rd(0,V1)  - 3",
                "@ Rd(0,V1) a\tb 3",
                "@ Rd(0,V1) - 3 extra",
                "@ Rd(0,V1) -",
                "@ Dummy(0,1) - 2",
                "@ ARd(0,V1) - 3",
                "@ Rd(0,V1)",
                "@ Zz(0,V1) - 3",
                "banner line",
                "@ Rd(0,V1) - 1234567",
                "@ Wr(0,V0) x 0",
                "@ Rd(0,V1) \u{0}\u{0} 3",
                "@ Rd(0,V1) -x 3",
                "@ Rd(0,V1) Normal 3",
                "@ Rd(0,V1) - -",
                "@ Rd(0,V1) - - 3",
                "@ Rd(0,V1) -\t3",
                "@ Rd(0,V1) - \u{0}",
            ],
        );
    }

    #[test]
    fn rapid_examples() {
        let t = read_str::<RrFormat>(
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
            let e = read_error::<RrFormat>(input, "t.rr");
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
