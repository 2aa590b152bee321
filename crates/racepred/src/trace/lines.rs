//! Line splitting shared by the text readers: one reusable buffer, memchr for newlines.

use std::io::{BufRead, Read};

use crate::error::{Error, ErrorKind, Position, Result};

/// Reads lines into a buffer it owns, counting lines and bytes (ripgrep's `line_buffer`,
/// simplified: the caller parses the bytes of one line before asking for the next).
pub struct LineReader<R> {
    rdr: R,
    buf: Vec<u8>,
    /// 1-based number of the line in `buf`.
    line: u64,
    /// Byte offset of the start of the line in `buf`.
    byte: u64,
    next_byte: u64,
}

/// Buffer size for text readers (large reads matter for decompressed streams).
pub const READ_BUF: usize = 1 << 20;

impl<R: Read> LineReader<std::io::BufReader<R>> {
    pub fn new(rdr: R) -> Self {
        LineReader::from_buf_read(std::io::BufReader::with_capacity(READ_BUF, rdr))
    }
}

impl<R: BufRead> LineReader<R> {
    pub fn from_buf_read(rdr: R) -> Self {
        LineReader {
            rdr,
            buf: Vec::with_capacity(256),
            line: 0,
            byte: 0,
            next_byte: 0,
        }
    }

    /// The next line without its `\n` / `\r\n`, or `None` at the end of input.
    #[inline]
    pub fn next_line(&mut self) -> Result<Option<&[u8]>> {
        self.buf.clear();
        let n = self.rdr.read_until(b'\n', &mut self.buf).map_err(|e| {
            Error::new(ErrorKind::Io(e)).at(Position {
                line: self.line + 1,
                byte: self.next_byte,
                event: None,
            })
        })?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        self.byte = self.next_byte;
        self.next_byte += n as u64;
        let mut end = self.buf.len();
        if end > 0 && self.buf[end - 1] == b'\n' {
            end -= 1;
        }
        if end > 0 && self.buf[end - 1] == b'\r' {
            end -= 1;
        }
        Ok(Some(&self.buf[..end]))
    }

    /// 1-based number of the current line.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// Byte offset of the current line.
    pub fn byte(&self) -> u64 {
        self.byte
    }

    /// Bytes consumed so far.
    pub fn consumed(&self) -> u64 {
        self.next_byte
    }
}

/// True for lines every text reader skips: blank, or starting with `#`.
#[inline]
pub fn is_skippable(line: &[u8]) -> bool {
    match line.iter().position(|b| !b.is_ascii_whitespace()) {
        None => true,
        Some(i) => line[i] == b'#',
    }
}

/// Trims ASCII whitespace at both ends.
#[inline]
pub fn trim(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if first.is_ascii_whitespace() {
            s = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = s {
        if last.is_ascii_whitespace() {
            s = rest;
        } else {
            break;
        }
    }
    s
}

/// Checks that a name is non-empty UTF-8.
#[inline]
pub fn check_name(s: &[u8], what: &'static str) -> Result<()> {
    if s.is_empty() {
        return Err(Error::new(ErrorKind::EmptyName(what)));
    }
    // ASCII fast path: nearly every name in real traces.
    if !s.is_ascii() && std::str::from_utf8(s).is_err() {
        return Err(Error::new(ErrorKind::NonUtf8));
    }
    Ok(())
}
