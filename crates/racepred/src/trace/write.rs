//! Trace writers: STD text and racepred's binary form, optionally compressed.
//!
//! A writer takes events one at a time with the name tables and side data of their source
//! (so it works in one streaming pass from any [`EventSource`]); [`copy`] drives one.
//!
//! STD output round-trips through the STD reader: names are written exactly, `begin` / `end`
//! without a target are written without parentheses, `mbegin` carries its address set
//! (`mbegin(M;A1,A2)`). Two things STD cannot say are handled thus:
//! - an event without location ([`LocId::NONE`](super::LocId::NONE)) is written with location
//!   `-` (what reports print for it), which the STD and RoadRunner readers read as no
//!   location;
//! - global access numbers (`seq`) are dropped (the binary form keeps them).
//!
//! Names STD cannot represent (empty, containing `|` or a line break, surrounding
//! whitespace, `;` in a target or address, `,` in an address, a thread name starting with
//! `#`, a location named `-`) are rejected with an error naming the name, never written
//! ambiguously. Parentheses are fine: the reader splits the operation at the first `(` and
//! the last `)`.

use std::io::{BufWriter, Write};
use std::path::Path;

pub use super::atomic_file::{remove_temporaries, write_atomic, AtomicFile};
use super::binary::BinaryWriter;
use super::open::{Compression, Format};
pub use super::write_formats::{FormatWriter, TextFormat};
use super::writer::checked_name;
pub use super::writer::{copy, Extras, TraceWriter};
use super::{AddrId, Event, NameKind, Names, Op};
use crate::error::{Error, Result};

// ---------------------------------------------------------------------------------------
// STD
// ---------------------------------------------------------------------------------------

/// STD text writer.
pub struct StdWriter<W: Write> {
    out: W,
    line: Vec<u8>,
    /// Per table: which source ids have had their name checked (1) — checked once per name.
    checked: [Vec<bool>; 7],
}

impl<W: Write> StdWriter<W> {
    pub fn new(out: W) -> Self {
        StdWriter {
            out,
            line: Vec::with_capacity(256),
            checked: Default::default(),
        }
    }

    /// The name of `id` in table `kind`, checked to be writable in the role `role`.
    #[inline]
    fn name<'n>(
        &mut self,
        names: &'n Names,
        kind: NameKind,
        id: u32,
        role: Role,
    ) -> Result<&'n str> {
        checked_name(&mut self.checked, names, kind, id, |n| {
            check_std_name(n, role)
        })
    }

    /// Appends one event as a line.
    #[inline]
    pub fn write_event(&mut self, ev: &Event, names: &Names, addresses: &[AddrId]) -> Result<()> {
        let thread = self.name(names, NameKind::Thread, ev.thread.0, Role::Thread)?;
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        line.extend_from_slice(thread.as_bytes());
        line.push(b'|');
        line.extend_from_slice(ev.op.std_name().as_bytes());
        let r = (|| {
            if !(ev.target == u32::MAX && ev.op.target_optional()) {
                let role = if ev.op.target_kind() == NameKind::Thread {
                    Role::Thread
                } else {
                    Role::Target
                };
                let target = self.name(names, ev.op.target_kind(), ev.target, role)?;
                line.push(b'(');
                line.extend_from_slice(target.as_bytes());
                if ev.op == Op::MethodBegin {
                    line.push(b';');
                    for (k, a) in addresses.iter().enumerate() {
                        if k > 0 {
                            line.push(b',');
                        }
                        let a = self.name(names, NameKind::Addr, a.0, Role::Address)?;
                        line.extend_from_slice(a.as_bytes());
                    }
                }
                line.push(b')');
            }
            line.push(b'|');
            if ev.loc.is_none() {
                line.push(b'-');
            } else {
                let loc = self.name(names, NameKind::Loc, ev.loc.0, Role::Loc)?;
                line.extend_from_slice(loc.as_bytes());
            }
            line.push(b'\n');
            self.out.write_all(&line)?;
            Ok(())
        })();
        self.line = line;
        r
    }

    /// Flushes and returns the output.
    pub fn finish(mut self) -> Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Thread,
    Target,
    Address,
    Loc,
}

