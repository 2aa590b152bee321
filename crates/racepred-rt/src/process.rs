//! The process's own life: `fork` (and `vfork`), the `exec` family, `_exit`, `abort`.
//!
//! **fork**: as ThreadSanitizer does (`ForkBefore` / `ForkChildAfter`), the forking thread
//! takes every runtime lock first (the atomics' stripe locks, then the online lock, then
//! the writer's: the order in which a hook nests them), so no other thread is inside the runtime when the
//! process is copied; the real `fork` runs with the thread marked as inside the runtime
//! (the `pthread_atfork` handlers it runs are not recorded); then both processes free the
//! locks. The child keeps only its own thread: the parent's buffers (or online analysis)
//! are dropped, the forking thread starts again as `T0`, and its trace begins with an
//! `acq` of each lock it holds (the child holds them too) — the child's trace is what the
//! child did, from the fork on; what came before is in the parent's. It is written as
//! `NAME.PID.EXT` ([`crate::finish`]). `vfork` is a `fork` (its child shares the parent's
//! memory, runtime included, until it execs: recording there would corrupt the parent's
//! buffers).
//!
//! **exec**: every `exec` function (`execve`, `execv`, `execvp`, `execvpe`, `execl`,
//! `execlp`, `execle`, `fexecve`, `execveat`) writes the trace first — the new image
//! starts with nothing of this one — and passes `$RACEPRED_RECORD_EXECED=PID:N` to the new
//! image, which names its own trace `NAME.PID.execN.EXT`. If the exec fails, recording
//! goes on into the same trace (its events written so far are copied into a new one,
//! [`crate::stream`]), written whole again at exit (an online analysis has written its
//! report and stops).

use core::ffi::{c_char, c_int};

use libc::pid_t;

use crate::buf::{self, passthrough, TLS};
use crate::real::Real;
use crate::tramp::hook;

// ---------------------------------------------------------------------------------------
// fork
// ---------------------------------------------------------------------------------------

// SAFETY: the type is the C signature of the function named.
static REAL_FORK: Real<unsafe extern "C" fn() -> pid_t> = unsafe { Real::new(c"fork") };

unsafe extern "C" fn fork_impl(pc: usize) -> pid_t {
    let real = REAL_FORK.get();
    if passthrough() {
        // SAFETY: `fork` takes no argument.
        return unsafe { real() };
    }
    buf::ensure_buf();
    TLS.with(|t| t.busy.set(true));
    let stripes = crate::atomics::lock_all_for_fork();
    let online = crate::online::lock_for_fork();
    let writer = crate::stream::lock_for_fork();
    // SAFETY: `fork` takes no argument; every runtime lock is held by this thread, so the
    // child's copies of them are consistent.
    let pid = unsafe { real() };
    drop(writer);
    drop(online);
    drop(stripes);
    if pid == 0 {
        crate::sync::forget_threads();
        crate::online::restart_in_child();
        buf::restart_in_child(pc);
    }
    TLS.with(|t| t.busy.set(false));
    pid
}
hook!("rdi", fn fork() -> pid_t => fork_impl);
hook!("rdi", fn vfork() -> pid_t => fork_impl);

// ---------------------------------------------------------------------------------------
// exec
// ---------------------------------------------------------------------------------------

type Argv = *const *const c_char;

// SAFETY: the type is the C signature of the function named.
static REAL_EXECVE: Real<unsafe extern "C" fn(*const c_char, Argv, Argv) -> c_int> =
    unsafe { Real::new(c"execve") };
// SAFETY: the type is the C signature of the function named.
static REAL_EXECVPE: Real<unsafe extern "C" fn(*const c_char, Argv, Argv) -> c_int> =
    unsafe { Real::new(c"execvpe") };
// SAFETY: the type is the C signature of the function named.
static REAL_FEXECVE: Real<unsafe extern "C" fn(c_int, Argv, Argv) -> c_int> =
    unsafe { Real::new(c"fexecve") };
// SAFETY: the type is the C signature of the function named.
static REAL_EXECVEAT: Real<unsafe extern "C" fn(c_int, *const c_char, Argv, Argv, c_int) -> c_int> =
    unsafe { Real::new(c"execveat") };

