//! Who keeps a run's record when the rank that keeps it cannot (issue #37). Rank 0 journals every
//! row; at a hung collective, a peer's death or a stop signal it records why and, under the
//! user's own launcher, folds the journal. But rank 0 is one rank like any other: stopped, killed
//! or on a frozen node it records nothing — and, woken by the launcher after its peers gave up,
//! it would describe the ranks that waited for it as the cause. So:
//!
//! - **One record, whoever writes it.** Every writer holds the journal's lock (`flock`) and
//!   first checks that the record is not kept already: the journal is still at its path (not
//!   folded) and the job is still open. A rank that was itself behind finds its peers' record
//!   and adds nothing.
//! - **The waiters speak for a rank 0 that cannot.** A rank whose wait timed out, or that the
//!   launcher ends after a peer died, looks at rank 0: stopped or gone on this host, it records
//!   the job itself, naming rank 0; on another host, it gives rank 0 a grace and records it
//!   silent when rank 0 has not (where the journal is visible to it: a shared file system).

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::results::journal::{self, Journal, Record};
use crate::results::{JobError, JobStatus, ResultsError};

/// How long a writer waits for another one holding the journal.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// One rank's view of the run's ranks and journal, from the ranks' start-up meeting on.
pub struct Keeper {
    journal: PathBuf,
    /// Where this worker's records begin: the journal's length when this rank started.
    from: u64,
    me: usize,
    hosts: Vec<String>,
    pids: Vec<u64>,
}

/// Rank 0 as this rank sees it.
#[derive(Debug, PartialEq)]
pub enum RankZero {
    /// This rank is rank 0.
    Me,
    /// On this host and running (or waiting, like us).
    Running,
    /// On this host and unable to take part: the record's words (`rank 0 (pid 1 on n1) is
    /// stopped (SIGSTOP)`); `dead` when it is gone or has exited.
    Cannot { words: String, dead: bool },
    /// On another host: not inspected.
    Elsewhere,
}

impl Keeper {
    pub fn new(journal: &Path, from: u64, me: usize, hosts: &[String], pids: &[u64]) -> Keeper {
        Keeper {
            journal: journal.to_path_buf(),
            from,
            me,
            hosts: hosts.to_vec(),
            pids: pids.to_vec(),
        }
    }

    /// The journal's length now, for [`Keeper::new`]'s `from`: 0 when this rank cannot see it.
    pub fn start_of(journal: &Path) -> u64 {
        std::fs::metadata(journal).map_or(0, |m| m.len())
    }

    pub fn rank(&self) -> usize {
        self.me
    }

    fn named(&self, r: usize) -> String {
        format!("rank {r} (pid {} on {})", self.pids[r], self.hosts[r])
    }

    /// Rank 0 as this rank sees it.
    pub fn rank_zero(&self) -> RankZero {
        if self.me == 0 {
            return RankZero::Me;
        }
        if self.hosts.first() != self.hosts.get(self.me) {
            return RankZero::Elsewhere;
        }
        match super::stalled::why_not(self.pids[0]) {
            None => RankZero::Running,
            Some(why) => RankZero::Cannot {
                words: format!("{} {why}", self.named(0)),
                dead: super::stalled::is_dead(why),
            },
        }
    }

    /// The peers on this host that died (gone or exited), in the record's words; `None` when
    /// none did.
    pub fn died(&self) -> Option<String> {
        let host = &self.hosts[self.me];
        let dead: Vec<String> = (0..self.pids.len())
            .filter(|r| *r != self.me && &self.hosts[*r] == host)
            .filter_map(|r| {
                let why = super::stalled::why_not(self.pids[r])?;
                super::stalled::is_dead(why).then(|| format!("{} {why}", self.named(r)))
            })
            .collect();
        (!dead.is_empty()).then(|| dead.join("; "))
    }

