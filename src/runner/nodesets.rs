//! `baton run` of a plan whose tests run over node sets (`over:`), inside an allocation or on a
//! node list: test by test, round by round, every node set of a round is its own launcher step
//! (`srun --exact -N k -w HOSTS`, or `mpirun -H`), all of them at once, each with its own
//! deadline, output and journal. A set that crashes, hangs or cannot start costs only itself;
//! its nodes are then probed with a trivial step (`baton probe`, when the job it ended in needs
//! its after-snapshots), and a node that does not answer is dead: later rounds leave it out.
//! `over: isolate` picks each round from the verdicts of the last, which the caller's `judge`
//! gives (the runner never grades).
//!
//! Every set's rank 0 appends its rows to the set's own journal (`sets/T/rR-K.jsonl`), never
//! to a file another node appends to; the run's journal names each set as it starts
//! ([`Record::SetStarted`]), and every reader folds the set's journal in from there, so a row is
//! kept however the run ends.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

mod after;
mod preflight;
mod round;

use super::events::{Events, RunEvent};
use super::lifecycle::{self, Lifecycle, Maker};
use super::outdir::OutDir;
use super::refusal::{self, Refusal};
use super::supervise::{Cause, Ended, Limit, Output, supervise};
use super::worker_args::WorkerArgs;
use super::{Input, RunError, RunOptions, RunOutcome};
use crate::exit::Exit;
use crate::expand::Job;
use crate::expand::nodesets::is_one_job;
use crate::launch;
use crate::nodeset::hostlist::compress;
use crate::nodeset::{Isolator, Over, rounds};
use crate::plan::Plan;
use crate::results::journal::{self, Journal, Record};
use crate::results::{JobStatus, NodeSetRef, Results, SetRun};

/// Whether a set's jobs all met their criteria, from the results so far and the set's job IDs.
/// The CLI grades; the runner only needs the answer to choose `isolate`'s next round.
pub type Judge<'a> = &'a (dyn Fn(&Results, &[String]) -> bool + Sync);

/// Time a step may take beyond its collectives' own timeouts: launching ranks on every node,
/// MPI and NCCL start-up, and a watchdog's grace.
const STEP_GRACE: Duration = Duration::from_secs(30);

/// How long a node has to run a trivial step before it is called dead.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The node list a run drives its sets over.
pub struct Nodes {
    pub hosts: Vec<String>,
    /// Domains as indices into `hosts` (racks, NVLink domains), for `isolate`'s screening.
    pub domains: Vec<Vec<usize>>,
    /// A `--rerun-failed` run: the hosts of `rerun.known_good` are among `hosts` as partners
    /// (they passed the earlier run); the others are the nodes it runs again.
    pub rerun: Option<crate::results::Rerun>,
}

impl Nodes {
    /// Indices of the known-good partners of a rerun.
    fn known_good(&self) -> Vec<usize> {
        let good = self.rerun.as_ref().map_or(&[][..], |r| &r.known_good[..]);
        (0..self.hosts.len())
            .filter(|&i| good.contains(&self.hosts[i]))
            .collect()
    }
}

/// Why the launcher used outside Slurm (`mpirun -H`) cannot take these host names, if it
/// cannot: Open MPI refuses `_` in a node name (and then crashes), which would make every
/// node look dead.
pub fn launcher_refuses(hosts: &[String]) -> Option<String> {
    if std::env::var_os("SLURM_JOB_ID").is_some() {
        return None;
    }
    let bad: Vec<&String> = hosts.iter().filter(|h| h.contains('_')).collect();
    (!bad.is_empty()).then(|| {
        format!(
            "outside a Slurm allocation node sets are started with `mpirun -H`, and Open MPI refuses \
             host names with `_`: {}; name the nodes without `_` (e.g. by their addresses) or \
             run inside an allocation",
            compress(&bad)
        )
    })
}

