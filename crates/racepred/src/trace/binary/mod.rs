//! racepred's compact binary trace format (`.rpb`), version 2 (version 1 is still read).
//!
//! Designed to be written in one streaming pass and read at memory speed with constant
//! memory. All integers are little-endian.
//!
//! ```text
//! file    = header record* end
//! header  = "RACEPRED" version:u16 flags:u16 reserved:u32        (16 bytes; flags = 0)
//! record  = name | block | values
//! name    = 'N' kind:u8 len:u32 bytes[len]                       (UTF-8, non-empty)
//! block   = 'E' bflags:u8 0:u16 count:u32 addr_words:u32 data_len:u32   (16 bytes)
//!           ctrl:u16[count]                  (one per event)
//!           data[data_len]                   (the events' fields)
//!           seq:u64[count]                   if bflags & 1
//!           addr:u32[addr_words]             (mbegin address sets)
//! ctrl    = op (bits 0–3) | tw << 4 | vw << 6 | lw << 8          (bits 10–15 zero)
//! values  = 'V' 0:u8 0:u16 len:u32 bytes[len]
//! end     = 'Z' 0:u8[7] events:u64                               (16 bytes)
//! ```
//!
//! - An event's thread, target and location are each coded as the difference from a
//!   prediction: the previous event's thread, the previous event's target + 1, the
//!   previous event's location (before a block's first event: 0, 0 + 1, 0), wrapping
//!   modulo 2^32, zigzag-mapped (`0, -1, 1, -2` → `0, 1, 2, 3`) and stored in the data in
//!   0, 1, 2 or 4 bytes (width code 0, 1, 2, 3 in `ctrl`: thread, target, location in
//!   that order). A thread's run of accesses to consecutive variables from one
//!   instruction — most of a recorded trace — takes 2 bytes an event; random ids about 7.
//!   The control words come apart from the data so that a reader finds each event's data
//!   by adding widths, without waiting for the previous event's decoding.
//! - Version 1 blocks are `'E' bflags:u8 0:u16 count:u32 addr_words:u32` (12 bytes) and
//!   `event[count]` of 16 bytes each, `thread:u32 target:u32 loc:u32 op:u8 0:u8 0:u16`,
//!   in place of `ctrl` and `data`; the rest is as in version 2.
//! - Name records give the next id of table `kind` (the order of [`NameKind::ALL`]): ids are
//!   dense in order of appearance, and a name record precedes the first event that uses it.
//!   The writer appends a record when an event first mentions a name, so it never needs a
//!   second pass.
//! - `target` / `loc` = `u32::MAX` is "none" (`begin`/`end` without argument, an event
//!   without location). `op` is the [`Op`] discriminant.
//! - Side data of a block: with `bflags & 1` one global access number per event
//!   (`u64::MAX` = the event has none); then for each `mbegin` of the block, in order, its
//!   address set as `n:u32` followed by `n` address ids.
//! - The end record holds the total number of events, so a file cut at a record boundary is
//!   still reported as truncated.
//!
//! The reader checks everything (record tags, reserved bytes and bits, that every id
//! refers to a name already defined, that a block's data is exactly what its events use,
//! the event count) and reports problems as
//! [`ErrorKind::Truncated`] / [`ErrorKind::BadHeader`] / [`ErrorKind::Syntax`] with the byte
//! offset; it never panics. It decodes a whole block at a time into a reused `Vec<Event>`,
//! so `next_event` is an index into a buffer. Memory is bounded by the largest block
//! (at most [`MAX_BLOCK_EVENTS`] events plus its address sets) and the name tables.

use std::io::{BufRead, Read, Write};

use super::{AddrId, Event, EventBlock, EventSource, LocId, NameKind, Names, Op, ThreadId};
use crate::error::{Error, ErrorKind, Position, Result};

/// Magic bytes at the start of a binary trace.
pub const MAGIC: &[u8] = b"RACEPRED";

/// The format version this module writes; it reads this one and version 1.
pub const VERSION: u16 = 2;

/// Events per block the writer emits.
pub const BLOCK_EVENTS: usize = 4096;

/// Largest block the reader accepts (bounds its memory).
pub const MAX_BLOCK_EVENTS: u32 = 1 << 20;

/// Largest name the reader accepts.
pub const MAX_NAME_LEN: u32 = 1 << 24;

const HEADER_LEN: u64 = 16;
const TAG_NAME: u8 = b'N';
const TAG_BLOCK: u8 = b'E';
const TAG_END: u8 = b'Z';
/// Values of a value trace ([`super::values`]), as text.
const TAG_VALUES: u8 = b'V';

