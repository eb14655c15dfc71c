//! `baton run` outside any launcher: one worker process set per environment set, each started
//! with exactly that environment. Workers append every row to the run's journal; `results.json`
//! is rebuilt from it after each set and at the end, so an interrupted run keeps everything
//! measured.

use std::path::{Path, PathBuf};

use super::events::{self, Events, RunEvent};
use super::lifecycle::{self, Lifecycle, Maker, error, left_running, not_run};
use super::outdir::{OutDir, OutDirError};
use super::supervise::{Limit, Output, supervise};
use super::worker_args::WorkerArgs;
use super::{Input, RunError, RunOptions, RunOutcome};
use crate::exit::Exit;
use crate::expand::Job;
use crate::launch::{self, EnvSet};
use crate::plan::{Backend, Plan};
use crate::results::journal::{Journal, Record};
use crate::results::{self, ErrorKind, JobStatus};

/// Runs `jobs` of `plan`, each environment set in its own process set, telling `events` how far
/// it got and passing the workers' output on as events.
/// SIGINT, SIGTERM and SIGHUP stop it between rows (see [`super::interrupt`]).
pub fn run(input: &Input<'_>, events: &dyn Events) -> Result<RunOutcome, RunError> {
    let (plan, opts) = (input.plan, input.opts);
    let launcher = launcher_for(plan)?;
    let fresh = lifecycle::results(plan, &opts.plan_path, &opts.plan_hash, Maker::Owner)
        .with_site(opts.site.clone());
    let mut life = Lifecycle::start(&opts.out_dir, fresh, opts.resume, events)?;
    let todo = life.todo(input.jobs, opts.resume, events);
    let snapshot = life.snapshot(&opts.plan_text)?;
    events.event(&RunEvent::Begin {
        rows: events::rows(&todo),
    });
    let mut rows_done = 0;
    let mut not_reached = Vec::new();
    for (k, set) in launch::env_sets(&todo).iter().enumerate() {
        if super::interrupt::requested() {
            not_reached.extend(set.jobs.iter().map(|i| todo[*i].id.clone()));
            continue;
        }
        let (out, journal) = life.parts();
        let ctx = SetContext {
            launcher: &launcher,
            opts,
            out,
            snapshot: &snapshot,
        };
        let ran = run_set(&ctx, k, set, &todo, journal, (events, rows_done));
        // Failed jobs end early: the count moves past what they would have measured.
        rows_done += events::rows(set.jobs.iter().map(|i| &todo[*i]));
        if let Some(last) = set.jobs.last() {
            events.event(&RunEvent::Rows {
                rows: rows_done,
                job: &todo[*last].id,
            });
        }
        not_reached.extend(ran?);
        life.fold(events)?;
    }
    events.event(&RunEvent::End);
    let end = life.finish(events, |_| {})?;
    Ok(RunOutcome {
        exit: end.exit(),
        results: end.results,
        results_path: end.results_path,
        interrupted: end.interrupted,
        not_reached,
        owner: true,
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
    (events, done): (&dyn Events, u64),
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
    let set_from = journal.len()?;
    let here = [crate::host::hostname()];
    for attempt in 0.. {
        let waiting: std::collections::HashSet<usize> = pending.iter().copied().collect();
        let finished = set.jobs.iter().filter(|i| !waiting.contains(i));
        let watch = (events, done + events::rows(finished.map(|i| &jobs[*i])));
        let from = journal.len()?;
        let listener = super::nccl_lines::Listener::new(watch.0);
        let (status, arrived) =
            run_worker(ctx, k, attempt, &pending, jobs, &env, (&listener, watch.1))?;
        // What this attempt started and how each of those jobs stands, from its own records.
        let (records, _) = results::journal::records(journal.path(), from)?;
        super::nccl_lines::record(journal, &records, listener.heard(), &here)?;
        let started = results::journal::statuses(records);
        let interrupted = super::interrupt::requested();
        let timeout = status.code() == Some(Exit::Timeout.code());
        let progressed = !started.is_empty();
        let describe = if interrupted {
            format!(
                "stopped by {} before it finished",
                super::interrupt::signal_name().unwrap_or("a signal")
            )
        } else if timeout && !progressed {
            // Which ranks did not arrive, as the rank that recorded it saw them.
            let who = super::arrival::said(&arrived);
            format!(
                "the worker's ranks timed out at start-up, before its first job: {}",
                who.as_deref().unwrap_or("a rank did not arrive")
            )
        } else if timeout {
            "a collective hung and was aborted at its timeout".to_string()
        } else {
            format!("the worker ended with {status}")
        };
        let mut left = Vec::new();
        for &i in &pending {
            let id = &jobs[i].id;
            let Some(status) = started.get(id) else {
                left.push(i);
                continue;
            };
            if *status == JobStatus::Partial {
                let (status, kind) = left_running(interrupted, timeout);
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
                events.event(&RunEvent::NotRun {
                    job: &job.id,
                    why: &why,
                });
                let mut never = not_run(job, job_backend(launcher), why);
                if timeout {
                    // Its ranks never all arrived: a hang, timed out, as a collective's is.
                    never.status = JobStatus::Timeout;
                    never.errors = vec![error(ErrorKind::Timeout, describe.clone())];
                }
                journal.append(&Record::Job {
                    job: Box::new(never),
                })?;
            }
            if !status.success() && !timeout {
                events.event(&RunEvent::SetEnded {
                    set: k,
                    why: &describe,
                    retry: None,
                });
            }
            break;
        }
        events.event(&RunEvent::SetEnded {
            set: k,
            why: &describe,
            retry: Some(pending.len()),
        });
    }
    // Every job of the set started in this run with no links, so each gets the set's links.
    if let Some(c) = &capture {
        let links = c.collect(events);
        for i in &set.jobs {
            journal.append(&Record::Transports {
                job: jobs[*i].id.clone(),
                links: links.clone(),
            })?;
        }
        // The capture's files got NCCL's WARN lines instead of its output: placed by their stamps.
        let (records, _) = results::journal::records(journal.path(), set_from)?;
        let heard = super::nccl_lines::from_logs(&c.files());
        super::nccl_lines::record(journal, &records, heard, &here)?;
    }
    Ok(not_reached)
}

/// One worker process set for the jobs `which` of set `k`, appending to the run's journal: its
/// exit status, and where its ranks announced their arrival at start-up (`arrival`).
fn run_worker(
    ctx: &SetContext<'_>,
    k: usize,
    attempt: usize,
    which: &[usize],
    jobs: &[Job],
    env: &indexmap::IndexMap<String, String>,
    (events, done): (&dyn Events, u64),
) -> Result<(std::process::ExitStatus, PathBuf), RunError> {
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
    let feed = parts.join(format!("{name}.progress"));
    crate::output::write_atomic(&feed, b"").map_err(OutDirError::from)?;
    // Where its ranks announce themselves on their way into their start-up meeting; without
    // it a start-up timeout says only that a rank did not arrive.
    let arrived = super::arrival::dir_for(&feed);
    super::arrival::prepare(&arrived).map_err(|source| RunError::Io {
        what: format!("cannot make {}", arrived.display()),
        source,
    })?;
    let mut args = WorkerArgs {
        plan: ctx.snapshot.to_path_buf(),
        plan_hash: opts.plan_hash.clone(),
        plan_name: opts.plan_path.clone(),
        jobs: ids_file,
        journal: ctx.out.journal_path(),
        table: opts.print_table,
        gpus: 0,
        progress: Some(feed.clone()),
        node_set: None,
        no_evidence: !opts.evidence,
    };
    let (cmd, what) = match ctx.launcher {
        Launcher::Mpirun {
            mpirun,
            worker,
            np,
            forward,
        } => (
            launch::mpirun_command(mpirun, None, *np, env, forward, worker, &args.to_args()),
            mpirun,
        ),
        Launcher::Threads { baton, gpus } => {
            args.gpus = *gpus;
            let mut c = std::process::Command::new(baton);
            c.args(args.to_args()).envs(env);
            (c, baton)
        }
    };
    let output = Output::Relay { events, feed, done };
    supervise(cmd, output, &Limit::None, Some(ctx.out.lock_fd()))
        .map(|e| (e.status, arrived))
        .map_err(|source| RunError::Io {
            what: format!("cannot start {}", what.display()),
            source,
        })
}
