//! Online FastTrack: the accesses FastTrack would skip, skipped in the hook.
//!
//! FastTrack (Flanagan and Freund, PLDI 2009; `racepred::analysis::fasttrack`) does nothing
//! for a read of `x` by thread `t` when `t` already read `x` in its current epoch
//! ([READ SAME EPOCH], [READ SHARED SAME EPOCH]) and nothing for a write when `t` already
//! wrote `x` in it ([WRITE SAME EPOCH]). Most accesses of a loop over the same data between
//! two synchronisation events are such repeats (94% of a Barnes–Hut run's), and online each
//! one costs a record, its conversion under the analysis lock and the analysis's check.
//! Here the hook recognises them and only counts them.
//!
//! **Why the answer is the same.** Online, a thread's accesses are handed to the analysis
//! in *runs*: the accesses it made since its batch was last handed over, contiguous in the
//! analysed order, in one epoch of the thread (every synchronisation event of the thread
//! hands its batch over first). Within a run nothing of another thread comes between two
//! of its accesses, so after the analysis has taken `t`'s read of `x` in the run, FastTrack
//! holds `R_x = E(t)` or `R_x[t] = C_t(t)` until `t` writes `x` (each of the three read
//! rules leaves one of them), and after a write `W_x = E(t)` for the rest of the run. A
//! thread's table ([`Repeats`]) keeps, per address of the run, whether it read since its
//! last recorded write and whether it wrote: an access it flags is one FastTrack would skip,
//! and skipping it leaves every later check as it was (the state is the same). A slot only
//! ever under-approximates (an address forgotten by a collision, a run started anew, a
//! flag cleared are accesses recorded as before).
//!
//! A run ends when the thread hands its batch over itself (the table starts a new run) or
//! when another thread takes the batch's accesses so far (a free hands over every thread's
//! pending accesses, [`crate::online::sync`]): then the run is split at a point the thread
//! does not choose, and a repeat after the split is no repeat in the analysed order. So a
//! repeat is skipped only if no hand-over by another thread has touched the run, which the
//! thread sees through its buffer's `consumed` count and the taker's `consuming` flag
//! ([`may_skip`]); the taker sets the flag, fences, then reads the batch's length. This is
//! Dekker's handshake: either the thread sees the flag (or the count the taker left), or
//! the taker sees every access the thread recorded before its check, and the skipped
//! access, which sits right after the last of those, is in the part taken.
//!
//! Event numbers stay those of every access analysed: the number of accesses skipped since
//! the thread's previous record rides on its next record (its `seq`, unused online), and
//! those after its last are added when it hands its batch over itself (or at the end). At a
//! hand-over by another thread, the accesses skipped just before it may be numbered after
//! it; the races are the same.
//!
//! A thread whose accesses are seldom repeats (each element of an array once per epoch)
//! stops looking when fewer than one in eight of `PROBE` accesses were, for `PROBE`
//! accesses, then twice as many after each look that finds as few (up to 128 times):
//! a loop's first pass over its data costs one short pause, a program without repeats
//! about one access in a hundred looked up. Meanwhile its writes still clear their
//! address's read flag (a flag may only be dropped, never wrongly kept). `$RACEPRED_ONLINE_FAST=0`
//! turns the path off.

use core::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Set when the online analysis is FastTrack with this path on.
pub static ON: AtomicBool = AtomicBool::new(false);

/// Whether accesses go through [`Repeats::check`].
#[inline(always)]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Slots of a thread's table (8 bytes each: 256 KiB, mapped at its first access), indexed
/// by the address's 8-byte word, in one of eight regions by the address's byte within the
/// word: a structure's fields fall in neighbouring slots, and the two `int`s of a word
/// (or the bytes of a string) do not evict each other.
const SLOTS: usize = 1 << 15;
/// A slot: `address << KEY_SHIFT | run << 2 | flags`.
const KEY_SHIFT: u32 = 16;
const RUN_MAX: u64 = (1 << (KEY_SHIFT - 2)) - 1;
/// Flags: the run wrote the address; it read it since its last recorded write.
const WROTE: u64 = 1;
const READ: u64 = 2;
/// Accesses per look at the share of repeats.
const PROBE: u32 = 8192;
/// The longest pause: `PROBE << MAX_DOUBLED` accesses.
const MAX_DOUBLED: u32 = 7;