/// Longest values record accepted.
pub const MAX_VALUES_LEN: u32 = 1 << 30;
const BLOCK_HAS_SEQ: u8 = 1;
const NO_SEQ: u64 = u64::MAX;

fn kind_code(kind: NameKind) -> u8 {
    kind as u8
}

fn kind_from_code(b: u8) -> Option<NameKind> {
    NameKind::ALL.get(b as usize).copied()
}

// ---------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------

/// Streaming reader of the binary format.
pub struct BinaryReader<R> {
    rdr: R,
    names: Names,
    /// Number of names per table (`NameKind as usize`), for id checks.
    limits: [u32; 7],
    /// The current block, decoded, and the index of the next event to return.
    block: Block,
    next: usize,
    /// Events of the current block whose vector [`EventSource::read_block`] handed over
    /// whole (`block.events` is then empty and `next` is past them).
    taken: usize,
    span_next: usize,
    cur_span: Option<(u32, u32)>,
    /// Payload of a block that straddles the input buffer (reused).
    raw: Vec<u8>,
    /// Byte offset of the next unread byte, and of the current block's first event.
    offset: u64,
    block_start: u64,
    /// Bytes from one event of the current block to the next ([`Shape::stride`]).
    stride: u64,
    /// The file's format version (1 or 2).
    version: u16,
    /// Events in the blocks before the current one.
    base: u64,
    done: bool,
    /// The text of the values records read so far ([`BinaryReader::values_text`]).
    values: Vec<u8>,
}

/// One decoded event block.
#[derive(Default)]
struct Block {
    events: Vec<Event>,
    /// Global access numbers (empty if the block has none).
    seqs: Vec<u64>,
    /// Address sets of the mbegins: `(event index, start, len)` into `addrs`.
    spans: Vec<(u32, u32, u32)>,
    addrs: Vec<AddrId>,
}

impl<R: Read> BinaryReader<std::io::BufReader<R>> {
    pub fn new(rdr: R) -> Result<Self> {
        BinaryReader::from_buf_read(std::io::BufReader::with_capacity(
            super::lines::READ_BUF,
            rdr,
        ))
    }
}

fn at_byte(byte: u64) -> Position {
    Position {
        line: 0,
        byte,
        event: None,
    }
}

fn truncated(at: u64, what: &str) -> Error {
    Error::new(ErrorKind::Truncated(format!("input ends inside {what}"))).at(at_byte(at))
}

fn bad(at: u64, msg: String) -> Error {
    Error::new(ErrorKind::BadHeader(msg)).at(at_byte(at))
}

impl<R: BufRead> BinaryReader<R> {
    /// Reads and checks the header.
    pub fn from_buf_read(mut rdr: R) -> Result<Self> {
        let mut head = [0u8; HEADER_LEN as usize];
        let got = read_full(&mut rdr, &mut head, 0)?;
        if got < MAGIC.len() && head[..got] == MAGIC[..got] {
            return Err(truncated(got as u64, "the header"));
        }
        if !head.starts_with(MAGIC) {
            return Err(bad(
                0,
                "not a racepred binary trace (magic `RACEPRED` missing)".into(),
            ));
        }
        if got < head.len() {
            return Err(truncated(got as u64, "the header"));
        }
        let version = u16::from_le_bytes([head[8], head[9]]);
        if version != 1 && version != VERSION {
            return Err(bad(
                8,
                format!(
                    "unsupported version {version} (this racepred reads versions 1 and {VERSION})"
                ),
            ));
        }
        let flags = u16::from_le_bytes([head[10], head[11]]);
        if flags != 0 || head[12..16] != [0; 4] {
            return Err(bad(
                10,
                format!("unknown header flags {flags:#x} / reserved bytes not zero"),
            ));
        }
        Ok(BinaryReader {
            rdr,
            names: Names::new(),
            limits: [0; 7],
            block: Block::default(),
            next: 0,
            taken: 0,
            span_next: 0,
            cur_span: None,
            raw: Vec::new(),
            offset: HEADER_LEN,
            block_start: HEADER_LEN,
            stride: 16,
            version,
            base: 0,
            done: false,
            values: Vec::new(),
        })
    }

    /// Moves past the current block and returns the first event of the next one.
    #[cold]
    #[inline(never)]
    fn next_block(&mut self) -> Result<Option<Event>> {
        if self.advance_block()? {
            self.next_event()
        } else {
            Ok(None)
        }
    }

