//! A run's output directory: claimed by one run at a time, its earlier results never destroyed
//! silently, and its `results.json` always rebuildable from the journal beside it.

use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

use crate::results::journal::{self, Journal};
use crate::results::{self, JobStatus, Results, ResultsError};

#[derive(Debug, thiserror::Error)]
pub enum OutDirError {
    #[error(
        "{dir}: another baton run is writing here ({holder}); wait for it, stop it, or choose another -o"
    )]
    Busy { dir: String, holder: String },
    #[error(
        "{dir}: --resume: these results were measured with another plan ({why}); resume with the plan that made them, or run into a new -o"
    )]
    OtherPlan { dir: String, why: String },
    #[error(
        "{dir}: --resume: these results were measured on {had}, this run's node list is {have}; resume on the same nodes (--nodes) or run into a new -o"
    )]
    OtherNodes {
        dir: String,
        had: String,
        have: String,
    },
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

impl OutDirError {
    /// The user's input is the problem (exit 2): the directory given, another run's, or a resume
    /// of something else; otherwise the run failed (exit 3).
    pub fn is_invalid_input(&self) -> bool {
        match self {
            OutDirError::Busy { .. }
            | OutDirError::OtherPlan { .. }
            | OutDirError::OtherNodes { .. } => true,
            OutDirError::Output(e) => e.is_invalid_path(),
            OutDirError::Results(_) | OutDirError::Io { .. } => false,
        }
    }
}

/// The claimed directory; the claim ends when this is dropped or the process dies (`flock`).
pub struct OutDir {
    dir: PathBuf,
    lock: std::fs::File,
}

/// What a run starts from.
pub struct Start {
    pub results: Results,
    pub journal: Journal,
    /// Where the earlier results were kept aside, when a new run replaced them.
    pub kept_aside: Option<PathBuf>,
}

