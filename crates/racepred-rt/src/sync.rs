//! Interposed synchronisation: threads, mutexes, rwlocks, spin locks, condition variables,
//! barriers, semaphores, `pthread_once`, C++ static-initialisation guards, `free` /
//! `realloc` / `operator delete`.
//!
//! A program built with `-fsanitize=thread` lists `libtsan.so.2` before `libc.so.6`, so
//! the loader binds its calls (and libstdc++'s) to these definitions; each finds the real
//! function with `dlsym(RTLD_NEXT)` on first use (`dlvsym(…, "GLIBC_2.3.2")` for the
//! condition variables, whose unversioned default would otherwise be glibc's own choice).
//!
//! What each records (SSHB §3, accurate tracing of release–acquire: an acquire is stamped
//! after the lock call returns and a release before the unlock call, both while the lock
//! is held, so each lock's events are in execution order):
//!
//! | call | events |
//! |---|---|
//! | `pthread_create` | `fork(T)` before the thread starts; the new thread's stack retired |
//! | `pthread_join`, `_tryjoin_np`, `_timedjoin_np`, `_clockjoin_np` | `join(T)` when it succeeds |
//! | mutex / spin lock, trylock, timedlock, clocklock | `acq(m)` when it succeeds (also `EOWNERDEAD`) |
//! | mutex / spin unlock | `rel(m)` |
//! | rwlock write lock (all variants) | `acq(rw)`, `vr(rwlock-r:rw)` |
//! | rwlock read lock (all variants) | `vr(rwlock-w:rw)` |
//! | rwlock unlock | writer: `vw(rwlock-w:rw)`, `rel(rw)`; reader: `vw(rwlock-r:rw)` |
//! | cond wait, timedwait, clockwait | `rel(m)`, the real wait, `acq(m)` (also when the thread is cancelled in the wait) |
//! | barrier wait | `vw(barrier:b)` before, `vr(barrier:b)` after; `b + 1` instead of `b` in odd rounds (`pthread_barrier_init` keeps the count) |
//! | `sem_post` | `vw(sem:s)`; `sem_wait` & co: `vr(sem:s)` when it succeeds |
//! | `pthread_once` | the routine's end `vw(once:o)`; every return `vr(once:o)` |
//! | `__cxa_guard_release` / `_acquire` | `vw(g)` / `vr(g)` (as the inline guard check's atomic load) |
//! | `free`, `realloc`, `operator delete` | `w` of each variable of the block at the call, then retire the block (its addresses are new variables afterwards) |
//!
//! Readers of a rwlock hold it together, which a lock cannot say in a well-formed trace;
//! they synchronise with writers only, through `vw`→`vr` edges on two variables per
//! rwlock, while writers still exclude each other as a lock (so predictive analyses may
//! reorder their critical sections). `pthread_cond_signal` / `_broadcast` record nothing
//! (they are defined here only to reach the right glibc version, see `forward!`);
//! `pthread_detach` and `pthread_exit` are not interposed. The
//! happens-before a condition variable carries is the mutex's (ThreadSanitizer's choice
//! too: a `sig`→`wait` edge would hide races after a spurious or timed-out wakeup), a
//! detach orders nothing, and a thread's end is covered by `pthread_create`'s wrapper.

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use libc::pthread_t;

use crate::buf::{
    self, free_block, ns, passthrough, push_now, record, retire, with_buf, Kind, TLS,
};
use crate::real::Real;
use crate::tramp::hook;

unsafe extern "C" {
    fn __libc_free(p: *mut c_void);
    fn __libc_realloc(p: *mut c_void, n: usize) -> *mut c_void;
    fn malloc_usable_size(p: *mut c_void) -> usize;
}

// ---------------------------------------------------------------------------------------
// Threads
// ---------------------------------------------------------------------------------------

type StartFn = extern "C" fn(*mut c_void) -> *mut c_void;

struct StartArg {
    f: StartFn,
    arg: *mut c_void,
    tid: u32,
}

/// `pthread_t` → racepred thread id + 1, for joins: an open-addressing table written by
/// each new thread (before it runs user code, so before any join of it returns). A reused
/// `pthread_t` (glibc caches stacks) overwrites its entry.
const TABLE: usize = 1 << 14;
static KEYS: [AtomicUsize; TABLE] = [const { AtomicUsize::new(0) }; TABLE];
static TIDS: [AtomicU32; TABLE] = [const { AtomicU32::new(0) }; TABLE];

fn slot_of(key: usize) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 50) % TABLE
}

fn register_thread(key: usize, tid: u32) {
    let mut i = slot_of(key);
    for _ in 0..TABLE {
        let k = KEYS[i].load(Ordering::Acquire);
        let mine = k == key
            || k == 0
                && match KEYS[i].compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => true,
                    Err(k2) => k2 == key,
                };
        if mine {
            TIDS[i].store(tid + 1, Ordering::Release);
            return;
        }
        i = (i + 1) % TABLE;
    }
    buf::say(b"racepred-rt: thread table full; joins of later threads are not recorded\n");
}