/// The shared half: written by another thread while it hands over this thread's accesses,
/// and the count of accesses skipped, read by the analysis. In the thread's buffer (zeroed
/// is valid).
pub struct Shared {
    /// Set by a thread taking this thread's pending accesses, from before it reads their
    /// number until it has noted it in the buffer's `consumed`.
    pub consuming: AtomicBool,
    /// Accesses skipped since the thread's last record (written by the thread alone).
    pub gap: AtomicU64,
}

impl Shared {
    /// Takes the count of accesses skipped since the thread's last record.
    #[inline]
    pub fn take_gap(&self) -> u64 {
        let g = self.gap.load(Ordering::Relaxed);
        if g != 0 {
            self.gap.store(0, Ordering::Relaxed);
        }
        g
    }
}

/// A thread's table of the addresses its run accessed (owned by the thread: in its buffer's
/// private part, which starts zeroed: all-zero bytes are a valid `Repeats`, the
/// `Default`; copied into a forked child's buffer).
#[derive(Clone, Copy)]
pub struct Repeats {
    table: *mut u64,
    /// The current run's tag, 1..=`RUN_MAX` (0: the table is not mapped yet).
    run: u64,
    /// A full fence was executed since the thread's last record ([`Repeats::may_skip`]).
    fenced: bool,
    /// Accesses looked up and repeats found since the last look at their share.
    probe: u32,
    hits: u32,
    /// Accesses left not to look up, and the next pause's length: `PROBE << doubled`.
    off: u32,
    doubled: u32,
}

impl Default for Repeats {
    fn default() -> Repeats {
        Repeats {
            table: core::ptr::null_mut(),
            run: 0,
            fenced: false,
            probe: 0,
            hits: 0,
            off: 0,
            doubled: 0,
        }
    }
}

/// `addr`'s slot in a table of [`SLOTS`].
#[inline(always)]
fn slot_index(addr: u64) -> usize {
    ((addr >> 3) as usize).wrapping_add((addr as usize & 7) * (SLOTS / 8)) & (SLOTS - 1)
}

impl Repeats {
    /// The thread's access to `addr`: true if it is a repeat to skip; otherwise its slot
    /// says that the run has it, and the caller records it. `consumed`, `shared`: the
    /// thread's buffer's.
    #[inline(always)]
    pub fn check(
        &mut self,
        write: bool,
        addr: usize,
        consumed: &AtomicUsize,
        shared: &Shared,
    ) -> bool {
        self.check_or_call::<false>(write, addr, consumed, shared) == Some(true)
    }

