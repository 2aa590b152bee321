//! The trace's encoding on a thread of its own: a [`TraceWriter`] that hands the events a
//! writer round converted, with the names they brought, to a thread that encodes and writes
//! them, so that the round (the merge and the conversion, which run on the thread that
//! filled a buffer chunk, holding the writer lock) and the encoding run at once. Recording
//! is bound by the writer, which runs on one thread at a time, while the program's threads
//! wait for it: on two cores, the encoding is about half of its time.
//!
//! The thread is made with the real `pthread_create` (not recorded), with every signal
//! blocked (the program's handlers never run on it), and marks itself inside the runtime
//! before anything else, so that the hooks its own calls reach (`free`) only forward. It
//! keeps its own copy of the name tables: each batch carries the names made since the last
//! one, interned there in the same order, so an id means the same name on both sides.
//! At most [`IN_FLIGHT`] batches wait for it (the round waits when they are full: memory
//! stays bounded). An error writing is handed back at the next batch, so that the round
//! stops converting as it does when it writes itself; [`Offload::finish`] sends what is
//! left, waits for the thread and returns its error.
//!
//! Where the thread cannot be made, the events are encoded where they were converted, as
//! without this module.

use core::ffi::c_void;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use racepred::trace::write::{Extras, TraceWriter};
use racepred::trace::{Event, NameKind, Names};
use racepred::{Error, Result};

use crate::buf::TLS;

/// Events per batch.
const BATCH: usize = 1 << 14;
/// Batches handed over and not yet encoded, at most.
const IN_FLIGHT: usize = 2;

/// One batch: its events, and the names made since the previous batch, per kind, as one
/// string and its end offsets.
struct Batch {
    events: Vec<Event>,
    names: [(String, Vec<u32>); NameKind::ALL.len()],
}

enum Msg {
    Batch(Box<Batch>),
    Finish,
}

/// The round's side: a [`TraceWriter`] whose events are encoded by the thread.
pub struct Offload {
    tx: SyncSender<Msg>,
    /// The thread's answer to [`Msg::Finish`]: the writer's result.
    done: Receiver<Result<()>>,
    thread: libc::pthread_t,
    /// The batch being filled: events, and the names made since the last batch (taken at
    /// each call, while the tables are at hand: `finish` has none).
    batch: Batch,
    /// Names of each kind taken into a batch.
    sent: [usize; NameKind::ALL.len()],
}

/// What the thread runs on: the real writer and its copy of the names.
struct Encoder {
    out: Box<dyn TraceWriter>,
    names: Names,
    rx: Receiver<Msg>,
    done: SyncSender<Result<()>>,
}

impl Encoder {
    fn run(self) {
        let Encoder {
            mut out,
            mut names,
            rx,
            done,
        } = self;
        let mut failed = false;
        while let Ok(msg) = rx.recv() {
            match msg {
                Msg::Batch(b) => {
                    if failed {
                        continue;
                    }
                    for (kind, (text, ends)) in NameKind::ALL.into_iter().zip(&b.names) {
                        let table = names.table_mut(kind);
                        let mut start = 0;
                        for &end in ends {
                            table.intern(&text.as_bytes()[start..end as usize]);
                            start = end as usize;
                        }
                    }
                    if let Err(e) = out.write_events(&b.events, &names) {
                        // Said at once: the round stops converting (`Offload::send`).
                        failed = true;
                        let _ = done.send(Err(e));
                    }
                }
                Msg::Finish => {
                    if !failed {
                        let _ = done.send(out.finish());
                    }
                    return;
                }
            }
        }
    }
}

extern "C" fn encoder_main(arg: *mut c_void) -> *mut c_void {
    // Inside the runtime for good: hooks reached from here only forward.
    TLS.with(|t| t.busy.set(true));
    // SAFETY: `arg` is the `Box<Encoder>` leaked by `Offload::new` for this thread alone.
    let enc = unsafe { Box::from_raw(arg.cast::<Encoder>()) };
    enc.run();
    core::ptr::null_mut()
}

