//! Whom a hung collective waits for, as far as rank 0 can tell when its watchdog fires. A
//! collective that never finishes says nothing about which rank is missing, and rank 0 cannot ask
//! the others (its own MPI or NCCL call is the one blocked). What it can do is look at the ranks
//! on its own host, whose pids it gathered at the start: one that is stopped (SIGSTOP, a
//! debugger), a zombie or gone can never take part. Ranks on other hosts are not inspected.

use std::io::Read;

/// What rank 0 saw of ranks on its own host that cannot take part, e.g. `rank 1 (pid 4242 on
/// n1) is stopped (SIGSTOP or a debugger)`; `None` when it saw nothing wrong.
pub fn ranks_not_running(me: usize, hosts: &[String], pids: &[u64]) -> Option<String> {
    let mine = std::process::id() as u64;
    let seen: Vec<String> = hosts
        .iter()
        .zip(pids)
        .enumerate()
        .filter(|(r, (h, pid))| *r != me && *h == &hosts[me] && **pid != mine)
        .filter_map(|(r, (h, pid))| {
            let why = why_not_running(state(*pid))?;
            Some(format!("rank {r} (pid {pid} on {h}) {why}"))
        })
        .collect();
    (!seen.is_empty()).then(|| seen.join("; "))
}

/// Why the process `pid` (on this host) cannot take part, in the record's words (`is stopped
/// (SIGSTOP)`, `is gone`, …); `None` while it runs or sleeps.
pub fn why_not(pid: u64) -> Option<&'static str> {
    why_not_running(state(pid))
}

/// Whether those words say the process is dead (gone or exited), not only stopped.
pub fn is_dead(why: &str) -> bool {
    matches!(why, "is gone" | "has exited")
}

fn why_not_running(state: Option<char>) -> Option<&'static str> {
    Some(match state {
        None => "is gone",
        Some('T') => "is stopped (SIGSTOP)",
        Some('t') => "is stopped by a debugger",
        Some('Z' | 'X') => "has exited",
        Some(_) => return None,
    })
}

/// The state letter of `/proc/PID/stat` (`R`, `S`, `T`, …), `None` when there is no such process.
fn state(pid: u64) -> Option<char> {
    let mut text = String::new();
    std::fs::File::open(format!("/proc/{pid}/stat"))
        .ok()?
        .take(4096)
        .read_to_string(&mut text)
        .ok()?;
    // `PID (COMM) S …`: the command name may itself hold `) `, so the last one ends it.
    let after = &text[text.rfind(')')? + 1..];
    after.trim_start().chars().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_or_vanished_rank_on_this_host_is_named() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as u64;
        let hosts: Vec<String> = ["a", "a", "b"].map(String::from).to_vec();
        let me = std::process::id() as u64;
        assert_eq!(ranks_not_running(0, &hosts, &[me, pid, 1]), None);
        // SAFETY: signals the child this test started.
        unsafe { libc::kill(child.id() as i32, libc::SIGSTOP) };
        let t = std::time::Instant::now();
        while state(pid) != Some('T') && t.elapsed().as_secs() < 5 {
            std::thread::yield_now();
        }
        assert_eq!(
            ranks_not_running(0, &hosts, &[me, pid, 1]).as_deref(),
            Some(format!("rank 1 (pid {pid} on a) is stopped (SIGSTOP)").as_str()),
            "rank 2 is on another host: not inspected"
        );
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            ranks_not_running(0, &hosts, &[me, pid, 1]).is_some_and(|s| s.ends_with("is gone")),
        );
    }
}
