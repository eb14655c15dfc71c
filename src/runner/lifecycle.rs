//! A run's life in its output directory, the same for every way of running (local, node sets,
//! one rank of many): the results it starts from, made in one place; the directory claimed and
//! the run started or resumed, earlier results kept aside (and said so); the plan copy workers
//! read; stop signals watched; and at the end the journal folded into the final `results.json`.

use std::path::{Path, PathBuf};

use super::RunError;
use super::events::{Events, RunEvent};
use super::outdir::{self, OutDir, OutDirError};
use crate::exit::Exit;
use crate::expand::Job;
use crate::plan::{Backend, Plan};
use crate::results::journal::{Journal, Record};
use crate::results::{self, ErrorKind, JobError, JobResult, JobStatus, PlanRef, Producer, Results};

/// Which process makes a run's results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Maker {
    /// The process that claims the output directory: it also records the plan's git
    /// revision, asked once per run, not per rank or worker.
    Owner,
    /// A worker or a rank other than the owner: the plan's identity only.
    Worker,
}

/// A new results document of a `run` of `plan`, carrying its identity.
pub fn results(plan: &Plan, plan_path: &Path, hash: &str, maker: Maker) -> Results {
    let mut r = Results::new(Producer::baton("run"));
    r.injected_fault = super::fault::active();
    r.plan = Some(PlanRef {
        name: plan.name.clone(),
        file: Some(plan_path.display().to_string()),
        hash: Some(hash.to_string()),
        description: plan.description.clone(),
        git: (maker == Maker::Owner)
            .then(|| crate::plan::revision::git_revision(plan_path))
            .flatten(),
        site: None,
    });
    r
}

/// A run that holds its output directory.
pub struct Lifecycle {
    out: OutDir,
    journal: Journal,
    /// The results the run started from (resumed, or fresh).
    started: Results,
}

/// How a run ended in its directory.
pub struct Finished {
    pub results: Results,
    pub results_path: PathBuf,
    /// The signal that stopped the run, if one did.
    pub interrupted: Option<&'static str>,
}

impl Finished {
    /// The run's exit code: interrupted, else what its results say.
    pub fn exit(&self) -> Exit {
        if self.interrupted.is_some() {
            Exit::Interrupted
        } else {
            exit_for(&self.results)
        }
    }
}

impl Lifecycle {
    /// Claims `dir` and starts the run from `fresh` or, with `resume`, from the results there
    /// (of the same plan and node list); earlier results a new run replaces are kept aside, and
    /// `events` told where.
    pub fn start(
        dir: &Path,
        fresh: Results,
        resume: bool,
        events: &dyn Events,
    ) -> Result<Lifecycle, OutDirError> {
        let out = OutDir::claim(dir)?;
        let start = out.start(fresh, resume)?;
        if let Some(kept) = &start.kept_aside {
            events.event(&RunEvent::KeptAside {
                results: &out.results_path(),
                kept,
            });
        }
        Ok(Lifecycle {
            out,
            journal: start.journal,
            started: start.results,
        })
    }

    /// The results the run started from.
    pub fn started(&self) -> &Results {
        &self.started
    }

    /// IDs of the jobs complete already: what `--resume` skips.
    pub fn done(&self) -> Vec<String> {
        outdir::completed(&self.started)
    }

    /// The jobs of `jobs` left to run; with `resume`, `events` told how many were done.
    pub fn todo(&self, jobs: &[Job], resume: bool, events: &dyn Events) -> Vec<Job> {
        let done = self.done();
        let todo: Vec<Job> = jobs
            .iter()
            .filter(|j| !done.contains(&j.id))
            .cloned()
            .collect();
        if resume {
            events.event(&RunEvent::Resuming {
                complete: jobs.len() - todo.len(),
                todo: todo.len(),
            });
        }
        todo
    }

