//! The rank side of `run` shared by both binaries: one process of many, whatever world joins
//! them — MPI in `baton-mpi`, the TCP rendezvous in `baton` (GPU runs need no MPI library).

use std::path::Path;

use anyhow::Context;
use baton::exit::Exit;
use baton::expand::Job;
use baton::plan::{Backend, Plan};
use baton::rendezvous::TcpWorld;
use baton::results::{Results, TransportLink};
use baton::runner::fault::Fault;
use baton::runner::nccl::{Gpu, NcclEngine, libs, local};
use baton::runner::orchestrate;
use baton::runner::outdir::{self, OutDir};
use baton::runner::{environment, interrupt, transport, worker};
use baton::world::World;

use crate::cli::RunFormat;
use crate::cli::run::Args;

/// What a rank's run needs from its world beyond the collectives.
pub trait RankWorld: World {
    /// This process's GPU among the node's.
    fn local_rank(&self) -> usize;
    /// The MPI library, recorded in the results when there is one.
    fn mpi_version(&self) -> Option<String> {
        None
    }
    fn device_label(&self) -> &'static str {
        "host memory"
    }
    /// `backend: mpi`: MPI measuring itself, only where MPI is the world.
    fn run_host_mpi(&self, jobs: &[Job], cfg: worker::WorkerConfig) -> anyhow::Result<Results>;
    /// What to do, with the reason, before a broken world ends the process (MPI's world
    /// aborts the job itself).
    fn on_broken(&self, _f: baton::rendezvous::world::OnBroken) {}
}

impl RankWorld for TcpWorld {
    fn local_rank(&self) -> usize {
        self.members()[self.rank()].local_rank
    }
    fn run_host_mpi(&self, _: &[Job], _: worker::WorkerConfig) -> anyhow::Result<Results> {
        anyhow::bail!("`backend: mpi` measures MPI itself: launch `baton-mpi run`, not `baton run`")
    }
    fn on_broken(&self, f: baton::rendezvous::world::OnBroken) {
        TcpWorld::on_broken(self, f)
    }
}

/// Plain `baton run PLAN` started as one rank of many (srun --mpi=none, mpirun, mpiexec,
/// pdsh with BATON_RANK) with the NCCL backend: the ranks meet over the TCP rendezvous.
pub fn over_tcp(args: &Args, plan: &Plan, plan_hash: &str, jobs: &[Job]) -> anyhow::Result<Exit> {
    let capture = capture_for(args, plan, jobs)?;
    let joined = match baton::rendezvous::join_from_env("run") {
        Ok(Some(j)) => j,
        Ok(None) => anyhow::bail!(baton::rendezvous::RendezvousError::NoLauncher),
        Err(e) => {
            eprintln!("baton: {e}");
            return Ok(e.exit());
        }
    };
    run_as_rank(&joined.world, args, plan, plan_hash, jobs, capture)
}

/// `baton __worker …` started as one rank of a node-set step (`srun --mpi=none`, or mpirun
/// with `BATON_RENDEZVOUS`) for the NCCL backend: the ranks meet over the TCP rendezvous, and
/// rank 0 journals every row as an MPI worker's would.
pub fn worker_over_tcp(w: &crate::cli::WorkerArgs) -> anyhow::Result<Exit> {
    let (plan, jobs, hash) = crate::cli::worker_plan(w)?;
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
            eprintln!("baton: {e}");
            return Ok(e.exit());
        }
    };
    let base = baton::runner::orchestrate::new_results(&plan, &w.plan_name, "run", &hash);
    execute(
        &joined.world,
        &plan,
        base,
        &jobs,
        &w.journal,
        w.table,
        w.progress.as_deref(),
    )?;
    Ok(Exit::Ok)
}

/// When transports are wanted, NCCL's log goes to a file per rank: set up before any thread
/// (MPI, CUDA, NCCL) starts.
pub fn capture_for(
    args: &Args,
    plan: &Plan,
    jobs: &[Job],
) -> anyhow::Result<Option<transport::Capture>> {
    let capture = (plan.backend == Backend::Nccl
        && transport::wanted(args.capture_transport, jobs.iter()))
    .then(|| transport::for_this_process(&args.out))
    .flatten();
    if let Some(c) = &capture {
        baton::output::ensure_dir(&args.out)?;
        // SAFETY: nothing has started a thread yet: the world, CUDA and NCCL come after this.
        unsafe { c.apply_to_this_process() };
    }
    Ok(capture)
}