    /// Moves past the current block to the next non-empty one: false at the end.
    fn advance_block(&mut self) -> Result<bool> {
        self.base += (self.block.events.len() + self.taken) as u64;
        self.block.events.clear();
        self.next = 0;
        self.taken = 0;
        self.span_next = 0;
        if self.done {
            return Ok(false);
        }
        self.load_block().inspect_err(|_| self.block.events.clear())
    }

    /// Reads records until a non-empty event block (`true`) or the end record (`false`).
    fn load_block(&mut self) -> Result<bool> {
        loop {
            let at = self.offset;
            let mut tag = [0u8; 1];
            if read_full(&mut self.rdr, &mut tag, at)? == 0 {
                return Err(truncated(at, "the record list (no end record)"));
            }
            match tag[0] {
                TAG_NAME => self.read_name(at)?,
                TAG_VALUES => self.read_values(at)?,
                TAG_BLOCK => {
                    self.read_block_record(at)?;
                    if !self.block.events.is_empty() {
                        return Ok(true);
                    }
                }
                TAG_END => {
                    let rest: [u8; 15] = self.record_head(at, "the end record")?;
                    if rest[..7] != [0; 7] {
                        return Err(bad(at, "end record: reserved bytes not zero".into()));
                    }
                    let n = u64::from_le_bytes(rest[7..15].try_into().expect("8 bytes"));
                    if n != self.base {
                        return Err(bad(
                            at,
                            format!(
                                "end record counts {n} events but the file holds {}",
                                self.base
                            ),
                        ));
                    }
                    let mut extra = [0u8; 1];
                    if read_full(&mut self.rdr, &mut extra, at + 16)? != 0 {
                        return Err(bad(at + 16, "data after the end record".into()));
                    }
                    self.offset = at + 16;
                    self.done = true;
                    return Ok(false);
                }
                t => {
                    return Err(bad(
                        at,
                        format!("unknown record tag {t:#04x} (expected `N`, `E`, `V` or `Z`)"),
                    ))
                }
            }
        }
    }

    /// The `N` bytes after the tag of the record at `at`, or a truncation error naming the
    /// record (`what`).
    fn record_head<const N: usize>(&mut self, at: u64, what: &str) -> Result<[u8; N]> {
        let mut h = [0u8; N];
        if read_full(&mut self.rdr, &mut h, at + 1)? < N {
            return Err(truncated(at, what));
        }
        Ok(h)
    }

    /// The UTF-8 text of `len` bytes (at most `max`) that ends the record at `at` of `head`
    /// bytes before it, into `self.raw`; the offset moves past the record. `what`: the
    /// record's kind, for errors.
    fn read_text(&mut self, at: u64, head: u64, len: u32, max: u32, what: &str) -> Result<()> {
        if len > max {
            return Err(bad(at, format!("{what} record: length {len} too large")));
        }
        read_exact_growing(&mut self.rdr, &mut self.raw, len as usize)
            .map_err(|e| e.unwrap_or_else(|| truncated(at, &format!("a {what} record"))))?;
        if std::str::from_utf8(&self.raw).is_err() {
            return Err(Error::new(ErrorKind::NonUtf8).at(at_byte(at + head)));
        }
        self.offset = at + head + u64::from(len);
        Ok(())
    }

    /// A values record: its text is appended to [`BinaryReader::values_text`].
    fn read_values(&mut self, at: u64) -> Result<()> {
        let h: [u8; 7] = self.record_head(at, "a values record")?;
        if h[..3] != [0; 3] {
            return Err(bad(at, "values record: reserved bytes not zero".into()));
        }
        let len = u32::from_le_bytes(h[3..7].try_into().expect("4 bytes"));
        self.read_text(at, 8, len, MAX_VALUES_LEN, "values")?;
        self.values.extend_from_slice(&self.raw);
        Ok(())
    }

    /// The text of every values record read so far (UTF-8): the value parts and alternative
    /// paths of a value trace, one entry a line ([`super::values::ValueTrace::from_binary`]).
    pub fn values_text(&self) -> &[u8] {
        &self.values
    }

    fn read_name(&mut self, at: u64) -> Result<()> {
        let h: [u8; 5] = self.record_head(at, "a name record")?;
        let Some(kind) = kind_from_code(h[0]) else {
            return Err(bad(at, format!("name record: unknown table {}", h[0])));
        };
        let len = u32::from_le_bytes(h[1..5].try_into().expect("4 bytes"));
        if len == 0 {
            return Err(Error::new(ErrorKind::EmptyName(kind_what(kind))).at(at_byte(at)));
        }
        self.read_text(at, 6, len, MAX_NAME_LEN, "name")?;
        let table = self.names.table_mut(kind);
        let before = table.len();
        let id = table.intern(&self.raw);
        if id as usize != before {
            return Err(bad(
                at,
                format!(
                    "name record: {} name `{}` defined twice",
                    kind_what(kind),
                    super::lines::Shown(&self.raw)
                ),
            ));
        }
        self.limits[kind as usize] = table.len() as u32;
        Ok(())
    }

