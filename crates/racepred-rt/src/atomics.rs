//! `__tsan_atomic*`: the atomic operations of instrumented code, performed here.
//!
//! An atomic access is never a racy access; what it contributes is synchronisation, recorded
//! as `vr` / `vw` of the atomic's address (racepred's analyses make every `vw` of a
//! variable happen before each later `vr` of it):
//!
//! - an operation with acquire semantics (`consume`, `acquire`, `acq_rel`, `seq_cst`) that
//!   reads is a `vr`; one with release semantics (`release`, `acq_rel`, `seq_cst`) that
//!   writes is a `vw`; a read-modify-write may be both (`vr` then `vw`). A failed
//!   compare-exchange is a load with the failure order.
//! - a relaxed operation creates no edge and is not recorded, except through fences: a
//!   relaxed load is remembered until the thread's next acquire fence, which records a `vr`
//!   of each remembered address; after a release fence every relaxed store or
//!   read-modify-write of the thread records a `vw`. Both over-approximate C11's fence
//!   synchronisation (never a false race, possibly a missed one).
//!
//! `vw`/`vr` rather than `rel`/`acq` of a per-address lock: a release store is not a lock
//! release (nothing was acquired, several threads may store in turn without any acquire),
//! so lock events would make ill-formed traces; `vw`→`vr` is exactly "a release is seen by
//! a later acquire".
//!
//! Order: a recorded operation runs under a spin lock of its address's stripe, and its
//! events are stamped inside, so the trace order of the events on one atomic is its
//! modification order (a `vr` follows the `vw` whose value it read). Relaxed operations
//! that record nothing take no lock. 16-byte atomics always take the stripe lock, which is
//! what makes them atomic (every instrumented access to them comes through here).

use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering::SeqCst};

use crate::buf::{ns, push_now, with_buf, Kind, SpinGuard};
use crate::tramp::hook;

const STRIPES: usize = 1024;
static LOCKS: [AtomicBool; STRIPES] = [const { AtomicBool::new(false) }; STRIPES];

fn stripe(a: usize) -> SpinGuard {
    SpinGuard::lock(&LOCKS[(a >> 3) % STRIPES])
}

/// Every stripe lock, held across `fork` (in stripe order; a hook holds at most one) so
/// that no other thread is inside an atomic operation when the process is copied; dropping
/// them frees them in the parent and in the child alike.
pub fn lock_all_for_fork() -> [SpinGuard; STRIPES] {
    core::array::from_fn(|i| SpinGuard::lock(&LOCKS[i]))
}

/// C11 memory orders as tsan passes them (`__ATOMIC_*`, high flag bits such as gcc's
/// `MEMMODEL_SYNC` and HLE hints masked off).
fn order(mo: i32) -> i32 {
    mo & 0xff
}
fn acquires(mo: i32) -> bool {
    matches!(order(mo), 1 | 2 | 4 | 5)
}
fn releases(mo: i32) -> bool {
    matches!(order(mo), 3..=5)
}

/// What one operation recorded, decided after it ran.
#[derive(Clone, Copy, Default)]
struct Effects {
    vr: bool,
    vw: bool,
    /// A relaxed read: remembered for the thread's next acquire fence.
    relaxed_read: bool,
}

/// Effects of a load with order `mo`.
fn load_effects(mo: i32) -> Effects {
    Effects {
        vr: acquires(mo),
        vw: false,
        relaxed_read: !acquires(mo),
    }
}

/// Effects of a store with order `mo` by a thread that did (`fenced`) or did not execute a
/// release fence before.
fn store_effects(mo: i32, fenced: bool) -> Effects {
    Effects {
        vr: false,
        vw: releases(mo) || fenced,
        relaxed_read: false,
    }
}

fn rmw_effects(mo: i32, fenced: bool) -> Effects {
    Effects {
        vw: releases(mo) || fenced,
        ..load_effects(mo)
    }
}

/// Whether an operation with these orders may record something (and so takes the lock).
fn may_sync(mo: i32, fmo: i32, writes: bool, fenced: bool) -> bool {
    acquires(mo) || releases(mo) || acquires(fmo) || writes && fenced
}