    /// [`Repeats::check`], as `Some`; with `INLINE` (the hook's fast path), `None` (and
    /// nothing changed) where `check` would call out of line (the table's first use, a
    /// review of the repeats' share), so that the fast path makes no call.
    #[inline(always)]
    pub fn check_or_call<const INLINE: bool>(
        &mut self,
        write: bool,
        addr: usize,
        consumed: &AtomicUsize,
        shared: &Shared,
    ) -> Option<bool> {
        let addr = addr as u64;
        // The key keeps 48 bits of the address: a higher one is never skipped (nor kept).
        if addr >> (64 - KEY_SHIFT) != 0 {
            return Some(false);
        }
        if self.off > 0 {
            self.off -= 1;
            if write {
                // The thread's write ends what its reads of the address were: their flag
                // goes (the write's own is right: it is recorded).
                *self.slot(addr) = addr << KEY_SHIFT | self.run << 2 | WROTE;
            }
            return Some(false);
        }
        if self.run == 0 {
            if INLINE {
                return None;
            }
            self.start();
        }
        // The review of the share of repeats found counts this access's lookup, not
        // whether it is a repeat.
        if self.probe + 1 == PROBE {
            if INLINE {
                return None;
            }
            self.probe += 1;
            self.review();
        } else {
            self.probe += 1;
        }
        let key = addr << KEY_SHIFT | self.run << 2;
        let e = *self.slot(addr);
        let flags = if e & !3 == key { e & 3 } else { 0 };
        let repeat = flags & if write { WROTE } else { READ } != 0;
        if repeat && self.may_skip(consumed, shared) {
            self.hits += 1;
            shared
                .gap
                .store(shared.gap.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            return Some(true);
        }
        // Recorded: the analysis will have taken it before anything later of the run.
        *self.slot(addr) = key | if write { WROTE } else { flags | READ };
        Some(false)
    }

    /// The thread recorded an access (a store the taker of its accesses reads): the next
    /// skip fences again.
    #[inline(always)]
    pub fn recorded(&mut self) {
        self.fenced = false;
    }

    /// `addr`'s slot.
    #[inline(always)]
    fn slot(&mut self, addr: u64) -> &mut u64 {
        // SAFETY: `table` is this thread's mapping of `SLOTS` slots (`start`; `off` is set
        // only after it), written and read by this thread alone; the index is masked.
        unsafe { &mut *self.table.add(slot_index(addr)) }
    }

    /// A new run: no address of the table counts any more (the thread handed its batch
    /// over).
    #[inline]
    pub fn new_run(&mut self) {
        if self.run == 0 {
            return;
        }
        self.fenced = false;
        self.run += 1;
        if self.run > RUN_MAX {
            // SAFETY: the thread's own mapping of `SLOTS` slots.
            unsafe { core::ptr::write_bytes(self.table, 0, SLOTS) };
            self.run = 1;
        }
    }

    #[cold]
    #[inline(never)]
    fn start(&mut self) {
        if self.table.is_null() {
            self.table = crate::buf::map(SLOTS * 8).cast();
        }
        self.run = 1;
    }

    #[cold]
    #[inline(never)]
    fn review(&mut self) {
        if self.hits < PROBE / 8 {
            // Meanwhile a read is not looked up (nor added) and a write only clears its
            // address's read flag: the flags stay true.
            self.off = PROBE << self.doubled;
            self.doubled = (self.doubled + 1).min(MAX_DOUBLED);
        } else {
            self.doubled = 0;
        }
        self.probe = 0;
        self.hits = 0;
    }

    /// Whether no other thread has taken any of the run's accesses: the thread's side of
    /// the handshake with [`crate::buf::hand_over`] (the module text). The fence orders
    /// the thread's last record before the loads; one per record suffices, as the thread
    /// stores nothing the taker reads between two records.
    #[inline(always)]
    fn may_skip(&mut self, consumed: &AtomicUsize, shared: &Shared) -> bool {
        if !self.fenced {
            fence(Ordering::SeqCst);
            self.fenced = true;
        }
        !shared.consuming.load(Ordering::Acquire) && consumed.load(Ordering::Relaxed) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Thread {
        rep: Repeats,
        consumed: AtomicUsize,
        shared: Shared,
    }

    impl Thread {
        fn new() -> Thread {
            Thread {
                rep: Repeats::default(),
                consumed: AtomicUsize::new(0),
                shared: Shared {
                    consuming: AtomicBool::new(false),
                    gap: AtomicU64::new(0),
                },
            }
        }

        /// Whether the access is skipped; a recorded one is recorded.
        fn access(&mut self, write: bool, addr: usize) -> bool {
            let skip = self.rep.check(write, addr, &self.consumed, &self.shared);
            self.recorded_unless(skip)
        }

        /// [`Thread::access`] as the hook's fast path asks: `check_or_call::<true>`, then `check`
        /// where it answers `None`.
        fn access_inline_first(&mut self, write: bool, addr: usize) -> bool {
            let (c, s) = (&self.consumed, &self.shared);
            let skip = match self.rep.check_or_call::<true>(write, addr, c, s) {
                Some(skip) => skip,
                None => self.rep.check(write, addr, c, s),
            };
            self.recorded_unless(skip)
        }

        fn recorded_unless(&mut self, skip: bool) -> bool {
            if !skip {
                self.rep.recorded();
            }
            skip
        }
    }

    #[test]
    fn repeats_are_those_fasttrack_skips() {
        let mut t = Thread::new();
        let (r, w) = (false, true);
        assert!(!t.access(r, 0x1000));
        assert!(t.access(r, 0x1000), "a read after a read");
        assert!(!t.access(w, 0x1000), "a write after reads only");
        assert!(t.access(w, 0x1000), "a write after a write");
        assert!(!t.access(r, 0x1000), "a read after a write: R was cleared");
        assert!(t.access(r, 0x1000));
        assert!(t.access(w, 0x1000), "W is still the run's");
        assert!(t.access(r, 0x1000), "a skipped write changes nothing");
        // Another address, another size at an address inside the word: other variables.
        assert!(!t.access(r, 0x1004));
        assert!(!t.access(r, 0x1001));
        assert_eq!(t.shared.take_gap(), 5);
        // A new run forgets.
        t.rep.new_run();
        assert!(!t.access(r, 0x1000));
        assert!(!t.access(w, 0x1000));
        // Neighbouring `int`s and bytes have slots of their own.
        t.rep.new_run();
        for a in [0x3000, 0x3004, 0x3001, 0x3002, 0x3003] {
            assert!(!t.access(r, a));
        }
        for a in [0x3000, 0x3004, 0x3001, 0x3002, 0x3003] {
            assert!(t.access(r, a), "{a:#x} read again");
        }
        assert_eq!(t.shared.take_gap(), 5);
        // Addresses sharing a slot evict each other.
        let far = 0x1000 + 8 * SLOTS;
        assert!(!t.access(r, far));
        assert!(!t.access(r, 0x1000));
        assert!(!t.access(r, far));
    }

    #[test]
    fn nothing_is_skipped_once_another_thread_took_part_of_the_run() {
        let mut t = Thread::new();
        assert!(!t.access(false, 0x2000));
        t.shared.consuming.store(true, Ordering::Relaxed);
        assert!(
            !t.access(false, 0x2000),
            "while the accesses are being taken"
        );
        t.shared.consuming.store(false, Ordering::Relaxed);
        t.consumed.store(1, Ordering::Relaxed);
        assert!(!t.access(false, 0x2000), "after they were taken");
        // The thread hands the rest over itself: a new run, nothing taken.
        t.consumed.store(0, Ordering::Relaxed);
        t.rep.new_run();
        assert!(!t.access(false, 0x2000));
        assert!(t.access(false, 0x2000));
    }

    /// Random accesses of one thread to a few addresses (some sharing a slot, some a word)
    /// with runs ending at random: an access is skipped only if FastTrack would skip it
    /// (the thread read the address in the run since its last write there, or wrote it in
    /// the run), and most such repeats are, across the pauses of a thread with few
    /// repeats. The hook's way of asking (`check_or_call::<true>` first) answers as `check` alone,
    /// step by step.
    #[test]
    fn skips_only_what_fasttrack_skips() {
        let addrs: Vec<usize> = (0..64)
            .map(|i| 0x10_0000 + 8 * i)
            .chain((0..8).map(|i| 0x10_0000 + 8 * SLOTS * (i + 1)))
            .chain((0..16).map(|i| 0x10_0004 + 8 * i))
            .chain((0..4).map(|i| 0x10_0001 + 8 * i))
            .collect();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut t, mut u) = (Thread::new(), Thread::new());
        // Per address: (wrote in the run, read since the run's last write to it).
        let mut model = std::collections::HashMap::<usize, (bool, bool)>::new();
        let (mut skipped, mut skippable) = (0u64, 0u64);
        for step in 0..2_000_000u64 {
            let x = next();
            if x % 200_000 == 0 {
                t.rep.new_run();
                u.rep.new_run();
                model.clear();
                continue;
            }
            // Phases of mostly fresh addresses (few repeats) make the table pause while
            // the run goes on.
            let fresh = (step / 50_000) % 2 == 1 && (x >> 40) % 10 != 0;
            let addr = if fresh {
                0x4000_0000 + 8 * step as usize
            } else {
                addrs[(x >> 8) as usize % addrs.len()]
            };
            let write = (x >> 20) % 4 == 0;
            let m = model.entry(addr).or_default();
            let fasttrack_skips = if write { m.0 } else { m.1 };
            let skip = t.access(write, addr);
            assert_eq!(u.access_inline_first(write, addr), skip, "step {step}");
            assert!(
                !skip || fasttrack_skips,
                "step {step}: {addr:#x} skipped (write: {write}, model {m:?})"
            );
            skipped += skip as u64;
            skippable += fasttrack_skips as u64;
            if write {
                // A skipped write changes nothing, a recorded one sets W and clears R.
                if !skip {
                    *m = (true, false);
                }
            } else {
                m.1 = true;
            }
        }
        assert!(
            skipped * 10 > skippable * 7,
            "{skipped} of {skippable} repeats skipped"
        );
        assert_eq!(t.shared.take_gap(), skipped);
        assert_eq!(u.shared.take_gap(), skipped);
    }
}