/// Extra watchdog time for ranks other than 0. When a collective hangs, every rank's watchdog
/// would fire at about the same moment; the first rank to exit makes the launcher (srun
/// --kill-on-bad-exit, mpirun) end the others with SIGTERM. Rank 0 records results, so it goes
/// first: then the hang is recorded as a timeout, not as an interruption.
fn rank_lag(world: &impl World) -> std::time::Duration {
    if world.rank() == 0 {
        std::time::Duration::ZERO
    } else {
        std::time::Duration::from_secs(3)
    }
}

#[allow(clippy::too_many_arguments)]
pub fn execute<W: RankWorld>(
    world: &W,
    plan: &Plan,
    base: baton::results::Results,
    jobs: &[Job],
    journal: &Path,
    table: bool,
    progress: Option<&Path>,
) -> anyhow::Result<baton::results::Results> {
    let mut results = base;
    let hosts = world.all_gather_string(&baton::host::hostname());
    baton::results::merge_environment(&mut results.environment, environment::capture(&hosts));
    results.environment.mpi_version = world.mpi_version();
    let mut cfg = worker::WorkerConfig {
        backend: plan.backend,
        journal: journal.to_path_buf(),
        print_table: table && world.rank() == 0,
        fault: Fault::from_env(),
        device_label: world.device_label().into(),
        results,
        gpu: None,
        watchdog: true,
        watchdog_grace: rank_lag(world),
        telemetry: false,
        progress: progress.map(Path::to_path_buf),
    };
    match plan.backend {
        Backend::Mpi => world.run_host_mpi(jobs, cfg),
        Backend::Nccl => {
            let nccl_version = libs::preflight()?;
            let count = Gpu::count()?.max(1) as usize;
            let gpu = Gpu::open((world.local_rank() % count) as u32)?;
            let info = gpu.info();
            cfg.device_label = local::device_label(&info);
            cfg.gpu = Some(info);
            cfg.watchdog_grace = crate::cli::gpu::grace() + rank_lag(world);
            cfg.telemetry = world.local_rank() == 0;
            if world.rank() == 0 {
                local::describe_environment(&mut cfg.results, nccl_version);
            }
            let mut engine = NcclEngine::new(world, gpu);
            Ok(worker::run_jobs(world, &mut engine, jobs, cfg)?)
        }
    }
}

/// Rank 0's answer to "may this run start, and which jobs are left": the IDs to skip, or why not.
#[derive(serde::Serialize, serde::Deserialize)]
enum Go {
    Skip(Vec<String>),
    Stop(String, i32),
}

