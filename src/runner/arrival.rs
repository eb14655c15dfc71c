//! Which ranks reached the ranks' start-up meeting (issue #37). Before their first job a
//! worker's ranks meet to share hosts, pids and devices; until they have, no rank knows the
//! others' pids, so a rank stopped or stuck before it cannot be named from the meeting's answer
//! — there is none. So each rank, on its way into the meeting, announces itself (rank, pid,
//! host: one small file, written atomically, in a directory `baton run` makes fresh for every
//! worker it starts), and whichever rank's start-up watchdog fires says who has not:
//!
//! - an announced rank of this host that is stopped or gone (`stalled`) — it arrived, then
//!   could not go on; an announced rank that runs arrived and is never named;
//! - a rank that never announced: found on this host among the launcher's processes (Open MPI
//!   and PMIx give each rank its job and rank in its environment), stopped, gone, or running
//!   but not arrived; not found, it is said to be unseen here, no more.
//!
//! The first rank to record its view keeps the record (a hard link: one writer wins); the
//! parent reads it into the worker's jobs' error.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The record's file in the directory, kept by the first rank whose watchdog fires.
const SAID: &str = "said";

/// Bound on one announcement, the record, or a process's environment read back.
const READ_LIMIT: u64 = 4096;
const ENVIRON_LIMIT: u64 = 1 << 18;

/// The launcher's variables naming a process's job and its rank: PMIx (Open MPI 4 and later,
/// srun --mpi=pmix), then Open MPI's own.
const LAUNCHER_KEYS: [(&str, &str); 2] = [
    ("PMIX_NAMESPACE", "PMIX_RANK"),
    ("OMPI_MCA_ess_base_jobid", "OMPI_COMM_WORLD_RANK"),
];

/// The announcements directory of the worker whose row feed is `feed` (`parts/set-0.progress`
/// → `parts/set-0.arrived`).
pub fn dir_for(feed: &Path) -> PathBuf {
    feed.with_extension("arrived")
}

/// The announcements directory of the ranks the user's own launcher started into `out`
/// (`OUT/.arrived-JOB`, JOB the launcher's name for this job), made by whichever rank comes
/// first: no rank can make it fresh for the others before they meet, so it is one per launcher
/// job. `None` when the launcher names no job, or it cannot be made (rank 0 says why `out` is
/// unusable when it claims it).
pub fn for_launcher_job(out: &Path) -> Option<PathBuf> {
    let job = LAUNCHER_KEYS
        .iter()
        .find_map(|(j, _)| std::env::var(j).ok())?;
    let job: String = job
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(64)
        .collect();
    crate::output::ensure_dir(out).ok()?;
    let dir = out.join(format!(".arrived-{job}"));
    match std::fs::create_dir(&dir) {
        Ok(()) => Some(dir),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Some(dir),
        Err(_) => None,
    }
}

/// Makes `dir` fresh for a worker about to start (an earlier attempt's or run's announcements
/// would say ranks arrived that did not).
pub fn prepare(dir: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(dir)?,
        Ok(_) => std::fs::remove_file(dir)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::create_dir(dir)
}