/// How a set's ranks are started.
#[derive(Debug, Clone)]
enum Step {
    /// Inside a Slurm allocation: `srun --exact -N k -w HOSTS`.
    Srun { srun: PathBuf, mpi: String },
    /// Anywhere else: `mpirun -H host:p,…` (Open MPI reaches the hosts over ssh).
    Mpirun { mpirun: PathBuf },
}

struct Ctx<'a> {
    plan: &'a Plan,
    opts: &'a RunOptions,
    out: &'a OutDir,
    snapshot: PathBuf,
    worker: PathBuf,
    step: Step,
    nodes: &'a Nodes,
    per_node: u64,
    base: Results,
    judge: Judge<'a>,
    events: &'a dyn Events,
}

/// How one step ended.
#[derive(Debug, Clone)]
struct StepEnd {
    ok: bool,
    ended: String,
    seconds: f64,
    timed_out: bool,
}

fn unavailable(why: impl Into<String>) -> RunError {
    RunError::Unavailable(why.into())
}

fn step_for(plan: &Plan) -> Result<Step, RunError> {
    if std::env::var_os("SLURM_JOB_ID").is_some() {
        let srun = launch::which("srun")
            .ok_or_else(|| unavailable("inside a Slurm allocation, but `srun` is not on PATH"))?;
        return Ok(Step::Srun {
            srun,
            mpi: plan.launch.slurm.mpi.clone(),
        });
    }
    let mpirun = launch::which("mpirun").ok_or_else(|| {
        unavailable(
            "node sets are started with srun inside a Slurm allocation, or with mpirun -H: \
             neither an allocation (SLURM_JOB_ID) nor `mpirun` was found",
        )
    })?;
    Ok(Step::Mpirun { mpirun })
}

/// Runs the jobs of `input` over the node sets of their tests on `nodes`.
pub fn run(
    input: &Input<'_>,
    nodes: &Nodes,
    judge: Judge<'_>,
    events: &dyn Events,
) -> Result<RunOutcome, RunError> {
    let (plan, jobs, opts) = (input.plan, input.jobs, input.opts);
    let step = step_for(plan)?;
    // GPU ranks meet over baton's TCP rendezvous: plain `baton`, no MPI library on the nodes.
    // The host backend measures MPI itself: `baton-mpi`.
    let worker = match plan.backend {
        crate::plan::Backend::Nccl => launch::find_program("baton"),
        crate::plan::Backend::Mpi => launch::find_program("baton-mpi"),
    }
    .ok_or_else(|| {
        unavailable(
            "node sets are run by `baton` (nccl backend) or `baton-mpi` (mpi backend) on every \
             node, which was not found next to baton or on PATH; build it with \
             `cargo build --release --features mpi`",
        )
    })?;
    let per_node = plan.ranks_per_node().ok_or_else(|| {
        unavailable(format!(
            "plan `{}` runs node sets but leaves `launch.ranks_per_node` open: set it (GPUs per node for nccl)",
            plan.name
        ))
    })?;
    let mut fresh = lifecycle::results(plan, &opts.plan_path, &opts.plan_hash, Maker::Owner)
        .with_site(opts.site.clone());
    fresh.node_list = nodes.hosts.clone();
    fresh.rerun = nodes.rerun.clone();
    let base = fresh.clone();
    let mut life = Lifecycle::start(&opts.out_dir, fresh, opts.resume, events)?;
    life.journal().append(&Record::NodeList {
        hosts: nodes.hosts.clone(),
    })?;
    let done: HashSet<String> = life.done().into_iter().collect();
    let snapshot = life.snapshot(&opts.plan_text)?;
    let kept;
    let nodes = if plan.evidence && opts.evidence {
        let pf = preflight::run(
            &Ctx {
                plan,
                opts,
                out: life.out(),
                snapshot: snapshot.clone(),
                worker: worker.clone(),
                step: step.clone(),
                nodes,
                per_node,
                base: base.clone(),
                judge,
                events,
            },
            &nodes.hosts,
        );
        let excluded: Vec<String> = pf.excluded().into_iter().map(|(h, _)| h).collect();
        life.journal().append(&Record::Preflight {
            preflight: Box::new(pf),
        })?;
        kept = preflight::without(nodes, &excluded);
        // The rounds run over the nodes that match the fleet: the node list is theirs.
        life.journal().append(&Record::NodeList {
            hosts: kept.hosts.clone(),
        })?;
        &kept
    } else {
        nodes
    };
    let mut dead = vec![false; nodes.hosts.len()];
    for s in &life.started().node_sets {
        for h in &s.dead {
            if let Some(i) = nodes.hosts.iter().position(|x| x == h) {
                dead[i] = true;
            }
        }
    }
    let (out, journal) = life.parts();
    let ctx = Ctx {
        plan,
        opts,
        out,
        snapshot,
        worker,
        step,
        nodes,
        per_node,
        base,
        judge,
        events,
    };
    events.event(&RunEvent::NodeSets {
        hosts: &nodes.hosts,
    });
    let mut not_reached = Vec::new();
    let mut refused: Option<Refusal> = None;
    for (t, test) in plan.tests.iter().enumerate() {
        let tjobs: Vec<&Job> = jobs.iter().filter(|j| j.test == test.name).collect();
        if tjobs.is_empty() {
            continue;
        }
        if super::interrupt::requested() || refused.is_some() {
            not_reached.extend(tjobs.iter().map(|j| j.id.clone()));
            continue;
        }
        refused = round::run_test(&ctx, t, test.over, &tjobs, &mut dead, journal, &done)?;
        if super::interrupt::requested() {
            not_reached.extend(tjobs.iter().map(|j| j.id.clone()));
        }
    }
    if let Some(r) = &refused {
        events.event(&RunEvent::Refused {
            message: &r.message,
            fix: &r.fix,
        });
    }
    let end = life.finish(events, |_| {})?;
    let exit = if end.interrupted.is_none() && refused.is_some() {
        Exit::Runtime
    } else {
        end.exit()
    };
    Ok(RunOutcome {
        results: end.results,
        results_path: end.results_path,
        exit,
        interrupted: end.interrupted,
        not_reached,
        owner: true,
    })
}

