//! Memory access entry points: what `gcc -fsanitize=thread` (and clang) call for each
//! instrumented load and store.
//!
//! A sized access is one `r` / `w` event on the variable named by its start address;
//! ranges (`__tsan_read_range`, `__tsan_memcpy` …) are one event per 4-byte word they touch
//! ([`crate::buf::access_range`]). Volatile accesses are plain accesses (C `volatile` does
//! not synchronise). `__tsan_vptr_update` is a write only when it changes the pointer (as in
//! ThreadSanitizer: a destructor chain rewriting the same vptr is not a race).

use crate::buf::{access, access_range};
use crate::tramp::hook;

unsafe extern "C" fn read_impl(a: *const u8, pc: usize) {
    access(false, a as usize, pc);
}
unsafe extern "C" fn write_impl(a: *const u8, pc: usize) {
    access(true, a as usize, pc);
}

hook!("rsi", fn __tsan_read1(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_read2(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_read4(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_read8(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_read16(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_write1(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_write2(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_write4(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_write8(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_write16(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_unaligned_read2(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_unaligned_read4(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_unaligned_read8(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_unaligned_read16(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_unaligned_write2(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_unaligned_write4(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_unaligned_write8(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_unaligned_write16(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_volatile_read1(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_volatile_read2(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_volatile_read4(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_volatile_read8(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_volatile_read16(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_volatile_write1(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_volatile_write2(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_volatile_write4(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_volatile_write8(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_volatile_write16(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_unaligned_volatile_read2(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_unaligned_volatile_read4(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_unaligned_volatile_read8(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_unaligned_volatile_read16(a: *const u8) => read_impl);
hook!("rsi", fn __tsan_unaligned_volatile_write2(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_unaligned_volatile_write4(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_unaligned_volatile_write8(a: *const u8) => write_impl);
hook!("rsi", fn __tsan_unaligned_volatile_write16(a: *const u8) => write_impl);

// `_pc` variants get the program counter of the access itself; the stored value is a
// return address (symbolised at `value - 1`), hence `+ 1`.
macro_rules! with_pc {
    ($($name:ident => $write:expr),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(a: *const u8, pc: *const u8) {
            access($write, a as usize, (pc as usize).wrapping_add(1));
        }
    )*};
}
with_pc! {
    __tsan_read1_pc => false, __tsan_read2_pc => false, __tsan_read4_pc => false,
    __tsan_read8_pc => false, __tsan_read16_pc => false,
    __tsan_write1_pc => true, __tsan_write2_pc => true, __tsan_write4_pc => true,
    __tsan_write8_pc => true, __tsan_write16_pc => true,
}

unsafe extern "C" fn read_range_impl(a: *const u8, size: usize, pc: usize) {
    access_range(false, a as usize, size, pc);
}
unsafe extern "C" fn write_range_impl(a: *const u8, size: usize, pc: usize) {
    access_range(true, a as usize, size, pc);
}
hook!("rdx", fn __tsan_read_range(a: *const u8, size: usize) => read_range_impl);
hook!("rdx", fn __tsan_write_range(a: *const u8, size: usize) => write_range_impl);

#[unsafe(no_mangle)]
pub unsafe extern "C" fn __tsan_read_range_pc(a: *const u8, size: usize, pc: *const u8) {
    access_range(false, a as usize, size, (pc as usize).wrapping_add(1));
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __tsan_write_range_pc(a: *const u8, size: usize, pc: *const u8) {
    access_range(true, a as usize, size, (pc as usize).wrapping_add(1));
}

unsafe extern "C" fn vptr_update_impl(p: *mut *mut u8, new: *mut u8, pc: usize) {
    // Read without an event: only a change is a write.
    // SAFETY: `p` is the object's vptr slot, which the instrumented code is updating.
    if unsafe { core::ptr::read_volatile(p) } != new {
        access(true, p as usize, pc);
    }
}
unsafe extern "C" fn vptr_read_impl(p: *mut *mut u8, pc: usize) {
    access(false, p as usize, pc);
}
hook!("rdx", fn __tsan_vptr_update(p: *mut *mut u8, new: *mut u8) => vptr_update_impl);
hook!("rsi", fn __tsan_vptr_read(p: *mut *mut u8) => vptr_read_impl);

// clang's calls for `memcpy` & co in instrumented code (gcc calls libc's; see the README).
unsafe extern "C" fn memcpy_impl(d: *mut u8, s: *const u8, n: usize, pc: usize) -> *mut u8 {
    access_range(false, s as usize, n, pc);
    access_range(true, d as usize, n, pc);
    // SAFETY: `memcpy`'s contract: `n` valid bytes at `s` and `d`, not overlapping.
    unsafe { core::ptr::copy_nonoverlapping(s, d, n) };
    d
}
unsafe extern "C" fn memmove_impl(d: *mut u8, s: *const u8, n: usize, pc: usize) -> *mut u8 {
    access_range(false, s as usize, n, pc);
    access_range(true, d as usize, n, pc);
    // SAFETY: `memmove`'s contract: `n` valid bytes at `s` and `d`.
    unsafe { core::ptr::copy(s, d, n) };
    d
}
unsafe extern "C" fn memset_impl(d: *mut u8, c: i32, n: usize, pc: usize) -> *mut u8 {
    access_range(true, d as usize, n, pc);
    // SAFETY: `memset`'s contract: `n` writable bytes at `d`.
    unsafe { core::ptr::write_bytes(d, c as u8, n) };
    d
}
hook!("rcx", fn __tsan_memcpy(d: *mut u8, s: *const u8, n: usize) -> *mut u8 => memcpy_impl);
hook!("rcx", fn __tsan_memmove(d: *mut u8, s: *const u8, n: usize) -> *mut u8 => memmove_impl);
hook!("rcx", fn __tsan_memset(d: *mut u8, c: i32, n: usize) -> *mut u8 => memset_impl);

/// Function entry and exit: a shadow call stack per thread, from which each event gets its
/// calling context (`pc`: the call's return address, in the caller).
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_func_entry(pc: *const u8) {
    crate::buf::call(true, pc as usize);
}
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_func_exit() {
    crate::buf::call(false, 0);
}

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_ignore_thread_begin() {
    crate::buf::TLS.with(|t| t.ignore.set(t.ignore.get().saturating_add(1)));
}
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_ignore_thread_end() {
    crate::buf::TLS.with(|t| t.ignore.set(t.ignore.get().saturating_sub(1)));
}