/// In a child just forked: the parent's threads do not exist here (and thread ids start
/// again at 0), so the table is emptied.
pub fn forget_threads() {
    for (k, t) in KEYS.iter().zip(TIDS.iter()) {
        k.store(0, Ordering::Relaxed);
        t.store(0, Ordering::Relaxed);
    }
}

fn thread_of(key: usize) -> Option<u32> {
    let mut i = slot_of(key);
    for _ in 0..TABLE {
        match KEYS[i].load(Ordering::Acquire) {
            0 => return None,
            k if k == key => return TIDS[i].load(Ordering::Acquire).checked_sub(1),
            _ => i = (i + 1) % TABLE,
        }
    }
    None
}

// SAFETY: the type is the C signature of the function named.
pub(crate) static REAL_CREATE: Real<
    unsafe extern "C" fn(
        *mut pthread_t,
        *const libc::pthread_attr_t,
        StartFn,
        *mut c_void,
    ) -> c_int,
> = unsafe { Real::new(c"pthread_create") };

unsafe extern "C" fn create_impl(
    th: *mut pthread_t,
    attr: *const libc::pthread_attr_t,
    f: StartFn,
    arg: *mut c_void,
    pc: usize,
) -> c_int {
    let real = REAL_CREATE.get();
    if passthrough() {
        // SAFETY: the caller's arguments, passed on to the function it meant to call.
        return unsafe { real(th, attr, f, arg) };
    }
    // SAFETY: `malloc` has no precondition.
    let sa = unsafe { libc::malloc(core::mem::size_of::<StartArg>()) } as *mut StartArg;
    if sa.is_null() {
        return libc::EAGAIN;
    }
    buf::ensure_buf();
    let tid = buf::new_tid();
    // SAFETY: `sa` is a fresh block of the size and alignment (malloc's) of a `StartArg`.
    unsafe { sa.write(StartArg { f, arg, tid }) };
    // Before the thread exists, so the fork precedes all its events.
    record(Kind::Fork, ns::MEM, tid as usize, pc);
    // SAFETY: the caller's arguments, but the start routine and its argument: ours, which
    // runs the caller's with its argument.
    let r = unsafe { real(th, attr, start_thread, sa.cast()) };
    if r != 0 {
        // SAFETY: the block was not handed to a thread: ours to free.
        unsafe { __libc_free(sa.cast()) };
    }
    r
}
hook!("r8", fn pthread_create(th: *mut pthread_t, attr: *const libc::pthread_attr_t, f: StartFn, arg: *mut c_void) -> c_int => create_impl);

extern "C" fn start_thread(sa: *mut c_void) -> *mut c_void {
    // SAFETY: `sa` is the `StartArg` `create_impl` wrote and handed to this thread alone.
    let StartArg { f, arg, tid } = unsafe { sa.cast::<StartArg>().read() };
    // SAFETY: read out above, and malloc's: freed once, here.
    unsafe { __libc_free(sa) };
    TLS.with(|t| buf::create_buf(t, tid));
    // SAFETY: `pthread_self` has no precondition.
    register_thread(unsafe { libc::pthread_self() } as usize, tid);
    // A stack (and static TLS block) of an ended thread may be reused: its addresses are
    // new variables for this thread.
    // SAFETY: `attr` is plain data initialised by `pthread_getattr_np` before use and
    // destroyed once; `lo` and `size` are valid out-parameters.
    unsafe {
        let mut attr: libc::pthread_attr_t = core::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) == 0 {
            let mut lo: *mut c_void = core::ptr::null_mut();
            let mut size = 0usize;
            if libc::pthread_attr_getstack(&attr, &mut lo, &mut size) == 0 {
                retire(lo as usize, size);
            }
            libc::pthread_attr_destroy(&mut attr);
        }
    }
    f(arg)
}

fn joined(th: pthread_t, r: c_int, pc: usize) -> c_int {
    if r == 0 {
        if let Some(tid) = thread_of(th as usize) {
            record(Kind::Join, ns::MEM, tid as usize, pc);
        }
    }
    r
}

// SAFETY: the type is the C signature of the function named.
pub(crate) static REAL_JOIN: Real<unsafe extern "C" fn(pthread_t, *mut *mut c_void) -> c_int> =
    unsafe { Real::new(c"pthread_join") };
// SAFETY: the type is the C signature of the function named.
static REAL_TRYJOIN: Real<unsafe extern "C" fn(pthread_t, *mut *mut c_void) -> c_int> =
    unsafe { Real::new(c"pthread_tryjoin_np") };
// SAFETY: the type is the C signature of the function named.
static REAL_TIMEDJOIN: Real<
    unsafe extern "C" fn(pthread_t, *mut *mut c_void, *const libc::timespec) -> c_int,
> = unsafe { Real::new(c"pthread_timedjoin_np") };
// SAFETY: the type is the C signature of the function named.
static REAL_CLOCKJOIN: Real<
    unsafe extern "C" fn(pthread_t, *mut *mut c_void, c_int, *const libc::timespec) -> c_int,
> = unsafe { Real::new(c"pthread_clockjoin_np") };

