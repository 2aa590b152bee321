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
//! - [`buf`]: per-thread buffers stamped from one global sequence; [`finish`] merges them
//!   at exit, [`convert`] names threads, variables and locks, [`symbols`] names locations
//!   `file:line:col`.
//! - [`online`]: `racepred record --online ANALYSIS` — the analysis runs in the program,
//!   event by event, and its report is written at exit instead of the trace.
//!
//! Rules every hook follows: no `malloc`, no lock but an atomic's stripe spin lock, a
//! per-thread reentrancy flag (a hook reached from inside the runtime, e.g. from a signal
//! handler or the final merge, only forwards), and no panic (a panic cannot unwind out of
//! an `extern "C"` function: it aborts the program).

// The unsafe public functions are C entry points (tsan's ABI, POSIX interposers): their
// contract is the C function's, documented there, not here.
#![allow(clippy::missing_safety_doc)]

pub mod access;
pub mod annotations;
pub mod atomics;
pub mod buf;
pub mod convert;
pub mod finish;
pub mod online;
pub mod process;
pub mod real;
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
        finish::INIT_PID.store(unsafe { libc::getpid() }, Ordering::Relaxed);
        finish::INIT_PPID.store(unsafe { libc::getppid() }, Ordering::Relaxed);
        // The main thread is `T0`.
        buf::ensure_buf();
        finish::install_fatal_handlers();
    }
}

/// The trace is written by this library's destructor, which the loader runs at `exit`
/// after the program's `atexit` handlers and static destructors (and `_exit` writes it
/// itself).
extern "C" fn at_unload() {
    finish::finish();
}

#[used]
#[unsafe(link_section = ".fini_array")]
static FINI: extern "C" fn() = at_unload;