/// One rank of a run its launcher started (mpirun, srun, pdsh): rank 0 claims the output
/// directory, journals every row, and on SIGTERM (Slurm's time limit) or SIGINT folds the
/// journal into `results.json` and writes JUnit and the report before leaving; the other ranks
/// give it the time to. `capture` (NCCL's log per rank) was applied before any thread started.
pub fn run_as_rank<W: RankWorld>(
    world: &W,
    args: &Args,
    plan: &Plan,
    plan_hash: &str,
    jobs: &[Job],
    capture: Option<transport::Capture>,
) -> anyhow::Result<Exit> {
    let me = world.rank();
    // Every rank must measure the same plan with the layout it asks for.
    let hashes = world.all_gather_string(plan_hash);
    if let Some(r) = hashes.iter().position(|h| h != &hashes[0]) {
        if me == 0 {
            eprintln!(
                "baton: rank {r} read a different {} than rank 0 (was it edited at the start?); nothing was run",
                args.plan.display()
            );
        }
        return Ok(Exit::Invalid);
    }
    if let Some(want) = plan.launch.total_ranks()
        && want as usize != world.size()
    {
        if me == 0 {
            eprintln!(
                "baton: plan `{}` asks for {want} ranks ({} node(s) × {} per node) but the launcher started {}; \
                 launch it with {want} ranks, or change `launch` — its results would not be the plan's",
                plan.name,
                plan.launch.nodes,
                plan.launch.ranks_per_node_total().unwrap_or(0),
                world.size()
            );
        }
        return Ok(Exit::Invalid);
    }
    let sets = baton::launch::env_sets(jobs);
    if sets.len() > 1 && me == 0 {
        eprintln!(
            "baton: {} environment sets run in one process set here; NCCL reads most variables once per process, \
             so launch one step per set (scripts from `baton render` do)",
            sets.len()
        );
    }
    // Rank 0 claims the directory and starts (or resumes) the journal; everyone learns the outcome.
    let mut claim = None;
    let go = if me == 0 {
        let fresh = orchestrate::run_results(plan, &args.plan, "run", plan_hash);
        match OutDir::claim(&args.out).and_then(|o| {
            let s = o.start(fresh, args.resume)?;
            Ok((o, s))
        }) {
            Ok((o, s)) => {
                if let Some(p) = &s.kept_aside {
                    eprintln!(
                        "baton: {} held results of an earlier run; kept them as {}",
                        o.results_path().display(),
                        p.display()
                    );
                }
                let done = outdir::completed(&s.results);
                if args.resume {
                    eprintln!(
                        "baton: resuming: {} job(s) already complete, {} to run",
                        jobs.iter().filter(|j| done.contains(&j.id)).count(),
                        jobs.iter().filter(|j| !done.contains(&j.id)).count()
                    );
                }
                claim = Some((o, s.results));
                Go::Skip(done)
            }
            Err(e) => {
                let code = if e.is_invalid_input() {
                    Exit::Invalid
                } else {
                    Exit::Runtime
                };
                Go::Stop(e.to_string(), code.code())
            }
        }
    } else {
        Go::Skip(Vec::new())
    };
    let go: Go = serde_json::from_str(
        &world.all_gather_string(&serde_json::to_string(&go).unwrap_or_default())[0],
    )
    .context("rank 0's start message")?;
    let skip = match go {
        Go::Stop(message, code) => {
            if me == 0 {
                eprintln!("baton: {message}");
            }
            return Ok(if code == Exit::Invalid.code() {
                Exit::Invalid
            } else {
                Exit::Runtime
            });
        }
        Go::Skip(ids) => ids,
    };
    let todo: Vec<Job> = jobs
        .iter()
        .filter(|j| !skip.contains(&j.id))
        .cloned()
        .collect();
    let journal = args.out.join(baton::results::journal::FILE);
    let results_path = args.out.join("results.json");
    {
        let (args, plan, jobs) = (args.clone(), plan.clone(), jobs.to_vec());
        let (journal, results_path) = (journal.clone(), results_path.clone());
        interrupt::on_signal(Exit::Interrupted.code(), move |sig| {
            if me == 0 {
                let code = match cut_short(
                    &args,
                    &plan,
                    &jobs,
                    &journal,
                    &results_path,
                    &Cut::Signal(sig),
                ) {
                    Ok(_) => Exit::Interrupted.code(),
                    Err(e) => {
                        eprintln!("baton: stopped by {sig}; {e:#}");
                        Exit::Runtime.code()
                    }
                };
                // SAFETY: ends the process while other threads sit in MPI or CUDA calls that
                // would never return; everything measured is on disk.
                unsafe { libc::_exit(code) };
            }
            // Give rank 0 time to write before the launcher, seeing a rank leave, kills it.
            std::thread::sleep(std::time::Duration::from_secs(20));
            // SAFETY: as above.
            unsafe { libc::_exit(Exit::Interrupted.code()) };
        })?;
    }
    if me == 0 {
        // A rank lost or late between collectives ends every rank (exit 3): rank 0 first
        // writes what the journal holds, and JUnit naming why.
        let (args, plan, jobs) = (args.clone(), plan.clone(), jobs.to_vec());
        let (journal, results_path) = (journal.clone(), results_path.clone());
        world.on_broken(Box::new(move |why| {
            let cut = Cut::Broken(why.to_string());
            if let Err(e) = cut_short(&args, &plan, &jobs, &journal, &results_path, &cut) {
                eprintln!("baton: {e:#}");
            }
        }));
    }
    let base = claim
        .as_ref()
        .map(|(_, r)| r.clone())
        .unwrap_or_else(|| orchestrate::new_results(plan, &args.plan, "run", plan_hash));
    let ran = execute(
        world,
        plan,
        base,
        &todo,
        &journal,
        args.format == RunFormat::Table,
        None,
    );
    let links = capture.as_ref().map(|c| {
        let mine = serde_json::to_string(&c.collect()).unwrap_or_default();
        world
            .all_gather_string(&mine)
            .iter()
            .flat_map(|s| serde_json::from_str::<Vec<TransportLink>>(s).unwrap_or_default())
            .collect::<Vec<_>>()
    });
    ran?;
    let Some((out, _)) = claim else {
        return Ok(Exit::Ok);
    };
    let mut results = baton::results::journal::rebuild(&out.journal_path())?;
    if let Some(links) = links {
        let links = transport::dedupe(links);
        for j in results
            .jobs
            .iter_mut()
            .filter(|j| todo.iter().any(|t| t.id == j.id))
        {
            transport::attach(std::slice::from_mut(j), &links);
        }
    }
    results.finished = Some(baton::results::now_rfc3339());
    out.finish(&results)?;
    eprintln!("baton: results in {}", results_path.display());
    crate::cli::run::finish(
        args,
        plan,
        jobs,
        &results,
        &results_path,
        orchestrate::exit_for(&results),
    )
}

