//! The one streaming reader behind every text format: lines in, events out.
//!
//! A text format (STD, RoadRunner, RAPID CSV, the SSHB Go-tool logs) is a [`LineFormat`]: it
//! turns one line into at most one event (plus, for CSV's `sync`, events queued for the next
//! calls) and keeps whatever per-format state it needs. [`TextReader`] owns the rest — the
//! [`LineReader`], the name tables, the event count and the error positions — and is the
//! [`EventSource`]. Each format module names its reader as an alias, e.g.
//! `StdReader<R> = TextReader<R, StdFormat>`.

use std::io::{BufRead, Read};

use super::lines::{is_skippable, LineReader};
use super::{AddrId, Event, EventBlock, EventSource, Names};
use crate::error::{Position, Result};

/// How one text format reads a line.
///
/// `parse` sees every line that `skip` does not drop, and returns `Ok(None)` for one that
/// holds no event after all (a RoadRunner `Dummy`, a CSV header). An error is returned
/// without a position; the reader attaches the line's.
pub trait LineFormat: Default {
    /// True for a line to pass over without parsing: by default blank lines and lines
    /// starting with `#` ([`is_skippable`]).
    #[inline(always)]
    fn skip(line: &[u8]) -> bool {
        line.is_empty() || is_skippable(line)
    }

    /// For a format whose `skip` passes over more than blank and `#` lines (RoadRunner's
    /// banners): what it skips. A file in which every such line was skipped and no event
    /// was read is refused: it is most likely another format read as this one.
    const SKIPS: Option<&'static str> = None;

    /// Parses one line (without its line ending); `lineno` is its 1-based number.
    fn parse(&mut self, line: &[u8], lineno: u64, names: &mut Names) -> Result<Option<Event>>;

    /// An event queued by the last line, returned before the next line is read (CSV's
    /// `sync` rows expand to four events).
    #[inline(always)]
    fn pending(&mut self) -> Option<Event> {
        None
    }

    /// The address set of the last event returned ([`EventSource::addresses`]).
    #[inline(always)]
    fn addresses(&self) -> &[AddrId] {
        &[]
    }

    /// The global access number of the last event returned ([`EventSource::seq`]); only
    /// asked once an event has been returned.
    #[inline(always)]
    fn seq(&self) -> Option<u64> {
        None
    }

    /// True once a line with a value part or an alternative-path line has been read
    /// ([`EventSource::has_values`]).
    #[inline(always)]
    fn has_values(&self) -> bool {
        false
    }

    /// The format's fast path: parses the leading lines of `lines` that it can turn into
    /// an event cheaply (mostly: with names already interned), appending their events to
    /// its `out` ([`FastLines::collect`]), and stops at the first line it leaves to
    /// [`parse`](Self::parse) (a comment, a new name, anything unusual). It must give exactly
    /// the events `parse` would; events it returns have no side data. The default takes
    /// nothing.
    #[inline(always)]
    fn fast_lines(&mut self, lines: FastLines<'_>, names: &mut Names) -> FastRun {
        let _ = (lines, names);
        FastRun::default()
    }
}

/// The lines a [`LineFormat::fast_lines`] call may take: complete lines at the start of
/// `buf`, each ending in `\n`, at most `room` of them and none longer than `max_line`, their
/// events appended to `out`.
pub struct FastLines<'a> {
    pub buf: &'a [u8],
    pub room: usize,
    pub max_line: usize,
    pub out: &'a mut Vec<Event>,
}

/// What a [`LineFormat::fast_lines`] call took: `lines` lines (one event each), `bytes`
/// bytes in all, the last line starting at `last_start`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FastRun {
    pub lines: usize,
    pub bytes: usize,
    pub last_start: usize,
}

impl FastLines<'_> {
    /// The loop of a fast path: `line(rest, k)` parses the line at the start of `rest` (the
    /// `k`-th of this run) into its event and its length without the `\n`, or declines.
    /// Stops at the first line declined or longer than `max_line`, or after `room` events.
    #[inline(always)]
    pub fn collect(self, mut line: impl FnMut(&[u8], usize) -> Option<(Event, usize)>) -> FastRun {
        let FastLines {
            buf,
            room,
            max_line,
            out,
        } = self;
        let mut run = FastRun::default();
        let mut at = 0;
        while run.lines < room {
            let Some((ev, len)) = line(&buf[at..], run.lines) else {
                break;
            };
            if len > max_line {
                break;
            }
            out.push(ev);
            run.last_start = at;
            at += len + 1;
            run.lines += 1;
        }
        run.bytes = at;
        run
    }
}

