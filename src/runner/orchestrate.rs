//! `baton run` outside any launcher: one worker process set per environment set, each started
//! with exactly that environment; their incremental results are merged into `results.json`
//! after each set, so an interrupted run keeps everything measured.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::launch::{self, EnvSet};
use super::progress::{self, Progress};
use crate::exit::Exit;
use crate::expand::Job;
use crate::plan::{Backend, Plan};
use crate::results::{self, ErrorKind, JobError, JobResult, JobStatus, PlanRef, Producer, Results};

pub struct RunOptions {
    pub plan_path: PathBuf,
    pub out_dir: PathBuf,
    pub resume: bool,
    pub print_table: bool,
    /// Record NCCL transports for every job, not only those with a `transport` criterion.
    pub capture_transport: bool,
}

pub struct RunOutcome {
    pub results: Results,
    pub results_path: PathBuf,
    pub exit: Exit,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Results(#[from] results::ResultsError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

/// A new results document for `plan`.
pub fn new_results(plan: &Plan, plan_path: &Path, command: &str) -> Results {
    let mut r = Results::new(Producer::baton(command));
    r.plan = Some(PlanRef {
        name: plan.name.clone(),
        file: Some(plan_path.display().to_string()),
    });
    r
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
fn not_run(job: &Job, backend: Backend, why: String) -> JobResult {
    let layout = results::Layout {
        nranks: job.ranks.unwrap_or(0),
        nodes: 0,
        processes: 0,
        gpus_per_process: 0,
        ranks: Vec::new(),
    };
    let mut r = super::worker::job_result(job, backend, layout);
    r.status = JobStatus::Error;
    r.errors.push(JobError {
        kind: ErrorKind::Launcher,
        message: why,
        repeat: None,
        requested: None,
        placement: None,
    });
    r
}

/// Runs `jobs` of `plan`, each environment set in its own process set, telling `progress`
/// (when there is one to show) how far it got and passing the workers' output through it.
pub fn run(
    plan: &Plan,
    jobs: &[Job],
    opts: &RunOptions,
    progress: Option<&dyn Progress>,
) -> Result<RunOutcome, RunError> {
    let io = |what: String| move |source| RunError::Io { what, source };
    std::fs::create_dir_all(opts.out_dir.join("parts"))
        .map_err(io(format!("cannot create {}", opts.out_dir.display())))?;
    let results_path = opts.out_dir.join("results.json");
    let mut results = if opts.resume && results_path.exists() {
        results::read(&results_path)?
    } else {
        new_results(plan, &opts.plan_path, "run")
    };
    let done: Vec<String> = results
        .jobs
        .iter()
        .filter(|j| j.status == JobStatus::Completed)
        .map(|j| j.id.clone())
        .collect();
    let todo: Vec<Job> = jobs
        .iter()
        .filter(|j| !done.contains(&j.id))
        .cloned()
        .collect();
    if opts.resume && !done.is_empty() {
        eprintln!(
            "baton: resuming: {} job(s) already complete, {} to run",
            done.len(),
            todo.len()
        );
    }
    results.finished = None;
    results::write_atomic(&results_path, &results)?;

    if plan.launch.nodes > 1 {
        return Err(RunError::Unavailable(format!(
            "plan `{}` spans {} nodes; run it under Slurm or mpirun (see `baton render`)",
            plan.name, plan.launch.nodes
        )));
    }
    let launcher = match plan.backend {
        Backend::Mpi => {
            let worker = launch::find_program("baton-mpi").ok_or_else(|| {
                RunError::Unavailable(
                    "the mpi backend needs `baton-mpi`, which was not found next to baton or on PATH; \
                     build it with `cargo build --release --features mpi` (needs an MPI installation, e.g. apt-get install libopenmpi-dev openmpi-bin)"
                        .into(),
                )
            })?;
            let mpirun = launch::which("mpirun").ok_or_else(|| {
                RunError::Unavailable("`mpirun` was not found on PATH; install Open MPI (apt-get install openmpi-bin) or run under srun".into())
            })?;
            Launcher::Mpirun {
                mpirun,
                worker,
                np: plan
                    .launch
                    .ranks_per_node
                    .unwrap_or(launch::DEFAULT_MPI_RANKS_PER_NODE),
            }
        }
        Backend::Nccl => {
            crate::runner::nccl::libs::preflight().map_err(|e| RunError::Unavailable(e.0))?;
            let count = crate::runner::nccl::Gpu::count()
                .map_err(|e| RunError::Unavailable(format!("no usable GPU: {e}")))?
                as usize;
            if count == 0 {
                return Err(RunError::Unavailable(
                    "no GPU found on this machine (cuDeviceGetCount = 0)".into(),
                ));
            }
            let want = plan
                .launch
                .ranks_per_node_total()
                .map_or(count, |n| n as usize);
            if want > count {
                return Err(RunError::Unavailable(format!(
                    "plan `{}` asks for {want} GPUs on this node but {count} are visible",
                    plan.name
                )));
            }
            let me = std::env::current_exe().map_err(|source| RunError::Io {
                what: "cannot find the baton executable".into(),
                source,
            })?;
            Launcher::Threads {
                baton: me,
                gpus: want,
            }
        }
    };

    // Workers' output always comes through this process, bar or not: a reader that leaves
    // early (`baton run … | head`) then ends only the printing. Inherited, mpirun itself would
    // meet the closed pipe and abort every rank ("SIGPIPE detected … aborting").
    let shown: &dyn Progress = progress.unwrap_or(&progress::Passthrough);
    shown.begin(progress::rows(&todo));
    let mut rows_done = 0;
    for (k, set) in launch::env_sets(&todo).iter().enumerate() {
        let ran = run_set(
            k,
            set,
            &todo,
            &launcher,
            opts,
            &mut results,
            (shown, rows_done),
        );
        // Failed jobs end early: the count moves past what they would have measured.
        rows_done += progress::rows(set.jobs.iter().map(|i| &todo[*i]));
        if let Some(last) = set.jobs.last() {
            shown.update(rows_done, &todo[*last].id);
        }
        ran?;
        results::write_atomic(&results_path, &results)?;
    }
    shown.end();
    results.finished = Some(results::now_rfc3339());
    results::write_atomic(&results_path, &results)?;
    let exit = exit_for(&results);
    Ok(RunOutcome {
        results,
        results_path,
        exit,
    })
}

/// How an env set's worker starts.
enum Launcher {
    /// `mpirun -np N baton-mpi __worker ...` (host backend).
    Mpirun {
        mpirun: PathBuf,
        worker: PathBuf,
        np: u32,
    },
    /// `baton __worker ... --gpus N`: one process, a thread per GPU.
    Threads { baton: PathBuf, gpus: usize },
}

/// The workers saw the hosts, GPUs and library versions; the run's results keep what they saw.
fn merge_environment(into: &mut results::Environment, from: results::Environment) {
    for h in from.hosts {
        match into.hosts.iter_mut().find(|x| x.hostname == h.hostname) {
            Some(x) => {
                for g in h.gpus {
                    if !x.gpus.iter().any(|y| y.index == g.index) {
                        x.gpus.push(g);
                    }
                }
            }
            None => into.hosts.push(h),
        }
    }
    into.driver_version = into.driver_version.take().or(from.driver_version);
    into.cuda_version = into.cuda_version.take().or(from.cuda_version);
    into.nccl_version = into.nccl_version.take().or(from.nccl_version);
    into.mpi_version = into.mpi_version.take().or(from.mpi_version);
    into.topology = into.topology.take().or(from.topology);
    for (k, v) in from.variables {
        into.variables.entry(k).or_insert(v);
    }
}

fn job_backend(l: &Launcher) -> Backend {
    match l {
        Launcher::Mpirun { .. } => Backend::Mpi,
        Launcher::Threads { .. } => Backend::Nccl,
    }
}

/// Runs one environment set. A worker that dies (a crash, a hang the watchdog ended, a sticky
/// GPU error) takes only the job it was running with it: a fresh worker is started for the jobs
/// it did not reach, as long as each attempt finishes at least one job.
fn run_set(
    k: usize,
    set: &EnvSet,
    jobs: &[Job],
    launcher: &Launcher,
    opts: &RunOptions,
    results: &mut Results,
    (progress, done): (&dyn Progress, u64),
) -> Result<(), RunError> {
    let parts = opts.out_dir.join("parts");
    let wants_transport =
        super::transport::wanted(opts.capture_transport, set.jobs.iter().map(|i| &jobs[*i]));
    let capture = (wants_transport && matches!(launcher, Launcher::Threads { .. }))
        .then(|| super::transport::plan(&parts, k, &set.env))
        .flatten();
    let mut env = set.env.clone();
    if let Some(c) = &capture {
        env.extend(c.env.clone());
    }
    let mut pending: Vec<usize> = set.jobs.clone();
    let mut got: Vec<JobResult> = Vec::new();
    for attempt in 0.. {
        let waiting: std::collections::HashSet<usize> = pending.iter().copied().collect();
        let finished = set.jobs.iter().filter(|i| !waiting.contains(i));
        let watch = (progress, done + progress::rows(finished.map(|i| &jobs[*i])));
        let (status, ran) = run_worker(k, attempt, &pending, jobs, launcher, opts, &env, watch)?;
        let ran: Vec<JobResult> = match ran {
            Some(r) => {
                merge_environment(&mut results.environment, r.environment);
                r.jobs
            }
            None => Vec::new(),
        };
        let timeout = status.code() == Some(Exit::Timeout.code());
        let describe = if timeout {
            "a collective hung and was aborted at its timeout".to_string()
        } else {
            format!("the worker ended with {status}")
        };
        // This attempt's results file holds only the jobs it was given.
        let progressed = !ran.is_empty();
        let by_id: std::collections::HashMap<&str, &JobResult> =
            ran.iter().map(|j| (j.id.as_str(), j)).collect();
        let mut left = Vec::new();
        for &i in &pending {
            let job = &jobs[i];
            match by_id.get(job.id.as_str()).copied() {
                Some(j) if j.status == JobStatus::Partial => {
                    let mut j = j.clone();
                    j.status = if timeout {
                        JobStatus::Timeout
                    } else {
                        JobStatus::Error
                    };
                    j.errors.push(JobError {
                        kind: if timeout {
                            ErrorKind::Timeout
                        } else {
                            ErrorKind::Launcher
                        },
                        message: describe.clone(),
                        repeat: None,
                        requested: None,
                        placement: None,
                    });
                    got.push(j);
                }
                Some(j) => got.push(j.clone()),
                None => left.push(i),
            }
        }
        pending = left;
        if status.success() || pending.is_empty() || !progressed {
            for &i in &pending {
                let job = &jobs[i];
                let why = if status.success() {
                    "the worker finished without running it".to_string()
                } else {
                    describe.clone()
                };
                eprintln!("baton: {}: not run ({why})", job.id);
                got.push(not_run(job, job_backend(launcher), why));
            }
            if !status.success() && !timeout {
                eprintln!("baton: environment set {k}: {describe}");
            }
            break;
        }
        eprintln!(
            "baton: environment set {k}: {describe}; starting a fresh worker for the {} job(s) it did not reach",
            pending.len()
        );
    }
    if let Some(c) = &capture {
        super::transport::attach(&mut got, &c.collect());
    }
    for j in got {
        results.jobs.retain(|x| x.id != j.id);
        results.jobs.push(j);
    }
    Ok(())
}

/// One worker process set for the jobs `which` of set `k`: its exit status and the results it
/// left (`None` when it wrote none).
#[allow(clippy::too_many_arguments)]
fn run_worker(
    k: usize,
    attempt: usize,
    which: &[usize],
    jobs: &[Job],
    launcher: &Launcher,
    opts: &RunOptions,
    env: &indexmap::IndexMap<String, String>,
    (progress, done): (&dyn Progress, u64),
) -> Result<(std::process::ExitStatus, Option<Results>), RunError> {
    let parts = opts.out_dir.join("parts");
    let name = if attempt == 0 {
        format!("set-{k}")
    } else {
        format!("set-{k}.retry{attempt}")
    };
    let ids_file = parts.join(format!("{name}.jobs"));
    let part = parts.join(format!("{name}.json"));
    let ids: Vec<&str> = which.iter().map(|i| jobs[*i].id.as_str()).collect();
    std::fs::write(&ids_file, ids.join("\n") + "\n").map_err(|source| RunError::Io {
        what: format!("cannot write {}", ids_file.display()),
        source,
    })?;
    let _ = std::fs::remove_file(&part);
    let mut args: Vec<OsString> = vec![
        "__worker".into(),
        opts.plan_path.clone().into(),
        "--jobs".into(),
        ids_file.into(),
        "--out".into(),
        part.clone().into(),
    ];
    if opts.print_table {
        args.push("--table".into());
    }
    let feed = parts.join(format!("{name}.progress"));
    let _ = std::fs::remove_file(&feed);
    args.push("--progress".into());
    args.push(feed.clone().into());
    let (cmd, what) = match launcher {
        Launcher::Mpirun { mpirun, worker, np } => (
            launch::mpirun_command(mpirun, *np, env, worker, &args),
            mpirun,
        ),
        Launcher::Threads { baton, gpus } => {
            let mut c = std::process::Command::new(baton);
            c.args(&args).arg("--gpus").arg(gpus.to_string()).envs(env);
            (c, baton)
        }
    };
    let status =
        progress::run_watched(cmd, feed, done, progress).map_err(|source| RunError::Io {
            what: format!("cannot start {}", what.display()),
            source,
        })?;
    let ran = if part.exists() {
        Some(results::read(&part)?)
    } else {
        None
    };
    Ok((status, ran))
}
