//! Opening a trace file: transparent decompression, format from extension or content.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use std::sync::atomic::{AtomicU64, Ordering};

use super::lines::{DEFAULT_MAX_LINE, READ_BUF};
use super::{binary, csv, golog, rr, std_format, EventSource};
use crate::error::{Error, ErrorKind, Result};

/// A trace format racepred reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// RAPID STD: `T0|w(V1)|42`.
    Std,
    /// RoadRunner logs as RAPID reads them.
    Rr,
    /// RAPID CSV.
    Csv,
    /// The SSHB paper's Go-tool logs: `tid,OP,obj,loc,num`.
    GoLog,
    /// racepred's compact binary form.
    Binary,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::Std,
        Format::Rr,
        Format::Csv,
        Format::GoLog,
        Format::Binary,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Std => "std",
            Format::Rr => "rr",
            Format::Csv => "csv",
            Format::GoLog => "golog",
            Format::Binary => "bin",
        }
    }

    pub fn from_name(s: &str) -> Option<Format> {
        Some(match s {
            "std" => Format::Std,
            "rr" | "roadrunner" => Format::Rr,
            "csv" => Format::Csv,
            "golog" | "go" | "sshb" => Format::GoLog,
            "bin" | "binary" | "rpb" => Format::Binary,
            _ => return None,
        })
    }

    /// The format an extension names (after stripping a compression extension).
    pub fn from_extension(ext: &str) -> Option<Format> {
        Some(match ext {
            "std" | "txt" => Format::Std,
            "rr" => Format::Rr,
            "csv" => Format::Csv,
            "golog" | "log" => Format::GoLog,
            "rpb" | "bin" => Format::Binary,
            _ => return None,
        })
    }

    /// The format of a path's name, looking through `.gz`, `.xz`, `.zst`.
    pub fn from_path(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?;
        let mut parts = name.rsplit('.');
        let mut ext = parts.next()?;
        if Compression::from_extension(ext).is_some() {
            ext = parts.next()?;
        }
        if ext == name {
            return None;
        }
        Format::from_extension(ext)
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A compression wrapper around a trace file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Xz,
    Zstd,
}

impl Compression {
    fn from_extension(ext: &str) -> Option<Compression> {
        Some(match ext {
            "gz" => Compression::Gzip,
            "xz" => Compression::Xz,
            "zst" | "zstd" => Compression::Zstd,
            _ => return None,
        })
    }

    /// The compression its first bytes show.
    pub fn sniff(head: &[u8]) -> Option<Compression> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Some(Compression::Gzip)
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            Some(Compression::Xz)
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Compression::Zstd)
        } else {
            None
        }
    }
}

/// Decompresses if the content says so; returns a buffered reader of the plain bytes. The
/// decompressor runs on a thread of its own ([`Prefetch`]), so that decompressing and
/// parsing overlap. Without the `compress` feature a compressed input is an
/// [`ErrorKind::NotBuilt`] error.
pub fn decompress<R: Read + Send + 'static>(rdr: R) -> Result<Box<dyn BufRead + Send>> {
    decompress_buf(BufReader::with_capacity(READ_BUF, rdr))
}

/// [`decompress`] of a reader that buffers already (a mapped file: no second buffer).
pub fn decompress_buf<B: BufRead + Send + 'static>(mut buf: B) -> Result<Box<dyn BufRead + Send>> {
    let head = buf.fill_buf()?;
    match Compression::sniff(head) {
        None => Ok(Box::new(buf)),
        Some(c) => c.decoder(buf),
    }
}

