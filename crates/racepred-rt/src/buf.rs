//! Recording: per-thread event buffers, stamped from one global sequence at
//! synchronisation events only.
//!
//! Every hook ends in [`record`] or [`access`]: it appends a 24-byte [`Rec`] to the calling
//! thread's buffer, a chain of `mmap`ed chunks that only that thread writes. Nothing here
//! allocates with `malloc` or takes a lock; a chunk's length is published with a release
//! store after its record is written, so the writer ([`crate::stream`]) reads a consistent
//! prefix of every buffer while threads are still running, and frees the chunks it has
//! written.
//!
//! Stamps: a synchronisation record (and a free or retirement) takes the next number `s`
//! of the global sequence `SEQ` (a read-modify-write, flagged by the thread's `pending`
//! while in flight) and is stamped `2s + 1`; an access or a call only loads `SEQ` (no
//! shared cache line is written per access) and is stamped `2k` for the value `k` loaded. Read-modify-writes of one atomic are totally ordered consistently with
//! happens-before, so two stamps taken in threads ordered by a lock, a join or an atomic
//! are in that order. Hence the SSHB §3 instrumentation (acquire stamped after the lock call
//! returns, release stamped before the unlock call, both while the lock is held) gives each
//! lock's events in execution order; why merging by stamp gives a valid trace is in
//! [`crate::stream`].

use core::cell::Cell;
use core::ptr::null_mut;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// What a record means. 0–7 are [`racepred::trace::Op`]'s discriminants.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Kind {
    Read = 0,
    Write = 1,
    Acquire = 2,
    Release = 3,
    /// `addr` = the forked thread's id.
    Fork = 4,
    /// `addr` = the joined thread's id.
    Join = 5,
    VRead = 6,
    VWrite = 7,
    /// `[addr, addr + size)` was freed (or is a new thread's stack): later accesses to it are
    /// to new variables. The size is in the low 48 bits of `info`.
    Retire = 8,
    /// `free(addr)` called from the return address in the low 48 bits of `info`; the
    /// thread's next record is the block's [`Kind::Retire`]. The block's variables are
    /// written there (a free is a write, as for ThreadSanitizer).
    Free = 9,
    /// `__tsan_func_entry`: a call from the return address in the low 48 bits of `info`.
    /// Stamped with the thread's latest stamp (calls order nothing across threads).
    FuncEntry = 10,
    /// `__tsan_func_exit`.
    FuncExit = 11,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            0 => Kind::Read,
            1 => Kind::Write,
            2 => Kind::Acquire,
            3 => Kind::Release,
            4 => Kind::Fork,
            5 => Kind::Join,
            6 => Kind::VRead,
            7 => Kind::VWrite,
            8 => Kind::Retire,
            9 => Kind::Free,
            10 => Kind::FuncEntry,
            11 => Kind::FuncExit,
            _ => return None,
        })
    }
}

/// Name spaces of `vr` / `vw` targets: an atomic's own address, or a synchronisation
/// object's address standing for one of its release points.
pub mod ns {
    /// Memory: atomics, `__cxa_guard` bytes.
    pub const MEM: u8 = 0;
    /// A rwlock's writer unlocks (read by its read locks).
    pub const RW_W: u8 = 1;
    /// A rwlock's reader unlocks (read by its write locks).
    pub const RW_R: u8 = 2;
    pub const BARRIER: u8 = 3;
    pub const SEM: u8 = 4;
    pub const ONCE: u8 = 5;
    /// `__tsan_acquire` / `__tsan_release` annotations.
    pub const ANNOTATION: u8 = 6;
    pub const COUNT: usize = 7;
}

/// One recorded event: `info` = kind (bits 56–63), name space (48–55) and the return
/// address of the hook (0–47; x86-64 user addresses have 47 bits), or the size of a retire.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Rec {
    pub seq: u64,
    pub addr: u64,
    pub info: u64,
}
const _: () = assert!(core::mem::size_of::<Rec>() == 24);

const LOW48: u64 = (1 << 48) - 1;

impl Rec {
    #[inline]
    pub fn new(seq: u64, kind: Kind, ns: u8, addr: u64, low: u64) -> Rec {
        Rec {
            seq,
            addr,
            info: info(kind, ns, low),
        }
    }
    #[inline]
    pub fn kind(&self) -> Option<Kind> {
        Kind::from_u8((self.info >> 56) as u8)
    }
    #[inline]
    pub fn ns(&self) -> u8 {
        (self.info >> 48) as u8
    }
    /// The return address of the hook (0 = unknown), or a retire's size.
    #[inline]
    pub fn low(&self) -> u64 {
        self.info & LOW48
    }
}

/// Records per chunk: 1.5 MiB, mapped lazily by the kernel.
pub const CHUNK_RECS: usize = 1 << 16;

pub struct Chunk {
    pub next: AtomicPtr<Chunk>,
    pub len: AtomicUsize,
    pub recs: [Rec; CHUNK_RECS],
}

/// Most rwlocks one thread holds for writing at a time (nesting deeper is reported once and
/// its unlocks are taken for reader unlocks).
const MAX_WRITE_HELD: usize = 32;
/// Relaxed atomic loads remembered until the thread's next acquire fence.
const RELAXED_LOADS: usize = 16;
/// Most locks one thread holds at a time that a `fork` carries into the child's trace
/// (deeper nesting is reported once; the child's trace may then be ill-formed).
const MAX_HELD: usize = 64;

