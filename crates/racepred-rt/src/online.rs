//! Online mode (`racepred record --online ANALYSIS`): the analysis runs inside the program,
//! event by event, instead of a trace being written; its report is written at exit.
//!
//! A thread's memory accesses are kept in its buffer (as in recording, without stamps)
//! until its next synchronisation event; that event takes one global lock, hands the
//! pending accesses to the analysis, then the event itself (a join first hands over the
//! joined thread's last accesses; a full batch is handed over by itself). So the lock is
//! taken per synchronisation event, not per access, and the order the analysis sees is a
//! linearisation of happens-before: synchronisation events in the order of the lock (taken
//! where recording takes its stamp, so the argument of [`crate::buf`] carries over: a
//! lock's `acq` after the lock call returns and its `rel` before the unlock call, both
//! while it is held; the `vr` of an atomic after the `vw` it read), each access after the
//! thread's previous synchronisation event and before its next. Accesses of different
//! threads that no synchronisation orders may be seen in another order than they ran in:
//! which of two racing accesses is the *second* may differ from a recorded trace, the
//! happens-before races (unordered conflicting pairs) are the same in every such order.
//! That is why the online analyses are the happens-before ones (FastTrack, Djit+ `hb`,
//! PACER) and not SHB, whose reads-from is the trace order. Frees are synchronisation
//! events here (the block's variables written, then retired), so that reused memory is a
//! new variable before any other thread's access to it is analysed; a free first hands
//! over every other thread's pending accesses too (made before it, so of the block as it
//! was: a race between them and the free is found). Memory is the analysis's state plus
//! one batch per thread: a long run costs no more than a short one with the same
//! variables.
//!
//! **PACER outside sampling periods.** There PACER does nothing for an access to a
//! variable without metadata but count it (Alg. 12–13 with null metadata), and at low rates
//! those are nearly all accesses. The hook counts them itself, without the batch or the
//! lock ([`skip`]): the analysis publishes, lock-free, how many operations of the current
//! non-sampling period may still be counted (a *window*) and which addresses are variables
//! it knows without metadata (a direct-mapped table of 64-byte lines); a thread reserves
//! operations of the window in bulk and spends one per access it counts, while its batch
//! is empty. Before it analyses a thread's next event, and when a window closes (a new
//! period, a retirement, the end), the analysis adds the thread's counts to the detector
//! ([`Detector::skip_unsampled`]), event numbers included. The answers are those of the
//! detector given every event, in the order in which each counted access sits where it
//! was counted (the argument is at [`skip`]); `$RACEPRED_ONLINE_FAST=0` turns the path off
//! (every access analysed, as for the other analyses).
//!
//! **FastTrack's repeats.** A thread's access that FastTrack would skip (a read of a
//! variable it read since its last write of it, or a write of one it wrote, since its
//! batch was last handed over) is only counted by the hook ([`crate::repeats`]): same
//! answers, event numbers included; `$RACEPRED_ONLINE_FAST=0` turns this off too.
//!
//! Configuration (set by `racepred record`, read at the first event):
//! `$RACEPRED_ONLINE` = `fasttrack` | `pacer` | `hb`; PACER's
//! `$RACEPRED_ONLINE_RATE` (default 1), `$RACEPRED_ONLINE_PERIOD` (operations per sampling
//! period, default PACER's) and `$RACEPRED_ONLINE_SEED`. The report goes where the trace
//! would have gone ([`crate::finish`]), as JSON if the name ends in `.json`, else as text.
//!
//! Locations are named by return address while the program runs and symbolised at the end
//! (two addresses with the same `file:line:col` become one location).
//!
//! **The lock and allocation rule.** The analysis's state is reachable only through
//! `Locked`, the guard of one lock (a futex mutex: waiters sleep), taken per
//! synchronisation event (and per full batch; with PACER's window, also when at least
//! `FLUSH_MIN` pending accesses of a thread stand before an access it could count, and once
//! per thread when a window is used up), never per access. Under it the analysis may
//! allocate (`malloc`; its vectors and maps grow): this cannot deadlock because no hook
//! waits for the lock while holding an allocator lock (the runtime interposes only `free` /
//! `realloc` / `delete`, which record before calling the allocator), because the holder
//! calls no hook (the thread is `busy`: an interposed call made by the analysis only
//! forwards), and because the lock is taken after an atomic's stripe lock, never before
//! one. `fork` takes it (after the stripes) so that the child's copy is free; the child
//! then drops the state unread.
//!

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::ffi::CStr;
use std::path::Path;

use racepred::analysis::pacer::{Detector, Pacer, PacerConfig};
use racepred::analysis::{create, Analysis, AnalysisKind, AnalysisOptions, Side};
use racepred::report::{json, text, ReportContext};
use racepred::trace::{Event, LocId, NameKind, Names, ThreadId};

