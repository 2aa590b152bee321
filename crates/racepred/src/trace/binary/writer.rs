//! The binary format's writer: [`BinaryWriter`] (the format is described in the parent
//! module).

use super::*;

/// Streaming writer of the binary format. Ids are renumbered densely in order of first
/// appearance (the order a reader of the written file interns them), so any source can be
/// written in one pass. Call [`finish`](BinaryWriter::finish) to write the end record;
/// without it the file reads as truncated.
pub struct BinaryWriter<W: Write> {
    out: W,
    /// Per table: source id → written id (`u32::MAX` = not written yet).
    map: [Vec<u32>; 7],
    defined: [u32; 7],
    /// The block's control words (`count` of them) and data (`data_len` bytes, then room
    /// for a field's four bytes), and the last event's fields (the next one's prediction).
    ctrl: Box<[u16]>,
    data: Box<[u8]>,
    data_len: usize,
    prev: (u32, u32, u32),
    seqs: Vec<u64>,
    any_seq: bool,
    addr_words: Vec<u32>,
    count: usize,
    total: u64,
    header_written: bool,
    /// A block's bytes after its head, gathered for one write (reused).
    buf: Vec<u8>,
}

impl<W: Write> BinaryWriter<W> {
    pub fn new(out: W) -> Self {
        BinaryWriter {
            out,
            map: Default::default(),
            defined: [0; 7],
            ctrl: vec![0; BLOCK_EVENTS].into(),
            data: vec![0; BLOCK_EVENTS * 12 + 4].into(),
            data_len: 0,
            prev: (0, 0, 0),
            seqs: Vec::new(),
            any_seq: false,
            addr_words: Vec::new(),
            count: 0,
            total: 0,
            header_written: false,
            buf: Vec::new(),
        }
    }

    fn header(&mut self) -> Result<()> {
        if !self.header_written {
            let mut h = [0u8; HEADER_LEN as usize];
            h[..8].copy_from_slice(MAGIC);
            h[8..10].copy_from_slice(&VERSION.to_le_bytes());
            self.out.write_all(&h)?;
            self.header_written = true;
        }
        Ok(())
    }

    /// The written id of source id `id` of table `kind`, writing a name record if new.
    #[inline]
    fn id(&mut self, kind: NameKind, id: u32, names: &Names) -> Result<u32> {
        if let Some(&m) = self.map[kind as usize].get(id as usize) {
            if m != u32::MAX {
                return Ok(m);
            }
        }
        self.define(kind, id, names)
    }

    #[cold]
    #[inline(never)]
    fn define(&mut self, kind: NameKind, id: u32, names: &Names) -> Result<u32> {
        let table = names.table(kind);
        if id as usize >= table.len() {
            return Err(Error::invalid(format!(
                "event refers to {} id {id}, but the source has only {} such names",
                kind_what(kind),
                table.len()
            )));
        }
        let name = table.name(id);
        if name.is_empty() {
            return Err(Error::new(ErrorKind::EmptyName(kind_what(kind))));
        }
        let mut rec = Vec::with_capacity(6 + name.len());
        rec.push(TAG_NAME);
        rec.push(kind_code(kind));
        rec.extend_from_slice(&(name.len() as u32).to_le_bytes());
        rec.extend_from_slice(name.as_bytes());
        self.out.write_all(&rec)?;
        let m = &mut self.map[kind as usize];
        if m.len() <= id as usize {
            m.resize(id as usize + 1, u32::MAX);
        }
        let new = self.defined[kind as usize];
        m[id as usize] = new;
        self.defined[kind as usize] += 1;
        Ok(new)
    }

    /// Appends events without side data (no `mbegin` address set, no access number), as
    /// [`write_event`](Self::write_event) does one at a time (inlined into one loop).
    pub fn write_events(&mut self, evs: &[Event], names: &Names) -> Result<()> {
        evs.iter()
            .try_for_each(|ev| self.write_event(ev, names, &[], None))
    }