/// Where the rounds of a test come from.
enum Schedule {
    Fixed(std::vec::IntoIter<Vec<Vec<usize>>>),
    Adaptive(Box<Isolator>),
}

impl Schedule {
    fn next(&mut self) -> Option<Vec<Vec<usize>>> {
        match self {
            Schedule::Fixed(it) => it.next(),
            Schedule::Adaptive(iso) => iso.next_round(),
        }
    }
}

fn schedule(over: Over, nodes: &Nodes) -> Result<Schedule, RunError> {
    let n = nodes.hosts.len();
    let bad = |e: String| RunError::Unavailable(format!("over: {}: {e}", over.name()));
    let good = nodes.known_good();
    if !good.is_empty() {
        return Ok(Schedule::Fixed(
            crate::nodeset::confirm::rerun_rounds(over, n, &good).into_iter(),
        ));
    }
    if n < over.min_nodes() {
        // One node is no pair: it would pass having sent nothing between nodes.
        return Err(bad(format!(
            "needs at least {} nodes; the node list has {n}",
            over.min_nodes()
        )));
    }
    if over == Over::Isolate {
        let iso = Isolator::new(n, &nodes.domains).map_err(|e| bad(e.to_string()))?;
        return Ok(Schedule::Adaptive(Box::new(iso)));
    }
    let sets: Vec<Vec<Vec<usize>>> = if over == Over::All || is_one_job(over, n) {
        vec![vec![(0..n).collect()]]
    } else {
        rounds(&over, n)
            .map_err(|e| bad(e.to_string()))?
            .into_iter()
            .map(|r| r.sets)
            .collect()
    };
    Ok(Schedule::Fixed(sets.into_iter()))
}