unsafe extern "C" {
    static environ: Argv;
}

/// What to execute, as the real function that will do it takes it.
#[derive(Clone, Copy)]
enum Target {
    /// `execve(path, …)`.
    Path(*const c_char),
    /// `execvpe(file, …)`: searched in `$PATH`.
    Search(*const c_char),
    /// `fexecve(fd, …)`.
    Fd(c_int),
    /// `execveat(dirfd, path, …, flags)`.
    At(c_int, *const c_char, c_int),
}

/// The entry points, as the trampolines pass them.
const EXECV: u32 = 0;
const EXECVE: u32 = 1;
const EXECVP: u32 = 2;
const EXECVPE: u32 = 3;
const EXECL: u32 = 4;
const EXECLP: u32 = 5;
const EXECLE: u32 = 6;
const FEXECVE: u32 = 7;
const EXECVEAT: u32 = 8;

/// `exec!(name = KIND)`: exports `name`, a trampoline that stores the six argument
/// registers on the stack (just below the return address, so that with the caller's stack
/// arguments above it they form the whole argument list of a variadic `execl`) and calls
/// [`exec_entry`]`(KIND, saved)`, whose result it returns.
macro_rules! exec {
    ($($name:ident = $kind:expr;)*) => {$(
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() -> c_int {
            core::arch::naked_asm!(
                "push r9",
                "push r8",
                "push rcx",
                "push rdx",
                "push rsi",
                "push rdi",
                "mov rsi, rsp",
                "mov edi, {kind}",
                // 8 (return address) + 48 + 8: the call is made with a 16-byte aligned stack.
                "sub rsp, 8",
                "call {imp}",
                "add rsp, 56",
                "ret",
                kind = const $kind,
                imp = sym exec_entry,
            )
        }
    )*};
}
exec! {
    execv = EXECV;
    execve = EXECVE;
    execvp = EXECVP;
    execvpe = EXECVPE;
    execl = EXECL;
    execlp = EXECLP;
    execle = EXECLE;
    fexecve = FEXECVE;
    execveat = EXECVEAT;
}

/// The arguments of an exec call, read from the trampoline's save area.
struct Args(*const usize);

impl Args {
    /// Argument `i` (from 0) as a pointer-sized integer.
    ///
    /// # Safety
    /// The call has at least `i + 1` integer arguments.
    unsafe fn get(&self, i: usize) -> usize {
        // The six register arguments, then the return address, then the stack arguments.
        let at = if i < 6 { i } else { i + 1 };
        // SAFETY: the trampoline saved six registers at `self.0`, below the return address
        // and the caller's stack arguments; the caller passed argument `i`.
        unsafe { *self.0.add(at) }
    }

    /// The `NULL`-terminated list of an `execl` call starting at argument `from`, and the
    /// index of the argument after its terminator.
    ///
    /// # Safety
    /// The call's arguments from `from` on are pointers ending with a null one.
    unsafe fn list(&self, from: usize) -> (Vec<*const c_char>, usize) {
        let mut v = Vec::new();
        let mut i = from;
        loop {
            // SAFETY: the list goes on up to its terminator (the caller's promise).
            let p = unsafe { self.get(i) } as *const c_char;
            v.push(p);
            i += 1;
            if p.is_null() {
                return (v, i);
            }
        }
    }
}

unsafe extern "C" fn exec_entry(kind: u32, saved: *const usize) -> c_int {
    let a = Args(saved);
    // SAFETY (every `a.get`/`a.list` below): the program called the exec function `kind`
    // names with its C signature, so these arguments exist; a list form's list ends with a
    // null pointer, as its contract requires.
    unsafe {
        // SAFETY: `environ` is libc's, read only.
        let env = environ;
        let ptr = |i: usize| a.get(i) as *const c_char;
        let vec = |i: usize| a.get(i) as Argv;
        match kind {
            EXECV => exec(Target::Path(ptr(0)), vec(1), env),
            EXECVE => exec(Target::Path(ptr(0)), vec(1), vec(2)),
            EXECVP => exec(Target::Search(ptr(0)), vec(1), env),
            EXECVPE => exec(Target::Search(ptr(0)), vec(1), vec(2)),
            EXECL => exec(Target::Path(ptr(0)), a.list(1).0.as_ptr(), env),
            EXECLP => exec(Target::Search(ptr(0)), a.list(1).0.as_ptr(), env),
            EXECLE => {
                let (argv, next) = a.list(1);
                exec(Target::Path(ptr(0)), argv.as_ptr(), vec(next))
            }
            FEXECVE => exec(Target::Fd(a.get(0) as c_int), vec(1), vec(2)),
            EXECVEAT => exec(
                Target::At(a.get(0) as c_int, ptr(1), a.get(4) as c_int),
                vec(2),
                vec(3),
            ),
            _ => unreachable_kind(),
        }
    }
}