    fn read_block_record(&mut self, at: u64) -> Result<()> {
        let mut h = [0u8; 15];
        let h_len = if self.version == 1 { 11 } else { 15 };
        if read_full(&mut self.rdr, &mut h[..h_len], at + 1)? < h_len {
            return Err(truncated(at, "an event block header"));
        }
        let bflags = h[0];
        if bflags & !BLOCK_HAS_SEQ != 0 || h[1] != 0 || h[2] != 0 {
            return Err(bad(at, format!("event block: unknown flags {bflags:#x}")));
        }
        let count = u32::from_le_bytes(h[3..7].try_into().expect("4 bytes"));
        let addr_words = u32::from_le_bytes(h[7..11].try_into().expect("4 bytes"));
        if count > MAX_BLOCK_EVENTS {
            return Err(bad(
                at,
                format!("event block: {count} events (at most {MAX_BLOCK_EVENTS})"),
            ));
        }
        let data_len = u32::from_le_bytes(h[11..15].try_into().expect("4 bytes"));
        if u64::from(data_len) > 12 * u64::from(count) {
            return Err(bad(
                at,
                format!("event block: {data_len} bytes of data for {count} events"),
            ));
        }
        let shape = Shape {
            n: count as usize,
            has_seq: bflags & BLOCK_HAS_SEQ != 0,
            addr_words: addr_words as usize,
            data_len: (self.version != 1).then_some(data_len as usize),
        };
        let len = shape.len();
        let payload = at + 1 + h_len as u64;
        self.block_start = payload;
        self.stride = shape.stride();
        self.offset = payload + len as u64;
        // Decode straight out of the input buffer when the block is inside it (no copy);
        // otherwise collect the payload first.
        let avail = self
            .rdr
            .fill_buf()
            .map_err(|e| Error::from(e).at(at_byte(payload)))?;
        if avail.len() >= len {
            let r = decode_block(
                &avail[..len],
                shape,
                &self.limits,
                payload,
                self.base,
                &mut self.block,
            );
            self.rdr.consume(len);
            return r;
        }
        read_exact_growing(&mut self.rdr, &mut self.raw, len)
            .map_err(|e| e.unwrap_or_else(|| truncated(at, "an event block")))?;
        decode_block(
            &self.raw,
            shape,
            &self.limits,
            payload,
            self.base,
            &mut self.block,
        )
    }
}

/// The layout of a block payload.
#[derive(Clone, Copy)]
struct Shape {
    n: usize,
    has_seq: bool,
    addr_words: usize,
    /// Version 2: the length of the events' data (after their control words); version 1:
    /// `None` (16 bytes an event).
    data_len: Option<usize>,
}

impl Shape {
    /// The bytes of the events (control words and data, or version 1's records).
    fn events_len(self) -> usize {
        match self.data_len {
            Some(d) => self.n * 2 + d,
            None => self.n * 16,
        }
    }

    /// Bytes from one event's start to the next's (the control words, in version 2).
    fn stride(self) -> u64 {
        if self.data_len.is_some() {
            2
        } else {
            16
        }
    }

    fn len(self) -> usize {
        self.events_len() + if self.has_seq { self.n * 8 } else { 0 } + self.addr_words * 4
    }
}

/// The id limits of a block's events, arranged so that an event is checked without a
/// branch: per operation code, `add` 1 if the target may be absent, else 0, and `bound` its
/// target table's id limit plus `add`, so that one unsigned comparison, `target + add <
/// bound` (wrapping: an absent target, `u32::MAX`, becomes 0), checks both.
struct Checks {
    op_add: [u32; 16],
    op_bound: [u64; 16],
    tlim: u32,
    /// A location is defined or absent: `loc + 1 < limit + 1`, wrapping as above.
    llim1: u64,
}

impl Checks {
    fn new(lim: &[u32; 7]) -> Checks {
        let mut c = Checks {
            op_add: [0; 16],
            op_bound: [0; 16],
            tlim: lim[NameKind::Thread as usize],
            llim1: u64::from(lim[NameKind::Loc as usize]) + 1,
        };
        for op in Op::ALL {
            let add = u32::from(op.target_optional());
            c.op_add[op as usize] = add;
            c.op_bound[op as usize] = u64::from(lim[op.target_kind() as usize]) + u64::from(add);
        }
        c
    }