impl Compression {
    /// The usual file extension.
    pub fn extension(self) -> &'static str {
        match self {
            Compression::Gzip => "gz",
            Compression::Xz => "xz",
            Compression::Zstd => "zst",
        }
    }

    /// The compression a path's last extension names.
    pub fn from_path(path: &Path) -> Option<Compression> {
        Compression::from_extension(path.extension()?.to_str()?)
    }

    /// The error of a build without the `compress` feature.
    pub fn not_built(self) -> Error {
        let name = match self {
            Compression::Gzip => "gzip",
            Compression::Xz => "xz",
            Compression::Zstd => "zstd",
        };
        Error::new(ErrorKind::NotBuilt {
            what: format!("{name} compression"),
            feature: "compress",
        })
    }

    /// The plain bytes of `buf`, decompressed on a thread of its own.
    #[cfg(feature = "compress")]
    fn decoder<B: BufRead + Send + 'static>(self, buf: B) -> Result<Box<dyn BufRead + Send>> {
        match self {
            Compression::Gzip => Prefetch::spawn(flate2::bufread::MultiGzDecoder::new(buf)),
            Compression::Xz => Prefetch::spawn(xz2::bufread::XzDecoder::new_multi_decoder(buf)),
            Compression::Zstd => Prefetch::spawn(zstd::stream::read::Decoder::with_buffer(buf)?),
        }
    }

    #[cfg(not(feature = "compress"))]
    fn decoder<B: BufRead + Send + 'static>(self, _buf: B) -> Result<Box<dyn BufRead + Send>> {
        Err(self.not_built())
    }
}

/// A reader whose input is read ahead on a thread of its own, in chunks of [`READ_BUF`]
/// bytes through a bounded queue ([`PREFETCH_DEPTH`] chunks, `crate::pipe`), chunks
/// recycled. Errors of the inner reader arrive in order, after the bytes before them. If the
/// `Prefetch` is dropped early the thread stops at its next send.
pub struct Prefetch {
    rx: crate::pipe::PipeReceiver<std::io::Result<Vec<u8>>>,
    back: std::sync::mpsc::SyncSender<Vec<u8>>,
    cur: Vec<u8>,
    pos: usize,
    done: bool,
}

/// Chunks read ahead by a [`Prefetch`] (4 MiB).
pub const PREFETCH_DEPTH: usize = 4;

impl Prefetch {
    /// Starts reading `inner` on a new thread.
    pub fn spawn<R: Read + Send + 'static>(mut inner: R) -> Result<Box<dyn BufRead + Send>> {
        use std::sync::mpsc::sync_channel;
        let (tx, rx) = crate::pipe::pipe::<std::io::Result<Vec<u8>>>(PREFETCH_DEPTH);
        let (back, back_rx) = sync_channel::<Vec<u8>>(PREFETCH_DEPTH + 2);
        std::thread::Builder::new()
            .name("racepred-decompress".into())
            .spawn(move || loop {
                let mut chunk = back_rx.try_recv().unwrap_or_default();
                chunk.resize(READ_BUF, 0);
                let mut n = 0;
                // Fill the chunk (decoders return small pieces) unless the input ends.
                let res = loop {
                    match inner.read(&mut chunk[n..]) {
                        Ok(0) => break Ok(()),
                        Ok(k) => {
                            n += k;
                            if n == chunk.len() {
                                break Ok(());
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => break Err(e),
                    }
                };
                chunk.truncate(n);
                let last = n == 0 || res.is_err();
                if n > 0 && tx.send(Ok(chunk)).is_err() {
                    return;
                }
                if let Err(e) = res {
                    let _ = tx.send(Err(e));
                }
                if last {
                    return;
                }
            })
            .map_err(Error::from)?;
        Ok(Box::new(Prefetch {
            rx,
            back,
            cur: Vec::new(),
            pos: 0,
            done: false,
        }))
    }
}

/// `Read::read` of a reader that is its own buffer ([`Prefetch`], [`Mapped`]): a copy out
/// of `fill_buf`.
fn read_buffered<B: BufRead>(b: &mut B, buf: &mut [u8]) -> std::io::Result<usize> {
    let avail = b.fill_buf()?;
    let n = avail.len().min(buf.len());
    buf[..n].copy_from_slice(&avail[..n]);
    b.consume(n);
    Ok(n)
}

impl Read for Prefetch {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        read_buffered(self, buf)
    }
}