/// Checks that the STD reader would read `name` back unchanged in role `role`.
#[cold]
#[inline(never)]
fn check_std_name(name: &str, role: Role) -> Result<()> {
    let what = match role {
        Role::Thread => "thread",
        Role::Target => "target",
        Role::Address => "address",
        Role::Loc => "location",
    };
    let fail = |why: &str| {
        Err(Error::invalid(format!(
            "{what} name {:?} cannot be written in STD: {why}",
            super::lines::show(name.as_bytes())
        )))
    };
    let b = name.as_bytes();
    if b.is_empty() {
        return fail("it is empty");
    }
    if b.first().is_some_and(u8::is_ascii_whitespace)
        || b.last().is_some_and(u8::is_ascii_whitespace)
    {
        return fail("it starts or ends with whitespace");
    }
    if b.iter().any(|&c| c == b'|' || c == b'\n' || c == b'\r') {
        return fail("it contains `|` or a line break");
    }
    match role {
        Role::Thread if b[0] == b'#' => fail("a thread name starting with `#` reads as a comment"),
        Role::Loc if b == b"-" => fail("`-` reads back as no location"),
        Role::Target | Role::Address if b.contains(&b';') => fail("it contains `;`"),
        Role::Address if b.contains(&b',') => fail("an address containing `,`"),
        _ => Ok(()),
    }
}

impl<W: Write> TraceWriter for StdWriter<W> {
    fn write_event(&mut self, ev: &Event, names: &Names, x: Extras<'_>) -> Result<()> {
        StdWriter::write_event(self, ev, names, x.addresses)
    }
    fn finish(self: Box<Self>) -> Result<()> {
        StdWriter::finish(*self).map(drop)
    }
}

impl<W: Write> TraceWriter for BinaryWriter<W> {
    fn write_event(&mut self, ev: &Event, names: &Names, x: Extras<'_>) -> Result<()> {
        BinaryWriter::write_event(self, ev, names, x.addresses, x.seq)
    }
    fn write_events(&mut self, evs: &[Event], names: &Names) -> Result<()> {
        BinaryWriter::write_events(self, evs, names)
    }
    fn finish(self: Box<Self>) -> Result<()> {
        BinaryWriter::finish(*self).map(drop)
    }
}

// ---------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------

/// An output file, compressed by its extension, written through an [`AtomicFile`]: it
/// appears at its path only when [`finish`](Sink::finish) succeeds (after the compression
/// trailer is written); dropped unfinished, it leaves nothing behind. Without the `compress`
/// feature a compressing extension is an [`crate::ErrorKind::NotBuilt`] error.
pub enum Sink {
    Plain(BufWriter<AtomicFile>),
    #[cfg(feature = "compress")]
    Gzip(flate2::write::GzEncoder<BufWriter<AtomicFile>>),
    #[cfg(feature = "compress")]
    Xz(xz2::write::XzEncoder<BufWriter<AtomicFile>>),
    #[cfg(feature = "compress")]
    Zstd(zstd::stream::write::Encoder<'static, BufWriter<AtomicFile>>),
}

/// `$body` with `$w` bound to the writer of whichever kind of [`Sink`] `$sink` is.
macro_rules! with_writer {
    ($sink:expr, $w:ident => $body:expr) => {
        match $sink {
            Sink::Plain($w) => $body,
            #[cfg(feature = "compress")]
            Sink::Gzip($w) => $body,
            #[cfg(feature = "compress")]
            Sink::Xz($w) => $body,
            #[cfg(feature = "compress")]
            Sink::Zstd($w) => $body,
        }
    };
}

impl Sink {
    /// Starts writing `path`, compressing if its extension is `.gz`, `.xz` or `.zst`.
    pub fn create(path: &Path) -> Result<Sink> {
        let compression = Compression::from_path(path);
        #[cfg(not(feature = "compress"))]
        if let Some(c) = compression {
            return Err(c.not_built().in_file(path));
        }
        let f = AtomicFile::create(path)?;
        let w = BufWriter::with_capacity(1 << 20, f);
        Ok(match compression {
            None => Sink::Plain(w),
            #[cfg(feature = "compress")]
            Some(Compression::Gzip) => Sink::Gzip(flate2::write::GzEncoder::new(
                w,
                flate2::Compression::default(),
            )),
            #[cfg(feature = "compress")]
            Some(Compression::Xz) => Sink::Xz(xz2::write::XzEncoder::new(w, 6)),
            #[cfg(feature = "compress")]
            Some(Compression::Zstd) => Sink::Zstd(zstd::stream::write::Encoder::new(w, 3)?),
            #[cfg(not(feature = "compress"))]
            Some(_) => unreachable!("refused above"),
        })
    }