unsafe extern "C" fn join_impl(th: pthread_t, ret: *mut *mut c_void, pc: usize) -> c_int {
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    let r = unsafe { REAL_JOIN.get()(th, ret) };
    joined(th, r, pc)
}
unsafe extern "C" fn tryjoin_impl(th: pthread_t, ret: *mut *mut c_void, pc: usize) -> c_int {
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    let r = unsafe { REAL_TRYJOIN.get()(th, ret) };
    joined(th, r, pc)
}
unsafe extern "C" fn timedjoin_impl(
    th: pthread_t,
    ret: *mut *mut c_void,
    t: *const libc::timespec,
    pc: usize,
) -> c_int {
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    let r = unsafe { REAL_TIMEDJOIN.get()(th, ret, t) };
    joined(th, r, pc)
}
unsafe extern "C" fn clockjoin_impl(
    th: pthread_t,
    ret: *mut *mut c_void,
    clk: c_int,
    t: *const libc::timespec,
    pc: usize,
) -> c_int {
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    let r = unsafe { REAL_CLOCKJOIN.get()(th, ret, clk, t) };
    joined(th, r, pc)
}
hook!("rdx", fn pthread_join(th: pthread_t, ret: *mut *mut c_void) -> c_int => join_impl);
hook!("rdx", fn pthread_tryjoin_np(th: pthread_t, ret: *mut *mut c_void) -> c_int => tryjoin_impl);
hook!("rcx", fn pthread_timedjoin_np(th: pthread_t, ret: *mut *mut c_void, t: *const libc::timespec) -> c_int => timedjoin_impl);
hook!("r8", fn pthread_clockjoin_np(th: pthread_t, ret: *mut *mut c_void, clk: c_int, t: *const libc::timespec) -> c_int => clockjoin_impl);

// ---------------------------------------------------------------------------------------
// Mutexes and spin locks
// ---------------------------------------------------------------------------------------

/// `acq(m)` if a lock call returned `r` with the lock held.
fn acquired(m: usize, r: c_int, pc: usize) -> c_int {
    if r == 0 || r == libc::EOWNERDEAD {
        record(Kind::Acquire, ns::MEM, m, pc);
    }
    r
}

/// Lock calls that may acquire: each `fn NAME(l: L, ARGS) => THEN` forwards to the real
/// `NAME` (its slot `SLOT`, the Rust side `IMP`, the trampoline's register `REG`: the one
/// after the arguments), then records what it did with `THEN(l, result, pc)`.
macro_rules! lock_calls {
    ($($reg:literal $slot:ident $imp:ident
        fn $name:ident($l:ident: $lt:ty $(, $a:ident: $t:ty)*) => $then:ident;)*) => {$(
        // SAFETY: the type is the C signature of the function named.
        static $slot: Real<unsafe extern "C" fn($lt $(, $t)*) -> c_int> = unsafe {
            let name = concat!(stringify!($name), "\0").as_bytes();
            Real::new(match core::ffi::CStr::from_bytes_with_nul(name) {
                Ok(name) => name,
                Err(_) => panic!("a function name"),
            })
        };
        unsafe extern "C" fn $imp($l: $lt $(, $a: $t)*, pc: usize) -> c_int {
            // SAFETY: the caller's arguments, passed on to the function it meant to call.
            let r = unsafe { $slot.get()($l $(, $a)*) };
            $then($l as usize, r, pc)
        }
        hook!($reg, fn $name($l: $lt $(, $a: $t)*) -> c_int => $imp);
    )*};
}

type Mutex = *mut libc::pthread_mutex_t;
type Spin = *mut libc::pthread_spinlock_t;
type Ts = *const libc::timespec;

lock_calls! {
    "rsi" REAL_MUTEX_LOCK mutex_lock_impl fn pthread_mutex_lock(m: Mutex) => acquired;
    "rsi" REAL_MUTEX_TRYLOCK mutex_trylock_impl fn pthread_mutex_trylock(m: Mutex) => acquired;
    "rdx" REAL_MUTEX_TIMEDLOCK mutex_timedlock_impl
        fn pthread_mutex_timedlock(m: Mutex, t: Ts) => acquired;
    "rcx" REAL_MUTEX_CLOCKLOCK mutex_clocklock_impl
        fn pthread_mutex_clocklock(m: Mutex, clk: c_int, t: Ts) => acquired;
    "rsi" REAL_SPIN_LOCK spin_lock_impl fn pthread_spin_lock(s: Spin) => acquired;
    "rsi" REAL_SPIN_TRYLOCK spin_trylock_impl fn pthread_spin_trylock(s: Spin) => acquired;
}

// SAFETY: the type is the C signature of the function named.
static REAL_MUTEX_UNLOCK: Real<unsafe extern "C" fn(Mutex) -> c_int> =
    unsafe { Real::new(c"pthread_mutex_unlock") };
// SAFETY: the type is the C signature of the function named.
static REAL_SPIN_UNLOCK: Real<unsafe extern "C" fn(Spin) -> c_int> =
    unsafe { Real::new(c"pthread_spin_unlock") };