impl BufRead for Prefetch {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.pos == self.cur.len() && !self.done {
            match self.rx.recv() {
                Some(Ok(chunk)) => {
                    let old = std::mem::replace(&mut self.cur, chunk);
                    let _ = self.back.try_send(old);
                    self.pos = 0;
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                None => self.done = true, // the input ended
            }
        }
        Ok(&self.cur[self.pos..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.cur.len());
    }
}

/// Guesses the format of plain (decompressed) content from its first bytes.
///
/// Binary traces start with [`binary::MAGIC`]. For text, the first lines that are neither
/// blank nor `#` comments are tried in order (up to 64 of them, so a CSV header row or
/// RoadRunner's banner lines do not hide the format), and the first line that has the shape
/// of exactly one format decides: STD (`A|B(C)|D`), the Go-tool logs (`TID,LK|UK|RD|WR|SIG|
/// WT,OBJ,LOC,NUM`), RAPID CSV (one non-empty `op(x)` column), RoadRunner (`@ Op(t,x)`).
/// Content with no such line but nothing else either (empty, only comments) is STD with no
/// events; anything else is `None`.
pub fn sniff(head: &[u8]) -> Option<Format> {
    if head.starts_with(binary::MAGIC) {
        return Some(Format::Binary);
    }
    if binary::MAGIC.starts_with(head) && !head.is_empty() {
        return Some(Format::Binary); // a cut-off header: let the binary reader report it
    }
    let mut tried = 0;
    for raw in head.split(|&b| b == b'\n') {
        let line = super::lines::trim(raw);
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        tried += 1;
        if let Some(f) = sniff_line(line) {
            return Some(f);
        }
        if tried == 64 {
            break;
        }
    }
    (tried == 0).then_some(Format::Std)
}

fn sniff_line(text: &[u8]) -> Option<Format> {
    if std_format_like(text) {
        Some(Format::Std)
    } else if golog::looks_like(text) {
        Some(Format::GoLog)
    } else if rr::looks_like(text) {
        Some(Format::Rr)
    } else if csv::looks_like(text) {
        Some(Format::Csv)
    } else {
        None
    }
}

fn std_format_like(line: &[u8]) -> bool {
    let pipes = memchr::memchr_iter(b'|', line).count();
    pipes == 2
        && (memchr::memchr(b'(', line).is_some()
            || line.windows(6).any(|w| w == b"|begin")
            || line.windows(4).any(|w| w == b"|end"))
}

/// How to open a trace: the format (`None`: from the file name, else sniffed) and the
/// longest line a text reader accepts.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    pub format: Option<Format>,
    /// Longest line of a text format, in bytes; a longer line is an error naming it.
    pub max_line: usize,
    /// Map a regular file into memory instead of reading it with `read(2)`: faster (no
    /// copy out of the kernel); pages already read are released as the reader goes, but a
    /// file that another process truncates meanwhile ends the run with `SIGBUS`.
    pub mmap: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: None,
            max_line: DEFAULT_MAX_LINE,
            mmap: true,
        }
    }
}

/// Opens a trace from any reader: decompresses, then picks `format` or sniffs the content.
pub fn open_reader<R: Read + Send + 'static>(
    rdr: R,
    format: Option<Format>,
) -> Result<Box<dyn EventSource + Send>> {
    open_reader_opts(
        rdr,
        &ReadOptions {
            format,
            ..ReadOptions::default()
        },
    )
}

/// [`open_reader`] with every option.
pub fn open_reader_opts<R: Read + Send + 'static>(
    rdr: R,
    opts: &ReadOptions,
) -> Result<Box<dyn EventSource + Send>> {
    open_buf_opts(BufReader::with_capacity(READ_BUF, rdr), opts)
}

/// [`open_reader_opts`] of a reader that buffers already.
fn open_buf_opts<B: BufRead + Send + 'static>(
    buf: B,
    opts: &ReadOptions,
) -> Result<Box<dyn EventSource + Send>> {
    let mut plain = decompress_buf(buf)?;
    let format = format_of(&mut plain, opts)?;
    open_plain(plain, format, opts.max_line)
}

