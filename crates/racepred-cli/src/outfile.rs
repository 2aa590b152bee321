//! Output files: never one of the inputs, and written whole or not at all.
//!
//! Every command that writes a file first calls [`refuse_inputs`] (an output that is an
//! input — by device and inode, so also through a hard link, a symbolic link or another
//! relative path — would destroy the input while it is read), then writes through
//! [`Out`] or the library's trace writers, both of which write a temporary file beside the
//! destination and rename it into place only when the run succeeds.

use std::io::{self, BufWriter, StdoutLock, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::{bail, Result};
use racepred::trace::write::AtomicFile;

/// (device, inode) of an existing path, following symbolic links.
fn file_id(p: &Path) -> Option<(u64, u64)> {
    let m = std::fs::metadata(p).ok()?;
    Some((m.dev(), m.ino()))
}

/// Refuses any output that is the same file as an input. `-` (standard input) is no file;
/// outputs that do not exist yet cannot be an input. Special files (`/dev/null`, a
/// terminal) are not refused: writing them does not touch the input.
pub fn refuse_inputs(inputs: &[&Path], outputs: &[Option<&Path>]) -> Result<()> {
    for out in outputs.iter().flatten() {
        let Some(id) = file_id(out) else { continue };
        if !std::fs::metadata(out).is_ok_and(|m| m.is_file()) {
            continue;
        }
        for input in inputs {
            if *input == Path::new("-") {
                continue;
            }
            if file_id(input) == Some(id) {
                let same = if out == input {
                    String::new()
                } else {
                    format!(" `{}`", input.display())
                };
                bail!(
                    "refusing to write `{}`: it is the input trace{same} (the input would be \
                     lost); write to another file",
                    out.display()
                );
            }
        }
    }
    Ok(())
}

/// Standard output, or a file that appears only when [`Out::finish`] succeeds.
pub enum Out {
    Stdout(BufWriter<StdoutLock<'static>>),
    File(BufWriter<AtomicFile>),
}

impl Out {
    /// Standard output for `None`, else the file `path` (written through a temporary file).
    pub fn create(path: Option<&Path>) -> Result<Out> {
        Ok(match path {
            Some(p) => Out::File(BufWriter::new(AtomicFile::create(p)?)),
            None => Out::Stdout(BufWriter::new(io::stdout().lock())),
        })
    }

    /// Flushes, and puts a file in place. Dropping an `Out` without `finish` (a failed run)
    /// leaves no file and an existing one untouched.
    pub fn finish(self) -> Result<()> {
        match self {
            Out::Stdout(mut w) => w.flush()?,
            Out::File(w) => {
                let path = w.get_ref().path().to_path_buf();
                let f = w.into_inner().map_err(|e| named(e.into_error(), &path))?;
                f.commit()?;
            }
        }
        Ok(())
    }
}

/// Writes `buf` with its control characters made visible: names and locations come from
/// traces and location tables written by others, and must not drive the reader's terminal
/// (clear it, move the cursor, retitle the window), as `git` quotes such bytes in paths.
/// C0 controls other than the newline, DEL and the C1 controls (U+0080–U+009F, UTF-8
/// `C2 80`–`C2 9F`) become `\u00NN`; every other byte passes unchanged. That is JSON's own
/// escape: JSON and SARIF output (which escape C0 controls themselves but may hold DEL and
/// C1 raw) stays valid and means the same.
pub fn write_escaped(w: &mut impl Write, buf: &[u8]) -> io::Result<()> {
    let mut start = 0;
    let mut i = 0;
    while i < buf.len() {
        let b = buf[i];
        let c1 = b == 0xc2 && buf.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n));
        if (b < 0x20 && b != b'\n') || b == 0x7f || c1 {
            w.write_all(&buf[start..i])?;
            if c1 {
                write!(w, "\\u{:04x}", buf[i + 1])?;
                i += 2;
            } else {
                write!(w, "\\u{b:04x}")?;
                i += 1;
            }
            start = i;
        } else {
            i += 1;
        }
    }
    w.write_all(&buf[start..])
}

/// `s` with its control characters made visible as [`write_escaped`] does (for messages on
/// standard error).
pub fn escaped(s: &str) -> String {
    let mut v = Vec::with_capacity(s.len());
    let _ = write_escaped(&mut v, s.as_bytes());
    String::from_utf8_lossy(&v).into_owned()
}

/// An error writing `path`, with its name (the kind kept: a closed pipe stays one).
fn named(e: io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
}

impl Write for Out {
    /// Everything written goes through [`write_escaped`].
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Out::Stdout(w) => write_escaped(w, buf),
            Out::File(w) => write_escaped(w, buf).map_err(|e| named(e, w.get_ref().path())),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Stdout(w) => w.flush(),
            Out::File(w) => w.flush().map_err(|e| named(e, w.get_ref().path())),
        }
    }
}
