//! Writing the trace while the program runs: the thread buffers are merged by key and
//! written as they fill, so a run's memory does not grow with its length.
//!
//! **Keys.** Every record carries a stamp ([`crate::buf`]): a synchronisation event (and a
//! free or retirement) `2s + 1` for a number `s` of its own from the global sequence
//! `SEQ`; an access or a call `2k` for the value `k` of `SEQ` it loaded (a load, not a
//! read-modify-write). The writer orders records by key = max(stamp, the thread's *clamp*,
//! see below), ties broken by thread; a thread's keys never decrease (its loads see its own
//! increments and each other in order), so each thread's records go out in program order.
//!
//! **Why the merged order is a valid trace.** Synchronisation events go out in stamp
//! order, which is their execution order (`SEQ` is one atomic; the hooks stamp an acquire
//! after the lock is taken and a release before it is let go, an atomic's `vr` after the
//! `vw` it read: the argument of [`crate::buf`]). An access that loaded `k` goes out after
//! every synchronisation event that happens before it (its number was taken before the
//! load, so it is below `k`: key `≤ 2k - 1`) and before every one that happens after it
//! (its number is taken after the load: `≥ k`, key `≥ 2k + 1`) — that includes the join
//! of the access's thread, which has no synchronisation record of its own after the
//! access. Accesses happen before or after other threads' events only through such
//! synchronisation events, and the thread's own records keep their order. So the merged
//! trace is
//! a linearisation of happens-before in which every lock's events, every atomic's
//! reads-from and every thread's program order are those of the run. Accesses that no
//! synchronisation orders may be merged in another order than they ran: only racing pairs
//! (conflicting, unordered by happens-before) can swap, so every prefix free of such races
//! has the run's reads-from, the happens-before races are those of the run, and each
//! predictive analysis reasons about a correct reordering of the run up to its first race,
//! as it does for a trace stamped per access. (Values are not recorded for C/C++ programs:
//! there is no value trace to keep consistent.) The load of `SEQ` keeps memory reuse in
//! order: memory that one thread freed (its retirement stamped) and another got back from
//! `malloc` is accessed with a stamp above the retirement's, as the allocator's own
//! synchronisation makes `SEQ`'s new value visible to the second thread.
//!
//! **The watermark.** A round takes `g` = `SEQ`, then each thread's `pending` flag (set
//! while it stamps a synchronisation record), then the records each thread has published.
//! A thread that was not pending stamps its next synchronisation record from `SEQ ≥ g`
//! (both flag and counter are sequentially consistent); one that was pending stamps it
//! above its last key. So no record still to come has a key below the watermark `W` =
//! min(`2g`, the pending threads' last keys), and the round writes, in key order, every
//! published record below `W`. An access published later by a thread that was not pending
//! may carry an older `SEQ` value: its key is raised to `W` (the thread's clamp), which is
//! still below its thread's next synchronisation stamp (`≥ 2g + 1`), so it stays between its
//! two synchronisation events — and after everything written before it. A thread first
//! seen in a round is clamped to the previous round's watermark (it was registered after
//! that round looked, so all its events come after what that round wrote).
//!
//! **Who writes.** No thread of its own: the thread that fills a buffer chunk runs a round
//! if no other is running (the writer lock, a futex mutex tried once), then frees the chunks
//! written. A thread with more than [`BACKLOG`] chunks unwritten waits for the lock and
//! runs a round itself, so producers cannot outrun the writer. The end of the run (exit, a
//! fatal signal, `exec`) runs a last round with no watermark.
//!
//! **Locks and allocation.** The writer lock is taken while holding an atomic's stripe
//! lock (a chunk filled inside an atomic operation), never the other way round; `fork`
//! takes it last. Under it the round allocates, as the merge at exit did: the thread is
//! inside the runtime (`busy`), so the hooks its allocations reach only forward, and no
//! hook waits for the writer lock while holding an allocator lock.

use core::sync::atomic::Ordering;
use std::io::{BufRead, BufWriter};
use std::path::PathBuf;

use racepred::trace::stacks::{self, StacksWriter};
use racepred::trace::write::TraceWriter;
use racepred::trace::{Event, Format, NameKind};

use crate::buf::{self, Chunk, FutexGuard, FutexLock, Kind, ThreadBuf, CHUNK_RECS};
use crate::convert::Converter;

/// Unwritten chunks a thread may have before it waits to write them itself.
pub const BACKLOG: usize = 4;

static LOCK: FutexLock = FutexLock::new();

buf::locked_state!(Locked: STATE of Writer);