/// `opts.format`, else the format the content shows ([`sniff`]); unknown content is an
/// [`ErrorKind::UnknownFormat`] error.
pub(crate) fn format_of(plain: &mut dyn BufRead, opts: &ReadOptions) -> Result<Format> {
    if let Some(f) = opts.format {
        return Ok(f);
    }
    let head = plain.fill_buf()?;
    let head = &head[..head.len().min(64 * 1024)];
    sniff(head).ok_or_else(|| {
        Error::new(ErrorKind::UnknownFormat(
            "cannot tell the trace format from the content; pass --format std|rr|csv|golog|bin"
                .into(),
        ))
    })
}

/// The streaming reader of `format` over decompressed bytes.
pub(crate) fn open_plain(
    plain: Box<dyn BufRead + Send>,
    format: Format,
    max_line: usize,
) -> Result<Box<dyn EventSource + Send>> {
    fn text<F: super::text::LineFormat + Send + 'static>(
        plain: Box<dyn BufRead + Send>,
        max_line: usize,
    ) -> Box<dyn EventSource + Send> {
        let mut r = super::text::TextReader::<_, F>::from_buf_read(plain);
        r.set_max_line(max_line);
        Box::new(r)
    }
    let m = max_line;
    Ok(match format {
        Format::Std => text::<std_format::StdFormat>(plain, m),
        Format::Rr => text::<rr::RrFormat>(plain, m),
        Format::Csv => text::<csv::CsvFormat>(plain, m),
        Format::GoLog => text::<golog::GoLogFormat>(plain, m),
        Format::Binary => Box::new(binary::BinaryReader::from_buf_read(plain)?),
    })
}

/// Opens a trace file (`-` for standard input). The format is `format` if given, else the
/// extension's (`.std`, `.rr`, `.csv`, `.golog`, `.rpb`, each optionally `.gz`/`.xz`/`.zst`),
/// else sniffed from the content. Errors carry the path.
pub fn open_with(path: &Path, format: Option<Format>) -> Result<Box<dyn EventSource + Send>> {
    open_opts(
        path,
        &ReadOptions {
            format,
            ..ReadOptions::default()
        },
    )
}

/// [`open_with`] with every option. A file named as compressed (`.gz`, `.xz`, `.zst`) that
/// is empty is an error (a compressed stream has at least a header), not an empty trace.
/// [`EventSource::bytes_read`] and [`EventSource::total_bytes`] count the file's own
/// (compressed) bytes, for progress bars. A regular file is mapped into memory
/// (see [`ReadOptions::mmap`]) unless `opts.mmap` is off or the mapping fails.
pub fn open_opts(path: &Path, opts: &ReadOptions) -> Result<Box<dyn EventSource + Send>> {
    let mut opts = opts.clone();
    opts.format = opts.format.or_else(|| Format::from_path(path));
    let src = PlainInput::open(path, &opts).and_then(|mut input| {
        let format = format_of(&mut input.plain, &opts)?;
        let src = open_plain(input.plain, format, opts.max_line)?;
        Ok(Box::new(WithPath {
            inner: src,
            path: path.into(),
            counted: input.total.map(|_| input.counted),
            total: input.total,
        }) as Box<dyn EventSource + Send>)
    });
    src.map_err(|e| e.in_file(path))
}

/// The decompressed bytes of a trace file (`-`: standard input), read as [`ReadOptions`]
/// says (mapped or with `read(2)`): what every reader of a path starts from, the streaming
/// ones ([`open_opts`]) and the value-trace one
/// ([`ValueTrace::open`](super::values::ValueTrace::open)).
pub(crate) struct PlainInput {
    pub plain: Box<dyn BufRead + Send>,
    /// The file's own (compressed) bytes read so far.
    pub counted: std::sync::Arc<AtomicU64>,
    /// The file's size, for a regular file.
    pub total: Option<u64>,
}