/// A thread's buffer and per-thread state. Lives in `mmap`ed memory for the whole run (the
/// writer reads the buffers of threads that have ended); its chunks are freed by the
/// writer once written (record mode).
///
/// Who touches what: `tid`, `next_thread` and `first` are set before the buffer is
/// published and never change (but in a forked child, alone); `cur` and [`Private`] are the
/// owning thread's alone (reached through its [`Own`]); chunks' records are read by others
/// only up to their published length; `consumed` only under the online lock; `pending` is
/// set by the owner around a synchronisation stamp and read by the writer; `freed` counts
/// the chunks the writer has freed.
pub struct ThreadBuf {
    pub tid: u32,
    pub next_thread: *mut ThreadBuf,
    pub first: *mut Chunk,
    cur: *mut Chunk,
    own: Private,
    pub pending: AtomicBool,
    freed: AtomicUsize,
    /// Online mode: the pending accesses another thread has already handed to the analysis
    /// (at a free); read and written only under the online lock (relaxed).
    consumed: AtomicUsize,
    /// Online PACER: the operations this thread may count without the online lock, and
    /// the accesses it counted ([`crate::online::skip`]).
    pub counting: crate::online::Counting,
    /// Online FastTrack: the accesses skipped as repeats, and the flag of a thread taking
    /// this one's pending accesses ([`crate::repeats`]).
    pub repeats: crate::repeats::Shared,
}

/// What a thread's buffer knows of the thread itself, written only by that thread.
#[derive(Clone, Copy)]
pub struct Private {
    /// Rwlocks this thread holds for writing (their unlock is a writer unlock).
    write_held: Held<MAX_WRITE_HELD>,
    /// Atomics loaded relaxed since the last acquire fence (a ring), and whether a release
    /// fence was executed (later relaxed stores then publish what preceded it).
    relaxed_loads: [usize; RELAXED_LOADS],
    n_relaxed_loads: usize,
    pub release_fenced: bool,
    /// Locks this thread holds (its `acq` events without their `rel` yet; a re-entrant
    /// lock once per acquisition): a child forked now holds them too, so its trace starts
    /// by acquiring them.
    held: Held<MAX_HELD>,
    /// Chunks this thread has mapped (the writer frees them: the difference is its
    /// backlog).
    made: usize,
    /// Online FastTrack: the addresses of the thread's current run ([`crate::repeats`]).
    repeats: crate::repeats::Repeats,
}

/// The calling thread's own buffer while the thread is inside the runtime: made only by
/// [`with_buf`] and the access path (and a forked child's restart), lent to a closure for
/// the length of one hook, not `Send`. Through it the thread appends records and reaches
/// its [`Private`] state without `unsafe`.
pub struct Own(*mut ThreadBuf);

impl Own {
    /// The thread's own state.
    #[inline]
    pub fn state(&mut self) -> &mut Private {
        // SAFETY: `self.0` is the calling thread's mapped buffer; no other thread ever
        // reads or writes its `own` field, and `&mut self` makes this the only reference.
        unsafe { &mut (*self.0).own }
    }

    /// The buffer, for the online analysis (which reads it under its lock).
    #[inline]
    pub fn raw(&self) -> *mut ThreadBuf {
        self.0
    }

    #[inline]
    pub fn tid(&self) -> u32 {
        // SAFETY: `tid` never changes once the buffer is published.
        unsafe { (*self.0).tid }
    }
}

/// Per-thread state reached through ELF TLS ([`TLS`]). `Cell`s of plain data, valid when
/// zeroed, without destructor: nothing to register or allocate per thread.
pub struct Tls {
    pub buf: Cell<*mut ThreadBuf>,
    /// Set while the thread is inside the runtime: a hook reached from inside (a signal
    /// handler, `free` called by the merge) passes straight through.
    pub busy: Cell<bool>,
    /// `__tsan_ignore_thread_begin` nesting: memory accesses are not recorded while > 0.
    pub ignore: Cell<u32>,
    /// The `pthread_once` routine being run and its control (see `sync::pthread_once`).
    pub once_routine: Cell<Option<extern "C" fn()>>,
    pub once_control: Cell<usize>,
    pub once_pc: Cell<usize>,
    /// Set while the thread holds the writer lock ([`crate::stream`]): a fatal signal
    /// that interrupts it must not wait for that lock.
    pub writing: Cell<bool>,
}

/// The calling thread's [`Tls`], in the initial-exec TLS model: a thread-pointer-relative
/// load, no call to `__tls_get_addr` (which `thread_local!` in a shared library makes on
/// every access). The block is in `.tbss` (zeroed per thread: all-zero bytes are a valid
/// `Tls`); the library is loaded with the program (`libtsan.so.2` is a dependency of every
/// `-fsanitize=thread` binary), so its TLS is in the static block.
pub struct TlsKey(());

pub static TLS: TlsKey = TlsKey(());

core::arch::global_asm!(
    ".pushsection .tbss,\"awT\",@nobits",
    ".p2align 4",
    ".globl racepred_rt_tls",
    ".hidden racepred_rt_tls",
    ".type racepred_rt_tls,@object",
    ".size racepred_rt_tls, {size}",
    "racepred_rt_tls:",
    ".zero {size}",
    ".popsection",
    size = const core::mem::size_of::<Tls>(),
);

const _: () = assert!(core::mem::align_of::<Tls>() <= 16);

