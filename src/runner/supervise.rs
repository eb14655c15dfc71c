//! The one child supervisor: how every worker, launcher step and node probe of a run is started,
//! watched and stopped, and where its output goes.
//!
//! A child runs in a process group of its own, so a terminal's Ctrl-C reaches this process
//! alone, which decides: at the first stop signal ([`super::interrupt`]) or when its [`Limit`]
//! passes the group gets SIGTERM (mpirun and srun pass it to their ranks; every finished row is
//! journaled already), at the second signal, or when it has not ended after [`STOP_GRACE`],
//! SIGKILL. The child dies with this process too (`PR_SET_PDEATHSIG`) and inherits the output
//! directory's lock, so the directory stays claimed while any of it lives.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::events::{Events, RunEvent};

/// How long a stopped child may take to go before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// When a child is given up on (beyond a stop signal, which always ends it).
pub enum Limit {
    /// Only a stop signal ends it.
    None,
    /// After this long in all.
    Total(Duration),
    /// After this long without the file growing.
    Silence(PathBuf, Duration),
}

/// Where a child's output goes.
pub enum Output<'a> {
    /// Line by line as events (workers' output always passes through the parent, so a closed
    /// stdout never reaches mpirun), with `feed` (rank 0's line per finished row) counting rows
    /// on from `done`.
    Relay {
        events: &'a dyn Events,
        feed: PathBuf,
        done: u64,
    },
    /// Both streams appended to this file (a node set's step log, or the null device).
    File(&'a File),
}

/// Why a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// On its own.
    Exited,
    /// Its limit passed and it was stopped.
    Limit,
    /// A stop signal of the run ended it.
    Stopped,
}

/// How a child ended.
#[derive(Debug, Clone, Copy)]
pub struct Ended {
    pub status: ExitStatus,
    pub cause: Cause,
}

/// Runs `cmd` to its end under `limit`, its output routed as `output` says, inheriting `keep_fd`
/// (the output directory's lock).
pub fn supervise(
    mut cmd: Command,
    output: Output<'_>,
    limit: &Limit,
    keep_fd: Option<std::os::fd::RawFd>,
) -> std::io::Result<Ended> {
    in_own_group(&mut cmd, keep_fd);
    match output {
        Output::File(log) => {
            cmd.stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log.try_clone()?);
            let mut child = cmd.spawn()?;
            wait(&mut child, limit)
        }
        Output::Relay { events, feed, done } => {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
            let mut child = cmd.spawn()?;
            relay(&mut child, events, &feed, done, limit)
        }
    }
}

/// Waits for `child` while its output is passed on and `feed` is followed.
fn relay(
    child: &mut Child,
    events: &dyn Events,
    feed: &Path,
    done: u64,
    limit: &Limit,
) -> std::io::Result<Ended> {
    let out = child.stdout.take();
    let err = child.stderr.take();
    let finished = AtomicBool::new(false);
    std::thread::scope(|s| {
        if let Some(o) = out {
            s.spawn(move || forward(o, false, events));
        }
        if let Some(e) = err {
            s.spawn(move || forward(e, true, events));
        }
        let tail = s.spawn(|| tail(feed, done, &finished, events));
        let ended = wait(child, limit);
        finished.store(true, Ordering::Relaxed);
        let _ = tail.join();
        ended
    })
}

/// Starts `cmd` in a process group of its own that dies with this process, inheriting
/// `keep_fd` (the output directory's lock).
fn in_own_group(cmd: &mut Command, keep_fd: Option<std::os::fd::RawFd>) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    // SAFETY: getpid before the fork; the closure only makes async-signal-safe syscalls.
    let parent = unsafe { libc::getpid() };
    unsafe {
        cmd.pre_exec(move || {
            super::interrupt::die_with_parent(libc::SIGTERM, parent)?;
            if let Some(fd) = keep_fd {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags >= 0 {
                    libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
                }
            }
            Ok(())
        });
    }
}

