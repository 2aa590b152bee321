//! Traces: the event model, name tables, streaming readers and writers, validation.
//!
//! A reader is an [`EventSource`]: it yields one [`Event`] at a time from a buffer it owns,
//! interning names as it goes, so memory stays constant in the trace length. An in-memory
//! [`Trace`] (for the oracle, multi-pass analyses and tests) is read from any source and can
//! itself be replayed as a source.

mod atomic_file;
mod event;
pub mod lines;
mod names;

pub mod binary;
pub mod csv;
mod expr;
pub mod golog;
pub mod open;
pub mod rr;
pub mod stacks;
pub mod stats;
pub mod std_format;
pub mod text;
pub mod validate;
pub mod values;
pub mod write;
mod write_formats;
mod writer;

pub use event::{AddrId, CondId, Event, LocId, LockId, MethodId, NameKind, Op, ThreadId, VarId};
pub use names::{Interner, Names};
pub use open::{open, open_opts, open_with, Format, ReadOptions};

use crate::error::{Position, Result};

/// A stream of events with the names they refer to.
///
/// `next_event` returns `Ok(None)` at the end of the input. After an event is returned,
/// `position`, `addresses` and `seq` describe that event.
pub trait EventSource {
    /// The next event, or `None` at the end.
    fn next_event(&mut self) -> Result<Option<Event>>;

    /// The names interned so far (all of them once the source is exhausted).
    fn names(&self) -> &Names;

    /// Where the last event returned came from.
    fn position(&self) -> Position;

    /// The address set of the last event if it was an `mbegin` (empty otherwise).
    fn addresses(&self) -> &[AddrId] {
        &[]
    }

    /// The global access number of the last event, for formats that carry one (the SSHB
    /// paper's Go-tool logs); `None` otherwise.
    fn seq(&self) -> Option<u64> {
        None
    }

    /// Reads up to `max` events into `block` (cleared first), with their lines and side data:
    /// the drivers' path, one call per block instead of one per event. Returns `Ok(false)`
    /// once the input is exhausted and the block is empty.
    ///
    /// On an error the block holds the events read before it, which a caller may still use.
    /// Afterwards `position`, `addresses` and `seq` describe the last event of the block. The
    /// default reads with [`next_event`](Self::next_event); the text and binary readers fill
    /// blocks straight from their buffers.
    fn read_block(&mut self, block: &mut EventBlock, max: usize) -> Result<bool> {
        block.clear();
        while block.events.len() < max {
            let Some(ev) = self.next_event()? else {
                break;
            };
            let line = self.position().line;
            block.push_from(ev, line, self);
        }
        block.bytes_read = self.bytes_read();
        Ok(!block.events.is_empty())
    }

    /// Bytes of input consumed so far (of the underlying, possibly compressed, file when
    /// known), for progress bars.
    fn bytes_read(&self) -> u64 {
        self.position().byte
    }

    /// Size of the input in the unit of [`bytes_read`](Self::bytes_read), when known (a
    /// regular file), for progress bars that show a percentage.
    fn total_bytes(&self) -> Option<u64> {
        None
    }

    /// True once the source has seen a value part or an alternative-path line (the
    /// value-level STD extension, [`values`]): events read so far lost data that only
    /// [`values::ValueTrace`] keeps.
    fn has_values(&self) -> bool {
        false
    }
}

/// A run of events read at once ([`EventSource::read_block`]) with what a driver needs to
/// validate them and to pass their side data on. Reused from block to block: no allocation
/// per event or per block once the vectors have grown.
#[derive(Clone, Debug, Default)]
pub struct EventBlock {
    pub events: Vec<Event>,
    /// The source line of each event (`0` for formats without lines).
    pub lines: Vec<u64>,
    /// `mbegin` address sets: (offset of the event in the block, start, length in `addrs`).
    pub spans: Vec<(u32, u32, u32)>,
    pub addrs: Vec<AddrId>,
    /// Access numbers, one per event, for formats that carry them (empty otherwise).
    pub seqs: Vec<u64>,
    /// [`EventSource::bytes_read`] after the block.
    pub bytes_read: u64,
}