#[cold]
fn unreachable_kind() -> c_int {
    buf::die(b"racepred-rt: unknown exec entry\n")
}

/// Runs the real exec function for `target`.
///
/// # Safety
/// `argv` and `envp` are what that function accepts (null-terminated arrays of C strings;
/// `envp` may be null).
unsafe fn call(target: Target, argv: Argv, envp: Argv) -> c_int {
    // SAFETY: the arguments are passed on as the caller got them.
    unsafe {
        match target {
            Target::Path(p) => REAL_EXECVE.get()(p, argv, envp),
            Target::Search(f) => REAL_EXECVPE.get()(f, argv, envp),
            Target::Fd(fd) => REAL_FEXECVE.get()(fd, argv, envp),
            Target::At(dir, p, flags) => REAL_EXECVEAT.get()(dir, p, argv, envp, flags),
        }
    }
}

/// Writes the trace, then execs with `$RACEPRED_RECORD_EXECED` set for the new image; if
/// the exec returns (it failed), recording goes on.
///
/// # Safety
/// As [`call`].
unsafe fn exec(target: Target, argv: Argv, envp: Argv) -> c_int {
    if passthrough() {
        // SAFETY: the caller's arguments.
        return unsafe { call(target, argv, envp) };
    }
    let entry = crate::finish::before_exec();
    let mut env: Vec<*const c_char> = Vec::new();
    let name = crate::finish::EXECED_VAR.to_bytes();
    if !envp.is_null() {
        let mut i = 0;
        loop {
            // SAFETY: `envp` is a null-terminated array of C strings (the caller's promise).
            let e = unsafe { *envp.add(i) };
            if e.is_null() {
                break;
            }
            // SAFETY: `e` is a C string.
            let s = unsafe { core::ffi::CStr::from_ptr(e) }.to_bytes();
            if !(s.starts_with(name) && s.get(name.len()) == Some(&b'=')) {
                env.push(e);
            }
            i += 1;
        }
    }
    env.push(entry.as_ptr());
    env.push(core::ptr::null());
    // SAFETY: `env` is a null-terminated array of C strings that outlive the call.
    let r = unsafe { call(target, argv, env.as_ptr()) };
    let err = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    crate::finish::after_failed_exec();
    // SAFETY: `__errno_location` is this thread's `errno`, restored for the caller.
    unsafe { *libc::__errno_location() = err };
    r
}

// ---------------------------------------------------------------------------------------
// Process end
// ---------------------------------------------------------------------------------------

// SAFETY: the type is the C signature of the function named.
static REAL_EXIT: Real<unsafe extern "C" fn(c_int) -> !> = unsafe { Real::new(c"_exit") };
// SAFETY: the type is the C signature of the function named.
static REAL_ABORT: Real<unsafe extern "C" fn() -> !> = unsafe { Real::new(c"abort") };

/// `_exit` skips `atexit` handlers and destructors: write the trace first.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _exit(status: c_int) -> ! {
    crate::finish::finish();
    // SAFETY: glibc's `_exit`, with the caller's status.
    unsafe { REAL_EXIT.get()(status) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn _Exit(status: c_int) -> ! {
    crate::finish::finish();
    // SAFETY: glibc's `_exit`, with the caller's status.
    unsafe { REAL_EXIT.get()(status) }
}

/// A direct call of `abort` (glibc's `assert` calls its internal one, not this): write the
/// trace, then abort.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn abort() -> ! {
    crate::finish::finish();
    // SAFETY: glibc's `abort`.
    unsafe { REAL_ABORT.get()() }
}