    /// Whether an event of operation code `k` (< 16) refers to an undefined name.
    #[inline(always)]
    fn bad(&self, thread: u32, target: u32, loc: u32, k: usize) -> bool {
        (thread >= self.tlim)
            | (u64::from(loc.wrapping_add(1)) >= self.llim1)
            | (u64::from(target.wrapping_add(self.op_add[k])) >= self.op_bound[k])
    }
}

/// Bytes of each width code of a version 2 event field, and the mask of those bytes.
const WIDTH: [usize; 4] = [0, 1, 2, 4];
const MASK: [u32; 4] = [0, 0xff, 0xffff, u32::MAX];

/// Zigzag: 0, -1, 1, -2, … ↔ 0, 1, 2, 3, …
#[inline(always)]
fn zigzag(d: u32) -> u32 {
    (d << 1) ^ ((d as i32 >> 31) as u32)
}

#[inline(always)]
fn unzigzag(z: u32) -> u32 {
    (z >> 1) ^ (z & 1).wrapping_neg()
}

/// The width code of a zigzagged field: the fewest of 0, 1, 2, 4 bytes that hold it.
#[inline(always)]
fn width_code(z: u32) -> u16 {
    u16::from(z > 0) + u16::from(z > 0xff) + u16::from(z > 0xffff)
}

/// The decoder of a version 2 block's events. Each event's data starts where the previous
/// one's widths end, so the position does not wait for the previous event's fields; the
/// fields are read out of a 16-byte window at that position (zero past the end of the
/// data).
struct V2Events<'a> {
    data: &'a [u8],
    /// Bytes of data used so far.
    used: usize,
    prev: (u32, u32, u32),
}

impl<'a> V2Events<'a> {
    /// The block's control words, and a decoder of the data after them.
    fn new(evs: &'a [u8], n: usize) -> (core::slice::ChunksExact<'a, u8>, V2Events<'a>) {
        let (ctrl, data) = evs.split_at(2 * n);
        let d = V2Events {
            data,
            used: 0,
            prev: (0, 0, 0),
        };
        (ctrl.chunks_exact(2), d)
    }

    /// The next event of control word `c` (2 bytes): `(control word, thread, target,
    /// location)`.
    #[inline(always)]
    fn next(&mut self, c: &[u8]) -> (usize, u32, u32, u32) {
        let (c, (t, v, l), used) = decode_v2(c, self.data, self.used, self.prev);
        self.used = used;
        self.prev = (t, v, l);
        (c, t, v, l)
    }
}

/// Where an event's fields are in its data, by its width codes (bits 4–9 of its control
/// word): their masks, the target's shift within the first 8 bytes, the location's offset,
/// the bytes used. One lookup an event instead of one per field and property.
#[derive(Clone, Copy)]
struct Layout {
    mt: u32,
    mv: u32,
    ml: u32,
    sv: u32,
    ol: usize,
    len: usize,
}

const LAYOUT: [Layout; 64] = {
    let mut t = [Layout {
        mt: 0,
        mv: 0,
        ml: 0,
        sv: 0,
        ol: 0,
        len: 0,
    }; 64];
    let mut i = 0;
    while i < 64 {
        let (tc, vc, lc) = (i & 3, (i >> 2) & 3, i >> 4);
        t[i] = Layout {
            mt: MASK[tc],
            mv: MASK[vc],
            ml: MASK[lc],
            sv: 8 * WIDTH[tc] as u32,
            ol: WIDTH[tc] + WIDTH[vc],
            len: WIDTH[tc] + WIDTH[vc] + WIDTH[lc],
        };
        i += 1;
    }
    t
};

/// One version 2 event: its control word `c` (2 bytes), the block's data (read zero past
/// its end), the bytes of it used before the event, the previous event's fields. Returns
/// the control word, the fields and the data used after the event.
#[inline(always)]
fn decode_v2(
    c: &[u8],
    data: &[u8],
    used: usize,
    (t, v, l): (u32, u32, u32),
) -> (usize, (u32, u32, u32), usize) {
    let c = usize::from(u16::from_le_bytes([c[0], c[1]]));
    let lay = LAYOUT[(c >> 4) & 63];
    // Read in place (a copy of the window on the stack made the location's load wait for
    // the copy's store to forward).
    let (w, lw) = match data.get(used..used + 16) {
        Some(win) => window_words(win.try_into().expect("16 bytes"), lay.ol),
        None => window_words(&tail_window(data, used), lay.ol),
    };
    let t = t.wrapping_add(unzigzag(w as u32 & lay.mt));
    let v = v
        .wrapping_add(1)
        .wrapping_add(unzigzag((w >> lay.sv) as u32 & lay.mv));
    let l = l.wrapping_add(unzigzag(lw & lay.ml));
    (c, (t, v, l), used + lay.len)
}