impl TlsKey {
    /// Runs `f` with the calling thread's [`Tls`].
    #[inline(always)]
    pub fn with<R>(&'static self, f: impl FnOnce(&Tls) -> R) -> R {
        let p: *const Tls;
        // SAFETY: reads the thread pointer and the GOT's offset of `racepred_rt_tls` in
        // the static TLS block; no memory is written.
        unsafe {
            core::arch::asm!(
                "mov {p}, qword ptr [rip + racepred_rt_tls@GOTTPOFF]",
                "add {p}, qword ptr fs:[0]",
                p = out(reg) p,
                options(nostack, readonly, preserves_flags, pure),
            );
        }
        // SAFETY: `p` is this thread's zero-initialised `Tls` block (valid when zeroed),
        // live as long as the thread; it is only used through `Cell`s, on this thread.
        f(unsafe { &*p })
    }

    /// The calling thread's [`Tls`], for a path where [`TlsKey::with`]'s closure might
    /// not be inlined. The reference cannot leave the thread (`Tls` is not `Sync`, so
    /// `&Tls` is not `Send`), and the block lives as long as the thread.
    #[inline(always)]
    pub fn get(&'static self) -> &'static Tls {
        self.with(|t| {
            let p: *const Tls = t;
            // SAFETY: as in `with`: this thread's block, live as long as the thread,
            // which the reference cannot leave.
            unsafe { &*p }
        })
    }
}

/// The global sequence.
pub static SEQ: AtomicU64 = AtomicU64::new(0);
/// Next thread id; the first thread to record (the main thread) gets 0.
static NEXT_TID: AtomicU32 = AtomicU32::new(0);
/// All thread buffers, newest first.
pub static THREADS: AtomicPtr<ThreadBuf> = AtomicPtr::new(null_mut());
/// Set when the trace is being written: nothing is recorded any more.
pub static FINISHED: AtomicBool = AtomicBool::new(false);

/// Writes `msg` to standard error with `write(2)` (usable anywhere, allocates nothing).
pub fn say(msg: &[u8]) {
    // SAFETY: `msg` is valid for `msg.len()` bytes; a short or failed write is ignored.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
    }
}

/// Ends the process with a message: the runtime cannot continue (no memory for buffers).
pub fn die(msg: &[u8]) -> ! {
    say(msg);
    // No trace from here on (`abort` would try to write it).
    FINISHED.store(true, Ordering::SeqCst);
    // SAFETY: `abort` has no precondition.
    unsafe { libc::abort() }
}