/// Why a run ended before its jobs did.
enum Cut<'a> {
    /// A stop signal (Slurm's time limit, scancel, Ctrl-C).
    Signal(&'a str),
    /// The ranks' world broke: a rank died, or missed a collective's deadline.
    Broken(String),
}

/// Rank 0 after a stop signal or a broken world: the journal folded into `results.json`, the
/// job that was running marked as cut short, and JUnit and the report written for what ran.
fn cut_short(
    args: &Args,
    plan: &Plan,
    jobs: &[Job],
    journal: &Path,
    results_path: &Path,
    cut: &Cut,
) -> anyhow::Result<()> {
    use baton::results::journal::{Journal, Record};
    use baton::results::{ErrorKind, JobError, JobStatus};
    let (kind, message, why, exit) = match cut {
        Cut::Signal(sig) => (
            ErrorKind::Interrupted,
            format!(
                "stopped by {sig} before it finished (Slurm's time limit, scancel, Ctrl-C, or the launcher ending the step after another rank failed)"
            ),
            format!("stopped by {sig}"),
            Exit::Interrupted,
        ),
        Cut::Broken(why) => (
            ErrorKind::Other,
            format!("the ranks could not go on: {why}"),
            "the ranks could not go on".to_string(),
            Exit::Runtime,
        ),
    };
    let mut j = Journal::open(journal)?;
    let before = baton::results::journal::rebuild(journal)?;
    for job in before
        .jobs
        .iter()
        .filter(|x| x.status == JobStatus::Partial)
    {
        j.append(&Record::End {
            job: job.id.clone(),
            status: JobStatus::Partial,
            errors: vec![JobError {
                kind,
                message: message.clone(),
                repeat: None,
                requested: None,
                placement: None,
            }],
            telemetry: Vec::new(),
        })?;
    }
    if let Cut::Signal(sig) = cut {
        j.append(&Record::Interrupted {
            signal: sig.to_string(),
            at: baton::results::now_rfc3339(),
        })?;
    }
    let results = baton::results::journal::rebuild(journal)?;
    baton::results::write_atomic(results_path, &results)?;
    let _ = std::fs::remove_file(journal);
    let ran: Vec<Job> = jobs
        .iter()
        .filter(|x| results.job(&x.id).is_some())
        .cloned()
        .collect();
    eprintln!(
        "baton: {why}: {} of {} job(s) ran; results in {} (`--resume` continues)",
        ran.len(),
        jobs.len(),
        results_path.display()
    );
    if ran.is_empty() && matches!(cut, Cut::Broken(_)) {
        // Nothing measured to grade: JUnit says why (rank 0 holds the directory already).
        if args.env_set.is_none() {
            let junit = args.out.join("junit.xml");
            crate::cli::failed_early::write_junit(&junit, &args.plan, &[], "rendezvous", &message);
        }
        return Ok(());
    }
    crate::cli::run::finish(args, plan, &ran, &results, results_path, exit)?;
    Ok(())
}