use crate::buf::{self, ns, FutexGuard, FutexLock, Kind, Own, Rec, ThreadBuf};
use crate::convert::Converter;

/// Not decided yet / write a trace / analyse online.
const UNDECIDED: u8 = 0;
const RECORD: u8 = 1;
const ONLINE: u8 = 2;

static MODE: AtomicU8 = AtomicU8::new(UNDECIDED);
/// The online lock. It is held for a whole batch (up to `CHUNK_RECS` accesses analysed),
/// so a thread that finds it held sleeps instead of spinning: spinning or yielding would
/// take a processor from the holder.
static LOCK: FutexLock = FutexLock::new();

struct State {
    conv: Converter,
    engine: Engine,
    /// Events analysed.
    events: u64,
    /// Events converted for an analysis but PACER and not yet given to it: they go to it a
    /// block at a time ([`Analysis::on_events`], the loop it runs offline), given whole
    /// before the lock is let go.
    block: Vec<Event>,
    /// Accesses skipped in the hook as FastTrack's same-epoch repeats ([`crate::repeats`]),
    /// counted in `events`.
    skipped: u64,
}

/// Events given to the analysis at a time (as the offline driver's blocks).
const BLOCK: usize = 1024;

/// Adds `ev` to `block`, given to `analysis` when full.
#[inline]
fn feed(analysis: &mut dyn Analysis, events: &mut u64, block: &mut Vec<Event>, ev: Event) {
    block.push(ev);
    if block.len() == BLOCK {
        run_block(analysis, events, block);
    }
}

/// Gives `block` to `analysis` as the events after the first `events`, and empties it.
fn run_block(analysis: &mut dyn Analysis, events: &mut u64, block: &mut Vec<Event>) {
    if !block.is_empty() {
        analysis.on_events(*events, block);
        *events += block.len() as u64;
        block.clear();
    }
}

/// The analysis; PACER apart, for its non-sampling fast path.
enum Engine {
    Pacer(Box<Pacer>, Window),
    Other(Box<dyn Analysis>),
}

impl Engine {
    fn analysis(&mut self) -> &mut dyn Analysis {
        match self {
            Engine::Pacer(p, _) => &mut **p,
            Engine::Other(a) => &mut **a,
        }
    }
}

// ---- PACER's non-sampling fast path ----------------------------------------------------
//
// `WINDOW` packs (open: 1 bit, generation: 19 bits, room: 24 bits). While a non-sampling
// period is under way the analysis opens it: publishes `room`, operations of the period
// that threads may reserve without the lock (never more than the detector's
// `unsampled_room`), under a new generation; closed otherwise. An open window without room
// is used up: the next access is analysed at once, so that the next period starts. A thread
// reserves up to `RESERVE` operations at a time (its `Counting::res`: the window's
// generation and the operations left), counts the accesses it spends them on in its own
// `Counting::reads` / `writes`, and alone writes those words: the analysis reads them, and
// takes what was counted since it last looked before each event of the thread and when it
// closes the window. `LINES` says, per 64-byte line, which of its 4-byte-aligned addresses
// are variables the converter knows and the detector keeps no metadata for. See `skip`.

const OPEN: u64 = 1 << 63;
const GEN_SHIFT: u32 = 44;
const ROOM_SHIFT: u32 = 0;
const ROOM_MAX: u64 = (1 << 24) - 1;
const GEN_MASK: u64 = (1 << 19) - 1;

/// `Counting::res`: the generation of the window reserved from, and the operations left.
const RES_GEN: u32 = 32;
const RESERVE: u64 = 1024;
/// Pending accesses of a thread worth handing over (taking the lock) so that the thread's
/// next accesses can be counted: fewer stay pending (a program alternating accesses the
/// table vouches for with others would take the lock every other access).
const FLUSH_MIN: usize = 32;

/// A thread's side of the fast path, in its buffer (zeroed: nothing reserved or counted).
/// On a cache line of its own: the thread writes it at every access it counts.
#[repr(align(64))]
pub struct Counting {
    /// The reservation: (generation << `RES_GEN`) | operations left. Written by the thread.
    res: AtomicU64,
    /// Reads and writes counted, ever (wrapping). Written by the thread.
    reads: AtomicU64,
    writes: AtomicU64,
    /// 1 while the thread counts an access: from before it checks that the window is
    /// still its reservation's until its count is stored ([`Window::close`] waits for 0).
    inflight: AtomicU32,
    /// What the analysis has taken of `reads` and `writes`. Under the online lock.
    taken_reads: AtomicU64,
    taken_writes: AtomicU64,
}