/// Maps `len` zeroed bytes.
pub(crate) fn map(len: usize) -> *mut u8 {
    // SAFETY: a new private anonymous mapping, touching no existing memory.
    let p = unsafe {
        libc::mmap(
            null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        die(b"racepred-rt: out of memory for the trace buffers (mmap failed)\n");
    }
    p.cast()
}

/// Written chunks kept for reuse: a chunk taken from here has its pages already mapped in
/// (a new mapping's pages are faulted in and zeroed by the kernel on first write). Slots
/// are swapped, so a chunk is taken by one thread only. 48 (72 MiB at most): a round frees
/// the chunks it wrote all at once, and with fewer slots most were unmapped and mapped anew
/// by the next chunks filled.
static SPARE: [AtomicPtr<Chunk>; 48] = [const { AtomicPtr::new(null_mut()) }; 48];

fn new_chunk() -> *mut Chunk {
    for s in &SPARE {
        if !s.load(Ordering::Relaxed).is_null() {
            let c = s.swap(null_mut(), Ordering::Acquire);
            if !c.is_null() {
                return c;
            }
        }
    }
    map(core::mem::size_of::<Chunk>()).cast()
}

/// Gives the calling thread its buffer (and id) now if it has none: a thread's id must be
/// older than those of the threads it creates (the main thread is `T0`).
pub fn ensure_buf() {
    TLS.with(|t| {
        buf_of(t);
    });
}

/// A new thread id (for `pthread_create`, which records the fork before the thread runs).
pub fn new_tid() -> u32 {
    NEXT_TID.fetch_add(1, Ordering::Relaxed)
}

/// Creates the calling thread's buffer with id `tid` and registers it.
#[cold]
#[inline(never)]
pub fn create_buf(t: &Tls, tid: u32) -> *mut ThreadBuf {
    let b: *mut ThreadBuf = map(core::mem::size_of::<ThreadBuf>()).cast();
    let c = new_chunk();
    // SAFETY: `b` is a new zeroed mapping of a `ThreadBuf` (all-zero bytes are a valid
    // one: null pointers, zero counts, `false`), not yet shared with another thread until
    // the compare-exchange publishes it.
    unsafe {
        // The mapping is zeroed: every other field starts as 0 / null / false.
        (*b).tid = tid;
        (*b).first = c;
        (*b).cur = c;
        (*b).own.made = 1;
        let mut head = THREADS.load(Ordering::Relaxed);
        // Sequentially consistent: a writer round that does not see this buffer loaded
        // `SEQ` before any stamp this thread takes (see `crate::stream`).
        loop {
            (*b).next_thread = head;
            match THREADS.compare_exchange_weak(head, b, Ordering::SeqCst, Ordering::Relaxed) {
                Ok(_) => break,
                Err(h) => head = h,
            }
        }
    }
    t.buf.set(b);
    b
}

#[inline]
fn buf_of(t: &Tls) -> *mut ThreadBuf {
    let b = t.buf.get();
    if b.is_null() {
        create_buf(t, new_tid())
    } else {
        b
    }
}

/// Appends a record to `b`.
///
/// # Safety
/// `b` is the calling thread's own buffer (no other thread writes it).
#[inline]
unsafe fn push(b: *mut ThreadBuf, rec: Rec) {
    // SAFETY: `b` and its current chunk are mapped for the whole run and written only by
    // this thread; slot `n` (< CHUNK_RECS) is past the published length, so no reader
    // looks at it until the release store publishes it.
    unsafe {
        let mut c = (*b).cur;
        let mut n = (*c).len.load(Ordering::Relaxed);
        if n == CHUNK_RECS {
            c = grow(b);
            n = 0;
        }
        (*c).recs.as_mut_ptr().add(n).write(rec);
        (*c).len.store(n + 1, Ordering::Release);
    }
}

/// Links a new chunk after the full one; then, unless a synchronisation record is in
/// flight (whose stamp would hold the writer's watermark back), lets the writer run.
///
/// # Safety
/// As [`push`].
#[cold]
#[inline(never)]
unsafe fn grow(b: *mut ThreadBuf) -> *mut Chunk {
    let c = new_chunk();
    // SAFETY: `b` is this thread's buffer; the new chunk is linked (release) before any
    // record of it is published; `made` is the owner's, `pending` and `freed` atomics.
    let (pending, backlog) = unsafe {
        (*(*b).cur).next.store(c, Ordering::Release);
        (*b).cur = c;
        (*b).own.made += 1;
        (
            (*b).pending.load(Ordering::Relaxed),
            (*b).own.made - (*b).freed.load(Ordering::Relaxed),
        )
    };
    if !pending {
        crate::stream::chunk_filled(backlog);
    }
    c
}

/// Frees chunk `c` of buffer `b`, written by the writer.
///
/// # Safety
/// `c` is a chunk of `b` that its owner has left (the next one is linked) and that no one
/// reads any more.
pub unsafe fn free_chunk(b: *mut ThreadBuf, c: *mut Chunk) {
    // SAFETY: the caller's contract: the chunk is ours; emptied, it is as a new one (the
    // records past its length are never read).
    unsafe {
        (*b).freed.fetch_add(1, Ordering::Relaxed);
        (*c).len.store(0, Ordering::Relaxed);
        (*c).next.store(null_mut(), Ordering::Relaxed);
    }
    for s in &SPARE {
        if s.compare_exchange(null_mut(), c, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
    // SAFETY: the caller's contract; the chunk was mapped with exactly this size.
    unsafe { libc::munmap(c.cast(), core::mem::size_of::<Chunk>()) };
}

#[inline]
fn info(kind: Kind, ns: u8, low: u64) -> u64 {
    (kind as u64) << 56 | (ns as u64) << 48 | (low & LOW48)
}

/// Runs `f` with the calling thread's buffer unless the thread is already inside the
/// runtime or the trace is being written; returns whether it ran.
#[inline]
pub fn with_buf(f: impl FnOnce(&mut Own)) -> bool {
    if FINISHED.load(Ordering::Relaxed) {
        return false;
    }
    TLS.with(|t| {
        if t.busy.get() {
            return false;
        }
        t.busy.set(true);
        f(&mut Own(buf_of(t)));
        t.busy.set(false);
        true
    })
}

/// Whether the calling thread is inside the runtime (or the trace is being written): then
/// an interposed call only forwards.
pub fn passthrough() -> bool {
    FINISHED.load(Ordering::Relaxed) || TLS.with(|t| t.busy.get())
}

/// Records one event.
#[inline]
pub fn record(kind: Kind, ns: u8, addr: usize, pc: usize) {
    with_buf(|b| push_now(b, kind, ns, addr, pc));
}

/// Stamps and appends one event to the thread's own buffer.
#[inline]
pub fn push_now(b: &mut Own, kind: Kind, ns: u8, addr: usize, pc: usize) {
    match kind {
        Kind::Acquire => b.state().note_held(addr),
        Kind::Release => b.state().forget_held(addr),
        _ => {}
    }
    if crate::online::online() {
        let rec = Rec::new(0, kind, ns, addr as u64, pc as u64);
        match kind {
            Kind::Read | Kind::Write => {
                // A memory access is a repeat or joins the thread's run (another namespace
                // is other variables).
                if !(ns == ns::MEM && b.repeated(kind == Kind::Write, addr)) {
                    b.pend(rec)
                }
            }
            _ => crate::online::sync(b, rec),
        }
        return;
    }
    match kind {
        // An access: the latest value of `SEQ` (a load: no shared line written).
        Kind::Read | Kind::Write | Kind::FuncEntry | Kind::FuncExit => {
            b.push(Rec::new(stamp(), kind, ns, addr as u64, pc as u64))
        }
        _ => b.push_sync(kind, ns, addr as u64, pc as u64),
    }
}

/// Advances the global sequence without a record: accesses stamped after this are
/// merged after the calling thread's accesses before it.
#[inline]
pub fn tick() {
    SEQ.fetch_add(1, Ordering::SeqCst);
}

/// An access's stamp, from the global sequence's current value `k`: `2k`, below the
/// synchronisation record stamped `k` (`2k + 1`) that may still come in another thread
/// (a join of this one), above the one stamped `k - 1` it may have seen.
#[inline(always)]
fn stamp() -> u64 {
    2 * SEQ.load(Ordering::Relaxed)
}

/// A mutex whose waiters sleep in the kernel (`futex`): 0 free, 1 held, 2 held and a
/// thread may sleep on it (Drepper's "Futexes Are Tricky"). For locks held long (a batch
/// analysed, a writer round), where spinning or yielding would take a processor from the
/// holder, and a sleep of fixed length would wake after it let go.
pub struct FutexLock(AtomicU32);

/// A hold of a [`FutexLock`], released when dropped.
pub struct FutexGuard(&'static FutexLock);

impl Default for FutexLock {
    fn default() -> FutexLock {
        FutexLock::new()
    }
}

impl FutexLock {
    pub const fn new() -> FutexLock {
        FutexLock(AtomicU32::new(0))
    }

    /// `futex(FUTEX_{WAIT,WAKE}_PRIVATE)` on the lock's word.
    fn futex(&self, op: libc::c_int, val: u32) {
        // SAFETY: the word is a live, aligned 32-bit atomic; a wait returns at once unless
        // the word is `val`, and a wake has no precondition.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.0.as_ptr(),
                op | libc::FUTEX_PRIVATE_FLAG,
                val,
                core::ptr::null::<libc::timespec>(),
            )
        };
    }

    pub fn lock(&'static self) -> FutexGuard {
        // A short spin first: most holds are short.
        for _ in 0..64 {
            if let Some(g) = self.try_lock() {
                return g;
            }
            core::hint::spin_loop();
        }
        while self.0.swap(2, Ordering::Acquire) != 0 {
            self.futex(libc::FUTEX_WAIT, 2);
        }
        FutexGuard(self)
    }

    /// Takes the lock if it is free.
    #[inline]
    pub fn try_lock(&'static self) -> Option<FutexGuard> {
        (self.0)
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| FutexGuard(self))
    }
}

impl Drop for FutexGuard {
    fn drop(&mut self) {
        if (self.0).0.swap(0, Ordering::Release) == 2 {
            self.0.futex(libc::FUTEX_WAKE, 1);
        }
    }
}

/// A spin lock's hold: taken by [`SpinGuard::lock`], released when dropped.
pub struct SpinGuard(&'static AtomicBool);

impl SpinGuard {
    /// Spins on `flag`, yielding the processor after a while (a preempted holder).
    #[inline]
    pub fn lock(flag: &'static AtomicBool) -> SpinGuard {
        let mut spins = 0u32;
        while flag
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spins += 1;
            if spins < 64 {
                core::hint::spin_loop();
            } else {
                // SAFETY: `sched_yield` has no precondition.
                unsafe { libc::sched_yield() };
            }
        }
        SpinGuard(flag)
    }

    /// Takes `flag` if it is free.
    #[inline]
    pub fn try_lock(flag: &'static AtomicBool) -> Option<SpinGuard> {
        flag.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| SpinGuard(flag))
    }
}

