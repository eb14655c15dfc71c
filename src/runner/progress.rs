//! Progress of `baton run` as its workers report it, and the route of their output. Workers are separate processes (one set
//! per environment set, maybe under mpirun), so rank 0 of each appends a line per finished row
//! to a feed file; the parent tails it. Drawing is the CLI's business: it implements
//! [`Progress`]. The workers' own output is always routed through it: with a bar, so table rows
//! and bar never overwrite each other; without one ([`Passthrough`]), so a closed stdout ends only
//! the printing.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::expand::Job;

/// What the run tells whoever draws its progress.
pub trait Progress: Sync {
    /// The run is about to produce about `rows` rows (a `repeat: { for: … }` job may add more).
    fn begin(&self, rows: u64);
    /// `rows` rows are finished in all, the last one of `job`.
    fn update(&self, rows: u64, job: &str);
    /// One line a worker wrote (`stderr`: on its standard error).
    fn line(&self, line: &str, stderr: bool);
    fn end(&self);
    /// How a node-set run goes: rounds, failed sets, the launcher's refusal. Shown by the CLI;
    /// those that draw nothing for it (a plain run's bar) take the default.
    fn node_sets(&self, _event: &super::set_events::SetEvent<'_>) {}
}

/// No bar: workers' lines are passed on as they come. A closed stdout (`| head`) drops the rest
/// quietly; the workers and their launcher never see it.
pub struct Passthrough;

impl Progress for Passthrough {
    fn begin(&self, _: u64) {}
    fn update(&self, _: u64, _: &str) {}
    fn line(&self, line: &str, stderr: bool) {
        if stderr {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "{line}");
        } else {
            let _ = crate::stdout::print(&format!("{line}\n"));
        }
    }
    fn end(&self) {}
}

/// Rows `jobs` produce: sizes × repeats (the least count of a time-bounded repeat).
pub fn rows<'a>(jobs: impl IntoIterator<Item = &'a Job>) -> u64 {
    jobs.into_iter()
        .map(|j| j.sizes.len() as u64 * u64::from(j.repeat.min_count().max(1)))
        .sum()
}

/// Runs `cmd` to completion while `feed` grows: every new line advances `progress` from `done`
/// rows, and the command's output goes through `progress.line`.
///
/// The command runs in a process group of its own, so a terminal's Ctrl-C reaches this process
/// alone, which decides: at the first stop signal ([`super::interrupt`]) the group gets SIGTERM
/// (mpirun passes it to its ranks; every finished row is journaled already), at the second, or
/// when it has not ended after [`STOP_GRACE`], SIGKILL. The command dies with this process too
/// (`PR_SET_PDEATHSIG`), and inherits `keep_fd` (the output directory's lock), so the directory
/// stays claimed while any of it lives.
pub fn run_watched(
    mut cmd: Command,
    feed: PathBuf,
    done: u64,
    progress: &dyn Progress,
    keep_fd: Option<std::os::fd::RawFd>,
) -> std::io::Result<ExitStatus> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    in_own_group(&mut cmd, keep_fd);
    let mut child: Child = cmd.spawn()?;
    let out = child.stdout.take();
    let err = child.stderr.take();
    let finished = AtomicBool::new(false);
    std::thread::scope(|s| {
        if let Some(o) = out {
            s.spawn(move || forward(o, false, progress));
        }
        if let Some(e) = err {
            s.spawn(move || forward(e, true, progress));
        }
        let tail = s.spawn(|| tail(&feed, done, &finished, progress));
        let status = wait_or_stop(&mut child);
        finished.store(true, Ordering::Relaxed);
        let _ = tail.join();
        status
    })
}

/// Starts `cmd` in a process group of its own that dies with this process, inheriting
/// `keep_fd` (the output directory's lock): how every worker and launcher step is started.
pub fn in_own_group(cmd: &mut Command, keep_fd: Option<std::os::fd::RawFd>) {
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

/// How long a stopped worker may take to go before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

fn wait_or_stop(child: &mut Child) -> std::io::Result<ExitStatus> {
    let group = child.id() as libc::pid_t;
    let mut termed: Option<std::time::Instant> = None;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        let stops = super::interrupt::count();
        if stops > 0 && termed.is_none() {
            // SAFETY: signals the worker's own process group.
            unsafe { libc::kill(-group, libc::SIGTERM) };
            termed = Some(std::time::Instant::now());
        }
        if termed.is_some_and(|t| stops > 1 || t.elapsed() > STOP_GRACE) {
            // SAFETY: as above.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn forward(r: impl Read, stderr: bool, progress: &dyn Progress) {
    for line in BufReader::new(r).lines() {
        match line {
            Ok(l) => progress.line(&l, stderr),
            Err(_) => break,
        }
    }
}

/// Follows `feed` until `finished` is set (then reads it one last time).
fn tail(feed: &PathBuf, mut rows: u64, finished: &AtomicBool, progress: &dyn Progress) {
    let mut offset = 0u64;
    let mut partial = String::new();
    loop {
        let last = finished.load(Ordering::Relaxed);
        if let Ok(mut f) = std::fs::File::open(feed)
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
                if let Some(j) = job {
                    progress.update(rows, &j);
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

    impl Progress for Seen {
        fn begin(&self, _: u64) {}
        fn update(&self, rows: u64, job: &str) {
            self.updates.lock().unwrap().push((rows, job.to_string()));
        }
        fn line(&self, line: &str, stderr: bool) {
            self.lines.lock().unwrap().push((line.to_string(), stderr));
        }
        fn end(&self) {}
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
        let status = run_watched(cmd, feed, 10, &seen, None).unwrap();
        assert!(status.success());
        let updates = seen.updates.lock().unwrap();
        assert_eq!(updates.last().unwrap(), &(13, "b".to_string()));
        assert!(updates.iter().all(|(n, _)| *n > 10));
        let lines = seen.lines.lock().unwrap();
        assert!(lines.contains(&("# table row".to_string(), false)));
        assert!(lines.contains(&("warn".to_string(), true)));
    }
}
