//! `baton run` outside any launcher: one worker process set per environment set, each started
//! with exactly that environment. Workers append every row to the run's journal; `results.json`
//! is rebuilt from it after each set and at the end, so an interrupted run keeps everything
//! measured.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::outdir::{self, OutDir, OutDirError};
use super::progress::{self, Progress};
use crate::exit::Exit;
use crate::expand::Job;
use crate::launch::{self, EnvSet};
use crate::plan::{Backend, Plan};
use crate::results::journal::{Journal, Record};
use crate::results::{self, ErrorKind, JobError, JobResult, JobStatus, PlanRef, Producer, Results};

pub struct RunOptions {
    /// The plan as the user named it (recorded in the results and shown in messages).
    pub plan_path: PathBuf,
    /// The plan's text as this run read it, once: workers get this copy, so editing the file
    /// during a run changes nothing in it.
    pub plan_text: String,
    /// The plan's identity (see [`crate::expand::plan_identity`]).
    pub plan_hash: String,
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
    /// The signal that stopped the run, if one did.
    pub interrupted: Option<&'static str>,
    /// Jobs the run never reached (it was stopped first).
    pub not_reached: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Results(#[from] results::ResultsError),
    #[error(transparent)]
    OutDir(#[from] OutDirError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

impl RunError {
    /// Exit code: an output directory that cannot be this run's (a file, another run's, results
    /// of another plan or node list) is the user's input; everything else is the run failing.
    pub fn exit(&self) -> Exit {
        match self {
            RunError::OutDir(e) if e.is_invalid_input() => Exit::Invalid,
            _ => Exit::Runtime,
        }
    }
}

/// A new results document for `plan`, carrying its identity.
pub fn new_results(plan: &Plan, plan_path: &Path, command: &str, hash: &str) -> Results {
    let mut r = Results::new(Producer::baton(command));
    r.plan = Some(PlanRef {
        name: plan.name.clone(),
        file: Some(plan_path.display().to_string()),
        hash: Some(hash.to_string()),
        description: plan.description.clone(),
        git: None,
    });
    r
}

/// [`new_results`] of the process that owns the run (the one that claims the output
/// directory), which also records the plan's git revision: asked once per run, not per rank.
pub fn run_results(plan: &Plan, plan_path: &Path, command: &str, hash: &str) -> Results {
    let mut r = new_results(plan, plan_path, command, hash);
    if let Some(p) = &mut r.plan {
        p.git = crate::plan::revision::git_revision(plan_path);
    }
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
pub(crate) fn cut_short(interrupted: bool, timed_out: bool) -> (JobStatus, ErrorKind) {
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
    }
}

/// Runs `jobs` of `plan`, each environment set in its own process set, telling `progress`
/// (when there is one to show) how far it got and passing the workers' output through it.
/// SIGINT, SIGTERM and SIGHUP stop it between rows (see [`super::interrupt`]).
pub fn run(
    plan: &Plan,
    jobs: &[Job],
    opts: &RunOptions,
    progress: Option<&dyn Progress>,
) -> Result<RunOutcome, RunError> {
    let io = |what: String| move |source| RunError::Io { what, source };
    let launcher = launcher_for(plan)?;
    let out = OutDir::claim(&opts.out_dir)?;
    let fresh = run_results(plan, &opts.plan_path, "run", &opts.plan_hash);
    let start = out.start(fresh, opts.resume)?;
    if let Some(p) = &start.kept_aside {
        eprintln!(
            "baton: {} held results of an earlier run; kept them as {} (use --resume to continue a run instead)",
            out.results_path().display(),
            p.display()
        );
    }
    let mut journal = start.journal;
    let done = outdir::completed(&start.results);
    let todo: Vec<Job> = jobs
        .iter()
        .filter(|j| !done.contains(&j.id))
        .cloned()
        .collect();
    if opts.resume {
        eprintln!(
            "baton: resuming: {} job(s) already complete, {} to run",
            jobs.len() - todo.len(),
            todo.len()
        );
    }
    let parts = opts.out_dir.join("parts");
    crate::output::ensure_dir(&parts).map_err(OutDirError::from)?;
    let snapshot = parts.join("plan.yaml");
    crate::output::write_atomic(&snapshot, opts.plan_text.as_bytes()).map_err(OutDirError::from)?;
    super::interrupt::install().map_err(io("cannot watch for signals".into()))?;

    // Workers' output always comes through this process, bar or not: a reader that leaves
    // early (`baton run … | head`) then ends only the printing. Inherited, mpirun itself would
    // meet the closed pipe and abort every rank ("SIGPIPE detected … aborting").
    let shown: &dyn Progress = progress.unwrap_or(&progress::Passthrough);
    shown.begin(progress::rows(&todo));
    let mut rows_done = 0;
    let mut not_reached = Vec::new();
    let ctx = SetContext {
        launcher: &launcher,
        opts,
        out: &out,
        snapshot: &snapshot,
    };
    for (k, set) in launch::env_sets(&todo).iter().enumerate() {
        if super::interrupt::requested() {
            not_reached.extend(set.jobs.iter().map(|i| todo[*i].id.clone()));
            continue;
        }
        let ran = run_set(&ctx, k, set, &todo, &mut journal, (shown, rows_done));
        // Failed jobs end early: the count moves past what they would have measured.
        rows_done += progress::rows(set.jobs.iter().map(|i| &todo[*i]));
        if let Some(last) = set.jobs.last() {
            shown.update(rows_done, &todo[*last].id);
        }
        not_reached.extend(ran?);
        out.fold()?;
    }
    shown.end();
    let interrupted = super::interrupt::requested()
        .then(|| super::interrupt::signal_name().unwrap_or("a signal"));
    if let Some(sig) = interrupted {
        journal.append(&Record::Interrupted {
            signal: sig.to_string(),
            at: results::now_rfc3339(),
        })?;
    }
    let mut results = out.fold()?;
    if interrupted.is_none() {
        results.finished = Some(results::now_rfc3339());
    }
    drop(journal);
    out.finish(&results)?;
    let exit = if interrupted.is_some() {
        Exit::Interrupted
    } else {
        exit_for(&results)
    };
    Ok(RunOutcome {
        results,
        results_path: out.results_path(),
        exit,
        interrupted,
        not_reached,
    })
}

fn launcher_for(plan: &Plan) -> Result<Launcher, RunError> {
    if plan.launch.nodes > 1 {
        return Err(RunError::Unavailable(format!(
            "plan `{}` spans {n} nodes (`launch.nodes`) and no node list is known here: run it \
             inside an allocation (`salloc --no-kill -N {n} --ntasks-per-node=R baton run …`, \
             one step across its nodes), give its nodes (`--nodes HOSTLIST` or `nodes.hostlist`: \
             one `mpirun -H` across them), or render a job script (`baton render`)",
            plan.name,
            n = plan.launch.nodes
        )));
    }
    Ok(match plan.backend {
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
                forward: plan.launch.mpirun.forward.clone(),
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
    })
}

/// What every environment set of one run shares.
struct SetContext<'a> {
    launcher: &'a Launcher,
    opts: &'a RunOptions,
    out: &'a OutDir,
    /// The plan as this run read it, for the workers.
    snapshot: &'a Path,
}

/// How an env set's worker starts.
enum Launcher {
    /// `mpirun -np N baton-mpi __worker ...` (host backend).
    Mpirun {
        mpirun: PathBuf,
        worker: PathBuf,
        np: u32,
        /// The plan's `launch.mpirun.forward`.
        forward: Vec<String>,
    },
    /// `baton __worker ... --gpus N`: one process, a thread per GPU.
    Threads { baton: PathBuf, gpus: usize },
}

fn job_backend(l: &Launcher) -> Backend {
    match l {
        Launcher::Mpirun { .. } => Backend::Mpi,
        Launcher::Threads { .. } => Backend::Nccl,
    }
}

/// Runs one environment set. A worker that dies (a crash, a hang the watchdog ended, a sticky
/// GPU error) takes only the job it was running with it: a fresh worker is started for the jobs
/// it did not reach, as long as each attempt finishes at least one job. A stop signal ends the
/// set after the current worker: returns the jobs it never reached.
fn run_set(
    ctx: &SetContext<'_>,
    k: usize,
    set: &EnvSet,
    jobs: &[Job],
    journal: &mut Journal,
    (progress, done): (&dyn Progress, u64),
) -> Result<Vec<String>, RunError> {
    let parts = ctx.opts.out_dir.join("parts");
    let launcher = ctx.launcher;
    let wants_transport = super::transport::wanted(
        ctx.opts.capture_transport,
        set.jobs.iter().map(|i| &jobs[*i]),
    );
    let capture = (wants_transport && matches!(launcher, Launcher::Threads { .. }))
        .then(|| super::transport::plan(&parts, k, &set.env))
        .flatten();
    let mut env = set.env.clone();
    if let Some(c) = &capture {
        env.extend(c.env.clone());
    }
    let mut pending: Vec<usize> = set.jobs.clone();
    let mut not_reached = Vec::new();
    for attempt in 0.. {
        let waiting: std::collections::HashSet<usize> = pending.iter().copied().collect();
        let finished = set.jobs.iter().filter(|i| !waiting.contains(i));
        let watch = (progress, done + progress::rows(finished.map(|i| &jobs[*i])));
        let from = journal.len()?;
        let status = run_worker(ctx, k, attempt, &pending, jobs, &env, watch)?;
        // What this attempt started and how each of those jobs stands, from its own records.
        let (records, _) = results::journal::records(journal.path(), from)?;
        let started = results::journal::statuses(records);
        let interrupted = super::interrupt::requested();
        let timeout = status.code() == Some(Exit::Timeout.code());
        let describe = if interrupted {
            format!(
                "stopped by {} before it finished",
                super::interrupt::signal_name().unwrap_or("a signal")
            )
        } else if timeout {
            "a collective hung and was aborted at its timeout".to_string()
        } else {
            format!("the worker ended with {status}")
        };
        let progressed = !started.is_empty();
        let mut left = Vec::new();
        for &i in &pending {
            let id = &jobs[i].id;
            let Some(status) = started.get(id) else {
                left.push(i);
                continue;
            };
            if *status == JobStatus::Partial {
                let (status, kind) = cut_short(interrupted, timeout);
                journal.append(&Record::End {
                    job: id.clone(),
                    status,
                    errors: vec![error(kind, describe.clone())],
                    telemetry: Vec::new(),
                })?;
            }
        }
        pending = left;
        if interrupted {
            not_reached.extend(pending.iter().map(|i| jobs[*i].id.clone()));
            break;
        }
        if status.success() || pending.is_empty() || !progressed {
            for &i in &pending {
                let job = &jobs[i];
                let why = if status.success() {
                    "the worker finished without running it".to_string()
                } else {
                    describe.clone()
                };
                eprintln!("baton: {}: not run ({why})", job.id);
                journal.append(&Record::Job {
                    job: Box::new(not_run(job, job_backend(launcher), why)),
                })?;
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
    // Every job of the set started in this run with no links, so each gets the set's links.
    if let Some(c) = &capture {
        let links = c.collect();
        for i in &set.jobs {
            journal.append(&Record::Transports {
                job: jobs[*i].id.clone(),
                links: links.clone(),
            })?;
        }
    }
    Ok(not_reached)
}

/// One worker process set for the jobs `which` of set `k`, appending to the run's journal: its
/// exit status.
fn run_worker(
    ctx: &SetContext<'_>,
    k: usize,
    attempt: usize,
    which: &[usize],
    jobs: &[Job],
    env: &indexmap::IndexMap<String, String>,
    (progress, done): (&dyn Progress, u64),
) -> Result<std::process::ExitStatus, RunError> {
    let opts = ctx.opts;
    let parts = opts.out_dir.join("parts");
    let name = if attempt == 0 {
        format!("set-{k}")
    } else {
        format!("set-{k}.retry{attempt}")
    };
    // JSON, not a line per ID: an ID may hold any character an env value does.
    let ids_file = parts.join(format!("{name}.jobs.json"));
    let ids: Vec<&str> = which.iter().map(|i| jobs[*i].id.as_str()).collect();
    let text = serde_json::to_vec(&ids).map_err(|e| RunError::Io {
        what: "cannot list the jobs".into(),
        source: std::io::Error::other(e),
    })?;
    crate::output::write_atomic(&ids_file, &text).map_err(OutDirError::from)?;
    let mut args: Vec<OsString> = vec![
        "__worker".into(),
        ctx.snapshot.into(),
        "--plan-hash".into(),
        opts.plan_hash.clone().into(),
        "--plan-name".into(),
        opts.plan_path.clone().into(),
        "--jobs".into(),
        ids_file.into(),
        "--journal".into(),
        ctx.out.journal_path().into(),
    ];
    if opts.print_table {
        args.push("--table".into());
    }
    let feed = parts.join(format!("{name}.progress"));
    crate::output::write_atomic(&feed, b"").map_err(OutDirError::from)?;
    args.push("--progress".into());
    args.push(feed.clone().into());
    let (cmd, what) = match ctx.launcher {
        Launcher::Mpirun {
            mpirun,
            worker,
            np,
            forward,
        } => (
            launch::mpirun_command(mpirun, None, *np, env, forward, worker, &args),
            mpirun,
        ),
        Launcher::Threads { baton, gpus } => {
            let mut c = std::process::Command::new(baton);
            c.args(&args).arg("--gpus").arg(gpus.to_string()).envs(env);
            (c, baton)
        }
    };
    progress::run_watched(cmd, feed, done, progress, Some(ctx.out.lock_fd())).map_err(|source| {
        RunError::Io {
            what: format!("cannot start {}", what.display()),
            source,
        }
    })
}