static WINDOW: AtomicU64 = AtomicU64::new(0);

/// Set once the analysis is PACER with this path on: no other analysis opens a window, and
/// their accesses need not look for one.
static FAST_PATH: AtomicBool = AtomicBool::new(false);

const LINE_SLOTS: usize = 1 << 18;
/// Per slot: (line number << 16) | one bit per 4-byte word of the line; 0: none.
static LINES: [AtomicU64; LINE_SLOTS] = [const { AtomicU64::new(0) }; LINE_SLOTS];

#[inline(always)]
fn room(w: u64) -> u64 {
    (w >> ROOM_SHIFT) & ROOM_MAX
}

/// `LINES`' slot of a line: the lines of one 64 KiB block in consecutive slots, blocks
/// scattered (each thread's malloc arena starts at a multiple of 64 MiB).
#[inline(always)]
fn line_slot(line: u64) -> &'static AtomicU64 {
    let scatter = (line >> 10).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    &LINES[(line.wrapping_add(scatter) as usize) & (LINE_SLOTS - 1)]
}

#[inline(always)]
fn slot(addr: u64) -> &'static AtomicU64 {
    line_slot(addr >> 6)
}

#[inline(always)]
fn word_bit(addr: u64) -> u64 {
    1 << ((addr >> 2) & 15)
}

/// `membarrier(MEMBARRIER_CMD_*)`; false if the kernel refuses.
fn membarrier(cmd: libc::c_int) -> bool {
    // SAFETY: `membarrier` with these commands has no memory operands.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0, 0) == 0 }
}
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

/// The calling thread's access to `addr`, in online PACER: whether it is only counted
/// (then it is not recorded). It is when a window is open, the thread has no pending
/// accesses, and `addr` is a variable without metadata (`LINES`); it then uses one of the
/// operations the thread reserved. The analysis counts the thread's counted accesses
/// before the next event of the thread it is given, or when it closes the window (a new
/// period, a retirement, the end), and that is their place in the analysed order: after
/// everything the thread did before (handed over already, as its batch is empty), before
/// all it does after (handed over later), after every event that happens before them
/// (handed over before the thread's last synchronisation) and before every event they
/// happen before (handed over after the thread's next one). There the detector without
/// this path would do nothing but count them too: their period is under way and not
/// sampling until they are counted (reserved operations are the period's), and a variable
/// gets no metadata outside a sampling period.
///
/// No read-modify-write per access: the thread alone writes its [`Counting`]. That an
/// access counted under a window is taken before the window's close is a handshake
/// (Dekker's, its fence asymmetric as in userspace RCU): the thread marks itself in
/// flight, then checks that the window is still the one it reserved from, then stores its
/// count and clears the mark; the analysis closes the window, then `membarrier` makes
/// every thread of the process pass a full fence, then waits for each thread's mark to
/// clear before it takes the counts. Either the thread's check saw the window closed (it
/// records the access instead), or its mark is seen and its count taken with the close.
///
/// The answer: [`Skip::Counted`], [`Skip::Record`] (as without this path), [`Skip::Now`]
/// (the window is used up: the access is to be recorded and handed to the analysis at
/// once, which starts the next period), or [`Skip::Flush`] (the thread's pending accesses,
/// `FLUSH_MIN` or more, are handed over first, so that a run of accesses that need the
/// analysis, such as first accesses, is handed over in one batch, and the run after it is
/// counted).
#[inline]
pub fn skip(b: &mut Own, write: bool, addr: usize) -> Skip {
    if !FAST_PATH.load(Ordering::Relaxed) {
        return Skip::Record;
    }
    let c = b.counting();
    if c.res.load(Ordering::Relaxed) & 0xffff_ffff == 0 {
        if let Err(answer) = reserve(c) {
            return answer;
        }
    }
    with_reservation(b, write, addr)
}

/// [`skip`] for a thread with operations reserved, on the fast path (no call: the hook
/// needs no stack frame); `None` if the thread has none left (then ask [`skip`]).
#[inline(always)]
pub fn skip_reserved(b: &mut Own, write: bool, addr: usize) -> Option<Skip> {
    if b.counting().res.load(Ordering::Relaxed) & 0xffff_ffff == 0 {
        return None;
    }
    Some(with_reservation(b, write, addr))
}