unsafe extern "C" fn mutex_unlock_impl(m: Mutex, pc: usize) -> c_int {
    record(Kind::Release, ns::MEM, m as usize, pc);
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    unsafe { REAL_MUTEX_UNLOCK.get()(m) }
}
unsafe extern "C" fn spin_unlock_impl(s: Spin, pc: usize) -> c_int {
    record(Kind::Release, ns::MEM, s as usize, pc);
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    unsafe { REAL_SPIN_UNLOCK.get()(s) }
}
hook!("rsi", fn pthread_mutex_unlock(m: Mutex) -> c_int => mutex_unlock_impl);
hook!("rsi", fn pthread_spin_unlock(s: Spin) -> c_int => spin_unlock_impl);

// ---------------------------------------------------------------------------------------
// Rwlocks (and the read/write forms of annotated mutexes)
// ---------------------------------------------------------------------------------------

/// A read lock of `rw` is held: it sees every writer unlock before.
pub fn read_locked(rw: usize, pc: usize) {
    record(Kind::VRead, ns::RW_W, rw, pc);
}

/// A write lock of `rw` is held: a lock acquire that also sees every reader unlock.
pub fn write_locked(rw: usize, pc: usize) {
    with_buf(|b| {
        push_now(b, Kind::Acquire, ns::MEM, rw, pc);
        push_now(b, Kind::VRead, ns::RW_R, rw, pc);
        b.state().push_write_held(rw);
    });
}

/// `rw` is about to be unlocked by this thread, as a writer if it holds it so.
pub fn unlocking(rw: usize, pc: usize) {
    with_buf(|b| {
        if b.state().take_write_held(rw) {
            push_now(b, Kind::VWrite, ns::RW_W, rw, pc);
            push_now(b, Kind::Release, ns::MEM, rw, pc);
        } else {
            push_now(b, Kind::VWrite, ns::RW_R, rw, pc);
        }
    });
}

type RwLock = *mut libc::pthread_rwlock_t;

// SAFETY: the type is the C signature of the function named.
static REAL_RWUNLOCK: Real<unsafe extern "C" fn(RwLock) -> c_int> =
    unsafe { Real::new(c"pthread_rwlock_unlock") };

fn rd(rw: usize, r: c_int, pc: usize) -> c_int {
    if r == 0 {
        read_locked(rw, pc);
    }
    r
}
fn wr(rw: usize, r: c_int, pc: usize) -> c_int {
    if r == 0 {
        write_locked(rw, pc);
    }
    r
}

lock_calls! {
    "rsi" REAL_RDLOCK rdlock_impl fn pthread_rwlock_rdlock(rw: RwLock) => rd;
    "rsi" REAL_TRYRDLOCK tryrdlock_impl fn pthread_rwlock_tryrdlock(rw: RwLock) => rd;
    "rdx" REAL_TIMEDRDLOCK timedrdlock_impl fn pthread_rwlock_timedrdlock(rw: RwLock, t: Ts) => rd;
    "rcx" REAL_CLOCKRDLOCK clockrdlock_impl fn pthread_rwlock_clockrdlock(rw: RwLock, clk: c_int, t: Ts) => rd;
    "rsi" REAL_WRLOCK wrlock_impl fn pthread_rwlock_wrlock(rw: RwLock) => wr;
    "rsi" REAL_TRYWRLOCK trywrlock_impl fn pthread_rwlock_trywrlock(rw: RwLock) => wr;
    "rdx" REAL_TIMEDWRLOCK timedwrlock_impl fn pthread_rwlock_timedwrlock(rw: RwLock, t: Ts) => wr;
    "rcx" REAL_CLOCKWRLOCK clockwrlock_impl fn pthread_rwlock_clockwrlock(rw: RwLock, clk: c_int, t: Ts) => wr;
}

unsafe extern "C" fn rwunlock_impl(rw: RwLock, pc: usize) -> c_int {
    unlocking(rw as usize, pc);
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    unsafe { REAL_RWUNLOCK.get()(rw) }
}
hook!("rsi", fn pthread_rwlock_unlock(rw: RwLock) -> c_int => rwunlock_impl);

// ---------------------------------------------------------------------------------------
// Condition variables
// ---------------------------------------------------------------------------------------

type Cond = *mut libc::pthread_cond_t;

// SAFETY: the type is the C signature of the function named.
static REAL_COND_WAIT: Real<unsafe extern "C" fn(Cond, Mutex) -> c_int> =
    unsafe { Real::versioned(c"pthread_cond_wait", c"GLIBC_2.3.2") };
// SAFETY: the type is the C signature of the function named.
static REAL_COND_TIMEDWAIT: Real<unsafe extern "C" fn(Cond, Mutex, Ts) -> c_int> =
    unsafe { Real::versioned(c"pthread_cond_timedwait", c"GLIBC_2.3.2") };
// SAFETY: the type is the C signature of the function named.
static REAL_COND_CLOCKWAIT: Real<unsafe extern "C" fn(Cond, Mutex, c_int, Ts) -> c_int> =
    unsafe { Real::new(c"pthread_cond_clockwait") };