/// Waits for `child`: SIGTERM to its group at a stop signal or when `limit` passes, SIGKILL at
/// a second signal or [`STOP_GRACE`] later.
fn wait(child: &mut Child, limit: &Limit) -> std::io::Result<Ended> {
    let group = child.id() as libc::pid_t;
    let mut quiet = Quiet::new();
    let mut termed: Option<(Instant, Cause)> = None;
    loop {
        if let Some(status) = child.try_wait()? {
            let cause = termed.map_or(Cause::Exited, |(_, c)| c);
            return Ok(Ended { status, cause });
        }
        let stops = super::interrupt::count();
        let over = quiet.over(limit);
        if termed.is_none() && (stops > 0 || over) {
            // SAFETY: signals the child's own process group.
            unsafe { libc::kill(-group, libc::SIGTERM) };
            let cause = if stops > 0 {
                Cause::Stopped
            } else {
                Cause::Limit
            };
            termed = Some((Instant::now(), cause));
        }
        if termed.is_some_and(|(t, _)| stops > 1 || t.elapsed() > STOP_GRACE) {
            // SAFETY: as above.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How long a child has gone without progress, as its [`Limit`] measures it.
struct Quiet {
    since: Instant,
    size: u64,
    checked: Instant,
}

impl Quiet {
    fn new() -> Quiet {
        Quiet {
            since: Instant::now(),
            size: 0,
            checked: Instant::now(),
        }
    }

    fn over(&mut self, limit: &Limit) -> bool {
        match limit {
            Limit::None => false,
            Limit::Total(d) => self.since.elapsed() > *d,
            Limit::Silence(file, d) => {
                if self.checked.elapsed() >= Duration::from_secs(1) {
                    self.checked = Instant::now();
                    let now = std::fs::metadata(file).map_or(0, |m| m.len());
                    if now != self.size {
                        self.size = now;
                        self.since = Instant::now();
                    }
                }
                self.since.elapsed() > *d
            }
        }
    }
}

fn forward(r: impl Read, stderr: bool, events: &dyn Events) {
    for line in BufReader::new(r).lines() {
        match line {
            Ok(line) => events.event(&RunEvent::WorkerLine {
                line: &line,
                stderr,
            }),
            Err(_) => break,
        }
    }
}

/// Follows `feed` until `finished` is set (then reads it one last time).
fn tail(feed: &Path, mut rows: u64, finished: &AtomicBool, events: &dyn Events) {
    let mut offset = 0u64;
    let mut partial = String::new();
    loop {
        let last = finished.load(Ordering::Relaxed);
        if let Ok(mut f) = File::open(feed)
            && f.seek(SeekFrom::Start(offset)).is_ok()
        {
            let mut chunk = String::new();
            if let Ok(n) = f.read_to_string(&mut chunk) {
                offset += n as u64;
                partial.push_str(&chunk);
                let mut job = None;
                while let Some(end) = partial.find('\n') {
                    rows += 1;
                    job = Some(partial[..end].to_string());
                    partial.drain(..=end);
                }
                if let Some(job) = job {
                    events.event(&RunEvent::Rows { rows, job: &job });
                }
            }
        }
        if last {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Seen {
        updates: Mutex<Vec<(u64, String)>>,
        lines: Mutex<Vec<(String, bool)>>,
    }

    impl Events for Seen {
        fn event(&self, e: &RunEvent<'_>) {
            match e {
                RunEvent::Rows { rows, job } => {
                    self.updates.lock().unwrap().push((*rows, job.to_string()))
                }
                RunEvent::WorkerLine { line, stderr } => {
                    self.lines.lock().unwrap().push((line.to_string(), *stderr))
                }
                _ => {}
            }
        }
    }

    #[test]
    fn a_growing_feed_advances_and_output_is_forwarded() {
        let dir = std::env::temp_dir().join(format!("baton-progress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let feed = dir.join("set-0.progress");
        let _ = std::fs::remove_file(&feed);
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!(
            "echo '# table row'; echo warn >&2; echo a >> {f}; sleep 0.3; echo a >> {f}; echo b >> {f}",
            f = feed.display()
        ));
        let seen = Seen::default();
        let output = Output::Relay {
            events: &seen,
            feed,
            done: 10,
        };
        let ended = supervise(cmd, output, &Limit::None, None).unwrap();
        assert!(ended.status.success());
        assert_eq!(ended.cause, Cause::Exited);
        let updates = seen.updates.lock().unwrap();
        assert_eq!(updates.last().unwrap(), &(13, "b".to_string()));
        assert!(updates.iter().all(|(n, _)| *n > 10));
        let lines = seen.lines.lock().unwrap();
        assert!(lines.contains(&("# table row".to_string(), false)));
        assert!(lines.contains(&("warn".to_string(), true)));
    }

    #[test]
    fn a_child_past_its_limit_is_stopped_and_says_so() {
        let null = File::create("/dev/null").unwrap();
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let t0 = Instant::now();
        let limit = Limit::Total(Duration::from_millis(200));
        let ended = supervise(cmd, Output::File(&null), &limit, None).unwrap();
        assert_eq!(ended.cause, Cause::Limit);
        assert!(!ended.status.success());
        assert!(t0.elapsed() < Duration::from_secs(5));
    }
}
