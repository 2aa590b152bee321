//! Interposed synchronisation: threads, mutexes, rwlocks, spin locks, condition variables,
//! barriers, semaphores, `pthread_once`, C++ static-initialisation guards, `free` /
//! `realloc`, and `_exit`.
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
//! | cond wait, timedwait, clockwait | `rel(m)`, the real wait, `acq(m)` |
//! | barrier wait | `vw(barrier:b)` before, `vr(barrier:b)` after |
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

use core::ffi::{c_int, c_void, CStr};
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use libc::pthread_t;

use crate::buf::{self, free_block, ns, push_now, record, retire, with_buf, Kind, FINISHED, TLS};
use crate::tramp::hook;

unsafe extern "C" {
    fn __libc_free(p: *mut c_void);
    fn __libc_realloc(p: *mut c_void, n: usize) -> *mut c_void;
    fn malloc_usable_size(p: *mut c_void) -> usize;
}

/// A real function, found on first use.
pub struct Real {
    addr: AtomicUsize,
    name: &'static CStr,
    version: Option<&'static CStr>,
}

impl Real {
    pub const fn new(name: &'static CStr) -> Real {
        Real {
            addr: AtomicUsize::new(0),
            name,
            version: None,
        }
    }
    pub const fn versioned(name: &'static CStr, version: &'static CStr) -> Real {
        Real {
            addr: AtomicUsize::new(0),
            name,
            version: Some(version),
        }
    }
    #[inline]
    pub fn get(&self) -> usize {
        match self.addr.load(Ordering::Relaxed) {
            0 => self.resolve(),
            a => a,
        }
    }
    #[cold]
    #[inline(never)]
    fn resolve(&self) -> usize {
        let p = unsafe {
            match self.version {
                Some(v) => libc::dlvsym(libc::RTLD_NEXT, self.name.as_ptr(), v.as_ptr()),
                None => libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()),
            }
        };
        if p.is_null() {
            buf::say(b"racepred-rt: cannot find the real ");
            buf::say(self.name.to_bytes());
            buf::die(b"\n");
        }
        self.addr.store(p as usize, Ordering::Relaxed);
        p as usize
    }
}

/// `real!(NAME: fn(args) -> ret)` = the real function as a typed pointer.
macro_rules! real {
    ($slot:ident: fn($($t:ty),*) -> $r:ty) => {
        core::mem::transmute::<usize, unsafe extern "C" fn($($t),*) -> $r>($slot.get())
    };
}

