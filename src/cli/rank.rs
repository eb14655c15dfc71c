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

use crate::cli::WorkerArgs;
use crate::cli::run::Args;
use crate::cli::ui::Ui;

/// Plain `baton run PLAN` started as one rank of many (srun --mpi=none, mpirun, mpiexec,
/// pdsh with BATON_RANK) with the NCCL backend: the ranks meet over the TCP rendezvous.
pub fn over_tcp(args: &Args, plan: &Plan, opts: &RunOptions, jobs: &[Job]) -> anyhow::Result<Exit> {
    let capture = rank::capture_for(opts, plan, jobs)?;
    let joined = match baton::rendezvous::join_from_env("run") {
        Ok(Some(j)) => j,
        Ok(None) => anyhow::bail!(baton::rendezvous::RendezvousError::NoLauncher),
        Err(e) => {
            Ui::plain().say(&format!("baton: {e}"));
            return Ok(e.exit());
        }
    };
    as_rank(&joined.world, args, plan, opts, jobs, capture)
}

/// `baton __worker …` started as one rank of a node-set step (`srun --mpi=none`, or mpirun
/// with `BATON_RENDEZVOUS`) for the NCCL backend: the ranks meet over the TCP rendezvous, and
/// rank 0 journals every row as an MPI worker's would.
pub fn worker_over_tcp(w: &WorkerArgs) -> anyhow::Result<Exit> {
    let (plan, jobs, hash) = w.load()?;
    if plan.backend != baton::plan::Backend::Nccl {
        anyhow::bail!(
            "`backend: mpi` measures MPI itself: its rank worker is `baton-mpi __worker`"
        );
    }
    let joined = match baton::rendezvous::join_from_env("worker") {
        Ok(Some(j)) => j,
        Ok(None) => anyhow::bail!(
            "the rank worker was started without a launcher (no rank in the environment): \
             `baton __worker` runs under srun, mpirun or with BATON_RANK"
        ),
        Err(e) => {
            Ui::plain().say(&format!("baton: {e}"));
            return Ok(e.exit());
        }
    };
    let me = baton::world::World::rank(&joined.world);
    let ui: Arc<dyn Events> = Arc::new(Ui::plain());
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
) -> anyhow::Result<Exit> {
    let m = Measure {
        plan,
        base: lifecycle::results(plan, &w.plan_name, hash, Maker::Worker),
        jobs,
        journal: &w.journal,
        table: w.table,
        progress: w.progress.as_deref(),
        events,
    };
    rank::measure(world, m).map_err(anyhow::Error::msg)?;
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
) -> anyhow::Result<Exit> {
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
        Err(RunError::Rank(RankError::Failed(m))) => Err(anyhow::Error::msg(m)),
        Err(RunError::Rank(e)) => {
            if e.shown() {
                Ui::plain().say(&format!("baton: {e}"));
            }
            Ok(e.exit())
        }
        Err(e) => Err(e.into()),
    }
}

/// Rank 0's end of a run a signal or a broken world cut short: JUnit and the report for what
/// ran, or, when nothing ran, JUnit saying why.
fn cut_short(args: &Args, plan: &Plan, f: &Finishing<'_>) -> Result<(), String> {
    if let Some(message) = f.broken {
        // Nothing measured to grade: JUnit says why (rank 0 holds the directory already).
        if args.env_set.is_none() {
            let junit = args.out.join("junit.xml");
            crate::cli::failed_early::write_junit(&junit, &args.plan, &[], "rendezvous", message);
        }
        return Ok(());
    }
    crate::cli::run::finish(args, plan, f.jobs, f.results, f.results_path, f.exit)
        .map(|_| ())
        .map_err(|e| format!("{e:#}"))
}