/// glibc's cleanup record (`struct _pthread_cleanup_buffer`, `<pthread.h>`).
#[repr(C)]
struct CleanupBuffer {
    routine: Option<unsafe extern "C" fn(*mut c_void)>,
    arg: *mut c_void,
    canceltype: c_int,
    prev: *mut CleanupBuffer,
}

unsafe extern "C" {
    // glibc's functions behind `pthread_cleanup_push` / `_pop` without exceptions: the
    // handlers run when a cancellation unwinds past the frame that pushed them.
    fn _pthread_cleanup_push(
        buf: *mut CleanupBuffer,
        routine: unsafe extern "C" fn(*mut c_void),
        arg: *mut c_void,
    );
    fn _pthread_cleanup_pop(buf: *mut CleanupBuffer, execute: c_int);
}

/// The mutex a condition wait re-acquires, and where.
struct Rewait {
    m: usize,
    pc: usize,
}

/// A cancelled condition wait re-acquires its mutex before the thread's cleanup handlers
/// run (which usually unlock it): record the `acq` there too.
unsafe extern "C" fn reacquired_on_cancel(arg: *mut c_void) {
    // SAFETY: `arg` is the `Rewait` of the `wait` frame being unwound, still alive.
    let r = unsafe { &*arg.cast::<Rewait>() };
    record(Kind::Acquire, ns::MEM, r.m, r.pc);
}

/// A condition wait on `m`: `rel(m)`, the wait (`wait`), `acq(m)` — also when the wait is
/// a cancellation point that the thread is cancelled at (a cleanup handler records the
/// `acq`, so the cleanup's unlock is well-formed).
///
/// This frame must own nothing with a destructor: a cancellation unwinds through it as
/// through a C frame.
#[inline(always)]
fn cond_wait_with(m: Mutex, pc: usize, wait: impl FnOnce() -> c_int) -> c_int {
    record(Kind::Release, ns::MEM, m as usize, pc);
    let mut rewait = Rewait { m: m as usize, pc };
    let mut cleanup = CleanupBuffer {
        routine: None,
        arg: core::ptr::null_mut(),
        canceltype: 0,
        prev: core::ptr::null_mut(),
    };
    // SAFETY: `cleanup` and `rewait` live until the matching pop below, or until a
    // cancellation unwinds this frame, which runs the handler first.
    unsafe {
        _pthread_cleanup_push(
            &mut cleanup,
            reacquired_on_cancel,
            (&mut rewait as *mut Rewait).cast(),
        )
    };
    let r = wait();
    // SAFETY: pops the record pushed above (not running it).
    unsafe { _pthread_cleanup_pop(&mut cleanup, 0) };
    record(Kind::Acquire, ns::MEM, m as usize, pc);
    r
}

unsafe extern "C" fn cond_wait_impl(c: Cond, m: Mutex, pc: usize) -> c_int {
    // SAFETY: the caller's arguments.
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    cond_wait_with(m, pc, || unsafe { REAL_COND_WAIT.get()(c, m) })
}
unsafe extern "C" fn cond_timedwait_impl(c: Cond, m: Mutex, t: Ts, pc: usize) -> c_int {
    // SAFETY: the caller's arguments.
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    cond_wait_with(m, pc, || unsafe { REAL_COND_TIMEDWAIT.get()(c, m, t) })
}
unsafe extern "C" fn cond_clockwait_impl(c: Cond, m: Mutex, clk: c_int, t: Ts, pc: usize) -> c_int {
    // SAFETY: the caller's arguments.
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    cond_wait_with(m, pc, || unsafe { REAL_COND_CLOCKWAIT.get()(c, m, clk, t) })
}
hook!("rdx", fn pthread_cond_wait(c: Cond, m: Mutex) -> c_int => cond_wait_impl);
hook!("rcx", fn pthread_cond_timedwait(c: Cond, m: Mutex, t: Ts) -> c_int => cond_timedwait_impl);
hook!("r8", fn pthread_cond_clockwait(c: Cond, m: Mutex, clk: c_int, t: Ts) -> c_int => cond_clockwait_impl);

