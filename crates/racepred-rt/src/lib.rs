//! racepred's recording runtime: a drop-in `libtsan.so.2` that writes the trace of a
//! program built with `gcc -fsanitize=thread` (or clang with `-shared-libsan`) instead of
//! detecting races in it. `racepred record -- PROG ARGS` puts the directory holding it
//! first on `LD_LIBRARY_PATH`; the program is not rebuilt or relinked.
//!
//! - [`access`]: the compiler's memory-access calls (`__tsan_read4` …) → `r` / `w`.
//! - [`atomics`]: `__tsan_atomic*`, performed here → `vr` / `vw` by memory order.
//! - [`sync`]: interposed pthread, semaphore and `free` / `realloc` / `operator delete`
//!   functions → `acq` / `rel`, `fork` / `join`, `vr` / `vw`, writes of freed
//!   blocks and retired variables (SSHB §3's accurate
//!   instrumentation of locks: Kai Stadtmüller, Martin Sulzmann, Peter Thiemann, "Data
//!   Race Prediction for Inaccurate Traces", ../shared/papers/sshb-inaccurate-traces.txt).
//! - [`process`]: `fork` (the runtime's locks held around it, the child's trace starting
//!   at the fork), the `exec` family (the trace written first), `_exit`, `abort`.
//! - [`real`]: the interposed functions' real definitions, each typed once.
//! - [`annotations`]: ThreadSanitizer's annotation interface.
//! - [`buf`]: per-thread buffers, stamped from one global sequence at synchronisation
//!   events; [`stream`] merges them by stamp under a watermark and writes the trace while
//!   the program runs (freeing what it wrote; [`offload`] encodes it on a thread of its
//!   own), [`finish`] ends it at exit, [`convert`]
//!   names threads, variables and locks, [`symbols`] names locations `file:line:col`.
//! - [`online`]: `racepred record --online ANALYSIS` — the analysis runs in the program,
//!   event by event, and its report is written at exit instead of the trace; [`repeats`]
//!   skips in the hook the accesses online FastTrack would skip.
//!
//! Rules every hook follows:
//!
//! - **Reentrancy**: a per-thread flag (`busy`); a hook reached from inside the runtime
//!   (from a signal handler, from the writer's round, from `fork`'s atfork handlers) only
//!   forwards, so no runtime lock is ever taken twice by one thread.
//! - **Locks**: recording takes no lock per event (per-thread buffers; an access loads
//!   the global sequence, a synchronisation event increments it); the only locks are an
//!   atomic's stripe lock (a spin lock, around a recorded atomic operation), online the
//!   analysis lock ([`online`], a futex mutex, held for a whole batch), and the writer
//!   lock ([`stream`], taken by a thread that filled a buffer chunk), always in that order (a hook holding the online lock takes no
//!   stripe lock; the writer takes no other). `fork` takes them all in that order.
//! - **Allocation**: appending an event never calls `malloc` (buffers are `mmap`ed). The
//!   writer's round (per filled chunk of 65 536 events, not per event) and the online
//!   analysis allocate under their locks; this is safe because the runtime interposes no
//!   allocation function but `free` / `realloc` / `delete`, whose hooks record before they
//!   call the allocator: no thread holds an allocator lock while it waits for one of these
//!   locks, and their holders never wait for a hook. (`pthread_create` allocates its small
//!   start record outside any runtime lock; the end of the run allocates freely, with
//!   every hook passing through.)
//! - **No panic** (a panic cannot unwind out of an `extern "C"` function: it aborts the
//!   program), but for a broken internal invariant.
//! - **Unsafe**: every `unsafe` block says why its contract holds (`// SAFETY:`, enforced
//!   by `clippy::undocumented_unsafe_blocks`), `unsafe fn` bodies too
//!   (`unsafe_op_in_unsafe_fn`); a thread's buffer is reached through its [`buf::Own`]
//!   handle, the online state through the guard of its lock, a real function through its
//!   typed [`real::Real`].

// The unsafe public functions are C entry points (tsan's ABI, POSIX interposers): their
// contract is the C function's, documented there, not here.
#![allow(clippy::missing_safety_doc)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod access;
pub mod annotations;
pub mod atomics;
pub mod buf;
pub mod convert;
pub mod finish;
pub mod offload;
pub mod online;
pub mod process;
pub mod real;
pub mod repeats;
pub mod stream;
pub mod symbols;
pub mod sync;
mod tramp;

use std::sync::atomic::Ordering;

/// Called by the program's `.preinit_array` and by every instrumented module's
/// constructor. The environment may not be readable yet: only the process ids are taken
/// here, the output is opened at the end.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_init() {
    if finish::INIT_PID.load(Ordering::Relaxed) == 0 {
        // SAFETY: `getpid` and `getppid` have no precondition.
        let (pid, ppid) = unsafe { (libc::getpid(), libc::getppid()) };
        finish::INIT_PID.store(pid, Ordering::Relaxed);
        finish::INIT_PPID.store(ppid, Ordering::Relaxed);
        // The main thread is `T0`.
        buf::ensure_buf();
        finish::install_fatal_handlers();
    }
}

/// The trace is written by this library's destructor, which the loader runs at `exit`
/// after the program's `atexit` handlers and static destructors (and `_exit` writes it
/// itself).
#[cfg(not(test))]
extern "C" fn at_unload() {
    finish::finish();
}

// Not in the crate's own unit tests, whose test binary records nothing.
#[cfg(not(test))]
#[used]
#[unsafe(link_section = ".fini_array")]
static FINI: extern "C" fn() = at_unload;