/// [`skip`] once the thread has operations reserved.
#[inline(always)]
fn with_reservation(b: &mut Own, write: bool, addr: usize) -> Skip {
    let c = b.counting();
    let res = c.res.load(Ordering::Relaxed);
    if addr & 3 != 0 {
        return Skip::Record;
    }
    let addr = addr as u64;
    // After the window's acquire load that reserved: at least what the analysis wrote
    // before opening it (and while it is open a variable gains no metadata).
    let e = slot(addr).load(Ordering::Relaxed);
    if e >> 16 != addr >> 6 || e & word_bit(addr) == 0 {
        return Skip::Record;
    }
    match b.batch_len() {
        0 => {}
        n if n >= FLUSH_MIN => return Skip::Flush,
        _ => return Skip::Record,
    }
    c.inflight.store(1, Ordering::Relaxed);
    // The store above before the load below: for the compiler here; for the processor,
    // `Window::close`'s `membarrier`.
    core::sync::atomic::compiler_fence(Ordering::SeqCst);
    let w = WINDOW.load(Ordering::Relaxed);
    if w & OPEN == 0 || (w >> GEN_SHIFT) & GEN_MASK != res >> RES_GEN {
        c.inflight.store(0, Ordering::Release);
        c.res.store(0, Ordering::Relaxed);
        return Skip::Record;
    }
    let n = if write { &c.writes } else { &c.reads };
    n.store(n.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    c.inflight.store(0, Ordering::Release);
    c.res.store(res - 1, Ordering::Relaxed);
    Skip::Counted
}

/// Reserves operations of the open window for the calling thread (whose `c` has none
/// left); returns its reservation, or what to do with the access.
#[inline(never)]
fn reserve(c: &Counting) -> Result<u64, Skip> {
    let mut w = WINDOW.load(Ordering::Acquire);
    if w & OPEN == 0 {
        return Err(Skip::Record);
    }
    loop {
        let r = room(w);
        if r == 0 {
            return Err(Skip::Now);
        }
        let k = r.min(RESERVE);
        match WINDOW.compare_exchange_weak(
            w,
            w - (k << ROOM_SHIFT),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                // A close meanwhile is seen when the operations are spent (`skip`): they
                // are then lost to the window, not to the period.
                let res = ((w >> GEN_SHIFT) & GEN_MASK) << RES_GEN | k;
                c.res.store(res, Ordering::Relaxed);
                return Ok(res);
            }
            Err(now) if now & OPEN != 0 && now >> GEN_SHIFT == w >> GEN_SHIFT => w = now,
            Err(_) => return Err(Skip::Record),
        }
    }
}

/// What [`skip`] says of an access.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Counted by the analysis: not recorded.
    Counted,
    /// Recorded, as without the fast path.
    Record,
    /// Recorded and handed to the analysis at once.
    Now,
    /// Could be counted but for the thread's pending accesses: those are to be handed to
    /// the analysis first ([`flush`]), and the question asked again.
    Flush,
}

/// The analysis's side of the window (used under the online lock).
#[derive(Default)]
struct Window {
    gen: u64,
    open: bool,
    /// No window is opened (during a retirement).
    hold: bool,
    /// No window is opened any more: the fast path is off (`$RACEPRED_ONLINE_FAST=0`), or
    /// the run is finishing.
    off: bool,
    /// Operations of the open window the analysis reserved for the events it is given, as
    /// a thread reserves for those it counts: `WINDOW` is written once per
    /// `ANALYSIS_RESERVE` events analysed, not at each (a read-modify-write of the line
    /// every counting thread loads).
    held: u64,
}

/// Operations the analysis reserves at a time. Few: while it holds some the window may
/// look used up to the threads, which then hand each access over at once.
const ANALYSIS_RESERVE: u64 = 128;

impl Window {
    /// Counts the accesses `u`'s thread counted since the analysis last looked, as the
    /// next operations.
    fn take(u: *mut ThreadBuf, det: &mut Detector, events: &mut u64) {
        // SAFETY: a registered buffer: mapped; `counting` is atomics, its `taken_*` ours
        // (the online lock is held).
        let c = unsafe { &(*u).counting };
        let (r, w) = (
            c.reads.load(Ordering::Acquire),
            c.writes.load(Ordering::Acquire),
        );
        let dr = r.wrapping_sub(c.taken_reads.load(Ordering::Relaxed));
        let dw = w.wrapping_sub(c.taken_writes.load(Ordering::Relaxed));
        if dr + dw > 0 {
            c.taken_reads.store(r, Ordering::Relaxed);
            c.taken_writes.store(w, Ordering::Relaxed);
            det.skip_unsampled(dr, dw);
            *events += dr + dw;
        }
    }