/// What a worker's start-up watchdog recorded, in the record's words; `None` when no rank did.
pub fn said(dir: &Path) -> Option<String> {
    read_bounded(&dir.join(SAID), READ_LIMIT).filter(|s| !s.is_empty())
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Announcement {
    pid: u64,
    host: String,
}

/// One rank's side of the start-up announcements.
pub struct Arrival {
    dir: PathBuf,
    me: usize,
    size: usize,
    host: String,
    /// Whether this rank has reached the meeting.
    arrived: bool,
}

impl Arrival {
    /// `None` when `dir` is not a directory `baton run` made (nothing to announce into).
    pub fn new(dir: PathBuf, me: usize, size: usize) -> Option<Arrival> {
        std::fs::symlink_metadata(&dir)
            .is_ok_and(|m| m.is_dir())
            .then(|| Arrival {
                dir,
                me,
                size,
                host: crate::host::hostname(),
                arrived: false,
            })
    }

    /// Where the ranks announce themselves.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file(&self, r: usize) -> PathBuf {
        self.dir.join(format!("rank-{r}"))
    }

    /// This rank is on its way into the meeting.
    pub fn announce(&mut self) {
        let a = Announcement {
            pid: std::process::id() as u64,
            host: self.host.clone(),
        };
        let text = serde_json::to_vec(&a).unwrap_or_default();
        // Arrived, whether or not the others can read it (a full disk): this rank never names
        // itself then.
        let _ = crate::output::write_atomic(&self.file(self.me), &text);
        self.arrived = true;
    }

    fn announcement(&self, r: usize) -> Option<Announcement> {
        serde_json::from_str(&read_bounded(&self.file(r), READ_LIMIT)?).ok()
    }

    /// The ranks that did not reach the meeting or cannot go on in it, as this rank sees them:
    /// `rank 1 (pid 4242 on n1) is stopped (SIGSTOP)`, `rank 2 (pid 4243 on n1) is running but
    /// has not arrived`, `rank 3 has not arrived (not seen on n1)`.
    pub fn missing(&self) -> String {
        let named = |r: usize, pid: u64, host: &str| format!("rank {r} (pid {pid} on {host})");
        let mut seen = Vec::new();
        let mut unseen = Vec::new();
        for r in 0..self.size {
            if r == self.me {
                if !self.arrived {
                    let pid = std::process::id() as u64;
                    seen.push(format!(
                        "{} is running but has not arrived",
                        named(r, pid, &self.host)
                    ));
                }
                continue;
            }
            match self.announcement(r) {
                // Arrived: named only where it is seen unable to go on.
                Some(a) => {
                    if a.host == self.host
                        && let Some(why) = super::stalled::why_not(a.pid)
                    {
                        seen.push(format!("{} {why}", named(r, a.pid, &a.host)));
                    }
                }
                None => unseen.push(r),
            }
        }
        let found = launcher_siblings(&unseen);
        for r in unseen {
            match found.get(&r) {
                Some(pid) => seen.push(match super::stalled::why_not(*pid) {
                    Some(why) => format!("{} {why} before the meeting", named(r, *pid, &self.host)),
                    None => format!(
                        "{} is running but has not arrived",
                        named(r, *pid, &self.host)
                    ),
                }),
                None => seen.push(format!(
                    "rank {r} has not arrived (not seen on {}: on another host, or not started)",
                    self.host
                )),
            }
        }
        if seen.is_empty() {
            format!(
                "every rank arrived and none is stopped or gone on {}, but their meeting did not finish",
                self.host
            )
        } else {
            seen.join("; ")
        }
    }

    /// The worker's record of who did not arrive, and whether this rank wrote it: this rank's
    /// view ([`Arrival::missing`]) unless another rank's was kept first — a rank stopped and
    /// woken after its peers gave up finds theirs, and never describes the ranks that waited
    /// for it.
    pub fn record(&self) -> (String, bool) {
        if let Some(kept) = said(&self.dir) {
            return (kept, false);
        }
        let mine = self.missing();
        if self.keep(&mine) {
            return (mine, true);
        }
        (said(&self.dir).unwrap_or(mine), false)
    }

    /// Keeps `words` as the worker's record unless another rank kept its own first; whether
    /// this rank's are the record.
    fn keep(&self, words: &str) -> bool {
        let mine = self.dir.join(format!("{SAID}.{}", self.me));
        crate::output::write_atomic(&mine, words.as_bytes()).is_ok()
            && std::fs::hard_link(&mine, self.dir.join(SAID)).is_ok()
    }
}

/// Reads at most `limit` bytes of `path`, never through a link.
fn read_bounded(path: &Path, limit: u64) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut s = String::new();
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .ok()?
        .take(limit)
        .read_to_string(&mut s)
        .ok()?;
    Some(s)
}