impl Drop for SpinGuard {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Runs `f` with the calling thread's buffer for a memory access, unless the trace is
/// being written, the thread is inside the runtime or it ignores accesses.
#[inline]
fn with_access(f: impl FnOnce(&mut Own)) {
    if FINISHED.load(Ordering::Relaxed) {
        return;
    }
    TLS.with(|t| {
        if t.busy.get() || t.ignore.get() > 0 {
            return;
        }
        t.busy.set(true);
        f(&mut Own(buf_of(t)));
        t.busy.set(false);
    })
}

/// Records a memory access unless the thread ignores accesses.
///
/// Online, the hook first asks only whether the access is one the analysis need not see:
/// under PACER, whether it is counted ([`crate::online::skip`]); under FastTrack, whether
/// it repeats one of the thread's run ([`Own::repeated`]), and if not it pends at once.
/// Outside PACER's sampling periods nearly every access is counted, and under FastTrack
/// every access is a repeat or pends; these paths, with no call and no stack frame, are
/// then all the access costs. Everything else is out of line ([`access_busy`],
/// [`access_general`]).
#[inline(always)]
pub fn access(write: bool, addr: usize, pc: usize) {
    if crate::online::fast_path() {
        access_fast(write, addr, pc, true);
    } else if crate::repeats::on() {
        access_fast(write, addr, pc, false);
    } else {
        access_general(write, addr, pc);
    }
}

/// [`access`]'s fast path: under PACER (`pacer`) or FastTrack with its repeats skipped.
#[inline(always)]
fn access_fast(write: bool, addr: usize, pc: usize, pacer: bool) {
    use crate::online::Skip;
    if FINISHED.load(Ordering::Relaxed) {
        return;
    }
    let t = TLS.get();
    let b = t.buf.get();
    if t.busy.get() || t.ignore.get() > 0 || b.is_null() {
        return access_general(write, addr, pc);
    }
    t.busy.set(true);
    let mut own = Own(b);
    let asked = if pacer {
        match crate::online::skip_reserved(&mut own, write, addr) {
            Some(Skip::Counted) => None,
            answer => Some(Asked::Pacer(answer)),
        }
    } else {
        // Not a repeat: it pends (as `record_access` has it do online FastTrack).
        let kind = if write { Kind::Write } else { Kind::Read };
        match own.repeated_or_call::<true>(write, addr) {
            Some(true) => None,
            Some(false) if own.try_pend(Rec::new(0, kind, ns::MEM, addr as u64, pc as u64)) => None,
            Some(false) => Some(Asked::NotRepeat),
            None => Some(Asked::Nothing),
        }
    };
    match asked {
        None => t.busy.set(false),
        Some(asked) => access_busy(b, write, addr, pc, asked),
    }
}

/// What [`access`]'s fast path found out about an access it passes on.
#[derive(Clone, Copy)]
enum Asked {
    Nothing,
    /// What [`crate::online::skip`] says of it (`None`: ask again, reserving).
    Pacer(Option<crate::online::Skip>),
    /// Not one of FastTrack's repeats (and its slot now says that the run has it).
    NotRepeat,
}

/// [`access`] for a thread already marked inside the runtime (`busy`), with buffer `b`;
/// unmarks it.
#[inline(never)]
fn access_busy(b: *mut ThreadBuf, write: bool, addr: usize, pc: usize, asked: Asked) {
    record_access(&mut Own(b), write, addr, pc, asked);
    TLS.get().busy.set(false);
}

/// [`access`] without a fast path.
#[inline(never)]
fn access_general(write: bool, addr: usize, pc: usize) {
    with_access(|b| record_access(b, write, addr, pc, Asked::Nothing));
}

/// Records the calling thread's access: in its buffer (stamped), or online pending for the
/// analysis, unless it is a repeat or counted.
#[inline(always)]
fn record_access(b: &mut Own, write: bool, addr: usize, pc: usize, asked: Asked) {
    use crate::online::Skip;
    let kind = if write { Kind::Write } else { Kind::Read };
    // Recording: the access stamped and appended (as `push_now` does, without its tests
    // of the kind and the mode).
    if !crate::online::online() {
        b.push(Rec::new(stamp(), kind, ns::MEM, addr as u64, pc as u64));
        return;
    }
    // Online FastTrack: a repeat within the thread's run is only counted.
    if !matches!(asked, Asked::NotRepeat) && b.repeated(write, addr) {
        return;
    }
    // Online PACER outside sampling periods: most accesses are only counted.
    let mut answer = match asked {
        Asked::Pacer(Some(answer)) => answer,
        _ => crate::online::skip(b, write, addr),
    };
    if answer == Skip::Flush {
        crate::online::flush(b);
        answer = crate::online::skip(b, write, addr);
    }
    // An access pends (as `push_now` does online, without its tests).
    let rec = Rec::new(0, kind, ns::MEM, addr as u64, pc as u64);
    match answer {
        Skip::Counted => {}
        Skip::Record | Skip::Flush => b.pend(rec),
        Skip::Now => {
            b.pend(rec);
            crate::online::flush(b);
        }
    }
}

impl Own {
    /// Appends a stamped record.
    #[inline]
    fn push(&mut self, rec: Rec) {
        // SAFETY: `self.0` is the calling thread's own buffer.
        unsafe { push(self.0, rec) }
    }