impl OutDir {
    /// Claims `dir` for this process (creating it), or says who holds it.
    pub fn claim(dir: &Path) -> Result<OutDir, OutDirError> {
        crate::output::ensure_dir(dir)?;
        let path = dir.join(".baton.lock");
        let io = |source| OutDirError::Io {
            path: path.display().to_string(),
            source,
        };
        let mut lock = crate::output::open_read_write(&path)?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let holder = std::fs::read_to_string(&path)
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "pid unknown".into());
            return Err(OutDirError::Busy {
                dir: dir.display().to_string(),
                holder,
            });
        }
        use std::io::Write;
        lock.set_len(0).map_err(io)?;
        write!(
            lock,
            "pid {} on {}",
            std::process::id(),
            crate::host::hostname()
        )
        .map_err(io)?;
        Ok(OutDir {
            dir: dir.to_path_buf(),
            lock,
        })
    }

    /// The lock's descriptor, for workers to inherit: the directory stays claimed while any
    /// process of the run lives, even one orphaned by a killed parent.
    pub fn lock_fd(&self) -> RawFd {
        self.lock.as_raw_fd()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn results_path(&self) -> PathBuf {
        self.dir.join("results.json")
    }

    pub fn journal_path(&self) -> PathBuf {
        self.dir.join(journal::FILE)
    }

    /// What is in the directory already: the journal of an unfinished run, else `results.json`.
    pub fn existing(&self) -> Result<Option<Results>, OutDirError> {
        let j = self.journal_path();
        if j.is_file() {
            return Ok(Some(journal::rebuild(&j)?));
        }
        let r = self.results_path();
        if r.exists() {
            return Ok(Some(results::read_file(&r)?));
        }
        Ok(None)
    }

    /// Starts the run: with `resume`, from the results already here (which must come from the
    /// plan whose identity is `fresh`'s, on `fresh`'s node list when they have one); otherwise from `fresh`, keeping any earlier results
    /// aside under a name of their own.
    pub fn start(&self, fresh: Results, resume: bool) -> Result<Start, OutDirError> {
        let existing = self.existing()?;
        let mut kept_aside = None;
        let results = match (existing, resume) {
            (Some(old), true) => {
                let want = fresh.plan.as_ref().and_then(|p| p.hash.as_deref());
                let have = old.plan.as_ref().and_then(|p| p.hash.as_deref());
                if want != have || want.is_none() {
                    let why = match (old.plan.as_ref(), fresh.plan.as_ref()) {
                        (Some(o), Some(f)) if o.name != f.name => {
                            format!("plan `{}`, not `{}`", o.name, f.name)
                        }
                        _ if have.is_none() => {
                            "they carry no plan identity (ingested, or written by an older baton)"
                                .into()
                        }
                        _ => "the plan's jobs measure other things now: collective, dtype, sizes, settings, env or ranks changed".into(),
                    };
                    return Err(OutDirError::OtherPlan {
                        dir: self.dir.display().to_string(),
                        why,
                    });
                }
                if !old.node_list.is_empty() && old.node_list != fresh.node_list {
                    return Err(OutDirError::OtherNodes {
                        dir: self.dir.display().to_string(),
                        had: crate::nodeset::hostlist::compress(&old.node_list),
                        have: crate::nodeset::hostlist::compress(&fresh.node_list),
                    });
                }
                let mut r = old;
                r.finished = None;
                r.interrupted = None;
                r
            }
            (Some(old), false) => {
                kept_aside = Some(self.keep_aside(&old)?);
                fresh
            }
            (None, _) => fresh,
        };
        let journal = Journal::create(&self.journal_path(), &results)?;
        results::write_atomic(&self.results_path(), &results)?;
        Ok(Start {
            results,
            journal,
            kept_aside,
        })
    }

    /// Writes `old` to `results.STARTED.json` and removes what it came from.
    fn keep_aside(&self, old: &Results) -> Result<PathBuf, OutDirError> {
        let stamp: String = old
            .started
            .clone()
            .unwrap_or_else(results::now_rfc3339)
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let mut path = self.dir.join(format!("results.{stamp}.json"));
        let mut n = 1;
        while path.exists() {
            path = self.dir.join(format!("results.{stamp}.{n}.json"));
            n += 1;
        }
        results::write_atomic(&path, old)?;
        for p in [self.journal_path(), self.results_path()] {
            if let Err(source) = std::fs::remove_file(&p)
                && source.kind() != std::io::ErrorKind::NotFound
            {
                return Err(OutDirError::Io {
                    path: p.display().to_string(),
                    source,
                });
            }
        }
        Ok(path)
    }

    /// Rebuilds `results.json` from the journal (every row so far) and returns it, with the
    /// count of damaged lines skipped.
    pub fn fold(&self) -> Result<journal::Rebuilt, OutDirError> {
        let r = journal::rebuild_counted(&self.journal_path())?;
        results::write_atomic(&self.results_path(), &r.results)?;
        Ok(r)
    }

    /// Writes the final `results.json`; the journal, now folded in whole, goes.
    pub fn finish(&self, r: &Results) -> Result<(), OutDirError> {
        results::write_atomic(&self.results_path(), r)?;
        let _ = std::fs::remove_file(self.journal_path());
        Ok(())
    }
}

/// IDs of the jobs `results` holds complete: what `--resume` skips.
pub fn completed(r: &Results) -> Vec<String> {
    r.jobs
        .iter()
        .filter(|j| j.status == JobStatus::Completed)
        .map(|j| j.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{PlanRef, Producer};

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("baton-outdir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn fresh(hash: &str) -> Results {
        let mut r = Results::new(Producer::baton("run"));
        r.plan = Some(PlanRef {
            name: "p".into(),
            file: None,
            hash: Some(hash.into()),
            description: None,
            git: None,
            site: None,
        });
        r
    }

    #[test]
    fn one_claim_at_a_time_and_a_dropped_claim_frees_the_directory() {
        let d = scratch("lock");
        let a = OutDir::claim(&d).unwrap();
        let e = OutDir::claim(&d).err().unwrap();
        assert!(
            e.to_string()
                .contains(&format!("pid {}", std::process::id())),
            "{e}"
        );
        drop(a);
        OutDir::claim(&d).unwrap();
    }

    #[test]
    fn a_new_run_keeps_earlier_results_and_resume_refuses_another_plan() {
        let d = scratch("aside");
        let o = OutDir::claim(&d).unwrap();
        let s = o.start(fresh("sha256:a"), false).unwrap();
        assert!(s.kept_aside.is_none());
        drop(s);
        let s = o.start(fresh("sha256:a"), false).unwrap();
        let aside = s.kept_aside.unwrap();
        assert!(results::read_file(&aside).is_ok());
        let e = o.start(fresh("sha256:b"), true).err().unwrap();
        assert!(e.to_string().contains("another plan"), "{e}");
        assert!(o.start(fresh("sha256:a"), true).is_ok());
    }
}