impl Offload {
    /// Moves `out` to a thread of its own; gives it back if the thread cannot be made.
    pub fn new(out: Box<dyn TraceWriter>) -> core::result::Result<Offload, Box<dyn TraceWriter>> {
        let (tx, rx) = sync_channel(IN_FLIGHT);
        let (done_tx, done) = sync_channel(1);
        let enc = Box::into_raw(Box::new(Encoder {
            out,
            names: Names::new(),
            rx,
            done: done_tx,
        }));
        let mut thread: libc::pthread_t = 0;
        // SAFETY: sigset and pthread calls on valid out-parameters; `encoder_main` has the
        // start routine's signature and owns `enc` once the thread is made (the real
        // `pthread_create`: the thread is not the program's). The calling thread's mask is
        // restored at once; the new thread inherits the full one. The writer moves to the
        // thread with `enc` and is used there alone (a file writer: no state tied to the
        // thread that made it).
        let made = unsafe {
            let mut all: libc::sigset_t = core::mem::zeroed();
            let mut old: libc::sigset_t = core::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
            let r = crate::sync::REAL_CREATE.get()(
                &mut thread,
                core::ptr::null(),
                encoder_main,
                enc.cast(),
            );
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, core::ptr::null_mut());
            r == 0
        };
        if !made {
            // SAFETY: the thread was not made: `enc` is still ours.
            let enc = unsafe { Box::from_raw(enc) };
            return Err(enc.out);
        }
        Ok(Offload {
            tx,
            done,
            thread,
            batch: Offload::new_batch(),
            sent: [0; NameKind::ALL.len()],
        })
    }

    fn new_batch() -> Batch {
        Batch {
            events: Vec::with_capacity(BATCH),
            names: Default::default(),
        }
    }

    /// Takes the names made since the last call into the batch.
    fn take_names(&mut self, names: &Names) {
        for (i, kind) in NameKind::ALL.into_iter().enumerate() {
            let table = names.table(kind);
            if self.sent[i] == table.len() {
                continue;
            }
            let (text, ends) = &mut self.batch.names[i];
            for id in self.sent[i]..table.len() {
                text.push_str(table.name(id as u32));
                ends.push(text.len() as u32);
            }
            self.sent[i] = table.len();
        }
    }

    /// Hands the batch to the thread (waiting while `IN_FLIGHT` batches wait for it), or
    /// returns the error the thread met writing (then the caller writes no more, as when
    /// the writer is its own).
    fn send(&mut self) -> Result<()> {
        // Before `Finish`, the thread says something only when it failed.
        if let Ok(Err(e)) = self.done.try_recv() {
            return Err(e);
        }
        let batch = core::mem::replace(&mut self.batch, Offload::new_batch());
        self.tx
            .send(Msg::Batch(Box::new(batch)))
            .map_err(|_| Error::invalid("the trace's encoding thread has stopped"))
    }
}

impl TraceWriter for Offload {
    fn write_event(&mut self, ev: &Event, names: &Names, extras: Extras<'_>) -> Result<()> {
        // The runtime writes events without side data (no address sets, no access numbers).
        debug_assert!(extras.addresses.is_empty() && extras.seq.is_none());
        self.take_names(names);
        self.batch.events.push(*ev);
        if self.batch.events.len() >= BATCH {
            self.send()?;
        }
        Ok(())
    }

    fn write_events(&mut self, evs: &[Event], names: &Names) -> Result<()> {
        self.take_names(names);
        self.batch.events.extend_from_slice(evs);
        if self.batch.events.len() >= BATCH {
            self.send()?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        let sent = self.send();
        let _ = self.tx.send(Msg::Finish);
        let r = (self.done.recv())
            .unwrap_or_else(|_| Err(Error::invalid("the trace's encoding thread has stopped")));
        // SAFETY: the thread made in `new`, joined once (the real `pthread_join`: not
        // recorded).
        unsafe { crate::sync::REAL_JOIN.get()(self.thread, core::ptr::null_mut()) };
        sent.and(r)
    }
}
