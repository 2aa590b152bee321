//! RAPID's STD text format: `THREAD|OP(TARGET)|LOC`, one event per line (SPEC §1).
//!
//! Any token is accepted as a thread, target or location name; blank lines and lines
//! starting with `#` are skipped. `mbegin(M;A1,A2)` carries an address set; `begin` and `end`
//! may omit their argument. Everything else is an error naming the line.

use super::lines::{check_name, find_byte, trim};
use super::text::{LineFormat, TextReader};
use super::{AddrId, Event, LocId, Names, Op, ThreadId};
use crate::error::{Error, ErrorKind, Result};

/// Streaming STD reader.
pub type StdReader<R> = TextReader<R, StdFormat>;

/// The STD [`LineFormat`]: the `mbegin` address set of the last event and a cache of the
/// last thread token.
pub struct StdFormat {
    addrs: Vec<AddrId>,
    /// Cache of the last thread token: consecutive events mostly come from one thread.
    last_thread: Vec<u8>,
    last_thread_id: ThreadId,
}

impl Default for StdFormat {
    fn default() -> Self {
        StdFormat {
            addrs: Vec::new(),
            last_thread: Vec::new(),
            last_thread_id: ThreadId::NONE,
        }
    }
}

impl LineFormat for StdFormat {
    #[inline]
    fn parse(&mut self, line: &[u8], _lineno: u64, names: &mut Names) -> Result<Option<Event>> {
        self.addrs.clear();
        parse_line(
            line,
            names,
            &mut self.addrs,
            &mut self.last_thread,
            &mut self.last_thread_id,
        )
        .map(Some)
    }

    fn addresses(&self) -> &[AddrId] {
        &self.addrs
    }
}

/// Parses one non-skippable STD line.
#[inline]
fn parse_line(
    line: &[u8],
    names: &mut Names,
    addrs: &mut Vec<AddrId>,
    last_thread: &mut Vec<u8>,
    last_thread_id: &mut ThreadId,
) -> Result<Event> {
    let Some(p1) = find_byte(line, b'|') else {
        return Err(Error::syntax(
            "expected `THREAD|OP(TARGET)|LOC`, found no `|`",
        ));
    };
    let rest = &line[p1 + 1..];
    let Some(p2) = find_byte(rest, b'|') else {
        return Err(Error::syntax(
            "expected `THREAD|OP(TARGET)|LOC`, found one `|` (missing location field)",
        ));
    };
    let thread = trim(&line[..p1]);
    let opfield = trim(&rest[..p2]);
    let loc = trim(&rest[p2 + 1..]);
    if find_byte(loc, b'|').is_some() {
        return Err(Error::syntax("expected 3 `|`-separated fields, found more"));
    }
    check_name(thread, "thread")?;
    check_name(loc, "location")?;

    let (opname, arg) = match find_byte(opfield, b'(') {
        Some(open) => {
            if opfield.last() != Some(&b')') {
                return Err(Error::syntax(format!(
                    "operation `{}` has `(` without a closing `)`",
                    super::lines::Shown(opfield)
                )));
            }
            (
                &opfield[..open],
                Some(&opfield[open + 1..opfield.len() - 1]),
            )
        }
        None => (opfield, None),
    };
    let Some(op) = Op::from_std_name(opname) else {
        return Err(Error::new(ErrorKind::UnknownOp(super::lines::show(opname))));
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
    let loc = LocId(names.locs.intern(loc));
    Ok(Event::new(thread_id, op, target, loc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    fn read(s: &str) -> Result<Trace> {
        Trace::read_from(&mut StdReader::new(s.as_bytes()))
    }

    #[test]
    fn spec_example() {
        let t = read("T0|fork(T1)|10\nT1|acq(L0)|11\nT1|w(V3)|12\nT1|rel(L0)|13\nT0|r(V3)|14\nT0|join(T1)|15\n")
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
    fn extensions_comments_and_any_tokens() {
        let t = read(
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
            let err = read(input).unwrap_err().in_file("t.std").to_string();
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