/// The last [`refusal::TAIL_BYTES`] of a set's step output: launchers print their refusal, or
/// what they know of a node that died, last.
fn log_tail(ctx: &Ctx<'_>, run: &SetRun) -> String {
    let log = ctx.opts.out_dir.join(&run.log);
    crate::input::read_tail(&log, refusal::TAIL_BYTES, "step log")
}

/// The launcher's refusal in a failed step's output `tail`.
fn refused_step(ctx: &Ctx<'_>, tail: &str) -> Option<Refusal> {
    refusal::find(tail, ctx.per_node)
}

/// Most steps in flight at once: each is an `srun` process on the batch node and a step
/// request to slurmctld, so a 1000-node each-node round goes in waves rather than all at once.
/// `BATON_MAX_STEPS` overrides it.
const MAX_STEPS: usize = 256;

fn max_steps() -> usize {
    std::env::var("BATON_MAX_STEPS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(MAX_STEPS)
}

/// Runs the steps of `todo`, at most [`max_steps`] at a time, in order of start, calling
/// `on_end` as each ends; their ends in the same order.
fn run_steps(
    ctx: &Ctx<'_>,
    todo: &[&(usize, SetRun, Vec<Job>)],
    on_end: &(dyn Fn(bool) + Sync),
) -> Vec<StepEnd> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let ends: Vec<std::sync::Mutex<Option<StepEnd>>> =
        todo.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..max_steps().min(todo.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((_, run, sjobs)) = todo.get(i).map(|t| &**t) else {
                        break;
                    };
                    let end = if super::interrupt::requested() {
                        StepEnd {
                            ok: false,
                            ended: "stopped by a signal before it started".into(),
                            seconds: 0.0,
                            timed_out: false,
                        }
                    } else {
                        run_step(ctx, run, sjobs)
                    };
                    on_end(end.ok);
                    if let Ok(mut slot) = ends[i].lock() {
                        *slot = Some(end);
                    }
                }
            });
        }
    });
    ends.into_iter()
        .map(|m| {
            m.into_inner().ok().flatten().unwrap_or_else(|| StepEnd {
                ok: false,
                ended: "the thread driving it panicked".into(),
                seconds: 0.0,
                timed_out: false,
            })
        })
        .collect()
}

/// A test name as a file name part.
fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

/// How long a step running `jobs` may go without a new row in its journal before it is called
/// hung: the longest a cell may take (its timeout, after which the ranks' own watchdog ends
/// it), plus start-up. Bounded by silence, not total time, so a soak of any length runs while
/// a frozen node (whose ranks, watchdog included, are stopped) costs one such interval.
fn idle_limit(jobs: &[Job]) -> Duration {
    STEP_GRACE
        + jobs
            .iter()
            .map(|j| j.settings.timeout)
            .max()
            .unwrap_or(Duration::ZERO)
}