    /// Appends a synchronisation record with the next number of the global sequence,
    /// flagged as in flight meanwhile (all sequentially consistent: see `crate::stream`).
    fn push_sync(&mut self, kind: Kind, ns: u8, addr: u64, low: u64) {
        // SAFETY: `pending` is an atomic of the thread's own, mapped buffer.
        let pending = unsafe { &(*self.0).pending };
        pending.store(true, Ordering::SeqCst);
        let seq = 2 * SEQ.fetch_add(1, Ordering::SeqCst) + 1;
        self.push(Rec::new(seq, kind, ns, addr, low));
        pending.store(false, Ordering::SeqCst);
    }

    /// Online PACER: the thread's reservation and counts ([`crate::online::skip`]).
    #[inline]
    pub fn counting(&self) -> &crate::online::Counting {
        // SAFETY: the calling thread's mapped buffer; `counting` is atomics.
        unsafe { &(*self.0).counting }
    }

    /// Online mode: whether the thread's access is one of FastTrack's repeats within its
    /// run, to skip ([`crate::repeats`]; never when that path is off); if not, the caller
    /// records it.
    #[inline(always)]
    pub fn repeated(&mut self, write: bool, addr: usize) -> bool {
        crate::repeats::on() && self.repeated_or_call::<false>(write, addr) == Some(true)
    }

    /// [`Repeats::check_or_call`](crate::repeats::Repeats::check_or_call) on the thread's
    /// table (the repeats path on): with `INLINE` (the hook's fast path), `None` and nothing
    /// changed where the check would call out of line.
    #[inline(always)]
    pub fn repeated_or_call<const INLINE: bool>(
        &mut self,
        write: bool,
        addr: usize,
    ) -> Option<bool> {
        // SAFETY: the calling thread's mapped buffer: its `own` is this thread's alone
        // (`&mut self`), `consumed` and `repeats` are atomics; disjoint fields.
        let (own, consumed, shared) = unsafe {
            (
                &mut (*self.0).own.repeats,
                &(*self.0).consumed,
                &(*self.0).repeats,
            )
        };
        own.check_or_call::<INLINE>(write, addr, consumed, shared)
    }

    /// Online FastTrack: the thread's batch was handed over: its next accesses are a new
    /// run ([`crate::repeats`]).
    #[inline]
    pub fn new_run(&mut self) {
        self.state().repeats.new_run();
    }

    /// Online mode: how many accesses of the thread are pending (0: all it did is with
    /// the analysis).
    #[inline]
    pub fn batch_len(&self) -> usize {
        // SAFETY: `first` never changes; its length is an atomic (written by the owner, or
        // under the online lock when the owner hands its batch over).
        unsafe { (*(*self.0).first).len.load(Ordering::Relaxed) }
    }

    /// Online mode: appends an access to the thread's pending batch (its first chunk),
    /// handing the batch to the analysis first when it is full ([`crate::online`]).
    ///
    /// The accesses skipped as repeats since the thread's last record ride on this one
    /// (its `seq`, unused online).
    #[inline]
    fn pend(&mut self, rec: Rec) {
        if !self.try_pend(rec) {
            crate::online::flush(self);
            let pended = self.try_pend(rec);
            debug_assert!(pended, "the batch is empty once handed over");
        }
    }