/// Runs `op` on the atomic at `a` and records what `effects` says it did: under the
/// stripe lock when it may record (events stamped after the operation, inside the lock),
/// without otherwise. `writes`: the operation may store. `force_lock`: always lock (16-byte
/// atomics).
#[inline]
#[allow(clippy::too_many_arguments)]
fn run<T>(
    a: usize,
    pc: usize,
    mo: i32,
    fmo: i32,
    writes: bool,
    force_lock: bool,
    op: impl FnOnce() -> T,
    effects: impl FnOnce(&T, bool) -> Effects,
) -> T {
    let mut op = Some(op);
    let mut effects = Some(effects);
    let mut out = None;
    with_buf(|b| {
        let (Some(op), Some(effects)) = (op.take(), effects.take()) else {
            return;
        };
        let fenced = b.state().release_fenced;
        if force_lock || may_sync(mo, fmo, writes, fenced) {
            let _g = stripe(a);
            let v = op();
            let e = effects(&v, fenced);
            if e.vr {
                push_now(b, Kind::VRead, ns::MEM, a, pc);
            }
            if e.vw {
                push_now(b, Kind::VWrite, ns::MEM, a, pc);
            }
            if e.relaxed_read {
                b.state().note_relaxed_load(a);
            }
            out = Some(v);
        } else {
            if writes {
                // Not recorded, but the trace's order of plain accesses follows it: a
                // thread that reads this store stamps its next accesses after the
                // writer's earlier ones (`crate::stream`).
                crate::buf::tick();
            }
            let v = op();
            if effects(&v, fenced).relaxed_read {
                b.state().note_relaxed_load(a);
            }
            out = Some(v);
        }
    });
    if let Some(v) = out {
        return v;
    }
    // Not recorded (the thread is inside the runtime, or the trace is being written).
    match op.take() {
        Some(op) if force_lock => {
            let _g = stripe(a);
            op()
        }
        Some(op) => op(),
        // `with_buf` took the operation, so it ran it and set `out`.
        None => unreachable!("racepred-rt: an atomic operation ran without a result"),
    }
}

/// An atomic type of the tsan interface (`a8` … `a128`, all unsigned).
///
/// # Safety (of every method)
/// `p` points to a live, aligned value of this type that every thread accesses through
/// these operations only (16 bytes: under its stripe lock).
pub trait Atom: Copy + Eq {
    unsafe fn load(p: *mut Self) -> Self;
    unsafe fn store(p: *mut Self, v: Self);
    unsafe fn swap(p: *mut Self, v: Self) -> Self;
    unsafe fn fetch_add(p: *mut Self, v: Self) -> Self;
    unsafe fn fetch_sub(p: *mut Self, v: Self) -> Self;
    unsafe fn fetch_and(p: *mut Self, v: Self) -> Self;
    unsafe fn fetch_or(p: *mut Self, v: Self) -> Self;
    unsafe fn fetch_xor(p: *mut Self, v: Self) -> Self;
    unsafe fn fetch_nand(p: *mut Self, v: Self) -> Self;
    /// Compare-exchange: `Ok(old)` if it stored, `Err(current)` if not.
    unsafe fn cas(p: *mut Self, c: Self, v: Self) -> Result<Self, Self>;
    const FORCE_LOCK: bool;
}

/// The read-modify-write methods of [`Atom`] for a type with an atomic `$at` (each named
/// as its method there).
macro_rules! atom_rmw {
    ($at:ty: $($op:ident),*) => {$(
        unsafe fn $op(p: *mut Self, v: Self) -> Self {
            // SAFETY: `p` is valid and aligned and accessed atomically (the trait's contract).
            unsafe { <$at>::from_ptr(p).$op(v, SeqCst) }
        }
    )*};
}

