//! The end of the run: the trace's last records written and the trace ended
//! ([`crate::stream`], which merges the thread buffers by stamp as the program runs, gives
//! threads, variables, locks and locations dense ids through racepred's name tables,
//! symbolises locations, and writes racepred's binary format or STD by the output's
//! extension with racepred's own writers), or the online report written; the output's
//! name; the fatal signals.
//!
//! Where: `$RACEPRED_RECORD_OUT` (set by `racepred record`), else `racepred-PID.rpb` in the
//! working directory. A process that is not the one `racepred record` started (a child it
//! `fork`ed, or a program a child ran, told apart by `$RACEPRED_RECORD_PPID`) writes
//! `NAME.PID.EXT` beside it instead of overwriting the main trace; the image a process
//! `exec`ed (`$RACEPRED_RECORD_EXECED` = `PID:N`, set by [`crate::process`] for its `N`th
//! exec) writes `NAME.PID.execN.EXT`, so the trace the process wrote before the exec stays.
//!
//! Names: see [`crate::convert`]. In online mode ([`crate::online`]) the same path receives
//! the analysis's report instead of a trace.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use crate::buf::{self, FINISHED, TLS};

/// The process id and parent process id when the runtime started (0: `__tsan_init` never
/// ran).
pub static INIT_PID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
pub static INIT_PPID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Writes the trace, once: later calls (and every hook) do nothing.
pub fn finish() {
    if FINISHED.swap(true, Ordering::SeqCst) {
        return;
    }
    TLS.with(|t| t.busy.set(true));
    let path = output_path();
    if let Some(r) = crate::online::finish(&path) {
        match r {
            Ok((events, races)) => {
                // `racepred record --online` without `-o` prints the report itself.
                let at = match env("RACEPRED_RECORD_PRINTS") {
                    Some(_) => String::new(),
                    None => format!("; report in {}", path.display()),
                };
                let s = if races == 1 { "" } else { "s" };
                buf::say(
                    format!(
                        "racepred: analysed {events} events online: {races} racy location{s}{at}\n"
                    )
                    .as_bytes(),
                )
            }
            Err(e) => failed(&path, "report", &e.to_string()),
        }
        return;
    }
    match crate::stream::finish() {
        Ok((s, path)) => buf::say(
            format!(
                "racepred: recorded {} of {} ({}, {}) in {}\n",
                counted(s.events, "event", "events"),
                counted(s.threads, "thread", "threads"),
                counted(s.vars, "variable", "variables"),
                counted(s.locks, "lock", "locks"),
                path.display()
            )
            .as_bytes(),
        ),
        Err(e) => failed(&path, "trace", &e.to_string()),
    }
}

/// Says why the output at `path` could not be written; if it is the one `racepred record`
/// waits for, tells it too (in `$RACEPRED_RECORD_STATUS`), which then ends with this reason
/// rather than guessing why there is no output, or taking a partial one for a whole one.
fn failed(path: &Path, what: &str, why: &str) {
    buf::say(format!("racepred: could not write the {what}: {why}\n").as_bytes());
    if env("RACEPRED_RECORD_OUT").is_some_and(|o| Path::new(&o) == path) {
        if let Some(status) = env("RACEPRED_RECORD_STATUS") {
            let _ = std::fs::write(status, why);
        }
    }
}

/// `1 event`, `2 events`.
fn counted(n: impl TryInto<u64>, one: &str, many: &str) -> String {
    let n: u64 = n.try_into().unwrap_or(u64::MAX);
    format!("{n} {}", if n == 1 { one } else { many })
}

fn env(name: &str) -> Option<String> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(|v| v.to_string_lossy().into_owned())
}

/// The variable telling an image how many times its process `exec`ed before (`PID:N`).
pub const EXECED_VAR: &std::ffi::CStr = c"RACEPRED_RECORD_EXECED";

/// How many `exec`s of this process led to this image (0: none seen).
fn exec_generation(pid: i32) -> u32 {
    let Some(v) = env(EXECED_VAR.to_str().unwrap_or_default()) else {
        return 0;
    };
    match v.split_once(':') {
        Some((p, n)) if p.parse::<i32>().ok() == Some(pid) => n.parse().unwrap_or(0),
        _ => 0,
    }
}