unsafe extern "C" {
    fn pthread_setcancelstate(state: libc::c_int, old: *mut libc::c_int) -> libc::c_int;
}
/// glibc's `PTHREAD_CANCEL_DISABLE`.
const CANCEL_DISABLE: libc::c_int = 1;

/// The writer lock held, and through it the writer's state. Cancellation of the thread is
/// disabled meanwhile: the round writes to the trace file (`write` is a cancellation
/// point), and a cancellation unwinding out of a hook would end the process.
struct Locked {
    _hold: FutexGuard,
    cancel: libc::c_int,
}

impl Locked {
    fn new() -> Locked {
        Locked::held(LOCK.lock())
    }

    fn try_new() -> Option<Locked> {
        LOCK.try_lock().map(Locked::held)
    }

    fn held(g: FutexGuard) -> Locked {
        buf::TLS.with(|t| t.writing.set(true));
        let mut cancel = CANCEL_DISABLE;
        // SAFETY: a valid state and out-parameter.
        unsafe { pthread_setcancelstate(CANCEL_DISABLE, &mut cancel) };
        Locked { _hold: g, cancel }
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        // SAFETY: restores the state `held` found; the old-state pointer may be null.
        unsafe { pthread_setcancelstate(self.cancel, core::ptr::null_mut()) };
        buf::TLS.with(|t| t.writing.set(false));
    }
}

/// Where the writer is in one thread's buffer.
struct Cursor {
    buf: *mut ThreadBuf,
    tid: u32,
    /// The next record: index `at` of `chunk` (the chunks before it are freed).
    chunk: *mut Chunk,
    at: usize,
    /// The end of this round's snapshot: records before index `end_at` of `end_chunk`.
    end_chunk: *mut Chunk,
    end_at: usize,
    /// Keys are at least this (see the module text).
    clamp: u64,
    /// The key of the last record written or snapshotted.
    last_key: u64,
    pending: bool,
}

impl Cursor {
    fn has_next(&self) -> bool {
        self.chunk != self.end_chunk || self.at < self.end_at
    }

    /// The next record (there is one: [`Cursor::has_next`]).
    fn peek(&self) -> &buf::Rec {
        // SAFETY: the record is before the snapshot's end, so published (its length was
        // loaded with acquire) and never rewritten; the chunk is freed only once passed.
        unsafe { &(*self.chunk).recs[self.at] }
    }

    fn key(&self, r: &buf::Rec) -> u64 {
        r.seq.max(self.clamp)
    }

    /// Moves past a full chunk the owner has left, freeing it.
    fn advance(&mut self) {
        while self.at == CHUNK_RECS && self.chunk != self.end_chunk {
            // SAFETY: `chunk` is full and not the snapshot's end, so its `next` is set;
            // the owner never touches a chunk again once it has linked the next one, and
            // no one else reads it: it is ours to free.
            unsafe {
                let next = (*self.chunk).next.load(Ordering::Acquire);
                buf::free_chunk(self.buf, self.chunk);
                self.chunk = next;
            }
            self.at = 0;
        }
    }
}

struct Output {
    trace: Box<dyn TraceWriter>,
    /// The calling contexts, made when the first call is met.
    stacks: Option<StacksWriter<BufWriter<std::fs::File>>>,
}

struct Writer {
    conv: Converter,
    path: PathBuf,
    out: Option<Output>,
    /// The first error met writing; the records are still consumed (memory stays bounded).
    error: Option<racepred::Error>,
    /// The trace has been written whole (before an `exec`): nothing more is written
    /// unless [`resume`] reopens it.
    done: bool,
    events: u64,
    cursors: Vec<Cursor>,
    /// The newest buffer seen (buffers are registered newest first).
    seen: *mut ThreadBuf,
    /// The watermark of the last round: every record written had a key below it.
    upto: u64,
    /// Plain accesses converted and not yet written ([`Writer::write_run`]).
    batch: Vec<Event>,
}

impl Writer {
    fn new() -> Writer {
        let path = crate::finish::output_path();
        let mut conv = Converter::new();
        conv.symbols = Some(crate::symbols::Symboliser::new());
        let mut w = Writer {
            conv,
            path,
            out: None,
            error: None,
            done: false,
            events: 0,
            cursors: Vec::new(),
            seen: core::ptr::null_mut(),
            upto: 0,
            batch: Vec::with_capacity(1024),
        };
        if let Err(e) = w.open() {
            w.error = Some(e);
        }
        w
    }

