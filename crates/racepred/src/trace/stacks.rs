//! Calling contexts of a trace's events: the `TRACE.stacks` file beside a trace recorded
//! by racepred's runtime (crates/racepred-rt), which reports read to show each racing
//! access's call stack, as ThreadSanitizer shows two stacks. The trace itself is not
//! changed: a trace without the file reads and reports as before.
//!
//! Text, one item per line:
//!
//! ```text
//! # racepred stacks 1
//! c ID FRAME<TAB>FRAME…    context ID: the call sites, innermost first (`file:line:col`)
//! e EVENT ID               event EVENT (0-based, in trace order) and the events after it,
//!                          up to the next `e` line, are in context ID
//! ```
//!
//! Contexts are interned (a context is written once, however many events share it) and
//! numbered 1, 2, … in the order of their `c` lines (which may come after the `e` lines
//! naming them: the runtime writes the events' contexts as it merges, the contexts'
//! frames at the end); `e` lines come in increasing event order; context 0 is the empty
//! stack (no call recorded) and is never written.

use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

const HEADER: &str = "# racepred stacks 1";

/// The stacks file of `trace`: `TRACE.stacks`.
pub fn sidecar(trace: &Path) -> PathBuf {
    let mut s = trace.as_os_str().to_owned();
    s.push(".stacks");
    PathBuf::from(s)
}

/// The calling contexts of a trace's events.
#[derive(Clone, Debug, Default)]
pub struct Stacks {
    /// Frames of context `i + 1`, innermost first.
    contexts: Vec<Vec<String>>,
    /// `(first event, context)`, by event.
    runs: Vec<(u64, u32)>,
    path: Option<PathBuf>,
}

impl Stacks {
    /// Reads `TRACE.stacks` beside `trace`, if there is one.
    pub fn beside(trace: &Path) -> io::Result<Option<Stacks>> {
        let path = sidecar(trace);
        match std::fs::File::open(&path) {
            Ok(f) => {
                let mut s = Stacks::read(io::BufReader::new(f))
                    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
                s.path = Some(path);
                Ok(Some(s))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        }
    }

    /// Reads a stacks file.
    pub fn read(r: impl BufRead) -> io::Result<Stacks> {
        let bad = |n: usize, what: &str| {
            io::Error::new(io::ErrorKind::InvalidData, format!("line {n}: {what}"))
        };
        let mut s = Stacks::default();
        for (i, line) in r.lines().enumerate() {
            let line = line?;
            let n = i + 1;
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (tag, rest) = line.split_at(line.find(' ').ok_or_else(|| bad(n, "no field"))?);
            let rest = &rest[1..];
            match tag {
                "c" => {
                    let (id, frames) = rest.split_once(' ').unwrap_or((rest, ""));
                    let id: usize = id.parse().map_err(|_| bad(n, "bad context id"))?;
                    if id != s.contexts.len() + 1 {
                        return Err(bad(n, "contexts must be numbered 1, 2, … in order"));
                    }
                    // A context may have no frame left (the runtime hides a thread's
                    // start): `c ID` alone.
                    s.contexts.push(match frames {
                        "" => Vec::new(),
                        f => f.split('\t').map(str::to_string).collect(),
                    });
                }
                "e" => {
                    let (ev, ctx) = rest.split_once(' ').ok_or_else(|| bad(n, "no context"))?;
                    let ev: u64 = ev.parse().map_err(|_| bad(n, "bad event number"))?;
                    let ctx: u32 = ctx.parse().map_err(|_| bad(n, "bad context id"))?;
                    if s.runs.last().is_some_and(|&(e, _)| e >= ev) {
                        return Err(bad(n, "events out of order"));
                    }
                    s.runs.push((ev, ctx));
                }
                _ => return Err(bad(n, "unknown line")),
            }
        }
        if let Some(&(e, c)) = s.runs.iter().find(|&&(_, c)| c as usize > s.contexts.len()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("event {e}: context {c} is not defined"),
            ));
        }
        Ok(s)
    }

    /// The call sites of event `index`'s calling context, innermost first (empty: none
    /// recorded).
    pub fn of(&self, index: u64) -> &[String] {
        let i = self.runs.partition_point(|&(e, _)| e <= index);
        match i.checked_sub(1).map(|i| self.runs[i].1) {
            Some(c) if c > 0 => &self.contexts[c as usize - 1],
            _ => &[],
        }
    }

    /// The file read, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
}

