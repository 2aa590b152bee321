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
                let f = w.into_inner().map_err(|e| e.into_error())?;
                f.commit()?;
            }
        }
        Ok(())
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Out::Stdout(w) => w.write(buf),
            Out::File(w) => w.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Out::Stdout(w) => w.write_all(buf),
            Out::File(w) => w.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Stdout(w) => w.flush(),
            Out::File(w) => w.flush(),
        }
    }
}
