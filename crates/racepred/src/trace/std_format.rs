//! RAPID's STD text format: `THREAD|OP(TARGET)|LOC`, one event per line (SPEC §1).
//!
//! Any token is accepted as a thread, target or location name, except that location `-` is
//! no location (what reports and writers print for an event without one); blank lines and
//! lines starting with `#` are skipped. `mbegin(M;A1,A2)` carries an address set; `begin` and `end`
//! may omit their argument. The value-trace extension (`w(x)=EXPR`, `r(x)->a=5`, `let`, `br`,
//! `alt` lines; [`super::values`]) is checked and its values dropped. Everything else is an
//! error naming the line.

use super::expr::ValuePart;
use super::lines::{check_name, find_byte, trim};
use super::text::{FastLines, FastRun, LineFormat, TextReader};
use super::{AddrId, Event, LocId, Names, Op, ThreadId};
use crate::error::{Error, ErrorKind, Result};

/// Streaming STD reader.
pub type StdReader<R> = TextReader<R, StdFormat>;

/// The STD [`LineFormat`]: the `mbegin` address set of the last event and a cache of the
/// last thread token.
pub struct StdFormat {
    addrs: Vec<AddrId>,
    /// Register names of value parts (checked, then dropped).
    regs: super::Interner,
    /// Cache of the last thread token: consecutive events mostly come from one thread.
    last_thread: Vec<u8>,
    last_thread_id: ThreadId,
    /// Set once a line had a value part or was an `alt` line.
    has_values: bool,
}

impl Default for StdFormat {
    fn default() -> Self {
        StdFormat {
            addrs: Vec::new(),
            regs: super::Interner::default(),
            last_thread: Vec::new(),
            last_thread_id: ThreadId::NONE,
            has_values: false,
        }
    }
}

impl LineFormat for StdFormat {
    #[inline]
    fn parse(&mut self, line: &[u8], _lineno: u64, names: &mut Names) -> Result<Option<Event>> {
        self.addrs.clear();
        let (ev, part, alt) = parse_line(
            line,
            names,
            &mut self.addrs,
            &mut self.last_thread,
            &mut self.last_thread_id,
        )?;
        if part != ValuePart::None {
            // Values are checked here and dropped: every analysis the streaming readers feed
            // ignores them ([`super::values`] keeps them for the SMT predictor).
            super::expr::parse_ann(part, &mut self.regs)?;
            self.has_values = true;
        }
        // An `alt` line is not an event of the trace.
        if alt.is_some() {
            self.has_values = true;
            return Ok(None);
        }
        Ok(Some(ev))
    }

    fn addresses(&self) -> &[AddrId] {
        &self.addrs
    }

    fn has_values(&self) -> bool {
        self.has_values
    }

    /// Lines of exactly the shape `T<n>|op(V<n>)|<n>` with every name already interned as a
    /// numbered name ([`super::Interner::lookup_numbered`]) and one of the common operations:
    /// nearly every line of RAPID's and our generator's traces after the first few thousand.
    /// No trimming, no value part, no `\r`: any other byte sends the line to `parse`.
    #[inline]
    fn fast_lines(&mut self, lines: FastLines<'_>, names: &mut Names) -> FastRun {
        lines.collect(|s, _| fast_line(s, names))
    }
}

/// One fast-path line at the start of `s`: the event and the line's length without its
/// `\n`. `None` for anything [`parse_line`] must see.
#[inline(always)]
fn fast_line(s: &[u8], names: &Names) -> Option<(Event, usize)> {
    let (thread, p) = names.threads.lookup_numbered(s, b'|')?;
    let rest = s.get(p + 1..)?;
    let (op, k) = match rest {
        [b'r', b'(', ..] => (Op::Read, 2),
        [b'w', b'(', ..] => (Op::Write, 2),
        [b'a', b'c', b'q', b'(', ..] => (Op::Acquire, 4),
        [b'r', b'e', b'l', b'(', ..] => (Op::Release, 4),
        [b'v', b'r', b'(', ..] => (Op::VolatileRead, 3),
        [b'v', b'w', b'(', ..] => (Op::VolatileWrite, 3),
        [b'f', b'o', b'r', b'k', b'(', ..] => (Op::Fork, 5),
        [b'j', b'o', b'i', b'n', b'(', ..] => (Op::Join, 5),
        _ => return None,
    };
    let start = p + 1 + k;
    let (target, q) = names
        .table(op.target_kind())
        .lookup_numbered(&s[start..], b')')?;
    let bar = start + q + 1;
    if s.get(bar) != Some(&b'|') {
        return None;
    }
    let (loc, r) = names.locs.lookup_numbered(&s[bar + 1..], b'\n')?;
    Some((
        Event::new(ThreadId(thread), op, target, LocId(loc)),
        bar + 1 + r,
    ))
}