macro_rules! atom {
    ($t:ty, $at:ty) => {
        impl Atom for $t {
            const FORCE_LOCK: bool = false;
            unsafe fn load(p: *mut Self) -> Self {
                // SAFETY: `p` is valid and aligned and accessed atomically (the trait's contract).
                unsafe { <$at>::from_ptr(p).load(SeqCst) }
            }
            unsafe fn store(p: *mut Self, v: Self) {
                // SAFETY: `p` is valid and aligned and accessed atomically (the trait's contract).
                unsafe { <$at>::from_ptr(p).store(v, SeqCst) }
            }
            atom_rmw!($at: swap, fetch_add, fetch_sub, fetch_and, fetch_or, fetch_xor, fetch_nand);
            unsafe fn cas(p: *mut Self, c: Self, v: Self) -> Result<Self, Self> {
                // SAFETY: `p` is valid and aligned and accessed atomically (the trait's contract).
                unsafe { <$at>::from_ptr(p).compare_exchange(c, v, SeqCst, SeqCst) }
            }
        }
    };
}
atom!(u8, AtomicU8);
atom!(u16, AtomicU16);
atom!(u32, AtomicU32);
atom!(u64, AtomicU64);

/// A 16-byte read-modify-write: stores `f(old)`, returns `old`.
///
/// # Safety
/// As for [`Atom`]'s methods: `p` valid and aligned, under its stripe lock.
unsafe fn rmw128(p: *mut u128, f: impl FnOnce(u128) -> u128) -> u128 {
    // SAFETY: the caller's contract.
    unsafe {
        let old = <u128 as Atom>::load(p);
        <u128 as Atom>::store(p, f(old));
        old
    }
}

/// 16 bytes: plain memory operations made atomic by the stripe lock (`FORCE_LOCK`).
impl Atom for u128 {
    const FORCE_LOCK: bool = true;
    unsafe fn load(p: *mut Self) -> Self {
        // SAFETY: `p` is valid and aligned and accessed atomically (the trait's contract).
        unsafe { core::ptr::read_volatile(p) }
    }
    unsafe fn store(p: *mut Self, v: Self) {
        // SAFETY: `p` is valid and aligned and accessed atomically (the trait's contract).
        unsafe { core::ptr::write_volatile(p, v) }
    }
    unsafe fn swap(p: *mut Self, v: Self) -> Self {
        // SAFETY: the trait's contract, passed on.
        unsafe { rmw128(p, |_| v) }
    }
    unsafe fn fetch_add(p: *mut Self, v: Self) -> Self {
        // SAFETY: the trait's contract, passed on.
        unsafe { rmw128(p, |old| old.wrapping_add(v)) }
    }
    unsafe fn fetch_sub(p: *mut Self, v: Self) -> Self {
        // SAFETY: the trait's contract, passed on.
        unsafe { rmw128(p, |old| old.wrapping_sub(v)) }
    }
    unsafe fn fetch_and(p: *mut Self, v: Self) -> Self {
        // SAFETY: the trait's contract, passed on.
        unsafe { rmw128(p, |old| old & v) }
    }
    unsafe fn fetch_or(p: *mut Self, v: Self) -> Self {
        // SAFETY: the trait's contract, passed on.
        unsafe { rmw128(p, |old| old | v) }
    }
    unsafe fn fetch_xor(p: *mut Self, v: Self) -> Self {
        // SAFETY: the trait's contract, passed on.
        unsafe { rmw128(p, |old| old ^ v) }
    }
    unsafe fn fetch_nand(p: *mut Self, v: Self) -> Self {
        // SAFETY: the trait's contract, passed on.
        unsafe { rmw128(p, |old| !(old & v)) }
    }
    unsafe fn cas(p: *mut Self, c: Self, v: Self) -> Result<Self, Self> {
        // SAFETY: `p` is valid and aligned and accessed atomically (the trait's contract).
        unsafe {
            let old = Self::load(p);
            if old == c {
                Self::store(p, v);
                Ok(old)
            } else {
                Err(old)
            }
        }
    }
}

unsafe extern "C" fn load_impl<T: Atom>(a: *mut T, mo: i32, pc: usize) -> T {
    run(
        a as usize,
        pc,
        mo,
        0,
        false,
        T::FORCE_LOCK,
        // SAFETY: `a` is the program's atomic of type `T` (the tsan ABI's contract).
        || unsafe { T::load(a) },
        |_, _| load_effects(mo),
    )
}

unsafe extern "C" fn store_impl<T: Atom>(a: *mut T, v: T, mo: i32, pc: usize) {
    run(
        a as usize,
        pc,
        mo,
        0,
        true,
        T::FORCE_LOCK,
        // SAFETY: as in `load_impl`.
        || unsafe { T::store(a, v) },
        |_, f| store_effects(mo, f),
    )
}