/// Streaming reader of a text format `F` from `R`.
pub struct TextReader<R, F> {
    lines: LineReader<R>,
    names: Names,
    /// Events returned so far.
    events: u64,
    /// Lines skipped although not blank or a `#` comment (see [`LineFormat::SKIPS`]).
    banners: u64,
    format: F,
}

impl<R: Read, F: LineFormat> TextReader<std::io::BufReader<R>, F> {
    /// Reads from `rdr` through a large buffer.
    pub fn new(rdr: R) -> Self {
        TextReader::from_lines(LineReader::new(rdr))
    }
}

impl<R: BufRead, F: LineFormat> TextReader<R, F> {
    /// Reads from an already buffered reader (e.g. a decompressor).
    pub fn from_buf_read(rdr: R) -> Self {
        TextReader::from_lines(LineReader::from_buf_read(rdr))
    }

    fn from_lines(lines: LineReader<R>) -> Self {
        TextReader {
            lines,
            names: Names::new(),
            events: 0,
            banners: 0,
            format: F::default(),
        }
    }
}

impl<R: BufRead, F> TextReader<R, F> {
    /// Sets the longest line accepted (default [`DEFAULT_MAX_LINE`](super::lines::DEFAULT_MAX_LINE)).
    pub fn set_max_line(&mut self, max: usize) {
        self.lines.set_max_line(max);
    }
}

/// A line the format would skip (a comment, a banner, a header) holds NUL bytes: binary
/// data, not text, and never skipped silently. (Lines with events fail in their own parser.)
#[cold]
#[inline(never)]
fn nul_error<R: BufRead>(lines: &LineReader<R>, events: u64) -> crate::error::Error {
    crate::error::Error::syntax("line contains NUL bytes: binary data, not a text trace").at(
        Position {
            line: lines.line(),
            byte: lines.byte(),
            event: Some(events),
        },
    )
}

/// Every line of the file was skipped (see [`LineFormat::SKIPS`]) and none held an event.
#[cold]
#[inline(never)]
fn no_event_error<R: BufRead>(
    lines: &LineReader<R>,
    skipped: &str,
    banners: u64,
) -> crate::error::Error {
    crate::error::Error::syntax(format!(
        "no event in the file: all {banners} line(s) were skipped as {skipped}; \
         is it in another format? (--format, or the file's extension, chose this one)"
    ))
    .at(Position {
        line: lines.line(),
        byte: lines.byte(),
        event: Some(0),
    })
}

impl<R: BufRead, F: LineFormat> EventSource for TextReader<R, F> {
    #[inline]
    fn next_event(&mut self) -> Result<Option<Event>> {
        if let Some(ev) = self.format.pending() {
            self.events += 1;
            return Ok(Some(ev));
        }
        loop {
            // Taken before `next_line`, whose line borrows the reader.
            let lineno = self.lines.line() + 1;
            let Some(line) = self.lines.next_line()? else {
                if let (Some(what), 0, 1..) = (F::SKIPS, self.events, self.banners) {
                    return Err(no_event_error(&self.lines, what, self.banners));
                }
                return Ok(None);
            };
            if F::skip(line) {
                if memchr::memchr(0, line).is_some() {
                    return Err(nul_error(&self.lines, self.events));
                }
                if F::SKIPS.is_some() && !is_skippable(line) {
                    self.banners += 1;
                }
                continue;
            }
            match self.format.parse(line, lineno, &mut self.names) {
                Ok(Some(ev)) => {
                    // A parser may take a NUL for part of a name: not text either.
                    if memchr::memchr(0, line).is_some() {
                        return Err(nul_error(&self.lines, self.events));
                    }
                    self.events += 1;
                    return Ok(Some(ev));
                }
                Ok(None) => {
                    if memchr::memchr(0, line).is_some() {
                        return Err(nul_error(&self.lines, self.events));
                    }
                    continue;
                }
                Err(e) => {
                    return Err(e.at(Position {
                        line: self.lines.line(),
                        byte: self.lines.byte(),
                        event: Some(self.events),
                    }))
                }
            }
        }
    }