    /// Before an event of `u`'s thread is analysed: the thread's counted accesses are
    /// counted, then the event takes one operation of the window, from those the analysis
    /// reserved (or, when none is left, the window closes and the event is the detector's
    /// to place).
    #[inline]
    fn claim(&mut self, u: *mut ThreadBuf, det: &mut Detector, events: &mut u64) {
        if !self.open {
            return;
        }
        Window::take(u, det, events);
        if self.held > 0 {
            self.held -= 1;
            return;
        }
        let mut w = WINDOW.load(Ordering::Acquire);
        loop {
            let r = room(w);
            if r == 0 {
                self.close(det, events);
                return;
            }
            let k = r.min(ANALYSIS_RESERVE);
            match WINDOW.compare_exchange_weak(
                w,
                w - (k << ROOM_SHIFT),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    self.held = k - 1;
                    return;
                }
                Err(now) => w = now,
            }
        }
    }

    /// Closes the window: no more reservations or counting under it; what was counted
    /// is counted (the handshake at [`skip`]).
    fn close(&mut self, det: &mut Detector, events: &mut u64) {
        if !self.open {
            return;
        }
        self.gen = (self.gen + 1) & GEN_MASK;
        // What the analysis reserved and did not use is lost to the window, not to the
        // period (as a thread's).
        self.held = 0;
        WINDOW.store(self.gen << GEN_SHIFT, Ordering::SeqCst);
        if !membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) {
            buf::die(b"racepred-rt: membarrier failed after it was registered\n");
        }
        for u in buf::threads() {
            // SAFETY: a registered buffer: mapped, `counting.inflight` an atomic.
            let inflight = unsafe { &(*u).counting.inflight };
            let mut spins = 0u32;
            while inflight.load(Ordering::Acquire) != 0 {
                spins += 1;
                if spins < 64 {
                    core::hint::spin_loop();
                } else {
                    // SAFETY: `sched_yield` has no precondition.
                    unsafe { libc::sched_yield() };
                }
            }
            Window::take(u, det, events);
        }
        self.open = false;
    }

    /// After an event: opens a window if a non-sampling period is under way, or a used-up
    /// one if the period is over (so that the next access, analysed at once, starts the
    /// next period, instead of every thread filling its batch until one is handed over).
    #[inline]
    fn reopen(&mut self, det: &Detector) {
        if self.open || self.hold || self.off {
            return;
        }
        let r = if det.sampler().left() == 0 {
            0
        } else {
            match det.unsampled_room().min(ROOM_MAX) {
                0 => return,
                r => r,
            }
        };
        self.gen = (self.gen + 1) & GEN_MASK;
        self.open = true;
        WINDOW.store(
            OPEN | self.gen << GEN_SHIFT | r << ROOM_SHIFT,
            Ordering::Release,
        );
    }
}

/// `addr` is a variable the converter knows; `meta`: whether the detector keeps metadata
/// for it (then accesses to it are analysed).
#[inline]
fn note(addr: u64, meta: bool) {
    if addr & 3 != 0 {
        return;
    }
    let s = slot(addr);
    let e = s.load(Ordering::Relaxed);
    let tagged = e >> 16 == addr >> 6;
    let bit = word_bit(addr);
    let new = match (tagged, meta) {
        (true, false) => e | bit,
        (true, true) => e & !bit,
        (false, false) => (addr >> 6) << 16 | bit,
        (false, true) => return,
    };
    if new != e {
        s.store(new, Ordering::Relaxed);
    }
}

/// `[addr, addr + size)` holds new variables, which the converter does not know yet: no
/// address in it is marked (the window is closed meanwhile).
fn forget(addr: u64, size: u64) {
    let (first, last) = (addr >> 6, addr.saturating_add(size.max(1) - 1) >> 6);
    if last - first >= LINE_SLOTS as u64 {
        for s in LINES.iter() {
            let tag = s.load(Ordering::Relaxed) >> 16;
            if (first..=last).contains(&tag) {
                s.store(0, Ordering::Relaxed);
            }
        }
    } else {
        for line in first..=last {
            let s = line_slot(line);
            if s.load(Ordering::Relaxed) >> 16 == line {
                s.store(0, Ordering::Relaxed);
            }
        }
    }
}

buf::locked_state!(Locked: STATE of State);

/// The online lock held, and through it the analysis's state, for as long as it is held.
struct Locked {
    _hold: FutexGuard,
}

impl Locked {
    fn new() -> Locked {
        Locked { _hold: LOCK.lock() }
    }
}