    /// The journal, locked for this rank alone, while it is still at its path: `None` once it
    /// was folded (another rank kept the record), or when it cannot be seen or locked within
    /// [`LOCK_WAIT`].
    pub fn hold(&self) -> Option<Held> {
        use std::os::unix::fs::MetadataExt;
        let file = std::fs::File::open(&self.journal).ok()?;
        let t = Instant::now();
        // SAFETY: flock on a descriptor this function owns.
        while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            if t.elapsed() > LOCK_WAIT {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let open = file.metadata().ok()?;
        let here = std::fs::symlink_metadata(&self.journal).ok()?;
        (open.nlink() > 0 && here.dev() == open.dev() && here.ino() == open.ino()).then(|| Held {
            _file: file,
            path: self.journal.clone(),
            from: self.from,
        })
    }

    /// Whether this rank, whose wait timed out, records the timeout, and what it adds about rank
    /// 0: rank 0 does unless the job was ended already (then rank 0 was the one behind); another
    /// rank does when rank 0 is stopped or gone on this host, or, on another host, has not
    /// recorded it `grace` later. `None`: not this rank's to record.
    pub fn timeout_turn(&self, grace: Duration) -> Option<(Held, Option<String>)> {
        let silent = match self.rank_zero() {
            RankZero::Me | RankZero::Cannot { .. } => None,
            RankZero::Running => return None,
            RankZero::Elsewhere => {
                std::thread::sleep(grace);
                Some(format!(
                    "{} did not record the timeout within {} of it: silent (stopped, hung, or its node lost)",
                    self.named(0),
                    humantime::format_duration(grace)
                ))
            }
        };
        let held = self.hold()?;
        let open = held.open_jobs().ok()?;
        (!open.is_empty()).then_some((held, silent))
    }
}

/// The journal locked by this rank (released when dropped).
pub struct Held {
    _file: std::fs::File,
    path: PathBuf,
    from: u64,
}

impl Held {
    /// The jobs this worker started that have no end yet.
    pub fn open_jobs(&self) -> Result<Vec<String>, ResultsError> {
        let (records, _) = journal::records(&self.path, self.from)?;
        let mut order = Vec::new();
        for r in &records {
            if let Record::Job { job } = r
                && !order.contains(&job.id)
            {
                order.push(job.id.clone());
            }
        }
        let statuses = journal::statuses(records);
        Ok(order
            .into_iter()
            .filter(|id| statuses.get(id) == Some(&JobStatus::Partial))
            .collect())
    }

    /// Ends every open job with `status` and `error`; how many it ended.
    pub fn end_open(&self, status: JobStatus, error: &JobError) -> Result<usize, ResultsError> {
        let open = self.open_jobs()?;
        let mut j = Journal::open(&self.path)?;
        for id in &open {
            j.append(&Record::End {
                job: id.clone(),
                status,
                errors: vec![error.clone()],
                telemetry: Vec::new(),
            })?;
        }
        Ok(open.len())
    }
}

static CURRENT: Mutex<Option<Arc<Keeper>>> = Mutex::new(None);

/// This process's keeper, once its worker's ranks have met (one rank per process only: the
/// ranks of a threaded process live and die together).
pub fn current() -> Option<Arc<Keeper>> {
    CURRENT.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

pub fn set_current(k: Option<Arc<Keeper>>) {
    *CURRENT.lock().unwrap_or_else(|p| p.into_inner()) = k;
}

/// Reads at most the first bytes of `path` (a test helper's bound).
#[cfg(test)]
fn head(path: &Path) -> String {
    use std::io::Read;
    let mut s = String::new();
    let _ = std::fs::File::open(path).map(|f| f.take(1 << 20).read_to_string(&mut s));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::ErrorKind;

    fn job(id: &str) -> Record {
        let mut r: crate::results::JobResult = serde_json::from_str(
            r#"{"id":"a","test":"a","backend":"mpi","collective":"all_reduce","dtype":"float",
            "op":"sum","root":null,"split":null,
            "settings":{"iters":20,"warmup":1,"agg_iters":1,"cuda_graph":0,"check":true,"average":"avg","in_place":"both"},
            "layout":{"nranks":2,"nodes":1,"processes":2,"gpus_per_process":1},"status":"partial"}"#,
        )
        .unwrap();
        r.id = id.into();
        Record::Job { job: Box::new(r) }
    }

    #[test]
    fn the_record_is_kept_once_and_never_after_the_fold() {
        let dir = std::env::temp_dir().join(format!("baton-keeper-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("journal.jsonl");
        std::fs::write(&path, "").unwrap();
        let from = Keeper::start_of(&path);
        let me = std::process::id() as u64;
        let hosts = vec!["h".to_string(); 2];
        let k = Keeper::new(&path, from, 1, &hosts, &[me, me]);
        Journal::open(&path).unwrap().append(&job("soak")).unwrap();
        let held = k.hold().expect("the journal is there");
        assert_eq!(held.open_jobs().unwrap(), ["soak"]);
        let err = JobError {
            kind: ErrorKind::Timeout,
            message: "m".into(),
            repeat: None,
            requested: None,
            placement: None,
            ras: None,
        };
        assert_eq!(held.end_open(JobStatus::Timeout, &err).unwrap(), 1);
        assert!(held.open_jobs().unwrap().is_empty());
        drop(held);
        assert!(head(&path).contains("\"m\""));
        // Folded (gone from its path): nobody holds it any more.
        std::fs::remove_file(&path).unwrap();
        assert!(k.hold().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