    fn read_block(&mut self, block: &mut EventBlock, max: usize) -> Result<bool> {
        block.clear();
        while block.events.len() < max {
            if let Some(ev) = self.format.pending() {
                self.events += 1;
                let line = self.lines.line();
                block.push_from(ev, line, self);
                continue;
            }
            // As many lines as the fast path takes, then one line the general way.
            let first_line = self.lines.line() + 1;
            // A read error comes with its position, as from `next_line`.
            let max_line = self.lines.max_line();
            let lines = self.lines.complete_lines()?;
            let fast = FastLines {
                buf: lines,
                room: max - block.events.len(),
                max_line,
                out: &mut block.events,
            };
            let run = self.format.fast_lines(fast, &mut self.names);
            if run.lines > 0 {
                block
                    .lines
                    .extend(first_line..first_line + run.lines as u64);
                self.lines
                    .advance(run.bytes, run.lines as u64, run.last_start);
                self.events += run.lines as u64;
                continue;
            }
            match self.next_event()? {
                Some(ev) => {
                    let line = self.lines.line();
                    block.push_from(ev, line, self);
                }
                None => break,
            }
        }
        block.bytes_read = self.lines.consumed();
        Ok(!block.events.is_empty())
    }

    fn names(&self) -> &Names {
        &self.names
    }

    fn position(&self) -> Position {
        Position {
            line: self.lines.line(),
            byte: self.lines.byte(),
            event: self.events.checked_sub(1),
        }
    }

    fn addresses(&self) -> &[AddrId] {
        self.format.addresses()
    }

    fn seq(&self) -> Option<u64> {
        if self.events > 0 {
            self.format.seq()
        } else {
            None
        }
    }

    fn bytes_read(&self) -> u64 {
        self.lines.consumed()
    }

    fn has_values(&self) -> bool {
        self.format.has_values()
    }
}

/// The trace that a reader of format `F` reads from `text` (for the readers' tests).
#[cfg(test)]
pub(crate) fn read_str<F: LineFormat>(text: &str) -> Result<super::Trace> {
    super::Trace::read_from(&mut TextReader::<_, F>::new(text.as_bytes()))
}

/// The error, as shown for a file named `file`, that a reader of format `F` meets on `text`
/// (for the readers' tests); panics if it reads `text` without one.
#[cfg(test)]
pub(crate) fn read_error<F: LineFormat>(text: &str, file: &str) -> String {
    read_str::<F>(text).unwrap_err().in_file(file).to_string()
}

