//! The MPI rank side of `run` (only in `baton-mpi`).

use std::path::Path;

use anyhow::Context;
use baton::exit::Exit;
use baton::expand::Job;
use baton::plan::{Backend, Plan};
use baton::results::TransportLink;
use baton::runner::fault::Fault;
use baton::runner::mpi::{HostEngine, MpiWorld};
use baton::runner::nccl::{Gpu, NcclEngine, libs, local};
use baton::runner::orchestrate;
use baton::runner::world::World;
use baton::runner::{environment, transport, worker};

use crate::cli::run::Args;
use crate::cli::{RunFormat, WorkerArgs};

fn init() -> anyhow::Result<MpiWorld> {
    MpiWorld::init().context("MPI could not be initialised")
}

/// This process's GPU among the node's: the launcher's local rank, else the world rank.
fn local_rank(world: &MpiWorld) -> usize {
    [
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "SLURM_LOCALID",
        "MPI_LOCALRANKID",
        "PMI_LOCAL_RANK",
    ]
    .iter()
    .find_map(|k| std::env::var(k).ok()?.parse().ok())
    .unwrap_or_else(|| world.rank())
}

fn execute(
    world: &MpiWorld,
    plan: &Plan,
    plan_path: &Path,
    jobs: &[Job],
    out: &Path,
    table: bool,
    progress: Option<&Path>,
) -> anyhow::Result<baton::results::Results> {
    let mut results = orchestrate::new_results(plan, plan_path, "run");
    let hosts = world.all_gather_string(&worker::hostname());
    results.environment = environment::capture(&hosts);
    results.environment.mpi_version = MpiWorld::library_version();
    let mut cfg = worker::WorkerConfig {
        backend: plan.backend,
        out: out.to_path_buf(),
        print_table: table && world.rank() == 0,
        fault: Fault::from_env(),
        device_label: "host memory (MPI)".into(),
        results,
        gpu: None,
        watchdog: true,
        watchdog_grace: std::time::Duration::ZERO,
        telemetry: false,
        progress: progress.map(Path::to_path_buf),
    };
    match plan.backend {
        Backend::Mpi => {
            let mut engine = HostEngine::new(world.comm());
            Ok(worker::run_jobs(world, &mut engine, jobs, cfg)?)
        }
        Backend::Nccl => {
            let nccl_version = libs::preflight()?;
            let count = Gpu::count()?.max(1) as usize;
            let gpu = Gpu::open((local_rank(world) % count) as u32)?;
            let info = gpu.info();
            cfg.device_label = local::device_label(&info);
            cfg.gpu = Some(info);
            cfg.watchdog_grace = crate::cli::gpu::grace();
            cfg.telemetry = local_rank(world) == 0;
            if world.rank() == 0 {
                local::describe_environment(&mut cfg.results, nccl_version);
            }
            let mut engine = NcclEngine::new(world, gpu);
            Ok(worker::run_jobs(world, &mut engine, jobs, cfg)?)
        }
    }
}

/// `baton-mpi __worker PLAN --jobs FILE --out PART`: the jobs listed in FILE, in that order.
pub fn run(w: &WorkerArgs) -> anyhow::Result<Exit> {
    let world = init()?;
    // The `run` that started this worker applied the plan trust policy already.
    let loaded = baton::plan::load_file_with(&w.plan, baton::plan::Trust::Trusted)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let jobs = crate::cli::select_jobs(&loaded.plan, &w.jobs)?;
    execute(
        &world,
        &loaded.plan,
        &w.plan,
        &jobs,
        &w.out,
        w.table,
        w.progress.as_deref(),
    )?;
    Ok(Exit::Ok)
}

/// `baton-mpi run PLAN` started by mpirun or srun: this process is one rank. When transports
/// are wanted, NCCL's log goes to a file per rank in the output directory.
pub fn run_under_launcher(args: &Args, plan: &Plan, jobs: &[Job]) -> anyhow::Result<Exit> {
    let capture = (plan.backend == Backend::Nccl
        && transport::wanted(args.capture_transport, jobs.iter()))
    .then(|| transport::for_this_process(&args.out))
    .flatten();
    if let Some(c) = &capture {
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("cannot create {}", args.out.display()))?;
        // SAFETY: nothing has started a thread yet: MPI, CUDA and NCCL come after this.
        unsafe { c.apply_to_this_process() };
    }
    let world = init()?;
    if plan.backend == Backend::Mpi && plan.launch.ranks_per_node.is_some() {
        let want = plan.launch.total_ranks().unwrap_or(0) as usize;
        if want != world.size() && world.rank() == 0 {
            eprintln!(
                "baton: plan `{}` asks for {want} ranks but the launcher started {}",
                plan.name,
                world.size()
            );
        }
    }
    let sets = baton::runner::launch::env_sets(jobs);
    if sets.len() > 1 && world.rank() == 0 {
        eprintln!(
            "baton: {} environment sets run in one process set here; NCCL reads most variables once per process, \
             so launch one step per set (scripts from `baton render` do)",
            sets.len()
        );
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let out = args.out.join("results.json");
    let mut results = execute(
        &world,
        plan,
        &args.plan,
        jobs,
        &out,
        args.format == RunFormat::Table,
        None,
    )?;
    if let Some(c) = &capture {
        let mine = serde_json::to_string(&c.collect()).unwrap_or_default();
        let links: Vec<TransportLink> = world
            .all_gather_string(&mine)
            .iter()
            .flat_map(|s| serde_json::from_str::<Vec<TransportLink>>(s).unwrap_or_default())
            .collect();
        transport::attach(&mut results.jobs, &transport::dedupe(links));
    }
    if world.rank() != 0 {
        return Ok(Exit::Ok);
    }
    results.finished = Some(baton::results::now_rfc3339());
    baton::results::write_atomic(&out, &results)?;
    eprintln!("baton: results in {}", out.display());
    crate::cli::run::finish(
        args,
        plan,
        jobs,
        &results,
        &out,
        orchestrate::exit_for(&results),
    )
}