    /// Writes the plan as this run read it (`parts/plan.yaml`), the copy its workers read, and
    /// watches for stop signals from now on (see [`super::interrupt`]): its path.
    pub fn snapshot(&self, plan_text: &str) -> Result<PathBuf, RunError> {
        let parts = self.out.dir().join("parts");
        crate::output::ensure_dir(&parts).map_err(OutDirError::from)?;
        let snapshot = parts.join("plan.yaml");
        crate::output::write_atomic(&snapshot, plan_text.as_bytes()).map_err(OutDirError::from)?;
        super::interrupt::install().map_err(|source| RunError::Io {
            what: "cannot watch for signals".into(),
            source,
        })?;
        Ok(snapshot)
    }

    pub fn out(&self) -> &OutDir {
        &self.out
    }

    pub fn journal(&mut self) -> &mut Journal {
        &mut self.journal
    }

    /// The directory and the journal at once (a driver appends while its steps read the
    /// directory).
    pub fn parts(&mut self) -> (&OutDir, &mut Journal) {
        (&self.out, &mut self.journal)
    }

    /// Rebuilds `results.json` from the journal so far; damaged lines are told to `events`.
    pub fn fold(&self, events: &dyn Events) -> Result<Results, OutDirError> {
        let r = self.out.fold()?;
        if r.damaged > 0 {
            events.event(&RunEvent::Notice(&results::Notice::Damaged {
                journal: self.out.journal_path().display().to_string(),
                lines: r.damaged,
            }));
        }
        Ok(r.results)
    }

    /// Ends the run: a stop signal recorded, the journal folded in (then `amend`ed: transports
    /// gathered from the ranks), the finish time stamped when nothing stopped it, and the final
    /// `results.json` written; the journal goes.
    pub fn finish(
        mut self,
        events: &dyn Events,
        amend: impl FnOnce(&mut Results),
    ) -> Result<Finished, RunError> {
        let interrupted = super::interrupt::requested()
            .then(|| super::interrupt::signal_name().unwrap_or("a signal"));
        if let Some(sig) = interrupted {
            self.journal.append(&Record::Interrupted {
                signal: sig.to_string(),
                at: results::now_rfc3339(),
            })?;
        }
        let mut results = self.fold(events)?;
        amend(&mut results);
        if interrupted.is_none() {
            results.finished = Some(results::now_rfc3339());
        }
        drop(self.journal);
        self.out.finish(&results)?;
        Ok(Finished {
            results,
            results_path: self.out.results_path(),
            interrupted,
        })
    }
}

/// Why a run ended before its jobs did, where no driver is left to end it (one rank of many,
/// whose main thread sits in a collective).
pub enum Cut<'a> {
    /// A stop signal (Slurm's time limit, scancel, Ctrl-C).
    Signal(&'a str),
    /// The ranks' world broke: a rank died, or missed a collective's deadline.
    Broken(String),
    /// A collective hung past its timeout: the watchdog recorded it on its job and ends the
    /// process (exit 4).
    Timeout(String),
    /// A rank died during the run (killed, crashed) and the launcher ends the others: who, in
    /// the record's words (`rank 0 (pid 4242 on n1) is gone`). Exit 3.
    Died(String),
}