/// The processes of this host that the launcher started as `ranks` of this process's job, by
/// rank: read from their environments (`/proc/PID/environ`, each bounded). A rank's own
/// children inherit its environment: of several, the one whose parent is not among them.
fn launcher_siblings(ranks: &[usize]) -> std::collections::BTreeMap<usize, u64> {
    let mut found = std::collections::BTreeMap::new();
    if ranks.is_empty() {
        return found;
    }
    let Some((job_key, job, rank_key)) = LAUNCHER_KEYS
        .iter()
        .find_map(|(j, r)| Some((*j, std::env::var(j).ok()?, *r)))
    else {
        return found;
    };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    let me = std::process::id() as u64;
    let mut candidates: std::collections::BTreeMap<usize, Vec<u64>> = Default::default();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u64>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Some(env) = read_bytes(&format!("/proc/{pid}/environ"), ENVIRON_LIMIT) else {
            continue;
        };
        let var = |k: &str| {
            env.split(|b| *b == 0).find_map(|kv| {
                let kv = std::str::from_utf8(kv).ok()?;
                kv.strip_prefix(k)?.strip_prefix('=').map(str::to_string)
            })
        };
        if var(job_key).as_deref() != Some(job.as_str()) {
            continue;
        }
        if let Some(r) = var(rank_key).and_then(|r| r.parse::<usize>().ok())
            && ranks.contains(&r)
        {
            candidates.entry(r).or_default().push(pid);
        }
    }
    for (r, pids) in candidates {
        let top: Vec<u64> = pids
            .iter()
            .copied()
            .filter(|p| parent(*p).is_none_or(|pp| !pids.contains(&pp)))
            .collect();
        if let [pid] = top[..] {
            found.insert(r, pid);
        }
    }
    found
}

fn read_bytes(path: &str, limit: u64) -> Option<Vec<u8>> {
    let mut v = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(limit)
        .read_to_end(&mut v)
        .ok()?;
    Some(v)
}

/// The parent pid of `pid`, from `/proc/PID/stat` (`PID (COMM) S PPID …`).
fn parent(pid: u64) -> Option<u64> {
    let text = read_bounded(Path::new(&format!("/proc/{pid}/stat")), READ_LIMIT)?;
    let after = &text[text.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_that_did_not_announce_or_stopped_after_is_named_and_no_other() {
        let dir = std::env::temp_dir().join(format!("baton-arrival-{}", std::process::id()));
        prepare(&dir).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as u64;
        let host = crate::host::hostname();
        // Rank 1 arrived (this process stands in for it); rank 2 arrived, then stopped; rank 3
        // never announced.
        let mut me = Arrival::new(dir.clone(), 0, 4).unwrap();
        me.announce();
        let say = |r: usize, pid: u64| {
            let text = format!(r#"{{"pid":{pid},"host":"{host}"}}"#);
            std::fs::write(dir.join(format!("rank-{r}")), text).unwrap();
        };
        say(1, std::process::id() as u64);
        say(2, pid);
        // SAFETY: signals the child this test started.
        unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
        let t = std::time::Instant::now();
        while super::super::stalled::why_not(pid).is_none() && t.elapsed().as_secs() < 5 {
            std::thread::yield_now();
        }
        let words = me.missing();
        assert!(
            words.starts_with(&format!(
                "rank 2 (pid {pid} on {host}) is stopped (SIGSTOP); rank 3 "
            )),
            "{words}"
        );
        assert!(
            !words.contains("rank 0") && !words.contains("rank 1"),
            "{words}"
        );
        // One record: the first rank's.
        assert_eq!(me.record(), (words.clone(), true));
        // Another rank finds it kept, and says it, not its own view.
        let other = Arrival::new(dir.clone(), 1, 4).unwrap();
        assert!(!other.keep("another view"));
        assert_eq!(other.record(), (words.clone(), false));
        assert_eq!(said(&dir).as_deref(), Some(words.as_str()));
        // A fresh worker starts from no announcements.
        prepare(&dir).unwrap();
        assert_eq!(said(&dir), None);
        child.kill().unwrap();
        child.wait().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_link_planted_where_the_announcements_go_is_replaced_not_followed() {
        let base = std::env::temp_dir().join(format!("baton-arrival-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let elsewhere = base.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join(SAID), "planted").unwrap();
        let dir = base.join("set-0.arrived");
        std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
        assert_eq!(
            said(&dir),
            Some("planted".into()),
            "read through the link before"
        );
        prepare(&dir).unwrap();
        assert!(std::fs::symlink_metadata(&dir).unwrap().is_dir());
        assert_eq!(said(&dir), None);
        assert!(
            elsewhere.join(SAID).is_file(),
            "the link's target is left alone"
        );
        // The record itself is never read through a link.
        std::os::unix::fs::symlink(elsewhere.join(SAID), dir.join(SAID)).unwrap();
        assert_eq!(said(&dir), None);
        let _ = std::fs::remove_dir_all(&base);
    }
}