/// Appends a field's difference from its prediction to `data[..*len]`, zigzagged, in as
/// few bytes as hold it; returns its width code.
#[inline(always)]
fn put_field(data: &mut [u8], len: &mut usize, delta: u32) -> u16 {
    let z = zigzag(delta);
    let code = width_code(z);
    // All four bytes, then the length moved by the width (no loop over bytes).
    data[*len..*len + 4].copy_from_slice(&z.to_le_bytes());
    *len += WIDTH[code as usize];
    code
}

/// The first 8 bytes of an event's window (thread and target) and the 4 at offset `o` (the
/// location, at most 8 bytes in).
#[inline(always)]
fn window_words(win: &[u8; 16], o: usize) -> (u64, u32) {
    let o = o.min(12);
    (
        u64::from_le_bytes(win[..8].try_into().expect("8 bytes")),
        u32::from_le_bytes(win[o..o + 4].try_into().expect("4 bytes")),
    )
}

/// The last bytes of a block's data from `used` on, zero-padded to 16.
#[cold]
#[inline(never)]
fn tail_window(data: &[u8], used: usize) -> [u8; 16] {
    let mut b = [0u8; 16];
    let rest = data.get(used..).unwrap_or(&[]);
    let k = rest.len().min(16);
    b[..k].copy_from_slice(&rest[..k]);
    b
}

/// Decodes and checks a block payload (`raw.len() == shape.len()`). `start` is the byte
/// offset of the payload and `base` the index of its first event, for error positions.
fn decode_block(
    raw: &[u8],
    shape: Shape,
    lim: &[u32; 7],
    start: u64,
    base: u64,
    out: &mut Block,
) -> Result<()> {
    let Shape {
        n,
        has_seq,
        addr_words,
        ..
    } = shape;
    out.events.clear();
    out.seqs.clear();
    out.spans.clear();
    out.addrs.clear();
    let (evs, rest) = raw.split_at(shape.events_len());
    let check = Checks::new(lim);
    // Branch-free check and decode; find the culprit only if something is wrong. Events are
    // appended without first filling the vector.
    let mut invalid = false;
    let mut n_mbegin = 0usize;
    if shape.data_len.is_none() {
        // Version 1: two words an event (thread and target; location, operation code and
        // its three zero padding bytes).
        out.events.extend(evs.chunks_exact(16).map(|c| {
            let lo = u64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
            let hi = u64::from_le_bytes(c[8..].try_into().expect("8 bytes"));
            let (thread, target) = (lo as u32, (lo >> 32) as u32);
            let (loc, w3) = (hi as u32, (hi >> 32) as u32);
            let k = (w3 & 15) as usize;
            invalid |= (w3 >= Op::ALL.len() as u32) | check.bad(thread, target, loc, k);
            n_mbegin += usize::from(w3 == Op::MethodBegin as u32);
            Event::new(ThreadId(thread), Op::ALL[k], target, LocId(loc))
        }));
    } else {
        // A plain loop over the filled vector: with the decoder's state captured by a
        // closure (`extend`), that state went through memory at every event.
        let (ctrl, data) = evs.split_at(2 * n);
        let mut used = 0usize;
        let mut prev = (0u32, 0u32, 0u32);
        let mut reserved = 0usize;
        let mut bad = false;
        let mut mbegins = 0usize;
        out.events
            .resize(n, Event::new(ThreadId(0), Op::Read, 0, LocId(0)));
        for (ev, c) in out.events.iter_mut().zip(ctrl.chunks_exact(2)) {
            let (c, (thread, target, loc), u) = decode_v2(c, data, used, prev);
            used = u;
            prev = (thread, target, loc);
            reserved |= c;
            let k = c & 15;
            bad |= check.bad(thread, target, loc, k);
            mbegins += usize::from(k == Op::MethodBegin as usize);
            *ev = Event::new(ThreadId(thread), Op::ALL[k], target, LocId(loc));
        }
        invalid = bad;
        n_mbegin = mbegins;
        invalid |= (reserved >> 10 != 0) | (used != data.len());
    }
    if invalid {
        out.events.clear();
        return Err(first_bad_event(evs, shape, lim, start, base));
    }
    let (seqs, addr) = rest.split_at(if has_seq { n * 8 } else { 0 });
    if has_seq {
        out.seqs.extend(
            seqs.chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))),
        );
    }
    debug_assert_eq!(addr.len(), addr_words * 4);
    if n_mbegin > 0 || addr_words > 0 {
        let mut words = addr
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .enumerate();
        let addr_lim = lim[NameKind::Addr as usize];
        let addr_at = start + shape.events_len() as u64 + (seqs.len() as u64);
        for (i, ev) in out.events.iter().enumerate() {
            if ev.op != Op::MethodBegin {
                continue;
            }
            let Some((_, len)) = words.next() else {
                return Err(bad(
                    addr_at,
                    "event block: address data ends before the last mbegin's set".into(),
                ));
            };
            let first = out.addrs.len() as u32;
            for _ in 0..len {
                match words.next() {
                    Some((_, a)) if a < addr_lim => out.addrs.push(AddrId(a)),
                    Some((k, a)) => {
                        return Err(bad(
                            addr_at + 4 * k as u64,
                            format!("event block: address id {a} is not defined"),
                        ))
                    }
                    None => {
                        return Err(bad(
                            addr_at,
                            "event block: address data ends inside an address set".into(),
                        ))
                    }
                }
            }
            out.spans.push((i as u32, first, len));
        }
        if words.next().is_some() {
            return Err(bad(
                addr_at,
                "event block: address data longer than its mbegins' sets".into(),
            ));
        }
    }
    Ok(())
}