// A program built with `-fsanitize=thread` was linked against gcc's libtsan, which defines
// every function it intercepts without a symbol version, so the program's references to
// them carry none. The loader binds an unversioned reference to a library's *oldest*
// version: for the functions below that is an old glibc ABI (`pthread_cond_*@GLIBC_2.2.5`
// uses another condition-variable layout than `pthread_cond_wait@GLIBC_2.3.2`; the old
// `realpath` rejects a null buffer …). These definitions forward to the current ones.
macro_rules! forward {
    ($($slot:ident = $real:expr; fn $name:ident($($a:ident: $t:ty),*) -> $r:ty;)*) => {$(
        // SAFETY: the type is the C signature of the function named.
        static $slot: Real<unsafe extern "C" fn($($t),*) -> $r> = unsafe { $real };
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($a: $t),*) -> $r {
            // SAFETY: the caller's arguments, passed on to the function it meant to call.
            unsafe { $slot.get()($($a),*) }
        }
    )*};
}
type P = *mut c_void;
forward! {
    REAL_COND_INIT = Real::versioned(c"pthread_cond_init", c"GLIBC_2.3.2");
        fn pthread_cond_init(c: Cond, attr: P) -> c_int;
    REAL_COND_DESTROY = Real::versioned(c"pthread_cond_destroy", c"GLIBC_2.3.2");
        fn pthread_cond_destroy(c: Cond) -> c_int;
    REAL_COND_SIGNAL = Real::versioned(c"pthread_cond_signal", c"GLIBC_2.3.2");
        fn pthread_cond_signal(c: Cond) -> c_int;
    REAL_COND_BROADCAST = Real::versioned(c"pthread_cond_broadcast", c"GLIBC_2.3.2");
        fn pthread_cond_broadcast(c: Cond) -> c_int;
    REAL_REALPATH = Real::new(c"realpath");
        fn realpath(path: P, resolved: P) -> P;
    REAL_REGEXEC = Real::new(c"regexec");
        fn regexec(re: P, s: P, n: usize, m: P, flags: c_int) -> c_int;
    REAL_GLOB = Real::new(c"glob");
        fn glob(pat: P, flags: c_int, err: P, g: P) -> c_int;
    REAL_GLOB64 = Real::new(c"glob64");
        fn glob64(pat: P, flags: c_int, err: P, g: P) -> c_int;
    REAL_FMEMOPEN = Real::new(c"fmemopen");
        fn fmemopen(b: P, n: usize, mode: P) -> P;
    REAL_POSIX_SPAWN = Real::new(c"posix_spawn");
        fn posix_spawn(pid: P, path: P, fa: P, attr: P, argv: P, envp: P) -> c_int;
    REAL_POSIX_SPAWNP = Real::new(c"posix_spawnp");
        fn posix_spawnp(pid: P, file: P, fa: P, attr: P, argv: P, envp: P) -> c_int;
}

// ---------------------------------------------------------------------------------------
// Barriers, semaphores, once
// ---------------------------------------------------------------------------------------

type Barrier = *mut libc::pthread_barrier_t;
type Sem = *mut libc::sem_t;

// SAFETY: the type is the C signature of the function named.
static REAL_BARRIER_WAIT: Real<unsafe extern "C" fn(Barrier) -> c_int> =
    unsafe { Real::new(c"pthread_barrier_wait") };
// SAFETY: the type is the C signature of the function named.
static REAL_SEM_WAIT: Real<unsafe extern "C" fn(Sem) -> c_int> = unsafe { Real::new(c"sem_wait") };
// SAFETY: the type is the C signature of the function named.
static REAL_SEM_TRYWAIT: Real<unsafe extern "C" fn(Sem) -> c_int> =
    unsafe { Real::new(c"sem_trywait") };
// SAFETY: the type is the C signature of the function named.
static REAL_SEM_TIMEDWAIT: Real<unsafe extern "C" fn(Sem, Ts) -> c_int> =
    unsafe { Real::new(c"sem_timedwait") };
// SAFETY: the type is the C signature of the function named.
static REAL_SEM_CLOCKWAIT: Real<unsafe extern "C" fn(Sem, c_int, Ts) -> c_int> =
    unsafe { Real::new(c"sem_clockwait") };
// SAFETY: the type is the C signature of the function named.
static REAL_SEM_POST: Real<unsafe extern "C" fn(Sem) -> c_int> = unsafe { Real::new(c"sem_post") };
// SAFETY: the type is the C signature of the function named.
static REAL_ONCE: Real<unsafe extern "C" fn(Once, extern "C" fn()) -> c_int> =
    unsafe { Real::new(c"pthread_once") };

// SAFETY: the type is the C signature of the function named.
static REAL_BARRIER_INIT: Real<unsafe extern "C" fn(Barrier, *const c_void, u32) -> c_int> =
    unsafe { Real::new(c"pthread_barrier_init") };

/// A barrier's rounds. One variable for every round would let a thread that leaves round
/// `g` late (its `vr` after the real wait returned) join what a faster thread wrote at
/// round `g + 1` (its `vw` before it waits again): the faster thread's accesses between the
/// two rounds would seem to happen before the slower one's, and a race between them be
/// missed. So round `g` uses the variable `barrier:b` if `g` is even and `barrier:b+1` if
/// odd. Two suffice: a thread writes round `g + 2`'s only after every thread of round
/// `g + 1` arrived, each after its `vr` of round `g`. The round of an arrival is its number
/// (counted here, before the real wait) divided by the barrier's count (kept at
/// `pthread_barrier_init`): every arrival of round `g` comes before any of round `g + 1`.
/// A barrier whose count is not known (more than `BARRIERS` initialised) keeps one
/// variable for every round: a late leaver may then be ordered after the next round's
/// arrivals (races hidden, none invented).
struct BarrierSlot {
    addr: AtomicUsize,
    count: AtomicU32,
    arrivals: AtomicUsize,
}