    fn open(&mut self) -> racepred::Result<()> {
        let format = Format::from_path(&self.path).unwrap_or(Format::Binary);
        let trace = racepred::trace::write::create(&self.path, format)?;
        // Encoded beside the rounds where a thread can be made for it.
        let trace = crate::offload::Offload::new(trace)
            .map(|o| Box::new(o) as Box<dyn TraceWriter>)
            .unwrap_or_else(|t| t);
        let _ = std::fs::remove_file(stacks::sidecar(&self.path));
        self.out = Some(Output {
            trace,
            stacks: None,
        });
        Ok(())
    }

    /// One round: writes every published record below the watermark (`last`: every
    /// published record).
    fn round(&mut self, last: bool) {
        let g = buf::SEQ.load(Ordering::SeqCst);
        let head = buf::THREADS.load(Ordering::SeqCst);
        let mut b = head;
        let mut new = Vec::new();
        while !b.is_null() && b != self.seen {
            // SAFETY: a registered buffer stays mapped; its `tid`, `first` and
            // `next_thread` never change once published.
            unsafe {
                new.push(Cursor {
                    buf: b,
                    tid: (*b).tid,
                    chunk: (*b).first,
                    at: 0,
                    end_chunk: (*b).first,
                    end_at: 0,
                    clamp: self.upto,
                    last_key: self.upto,
                    pending: false,
                });
                b = (*b).next_thread;
            }
        }
        self.seen = head;
        self.cursors.extend(new.into_iter().rev());

        // Stamps are `2s + 1` (synchronisation) and `2k` (accesses): see `crate::buf`.
        let mut bound = if last { u64::MAX } else { 2 * g };
        for c in &mut self.cursors {
            // SAFETY: a registered buffer's `pending` flag, read by anyone.
            c.pending = !last && unsafe { (*c.buf).pending.load(Ordering::SeqCst) };
            // The snapshot: the chunks after the cursor's, up to the last published record.
            let mut ch = c.chunk;
            loop {
                // SAFETY: `ch` is the cursor's chunk or one linked after it: mapped
                // (chunks are freed only by this writer, once passed); the length and link
                // are published with release stores.
                let (n, next) = unsafe {
                    (
                        (*ch).len.load(Ordering::Acquire),
                        (*ch).next.load(Ordering::Acquire),
                    )
                };
                if n == CHUNK_RECS && !next.is_null() {
                    ch = next;
                    continue;
                }
                c.end_chunk = ch;
                c.end_at = n;
                break;
            }
            if c.end_at > 0 {
                // SAFETY: record `end_at - 1` of `end_chunk` is published.
                let r = unsafe { &(*c.end_chunk).recs[c.end_at - 1] };
                c.last_key = c.key(r);
            }
            c.advance();
            if c.pending {
                bound = bound.min(c.last_key.max(c.clamp));
            }
        }

        // Merge: the thread with the smallest next key writes its records up to the next
        // thread's key (ties: the lower index first).
        loop {
            let mut best: Option<(u64, usize)> = None;
            let mut second: Option<(u64, usize)> = None;
            for (i, c) in self.cursors.iter().enumerate() {
                if !c.has_next() {
                    continue;
                }
                let k = (c.key(c.peek()), i);
                if best.is_none_or(|b| k < b) {
                    second = best;
                    best = Some(k);
                } else if second.is_none_or(|s| k < s) {
                    second = Some(k);
                }
            }
            let Some((key, i)) = best else { break };
            if key >= bound {
                break;
            }
            let limit = second.unwrap_or((u64::MAX, usize::MAX)).min((bound, 0));
            self.write_run(i, limit);
        }

        if !last {
            for c in &mut self.cursors {
                if !c.pending {
                    c.clamp = c.clamp.max(bound);
                }
            }
            self.upto = self.upto.max(bound);
        }
    }