/// Parses one non-skippable STD line: the event, its value part and, for an `alt(L)` line
/// (`THREAD|alt(L)|OP(TARGET)|LOC`), the location `L` of the branch it belongs to.
#[inline]
pub(crate) fn parse_line<'a>(
    line: &'a [u8],
    names: &mut Names,
    addrs: &mut Vec<AddrId>,
    last_thread: &mut Vec<u8>,
    last_thread_id: &mut ThreadId,
) -> Result<(Event, ValuePart<'a>, Option<&'a [u8]>)> {
    let Some(p1) = find_byte(line, b'|') else {
        return Err(Error::syntax(
            "expected `THREAD|OP(TARGET)|LOC`, found no `|`",
        ));
    };
    let mut rest = &line[p1 + 1..];
    // The location is the last field: a value expression in the event field may hold `|`
    // and `||` (`w(x)=a|b`, `br(a>0 || b>0)`).
    let Some(first) = find_byte(rest, b'|') else {
        return Err(Error::syntax(
            "expected `THREAD|OP(TARGET)|LOC`, found one `|` (missing location field)",
        ));
    };
    let mut p2 = memchr::memrchr(b'|', rest).unwrap_or(first);
    let mut alt = None;
    if let Some(arg) = trim(&rest[..first])
        .strip_prefix(b"alt(")
        .and_then(|a| a.strip_suffix(b")"))
    {
        let arg = trim(arg);
        check_name(arg, "branch location")?;
        alt = Some(arg);
        rest = &rest[first + 1..];
        let Some(p) = memchr::memrchr(b'|', rest) else {
            return Err(Error::syntax(
                "expected `THREAD|alt(LOC)|OP(TARGET)|LOC`, found no location field",
            ));
        };
        p2 = p;
    }
    let thread = trim(&line[..p1]);
    let opfield = trim(&rest[..p2]);
    let loc = trim(&rest[p2 + 1..]);
    // `|` inside the event field only in a value expression.
    if find_byte(opfield, b'|').is_some() && !has_expression(opfield) {
        return Err(Error::syntax("expected 3 `|`-separated fields, found more"));
    }
    check_name(thread, "thread")?;
    check_name(loc, "location")?;

    let (opname, arg, suffix) = match find_byte(opfield, b'(') {
        Some(open) => {
            let name = &opfield[..open];
            // The argument runs to the last `)` (names may hold parentheses, as Java method
            // signatures do), unless a value part follows it: `)=` after a write's target,
            // `)->` after a read's (the first such, since an expression may hold `)`).
            // Fast path, nearly every line: the first `)` ends the field, no value part.
            let plain = find_byte(&opfield[open..], b')') == Some(opfield.len() - open - 1);
            let value_at = match name {
                _ if plain => None,
                b"w" | b"vw" => memchr::memmem::find(&opfield[open..], b")="),
                b"r" | b"vr" => memchr::memmem::find(&opfield[open..], b")->"),
                _ => None,
            };
            let close = match value_at {
                Some(c) => Some(open + c),
                None => opfield.iter().rposition(|&b| b == b')'),
            };
            let Some(close) =
                close.filter(|&c| c > open && (value_at.is_some() || c + 1 == opfield.len()))
            else {
                return Err(Error::syntax(format!(
                    "operation `{}` has `(` without a closing `)`",
                    super::lines::Shown(opfield)
                )));
            };
            (name, Some(&opfield[open + 1..close]), &opfield[close + 1..])
        }
        None => (opfield, None, &opfield[opfield.len()..]),
    };
    let Some(op) = Op::from_std_name(opname) else {
        return Err(Error::new(ErrorKind::UnknownOp(super::lines::show(opname))));
    };
    let part = match (op, arg) {
        (Op::Local, Some(a)) => ValuePart::Let(a),
        (Op::Branch, Some(a)) => ValuePart::Cond(a),
        (Op::Local | Op::Branch, None) => {
            return Err(Error::syntax(format!(
                "operation `{op}` needs an argument: `let(REG=EXPR)` or `br(COND)`"
            )));
        }
        _ => value_suffix(op, suffix)?,
    };

    let thread_id = if super::lines::same_bytes(last_thread, thread) {
        *last_thread_id
    } else {
        let id = ThreadId(names.threads.intern(thread));
        last_thread.clear();
        last_thread.extend_from_slice(thread);
        *last_thread_id = id;
        id
    };

    let target = match arg {
        _ if op.is_value_op() => u32::MAX,
        None if op.target_optional() => u32::MAX,
        None => {
            return Err(Error::syntax(format!(
                "operation `{op}` needs a target: `{op}(NAME)`"
            )));
        }
        Some(a) => {
            let mut a = trim(a);
            if op == Op::MethodBegin {
                addrs.clear();
                if let Some(semi) = memchr::memchr(b';', a) {
                    for addr in a[semi + 1..].split(|&b| b == b',') {
                        let addr = trim(addr);
                        if addr.is_empty() {
                            continue; // `mbegin(M;)`: empty address set
                        }
                        check_name(addr, "address")?;
                        addrs.push(AddrId(names.addrs.intern(addr)));
                    }
                    a = trim(&a[..semi]);
                }
            } else if find_byte(a, b';').is_some() {
                return Err(Error::syntax(format!(
                    "`;` is only allowed in mbegin, not in `{op}`"
                )));
            }
            if a.is_empty() && op.target_optional() {
                u32::MAX
            } else {
                check_name(a, super::binary::kind_what(op.target_kind()))?;
                names.table_mut(op.target_kind()).intern(a)
            }
        }
    };
    let loc = names.intern_loc(loc);
    Ok((Event::new(thread_id, op, target, loc), part, alt))
}