impl Cut<'_> {
    /// The error recorded on the job that was running.
    pub fn error(&self) -> JobError {
        match self {
            Cut::Signal(sig) => error(
                ErrorKind::Interrupted,
                format!(
                    "stopped by {sig} before it finished (Slurm's time limit, scancel, Ctrl-C, or the launcher ending the step after another rank failed)"
                ),
            ),
            Cut::Broken(why) => error(
                ErrorKind::Other,
                format!("the ranks could not go on: {why}"),
            ),
            Cut::Timeout(what) => error(ErrorKind::Timeout, format!("hung collective: {what}")),
            Cut::Died(who) => error(
                ErrorKind::Other,
                format!("a rank died during the job: {who}; the launcher ended the others"),
            ),
        }
    }

    /// The status of the job it cut: an error where a rank died, else cut short.
    fn status(&self) -> JobStatus {
        match self {
            Cut::Died(_) => JobStatus::Error,
            _ => JobStatus::Partial,
        }
    }

    /// The run's exit code.
    pub fn exit(&self) -> Exit {
        match self {
            Cut::Signal(_) => Exit::Interrupted,
            Cut::Broken(_) | Cut::Died(_) => Exit::Runtime,
            Cut::Timeout(_) => Exit::Timeout,
        }
    }

    /// What the run's last line says.
    pub fn why(&self) -> String {
        match self {
            Cut::Signal(sig) => format!("stopped by {sig}"),
            Cut::Broken(_) => "the ranks could not go on".to_string(),
            Cut::Timeout(_) => "a collective hung".to_string(),
            Cut::Died(_) => "a rank died".to_string(),
        }
    }

    /// The message of the job it cut (for an early-failure JUnit when nothing ran).
    pub fn message(&self) -> String {
        self.error().message
    }
}

/// Ends a run cut short in `dir` from its journal alone: the job that was running marked as cut,
/// a signal recorded, `results.json` written and the journal gone.
pub fn cut_short(dir: &Path, cut: &Cut) -> Result<Results, RunError> {
    let journal = dir.join(results::journal::FILE);
    let mut j = Journal::open(&journal)?;
    let before = results::journal::rebuild(&journal)?;
    for job in before
        .jobs
        .iter()
        .filter(|x| x.status == JobStatus::Partial)
    {
        j.append(&Record::End {
            job: job.id.clone(),
            status: cut.status(),
            errors: vec![cut.error()],
            telemetry: Vec::new(),
        })?;
    }
    if let Cut::Signal(sig) = cut {
        j.append(&Record::Interrupted {
            signal: sig.to_string(),
            at: results::now_rfc3339(),
        })?;
    }
    let results = results::journal::rebuild(&journal)?;
    results::write_atomic(&dir.join("results.json"), &results)?;
    let _ = std::fs::remove_file(&journal);
    Ok(results)
}

/// Exit code for finished results: timeouts, then runtime errors, then corrupted data.
pub fn exit_for(results: &Results) -> Exit {
    let jobs = &results.jobs;
    if jobs.iter().any(|j| j.status == JobStatus::Timeout) {
        Exit::Timeout
    } else if jobs
        .iter()
        .any(|j| matches!(j.status, JobStatus::Error | JobStatus::Partial))
    {
        Exit::Runtime
    } else if jobs
        .iter()
        .any(|j| j.cells().any(|(_, _, _, c)| c.wrong.is_some_and(|w| w > 0)))
    {
        Exit::Failed
    } else {
        Exit::Ok
    }
}

/// A job that never produced measurements: recorded so that grading fails closed on it.
pub(crate) fn not_run(job: &Job, backend: Backend, why: String) -> JobResult {
    let layout = results::Layout {
        nranks: job.ranks.unwrap_or(0),
        nodes: 0,
        processes: 0,
        gpus_per_process: 0,
        ranks: Vec::new(),
    };
    let mut r = super::worker::job_result(job, backend, layout);
    r.status = JobStatus::Error;
    r.errors.push(error(ErrorKind::Launcher, why));
    r
}

/// How a job its worker left running ends: still partial when a signal stopped the run, a
/// timeout when the worker's watchdog (or a hang detector) ended it, else a launcher error.
pub(crate) fn left_running(interrupted: bool, timed_out: bool) -> (JobStatus, ErrorKind) {
    if interrupted {
        (JobStatus::Partial, ErrorKind::Interrupted)
    } else if timed_out {
        (JobStatus::Timeout, ErrorKind::Timeout)
    } else {
        (JobStatus::Error, ErrorKind::Launcher)
    }
}

pub(crate) fn error(kind: ErrorKind, message: String) -> JobError {
    JobError {
        kind,
        message,
        repeat: None,
        requested: None,
        placement: None,
        ras: None,
    }
}