    /// Writes thread `i`'s records while `(key, i) < limit`. Plain accesses are converted
    /// into [`Writer::batch`] and written a batch at a time; calls and returns (once the
    /// stacks file is open) only change the calling context, which is noted for the next
    /// access; any other record first writes the batch.
    fn write_run(&mut self, i: usize, limit: (u64, usize)) {
        let t = self.conv.thread(self.cursors[i].tid);
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        // After an error the records are consumed unconverted (memory stays bounded).
        let live = self.error.is_none() && !self.done && self.out.is_some();
        let mut stacks_open = self.out.as_ref().is_some_and(|o| o.stacks.is_some());
        let mut ctx = self.conv.context(t);
        loop {
            let c = &mut self.cursors[i];
            if !c.has_next() {
                break;
            }
            let r = *c.peek();
            if (c.key(&r), i) >= limit {
                break;
            }
            c.at += 1;
            if c.at == CHUNK_RECS {
                c.advance();
            }
            match r.kind() {
                Some(Kind::Read | Kind::Write) => {
                    if !live {
                        continue;
                    }
                    let Some(ev) = self.conv.convert_as(t, &r) else {
                        continue;
                    };
                    if stacks_open {
                        // The event's index once the batch is written.
                        let index = self.events + batch.len() as u64;
                        if let Some(s) = self.out.as_mut().and_then(|o| o.stacks.as_mut()) {
                            if let Err(e) = s.event(index, ctx) {
                                self.error = Some(e.into());
                            }
                        }
                    }
                    batch.push(ev);
                    if batch.len() == batch.capacity() {
                        self.write_batch(&mut batch);
                    }
                }
                Some(Kind::FuncEntry | Kind::FuncExit) if live && stacks_open => {
                    self.conv.call(t, &r);
                    ctx = self.conv.context(t);
                }
                _ => {
                    self.write_batch(&mut batch);
                    self.write_record(t, &r);
                    stacks_open = self.out.as_ref().is_some_and(|o| o.stacks.is_some());
                    ctx = self.conv.context(t);
                }
            }
        }
        self.write_batch(&mut batch);
        self.batch = batch;
    }

    /// Writes the plain accesses of `batch` (their calling contexts are noted) and empties
    /// it.
    fn write_batch(&mut self, batch: &mut Vec<Event>) {
        if batch.is_empty() {
            return;
        }
        if self.error.is_none() && !self.done {
            if let Some(out) = self.out.as_mut() {
                if let Err(e) = out.trace.write_events(batch, &self.conv.names) {
                    self.error = Some(e);
                }
                self.events += batch.len() as u64;
            }
        }
        batch.clear();
    }

    /// Converts and writes one record of trace thread `t` that is not a plain access.
    fn write_record(&mut self, t: racepred::trace::ThreadId, r: &buf::Rec) {
        if self.error.is_some() || self.done {
            return;
        }
        let Some(out) = self.out.as_mut() else {
            return;
        };
        if r.kind() == Some(Kind::FuncEntry) && out.stacks.is_none() {
            match std::fs::File::create(stacks::sidecar(&self.path))
                .and_then(|f| StacksWriter::new(BufWriter::new(f)))
            {
                Ok(s) => out.stacks = Some(s),
                Err(e) => {
                    self.error = Some(e.into());
                    return;
                }
            }
        }
        let ctx = self
            .conv
            .free_context(t, r)
            .unwrap_or_else(|| self.conv.context(t));
        let events = &mut self.events;
        let res = self.conv.convert_with(t, r, |ev, names| {
            if let Some(s) = out.stacks.as_mut() {
                s.event(*events, ctx)?;
            }
            *events += 1;
            out.trace.write_event(ev, names, Default::default())
        });
        if let Err(e) = res {
            self.error = Some(e);
        }
    }

    /// Writes the end of the trace and of its calling contexts.
    fn close(&mut self) -> racepred::Result<Summary> {
        self.done = true;
        if let Some(e) = self.error.take() {
            self.out = None;
            return Err(e);
        }
        let Some(out) = self.out.take() else {
            return Err(racepred::Error::invalid("the trace was not opened"));
        };
        out.trace.finish()?;
        if let Some(s) = out.stacks {
            let contexts: Vec<Vec<u64>> = self.conv.contexts().collect();
            let mut syms = self.conv.symbols.take().unwrap_or_default();
            let names = contexts.into_iter().map(|mut frames| {
                // A thread's outermost calls are from its start (this runtime's start
                // routine, libc's call of `main`): not the program's.
                while frames.len() > 1
                    && frames.last().is_some_and(|&pc| syms.is_runtime_or_libc(pc))
                {
                    frames.pop();
                }
                frames
                    .into_iter()
                    .map(|pc| syms.frame_name(pc))
                    .collect::<Vec<_>>()
            });
            let names: Vec<Vec<String>> = names.collect();
            self.conv.symbols = Some(syms);
            s.finish(names)?;
        }
        Ok(Summary {
            events: self.events,
            threads: self.conv.names.table(NameKind::Thread).len(),
            vars: self.conv.names.table(NameKind::Var).len(),
            locks: self.conv.names.table(NameKind::Lock).len(),
        })
    }