    /// [`Own::pend`] unless the batch is full (then nothing is done: false), without a
    /// call (the hook's fast path).
    #[inline(always)]
    fn try_pend(&mut self, mut rec: Rec) -> bool {
        // SAFETY: `first` never changes; the owner alone appends to the batch and resets
        // its length (under the online lock, in `flush`); a slot past the published
        // length is read by no one until the release store publishes it.
        unsafe {
            let c = (*self.0).first;
            let n = (*c).len.load(Ordering::Relaxed);
            if n == CHUNK_RECS {
                return false;
            }
            rec.seq = (*self.0).repeats.take_gap();
            (*c).recs.as_mut_ptr().add(n).write(rec);
            (*c).len.store(n + 1, Ordering::Release);
            (*self.0).own.repeats.recorded();
        }
        true
    }
}

/// Online mode: hands the accesses `b`'s thread made since its batch was last handed over
/// to `f`, in order, then marks them handed over. With `own` (called by `b`'s own thread,
/// or once that thread has ended) the batch is emptied; by another thread, which must not
/// touch the batch's length while its owner appends, they are counted in `consumed`.
///
/// # Safety
/// The caller holds the online lock and `b` is a registered buffer; `own` only as said.
pub unsafe fn hand_over(b: *mut ThreadBuf, own: bool, mut f: impl FnMut(&Rec)) {
    // SAFETY: `first` never changes and its records up to the length loaded (acquire)
    // are published and never rewritten while the lock is held (the owner empties the
    // batch only under it); `consumed` is only touched under the lock.
    unsafe {
        let c = (*b).first;
        if !own {
            // The taker's side of the handshake of `crate::repeats`: the flag, then the
            // length.
            (*b).repeats.consuming.store(true, Ordering::SeqCst);
            core::sync::atomic::fence(Ordering::SeqCst);
        }
        let n = (*c).len.load(Ordering::Acquire);
        let from = (*b).consumed.load(Ordering::Relaxed).min(n);
        for r in core::slice::from_raw_parts((*c).recs.as_ptr().add(from), n - from) {
            f(r);
        }
        if own {
            (*b).consumed.store(0, Ordering::Relaxed);
            (*c).len.store(0, Ordering::Release);
        } else {
            (*b).consumed.store(n, Ordering::Relaxed);
            (*b).repeats.consuming.store(false, Ordering::Release);
        }
    }
}

/// In a child just forked, where only the calling thread exists and every runtime lock is
/// free: the parent's buffers (its history, in its own trace) are unmapped, and the calling
/// thread starts a new buffer as `T0` whose first events acquire the locks it holds (the
/// child holds them too). `pc`: the return address of the `fork` call. The caller is inside
/// the runtime (`busy`).
pub fn restart_in_child(pc: usize) {
    TLS.with(|t| {
        let old = t.buf.get();
        let mut kept = Private::default();
        if !old.is_null() {
            // SAFETY: `old` is this thread's own buffer, mapped until the loop below.
            kept = unsafe { (*old).own };
        }
        // The chunks the parent's writer has not freed yet: from its cursors, or the first.
        let starts = crate::stream::forget_in_child();
        let mut b = THREADS.swap(null_mut(), Ordering::AcqRel);
        while !b.is_null() {
            // SAFETY: no other thread exists in the child: nothing else reads or writes the
            // buffers, and each chunk and buffer was mapped with exactly these sizes; the
            // chunks before a cursor's are already unmapped.
            unsafe {
                let next = (*b).next_thread;
                let mut c = match starts.iter().find(|s| s.0 == b) {
                    Some(s) => s.1,
                    None => (*b).first,
                };
                while !c.is_null() {
                    let after = (*c).next.load(Ordering::Relaxed);
                    libc::munmap(c.cast(), core::mem::size_of::<Chunk>());
                    c = after;
                }
                libc::munmap(b.cast(), core::mem::size_of::<ThreadBuf>());
                b = next;
            }
        }
        NEXT_TID.store(0, Ordering::Relaxed);
        let mut nb = Own(create_buf(t, new_tid()));
        // Acquired again below.
        let held = core::mem::replace(&mut kept.held, Held::EMPTY);
        kept.made = 1;
        kept.repeats.new_run();
        *nb.state() = kept;
        for &m in held.as_slice() {
            push_now(&mut nb, Kind::Acquire, ns::MEM, m, pc);
        }
    });
}

impl Default for Private {
    fn default() -> Private {
        Private {
            write_held: Held::EMPTY,
            relaxed_loads: [0; RELAXED_LOADS],
            n_relaxed_loads: 0,
            release_fenced: false,
            held: Held::EMPTY,
            made: 0,
            repeats: crate::repeats::Repeats::default(),
        }
    }
}

/// Every thread's buffer, newest first.
pub fn threads() -> impl Iterator<Item = *mut ThreadBuf> {
    let mut b = THREADS.load(Ordering::Acquire);
    core::iter::from_fn(move || {
        if b.is_null() {
            return None;
        }
        let here = b;
        // SAFETY: a registered buffer stays mapped (but in a forked child, which unmaps
        // the parent's alone) and its `next_thread` never changes once published.
        b = unsafe { (*b).next_thread };
        Some(here)
    })
}

/// Records an access to `[addr, addr + size)` as one access per 4-byte word it touches
/// (named by the word's address), with consecutive stamps.
pub fn access_range(write: bool, addr: usize, size: usize, pc: usize) {
    if size == 0 {
        return;
    }
    let kind = if write { Kind::Write } else { Kind::Read };
    let first = addr & !3;
    let end = addr.saturating_add(size);
    let words = (end - first).div_ceil(4) as u64;
    with_access(|b| {
        if crate::online::online() {
            for i in 0..words {
                let a = first + 4 * i as usize;
                if !b.repeated(write, a) {
                    b.pend(Rec::new(0, kind, ns::MEM, a as u64, pc as u64));
                }
            }
            return;
        }
        let seq = stamp();
        for i in 0..words {
            let a = (first + 4 * i as usize) as u64;
            b.push(Rec::new(seq, kind, ns::MEM, a, pc as u64));
        }
    })
}

/// Records a call (`entry`, from return address `pc`) or a return, for the calling
/// contexts of the thread's events ([`crate::convert`]); not in online mode, which keeps
/// no stacks. Stamped as an access is.
#[inline]
pub fn call(entry: bool, pc: usize) {
    // Online analyses keep no calling context: nothing to do, not even the thread's buffer.
    if crate::online::decided_online() {
        return;
    }
    with_buf(|b| {
        if crate::online::online() {
            return;
        }
        let (kind, pc) = match entry {
            true => (Kind::FuncEntry, pc as u64),
            false => (Kind::FuncExit, 0),
        };
        b.push(Rec::new(stamp(), kind, ns::MEM, 0, pc));
    });
}

/// Records that `[addr, addr + size)` holds new variables from now on.
pub fn retire(addr: usize, size: usize) {
    if size > 0 {
        record(Kind::Retire, ns::MEM, addr, size.min(LOW48 as usize));
    }
}

/// Records that the block `[addr, addr + size)` is freed by a call returning to `pc`: a
/// write of each of its variables there, then its retirement.
pub fn free_block(addr: usize, size: usize, pc: usize) {
    if size > 0 {
        with_buf(|b| {
            push_now(b, Kind::Free, ns::MEM, addr, pc);
            push_now(b, Kind::Retire, ns::MEM, addr, size.min(LOW48 as usize));
        });
    }
}

/// Locks a thread holds, latest last: at most `N` (one more is said once, and not kept).
#[derive(Clone, Copy)]
struct Held<const N: usize> {
    items: [usize; N],
    n: usize,
}

impl<const N: usize> Held<N> {
    const EMPTY: Held<N> = Held {
        items: [0; N],
        n: 0,
    };

