//! The rank side of `run` shared by both binaries: the world is joined here (the TCP rendezvous
//! in `baton`; MPI in `baton-mpi`, see `worker.rs`), the run is the runner's
//! ([`baton::runner::Mode::Rank`]), and a run cut short is graded here.

use std::sync::Arc;

use baton::exit::Exit;
use baton::expand::Job;
use baton::plan::Plan;
use baton::runner::events::Events;
use baton::runner::lifecycle::{self, Maker};
use baton::runner::rank::{self, Finishing, Measure, RankError, RankMode, RankWorld};
use baton::runner::{Input, Mode, RunError, RunOptions};

use crate::cli::error::CliError;
use crate::cli::run::Args;
use crate::cli::ui::{self, Ui};
use crate::cli::{Outcome, WorkerArgs};

/// Plain `baton run PLAN` started as one rank of many (srun --mpi=none, mpirun, mpiexec,
/// pdsh with BATON_RANK) with the NCCL backend: the ranks meet over the TCP rendezvous.
pub fn over_tcp(args: &Args, plan: &Plan, opts: &RunOptions, jobs: &[Job]) -> Outcome {
    let capture = rank::capture_for(opts, plan, jobs)?;
    let joined = match baton::rendezvous::join_from_env("run") {
        Ok(Some(j)) => j,
        Ok(None) => {
            return Err(CliError::runtime(
                baton::rendezvous::RendezvousError::NoLauncher,
            ));
        }
        Err(e) => return Err(CliError::Ended(e.exit(), format!("baton: {e}"))),
    };
    as_rank(&joined.world, args, plan, opts, jobs, capture)
}

/// `baton __worker …` started as one rank of a node-set step (`srun --mpi=none`, or mpirun
/// with `BATON_RENDEZVOUS`) for the NCCL backend: the ranks meet over the TCP rendezvous, and
/// rank 0 journals every row as an MPI worker's would.
pub fn worker_over_tcp(w: &WorkerArgs) -> Outcome {
    let (plan, jobs, hash) = w.load()?;
    if plan.backend != baton::plan::Backend::Nccl {
        return Err(CliError::runtime(
            "`backend: mpi` measures MPI itself: its rank worker is `baton-mpi __worker`",
        ));
    }
    let joined = match baton::rendezvous::join_from_env("worker") {
        Ok(Some(j)) => j,
        Ok(None) => {
            return Err(CliError::runtime(
                "the rank worker was started without a launcher (no rank in the environment): \
                 `baton __worker` runs under srun, mpirun or with BATON_RANK",
            ));
        }
        Err(e) => return Err(CliError::Ended(e.exit(), format!("baton: {e}"))),
    };
    let me = baton::world::World::rank(&joined.world);
    let ui: Arc<dyn Events> = Arc::new(Ui::worker());
    let said = ui.clone();
    joined.world.on_broken(Box::new(move |why| {
        said.event(&baton::runner::events::RunEvent::WorldBroken { rank: me, why })
    }));
    measure_worker(&joined.world, w, &plan, &jobs, &hash, ui)
}

/// A rank worker's jobs on `world`, as the `baton run` that started it asked.
pub fn measure_worker(
    world: &dyn RankWorld,
    w: &WorkerArgs,
    plan: &Plan,
    jobs: &[Job],
    hash: &str,
    events: Arc<dyn Events>,
) -> Outcome {
    let m = Measure {
        plan,
        base: lifecycle::results(plan, &w.plan_name, hash, Maker::Worker),
        jobs,
        journal: &w.journal,
        table: w.table,
        progress: w.progress.as_deref(),
        events,
        evidence: !w.no_evidence,
        // A worker of `baton run`: its parent folds the journal.
        on_timeout: None,
        startup: None,
    };
    // The launcher ends the step when a rank dies: the survivors name it (issue #37).
    rank::worker_signals().map_err(CliError::runtime)?;
    rank::measure(world, m).map_err(CliError::runtime)?;
    Ok(Exit::Ok)
}

/// One rank of a run its launcher started; rank 0 grades what ran. `capture` (NCCL's log per
/// rank) was applied before any thread started.
pub fn as_rank(
    world: &dyn RankWorld,
    args: &Args,
    plan: &Plan,
    opts: &RunOptions,
    jobs: &[Job],
    capture: Option<baton::runner::transport::Capture>,
) -> Outcome {
    let finish = {
        let (args, plan) = (args.clone(), plan.clone());
        Arc::new(move |f: &Finishing<'_>| cut_short(&args, &plan, f))
    };
    let input = Input { plan, jobs, opts };
    let mode = Mode::Rank(RankMode {
        world,
        capture,
        finish,
    });
    match baton::runner::run(&input, mode, Arc::new(Ui::plain())) {
        Ok(o) if o.owner => {
            crate::cli::run::finish(args, plan, jobs, &o.results, &o.results_path, o.exit)
        }
        Ok(o) => Ok(o.exit),
        Err(RunError::Rank(RankError::Failed(m))) => Err(CliError::runtime(m)),
        Err(RunError::Rank(e)) if e.shown() => {
            Err(CliError::Ended(e.exit(), format!("baton: {e}")))
        }
        Err(RunError::Rank(e)) => Err(CliError::Told(e.exit())),
        Err(e) => Err(CliError::Unexpected(e.into())),
    }
}

/// Rank 0's end of a run a signal or a broken world cut short: JUnit and the report for what
/// ran, or, when nothing ran, JUnit saying why.
fn cut_short(args: &Args, plan: &Plan, f: &Finishing<'_>) -> Result<(), String> {
    if let Some(message) = f.broken {
        // Nothing measured to grade: JUnit says why (rank 0 holds the directory already).
        if args.env_set.is_none() {
            let junit = args.out.join("junit.xml");
            let said = crate::cli::failed_early::write_junit(
                &junit,
                &args.plan,
                &[],
                "rendezvous",
                message,
            );
            ui::say(&said);
        }
        return Ok(());
    }
    match crate::cli::run::finish(args, plan, f.jobs, f.results, f.results_path, f.exit) {
        Ok(_) => Ok(()),
        Err(CliError::Unexpected(e)) => Err(format!("{e:#}")),
        // An input of the grade that is unusable is said here: the run's own end is the exit.
        Err(e) => {
            ui::error(&e);
            Ok(())
        }
    }
}