macro_rules! rmw_impl {
    ($($name:ident => $op:ident),* $(,)?) => {$(
        unsafe extern "C" fn $name<T: Atom>(a: *mut T, v: T, mo: i32, pc: usize) -> T {
            // SAFETY: `a` is the program's atomic of type `T` (the tsan ABI's contract).
            let op = || unsafe { T::$op(a, v) };
            run(a as usize, pc, mo, 0, true, T::FORCE_LOCK, op, |_, f| rmw_effects(mo, f))
        }
    )*};
}
rmw_impl! {
    exchange_impl => swap, fetch_add_impl => fetch_add, fetch_sub_impl => fetch_sub,
    fetch_and_impl => fetch_and, fetch_or_impl => fetch_or, fetch_xor_impl => fetch_xor,
    fetch_nand_impl => fetch_nand,
}

fn cas_effects<T>(r: &Result<T, T>, mo: i32, fmo: i32, fenced: bool) -> Effects {
    match r {
        Ok(_) => rmw_effects(mo, fenced),
        Err(_) => load_effects(fmo),
    }
}

/// A compare-exchange of `a` from `c` to `v` (orders `mo` on success, `fmo` on failure),
/// recorded: `Ok(old)` if it stored, `Err(current)` if not.
///
/// # Safety
/// `a` is the program's atomic of type `T` (the tsan ABI's contract).
unsafe fn cas_run<T: Atom>(a: *mut T, c: T, v: T, mo: i32, fmo: i32, pc: usize) -> Result<T, T> {
    run(
        a as usize,
        pc,
        mo,
        fmo,
        true,
        T::FORCE_LOCK,
        // SAFETY: the caller's contract.
        || unsafe { T::cas(a, c, v) },
        |r, f| cas_effects(r, mo, fmo, f),
    )
}

unsafe extern "C" fn cas_impl<T: Atom>(
    a: *mut T,
    c: *mut T,
    v: T,
    mo: i32,
    fmo: i32,
    pc: usize,
) -> i32 {
    // SAFETY: `c` points to the caller's expected value (the tsan ABI's contract).
    let expected = unsafe { *c };
    // SAFETY: the caller's contract, passed on.
    match unsafe { cas_run(a, expected, v, mo, fmo, pc) } {
        Ok(_) => 1,
        Err(cur) => {
            // SAFETY: as above, `c` is the caller's to write.
            unsafe { *c = cur };
            0
        }
    }
}

unsafe extern "C" fn cas_val_impl<T: Atom>(
    a: *mut T,
    c: T,
    v: T,
    mo: i32,
    fmo: i32,
    pc: usize,
) -> T {
    // SAFETY: the caller's contract, passed on.
    match unsafe { cas_run(a, c, v, mo, fmo, pc) } {
        Ok(old) | Err(old) => old,
    }
}

/// Exports the operations of one width (`__tsan_atomicBITS_load` …), in module `$m`.
macro_rules! width {
    ($m:ident: $t:ty, $bits:literal) => {
        mod $m {
            use super::*;
            macro_rules! name {
                ($op:literal) => {
                    concat!("__tsan_atomic", $bits, "_", $op)
                };
            }
            hook!("rdx", name!("load"), fn load(a: *mut $t, mo: i32) -> $t => load_impl::<$t>);
            hook!("rcx", name!("store"), fn store(a: *mut $t, v: $t, mo: i32) => store_impl::<$t>);
            hook!("rcx", name!("exchange"), fn exchange(a: *mut $t, v: $t, mo: i32) -> $t => exchange_impl::<$t>);
            hook!("rcx", name!("fetch_add"), fn fetch_add(a: *mut $t, v: $t, mo: i32) -> $t => fetch_add_impl::<$t>);
            hook!("rcx", name!("fetch_sub"), fn fetch_sub(a: *mut $t, v: $t, mo: i32) -> $t => fetch_sub_impl::<$t>);
            hook!("rcx", name!("fetch_and"), fn fetch_and(a: *mut $t, v: $t, mo: i32) -> $t => fetch_and_impl::<$t>);
            hook!("rcx", name!("fetch_or"), fn fetch_or(a: *mut $t, v: $t, mo: i32) -> $t => fetch_or_impl::<$t>);
            hook!("rcx", name!("fetch_xor"), fn fetch_xor(a: *mut $t, v: $t, mo: i32) -> $t => fetch_xor_impl::<$t>);
            hook!("rcx", name!("fetch_nand"), fn fetch_nand(a: *mut $t, v: $t, mo: i32) -> $t => fetch_nand_impl::<$t>);
            hook!("r9", name!("compare_exchange_strong"), fn cas_strong(a: *mut $t, c: *mut $t, v: $t, mo: i32, fmo: i32) -> i32 => cas_impl::<$t>);
            hook!("r9", name!("compare_exchange_weak"), fn cas_weak(a: *mut $t, c: *mut $t, v: $t, mo: i32, fmo: i32) -> i32 => cas_impl::<$t>);
            hook!("r9", name!("compare_exchange_val"), fn cas_val(a: *mut $t, c: $t, v: $t, mo: i32, fmo: i32) -> $t => cas_val_impl::<$t>);
        }
    };
}