fn getenv(name: &CStr) -> Option<&'static str> {
    // SAFETY: `name` is a C string; the environment is not modified while the program
    // runs the runtime's hooks (the runtime never calls `setenv`).
    let p = unsafe { libc::getenv(name.as_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: `getenv` returned a C string that lives as long as the environment entry.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .ok()
        .filter(|s| !s.is_empty())
}

fn number<T: std::str::FromStr>(name: &CStr, default: T) -> T {
    match getenv(name) {
        None => default,
        Some(s) => s.parse().unwrap_or_else(|_| {
            buf::die(
                format!(
                    "racepred-rt: {}={s} is not a number\n",
                    name.to_string_lossy()
                )
                .as_bytes(),
            )
        }),
    }
}

/// The analyses that can run online: the happens-before ones (see the module text).
pub const ANALYSES: [AnalysisKind; 3] = [
    AnalysisKind::FastTrack,
    AnalysisKind::Pacer,
    AnalysisKind::Hb,
];

#[cold]
#[inline(never)]
fn decide() -> u8 {
    let mut st = Locked::new();
    let m = MODE.load(Ordering::Relaxed);
    if m != UNDECIDED {
        return m;
    }
    let Some(name) = getenv(c"RACEPRED_ONLINE") else {
        MODE.store(RECORD, Ordering::Relaxed);
        return RECORD;
    };
    let kind = AnalysisKind::from_name(name)
        .filter(|k| ANALYSES.contains(k))
        .unwrap_or_else(|| {
            buf::die(
                format!(
                    "racepred-rt: RACEPRED_ONLINE={name}: not an online analysis (fasttrack, pacer, hb)\n"
                )
                .as_bytes(),
            )
        });
    let opts = AnalysisOptions {
        rate: number(c"RACEPRED_ONLINE_RATE", 1.0),
        period: number(c"RACEPRED_ONLINE_PERIOD", PacerConfig::DEFAULT_PERIOD),
        seed: number(c"RACEPRED_ONLINE_SEED", 0),
        // As `analyze` by default: the first racy event of each location and operation with
        // a count, so a long run's memory does not grow with its racy events.
        group_racy: true,
        ..AnalysisOptions::default()
    };
    let engine = if kind == AnalysisKind::Pacer {
        // The fast path's handshake needs `membarrier` (Linux 4.14); without it every
        // access is analysed.
        let win = Window {
            off: number(c"RACEPRED_ONLINE_FAST", 1u8) == 0
                || !membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED),
            ..Window::default()
        };
        FAST_PATH.store(!win.off, Ordering::Relaxed);
        Engine::Pacer(Box::new(Pacer::from_options(&opts)), win)
    } else {
        crate::repeats::ON.store(
            kind == AnalysisKind::FastTrack && number(c"RACEPRED_ONLINE_FAST", 1u8) != 0,
            Ordering::Relaxed,
        );
        Engine::Other(
            create(kind, &opts)
                .unwrap_or_else(|e| buf::die(format!("racepred-rt: {e}\n").as_bytes())),
        )
    };
    // Variables are named at the end, those the report shows.
    let mut conv = Converter::new();
    conv.lazy_var_names();
    *st = Some(State {
        conv,
        engine,
        events: 0,
        block: Vec::with_capacity(BLOCK),
        skipped: 0,
    });
    MODE.store(ONLINE, Ordering::Release);
    ONLINE
}

/// Whether the analysis is online PACER with its non-sampling fast path ([`skip`]).
#[inline(always)]
pub fn fast_path() -> bool {
    FAST_PATH.load(Ordering::Relaxed)
}

/// Whether events are known to go to an online analysis (false while undecided: then ask
/// [`online`], from inside the runtime).
#[inline(always)]
pub fn decided_online() -> bool {
    MODE.load(Ordering::Relaxed) == ONLINE
}

/// Whether events go to an online analysis (decided at the first call).
#[inline]
pub fn online() -> bool {
    match MODE.load(Ordering::Acquire) {
        UNDECIDED => decide() == ONLINE,
        m => m == ONLINE,
    }
}

impl State {
    #[inline]
    fn push(&mut self, b: *mut ThreadBuf, r: &Rec) {
        // SAFETY: a registered buffer's `tid` never changes.
        let t = self.conv.thread(unsafe { (*b).tid });
        self.push_as(b, t, r);
    }

    #[inline]
    /// `b`: the buffer of the thread whose record `r` is.
    fn push_as(&mut self, b: *mut ThreadBuf, t: ThreadId, r: &Rec) {
        let events = &mut self.events;
        let (p, win) = match &mut self.engine {
            Engine::Other(analysis) => {
                let block = &mut self.block;
                let _ = self.conv.convert_with(t, r, |ev, _| {
                    feed(&mut **analysis, events, block, *ev);
                    Ok::<(), ()>(())
                });
                return;
            }
            Engine::Pacer(p, win) => (p, win),
        };
        let kind = r.kind();
        let retire = kind == Some(Kind::Retire);
        if retire {
            // The converter is about to forget the range's variables.
            win.close(p.detector_mut(), events);
            win.hold = true;
        }
        let access = matches!(kind, Some(Kind::Read | Kind::Write)) && r.ns() == ns::MEM;
        let _ = self.conv.convert_with(t, r, |ev, _| {
            win.claim(b, p.detector_mut(), events);
            p.on_event(*events, ev, Side::default());
            *events += 1;
            if access {
                note(r.addr, p.detector().has_metadata(ev.target));
            }
            win.reopen(p.detector());
            Ok::<(), ()>(())
        });
        if retire {
            forget(r.addr, r.low());
            win.hold = false;
            win.reopen(p.detector());
        }
    }