/// One set's step (one launcher step per environment set of its jobs, in turn); its output goes
/// to the set's log.
fn run_step(ctx: &Ctx<'_>, run: &SetRun, sjobs: &[Job]) -> StepEnd {
    let t0 = Instant::now();
    let end = |ok: bool, ended: String, timed_out: bool| StepEnd {
        ok,
        ended,
        seconds: t0.elapsed().as_secs_f64(),
        timed_out,
    };
    let out_dir = &ctx.opts.out_dir;
    let log_path = out_dir.join(&run.log);
    let base = run.journal.trim_end_matches(".jsonl").to_string();
    let set_file = out_dir.join(format!("{base}.set.json"));
    let set = NodeSetRef {
        job: String::new(),
        round: run.round,
        index: run.index,
        hosts: run.hosts.clone(),
    };
    let prepared = serde_json::to_vec(&set)
        .map_err(std::io::Error::other)
        .and_then(|t| crate::output::write_atomic(&set_file, &t).map_err(std::io::Error::other))
        .and_then(|_| crate::output::open_append(&log_path).map_err(std::io::Error::other));
    let log = match prepared {
        Ok(f) => f,
        Err(e) => return end(false, format!("cannot prepare the step: {e}"), false),
    };
    let todo: Vec<Job> = sjobs.to_vec();
    for (e, es) in launch::env_sets(&todo).iter().enumerate() {
        let ids: Vec<&str> = es
            .jobs
            .iter()
            .filter_map(|&i| todo[i].node_set.as_ref().map(|s| s.job.as_str()))
            .collect();
        let ids_file = out_dir.join(format!("{base}.e{e}.jobs.json"));
        let written = serde_json::to_vec(&ids)
            .map_err(std::io::Error::other)
            .and_then(|t| {
                crate::output::write_atomic(&ids_file, &t).map_err(std::io::Error::other)
            });
        if let Err(err) = written {
            return end(false, format!("cannot write the job list: {err}"), false);
        }
        let args = WorkerArgs {
            plan: ctx.snapshot.clone(),
            plan_hash: ctx.opts.plan_hash.clone(),
            plan_name: ctx.opts.plan_path.clone(),
            jobs: ids_file,
            journal: out_dir.join(&run.journal),
            table: true,
            gpus: 0,
            progress: None,
            node_set: Some(set_file.clone()),
            no_evidence: !ctx.opts.evidence,
        }
        .to_args();
        let cmd = step_command(ctx, &run.hosts, &es.env, &args);
        let idle = idle_limit(&es.jobs.iter().map(|&i| todo[i].clone()).collect::<Vec<_>>());
        let limit = Limit::Silence(out_dir.join(&run.journal), idle);
        match supervise(cmd, Output::File(&log), &limit, Some(ctx.out.lock_fd())) {
            Ok(Ended {
                cause: Cause::Exited,
                status: s,
            }) if s.success() => {}
            Ok(Ended {
                cause: Cause::Exited,
                status: s,
            }) => {
                let what = match s.code() {
                    Some(c) if c == Exit::Timeout.code() => "a collective timed out".to_string(),
                    Some(c) => format!("exit {c}"),
                    None => format!("{s}"),
                };
                return end(false, what, s.code() == Some(Exit::Timeout.code()));
            }
            Ok(Ended {
                cause: Cause::Limit,
                ..
            }) => {
                return end(
                    false,
                    format!("no new row for {} s: stopped as hung", idle.as_secs()),
                    true,
                );
            }
            Ok(Ended {
                cause: Cause::Stopped,
                ..
            }) => return end(false, "stopped by a signal".into(), false),
            Err(err) => return end(false, format!("cannot start the step: {err}"), false),
        }
    }
    end(true, "exit 0".into(), false)
}

/// The launcher command for one step on `hosts`.
/// A port for one step's rendezvous, from what names the step (its job list file), in the
/// range the rendezvous derives Slurm ports from: steps running at once get different ports.
fn rendezvous_port(args: &[OsString]) -> u16 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    args.hash(&mut h);
    20_000 + (h.finish() % 40_000) as u16
}

