//! Processes of a run under test: waiting for it to get going, signalling it as a shell or
//! Slurm would, and checking that nothing of it survives.

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use baton::results::{Results, journal};

/// What the journal holds now (`None` before it exists).
pub fn journaled(out: &Path) -> Option<Results> {
    journal::rebuild(&out.join(journal::FILE)).ok()
}

pub fn rows(r: &Results) -> usize {
    r.jobs
        .iter()
        .flat_map(|j| &j.repeats)
        .map(|rep| rep.rows.len())
        .sum()
}

/// Waits until the second job has a row: the first is complete and the run is mid-job.
pub fn wait_mid_run(out: &Path) -> usize {
    let t = Instant::now();
    loop {
        if let Some(r) = journaled(out)
            && r.jobs.len() >= 2
            && r.jobs[1]
                .repeats
                .first()
                .is_some_and(|x| !x.rows.is_empty())
        {
            return rows(&r);
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the run never got going"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `child` to exit within `limit`: its exit code and stderr. Stderr is drained while
/// it runs, so a run that prints more than a pipe holds is never blocked by the test itself.
pub fn wait(child: Child, limit: Duration) -> (i32, String) {
    ended_within(child, limit)
        .unwrap_or_else(|err| panic!("still running after {limit:?}; it printed:\n{err}"))
}

/// As [`wait`], but past `limit` `Err` holds what it printed so far, once it was killed: its
/// whole process group where it leads one (stopped grandchildren included), else itself.
pub fn ended_within(mut child: Child, limit: Duration) -> Result<(i32, String), String> {
    use std::io::Read;
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut err = String::new();
        let _ = stderr.read_to_string(&mut err);
        let _ = tx.send(err);
    });
    let t = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Ok((status.code().unwrap_or(-1), rx.recv().unwrap_or_default()));
        }
        if t.elapsed() > limit {
            // SAFETY: signals the process group this test started, if the child leads one.
            if unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) } != 0 {
                let _ = child.kill();
            }
            let _ = child.wait();
            // What it printed so far; a grandchild may still hold the pipe open.
            return Err(rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Processes whose command line mentions `needle` (the run's output directory).
pub fn survivors(needle: &Path) -> Vec<String> {
    let needle = needle.to_string_lossy().to_string();
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.chars().all(|c| c.is_ascii_digit()) || name == me {
            continue;
        }
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            let zombie = std::fs::read_to_string(e.path().join("stat"))
                .is_ok_and(|s| s.split(") ").nth(1).is_some_and(|t| t.starts_with('Z')));
            if cmd.contains(&needle) && !zombie {
                found.push(format!("{name}: {cmd}"));
            }
        }
    }
    found
}

pub fn none_survive(out: &Path) {
    let t = Instant::now();
    while !survivors(out).is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "workers outlived the run: {:?}",
            survivors(out)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn signal(pid: i32, sig: i32) {
    // SAFETY: signals a process (group) this test started.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
}