/// The value part after `OP(TARGET)`: `=EXPR` for writes, `->REG[=VALUE]` for reads.
#[inline]
fn value_suffix(op: Op, suffix: &[u8]) -> Result<ValuePart<'_>> {
    if suffix.is_empty() {
        return Ok(ValuePart::None);
    }
    match op {
        Op::Write | Op::VolatileWrite => {
            if let Some(e) = suffix.strip_prefix(b"=") {
                return Ok(ValuePart::Written(e));
            }
        }
        Op::Read | Op::VolatileRead => {
            if let Some(r) = suffix.strip_prefix(b"->") {
                return Ok(match find_byte(r, b'=') {
                    Some(eq) => ValuePart::ReadInto(&r[..eq], Some(&r[eq + 1..])),
                    None => ValuePart::ReadInto(r, None),
                });
            }
        }
        _ => {}
    }
    Err(Error::syntax(format!(
        "unexpected `{}` after `{op}(…)` (values: `w(x)=EXPR`, `r(x)->REG=VALUE`)",
        super::lines::Shown(suffix)
    )))
}

/// True if an event field carries a value expression, where `|` is an operator: a write's
/// `)=EXPR`, a read's `)->REG=V`, `br(COND)`, `let(REG=EXPR)`.
fn has_expression(field: &[u8]) -> bool {
    field.starts_with(b"br(")
        || field.starts_with(b"let(")
        || memchr::memmem::find(field, b")=").is_some()
        || memchr::memmem::find(field, b")->").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::text::{check_blocks_equal_events, read_error, read_str};
    use crate::trace::Trace;

    /// The block path (with its fast path for numbered names) says exactly what the
    /// event-by-event path says: same events, lines, names in the same order, same errors,
    /// on lines that the fast path takes and lines it must leave (comments, CR, spaces,
    /// leading zeros, 8-digit numbers, other prefixes, value parts, mbegin, long lines).
    #[test]
    fn blocks_equal_events() {
        check_blocks_equal_events::<StdFormat>(
            12,
            (["r", "w", "acq", "rel", "vr", "fork"], "VVLLVT"),
            |t, op, target, l| format!("T{t}|{op}({target})|{l}"),
            &[
                "",
                "# c",
                "T0|w(V1)|3\r",
                " T0|w(V1)|3",
                "T0|w(V01)|3",
                "T0|w(V1)|03",
                "T0|w(V12345678)|3",
                "X0|w(V1)|3",
                "T0|w(x)|3",
                "T0|w(V1)=5|3",
                "T0|r(V1)->a=5|3",
                "T0|mbegin(M;A1,A2)|3",
                "T0|join(T1)|4",
                "T0|w(V1)|99999999999999999999",
                "T0|w(V1)",
                "T0|zz(V1)|3",
                "T0|w(V1)|1234567",
                "T0|w(V0)|0",
                "T0|w(V1) |3",
            ],
        );
    }

    #[test]
    fn spec_example() {
        let t = read_str::<StdFormat>("T0|fork(T1)|10\nT1|acq(L0)|11\nT1|w(V3)|12\nT1|rel(L0)|13\nT0|r(V3)|14\nT0|join(T1)|15\n")
            .unwrap();
        assert_eq!(t.len(), 6);
        assert_eq!(t.events[0].op, Op::Fork);
        assert_eq!(t.names.thread(t.events[0].other_thread()), "T1");
        assert_eq!(t.events[2].op, Op::Write);
        assert_eq!(t.names.var(t.events[2].var()), "V3");
        assert_eq!(t.names.loc(t.events[4].loc), "14");
        assert_eq!(t.events[2].var(), t.events[4].var());
        assert_eq!(t.lines, vec![1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn dash_is_no_location() {
        // `-` is what writers print for no location (a CSV trace's events): it reads back
        // as none, not as a location named `-`; `--` and `-1` are names.
        let t =
            read_str::<StdFormat>("T0|w(x)|-\nT1|w(x)| - \nT1|r(x)|--\nT0|r(x)|-1\nT0|r(x)|12\n")
                .unwrap();
        assert!(t.events[0].loc.is_none() && t.events[1].loc.is_none());
        assert_eq!(t.names.loc(t.events[2].loc), "--");
        assert_eq!(t.names.loc(t.events[3].loc), "-1");
        assert_eq!(t.names.loc(t.events[4].loc), "12");
        assert_eq!(t.names.locs.len(), 3);
    }

    #[test]
    fn extensions_comments_and_any_tokens() {
        let t = read_str::<StdFormat>(
            "# comment\n\nmain|mbegin(foo;a, b,c)|File.java:3:4\r\nmain|mend(foo)|x\nworker-1|vw(flag)|9\nmain|begin|1\nmain|end(M)|2\n  \nmain|sig(c)|3\nworker-1|wait(c)|4\n",
        )
        .unwrap();
        assert_eq!(t.len(), 7);
        assert_eq!(t.events[0].op, Op::MethodBegin);
        let a: Vec<&str> = t
            .addresses(0)
            .iter()
            .map(|a| t.names.addrs.name(a.0))
            .collect();
        assert_eq!(a, ["a", "b", "c"]);
        assert!(t.addresses(1).is_empty());
        assert_eq!(t.names.loc(t.events[0].loc), "File.java:3:4");
        assert_eq!(t.events[3].target, u32::MAX);
        assert_eq!(t.names.methods.name(t.events[4].target), "M");
        assert_eq!(t.lines[0], 3);
    }

    #[test]
    fn has_values_once_a_value_part_or_alt_line_is_seen() {
        use crate::trace::EventSource;
        let drain = |s: &str| {
            let mut r = StdReader::new(s.as_bytes());
            let mut flags = Vec::new();
            while r.next_event().unwrap().is_some() {
                flags.push(r.has_values());
            }
            (flags, r.has_values())
        };
        assert_eq!(drain("T0|w(x)|1\nT0|r(x)|2\n"), (vec![false, false], false));
        assert_eq!(
            drain("T0|w(x)|1\nT0|r(x)->a=0|2\nT0|w(y)|3\n"),
            (vec![false, true, true], true)
        );
        assert!(drain("T0|br(1)|1\n").1);
        assert_eq!(drain("T0|w(x)|1\nT0|alt(1)|w(y)|2\n"), (vec![false], true));
    }

    #[test]
    fn or_operators_in_value_expressions() {
        // `|` and `||` in a write's expression and a branch condition: the location is the
        // last field.
        let text = "T0|r(x)->a=3|1\nT0|w(y)=a|4|2\nT0|br(a > 2 || a < 1)|3\nT0|w(z)|4\n";
        let t = read_str::<StdFormat>(text).unwrap();
        assert_eq!(t.len(), 4);
        let vt = crate::trace::values::ValueTrace::read(text.as_bytes()).unwrap();
        assert_eq!(vt.concrete().unwrap().write_value[1], Some(7));
        // Outside an expression a fourth field is still an error.
        let e = read_str::<StdFormat>("T0|w(x)|1|2\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("found more"), "{e}");
    }

    #[test]
    fn errors_name_the_line() {
        let cases: &[(&str, &str)] = &[
            (
                "T0|w(V)|1\nT0|x(V)|2\n",
                ":2: syntax: unknown operation `x`",
            ),
            ("T0|w(V)\n", ":1: syntax: expected"),
            ("T0|w(V)|1|2\n", "found more"),
            ("|w(V)|1\n", "empty thread name"),
            ("T0|w()|1\n", "empty variable name"),
            ("T0|w(V|1\n", "without a closing"),
            ("T0|w|1\n", "needs a target"),
            ("T0|w(V)|\n", "empty location name"),
            ("T0|acq(L;x)|1\n", "`;` is only allowed"),
            ("T0w(V)1\n", "found no `|`"),
        ];
        for (input, want) in cases {
            let err = read_error::<StdFormat>(input, "t.std");
            assert!(
                err.contains(want),
                "input {input:?}: got {err:?}, want {want:?}"
            );
            assert!(err.starts_with("t.std:"), "{err}");
        }
        let err = Trace::read_from(&mut StdReader::new(&b"T0|w(\xff)|1\n"[..])).unwrap_err();
        assert!(err.to_string().contains("UTF-8"), "{err}");
    }
}