impl EventBlock {
    pub fn new() -> EventBlock {
        EventBlock::default()
    }

    pub fn clear(&mut self) {
        self.events.clear();
        self.lines.clear();
        self.spans.clear();
        self.addrs.clear();
        self.seqs.clear();
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Appends the event `src` just returned, with its side data.
    pub fn push_from<S: EventSource + ?Sized>(&mut self, ev: Event, line: u64, src: &S) {
        let i = self.events.len() as u32;
        if ev.op == Op::MethodBegin {
            let a = src.addresses();
            self.spans
                .push((i, self.addrs.len() as u32, a.len() as u32));
            self.addrs.extend_from_slice(a);
        }
        if let Some(s) = src.seq() {
            // Access numbers come with every event of a format or with none.
            self.seqs.resize(i as usize, 0);
            self.seqs.push(s);
        }
        self.events.push(ev);
        self.lines.push(line);
    }

    /// The side data of event `i` of the block.
    pub fn side(&self, i: usize) -> (&[AddrId], Option<u64>) {
        let addrs = match self.spans.binary_search_by_key(&(i as u32), |s| s.0) {
            Ok(k) => {
                let (_, start, len) = self.spans[k];
                &self.addrs[start as usize..(start + len) as usize]
            }
            Err(_) => &[],
        };
        (addrs, self.seqs.get(i).copied())
    }

    /// True if no event of the block has side data (the analyses' block path applies).
    pub fn plain(&self) -> bool {
        self.spans.is_empty() && self.seqs.is_empty()
    }

    /// Keeps the first `n` events.
    pub fn truncate(&mut self, n: usize) {
        self.events.truncate(n);
        self.lines.truncate(n);
        self.seqs.truncate(n);
        while self.spans.last().is_some_and(|s| s.0 as usize >= n) {
            let (_, start, _) = self.spans.pop().unwrap();
            self.addrs.truncate(start as usize);
        }
    }
}

impl<S: EventSource + ?Sized> EventSource for Box<S> {
    fn next_event(&mut self) -> Result<Option<Event>> {
        (**self).next_event()
    }
    fn read_block(&mut self, block: &mut EventBlock, max: usize) -> Result<bool> {
        (**self).read_block(block, max)
    }
    fn names(&self) -> &Names {
        (**self).names()
    }
    fn position(&self) -> Position {
        (**self).position()
    }
    fn addresses(&self) -> &[AddrId] {
        (**self).addresses()
    }
    fn seq(&self) -> Option<u64> {
        (**self).seq()
    }
    fn bytes_read(&self) -> u64 {
        (**self).bytes_read()
    }
    fn total_bytes(&self) -> Option<u64> {
        (**self).total_bytes()
    }
    fn has_values(&self) -> bool {
        (**self).has_values()
    }
}

/// A whole trace in memory: events, names and side data.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub events: Vec<Event>,
    pub names: Names,
    /// Address sets of `mbegin` events: `(event index, start, len)` into `addr_pool`,
    /// sorted by event index.
    addr_index: Vec<(u32, u32, u32)>,
    addr_pool: Vec<AddrId>,
    /// Global access numbers, one per event, when the source had them.
    pub seq: Option<Vec<u64>>,
    /// Source line of each event (1-based; empty when the source had no lines).
    pub lines: Vec<u64>,
}

impl Trace {
    pub fn new() -> Trace {
        Trace::default()
    }

    /// Reads a whole source into memory.
    pub fn read_from<S: EventSource + ?Sized>(src: &mut S) -> Result<Trace> {
        let mut t = Trace::new();
        let mut seqs = Vec::new();
        let mut has_seq = false;
        let mut block = EventBlock::new();
        while src.read_block(&mut block, 8192)? {
            let base = t.events.len();
            for &(i, start, len) in &block.spans {
                t.addr_index
                    .push((base as u32 + i, t.addr_pool.len() as u32, len));
                t.addr_pool
                    .extend_from_slice(&block.addrs[start as usize..(start + len) as usize]);
            }
            if !block.seqs.is_empty() {
                has_seq = true;
                seqs.resize(base, 0);
                seqs.extend_from_slice(&block.seqs);
            }
            seqs.resize(base + block.len(), 0);
            t.lines
                .extend(block.lines.iter().copied().filter(|&l| l > 0));
            t.events.extend_from_slice(&block.events);
        }
        if t.lines.len() != t.events.len() {
            t.lines.clear();
        }
        t.seq = has_seq.then_some(seqs);
        t.names = src.names().clone();
        Ok(t)
    }