/// Writes a stacks file: the events' contexts as the events go out, then the contexts.
pub struct StacksWriter<W: Write> {
    w: W,
    last: u32,
}

impl<W: Write> StacksWriter<W> {
    pub fn new(mut w: W) -> io::Result<StacksWriter<W>> {
        writeln!(w, "{HEADER}")?;
        Ok(StacksWriter { w, last: 0 })
    }

    /// Event `index` (after every event given before) is in context `ctx`.
    #[inline]
    pub fn event(&mut self, index: u64, ctx: u32) -> io::Result<()> {
        if ctx == self.last {
            return Ok(());
        }
        self.last = ctx;
        // Digits by hand: a call-heavy run changes context at every call and return, and
        // `writeln!`'s formatting machinery costs more than the line's bytes.
        let mut line = [0u8; 2 + 20 + 1 + 10 + 1];
        line[..2].copy_from_slice(b"e ");
        let mut n = 2 + put_digits(&mut line[2..], index);
        line[n] = b' ';
        n += 1;
        n += put_digits(&mut line[n..], u64::from(ctx));
        line[n] = b'\n';
        self.w.write_all(&line[..n + 1])
    }

    /// Writes the contexts 1, 2, …: each one's frames, innermost first.
    pub fn finish<S: AsRef<str>>(
        mut self,
        contexts: impl IntoIterator<Item = impl IntoIterator<Item = S>>,
    ) -> io::Result<W> {
        for (i, frames) in contexts.into_iter().enumerate() {
            write!(self.w, "c {}", i + 1)?;
            for (j, frame) in frames.into_iter().enumerate() {
                self.w.write_all(if j == 0 { b" " } else { b"\t" })?;
                self.w.write_all(frame.as_ref().as_bytes())?;
            }
            self.w.write_all(b"\n")?;
        }
        self.w.flush()?;
        Ok(self.w)
    }
}

/// Writes `v` in decimal at the start of `out`; returns the number of digits.
fn put_digits(out: &mut [u8], mut v: u64) -> usize {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let d = tmp.len() - i;
    out[..d].copy_from_slice(&tmp[i..]);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_contexts_read_back_by_event() {
        let mut w = StacksWriter::new(Vec::new()).unwrap();
        for (ev, ctx) in [(0, 0), (1, 1), (2, 1), (3, 2), (4, 2), (5, 0), (6, 1)] {
            w.event(ev, ctx).unwrap();
        }
        let bytes = w
            .finish([vec!["main.c:30:3"], vec!["f.c:5:1", "main.c:30:3"]])
            .unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert_eq!(
            text,
            "# racepred stacks 1\ne 1 1\ne 3 2\ne 5 0\ne 6 1\nc 1 main.c:30:3\nc 2 f.c:5:1\tmain.c:30:3\n"
        );
        let s = Stacks::read(&bytes[..]).unwrap();
        assert!(s.of(0).is_empty());
        assert_eq!(s.of(2), ["main.c:30:3"]);
        assert_eq!(s.of(4), ["f.c:5:1", "main.c:30:3"]);
        assert!(s.of(5).is_empty());
        assert_eq!(s.of(100), ["main.c:30:3"]);
    }

    #[test]
    fn event_lines_carry_any_number() {
        let mut w = StacksWriter::new(Vec::new()).unwrap();
        w.event(0, u32::MAX).unwrap();
        w.event(u64::MAX, 10).unwrap();
        let bytes = w.finish(Vec::<Vec<String>>::new()).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            format!("# racepred stacks 1\ne 0 {}\ne {} 10\n", u32::MAX, u64::MAX)
        );
    }

    #[test]
    fn a_context_without_frames_reads_as_empty() {
        let mut w = StacksWriter::new(Vec::new()).unwrap();
        w.event(0, 1).unwrap();
        let bytes = w.finish([Vec::<String>::new()]).unwrap();
        assert_eq!(bytes, b"# racepred stacks 1\ne 0 1\nc 1\n");
        let s = Stacks::read(&bytes[..]).unwrap();
        assert!(s.of(0).is_empty());
    }

    #[test]
    fn malformed_files_are_errors() {
        for bad in [
            "e 1 1\n",
            "c 2 x\n",
            "c 1 x\ne 3 1\ne 2 1\n",
            "z 1\n",
            "e 0 2\nc 1 x\n",
        ] {
            assert!(Stacks::read(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }
}
