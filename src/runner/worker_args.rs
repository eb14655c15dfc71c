//! The `__worker` contract, written once: the spawners (a local run's worker, a node set's step)
//! build the argument vector from this struct, and the `__worker` subcommand parses it back with
//! the same clap derive, so the two sides cannot drift.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::expand::Job;
use crate::plan::Plan;

/// What `__worker` is told by the `baton run` that started it.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkerArgs {
    /// The plan as the parent `baton run` read it (its copy in the output directory).
    pub plan: PathBuf,
    /// The identity the parent computed: a copy that differs is refused.
    #[arg(long)]
    pub plan_hash: String,
    /// The plan's path as the user named it, recorded in the results.
    #[arg(long)]
    pub plan_name: PathBuf,
    /// JSON list of the job IDs to run, in order.
    #[arg(long)]
    pub jobs: PathBuf,
    /// The run's journal, which rank 0 appends every row to.
    #[arg(long)]
    pub journal: PathBuf,
    #[arg(long)]
    pub table: bool,
    /// GPUs to drive from this process (nccl backend, one thread each).
    #[arg(long, default_value_t = 0)]
    pub gpus: usize,
    /// File rank 0 appends a line to per finished row (feeds `run`'s progress bar).
    #[arg(long)]
    pub progress: Option<PathBuf>,
    /// JSON node set (`{"job":…,"round":…,"index":…,"hosts":[…]}`, `job` ignored) the jobs run
    /// on: each job is recorded as that set's job (`baton run` of a plan with `over:`).
    #[arg(long)]
    pub node_set: Option<PathBuf>,
    /// Take no node evidence around the jobs (`baton run --no-evidence`).
    #[arg(long)]
    pub no_evidence: bool,
}

/// Why a worker refuses what it was handed.
#[derive(Debug, thiserror::Error)]
pub enum WorkerArgsError {
    /// The load error's own words, without its causes (what the plan copy's reader says).
    #[error("{0}")]
    Plan(String),
    #[error(
        "{plan}: this plan is not the one `baton run` read (identity {have}, expected {want}); refusing to mix measurements"
    )]
    OtherPlan {
        plan: String,
        have: String,
        want: String,
    },
    #[error(transparent)]
    Read(#[from] crate::input::ReadError),
    #[error("{file}: not a JSON list of job IDs")]
    JobList {
        file: String,
        source: serde_json::Error,
    },
    #[error("job `{0}` is not in the plan")]
    NotInPlan(String),
    #[error("{file}: not a node set: {error}")]
    NodeSet {
        file: String,
        error: serde_json::Error,
    },
}

impl WorkerArgs {
    /// The command line after the program: `__worker PLAN --plan-hash H …`.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec![
            "__worker".into(),
            self.plan.clone().into(),
            "--plan-hash".into(),
            self.plan_hash.clone().into(),
            "--plan-name".into(),
            self.plan_name.clone().into(),
            "--jobs".into(),
            self.jobs.clone().into(),
            "--journal".into(),
            self.journal.clone().into(),
        ];
        if let Some(s) = &self.node_set {
            a.extend(["--node-set".into(), s.clone().into()]);
        }
        if self.table {
            a.push("--table".into());
        }
        if let Some(p) = &self.progress {
            a.extend(["--progress".into(), p.clone().into()]);
        }
        if self.gpus > 0 {
            a.extend(["--gpus".into(), self.gpus.to_string().into()]);
        }
        if self.no_evidence {
            a.push("--no-evidence".into());
        }
        a
    }

    /// The plan copy, its jobs named in `--jobs`, and its identity, which must be the one the
    /// parent computed: a worker never measures a plan other than the run's.
    pub fn load(&self) -> Result<(Plan, Vec<Job>, String), WorkerArgsError> {
        // The `run` that started this worker applied the plan trust policy already.
        let loaded = crate::plan::load_file_with(&self.plan, crate::plan::Trust::Trusted)
            .map_err(|e| WorkerArgsError::Plan(e.to_string()))?;
        let all = crate::expand::expand(&loaded.plan).jobs;
        let hash = crate::expand::plan_identity(&loaded.plan, &all);
        if hash != self.plan_hash {
            return Err(WorkerArgsError::OtherPlan {
                plan: self.plan.display().to_string(),
                have: hash,
                want: self.plan_hash.clone(),
            });
        }
        let mut jobs = self.select(&all)?;
        if let Some(file) = &self.node_set {
            let text = crate::input::read_bounded(file, crate::plan::MAX_PLAN_BYTES, "node set")?;
            let set: crate::results::NodeSetRef =
                serde_json::from_slice(&text).map_err(|error| WorkerArgsError::NodeSet {
                    file: file.display().to_string(),
                    error,
                })?;
            let per_node = loaded.plan.ranks_per_node();
            jobs = jobs
                .iter()
                .map(|j| {
                    let set = crate::results::NodeSetRef {
                        job: j.id.clone(),
                        ..set.clone()
                    };
                    crate::expand::nodesets::set_job(j, set, per_node)
                })
                .collect();
        }
        Ok((loaded.plan, jobs, hash))
    }

    /// The jobs of `all` named in `--jobs` (a JSON list of IDs), in that order.
    fn select(&self, all: &[Job]) -> Result<Vec<Job>, WorkerArgsError> {
        // A list of job IDs is no bigger than the plan that names them.
        let text = crate::input::read_bounded(&self.jobs, crate::plan::MAX_PLAN_BYTES, "job list")?;
        let ids: Vec<String> =
            serde_json::from_slice(&text).map_err(|source| WorkerArgsError::JobList {
                file: self.jobs.display().to_string(),
                source,
            })?;
        ids.iter()
            .map(|id| {
                all.iter()
                    .find(|j| j.id == *id)
                    .cloned()
                    .ok_or_else(|| WorkerArgsError::NotInPlan(id.clone()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: Cmd,
    }

    #[derive(clap::Subcommand)]
    enum Cmd {
        #[command(name = "__worker")]
        Worker(WorkerArgs),
    }

    #[test]
    fn what_a_spawner_builds_parses_back() {
        let w = WorkerArgs {
            plan: "out/parts/plan.yaml".into(),
            plan_hash: "sha256:ab".into(),
            plan_name: "my plan.yaml".into(),
            jobs: "out/parts/set-0.jobs.json".into(),
            journal: "out/journal.jsonl".into(),
            table: true,
            gpus: 8,
            progress: Some("out/parts/set-0.progress".into()),
            node_set: Some("out/sets/x.set.json".into()),
            no_evidence: true,
        };
        let mut argv: Vec<OsString> = vec!["baton".into()];
        argv.extend(w.to_args());
        let Cmd::Worker(back) = Cli::try_parse_from(argv).unwrap().cmd;
        assert_eq!(format!("{back:?}"), format!("{w:?}"));
    }
}