    /// Writes the compression trailer, flushes the file and renames it into place.
    // Without `compress` only `Plain` is left to match.
    #[cfg_attr(
        not(feature = "compress"),
        allow(clippy::infallible_destructuring_match)
    )]
    pub fn finish(self) -> Result<()> {
        let w = match self {
            Sink::Plain(w) => w,
            #[cfg(feature = "compress")]
            Sink::Gzip(e) => e.finish()?,
            #[cfg(feature = "compress")]
            Sink::Xz(e) => e.finish()?,
            #[cfg(feature = "compress")]
            Sink::Zstd(e) => e.finish()?,
        };
        let f = w.into_inner().map_err(|e| Error::from(e.into_error()))?;
        f.commit()
    }
}

impl Write for Sink {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        with_writer!(self, w => w.write(buf))
    }
    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        with_writer!(self, w => w.write_all(buf))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        with_writer!(self, w => w.flush())
    }
}

enum FileWriterInner {
    Std(StdWriter<Sink>),
    Bin(BinaryWriter<Sink>),
    Text(FormatWriter<Sink>),
}

/// A writer to a file (see [`create`]); errors carry the path. The file appears only when
/// [`finish`](TraceWriter::finish) succeeds.
pub struct FileWriter {
    inner: FileWriterInner,
    path: std::path::PathBuf,
}

impl TraceWriter for FileWriter {
    #[inline]
    fn write_event(&mut self, ev: &Event, names: &Names, x: Extras<'_>) -> Result<()> {
        let (addresses, seq) = (x.addresses, x.seq);
        match &mut self.inner {
            FileWriterInner::Std(w) => w.write_event(ev, names, addresses),
            FileWriterInner::Bin(w) => w.write_event(ev, names, addresses, seq),
            FileWriterInner::Text(w) => w.write_event(ev, names, seq),
        }
    }
    fn write_events(&mut self, evs: &[Event], names: &Names) -> Result<()> {
        match &mut self.inner {
            FileWriterInner::Bin(w) => w.write_events(evs, names),
            FileWriterInner::Std(w) => evs.iter().try_for_each(|ev| w.write_event(ev, names, &[])),
            FileWriterInner::Text(w) => {
                evs.iter().try_for_each(|ev| w.write_event(ev, names, None))
            }
        }
    }
    fn write_values(&mut self, text: &str) -> Result<()> {
        match &mut self.inner {
            FileWriterInner::Bin(w) => w.write_values(text),
            _ => Err(Error::invalid(
                "only the binary format holds a values record",
            )),
        }
        .map_err(|e| e.in_file(&self.path))
    }
    fn finish(self: Box<Self>) -> Result<()> {
        let path = self.path;
        match self.inner {
            FileWriterInner::Std(w) => w.finish().and_then(Sink::finish),
            FileWriterInner::Bin(w) => w.finish().and_then(Sink::finish),
            FileWriterInner::Text(w) => w.finish().and_then(Sink::finish),
        }
        .map_err(|e| e.in_file(path))
    }
}

