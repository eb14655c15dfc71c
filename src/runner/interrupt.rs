//! Signals that stop a run: Ctrl-C (SIGINT to the terminal's process group), SIGTERM (Slurm at
//! the time limit, `scancel`, a CI runner giving up) and SIGHUP (the terminal went away). The
//! first asks the run to stop: no new job starts, the workers are told, what they measured is
//! folded into `results.json`, JUnit and the report are written for what ran. A second one ends
//! at once — the journal already holds every finished row.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

static COUNT: AtomicUsize = AtomicUsize::new(0);
static LAST: AtomicI32 = AtomicI32::new(0);

const SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Counts SIGINT, SIGTERM and SIGHUP from now on instead of dying of them.
pub fn install() -> std::io::Result<()> {
    for sig in SIGNALS {
        // SAFETY: the handler only stores to atomics, which is async-signal-safe.
        unsafe {
            signal_hook::low_level::register(sig, move || {
                LAST.store(sig, Ordering::SeqCst);
                COUNT.fetch_add(1, Ordering::SeqCst);
            })?;
        }
    }
    Ok(())
}

/// How many stop signals arrived.
pub fn count() -> usize {
    COUNT.load(Ordering::SeqCst)
}

pub fn requested() -> bool {
    count() > 0
}

/// The last stop signal's name, for the results (`SIGTERM`).
pub fn signal_name() -> Option<&'static str> {
    name(LAST.load(Ordering::SeqCst))
}

pub fn name(sig: i32) -> Option<&'static str> {
    match sig {
        libc::SIGINT => Some("SIGINT"),
        libc::SIGTERM => Some("SIGTERM"),
        libc::SIGHUP => Some("SIGHUP"),
        _ => None,
    }
}

/// Runs `on_first` on a thread of its own when the first stop signal arrives and ends the process
/// with `code` right away at the second. For ranks under a launcher, whose main thread may sit in
/// a collective that never returns.
pub fn on_signal(
    code: i32,
    on_first: impl FnOnce(&'static str) + Send + 'static,
) -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new(SIGNALS)?;
    std::thread::Builder::new()
        .name("baton-signals".into())
        .spawn(move || {
            let mut first = Some(on_first);
            for sig in signals.forever() {
                LAST.store(sig, Ordering::SeqCst);
                COUNT.fetch_add(1, Ordering::SeqCst);
                match first.take() {
                    Some(f) => {
                        f(name(sig).unwrap_or("signal"));
                    }
                    // SAFETY: ends the process without running destructors of objects other
                    // threads are using (MPI, CUDA); nothing unwritten remains in our buffers.
                    None => unsafe { libc::_exit(code) },
                }
            }
        })?;
    Ok(())
}

/// Sets the calling process (between fork and exec) to receive `sig` when its parent dies, so no
/// worker outlives the `baton run` that started it. Returns an error if the parent is gone already.
///
/// # Safety
/// Only for `CommandExt::pre_exec`: calls nothing but async-signal-safe syscalls.
pub unsafe fn die_with_parent(sig: i32, parent: libc::pid_t) -> std::io::Result<()> {
    // SAFETY: prctl and getppid are async-signal-safe syscalls.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::getppid() != parent {
            return Err(std::io::Error::other("the parent exited"));
        }
    }
    Ok(())
}
