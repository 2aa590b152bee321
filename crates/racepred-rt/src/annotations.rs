//! The public annotation interface of ThreadSanitizer (`sanitizer/tsan_interface.h`), for
//! programs that describe their own synchronisation.
//!
//! - `__tsan_release(a)` / `__tsan_acquire(a)`: `vw` / `vr` of `sync:a`.
//! - `__tsan_mutex_*`: a custom mutex at `a` is recorded like a rwlock of `sync.rs` (a
//!   write lock is `acq(a)`, a read lock a `vr`), so annotated mutexes and reader-writer
//!   locks both work. A `__tsan_mutex_recursive_unlock` releases one level only (the
//!   runtime does not count recursion), so fully releasing a recursive mutex that is held
//!   several times leaves it held in the trace.
//! - Fibers (`__tsan_create_fiber` …) are not supported: calling one ends the program with
//!   a message, rather than recording a trace that mixes fibers into one thread.

use core::ffi::{c_char, c_uint, c_void};

use crate::buf::{self, ns, record, Kind};
use crate::sync::{read_locked, unlocking, write_locked};
use crate::tramp::hook;

unsafe extern "C" fn acquire_impl(a: *mut c_void, pc: usize) {
    record(Kind::VRead, ns::ANNOTATION, a as usize, pc);
}
unsafe extern "C" fn release_impl(a: *mut c_void, pc: usize) {
    record(Kind::VWrite, ns::ANNOTATION, a as usize, pc);
}
hook!("rsi", fn __tsan_acquire(a: *mut c_void) => acquire_impl);
hook!("rsi", fn __tsan_release(a: *mut c_void) => release_impl);

const READ_LOCK: c_uint = 1 << 3;
const TRY_LOCK_FAILED: c_uint = 1 << 5;
const RECURSIVE_LOCK: c_uint = 1 << 6;

unsafe extern "C" fn mutex_post_lock_impl(
    m: *mut c_void,
    flags: c_uint,
    recursion: i32,
    pc: usize,
) {
    if flags & TRY_LOCK_FAILED != 0 {
        return;
    }
    if flags & READ_LOCK != 0 {
        read_locked(m as usize, pc);
        return;
    }
    let n = if flags & RECURSIVE_LOCK != 0 {
        recursion.max(1)
    } else {
        1
    };
    for _ in 0..n {
        write_locked(m as usize, pc);
    }
}
unsafe extern "C" fn mutex_pre_unlock_impl(m: *mut c_void, _flags: c_uint, pc: usize) -> i32 {
    unlocking(m as usize, pc);
    0
}
hook!("rcx", fn __tsan_mutex_post_lock(m: *mut c_void, flags: c_uint, recursion: i32) => mutex_post_lock_impl);
hook!("rdx", fn __tsan_mutex_pre_unlock(m: *mut c_void, flags: c_uint) -> i32 => mutex_pre_unlock_impl);

macro_rules! nothing {
    ($($name:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($(_: $ty),*) {}
    )*};
}
nothing! {
    __tsan_mutex_create(m: *mut c_void, f: c_uint),
    __tsan_mutex_destroy(m: *mut c_void, f: c_uint),
    __tsan_mutex_pre_lock(m: *mut c_void, f: c_uint),
    __tsan_mutex_post_unlock(m: *mut c_void, f: c_uint),
    __tsan_mutex_pre_signal(m: *mut c_void, f: c_uint),
    __tsan_mutex_post_signal(m: *mut c_void, f: c_uint),
    __tsan_mutex_pre_divert(m: *mut c_void, f: c_uint),
    __tsan_mutex_post_divert(m: *mut c_void, f: c_uint),
}

fn no_fibers() -> ! {
    buf::die(
        b"racepred-rt: fibers (__tsan_*_fiber) are not supported; cannot record this program\n",
    )
}
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_get_current_fiber() -> *mut c_void {
    no_fibers()
}
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_create_fiber(_flags: c_uint) -> *mut c_void {
    no_fibers()
}
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_destroy_fiber(_fiber: *mut c_void) {
    no_fibers()
}
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_switch_to_fiber(_fiber: *mut c_void, _flags: c_uint) {
    no_fibers()
}
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_set_fiber_name(_fiber: *mut c_void, _name: *const c_char) {
    no_fibers()
}