/// Whether the calling thread is inside the runtime (or the trace is being written): then
/// an interposed call only forwards.
fn passthrough() -> bool {
    FINISHED.load(Ordering::Relaxed) || TLS.with(|t| t.busy.get())
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

static REAL_CREATE: Real = Real::new(c"pthread_create");

unsafe extern "C" fn create_impl(
    th: *mut pthread_t,
    attr: *const libc::pthread_attr_t,
    f: StartFn,
    arg: *mut c_void,
    pc: usize,
) -> c_int {
    let real = real!(REAL_CREATE: fn(*mut pthread_t, *const libc::pthread_attr_t, StartFn, *mut c_void) -> c_int);
    if passthrough() {
        return real(th, attr, f, arg);
    }
    let sa = libc::malloc(core::mem::size_of::<StartArg>()) as *mut StartArg;
    if sa.is_null() {
        return libc::EAGAIN;
    }
    buf::ensure_buf();
    let tid = buf::new_tid();
    sa.write(StartArg { f, arg, tid });
    // Before the thread exists, so the fork precedes all its events.
    record(Kind::Fork, ns::MEM, tid as usize, pc);
    let r = real(th, attr, start_thread, sa.cast());
    if r != 0 {
        __libc_free(sa.cast());
    }
    r
}
hook!("r8", fn pthread_create(th: *mut pthread_t, attr: *const libc::pthread_attr_t, f: StartFn, arg: *mut c_void) -> c_int => create_impl);

extern "C" fn start_thread(sa: *mut c_void) -> *mut c_void {
    let StartArg { f, arg, tid } = unsafe { sa.cast::<StartArg>().read() };
    unsafe { __libc_free(sa) };
    TLS.with(|t| buf::create_buf(t, tid));
    register_thread(unsafe { libc::pthread_self() } as usize, tid);
    // A stack (and static TLS block) of an ended thread may be reused: its addresses are
    // new variables for this thread.
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

static REAL_JOIN: Real = Real::new(c"pthread_join");
static REAL_TRYJOIN: Real = Real::new(c"pthread_tryjoin_np");
static REAL_TIMEDJOIN: Real = Real::new(c"pthread_timedjoin_np");
static REAL_CLOCKJOIN: Real = Real::new(c"pthread_clockjoin_np");

unsafe extern "C" fn join_impl(th: pthread_t, ret: *mut *mut c_void, pc: usize) -> c_int {
    joined(
        th,
        real!(REAL_JOIN: fn(pthread_t, *mut *mut c_void) -> c_int)(th, ret),
        pc,
    )
}
unsafe extern "C" fn tryjoin_impl(th: pthread_t, ret: *mut *mut c_void, pc: usize) -> c_int {
    joined(
        th,
        real!(REAL_TRYJOIN: fn(pthread_t, *mut *mut c_void) -> c_int)(th, ret),
        pc,
    )
}
unsafe extern "C" fn timedjoin_impl(
    th: pthread_t,
    ret: *mut *mut c_void,
    t: *const libc::timespec,
    pc: usize,
) -> c_int {
    joined(
        th,
        real!(REAL_TIMEDJOIN: fn(pthread_t, *mut *mut c_void, *const libc::timespec) -> c_int)(
            th, ret, t,
        ),
        pc,
    )
}
unsafe extern "C" fn clockjoin_impl(
    th: pthread_t,
    ret: *mut *mut c_void,
    clk: c_int,
    t: *const libc::timespec,
    pc: usize,
) -> c_int {
    joined(
        th,
        real!(REAL_CLOCKJOIN: fn(pthread_t, *mut *mut c_void, c_int, *const libc::timespec) -> c_int)(
            th, ret, clk, t,
        ),
        pc,
    )
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

static REAL_MUTEX_LOCK: Real = Real::new(c"pthread_mutex_lock");
static REAL_MUTEX_TRYLOCK: Real = Real::new(c"pthread_mutex_trylock");
static REAL_MUTEX_TIMEDLOCK: Real = Real::new(c"pthread_mutex_timedlock");
static REAL_MUTEX_CLOCKLOCK: Real = Real::new(c"pthread_mutex_clocklock");
static REAL_MUTEX_UNLOCK: Real = Real::new(c"pthread_mutex_unlock");
static REAL_SPIN_LOCK: Real = Real::new(c"pthread_spin_lock");
static REAL_SPIN_TRYLOCK: Real = Real::new(c"pthread_spin_trylock");
static REAL_SPIN_UNLOCK: Real = Real::new(c"pthread_spin_unlock");

type Mutex = *mut libc::pthread_mutex_t;
type Spin = *mut libc::pthread_spinlock_t;

unsafe extern "C" fn mutex_lock_impl(m: Mutex, pc: usize) -> c_int {
    acquired(
        m as usize,
        real!(REAL_MUTEX_LOCK: fn(Mutex) -> c_int)(m),
        pc,
    )
}
unsafe extern "C" fn mutex_trylock_impl(m: Mutex, pc: usize) -> c_int {
    acquired(
        m as usize,
        real!(REAL_MUTEX_TRYLOCK: fn(Mutex) -> c_int)(m),
        pc,
    )
}
unsafe extern "C" fn mutex_timedlock_impl(m: Mutex, t: *const libc::timespec, pc: usize) -> c_int {
    acquired(
        m as usize,
        real!(REAL_MUTEX_TIMEDLOCK: fn(Mutex, *const libc::timespec) -> c_int)(m, t),
        pc,
    )
}
unsafe extern "C" fn mutex_clocklock_impl(
    m: Mutex,
    clk: c_int,
    t: *const libc::timespec,
    pc: usize,
) -> c_int {
    acquired(
        m as usize,
        real!(REAL_MUTEX_CLOCKLOCK: fn(Mutex, c_int, *const libc::timespec) -> c_int)(m, clk, t),
        pc,
    )
}
unsafe extern "C" fn mutex_unlock_impl(m: Mutex, pc: usize) -> c_int {
    record(Kind::Release, ns::MEM, m as usize, pc);
    real!(REAL_MUTEX_UNLOCK: fn(Mutex) -> c_int)(m)
}
hook!("rsi", fn pthread_mutex_lock(m: Mutex) -> c_int => mutex_lock_impl);
hook!("rsi", fn pthread_mutex_trylock(m: Mutex) -> c_int => mutex_trylock_impl);
hook!("rdx", fn pthread_mutex_timedlock(m: Mutex, t: *const libc::timespec) -> c_int => mutex_timedlock_impl);
hook!("rcx", fn pthread_mutex_clocklock(m: Mutex, clk: c_int, t: *const libc::timespec) -> c_int => mutex_clocklock_impl);
hook!("rsi", fn pthread_mutex_unlock(m: Mutex) -> c_int => mutex_unlock_impl);

unsafe extern "C" fn spin_lock_impl(s: Spin, pc: usize) -> c_int {
    acquired(s as usize, real!(REAL_SPIN_LOCK: fn(Spin) -> c_int)(s), pc)
}
unsafe extern "C" fn spin_trylock_impl(s: Spin, pc: usize) -> c_int {
    acquired(
        s as usize,
        real!(REAL_SPIN_TRYLOCK: fn(Spin) -> c_int)(s),
        pc,
    )
}
unsafe extern "C" fn spin_unlock_impl(s: Spin, pc: usize) -> c_int {
    record(Kind::Release, ns::MEM, s as usize, pc);
    real!(REAL_SPIN_UNLOCK: fn(Spin) -> c_int)(s)
}
hook!("rsi", fn pthread_spin_lock(s: Spin) -> c_int => spin_lock_impl);
hook!("rsi", fn pthread_spin_trylock(s: Spin) -> c_int => spin_trylock_impl);
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
    with_buf(|b| unsafe {
        push_now(b, Kind::Acquire, ns::MEM, rw, pc);
        push_now(b, Kind::VRead, ns::RW_R, rw, pc);
        (*b).push_write_held(rw);
    });
}

/// `rw` is about to be unlocked by this thread, as a writer if it holds it so.
pub fn unlocking(rw: usize, pc: usize) {
    with_buf(|b| unsafe {
        if (*b).take_write_held(rw) {
            push_now(b, Kind::VWrite, ns::RW_W, rw, pc);
            push_now(b, Kind::Release, ns::MEM, rw, pc);
        } else {
            push_now(b, Kind::VWrite, ns::RW_R, rw, pc);
        }
    });
}

type RwLock = *mut libc::pthread_rwlock_t;
type Ts = *const libc::timespec;

static REAL_RDLOCK: Real = Real::new(c"pthread_rwlock_rdlock");
static REAL_TRYRDLOCK: Real = Real::new(c"pthread_rwlock_tryrdlock");
static REAL_TIMEDRDLOCK: Real = Real::new(c"pthread_rwlock_timedrdlock");
static REAL_CLOCKRDLOCK: Real = Real::new(c"pthread_rwlock_clockrdlock");
static REAL_WRLOCK: Real = Real::new(c"pthread_rwlock_wrlock");
static REAL_TRYWRLOCK: Real = Real::new(c"pthread_rwlock_trywrlock");
static REAL_TIMEDWRLOCK: Real = Real::new(c"pthread_rwlock_timedwrlock");
static REAL_CLOCKWRLOCK: Real = Real::new(c"pthread_rwlock_clockwrlock");
static REAL_RWUNLOCK: Real = Real::new(c"pthread_rwlock_unlock");

fn rd(rw: RwLock, r: c_int, pc: usize) -> c_int {
    if r == 0 {
        read_locked(rw as usize, pc);
    }
    r
}
fn wr(rw: RwLock, r: c_int, pc: usize) -> c_int {
    if r == 0 {
        write_locked(rw as usize, pc);
    }
    r
}

unsafe extern "C" fn rdlock_impl(rw: RwLock, pc: usize) -> c_int {
    rd(rw, real!(REAL_RDLOCK: fn(RwLock) -> c_int)(rw), pc)
}
unsafe extern "C" fn tryrdlock_impl(rw: RwLock, pc: usize) -> c_int {
    rd(rw, real!(REAL_TRYRDLOCK: fn(RwLock) -> c_int)(rw), pc)
}
unsafe extern "C" fn timedrdlock_impl(rw: RwLock, t: Ts, pc: usize) -> c_int {
    rd(
        rw,
        real!(REAL_TIMEDRDLOCK: fn(RwLock, Ts) -> c_int)(rw, t),
        pc,
    )
}
unsafe extern "C" fn clockrdlock_impl(rw: RwLock, clk: c_int, t: Ts, pc: usize) -> c_int {
    rd(
        rw,
        real!(REAL_CLOCKRDLOCK: fn(RwLock, c_int, Ts) -> c_int)(rw, clk, t),
        pc,
    )
}
unsafe extern "C" fn wrlock_impl(rw: RwLock, pc: usize) -> c_int {
    wr(rw, real!(REAL_WRLOCK: fn(RwLock) -> c_int)(rw), pc)
}
unsafe extern "C" fn trywrlock_impl(rw: RwLock, pc: usize) -> c_int {
    wr(rw, real!(REAL_TRYWRLOCK: fn(RwLock) -> c_int)(rw), pc)
}
unsafe extern "C" fn timedwrlock_impl(rw: RwLock, t: Ts, pc: usize) -> c_int {
    wr(
        rw,
        real!(REAL_TIMEDWRLOCK: fn(RwLock, Ts) -> c_int)(rw, t),
        pc,
    )
}
unsafe extern "C" fn clockwrlock_impl(rw: RwLock, clk: c_int, t: Ts, pc: usize) -> c_int {
    wr(
        rw,
        real!(REAL_CLOCKWRLOCK: fn(RwLock, c_int, Ts) -> c_int)(rw, clk, t),
        pc,
    )
}
unsafe extern "C" fn rwunlock_impl(rw: RwLock, pc: usize) -> c_int {
    unlocking(rw as usize, pc);
    real!(REAL_RWUNLOCK: fn(RwLock) -> c_int)(rw)
}
hook!("rsi", fn pthread_rwlock_rdlock(rw: RwLock) -> c_int => rdlock_impl);
hook!("rsi", fn pthread_rwlock_tryrdlock(rw: RwLock) -> c_int => tryrdlock_impl);
hook!("rdx", fn pthread_rwlock_timedrdlock(rw: RwLock, t: Ts) -> c_int => timedrdlock_impl);
hook!("rcx", fn pthread_rwlock_clockrdlock(rw: RwLock, clk: c_int, t: Ts) -> c_int => clockrdlock_impl);
hook!("rsi", fn pthread_rwlock_wrlock(rw: RwLock) -> c_int => wrlock_impl);
hook!("rsi", fn pthread_rwlock_trywrlock(rw: RwLock) -> c_int => trywrlock_impl);
hook!("rdx", fn pthread_rwlock_timedwrlock(rw: RwLock, t: Ts) -> c_int => timedwrlock_impl);
hook!("rcx", fn pthread_rwlock_clockwrlock(rw: RwLock, clk: c_int, t: Ts) -> c_int => clockwrlock_impl);
hook!("rsi", fn pthread_rwlock_unlock(rw: RwLock) -> c_int => rwunlock_impl);

// ---------------------------------------------------------------------------------------
// Condition variables
// ---------------------------------------------------------------------------------------

type Cond = *mut libc::pthread_cond_t;

static REAL_COND_WAIT: Real = Real::versioned(c"pthread_cond_wait", c"GLIBC_2.3.2");
static REAL_COND_TIMEDWAIT: Real = Real::versioned(c"pthread_cond_timedwait", c"GLIBC_2.3.2");
static REAL_COND_CLOCKWAIT: Real = Real::new(c"pthread_cond_clockwait");

unsafe extern "C" fn cond_wait_impl(c: Cond, m: Mutex, pc: usize) -> c_int {
    record(Kind::Release, ns::MEM, m as usize, pc);
    let r = real!(REAL_COND_WAIT: fn(Cond, Mutex) -> c_int)(c, m);
    record(Kind::Acquire, ns::MEM, m as usize, pc);
    r
}
unsafe extern "C" fn cond_timedwait_impl(c: Cond, m: Mutex, t: Ts, pc: usize) -> c_int {
    record(Kind::Release, ns::MEM, m as usize, pc);
    let r = real!(REAL_COND_TIMEDWAIT: fn(Cond, Mutex, Ts) -> c_int)(c, m, t);
    record(Kind::Acquire, ns::MEM, m as usize, pc);
    r
}
unsafe extern "C" fn cond_clockwait_impl(c: Cond, m: Mutex, clk: c_int, t: Ts, pc: usize) -> c_int {
    record(Kind::Release, ns::MEM, m as usize, pc);
    let r = real!(REAL_COND_CLOCKWAIT: fn(Cond, Mutex, c_int, Ts) -> c_int)(c, m, clk, t);
    record(Kind::Acquire, ns::MEM, m as usize, pc);
    r
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
        static $slot: Real = $real;
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($a: $t),*) -> $r {
            real!($slot: fn($($t),*) -> $r)($($a),*)
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

static REAL_BARRIER_WAIT: Real = Real::new(c"pthread_barrier_wait");
static REAL_SEM_WAIT: Real = Real::new(c"sem_wait");
static REAL_SEM_TRYWAIT: Real = Real::new(c"sem_trywait");
static REAL_SEM_TIMEDWAIT: Real = Real::new(c"sem_timedwait");
static REAL_SEM_CLOCKWAIT: Real = Real::new(c"sem_clockwait");
static REAL_SEM_POST: Real = Real::new(c"sem_post");
static REAL_ONCE: Real = Real::new(c"pthread_once");

unsafe extern "C" fn barrier_wait_impl(b: Barrier, pc: usize) -> c_int {
    record(Kind::VWrite, ns::BARRIER, b as usize, pc);
    let r = real!(REAL_BARRIER_WAIT: fn(Barrier) -> c_int)(b);
    if r == 0 || r == libc::PTHREAD_BARRIER_SERIAL_THREAD {
        record(Kind::VRead, ns::BARRIER, b as usize, pc);
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
    sem_done(s, real!(REAL_SEM_WAIT: fn(Sem) -> c_int)(s), pc)
}
unsafe extern "C" fn sem_trywait_impl(s: Sem, pc: usize) -> c_int {
    sem_done(s, real!(REAL_SEM_TRYWAIT: fn(Sem) -> c_int)(s), pc)
}
unsafe extern "C" fn sem_timedwait_impl(s: Sem, t: Ts, pc: usize) -> c_int {
    sem_done(s, real!(REAL_SEM_TIMEDWAIT: fn(Sem, Ts) -> c_int)(s, t), pc)
}
unsafe extern "C" fn sem_clockwait_impl(s: Sem, clk: c_int, t: Ts, pc: usize) -> c_int {
    sem_done(
        s,
        real!(REAL_SEM_CLOCKWAIT: fn(Sem, c_int, Ts) -> c_int)(s, clk, t),
        pc,
    )
}
unsafe extern "C" fn sem_post_impl(s: Sem, pc: usize) -> c_int {
    record(Kind::VWrite, ns::SEM, s as usize, pc);
    real!(REAL_SEM_POST: fn(Sem) -> c_int)(s)
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
    let f: extern "C" fn() = unsafe { core::mem::transmute::<usize, extern "C" fn()>(f) };
    f();
    record(Kind::VWrite, ns::ONCE, ctl, pc);
}

unsafe extern "C" fn once_impl(ctl: Once, f: extern "C" fn(), pc: usize) -> c_int {
    let real = real!(REAL_ONCE: fn(Once, extern "C" fn()) -> c_int);
    if passthrough() {
        return real(ctl, f);
    }
    // Nested `pthread_once` calls (a routine calling another) restore the outer state.
    let saved = TLS.with(|t| {
        let s = (t.once_routine.get(), t.once_control.get(), t.once_pc.get());
        t.once_routine.set(f as usize);
        t.once_control.set(ctl as usize);
        t.once_pc.set(pc);
        s
    });
    let r = real(ctl, once_trampoline);
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
static REAL_GUARD_ACQUIRE: Real = Real::new(c"__cxa_guard_acquire");
static REAL_GUARD_RELEASE: Real = Real::new(c"__cxa_guard_release");

unsafe extern "C" fn guard_acquire_impl(g: *mut u64, pc: usize) -> c_int {
    let r = real!(REAL_GUARD_ACQUIRE: fn(*mut u64) -> c_int)(g);
    if r == 0 {
        // Already initialised: this thread sees the initialiser's writes.
        record(Kind::VRead, ns::MEM, g as usize, pc);
    }
    r
}
unsafe extern "C" fn guard_release_impl(g: *mut u64, pc: usize) {
    record(Kind::VWrite, ns::MEM, g as usize, pc);
    real!(REAL_GUARD_RELEASE: fn(*mut u64) -> ())(g)
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
        free_block(p as usize, malloc_usable_size(p), pc);
    }
    __libc_free(p)
}
hook!("rsi", fn free(p: *mut c_void) => free_impl);

/// `realloc`: the old block is freed (written and retired) before the call, whether it
/// moves or not (a block grown in place then holds new variables: possibly a missed race
/// across the `realloc`, never a false one). `realloc(p, 0)` frees too.
unsafe extern "C" fn realloc_impl(p: *mut c_void, n: usize, pc: usize) -> *mut c_void {
    if !p.is_null() {
        free_block(p as usize, malloc_usable_size(p), pc);
    }
    __libc_realloc(p, n)
}
hook!("rdx", fn realloc(p: *mut c_void, n: usize) -> *mut c_void => realloc_impl);

/// C++ `operator delete` (plain and sized, single and array): a free at the `delete`
/// expression (libstdc++'s own `free` call would name a line inside libstdc++), then the
/// block goes straight back to the allocator as libstdc++'s `operator delete` does.
unsafe extern "C" fn delete_sized_impl(p: *mut c_void, _size: usize, pc: usize) {
    free_impl(p, pc)
}
hook!("rsi", fn _ZdlPv(p: *mut c_void) => free_impl);
hook!("rsi", fn _ZdaPv(p: *mut c_void) => free_impl);
hook!("rdx", fn _ZdlPvm(p: *mut c_void, size: usize) => delete_sized_impl);
hook!("rdx", fn _ZdaPvm(p: *mut c_void, size: usize) => delete_sized_impl);

// ---------------------------------------------------------------------------------------
// Process end
// ---------------------------------------------------------------------------------------

static REAL_EXIT: Real = Real::new(c"_exit");
static REAL_ABORT: Real = Real::new(c"abort");

/// `_exit` skips `atexit` handlers and destructors: write the trace first.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _exit(status: c_int) -> ! {
    crate::finish::finish();
    real!(REAL_EXIT: fn(c_int) -> !)(status)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn _Exit(status: c_int) -> ! {
    crate::finish::finish();
    real!(REAL_EXIT: fn(c_int) -> !)(status)
}

/// A direct call of `abort` (glibc's `assert` calls its internal one, not this): write the
/// trace, then abort.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn abort() -> ! {
    crate::finish::finish();
    real!(REAL_ABORT: fn() -> !)()
}