/// The property the text readers' tests check, on 400 random inputs of up to 40 lines:
/// reading them in blocks (of 1 to 5 events and of 4096) says exactly what reading event by
/// event says ([`transcript`]). Four lines in five are `line(thread, op, target, extra)` of
/// small numbers (`thread` < 3, `extra` < `extra_below`), `op` one of the format's
/// spellings `ops` and `target` one of 4 objects of the kind that the letter of `targets` at
/// the same place says: `V` variable `V<n>`, `L` lock `L<n>`, `T` thread `T<n>` and `N`
/// thread `<n>` (threads numbered from 1, not the usual parent 0). These are lines the fast
/// path takes; the others are the format's `special` lines, which it must leave.
#[cfg(test)]
pub(crate) fn check_blocks_equal_events<F: LineFormat>(
    extra_below: u32,
    (ops, targets): ([&'static str; 6], &'static str),
    line: fn(u32, &str, &str, u32) -> String,
    special: &[&'static str],
) {
    use proptest::prelude::*;
    let random_line = move |(t, o, v, x): (u32, usize, u32, u32)| {
        let target = match targets.as_bytes()[o] {
            b'V' => format!("V{v}"),
            b'L' => format!("L{v}"),
            b'T' => format!("T{}", v + 1),
            _ => format!("{}", v + 1),
        };
        line(t, ops[o], &target, x)
    };
    let lines = proptest::collection::vec(
        prop_oneof![
            4 => (0u32..3, 0usize..6, 0u32..4, 0..extra_below).prop_map(random_line),
            1 => proptest::sample::select(special.to_vec()).prop_map(String::from),
        ],
        0..40,
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(400));
    let cases = (lines, 1usize..6, proptest::bool::ANY);
    let result = runner.run(&cases, |(lines, max, end_newline)| {
        let mut text = lines.join("\n");
        if end_newline {
            text.push('\n');
        }
        let one = transcript::<F>(text.as_bytes(), None);
        prop_assert_eq!(&one, &transcript::<F>(text.as_bytes(), Some(max)));
        prop_assert_eq!(&one, &transcript::<F>(text.as_bytes(), Some(4096)));
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Everything a reader says about its input, event by event: the event, its line and
/// side data, or the error (message with position).
#[cfg(test)]
pub(crate) fn transcript<F: LineFormat>(text: &[u8], blocks: Option<usize>) -> Vec<String> {
    let mut r = TextReader::<_, F>::new(text);
    r.set_max_line(24);
    let mut out = Vec::new();
    match blocks {
        None => loop {
            match r.next_event() {
                Ok(Some(ev)) => out.push(format!(
                    "{ev:?} line {} {:?}",
                    r.position().line,
                    r.addresses()
                )),
                Ok(None) => break,
                Err(e) => {
                    out.push(e.to_string());
                    break;
                }
            }
        },
        Some(max) => {
            let mut b = EventBlock::new();
            loop {
                let res = r.read_block(&mut b, max);
                for i in 0..b.len() {
                    out.push(format!(
                        "{:?} line {} {:?}",
                        b.events[i],
                        b.lines[i],
                        b.side(i).0
                    ));
                }
                match res {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => {
                        out.push(e.to_string());
                        break;
                    }
                }
            }
        }
    }
    let n = r.names();
    out.push(format!(
        "{:?} {:?} {:?} {:?}",
        n.threads.iter().collect::<Vec<_>>(),
        n.vars.iter().collect::<Vec<_>>(),
        n.locks.iter().collect::<Vec<_>>(),
        n.locs.iter().collect::<Vec<_>>()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::trace::{LocId, Op, ThreadId};

    /// A toy format: a line of `k` `x`s is `k` writes (one returned, the rest queued), `!` is
    /// an error, `-` holds no event; the line number is the event's `seq`.
    #[derive(Default)]
    struct Xs {
        queued: u32,
        seq: u64,
    }

    impl LineFormat for Xs {
        fn parse(&mut self, line: &[u8], lineno: u64, names: &mut Names) -> Result<Option<Event>> {
            match line {
                b"!" => Err(Error::syntax("bang")),
                b"-" => Ok(None),
                _ => {
                    let t = ThreadId(names.threads.intern(b"T"));
                    self.queued = line.len() as u32 - 1;
                    self.seq = lineno;
                    Ok(Some(Event::new(t, Op::Write, 0, LocId::NONE)))
                }
            }
        }

        fn pending(&mut self) -> Option<Event> {
            (self.queued > 0).then(|| {
                self.queued -= 1;
                Event::new(ThreadId(0), Op::Write, 0, LocId::NONE)
            })
        }

        fn seq(&self) -> Option<u64> {
            Some(self.seq)
        }
    }

    #[test]
    fn skips_queues_and_positions() {
        let mut r = TextReader::<_, Xs>::new(&b"# c\nxx\n\n-\nx\n!\n"[..]);
        assert_eq!(r.seq(), None, "no event yet");
        let mut got = Vec::new();
        while let Some(_ev) = r.next_event().unwrap_or(None) {
            let p = r.position();
            got.push((p.line, p.byte, p.event, r.seq()));
        }
        assert_eq!(
            got,
            [
                (2, 4, Some(0), Some(2)),
                (2, 4, Some(1), Some(2)),
                (5, 10, Some(2), Some(5)),
            ]
        );
        let mut r = TextReader::<_, Xs>::new(&b"x\n!\n"[..]);
        r.next_event().unwrap();
        let e = r.next_event().unwrap_err();
        assert_eq!(
            e.position(),
            Some(Position {
                line: 2,
                byte: 2,
                event: Some(1)
            })
        );
        assert_eq!(r.bytes_read(), 4);
    }
}