fn step_command(
    ctx: &Ctx<'_>,
    hosts: &[String],
    env: &indexmap::IndexMap<String, String>,
    args: &[OsString],
) -> Command {
    let k = hosts.len() as u64;
    let p = ctx.per_node;
    // The step's GPU ranks prove a fresh secret to each other (docs/trust.md, "The rendezvous").
    let mut env = env.clone();
    if ctx.plan.backend == crate::plan::Backend::Nccl
        && let Ok(key) = crate::rendezvous::auth::fresh_secret()
    {
        env.insert(crate::rendezvous::key::VAR.into(), key);
    }
    let env = &env;
    match &ctx.step {
        Step::Srun { srun, mpi } => {
            let mut c = Command::new(srun);
            c.arg(format!("--mpi={mpi}"))
                .arg("--exact")
                .arg(format!("--nodes={k}"))
                .arg(format!("--ntasks={}", k * p))
                .arg(format!("--ntasks-per-node={p}"))
                .arg(format!("--nodelist={}", compress(hosts)))
                // A rank that gave up ends the step rather than leaving its peers to hang.
                .arg("--kill-on-bad-exit=1")
                .arg("--export=ALL")
                .arg(format!("--job-name=baton-{}", compress(hosts)));
            if ctx.plan.backend == crate::plan::Backend::Nccl {
                c.arg(format!("--gpus-per-node={p}"));
            }
            let cpus = std::env::var("SLURM_CPUS_ON_NODE")
                .ok()
                .and_then(|c| c.trim().parse().ok());
            c.args(launch::srun_step_options(&ctx.plan.launch.slurm, p, cpus));
            c.envs(env).arg(&ctx.worker).args(args);
            c
        }
        Step::Mpirun { mpirun } => {
            let list: Vec<String> = hosts.iter().map(|h| format!("{h}:{p}")).collect();
            // mpirun places rank 0 on the first host: the GPU ranks' rendezvous root.
            let mut env = env.clone();
            if ctx.plan.backend == crate::plan::Backend::Nccl
                && let Some(first) = hosts.first()
            {
                env.insert(
                    "BATON_RENDEZVOUS".into(),
                    format!("{first}:{}", rendezvous_port(args)),
                );
            }
            launch::mpirun_command(
                mpirun,
                Some(&list.join(",")),
                (k * p) as u32,
                &env,
                &ctx.plan.launch.mpirun.forward,
                &ctx.worker,
                args,
            )
        }
    }
}

/// The hosts of a failed set that do not run a trivial step within [`PROBE_TIMEOUT`]. With a
/// job `after` left without its afters, the nodes that answered are then probed for them, in
/// a step of its own: a probe that fails or is slow leaves a node without its after, never
/// dead (a node whose link flaps may miss a longer step that `true` gets through).
fn probe(ctx: &Ctx<'_>, hosts: &[String], after: Option<&after::Pending>) -> Vec<String> {
    let answers = on_each(ctx, hosts, &["true".into()], |_| None);
    let dead: Vec<String> = hosts
        .iter()
        .zip(&answers)
        .filter(|(_, ok)| !**ok)
        .map(|(h, _)| h.clone())
        .collect();
    if let Some(a) = after.filter(|a| a.prepare()) {
        let alive: Vec<String> = hosts
            .iter()
            .filter(|h| !dead.contains(h))
            .cloned()
            .collect();
        on_each(ctx, &alive, &a.program(ctx), |h| Some(a.file(h)));
    }
    dead
}