    /// After a failed `exec`: the trace written whole before it is opened again and its
    /// events copied, so that the run goes on into the same trace.
    fn reopen(&mut self) -> racepred::Result<()> {
        self.done = false;
        let path = self.path.clone();
        let old = path.with_file_name(format!(
            ".{}.before-exec",
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        ));
        std::fs::rename(&path, &old)?;
        let old_stacks = stacks::sidecar(&old);
        let had_stacks = std::fs::rename(stacks::sidecar(&path), &old_stacks).is_ok();
        self.open()?;
        let out = self.out.as_mut().expect("just opened");
        let mut src = racepred::trace::open::open(&old)?;
        let names = &mut self.conv.names;
        let mut ids: [Vec<u32>; 7] = Default::default();
        let mut copied = 0u64;
        while let Some(mut ev) = src.next_event()? {
            // The old trace's names are ours: map its ids onto the converter's.
            let mut map = |kind: NameKind, id: u32| -> u32 {
                let m = &mut ids[kind as usize];
                while m.len() <= id as usize {
                    let n = src.names().table(kind).name(m.len() as u32);
                    m.push(names.table_mut(kind).intern(n.as_bytes()));
                }
                m[id as usize]
            };
            ev.thread.0 = map(NameKind::Thread, ev.thread.0);
            if ev.target != u32::MAX || !ev.op.target_optional() {
                ev.target = map(ev.op.target_kind(), ev.target);
            }
            if !ev.loc.is_none() {
                ev.loc.0 = map(NameKind::Loc, ev.loc.0);
            }
            out.trace.write_event(&ev, names, Default::default())?;
            copied += 1;
        }
        if had_stacks {
            let f = std::fs::File::open(&old_stacks)?;
            let mut s = StacksWriter::new(BufWriter::new(std::fs::File::create(
                stacks::sidecar(&path),
            )?))?;
            for line in std::io::BufReader::new(f).lines() {
                let line = line?;
                let mut it = line
                    .strip_prefix("e ")
                    .into_iter()
                    .flat_map(|l| l.split(' '));
                if let (Some(e), Some(c)) = (it.next(), it.next()) {
                    if let (Ok(e), Ok(c)) = (e.parse(), c.parse()) {
                        s.event(e, c)?;
                    }
                }
            }
            out.stacks = Some(s);
            let _ = std::fs::remove_file(&old_stacks);
        }
        self.events = copied;
        let _ = std::fs::remove_file(&old);
        Ok(())
    }
}

pub struct Summary {
    pub events: u64,
    pub threads: usize,
    pub vars: usize,
    pub locks: usize,
}

/// Called by a thread that has just filled a chunk (outside a synchronisation record),
/// with its count of unwritten chunks: runs a round unless another thread is running one;
/// with a backlog, waits for the lock.
pub fn chunk_filled(backlog: usize) {
    if buf::FINISHED.load(Ordering::Relaxed) {
        return;
    }
    let locked = if backlog > BACKLOG {
        Some(Locked::new())
    } else {
        Locked::try_new()
    };
    let Some(mut w) = locked else { return };
    let st = w.get_or_insert_with(Writer::new);
    if !st.done {
        st.round(false);
    }
}

/// At the end of the run (or before an `exec`): writes what is left and ends the trace.
/// Not from a signal that interrupted this thread's own round (the writer's state is
/// half-updated; the trace is then not written).
pub fn finish() -> racepred::Result<(Summary, PathBuf)> {
    if buf::TLS.with(|t| t.writing.get()) {
        return Err(racepred::Error::invalid(
            "the program ended (a fatal signal) while this thread was writing the trace",
        ));
    }
    let mut w = Locked::new();
    let st = w.get_or_insert_with(Writer::new);
    st.round(true);
    let s = st.close()?;
    Ok((s, st.path.clone()))
}

/// After a failed `exec`: recording goes on into the same trace.
pub fn resume() {
    let mut w = Locked::new();
    if let Some(st) = w.as_mut() {
        if st.done {
            if let Err(e) = st.reopen() {
                st.error = Some(e);
            }
        }
    }
}

/// Held across `fork` (after the atomics' stripes and the online lock), so that the child's
/// copy of the writer is not in the middle of a round.
pub fn lock_for_fork() -> FutexGuard {
    LOCK.lock()
}

/// In a child just forked (no other thread, the writer lock free): the writer's state is
/// the parent's (its output, its history) and is dropped unwritten (`mem::forget`: the
/// parent's file stays the parent's). Returns where each buffer's unfreed chunks start.
pub fn forget_in_child() -> Vec<(*mut ThreadBuf, *mut Chunk)> {
    let mut w = Locked::new();
    let Some(st) = w.take() else {
        return Vec::new();
    };
    let starts = st.cursors.iter().map(|c| (c.buf, c.chunk)).collect();
    core::mem::forget(st);
    starts
}