impl PlainInput {
    /// Errors do not carry the path yet: the caller adds it.
    pub fn open(path: &Path, opts: &ReadOptions) -> Result<PlainInput> {
        let counted = std::sync::Arc::new(AtomicU64::new(0));
        if path == Path::new("-") {
            let plain = decompress(std::io::stdin())?;
            return Ok(PlainInput {
                plain,
                counted,
                total: None,
            });
        }
        let f = File::open(path)?;
        let meta = f.metadata()?;
        let mut total = None;
        if meta.is_file() {
            total = Some(meta.len());
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            if meta.len() == 0 && Compression::from_extension(ext).is_some() {
                return Err(Error::new(ErrorKind::Truncated(format!(
                    "the file is empty, but a .{ext} file holds at least a compression header"
                )))
                .at(crate::error::Position::default()));
            }
        }
        let plain = match Mapped::new(&f, &meta, opts, &counted) {
            Some(m) => decompress_buf(m)?,
            None => decompress(Counting {
                inner: f,
                n: counted.clone(),
            })?,
        };
        Ok(PlainInput {
            plain,
            counted,
            total,
        })
    }
}

/// A regular file mapped into memory, read as a [`BufRead`] whose buffer is the whole rest of
/// the file: the binary reader decodes blocks straight out of the mapping, and no byte goes
/// through the kernel's copy into a read buffer (ripgrep maps files for the same reason).
///
/// Pages behind the reader are handed back every [`RELEASE_STEP`] bytes (`madvise
/// MADV_DONTNEED`: the file's pages stay in the page cache, they leave this process's
/// resident memory), so resident memory stays bounded as with `read(2)`, not the size of the
/// file. As with any mapping, a file that another process truncates while it is read ends
/// the run with `SIGBUS`; `--no-mmap` (`ReadOptions::mmap` off) reads with `read(2)`.
struct Mapped {
    map: memmap2::Mmap,
    pos: usize,
    /// Bytes before this offset have been released.
    released: usize,
    /// Bytes consumed, for progress ([`WithPath`]).
    counted: std::sync::Arc<AtomicU64>,
}

/// [`Mapped`] releases the pages it has read in steps of this many bytes.
const RELEASE_STEP: usize = 2 << 20;

impl Mapped {
    /// The file mapped, if `opts` allows it and it is a non-empty regular file that maps.
    fn new(
        f: &File,
        meta: &std::fs::Metadata,
        opts: &ReadOptions,
        counted: &std::sync::Arc<AtomicU64>,
    ) -> Option<Mapped> {
        if !opts.mmap || !meta.is_file() || meta.len() == 0 {
            return None;
        }
        // SAFETY: the mapping is read-only and only this reader uses it. The hazard that
        // remains is outside Rust's control, as for every mapped file (ripgrep accepts the
        // same): another process changing the file meanwhile (the readers decode and check
        // each byte once, so that gives wrong events or an error) or truncating it
        // (`SIGBUS`). `--no-mmap` avoids both.
        let map = unsafe { memmap2::Mmap::map(f) }.ok()?;
        let _ = map.advise(memmap2::Advice::Sequential);
        Some(Mapped {
            map,
            pos: 0,
            released: 0,
            counted: counted.clone(),
        })
    }
}

impl Read for Mapped {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        read_buffered(self, buf)
    }
}

impl BufRead for Mapped {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        Ok(&self.map[self.pos..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.map.len());
        self.counted.store(self.pos as u64, Ordering::Relaxed);
        if self.pos - self.released >= RELEASE_STEP {
            let upto = self.pos - self.pos % RELEASE_STEP;
            // SAFETY: no slice of the released range is alive (`fill_buf`'s borrow ended
            // before this `consume`), and a read-only file mapping's released pages read
            // the file again if touched: only resident memory changes.
            unsafe {
                let _ = self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    self.released,
                    upto - self.released,
                );
            }
            self.released = upto;
        }
    }
}

/// Counts the bytes read from a file.
struct Counting<R> {
    inner: R,
    n: std::sync::Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n.fetch_add(k as u64, Ordering::Relaxed);
        Ok(k)
    }
}

/// Opens a trace file, format from its name or content.
pub fn open(path: &Path) -> Result<Box<dyn EventSource + Send>> {
    open_with(path, None)
}

/// Adds the file path to every error of a source; counts the file's bytes.
struct WithPath {
    inner: Box<dyn EventSource + Send>,
    path: std::path::PathBuf,
    /// Bytes read from the file (`None` for standard input and other non-regular files).
    counted: Option<std::sync::Arc<AtomicU64>>,
    total: Option<u64>,
}