    /// Appends one event.
    #[inline(always)]
    pub fn write_event(
        &mut self,
        ev: &Event,
        names: &Names,
        addresses: &[AddrId],
        seq: Option<u64>,
    ) -> Result<()> {
        if !self.header_written {
            self.header()?;
        }
        let thread = self.id(NameKind::Thread, ev.thread.0, names)?;
        let target = if ev.target == u32::MAX && ev.op.target_optional() {
            u32::MAX
        } else {
            self.id(ev.op.target_kind(), ev.target, names)?
        };
        let loc = if ev.loc.is_none() {
            u32::MAX
        } else {
            self.id(NameKind::Loc, ev.loc.0, names)?
        };
        if ev.op == Op::MethodBegin {
            let k = self.addr_words.len();
            self.addr_words.push(addresses.len() as u32);
            for a in addresses {
                let a = self.id(NameKind::Addr, a.0, names)?;
                self.addr_words.push(a);
            }
            debug_assert_eq!(self.addr_words.len(), k + 1 + addresses.len());
        }
        let (t, v, l) = self.prev;
        // The data's length in a local across the three fields (through `self`, each
        // field's store and the next one's load made a chain).
        let mut len = self.data_len;
        let data = &mut self.data[..];
        let c = ev.op as u16
            | put_field(data, &mut len, thread.wrapping_sub(t)) << 4
            | put_field(data, &mut len, target.wrapping_sub(v.wrapping_add(1))) << 6
            | put_field(data, &mut len, loc.wrapping_sub(l)) << 8;
        self.data_len = len;
        self.ctrl[self.count] = c;
        self.prev = (thread, target, loc);
        // Access numbers only once one is given (the block's earlier events have none).
        if seq.is_some() && !self.any_seq {
            self.any_seq = true;
            self.seqs.resize(self.count, NO_SEQ);
        }
        if self.any_seq {
            self.seqs.push(seq.unwrap_or(NO_SEQ));
        }
        self.count += 1;
        self.total += 1;
        if self.count == BLOCK_EVENTS {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        let mut h = [0u8; 16];
        h[0] = TAG_BLOCK;
        h[1] = if self.any_seq { BLOCK_HAS_SEQ } else { 0 };
        h[4..8].copy_from_slice(&(self.count as u32).to_le_bytes());
        h[8..12].copy_from_slice(&(self.addr_words.len() as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(self.data_len as u32).to_le_bytes());
        self.out.write_all(&h)?;
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        put_le(&mut buf, &self.ctrl[..self.count], u16::to_le_bytes);
        buf.extend_from_slice(&self.data[..self.data_len]);
        put_le(&mut buf, &self.seqs, u64::to_le_bytes);
        put_le(&mut buf, &self.addr_words, u32::to_le_bytes);
        let written = self.out.write_all(&buf);
        self.buf = buf;
        written?;
        self.data_len = 0;
        self.prev = (0, 0, 0);
        self.seqs.clear();
        self.addr_words.clear();
        self.any_seq = false;
        self.count = 0;
        Ok(())
    }

    /// Writes a values record holding `text` (UTF-8 lines) after the events written so far.
    pub fn write_values(&mut self, text: &str) -> Result<()> {
        self.header()?;
        self.flush_block()?;
        let len = u32::try_from(text.len())
            .ok()
            .filter(|&n| n <= MAX_VALUES_LEN)
            .ok_or_else(|| Error::invalid("values record too large"))?;
        let mut h = [0u8; 8];
        h[0] = TAG_VALUES;
        h[4..8].copy_from_slice(&len.to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(text.as_bytes())?;
        Ok(())
    }

    /// Writes the last block and the end record, flushes, and returns the output.
    pub fn finish(mut self) -> Result<W> {
        self.header()?;
        self.flush_block()?;
        let mut end = [0u8; 16];
        end[0] = TAG_END;
        end[8..16].copy_from_slice(&self.total.to_le_bytes());
        self.out.write_all(&end)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Appends `items` to `buf`, each as its little-endian bytes.
fn put_le<T: Copy, const N: usize>(buf: &mut Vec<u8>, items: &[T], bytes: fn(T) -> [u8; N]) {
    for &x in items {
        buf.extend_from_slice(&bytes(x));
    }
}