/// The error for a block whose events `decode_block` found wrong: the first bad event, or
/// (version 2) data of another length than the events use.
#[cold]
#[inline(never)]
fn first_bad_event(evs: &[u8], shape: Shape, lim: &[u32; 7], start: u64, base: u64) -> Error {
    let at = |i: usize| Position {
        line: 0,
        byte: start + shape.stride() * i as u64,
        event: Some(base + i as u64),
    };
    if shape.data_len.is_none() {
        let (i, c) = evs
            .chunks_exact(16)
            .enumerate()
            .find(|(_, c)| !event_ok(c, lim))
            .expect("a bad event exists");
        return bad_event(c, lim).at(at(i));
    }
    let (ctrl, mut it) = V2Events::new(evs, shape.n);
    for (i, c) in ctrl.enumerate() {
        let (c, thread, target, loc) = it.next(c);
        if c >> 10 != 0 {
            return Error::syntax(format!("event control word {c:#06x}: bits 10-15 not zero"))
                .at(at(i));
        }
        // The fields as a version 1 event, for the version 1 checks and messages.
        let mut v1 = [0u8; 16];
        v1[0..4].copy_from_slice(&thread.to_le_bytes());
        v1[4..8].copy_from_slice(&target.to_le_bytes());
        v1[8..12].copy_from_slice(&loc.to_le_bytes());
        v1[12] = (c & 15) as u8;
        if !event_ok(&v1, lim) {
            return bad_event(&v1, lim).at(at(i));
        }
    }
    bad(
        start + 2 * shape.n as u64,
        format!(
            "event block: its events use {} bytes of data, the block holds {}",
            it.used,
            it.data.len()
        ),
    )
}

/// The slow, obvious form of the checks in `decode_block`.
fn event_ok(c: &[u8], lim: &[u32; 7]) -> bool {
    let thread = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    let target = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
    let loc = u32::from_le_bytes([c[8], c[9], c[10], c[11]]);
    let Some(op) = Op::from_u8(c[12]) else {
        return false;
    };
    c[13..16] == [0; 3]
        && thread < lim[NameKind::Thread as usize]
        && (loc == u32::MAX || loc < lim[NameKind::Loc as usize])
        && (target < lim[op.target_kind() as usize] || target == u32::MAX && op.target_optional())
}

#[cold]
#[inline(never)]
fn bad_event(c: &[u8], lim: &[u32; 7]) -> Error {
    let thread = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    let target = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
    let loc = u32::from_le_bytes([c[8], c[9], c[10], c[11]]);
    let msg = match Op::from_u8(c[12]) {
        None => format!("unknown operation code {}", c[12]),
        Some(_) if c[13..16] != [0; 3] => "event padding bytes not zero".to_string(),
        Some(_) if thread >= lim[NameKind::Thread as usize] => {
            format!("thread id {thread} is not defined by a name record")
        }
        Some(_) if loc != u32::MAX && loc >= lim[NameKind::Loc as usize] => {
            format!("location id {loc} is not defined by a name record")
        }
        Some(op) if target == u32::MAX => format!("operation `{op}` needs a target"),
        Some(op) => format!(
            "{} id {target} of `{op}` is not defined by a name record",
            kind_what(op.target_kind())
        ),
    };
    Error::syntax(msg)
}

