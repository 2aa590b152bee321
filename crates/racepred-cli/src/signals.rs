//! Ending on Ctrl-C or `kill` without leaving temporary files behind.
//!
//! Output files are written through temporary files renamed into place at the end
//! (`racepred::trace::write::AtomicFile`); a fatal signal would end the process before
//! their `Drop` runs. [`remove_temporaries_on_signal`] blocks SIGINT, SIGTERM, SIGHUP and
//! SIGQUIT in every thread (call it before any other thread starts: threads inherit the
//! mask) and waits for them on a thread of its own, which removes the temporary files and
//! then ends the process by the same signal, so the caller still sees how it ended.
//! Not for `record`: the program it runs would inherit the blocked signals.

const SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

fn signal_set() -> libc::sigset_t {
    // SAFETY: `sigemptyset` initialises the set it is given; `sigaddset` gets valid signals.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

pub fn remove_temporaries_on_signal() {
    let set = signal_set();
    // SAFETY: `set` is an initialised signal set; the old mask is not wanted.
    let blocked = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if blocked != 0 {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is initialised and `sig` is a valid place for the answer.
            if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
                continue;
            }
            racepred::trace::write::remove_temporaries();
            // SAFETY: restoring the default action of a valid signal, unblocking it in this
            // thread and raising it here ends the process by that signal.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                let mut one: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut one);
                libc::sigaddset(&mut one, sig);
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
                libc::raise(sig);
            }
            // Not reached for the signals above (their default action ends the process).
            std::process::exit(128 + sig);
        });
    if spawned.is_err() {
        // No thread to receive them: let the signals act as before.
        // SAFETY: as above.
        unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
    }
}