    /// Hands `b`'s pending accesses to the analysis (`own`: as for [`buf::hand_over`]).
    /// Holding a `&mut State` means holding the online lock ([`Locked`]).
    ///
    /// # Safety
    /// `b` is a registered buffer; `own` only if it is the caller's, or its thread ended.
    unsafe fn drain(&mut self, b: *mut ThreadBuf, own: bool) {
        // SAFETY: a registered buffer's `tid` never changes.
        let t = self.conv.thread(unsafe { (*b).tid });
        // SAFETY: the online lock is held (we have the state); the caller vouches for `b`
        // and `own`.
        unsafe {
            buf::hand_over(b, own, |r| {
                // A plain access for an analysis but PACER (nearly every record): straight
                // into the block.
                if let Engine::Other(analysis) = &mut self.engine {
                    if r.seq != 0 {
                        // Accesses skipped as repeats just before this one: numbered here.
                        run_block(&mut **analysis, &mut self.events, &mut self.block);
                        self.events += r.seq;
                        self.skipped += r.seq;
                    }
                    if let Some(ev) = self.conv.access_event(t, r) {
                        feed(&mut **analysis, &mut self.events, &mut self.block, ev);
                        return;
                    }
                }
                self.push_as(b, t, r)
            })
        };
        self.run_block();
        if own {
            self.take_gap(b);
        }
    }

    /// Numbers the accesses `b`'s thread skipped as repeats after its last record.
    fn take_gap(&mut self, b: *mut ThreadBuf) {
        // SAFETY: a registered buffer: mapped; `repeats` is atomics.
        let g = unsafe { (*b).repeats.take_gap() };
        self.events += g;
        self.skipped += g;
    }

    /// Gives the analysis the events converted for it so far (at the end of each hold of
    /// the lock, so that it has seen every event handed over when the lock is let go).
    fn run_block(&mut self) {
        if let Engine::Other(analysis) = &mut self.engine {
            run_block(&mut **analysis, &mut self.events, &mut self.block);
        }
    }
}

/// The calling thread's batch of accesses is full: analyse it.
pub fn flush(b: &mut Own) {
    let mut st = Locked::new();
    b.new_run();
    match st.as_mut() {
        // SAFETY: `b` is the caller's own buffer.
        Some(st) => unsafe { st.drain(b.raw(), true) },
        // No analysis (it has finished): the batch is dropped.
        // SAFETY: the online lock is held, and `b` is the caller's own buffer.
        None => unsafe { buf::hand_over(b.raw(), true, |_| {}) },
    }
}

/// A synchronisation event (or a free or retirement) of the calling thread: its pending
/// accesses, then (for a join) the joined thread's last ones or (for a free) every other
/// thread's pending ones, then the event itself.
pub fn sync(b: &mut Own, r: Rec) {
    let mut locked = Locked::new();
    let Some(st) = locked.as_mut() else { return };
    // SAFETY: `b` is the caller's own buffer.
    unsafe { st.drain(b.raw(), true) };
    b.new_run();
    match r.kind() {
        Some(Kind::Join) => {
            // The joined thread has ended: its buffer is still.
            // SAFETY: registered buffers' `tid`s never change.
            if let Some(u) = buf::threads().find(|&u| unsafe { (*u).tid } == r.addr as u32) {
                // SAFETY: a registered buffer whose thread has ended.
                unsafe { st.drain(u, true) };
            }
        }
        Some(Kind::Free) => {
            // The other threads' pending accesses were made before this free: analysed
            // after it they would be taken for accesses of the reused memory (a missed race
            // between them and the free).
            for u in buf::threads().filter(|&u| u != b.raw()) {
                // SAFETY: a registered buffer, not marked as emptied (`own` false).
                unsafe { st.drain(u, false) };
            }
        }
        _ => {}
    }
    st.push(b.raw(), &r);
    st.run_block();
}

/// Held across `fork` (after the atomics' stripe locks, the order in which a hook may
/// nest them), so that no other thread is inside the analysis when the process is copied.
pub fn lock_for_fork() -> FutexGuard {
    LOCK.lock()
}