/// Runs `program` on each host alone, at once, each within [`PROBE_TIMEOUT`]; whether each
/// exited 0. `out` names where a host's output goes (else the null device).
fn on_each(
    ctx: &Ctx<'_>,
    hosts: &[String],
    program: &[OsString],
    out: impl Fn(&str) -> Option<PathBuf> + Sync,
) -> Vec<bool> {
    std::thread::scope(|s| {
        let handles: Vec<_> = hosts
            .iter()
            .map(|h| {
                let out = &out;
                s.spawn(move || {
                    let out = out(h);
                    // An earlier attempt's snapshot is never read as this one's.
                    if let Some(o) = &out
                        && crate::output::write_atomic(o, b"").is_err()
                    {
                        return false;
                    }
                    let (c, log) = probe_command(ctx, h, program, out.as_deref());
                    let limit = Limit::Total(PROBE_TIMEOUT);
                    let Ok(log) = log else {
                        return false;
                    };
                    supervise(c, Output::File(&log), &limit, None)
                        .is_ok_and(|e| e.cause == Cause::Exited && e.status.success())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(false))
            .collect()
    })
}

/// The step running `program` on `host` alone, and where its output goes: `out` for the
/// snapshot (srun writes the task's there itself), else the null device.
fn probe_command(
    ctx: &Ctx<'_>,
    host: &str,
    program: &[OsString],
    out: Option<&std::path::Path>,
) -> (Command, std::io::Result<std::fs::File>) {
    let null = || std::fs::File::create("/dev/null");
    match &ctx.step {
        Step::Srun { srun, .. } => {
            let mut c = Command::new(srun);
            // --overlap: a hung step may still hold the node's CPUs; a node that is busy is
            // not dead.
            c.args(["--overlap", "--nodes=1", "--ntasks=1"])
                .arg(format!("--nodelist={host}"))
                .arg("--job-name=baton-probe");
            if let Some(o) = out {
                c.arg(format!("--output={}", o.display()));
            }
            c.args(program);
            (c, null())
        }
        Step::Mpirun { mpirun } => {
            let mut c = Command::new(mpirun);
            c.args(["-np", "1", "-H", host]).args(program);
            let log = out.map_or_else(null, |o| {
                crate::output::open_append(o).map_err(std::io::Error::other)
            });
            (c, log)
        }
    }
}

/// How each job a set's journal holds stands.
fn job_statuses(
    path: &std::path::Path,
) -> Result<std::collections::HashMap<String, JobStatus>, RunError> {
    Ok(journal::statuses(journal::records(path, 0)?.0))
}

/// After a step: a job it left running is ended as the step ended, and a job it never started
/// is recorded as not run, both in the set's journal, so grading fails them closed.
fn close_jobs(
    ctx: &Ctx<'_>,
    run: &SetRun,
    sjobs: &[Job],
    end: &StepEnd,
    why: &round::Why<'_>,
    started: &std::collections::HashMap<String, JobStatus>,
) -> Result<(), RunError> {
    let path = ctx.opts.out_dir.join(&run.journal);
    let said = why
        .launcher
        .map_or(String::new(), |l| format!("; the launcher said: {l}"));
    let why = if let Some(r) = why.refused {
        format!(
            "the launcher refused the set's step ({}); fix: {}",
            r.message, r.fix
        )
    } else if why.dead.is_empty() {
        format!("the set's step ended: {}{said}", end.ended)
    } else {
        format!(
            "the set's step ended ({}); {} did not answer a trivial step after it{said}",
            end.ended,
            compress(why.dead)
        )
    };
    let interrupted = super::interrupt::requested();
    let mut j = Journal::open(&path)?;
    for job in sjobs {
        match started.get(&job.id) {
            Some(JobStatus::Partial) => {
                let (status, kind) = lifecycle::left_running(interrupted, end.timed_out);
                j.append(&Record::End {
                    job: job.id.clone(),
                    status,
                    errors: vec![lifecycle::error(kind, why.clone())],
                    telemetry: Vec::new(),
                })?;
            }
            Some(_) => {}
            None if interrupted => {}
            None => {
                j.append(&Record::Job {
                    job: Box::new(lifecycle::not_run(job, ctx.plan.backend, why.clone())),
                })?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug("per-node"), "per-node");
        assert_eq!(slug("a b/../c"), "a_b____c");
    }

    #[test]
    fn a_pair_and_each_node_are_fixed_and_isolate_adapts() {
        let nodes = Nodes {
            hosts: (1..=4).map(|i| format!("n{i}")).collect(),
            domains: Vec::new(),
            rerun: None,
        };
        let Schedule::Fixed(it) = schedule(Over::EachNode, &nodes).unwrap() else {
            panic!("each-node is fixed")
        };
        let r: Vec<_> = it.collect();
        assert_eq!(r, vec![vec![vec![0], vec![1], vec![2], vec![3]]]);
        let Schedule::Fixed(it) = schedule(Over::All, &nodes).unwrap() else {
            panic!("all is fixed")
        };
        assert_eq!(it.collect::<Vec<_>>(), vec![vec![vec![0, 1, 2, 3]]]);
        assert!(matches!(
            schedule(Over::Isolate, &nodes).unwrap(),
            Schedule::Adaptive(_)
        ));
    }
}