width!(w8: u8, "8");
width!(w16: u16, "16");
width!(w32: u32, "32");
width!(w64: u64, "64");

// 16 bytes: an `unsigned __int128` takes two argument registers.
hook!("rdx", fn __tsan_atomic128_load(a: *mut u128, mo: i32) -> u128 => load_impl::<u128>);
hook!("r8", fn __tsan_atomic128_store(a: *mut u128, v: u128, mo: i32) => store_impl::<u128>);
hook!("r8", fn __tsan_atomic128_exchange(a: *mut u128, v: u128, mo: i32) -> u128 => exchange_impl::<u128>);
hook!("r8", fn __tsan_atomic128_fetch_add(a: *mut u128, v: u128, mo: i32) -> u128 => fetch_add_impl::<u128>);
hook!("r8", fn __tsan_atomic128_fetch_sub(a: *mut u128, v: u128, mo: i32) -> u128 => fetch_sub_impl::<u128>);
hook!("r8", fn __tsan_atomic128_fetch_and(a: *mut u128, v: u128, mo: i32) -> u128 => fetch_and_impl::<u128>);
hook!("r8", fn __tsan_atomic128_fetch_or(a: *mut u128, v: u128, mo: i32) -> u128 => fetch_or_impl::<u128>);
hook!("r8", fn __tsan_atomic128_fetch_xor(a: *mut u128, v: u128, mo: i32) -> u128 => fetch_xor_impl::<u128>);
hook!("r8", fn __tsan_atomic128_fetch_nand(a: *mut u128, v: u128, mo: i32) -> u128 => fetch_nand_impl::<u128>);

// The 16-byte compare-exchanges use all six argument registers: no room for the return
// address, so their events have no location.
macro_rules! cas128 {
    ($($name:ident(expected: $c:ty) -> $r:ty => $imp:ident;)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(a: *mut u128, c: $c, v: u128, mo: i32, fmo: i32) -> $r {
            // SAFETY: the caller's arguments, under the tsan ABI's contract.
            unsafe { $imp::<u128>(a, c, v, mo, fmo, 0) }
        }
    )*};
}
cas128! {
    __tsan_atomic128_compare_exchange_strong(expected: *mut u128) -> i32 => cas_impl;
    __tsan_atomic128_compare_exchange_weak(expected: *mut u128) -> i32 => cas_impl;
    __tsan_atomic128_compare_exchange_val(expected: u128) -> u128 => cas_val_impl;
}

unsafe extern "C" fn thread_fence_impl(mo: i32, pc: usize) {
    core::sync::atomic::fence(SeqCst);
    with_buf(|b| {
        if acquires(mo) {
            let (addrs, n) = b.state().take_relaxed_loads();
            for &a in &addrs[..n] {
                // Under the stripe lock: after the `vw` of the store the load may have read.
                let _g = stripe(a);
                push_now(b, Kind::VRead, ns::MEM, a, pc);
            }
        }
        if releases(mo) {
            b.state().release_fenced = true;
        }
    });
}
hook!("rsi", fn __tsan_atomic_thread_fence(mo: i32) => thread_fence_impl);

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic_signal_fence(_mo: i32) {
    core::sync::atomic::compiler_fence(SeqCst);
}