pub(crate) fn kind_what(kind: NameKind) -> &'static str {
    match kind {
        NameKind::Thread => "thread",
        NameKind::Var => "variable",
        NameKind::Lock => "lock",
        NameKind::Loc => "location",
        NameKind::Cond => "condition",
        NameKind::Method => "method",
        NameKind::Addr => "address",
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full<R: Read>(rdr: &mut R, buf: &mut [u8], at: u64) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match rdr.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::from(e).at(at_byte(at + got as u64))),
        }
    }
    Ok(got)
}

/// Replaces `buf` by exactly `len` bytes of input. Grows with the data actually read, so a
/// garbage length in a short file does not allocate the claimed size. `Err(None)` means the
/// input ended early.
fn read_exact_growing<R: Read>(
    rdr: &mut R,
    buf: &mut Vec<u8>,
    len: usize,
) -> Result<(), Option<Error>> {
    buf.clear();
    let got = rdr
        .take(len as u64)
        .read_to_end(buf)
        .map_err(|e| Some(Error::from(e)))?;
    if got < len {
        Err(None)
    } else {
        Ok(())
    }
}

impl<R: BufRead> EventSource for BinaryReader<R> {
    #[inline]
    fn next_event(&mut self) -> Result<Option<Event>> {
        let i = self.next;
        if let Some(&ev) = self.block.events.get(i) {
            self.next = i + 1;
            if ev.op == Op::MethodBegin {
                self.set_span(i);
            }
            return Ok(Some(ev));
        }
        self.next_block()
    }

    /// Copies runs of decoded events straight from the current block.
    fn read_block(&mut self, out: &mut EventBlock, max: usize) -> Result<bool> {
        out.clear();
        while out.events.len() < max {
            let i = self.next;
            let avail = self.block.events.len() + self.taken - i;
            if avail == 0 {
                if !self.advance_block()? {
                    break;
                }
                continue;
            }
            let plain = self.block.spans.is_empty() && self.block.seqs.is_empty();
            if !plain {
                // Events with side data: one at a time.
                match self.next_event()? {
                    Some(ev) => out.push_from(ev, 0, self),
                    None => break,
                }
                continue;
            }
            let n = avail.min(max - out.events.len());
            if out.events.is_empty() && i == 0 && n == avail {
                // A whole decoded block: its vector changes hands instead of being copied
                // (the copy was a fifth of the instructions of `stats` on a binary trace).
                // The block read ends here.
                std::mem::swap(&mut out.events, &mut self.block.events);
                self.block.events.clear();
                self.taken = n;
                self.next = n;
                out.lines.resize(n, 0);
                break;
            }
            out.events.extend_from_slice(&self.block.events[i..i + n]);
            out.lines.resize(out.lines.len() + n, 0);
            self.next += n;
        }
        out.bytes_read = self.offset;
        Ok(!out.events.is_empty())
    }

    fn names(&self) -> &Names {
        &self.names
    }

    fn position(&self) -> Position {
        let returned = self.base + self.next as u64;
        Position {
            line: 0,
            byte: self.block_start + self.stride * (self.next.saturating_sub(1)) as u64,
            event: returned.checked_sub(1),
        }
    }

    fn addresses(&self) -> &[AddrId] {
        match (self.next.checked_sub(1), self.cur_span) {
            (Some(i), Some((start, len)))
                if self.block.events.get(i).map(|e| e.op) == Some(Op::MethodBegin) =>
            {
                self.block
                    .addrs
                    .get(start as usize..(start + len) as usize)
                    .unwrap_or(&[])
            }
            _ => &[],
        }
    }

    fn seq(&self) -> Option<u64> {
        let i = self.next.checked_sub(1)?;
        self.block.seqs.get(i).copied().filter(|&s| s != NO_SEQ)
    }

    fn bytes_read(&self) -> u64 {
        self.offset
    }

    fn has_values(&self) -> bool {
        !self.values.is_empty()
    }
}

impl<R> BinaryReader<R> {
    #[cold]
    fn set_span(&mut self, i: usize) {
        // Spans are in event order; the decoder made one per mbegin.
        self.cur_span = None;
        if let Some(&(idx, start, len)) = self.block.spans.get(self.span_next) {
            if idx as usize == i {
                self.cur_span = Some((start, len));
                self.span_next += 1;
            }
        }
    }
}

mod writer;
pub use writer::BinaryWriter;

#[cfg(test)]
mod tests;