/// Before an `exec`: writes the trace (or online report) and returns the environment entry
/// to pass to the new image.
pub fn before_exec() -> std::ffi::CString {
    finish();
    let pid = std::process::id() as i32;
    let n = exec_generation(pid) + 1;
    let var = EXECED_VAR.to_string_lossy();
    // No NUL inside: a name and two numbers.
    std::ffi::CString::new(format!("{var}={pid}:{n}")).unwrap_or_default()
}

/// After an `exec` that failed: recording goes on; the trace is written again, whole, at
/// the end (an online analysis has written its report and analyses nothing more).
pub fn after_failed_exec() {
    crate::stream::resume();
    TLS.with(|t| t.busy.set(false));
    FINISHED.store(false, Ordering::SeqCst);
}

/// Where this process writes its trace (or online report).
pub fn output_path() -> PathBuf {
    let pid = std::process::id() as i32;
    let generation = exec_generation(pid);
    let Some(out) = env("RACEPRED_RECORD_OUT") else {
        return PathBuf::from(match generation {
            0 => format!("racepred-{pid}.rpb"),
            n => format!("racepred-{pid}.exec{n}.rpb"),
        });
    };
    if generation > 0 {
        return with_tag(Path::new(&out), &format!("{pid}.exec{generation}"));
    }
    let init_pid = INIT_PID.load(Ordering::Relaxed);
    let forked = init_pid != 0 && init_pid != pid;
    let other = match env("RACEPRED_RECORD_PPID") {
        Some(p) => p.parse::<i32>().ok() != Some(INIT_PPID.load(Ordering::Relaxed)),
        None => false,
    };
    if forked || other {
        with_tag(Path::new(&out), &pid.to_string())
    } else {
        PathBuf::from(out)
    }
}

/// `dir/name.rest` → `dir/name.TAG.rest`.
fn with_tag(p: &Path, tag: &str) -> PathBuf {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let new = match name.find('.') {
        Some(i) if i > 0 => format!("{}.{tag}{}", &name[..i], &name[i..]),
        _ => format!("{name}.{tag}"),
    };
    p.with_file_name(new)
}

/// Signals whose default action ends the process: on these the trace (or online report) is
/// written before the process ends, when the program has not set its own handler.
const FATAL: [libc::c_int; 9] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
];

/// Writes the trace, then ends the process by the same signal with its default action.
///
/// Best effort: writing allocates, so a crash inside `malloc` (a corrupted heap) may hang
/// here instead of dying; a stack overflow has no stack left for a handler.
extern "C" fn on_fatal(sig: libc::c_int) {
    finish();
    // SAFETY: restores the default action of a valid signal, then raises it.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Called from `__tsan_init`: handlers for the fatal signals still at their default
/// action. A handler the program installs later replaces ours (and its exit path writes
/// the trace).
pub fn install_fatal_handlers() {
    for sig in FATAL {
        // SAFETY: `sigaction` structures are plain data (all-zero is valid); `on_fatal` has
        // the handler's signature.
        unsafe {
            let mut old: libc::sigaction = core::mem::zeroed();
            if libc::sigaction(sig, core::ptr::null(), &mut old) != 0
                || old.sa_sigaction != libc::SIG_DFL
            {
                continue;
            }
            let mut sa: libc::sigaction = core::mem::zeroed();
            sa.sa_sigaction = on_fatal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            // Reset to the default action on entry: a second fault inside the handler
            // ends the process instead of recursing.
            sa.sa_flags = libc::SA_RESETHAND;
            libc::sigaction(sig, &sa, core::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::counted;

    #[test]
    fn summary_counts_agree_in_number() {
        assert_eq!(counted(1usize, "variable", "variables"), "1 variable");
        assert_eq!(counted(0usize, "lock", "locks"), "0 locks");
        assert_eq!(counted(2u64, "event", "events"), "2 events");
    }
}