/// Creates a trace file in `format` (every format racepred reads: STD, binary, RoadRunner,
/// RAPID CSV, Go-tool logs; see [`FormatWriter`] for what the last three can hold),
/// compressed by the path's extension (`.gz`, `.xz`, `.zst`). The file is written through a
/// temporary file and appears at `path` only when the writer's `finish` succeeds; a writer
/// dropped without `finish` (a failed run) leaves no file and an existing one untouched.
pub fn create(path: &Path, format: Format) -> Result<Box<dyn TraceWriter>> {
    let text = |fmt| -> Result<FileWriterInner> {
        Ok(FileWriterInner::Text(FormatWriter::new(
            Sink::create(path)?,
            fmt,
        )))
    };
    let inner = match format {
        Format::Std => FileWriterInner::Std(StdWriter::new(Sink::create(path)?)),
        Format::Binary => FileWriterInner::Bin(BinaryWriter::new(Sink::create(path)?)),
        Format::Rr => text(TextFormat::Rr)?,
        Format::Csv => text(TextFormat::Csv)?,
        Format::GoLog => text(TextFormat::GoLog)?,
    };
    Ok(Box::new(FileWriter {
        inner,
        path: path.into(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::std_format::StdReader;
    use crate::trace::Trace;

    /// A build without `compress` refuses a compressing extension before creating anything.
    #[cfg(not(feature = "compress"))]
    #[test]
    fn compressed_output_without_the_feature_is_a_typed_error() {
        use crate::error::ErrorKind;
        let dir = std::env::temp_dir().join(format!("racepred-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["t.std.gz", "t.rpb.xz", "t.std.zst"] {
            let p = dir.join(name);
            let e = Sink::create(&p)
                .err()
                .expect("a compressed output must be refused");
            assert!(matches!(e.kind(), ErrorKind::NotBuilt { .. }), "{e}");
            assert_eq!(e.path(), Some(p.as_path()));
        }
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir(&dir).unwrap();
    }

    fn std_round_trip(text: &str) -> String {
        let t = Trace::read_from(&mut StdReader::new(text.as_bytes())).unwrap();
        let mut w = StdWriter::new(Vec::new());
        copy(&mut t.source(), &mut w).unwrap();
        String::from_utf8(w.finish().unwrap()).unwrap()
    }

    #[test]
    fn std_writes_every_operation() {
        let text = "T0|fork(T1)|10\nT1|acq(L0)|11\nT1|mbegin(m;a,b)|12\nT1|mend(m)|13\nT1|mbegin(k;)|1\nT1|begin|14\nT1|end(x)|15\nT1|sig(c)|1\nT1|wait(c)|1\nT1|vr(v)|1\nT1|vw(v)|1\nT1|rel(L0)|16\nT0|w(File.method()V)|Foo.java:3:4\nT0|join(T1)|15\n";
        assert_eq!(std_round_trip(text), text);
    }

    #[test]
    fn std_rejects_unwritable_names() {
        let mut names = Names::new();
        names.threads.intern(b"a|b");
        let mut w = StdWriter::new(Vec::new());
        let e = w
            .write_event(&Event::write(0, 0), &names, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"a|b\" cannot be written in STD"), "{e}");
    }

    fn tmp_dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("racepred-write-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn files_appear_whole_on_finish_compressed_or_not() {
        let d = tmp_dir("finish");
        let t = Trace::read_from(&mut StdReader::new(&b"T0|w(x)|1\nT1|r(x)|2\n"[..])).unwrap();
        for name in [
            "a.std",
            "a.std.gz",
            "a.std.xz",
            "a.std.zst",
            "a.rpb.gz",
            "a.rr",
            "a.csv.gz",
            "a.golog",
        ] {
            let p = d.join(name);
            let f = Format::from_path(&p).unwrap();
            let mut w = create(&p, f).unwrap();
            copy(&mut t.source(), &mut *w).unwrap();
            assert!(!p.exists(), "{name}: visible before finish");
            w.finish().unwrap();
            let back = Trace::read_from(&mut *crate::trace::open(&p).unwrap()).unwrap();
            assert_eq!(back.len(), 2, "{name}");
        }
        // A writer dropped without finish (a failed run) leaves nothing, and an existing
        // file as it was.
        let p = d.join("b.std.zst");
        drop(create(&p, Format::Std).unwrap());
        std::fs::write(d.join("c.std"), b"old").unwrap();
        let mut w = create(&d.join("c.std"), Format::Std).unwrap();
        copy(&mut t.source(), &mut *w).unwrap();
        drop(w);
        let mut left: Vec<String> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with("a."))
            .collect();
        left.sort();
        assert_eq!(left, ["c.std"]);
        assert_eq!(std::fs::read(d.join("c.std")).unwrap(), b"old");
    }

    #[test]
    fn none_location_is_a_dash() {
        let t = Trace::from_events(vec![crate::trace::Event::new(
            crate::trace::ThreadId(0),
            Op::Begin,
            u32::MAX,
            crate::trace::LocId::NONE,
        )]);
        let mut w = StdWriter::new(Vec::new());
        copy(&mut t.source(), &mut w).unwrap();
        assert_eq!(w.finish().unwrap(), b"T0|begin|-\n");
    }
}
