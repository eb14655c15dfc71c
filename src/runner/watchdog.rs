//! Catches hung collectives. A blocked MPI or NCCL call cannot be interrupted from its own
//! thread, so a watchdog thread notices the deadline passing, records the timeout through the
//! callback (which persists results measured so far) and ends the process with exit code 4;
//! the launcher then tears down the other ranks.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

type OnExpire = Box<dyn Fn(&str) + Send + 'static>;

struct State {
    deadline: Option<(Instant, String)>,
    stop: bool,
}

pub struct Watchdog {
    state: Arc<(Mutex<State>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    /// Starts the watchdog thread; `on_expire` runs once, with the armed description, before
    /// the process exits with code 4.
    pub fn start(on_expire: OnExpire) -> Watchdog {
        let state = Arc::new((
            Mutex::new(State {
                deadline: None,
                stop: false,
            }),
            Condvar::new(),
        ));
        let s = state.clone();
        let thread = std::thread::spawn(move || {
            let (lock, cv) = &*s;
            let mut st = lock.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if st.stop {
                    return;
                }
                match &st.deadline {
                    None => st = cv.wait(st).unwrap_or_else(|p| p.into_inner()),
                    Some((when, what)) => {
                        let now = Instant::now();
                        if now >= *when {
                            let what = what.clone();
                            drop(st);
                            on_expire(&what);
                            std::process::exit(crate::exit::Exit::Timeout.code());
                        }
                        let wait = *when - now;
                        st = cv
                            .wait_timeout(st, wait)
                            .unwrap_or_else(|p| p.into_inner())
                            .0;
                    }
                }
            }
        });
        Watchdog {
            state,
            thread: Some(thread),
        }
    }

    /// Arms the deadline `limit` from now for the work described by `what`.
    pub fn arm(&self, limit: Duration, what: String) {
        let (lock, cv) = &*self.state;
        lock.lock().unwrap_or_else(|p| p.into_inner()).deadline =
            Some((Instant::now() + limit, what));
        cv.notify_all();
    }

    pub fn disarm(&self) {
        let (lock, cv) = &*self.state;
        lock.lock().unwrap_or_else(|p| p.into_inner()).deadline = None;
        cv.notify_all();
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        {
            let (lock, cv) = &*self.state;
            lock.lock().unwrap_or_else(|p| p.into_inner()).stop = true;
            cv.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
