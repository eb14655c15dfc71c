//! The MPI world of `run` (only in `baton-mpi`): MPI initialised, then the shared rank side.

use std::sync::Arc;

use anyhow::Context;
use baton::expand::Job;
use baton::plan::Plan;
use baton::runner::RunOptions;
use baton::runner::mpi::MpiWorld;
use baton::runner::rank;

use crate::cli::run::Args;
use crate::cli::ui::Ui;
use crate::cli::{Outcome, WorkerArgs};

fn init() -> anyhow::Result<MpiWorld> {
    MpiWorld::init().context("MPI could not be initialised")
}

/// `baton-mpi __worker PLAN --plan-hash H --jobs FILE --journal J`: the jobs listed in FILE, in
/// that order, from the plan copy the parent `baton run` read.
pub fn run(w: &WorkerArgs) -> Outcome {
    let world = init()?;
    let (plan, jobs, hash) = w.load()?;
    crate::cli::rank::measure_worker(&world, w, &plan, &jobs, &hash, Arc::new(Ui::worker()))
}

/// `baton-mpi run PLAN` started by mpirun or srun: this process is one rank of the MPI world.
pub fn run_under_launcher(args: &Args, plan: &Plan, opts: &RunOptions, jobs: &[Job]) -> Outcome {
    let capture = rank::capture_for(opts, plan, jobs)?;
    let world = init()?;
    crate::cli::rank::as_rank(&world, args, plan, opts, jobs, capture)
}
