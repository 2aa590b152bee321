//! Output files that appear whole or not at all.
//!
//! An [`AtomicFile`] writes to a temporary file in the directory of its destination and
//! renames it into place on [`commit`](AtomicFile::commit). A run that fails (or panics, or
//! drops the file without committing) removes the temporary file, so it leaves neither a
//! partial output nor a damaged previous version of it. An existing destination keeps its
//! permissions; a symbolic link is followed (the link stays, its target is replaced).
//! Destinations that are not regular files (`/dev/null`, a FIFO, a terminal) cannot be
//! replaced by a rename and are written in place.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};

/// The temporary files of the [`AtomicFile`]s not yet committed or dropped, for
/// [`remove_temporaries`].
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn pending() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    // A panic while the list was held leaves it valid.
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

fn forget(tmp: &Path) {
    let mut p = pending();
    if let Some(i) = p.iter().position(|t| t == tmp) {
        p.swap_remove(i);
    }
}

/// Removes the temporary file of every [`AtomicFile`] still being written: for a process
/// about to end without unwinding (a fatal signal), which would otherwise leave them behind.
/// Those files' writers must not be used afterwards.
pub fn remove_temporaries() {
    for tmp in pending().drain(..) {
        let _ = std::fs::remove_file(tmp);
    }
}

/// A file written through a temporary file renamed into place on commit.
pub struct AtomicFile {
    file: File,
    /// The temporary file (`None` when writing in place).
    tmp: Option<PathBuf>,
    dest: PathBuf,
}

impl AtomicFile {
    /// Starts writing `path`; nothing appears at `path` before [`commit`](Self::commit).
    pub fn create(path: &Path) -> Result<AtomicFile> {
        let err = |e: std::io::Error| Error::from(e).in_file(path);
        let dest = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
            }
            _ => path.to_path_buf(),
        };
        let existing = std::fs::metadata(&dest).ok();
        if existing.as_ref().is_some_and(|m| !m.is_file()) {
            let file = OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&dest)
                .map_err(err)?;
            return Ok(AtomicFile {
                file,
                tmp: None,
                dest,
            });
        }
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "out".into());
        let mut attempt = 0;
        let (file, tmp) = loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let tmp = dir.join(format!(".{name}.racepred-{}-{n}.tmp", std::process::id()));
            // Registered before it exists, so that no moment leaves it unlisted.
            pending().push(tmp.clone());
            match OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Ok(f) => break (f, tmp),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                    forget(&tmp);
                    attempt += 1;
                }
                Err(e) => {
                    forget(&tmp);
                    return Err(err(e));
                }
            }
        };
        if let Some(m) = existing {
            // Best effort: the replaced file's mode (a failure here is not worth failing for).
            let _ = file.set_permissions(m.permissions());
        }
        Ok(AtomicFile {
            file,
            tmp: Some(tmp),
            dest,
        })
    }

    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.dest
    }

    /// Flushes and renames the temporary file into place.
    pub fn commit(mut self) -> Result<()> {
        self.file
            .flush()
            .map_err(|e| Error::from(e).in_file(&self.dest))?;
        if let Some(tmp) = self.tmp.take() {
            let renamed = std::fs::rename(&tmp, &self.dest);
            forget(&tmp);
            if let Err(e) = renamed {
                let _ = std::fs::remove_file(&tmp);
                return Err(Error::from(e).in_file(&self.dest));
            }
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }
    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.file.write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Not committed: the temporary file goes away, the destination is untouched.
impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_file(&tmp);
            forget(&tmp);
        }
    }
}

/// Writes `bytes` to `path` through an [`AtomicFile`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes)
        .map_err(|e| Error::from(e).in_file(path))?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("racepred-atomic-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn entries(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn appears_only_on_commit() {
        let d = dir("commit");
        let p = d.join("out.txt");
        let mut f = AtomicFile::create(&p).unwrap();
        f.write_all(b"hello").unwrap();
        assert!(!p.exists());
        f.commit().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"hello");
        assert_eq!(entries(&d), ["out.txt"]);
    }

    #[test]
    fn dropped_leaves_nothing_and_keeps_the_old_file() {
        let d = dir("drop");
        let p = d.join("out.txt");
        drop(AtomicFile::create(&p).unwrap());
        assert!(entries(&d).is_empty());
        std::fs::write(&p, b"old").unwrap();
        let mut f = AtomicFile::create(&p).unwrap();
        f.write_all(b"new, partial").unwrap();
        drop(f);
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert_eq!(entries(&d), ["out.txt"]);
    }

    #[cfg(unix)]
    #[test]
    fn follows_a_symlink_and_writes_special_files_in_place() {
        let d = dir("link");
        let target = d.join("target.txt");
        std::fs::write(&target, b"old").unwrap();
        let link = d.join("link.txt");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        write_atomic(Path::new("/dev/null"), b"x").unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
    }
}