    /// Builds a trace from events whose targets are already ids; names are `T<i>`, `V<i>`,
    /// `L<i>`, … (used by generators and tests).
    pub fn from_events(events: Vec<Event>) -> Trace {
        let mut names = Names::new();
        let mut max = [0u32; 7];
        for ev in &events {
            let k = ev.op.target_kind() as usize;
            max[NameKind::Thread as usize] = max[NameKind::Thread as usize].max(ev.thread.0 + 1);
            if ev.target != u32::MAX {
                max[k] = max[k].max(ev.target + 1);
            }
            if !ev.loc.is_none() {
                max[NameKind::Loc as usize] = max[NameKind::Loc as usize].max(ev.loc.0 + 1);
            }
        }
        for kind in NameKind::ALL {
            let prefix = match kind {
                NameKind::Thread => "T",
                NameKind::Var => "V",
                NameKind::Lock => "L",
                NameKind::Loc => "",
                NameKind::Cond => "C",
                NameKind::Method => "M",
                NameKind::Addr => "A",
            };
            let table = names.table_mut(kind);
            for i in 0..max[kind as usize] {
                table.intern(format!("{prefix}{i}").as_bytes());
            }
        }
        Trace {
            events,
            names,
            ..Trace::default()
        }
    }

    /// Sets the address set of the `mbegin` at `index` (events must be added in order).
    pub fn set_addresses(&mut self, index: usize, addrs: &[AddrId]) {
        debug_assert_eq!(self.events[index].op, Op::MethodBegin);
        debug_assert!(self
            .addr_index
            .last()
            .is_none_or(|&(i, _, _)| (i as usize) < index));
        self.addr_index.push((
            index as u32,
            self.addr_pool.len() as u32,
            addrs.len() as u32,
        ));
        self.addr_pool.extend_from_slice(addrs);
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The address set of the event at `index` (empty unless it is an `mbegin`).
    pub fn addresses(&self, index: usize) -> &[AddrId] {
        match self
            .addr_index
            .binary_search_by_key(&(index as u32), |&(i, _, _)| i)
        {
            Ok(k) => {
                let (_, s, l) = self.addr_index[k];
                &self.addr_pool[s as usize..(s + l) as usize]
            }
            Err(_) => &[],
        }
    }

    /// Number of threads (ids are `0..num_threads`).
    pub fn num_threads(&self) -> usize {
        self.names.threads.len()
    }
    pub fn num_vars(&self) -> usize {
        self.names.vars.len()
    }
    pub fn num_locks(&self) -> usize {
        self.names.locks.len()
    }

    /// Replays the trace as an [`EventSource`].
    pub fn source(&self) -> TraceSource<'_> {
        TraceSource {
            trace: self,
            next: 0,
        }
    }
}

/// An [`EventSource`] over an in-memory [`Trace`].
pub struct TraceSource<'a> {
    trace: &'a Trace,
    next: usize,
}

impl EventSource for TraceSource<'_> {
    fn next_event(&mut self) -> Result<Option<Event>> {
        let ev = self.trace.events.get(self.next).copied();
        if ev.is_some() {
            self.next += 1;
        }
        Ok(ev)
    }
    fn names(&self) -> &Names {
        &self.trace.names
    }
    fn position(&self) -> Position {
        let i = self.next.saturating_sub(1);
        Position {
            line: self.trace.lines.get(i).copied().unwrap_or(0),
            byte: 0,
            event: (self.next > 0).then_some(i as u64),
        }
    }
    fn addresses(&self) -> &[AddrId] {
        if self.next == 0 {
            return &[];
        }
        self.trace.addresses(self.next - 1)
    }
    fn seq(&self) -> Option<u64> {
        let s = self.trace.seq.as_ref()?;
        s.get(self.next.checked_sub(1)?).copied()
    }
}
