//! The MPI world of `run` (only in `baton-mpi`): MPI initialised, then the shared rank side.

use anyhow::Context;
use baton::exit::Exit;
use baton::expand::Job;
use baton::launch::launcher;
use baton::plan::Plan;
use baton::results::Results;
use baton::runner::mpi::{HostEngine, MpiWorld};
use baton::runner::orchestrate;
use baton::runner::worker::{self, WorkerConfig};
use baton::world::World;

use crate::cli::WorkerArgs;
use crate::cli::rank::{self, RankWorld};
use crate::cli::run::Args;

fn init() -> anyhow::Result<MpiWorld> {
    MpiWorld::init().context("MPI could not be initialised")
}

impl RankWorld for MpiWorld {
    /// The launcher's local rank, else the world rank.
    fn local_rank(&self) -> usize {
        match launcher::detect(launcher::process_env) {
            Ok(Some(p)) => p.local_rank,
            _ => self.rank(),
        }
    }
    fn mpi_version(&self) -> Option<String> {
        MpiWorld::library_version()
    }
    fn device_label(&self) -> &'static str {
        "host memory (MPI)"
    }
    fn run_host_mpi(&self, jobs: &[Job], cfg: WorkerConfig) -> anyhow::Result<Results> {
        let mut engine = HostEngine::new(self.comm());
        Ok(worker::run_jobs(self, &mut engine, jobs, cfg)?)
    }
}

/// `baton-mpi __worker PLAN --plan-hash H --jobs FILE --journal J`: the jobs listed in FILE, in
/// that order, from the plan copy the parent `baton run` read.
pub fn run(w: &WorkerArgs) -> anyhow::Result<Exit> {
    let world = init()?;
    let (plan, jobs, hash) = crate::cli::worker_plan(w)?;
    let base = orchestrate::new_results(&plan, &w.plan_name, "run", &hash);
    rank::execute(
        &world,
        &plan,
        base,
        &jobs,
        &w.journal,
        w.table,
        w.progress.as_deref(),
    )?;
    Ok(Exit::Ok)
}

/// `baton-mpi run PLAN` started by mpirun or srun: this process is one rank of the MPI world.
pub fn run_under_launcher(
    args: &Args,
    plan: &Plan,
    plan_hash: &str,
    jobs: &[Job],
) -> anyhow::Result<Exit> {
    let capture = rank::capture_for(args, plan, jobs)?;
    let world = init()?;
    rank::run_as_rank(&world, args, plan, plan_hash, jobs, capture)
}