impl EventSource for WithPath {
    #[inline]
    fn next_event(&mut self) -> Result<Option<super::Event>> {
        self.inner.next_event().map_err(|e| e.in_file(&self.path))
    }
    #[inline]
    fn read_block(&mut self, block: &mut super::EventBlock, max: usize) -> Result<bool> {
        let r = self
            .inner
            .read_block(block, max)
            .map_err(|e| e.in_file(&self.path));
        block.bytes_read = self.bytes_read();
        r
    }
    fn names(&self) -> &super::Names {
        self.inner.names()
    }
    fn position(&self) -> crate::error::Position {
        self.inner.position()
    }
    fn addresses(&self) -> &[super::AddrId] {
        self.inner.addresses()
    }
    fn seq(&self) -> Option<u64> {
        self.inner.seq()
    }
    fn bytes_read(&self) -> u64 {
        match &self.counted {
            Some(n) => n.load(Ordering::Relaxed),
            None => self.inner.bytes_read(),
        }
    }
    fn total_bytes(&self) -> Option<u64> {
        self.total
    }
    fn has_values(&self) -> bool {
        self.inner.has_values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A build without `compress` still tells a compressed input by its content and says
    /// which feature would read it.
    #[cfg(not(feature = "compress"))]
    #[test]
    fn compressed_input_without_the_feature_is_a_typed_error() {
        let gz: &[u8] = &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0];
        let e = decompress(gz).err().expect("a gzip input must be refused");
        assert!(
            matches!(
                e.kind(),
                ErrorKind::NotBuilt {
                    feature: "compress",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("gzip compression"), "{e}");
        let plain = b"T0|w(x)|1\n";
        assert!(decompress(&plain[..]).is_ok());
    }

    /// Yields `data` in pieces of 1000 bytes, then fails.
    struct FailsAfter {
        data: Vec<u8>,
        at: usize,
    }

    impl Read for FailsAfter {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.at == self.data.len() {
                return Err(std::io::Error::other("disk on fire"));
            }
            let n = buf.len().min(1000).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn prefetch_passes_every_byte_then_the_error() {
        let data: Vec<u8> = (0..3 * READ_BUF + 12345).map(|i| (i % 251) as u8).collect();
        let mut p = Prefetch::spawn(FailsAfter {
            data: data.clone(),
            at: 0,
        })
        .unwrap();
        let mut got = Vec::new();
        let err = p.read_to_end(&mut got).unwrap_err();
        assert_eq!(err.to_string(), "disk on fire");
        assert_eq!(got, data);
        // A clean input ends with an empty read.
        let mut p = Prefetch::spawn(&b"abc"[..]).unwrap();
        let mut got = Vec::new();
        p.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"abc");
    }

    #[test]
    fn sniffs_each_format() {
        assert_eq!(sniff(b"T0|w(V)|1\n"), Some(Format::Std));
        assert_eq!(sniff(b"# c\n\nT0|begin|1\n"), Some(Format::Std));
        assert_eq!(sniff(b"1:24,LK,633,nil,2773\n"), Some(Format::GoLog));
        assert_eq!(sniff(b"T0,T1\n,w(x)\n"), Some(Format::Csv));
        assert_eq!(sniff(b"r(x)\n"), Some(Format::Csv));
        assert_eq!(sniff(b"[RR: hi]\n@    Acquire(2,@03)\n"), Some(Format::Rr));
        assert_eq!(sniff(b"RACEPRED\x01\0"), Some(Format::Binary));
        assert_eq!(sniff(b"RACE"), Some(Format::Binary));
        // Nothing but blanks and comments: an empty STD trace.
        assert_eq!(sniff(b""), Some(Format::Std));
        assert_eq!(sniff(b"# nothing\n\n"), Some(Format::Std));
        assert_eq!(sniff(b"hello world\n"), None);
    }

    #[test]
    fn format_from_path_looks_through_compression() {
        for (p, f) in [
            ("a.std", Some(Format::Std)),
            ("a.std.gz", Some(Format::Std)),
            ("a.rr.xz", Some(Format::Rr)),
            ("a.csv.zst", Some(Format::Csv)),
            ("a.golog", Some(Format::GoLog)),
            ("a.rpb.gz", Some(Format::Binary)),
            ("a.gz", None),
            ("std", None),
            ("a.data", None),
        ] {
            assert_eq!(Format::from_path(Path::new(p)), f, "{p}");
        }
    }

    #[test]
    fn empty_compressed_file_and_nul_bytes_are_errors() {
        let d = std::env::temp_dir().join(format!("racepred-open-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        for ext in ["gz", "xz", "zst"] {
            let p = d.join(format!("e.std.{ext}"));
            std::fs::write(&p, b"").unwrap();
            let e = open(&p).err().expect("an error").to_string();
            assert!(e.contains("truncated: the file is empty"), "{e}");
            assert!(e.starts_with(&p.display().to_string()), "{e}");
        }
        for name in ["z.rr", "z.csv", "z.std", "z.golog"] {
            let p = d.join(name);
            std::fs::write(&p, [0u8; 100]).unwrap();
            let e = crate::trace::Trace::read_from(&mut *open(&p).unwrap())
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("{}:1: syntax:", p.display())), "{e}");
        }
    }

    /// Every event and error of `path`, and the bytes counted at the end.
    fn read_all(path: &Path, mmap: bool) -> (Vec<super::super::Event>, Option<String>, u64) {
        let opts = ReadOptions {
            mmap,
            ..ReadOptions::default()
        };
        let mut src = open_opts(path, &opts).unwrap();
        let mut events = Vec::new();
        let err = loop {
            match src.next_event() {
                Ok(Some(ev)) => events.push(ev),
                Ok(None) => break None,
                Err(e) => break Some(e.to_string()),
            }
        };
        (events, err, src.bytes_read())
    }

    #[test]
    fn mapped_files_read_as_read_files_do() {
        use crate::gen::{GenConfig, Generator};
        use crate::trace::write;
        let d = std::env::temp_dir().join(format!("racepred-mmap-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        // 300 000 events as text; 1 200 000 in binary, about 5 MB, so that the mapping
        // releases pages twice.
        let trace = |events| {
            Generator::trace(GenConfig {
                events,
                ..GenConfig::default()
            })
        };
        let (t, text) = (trace(1_200_000), trace(300_000));
        for name in ["m.rpb", "m.std", "m.std.gz"] {
            let t = if name == "m.rpb" { &t } else { &text };
            let p = d.join(name);
            let mut w = write::create(&p, Format::from_path(&p).unwrap()).unwrap();
            for ev in &t.events {
                w.write_event(ev, &t.names, Default::default()).unwrap();
            }
            w.finish().unwrap();
            let len = std::fs::metadata(&p).unwrap().len();
            if name == "m.rpb" {
                assert!(len > 2 * RELEASE_STEP as u64, "{len}");
            }
            // (The writer numbers names in order of appearance: the events' ids differ from
            // the generator's.)
            let mapped = read_all(&p, true);
            assert_eq!(mapped.0.len(), t.events.len(), "{name}");
            assert_eq!(mapped.1, None, "{name}");
            assert_eq!(mapped.2, len, "{name}: every byte counted");
            assert!(
                mapped == read_all(&p, false),
                "{name}: not as read(2) reads it"
            );
        }
        // A cut binary file: the same events, then the same error.
        let p = d.join("m.rpb");
        let whole = std::fs::read(&p).unwrap();
        let cut = d.join("cut.rpb");
        std::fs::write(&cut, &whole[..3 * whole.len() / 4]).unwrap();
        let (events, err, _) = read_all(&cut, true);
        assert!(
            err.as_deref().unwrap_or("").contains("truncated"),
            "{err:?}"
        );
        let read = read_all(&cut, false);
        assert!(events.len() < t.events.len());
        assert!((events, err) == (read.0, read.1), "not as read(2) reads it");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn empty_input_is_an_empty_trace() {
        let mut s = open_reader(std::io::empty(), None).unwrap();
        assert!(s.next_event().unwrap().is_none());
    }
}