const BARRIERS: usize = 1024;
static BARRIER_ROUNDS: [BarrierSlot; BARRIERS] = [const {
    BarrierSlot {
        addr: AtomicUsize::new(0),
        count: AtomicU32::new(0),
        arrivals: AtomicUsize::new(0),
    }
}; BARRIERS];

/// The slot of barrier `b`: the one holding it, or (`make`) a free one taken for it.
fn barrier_slot(b: usize, make: bool) -> Option<&'static BarrierSlot> {
    let start = (b >> 5).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54;
    for i in 0..BARRIERS {
        let s = &BARRIER_ROUNDS[(start + i) & (BARRIERS - 1)];
        match s.addr.load(Ordering::Acquire) {
            a if a == b => return Some(s),
            0 if make => match s
                .addr
                .compare_exchange(0, b, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(s),
                Err(a) if a == b => return Some(s),
                Err(_) => {}
            },
            0 => return None,
            _ => {}
        }
    }
    None
}

unsafe extern "C" fn barrier_init_impl(
    b: Barrier,
    attr: *const c_void,
    count: u32,
    _pc: usize,
) -> c_int {
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    let r = unsafe { REAL_BARRIER_INIT.get()(b, attr, count) };
    if r == 0 {
        match barrier_slot(b as usize, true) {
            Some(s) => {
                // Before the barrier is used (its initialisation happens before its waits).
                s.count.store(count, Ordering::Relaxed);
                s.arrivals.store(0, Ordering::Release);
            }
            None => crate::buf::say(
                b"racepred-rt: more than 1024 barriers: the rounds of the others are not told apart\n",
            ),
        }
    }
    r
}
hook!("rcx", fn pthread_barrier_init(b: Barrier, attr: *const c_void, count: u32) -> c_int => barrier_init_impl);

/// The variable of the round barrier `b` is arriving at: `b` or `b + 1` (see
/// [`BarrierSlot`]).
fn barrier_round_var(b: usize) -> usize {
    match barrier_slot(b, false) {
        Some(s) => {
            let count = s.count.load(Ordering::Relaxed).max(1) as usize;
            let i = s.arrivals.fetch_add(1, Ordering::AcqRel);
            b + (i / count) % 2
        }
        None => b,
    }
}

unsafe extern "C" fn barrier_wait_impl(b: Barrier, pc: usize) -> c_int {
    // Every arrival counts, recorded or not, or the rounds would be miscounted.
    let var = barrier_round_var(b as usize);
    record(Kind::VWrite, ns::BARRIER, var, pc);
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    let r = unsafe { REAL_BARRIER_WAIT.get()(b) };
    if r == 0 || r == libc::PTHREAD_BARRIER_SERIAL_THREAD {
        record(Kind::VRead, ns::BARRIER, var, pc);
    }
    r
}
hook!("rsi", fn pthread_barrier_wait(b: Barrier) -> c_int => barrier_wait_impl);

fn sem_done(s: Sem, r: c_int, pc: usize) -> c_int {
    if r == 0 {
        record(Kind::VRead, ns::SEM, s as usize, pc);
    }
    r
}
unsafe extern "C" fn sem_wait_impl(s: Sem, pc: usize) -> c_int {
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    let r = unsafe { REAL_SEM_WAIT.get()(s) };
    sem_done(s, r, pc)
}
unsafe extern "C" fn sem_trywait_impl(s: Sem, pc: usize) -> c_int {
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    let r = unsafe { REAL_SEM_TRYWAIT.get()(s) };
    sem_done(s, r, pc)
}
unsafe extern "C" fn sem_timedwait_impl(s: Sem, t: Ts, pc: usize) -> c_int {
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    let r = unsafe { REAL_SEM_TIMEDWAIT.get()(s, t) };
    sem_done(s, r, pc)
}
unsafe extern "C" fn sem_clockwait_impl(s: Sem, clk: c_int, t: Ts, pc: usize) -> c_int {
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    let r = unsafe { REAL_SEM_CLOCKWAIT.get()(s, clk, t) };
    sem_done(s, r, pc)
}
unsafe extern "C" fn sem_post_impl(s: Sem, pc: usize) -> c_int {
    record(Kind::VWrite, ns::SEM, s as usize, pc);
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    unsafe { REAL_SEM_POST.get()(s) }
}
hook!("rsi", fn sem_wait(s: Sem) -> c_int => sem_wait_impl);
hook!("rsi", fn sem_trywait(s: Sem) -> c_int => sem_trywait_impl);
hook!("rdx", fn sem_timedwait(s: Sem, t: Ts) -> c_int => sem_timedwait_impl);
hook!("rcx", fn sem_clockwait(s: Sem, clk: c_int, t: Ts) -> c_int => sem_clockwait_impl);
hook!("rsi", fn sem_post(s: Sem) -> c_int => sem_post_impl);

type Once = *mut libc::pthread_once_t;

/// Runs the routine of the `pthread_once` in progress on this thread (passed through TLS:
/// a once routine takes no argument), then publishes its effects.
extern "C" fn once_trampoline() {
    let (f, ctl, pc) = TLS.with(|t| (t.once_routine.get(), t.once_control.get(), t.once_pc.get()));
    if let Some(f) = f {
        f();
    }
    record(Kind::VWrite, ns::ONCE, ctl, pc);
}

