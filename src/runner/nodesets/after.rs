//! The after-snapshot of a set that failed. A step that hung, crashed or lost a node leaves its
//! running job with each node's `before` only: its ranks never met again to take the after.
//! The step that then tells a dead node from a live one (one on each of the set's nodes) is
//! `baton probe` itself, so the job gets each answering node's after and the delta from its
//! before (what moved while it hung), and a node that did not answer is unavailable, and why.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{Ctx, PROBE_TIMEOUT, preflight};
use crate::probe::delta::delta;
use crate::results::SetRun;
use crate::results::evidence::{NodeEvidence, merge};
use crate::results::journal::{self, Journal, Record};
use crate::runner::RunError;

/// Kernel log lines from a little before the job's first snapshot, as around every job.
const LOG_SLACK_S: u64 = 1;

/// A failed set's job that has its nodes' befores and no afters: the one its step was running.
pub(super) struct Pending {
    job: String,
    before: Vec<NodeEvidence>,
    dir: PathBuf,
    gpus: bool,
}

/// The job of `run` left without afters, when the run takes evidence and the set recorded one.
pub(super) fn pending(ctx: &Ctx<'_>, run: &SetRun) -> Option<Pending> {
    if !(ctx.plan.evidence && ctx.opts.evidence) {
        return None;
    }
    let path = ctx.opts.out_dir.join(&run.journal);
    let (records, _) = journal::records(&path, 0).ok()?;
    let mut by_job: Vec<(String, Vec<NodeEvidence>)> = Vec::new();
    for r in records {
        if let Record::Evidence { job, nodes } = r {
            match by_job.iter_mut().find(|(j, _)| *j == job) {
                Some((_, e)) => merge(e, nodes),
                None => by_job.push((job, nodes)),
            }
        }
    }
    // The last job to start is the one the step ended in; an earlier one ended on its own.
    let (job, before) = by_job.pop()?;
    if before.iter().any(|e| e.after.is_some()) {
        return None;
    }
    let base = run.journal.trim_end_matches(".jsonl");
    Some(Pending {
        job,
        before,
        dir: ctx.opts.out_dir.join(format!("{base}.after")),
        gpus: ctx.plan.backend == crate::plan::Backend::Nccl,
    })
}

impl Pending {
    /// Where `host`'s snapshot is written.
    pub(super) fn file(&self, host: &str) -> PathBuf {
        self.dir.join(format!("{host}.json"))
    }

    /// The program and arguments that take `host`'s snapshot: kernel log lines from the
    /// job's start, no helper program.
    pub(super) fn program(&self, ctx: &Ctx<'_>) -> Vec<OsString> {
        let first = self
            .before
            .iter()
            .filter_map(|e| e.before.as_ref().map(|s| s.taken_unix_ms / 1000))
            .min()
            .unwrap_or(0);
        let mut a: Vec<OsString> = vec![ctx.worker.clone().into()];
        a.extend(["probe", "--format", "json", "--no-helpers", "--since"].map(OsString::from));
        a.push(format!("@{}", first.saturating_sub(LOG_SLACK_S)).into());
        if !self.gpus {
            a.push("--no-gpus".into());
        }
        a
    }

    /// Prepares the directory of the snapshots.
    pub(super) fn prepare(&self) -> bool {
        crate::output::ensure_dir(&self.dir).is_ok()
    }

    /// Journals each node's after and delta in the set's journal; `dead` did not answer.
    pub(super) fn record(
        self,
        out_dir: &Path,
        run: &SetRun,
        dead: &[String],
    ) -> Result<(), RunError> {
        let nodes: Vec<NodeEvidence> = run
            .hosts
            .iter()
            .map(|h| self.node(h, dead.contains(h)))
            .collect();
        let mut j = Journal::open(&out_dir.join(&run.journal))?;
        j.append(&Record::Evidence {
            job: self.job.clone(),
            nodes,
        })?;
        Ok(())
    }

    /// `host`'s evidence: its before, and its after or why there is none.
    fn node(&self, host: &str, dead: bool) -> NodeEvidence {
        let before = self
            .before
            .iter()
            .find(|e| e.host == host)
            .and_then(|e| e.before.clone());
        let after = if dead {
            Err(format!(
                "did not answer a step within {} s after its set failed",
                PROBE_TIMEOUT.as_secs()
            ))
        } else {
            preflight::snapshot_file(&self.file(host))
                .map_err(|why| format!("no snapshot after its set failed: {why}"))
        };
        match after {
            Ok(after) => NodeEvidence {
                host: host.into(),
                delta: before.as_ref().map(|b| delta(b, &after)),
                before,
                after: Some(after),
                unavailable: None,
                nccl: None,
            },
            Err(why) => NodeEvidence {
                host: host.into(),
                before,
                after: None,
                delta: None,
                unavailable: Some(why),
                nccl: None,
            },
        }
    }
}