    fn push(&mut self, x: usize, warned: &AtomicBool, full: &[u8]) {
        if self.n < N {
            self.items[self.n] = x;
            self.n += 1;
        } else if !warned.swap(true, Ordering::Relaxed) {
            say(full);
        }
    }

    /// Whether `x` is held; if so, forgets its latest entry.
    fn take(&mut self, x: usize) -> bool {
        let n = self.n;
        match self.items[..n].iter().rposition(|&y| y == x) {
            Some(i) => {
                self.items.copy_within(i + 1..n, i);
                self.n = n - 1;
                true
            }
            None => false,
        }
    }

    fn as_slice(&self) -> &[usize] {
        &self.items[..self.n]
    }
}

impl Private {
    /// Notes that this thread now holds rwlock `rw` for writing.
    pub fn push_write_held(&mut self, rw: usize) {
        static WARNED: AtomicBool = AtomicBool::new(false);
        self.write_held.push(rw, &WARNED, b"racepred-rt: a thread holds more than 32 rwlocks for writing; the trace may be ill-formed\n");
    }

    /// Whether this thread holds rwlock `rw` for writing; if so, forgets it (the unlock).
    pub fn take_write_held(&mut self, rw: usize) -> bool {
        self.write_held.take(rw)
    }

    /// Notes that this thread acquired lock `m`.
    fn note_held(&mut self, m: usize) {
        static WARNED: AtomicBool = AtomicBool::new(false);
        self.held.push(m, &WARNED, b"racepred-rt: a thread holds more than 64 locks; a child forked now may have an ill-formed trace\n");
    }

    /// Notes that this thread released lock `m` (its latest acquisition).
    fn forget_held(&mut self, m: usize) {
        self.held.take(m);
    }

    /// Remembers a relaxed load of `a` for the next acquire fence.
    pub fn note_relaxed_load(&mut self, a: usize) {
        let n = self.n_relaxed_loads;
        if self.relaxed_loads[..n.min(RELAXED_LOADS)].contains(&a) {
            return;
        }
        self.relaxed_loads[n % RELAXED_LOADS] = a;
        self.n_relaxed_loads = n + 1;
    }

    /// The relaxed loads since the last acquire fence (forgotten by this call).
    pub fn take_relaxed_loads(&mut self) -> ([usize; RELAXED_LOADS], usize) {
        let n = self.n_relaxed_loads.min(RELAXED_LOADS);
        self.n_relaxed_loads = 0;
        (self.relaxed_loads, n)
    }
}

/// `locked_state!(Guard: STATE of T)`: a static `STATE` holding an `Option<T>` that is
/// reached only through `Guard` (a type whose values exist only while they hold the lock
/// that protects `STATE`), and `Guard`'s `Deref` / `DerefMut` to it.
macro_rules! locked_state {
    ($guard:ident: $state:ident of $t:ty) => {
        /// The state: reached only through its guard.
        struct Slot(core::cell::UnsafeCell<Option<$t>>);
        // SAFETY: the state inside is reached only through the guard, which holds the lock:
        // one thread at a time.
        unsafe impl Sync for Slot {}
        static $state: Slot = Slot(core::cell::UnsafeCell::new(None));

        impl core::ops::Deref for $guard {
            type Target = Option<$t>;
            fn deref(&self) -> &Option<$t> {
                // SAFETY: the lock is held by this guard: no other reference to the state
                // exists while the one returned (bounded by the guard's borrow) lives.
                unsafe { &*$state.0.get() }
            }
        }

        impl core::ops::DerefMut for $guard {
            fn deref_mut(&mut self) -> &mut Option<$t> {
                // SAFETY: as for `deref`, and `&mut self` makes this the only one.
                unsafe { &mut *$state.0.get() }
            }
        }
    };
}
pub(crate) use locked_state;