unsafe extern "C" fn once_impl(ctl: Once, f: extern "C" fn(), pc: usize) -> c_int {
    let real = REAL_ONCE.get();
    if passthrough() {
        // SAFETY: the caller's arguments, passed on to the function it meant to call.
        return unsafe { real(ctl, f) };
    }
    // Nested `pthread_once` calls (a routine calling another) restore the outer state.
    let saved = TLS.with(|t| {
        let s = (t.once_routine.get(), t.once_control.get(), t.once_pc.get());
        t.once_routine.set(Some(f));
        t.once_control.set(ctl as usize);
        t.once_pc.set(pc);
        s
    });
    // SAFETY: the caller's control; the routine is ours, which runs the caller's.
    let r = unsafe { real(ctl, once_trampoline) };
    TLS.with(|t| {
        t.once_routine.set(saved.0);
        t.once_control.set(saved.1);
        t.once_pc.set(saved.2);
    });
    if r == 0 {
        record(Kind::VRead, ns::ONCE, ctl as usize, pc);
    }
    r
}
hook!("rdx", fn pthread_once(ctl: Once, f: extern "C" fn()) -> c_int => once_impl);

// C++ function-local statics: the compiler's inline check of the guard byte is an
// instrumented acquire load (`vr(g)`); the guard is set inside libstdc++ (not
// instrumented), so its release is recorded here.
// SAFETY: the type is the C signature of the function named.
static REAL_GUARD_ACQUIRE: Real<unsafe extern "C" fn(*mut u64) -> c_int> =
    unsafe { Real::new(c"__cxa_guard_acquire") };
// SAFETY: the type is the C signature of the function named.
static REAL_GUARD_RELEASE: Real<unsafe extern "C" fn(*mut u64)> =
    unsafe { Real::new(c"__cxa_guard_release") };

unsafe extern "C" fn guard_acquire_impl(g: *mut u64, pc: usize) -> c_int {
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    let r = unsafe { REAL_GUARD_ACQUIRE.get()(g) };
    if r == 0 {
        // Already initialised: this thread sees the initialiser's writes.
        record(Kind::VRead, ns::MEM, g as usize, pc);
    }
    r
}
unsafe extern "C" fn guard_release_impl(g: *mut u64, pc: usize) {
    record(Kind::VWrite, ns::MEM, g as usize, pc);
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    unsafe { REAL_GUARD_RELEASE.get()(g) }
}
hook!("rsi", fn __cxa_guard_acquire(g: *mut u64) -> c_int => guard_acquire_impl);
hook!("rsi", fn __cxa_guard_release(g: *mut u64) => guard_release_impl);

// ---------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------

/// `free`: a write of the block's variables at the call (so an access another thread makes
/// without synchronising with the free races with it: a use after free, or a free racing
/// with a use), then the block's addresses hold new variables (stamped before the block can
/// be reused). `__libc_free` is glibc's public name of its allocator's `free`.
unsafe extern "C" fn free_impl(p: *mut c_void, pc: usize) {
    if !p.is_null() {
        // SAFETY: `p` is a live block of malloc's (the caller frees it).
        free_block(p as usize, unsafe { malloc_usable_size(p) }, pc);
    }
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    unsafe { __libc_free(p) }
}
hook!("rsi", fn free(p: *mut c_void) => free_impl);

/// `realloc`: the old block is freed (written and retired) before the call, whether it
/// moves or not (a block grown in place then holds new variables: possibly a missed race
/// across the `realloc`, never a false one). `realloc(p, 0)` frees too.
unsafe extern "C" fn realloc_impl(p: *mut c_void, n: usize, pc: usize) -> *mut c_void {
    if !p.is_null() {
        // SAFETY: `p` is a live block of malloc's (the caller reallocates it).
        free_block(p as usize, unsafe { malloc_usable_size(p) }, pc);
    }
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    unsafe { __libc_realloc(p, n) }
}
hook!("rdx", fn realloc(p: *mut c_void, n: usize) -> *mut c_void => realloc_impl);

/// C++ `operator delete` (plain and sized, single and array): a free at the `delete`
/// expression (libstdc++'s own `free` call would name a line inside libstdc++), then the
/// block goes straight back to the allocator as libstdc++'s `operator delete` does.
unsafe extern "C" fn delete_sized_impl(p: *mut c_void, _size: usize, pc: usize) {
    // SAFETY: the caller's arguments, passed on to the function it meant to call.
    unsafe { free_impl(p, pc) }
}
hook!("rsi", fn _ZdlPv(p: *mut c_void) => free_impl);
hook!("rsi", fn _ZdaPv(p: *mut c_void) => free_impl);
hook!("rdx", fn _ZdlPvm(p: *mut c_void, size: usize) => delete_sized_impl);
hook!("rdx", fn _ZdaPvm(p: *mut c_void, size: usize) => delete_sized_impl);