/// In a child just forked (the online lock free, no other thread): the analysis state is
/// the parent's history and is dropped unread (`mem::forget`: its pages stay shared with
/// the parent, untouched); the child's first event starts a new analysis.
pub fn restart_in_child() {
    let mut st = Locked::new();
    core::mem::forget(st.take());
    // The parent's window and variables mean nothing here.
    WINDOW.store(0, Ordering::Release);
    FAST_PATH.store(false, Ordering::Relaxed);
    crate::repeats::ON.store(false, Ordering::Relaxed);
    for s in LINES.iter() {
        s.store(0, Ordering::Relaxed);
    }
    MODE.store(UNDECIDED, Ordering::Release);
}

/// At exit, in online mode: finishes the analysis and writes its report to `path`; returns
/// (events, races) or `None` when not in online mode.
pub fn finish(path: &Path) -> Option<std::io::Result<(u64, usize)>> {
    if MODE.load(Ordering::Acquire) != ONLINE {
        return None;
    }
    // Hooks stopped recording (`FINISHED`); wait for those still inside, then take the
    // state (a thread that fills its batch later hands it to nobody).
    // Held to the end: a thread filling its batch meanwhile finds no analysis and waits.
    let mut locked = Locked::new();
    let mut st = locked.take()?;
    // Accesses only counted come first (the threads' pending ones were made after theirs).
    if let Engine::Pacer(p, win) = &mut st.engine {
        win.close(p.detector_mut(), &mut st.events);
        win.off = true;
    }
    // What the threads did since their last synchronisation: mutually unordered, in any order.
    for b in buf::threads() {
        // SAFETY: a registered buffer, not marked as emptied (`own` false).
        unsafe { st.drain(b, false) };
        st.take_gap(b);
    }
    let mut report = st.engine.analysis().finish(&st.conv.names);
    report.events = st.events;
    if crate::repeats::on() {
        report
            .extra
            .insert("same_epoch_skipped_in_hook".into(), st.skipped.into());
    }

    // Symbolise locations and move the report onto the final location names.
    let pcs: Vec<(u64, LocId)> = st.conv.locs().collect();
    let syms = crate::symbols::symbolise(pcs.iter().map(|&(pc, _)| pc));
    let mut names = Names::new();
    for kind in [NameKind::Thread, NameKind::Lock] {
        for n in st.conv.names.table(kind).iter() {
            names.table_mut(kind).intern(n.as_bytes());
        }
    }
    // The variables the report shows, named now and numbered in the order of their ids.
    let shown = |e: &Event| (e.op.target_kind() == NameKind::Var).then_some(e.target);
    let mut vars: Vec<u32> = (report.pairs.iter())
        .flat_map(|p| [&p.first_event, &p.second_event])
        .chain(report.racy_events.iter().map(|e| &e.event))
        .filter_map(shown)
        .collect();
    vars.sort_unstable();
    vars.dedup();
    let var_ids: Vec<u32> = (vars.iter())
        .map(|&v| {
            names
                .table_mut(NameKind::Var)
                .intern(st.conv.var_name(v).as_bytes())
        })
        .collect();
    let fix_var = |e: &mut Event| {
        if let Some(v) = shown(e) {
            e.target = var_ids[vars.binary_search(&v).expect("a shown variable")];
        }
    };
    for p in &mut report.pairs {
        fix_var(&mut p.first_event);
        fix_var(&mut p.second_event);
    }
    for e in &mut report.racy_events {
        fix_var(&mut e.event);
    }
    let mut remap = vec![LocId::NONE; st.conv.names.table(NameKind::Loc).len()];
    let mut sorted = pcs;
    sorted.sort_unstable();
    for (pc, old) in sorted {
        let name = match syms.get(&pc) {
            Some(n) => n.clone(),
            None => format!("{:#x}", pc - 1),
        };
        remap[old.0 as usize] = LocId(names.table_mut(NameKind::Loc).intern(name.as_bytes()));
    }
    let fix = |l: &mut LocId| {
        if let Some(&n) = remap.get(l.0 as usize) {
            *l = n;
        }
    };
    for p in &mut report.pairs {
        fix(&mut p.first_event.loc);
        fix(&mut p.second_event.loc);
    }
    for e in &mut report.racy_events {
        fix(&mut e.event.loc);
    }

    let program = std::fs::read_link("/proc/self/exe")
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "program".into());
    let trace = format!("{program} (online)");
    let out = (|| {
        let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
        if path.extension().is_some_and(|e| e == "json") {
            json::write_json(&mut w, &report, &trace, &names)?;
        } else {
            text::write_report(&mut w, &report, &ReportContext::new(&trace, &names))?;
            std::io::Write::write_all(&mut w, b"\n")?;
        }
        std::io::Write::flush(&mut w)
    })();
    let races = report.racy_locations();
    Some(out.map(|()| (st.events, races)))
}
