//! One rank of many, whatever world joins them — MPI in `baton-mpi`, the TCP rendezvous in
//! `baton` (GPU runs need no MPI library): a run its launcher started (mpirun, srun, pdsh), and
//! the measuring every rank worker shares.
//!
//! Rank 0 claims the output directory, journals every row, and on SIGTERM (Slurm's time limit)
//! or SIGINT, or when the world breaks, folds the journal into `results.json` and has the
//! caller's [`Finish`] write JUnit and the report before leaving; the other ranks give it the
//! time to.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::events::{Events, RunEvent};
use super::fault::Fault;
use super::lifecycle::{self, Cut, Lifecycle, Maker};
use super::nccl::{Gpu, NcclEngine, libs, local};
use super::{Input, RunError, RunOptions, RunOutcome, environment, interrupt, transport, worker};
use crate::exit::Exit;
use crate::expand::Job;
use crate::plan::{Backend, Plan};
use crate::results::{Results, TransportLink};
use crate::world::World;

/// Why one rank of many could not run.
#[derive(Debug, thiserror::Error)]
pub enum RankError {
    #[error(
        "rank {rank} read a different {plan} than rank 0 (was it edited at the start?); nothing was run"
    )]
    OtherPlan { rank: usize, plan: String },
    #[error(
        "plan `{plan}` asks for {want} ranks ({nodes} node(s) × {per_node} per node) but the launcher started {size}; \
         launch it with {want} ranks, or change `launch` — its results would not be the plan's"
    )]
    Ranks {
        plan: String,
        want: u64,
        nodes: u32,
        per_node: u64,
        size: usize,
    },
    /// Rank 0 could not start the run (its output directory): its words.
    #[error("{message}")]
    Start { message: String, exit: Exit },
    /// What rank 0 said is another rank's to tell: this one stays quiet.
    #[error("rank 0 refused the run")]
    Quiet(Exit),
    #[error("rank 0's start message: {0}")]
    Message(String),
    /// The measuring failed (the GPU, NCCL, the worker).
    #[error("{0}")]
    Failed(String),
}

impl RankError {
    pub fn exit(&self) -> Exit {
        match self {
            RankError::OtherPlan { .. } | RankError::Ranks { .. } => Exit::Invalid,
            RankError::Start { exit, .. } | RankError::Quiet(exit) => *exit,
            RankError::Message(_) | RankError::Failed(_) => Exit::Runtime,
        }
    }

    /// Whether this rank says it (rank 0 does; the others leave it to rank 0).
    pub fn shown(&self) -> bool {
        !matches!(self, RankError::Quiet(_))
    }
}

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
    fn run_host_mpi(&self, jobs: &[Job], cfg: worker::WorkerConfig) -> Result<Results, RankError>;
    /// What to do, with the reason, before a broken world ends the process (MPI's world
    /// aborts the job itself).
    fn on_broken(&self, _f: Box<dyn Fn(&str) + Send + Sync>) {}
}

#[cfg(feature = "mpi")]
impl RankWorld for super::mpi::MpiWorld {
    /// The launcher's local rank, else the world rank.
    fn local_rank(&self) -> usize {
        use crate::launch::launcher;
        match launcher::detect(launcher::process_env) {
            Ok(Some(p)) => p.local_rank,
            _ => self.rank(),
        }
    }
    fn mpi_version(&self) -> Option<String> {
        super::mpi::MpiWorld::library_version()
    }
    fn device_label(&self) -> &'static str {
        "host memory (MPI)"
    }
    fn run_host_mpi(&self, jobs: &[Job], cfg: worker::WorkerConfig) -> Result<Results, RankError> {
        let mut engine = super::mpi::HostEngine::new(self.comm());
        worker::run_jobs(self, &mut engine, jobs, cfg).map_err(|e| RankError::Failed(e.to_string()))
    }
}

/// GPU ranks meet over the TCP rendezvous without MPI.
impl RankWorld for crate::rendezvous::TcpWorld {
    fn local_rank(&self) -> usize {
        self.members()[self.rank()].local_rank
    }
    fn run_host_mpi(&self, _: &[Job], _: worker::WorkerConfig) -> Result<Results, RankError> {
        Err(RankError::Failed(
            "`backend: mpi` measures MPI itself: launch `baton-mpi run`, not `baton run`".into(),
        ))
    }
    fn on_broken(&self, f: Box<dyn Fn(&str) + Send + Sync>) {
        crate::rendezvous::TcpWorld::on_broken(self, f)
    }
}

/// NCCL aborts hung collectives itself at the timeout; the watchdog is the last resort after it.
pub fn nccl_grace() -> std::time::Duration {
    std::time::Duration::from_secs(15)
}

/// Extra watchdog time for ranks other than 0. When a collective hangs, every rank's watchdog
/// would fire at about the same moment; the first rank to exit makes the launcher (srun
/// --kill-on-bad-exit, mpirun) end the others with SIGTERM. Rank 0 records results, so it goes
/// first: then the hang is recorded as a timeout, not as an interruption.
fn rank_lag(world: &dyn RankWorld) -> std::time::Duration {
    if world.rank() == 0 {
        std::time::Duration::ZERO
    } else {
        std::time::Duration::from_secs(3)
    }
}

/// What one rank measures and where its rows go.
pub struct Measure<'a> {
    pub plan: &'a Plan,
    /// The results to extend (rank 0's journal starts from them).
    pub base: Results,
    pub jobs: &'a [Job],
    pub journal: &'a Path,
    pub table: bool,
    pub progress: Option<&'a Path>,
    pub events: Arc<dyn Events>,
    /// Node evidence around every job, unless the plan turns it off.
    pub evidence: bool,
    /// Rank 0 at a hung collective's timeout, before the process exits 4 ([`worker::OnTimeout`]).
    pub on_timeout: Option<worker::OnTimeout>,
    /// The watchdog over the ranks' first meetings, until the worker's own takes over
    /// ([`startup`]).
    pub startup: Option<Startup>,
}

/// The jobs of `m` on this rank of `world`: rank 0's results.
pub fn measure(world: &dyn RankWorld, m: Measure<'_>) -> Result<Results, RankError> {
    let failed = |e: &dyn std::fmt::Display| RankError::Failed(e.to_string());
    let mut results = m.base;
    let hosts = world.all_gather_string(&crate::host::hostname());
    // Every rank has met: the worker's own start-up watchdog bounds what follows.
    if let Some(s) = m.startup {
        s.met(world.rank());
    }
    crate::results::merge_environment(&mut results.environment, environment::capture(&hosts));
    results.environment.mpi_version = world.mpi_version();
    let mut cfg = worker::WorkerConfig {
        backend: m.plan.backend,
        journal: m.journal.to_path_buf(),
        print_table: m.table && world.rank() == 0,
        events: m.events,
        fault: Fault::from_env(),
        device_label: world.device_label().into(),
        results,
        gpu: None,
        watchdog: true,
        watchdog_grace: rank_lag(world),
        telemetry: false,
        evidence: m.evidence && m.plan.evidence,
        progress: m.progress.map(Path::to_path_buf),
        on_timeout: m.on_timeout,
    };
    match m.plan.backend {
        Backend::Mpi => world.run_host_mpi(m.jobs, cfg),
        Backend::Nccl => {
            let nccl_version = libs::preflight().map_err(|e| failed(&e))?;
            let count = Gpu::count().map_err(|e| failed(&e))?.max(1) as usize;
            let gpu = Gpu::open((world.local_rank() % count) as u32).map_err(|e| failed(&e))?;
            let info = gpu.info();
            cfg.device_label = local::device_label(&info);
            cfg.gpu = Some(info);
            cfg.watchdog_grace = nccl_grace() + rank_lag(world);
            cfg.telemetry = world.local_rank() == 0;
            if world.rank() == 0 {
                local::describe_environment(&mut cfg.results, nccl_version);
            }
            let mut engine = NcclEngine::new(&world, gpu);
            worker::run_jobs(&world, &mut engine, m.jobs, cfg).map_err(|e| failed(&e))
        }
    }
}

/// How a run cut short is ended by the caller: JUnit and the report for `jobs` (those that
/// ran), or, when none ran because the world broke, `broken` names why.
pub struct Finishing<'a> {
    pub jobs: &'a [Job],
    pub results: &'a Results,
    pub results_path: &'a Path,
    pub exit: Exit,
    pub broken: Option<&'a str>,
}

/// The caller's end of a run rank 0 cut short (it grades and writes JUnit and the report): runs
/// on the thread that handles the signal or the broken world, then the process ends.
pub type Finish = Arc<dyn Fn(&Finishing<'_>) -> Result<(), String> + Send + Sync>;

/// One rank's share of a run.
pub struct RankMode<'a> {
    pub world: &'a dyn RankWorld,
    /// NCCL's log per rank, applied before any thread started (see [`capture_for`]).
    pub capture: Option<transport::Capture>,
    pub finish: Finish,
}

/// When transports are wanted, NCCL's log goes to a file per rank, and every NCCL process gets
/// a RAS port of its own (`hang`): set up before any thread (MPI, CUDA, NCCL) starts.
pub fn capture_for(
    opts: &RunOptions,
    plan: &Plan,
    jobs: &[Job],
) -> Result<Option<transport::Capture>, RunError> {
    let capture = (plan.backend == Backend::Nccl
        && transport::wanted(opts.capture_transport, jobs.iter()))
    .then(|| transport::for_this_process(&opts.out_dir))
    .flatten();
    if let Some(c) = &capture {
        crate::output::ensure_dir(&opts.out_dir).map_err(super::outdir::OutDirError::from)?;
        // SAFETY: nothing has started a thread yet: the world, CUDA and NCCL come after this.
        unsafe { c.apply_to_this_process() };
    }
    if plan.backend == Backend::Nccl {
        // SAFETY: as above, before any thread.
        unsafe { super::hang::listen_here() };
    }
    Ok(capture)
}

/// Rank 0's answer to "may this run start, and which jobs are left": the IDs to skip, or why not.
#[derive(serde::Serialize, serde::Deserialize)]
enum Go {
    Skip(Vec<String>),
    Stop(String, i32),
}

/// Every rank must measure the same plan with the layout it asks for.
fn agree(world: &dyn RankWorld, input: &Input<'_>, events: &dyn Events) -> Result<(), RankError> {
    let (plan, opts, me) = (input.plan, input.opts, world.rank());
    let quiet = |e: RankError| {
        if me == 0 {
            e
        } else {
            RankError::Quiet(e.exit())
        }
    };
    let hashes = world.all_gather_string(&opts.plan_hash);
    if let Some(r) = hashes.iter().position(|h| h != &hashes[0]) {
        return Err(quiet(RankError::OtherPlan {
            rank: r,
            plan: opts.plan_path.display().to_string(),
        }));
    }
    if let Some(want) = plan.launch.total_ranks()
        && want as usize != world.size()
    {
        return Err(quiet(RankError::Ranks {
            plan: plan.name.clone(),
            want,
            nodes: plan.launch.nodes,
            per_node: plan.launch.ranks_per_node_total().unwrap_or(0),
            size: world.size(),
        }));
    }
    let sets = crate::launch::env_sets(input.jobs);
    if sets.len() > 1 && me == 0 {
        events.event(&RunEvent::Note(&format!(
            "{} environment sets run in one process set here; NCCL reads most variables once per process, \
             so launch one step per set (scripts from `baton render` do)",
            sets.len()
        )));
    }
    Ok(())
}

/// Rank 0 claims the directory and starts (or resumes) the journal; every rank learns the
/// outcome: the run (rank 0's) and the jobs to skip.
fn claim(
    world: &dyn RankWorld,
    input: &Input<'_>,
    events: &dyn Events,
) -> Result<(Option<Lifecycle>, Vec<String>), RankError> {
    let (plan, opts) = (input.plan, input.opts);
    let mut life = None;
    let go = if world.rank() == 0 {
        let fresh = lifecycle::results(plan, &opts.plan_path, &opts.plan_hash, Maker::Owner)
            .with_site(opts.site.clone());
        match Lifecycle::start(&opts.out_dir, fresh, opts.resume, events) {
            Ok(l) => {
                // Says how far a resumed run got; every rank leaves out the IDs below itself.
                l.todo(input.jobs, opts.resume, events);
                let done = l.done();
                life = Some(l);
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
    let said = world.all_gather_string(&serde_json::to_string(&go).unwrap_or_default());
    let go: Go = serde_json::from_str(&said[0]).map_err(|e| RankError::Message(e.to_string()))?;
    match go {
        Go::Stop(message, code) => {
            let exit = if code == Exit::Invalid.code() {
                Exit::Invalid
            } else {
                Exit::Runtime
            };
            Err(if world.rank() == 0 {
                RankError::Start { message, exit }
            } else {
                RankError::Quiet(exit)
            })
        }
        Go::Skip(ids) => Ok((life, ids)),
    }
}

/// What a rank's cut-short end needs, owned: it runs on another thread.
#[derive(Clone)]
struct Ending {
    dir: PathBuf,
    jobs: Vec<Job>,
    finish: Finish,
    events: Arc<dyn Events>,
}

impl Ending {
    /// Rank 0 after a stop signal or a broken world: the journal folded, the job that was
    /// running marked as cut short, and the caller's end for what ran.
    fn end(&self, cut: &Cut) -> Result<(), RunError> {
        let results = lifecycle::cut_short(&self.dir, cut)?;
        let results_path = self.dir.join("results.json");
        let ran: Vec<Job> = self
            .jobs
            .iter()
            .filter(|x| results.job(&x.id).is_some())
            .cloned()
            .collect();
        self.events.event(&RunEvent::CutShort {
            why: &cut.why(),
            ran: ran.len(),
            of: self.jobs.len(),
            results: &results_path,
        });
        let message = cut.message();
        let broken = (ran.is_empty() && matches!(cut, Cut::Broken(_))).then_some(&*message);
        (self.finish)(&Finishing {
            jobs: &ran,
            results: &results,
            results_path: &results_path,
            exit: cut.exit(),
            broken,
        })
        .map_err(|e| RunError::Rank(RankError::Failed(e)))
    }
}

/// A rank's watchdog recorded a timeout (rank 0's, or another's where rank 0 could not): the
/// process is about to exit 4 while its main thread sits in the hung collective, so nothing else folds the journal. Every measured row goes into
/// `results.json` (with the timed-out job's record), and the caller's end writes JUnit and the
/// report, as at a signal.
fn timed_out(ending: Ending) -> worker::OnTimeout {
    Arc::new(move |what: &str| {
        if let Err(e) = ending.end(&Cut::Timeout(what.to_string())) {
            ending.events.event(&RunEvent::Note(&e.to_string()));
        }
    })
}

/// How a rank ends a run at a stop signal or a broken world, once its worker's ranks have met
/// (`keeper`): rank 0 with the cause — a peer of its host that died, else `cause` — unless the
/// record was kept already; another rank only when rank 0 died, naming it. `None`: not this
/// rank's to end.
fn keeper_cut(
    me: usize,
    cause: Cut<'static>,
) -> Option<(Cut<'static>, Option<super::keeper::Held>)> {
    use super::keeper::RankZero;
    let Some(k) = super::keeper::current() else {
        // Before the ranks met: rank 0 ends it, as it claimed the directory.
        return (me == 0).then_some((cause, None));
    };
    let cut = match (k.rank_zero(), k.died()) {
        (RankZero::Me, Some(who)) => Cut::Died(who),
        (RankZero::Me, None) => cause,
        (RankZero::Cannot { dead: true, .. }, Some(who)) => Cut::Died(who),
        _ => return None,
    };
    let held = k.hold()?;
    Some((cut, Some(held)))
}

/// Signals and a broken world, on every rank: rank 0 ends the run, the others give it time —
/// unless rank 0 died, when the first other rank to hold the journal ends it, naming rank 0.
fn watch(world: &dyn RankWorld, ending: Ending) -> Result<(), RunError> {
    let me = world.rank();
    let on_signal = ending.clone();
    interrupt::on_signal(Exit::Interrupted.code(), move |sig| {
        if let Some((cut, held)) = keeper_cut(me, Cut::Signal(sig)) {
            let code = match on_signal.end(&cut) {
                Ok(()) => cut.exit().code(),
                Err(e) => {
                    on_signal
                        .events
                        .event(&RunEvent::Note(&format!("stopped by {sig}; {e}")));
                    Exit::Runtime.code()
                }
            };
            drop(held);
            // SAFETY: ends the process while other threads sit in MPI or CUDA calls that
            // would never return; everything measured is on disk.
            unsafe { libc::_exit(code) };
        }
        if me == 0 {
            // The record was kept by another rank: this one was the one behind.
            // SAFETY: as above.
            unsafe { libc::_exit(Exit::Interrupted.code()) };
        }
        // Give rank 0 time to write before the launcher, seeing a rank leave, kills it.
        std::thread::sleep(std::time::Duration::from_secs(20));
        // SAFETY: as above.
        unsafe { libc::_exit(Exit::Interrupted.code()) };
    })
    .map_err(|source| RunError::Io {
        what: "cannot watch for signals".into(),
        source,
    })?;
    // A rank lost or late between collectives ends every rank (exit 3): rank 0 (or, where rank 0
    // died, another rank) first writes what the journal holds, and JUnit naming why.
    world.on_broken(Box::new(move |why| {
        ending
            .events
            .event(&RunEvent::WorldBroken { rank: me, why });
        if let Some((cut, held)) = keeper_cut(me, Cut::Broken(why.to_string()))
            && let Err(e) = ending.end(&cut)
        {
            drop(held);
            ending.events.event(&RunEvent::Note(&e.to_string()));
        }
    }));
    Ok(())
}

/// A `__worker` rank of `baton run` at a stop signal: where a peer of this host died (the
/// launcher ends the step after a rank was killed or crashed), the job that was running is
/// recorded as an error naming it before this rank goes — the parent folds the journal and says
/// so. Otherwise the rank goes at once, as it did without a handler.
pub fn worker_signals() -> std::io::Result<()> {
    interrupt::on_signal(128 + libc::SIGTERM, |_| {
        if let Some(k) = super::keeper::current()
            && let Some(who) = k.died()
            && let Some(held) = k.hold()
        {
            let _ = held.end_open(crate::results::JobStatus::Error, &Cut::Died(who).error());
            // SAFETY: ends the process while other threads sit in MPI calls that never return;
            // the record is on disk.
            unsafe { libc::_exit(Exit::Runtime.code()) };
        }
        // SAFETY: as above.
        unsafe { libc::_exit(128 + libc::SIGTERM) };
    })
}

/// Every rank's links gathered on every rank.
fn gather_links(
    world: &dyn RankWorld,
    c: &transport::Capture,
    events: &dyn Events,
) -> Vec<TransportLink> {
    let mine = serde_json::to_string(&c.collect(events)).unwrap_or_default();
    world
        .all_gather_string(&mine)
        .iter()
        .flat_map(|s| serde_json::from_str::<Vec<TransportLink>>(s).unwrap_or_default())
        .collect()
}

/// The watchdog over the first meetings of the ranks the user's own launcher started, and
/// where they announce themselves.
pub struct Startup {
    _watchdog: super::watchdog::Watchdog,
    arrived: Option<PathBuf>,
}

impl Startup {
    /// Every rank met: the watchdog goes, and rank 0 removes the announcements.
    fn met(self, me: usize) {
        drop(self._watchdog);
        if me == 0
            && let Some(dir) = &self.arrived
        {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A watchdog over the ranks' first meetings under the user's own launcher (agreeing on the
/// plan, rank 0's claim of the directory, the hosts), where the world does not bound its own
/// waits (MPI): a rank that never arrives — stopped, or stuck in its own set-up — would hold
/// every other there for ever. Bounded as the worker's start-up ([`worker::startup_limit`],
/// this rank's lag on top); the first rank whose watchdog fires, rank 0 or not, names the ranks
/// that did not arrive as this host sees them ([`super::arrival`]), writes JUnit saying so
/// (nothing ran: no rank claimed the directory, or none measured), and every rank exits 4.
fn startup(
    world: &dyn RankWorld,
    input: &Input<'_>,
    finish: &Finish,
    events: &Arc<dyn Events>,
) -> Option<Startup> {
    if world.bounds_its_waits() {
        return None;
    }
    let (me, opts) = (world.rank(), input.opts);
    let arrival = super::arrival::for_launcher_job(&opts.out_dir)
        .and_then(|d| super::arrival::Arrival::new(d, me, world.size()));
    // Removed once every rank met; only a directory the ranks made (never a planted link).
    let arrived = arrival.as_ref().map(|a| a.dir().to_path_buf());
    let limit = worker::startup_limit(input.jobs);
    let (finish, events, who_events) = (finish.clone(), events.clone(), events.clone());
    let results = lifecycle::results(input.plan, &opts.plan_path, &opts.plan_hash, Maker::Worker);
    let results_path = opts.out_dir.join("results.json");
    let arrival = std::sync::Arc::new(std::sync::Mutex::new(arrival));
    let said = arrival.clone();
    let w = super::watchdog::Watchdog::start(Box::new(move |what: &str| {
        let record = said
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|a| a.record());
        let Some(what) = worker::startup_timed_out(record, me, what, &*who_events) else {
            return;
        };
        let end = finish(&Finishing {
            jobs: &[],
            results: &results,
            results_path: &results_path,
            exit: Exit::Timeout,
            broken: Some(&what),
        });
        if let Err(e) = end {
            events.event(&RunEvent::Note(&e));
        }
    }));
    w.arm(limit + rank_lag(world), worker::startup_what(limit));
    worker::fault_at_start(Fault::from_env().as_ref(), me);
    if let Some(a) = &mut *arrival.lock().unwrap_or_else(|p| p.into_inner()) {
        a.announce();
    }
    Some(Startup {
        _watchdog: w,
        arrived,
    })
}

/// One rank of a run its launcher started.
pub fn run(
    input: &Input<'_>,
    rank: RankMode<'_>,
    events: Arc<dyn Events>,
) -> Result<RunOutcome, RunError> {
    let (world, opts) = (rank.world, input.opts);
    let startup = startup(world, input, &rank.finish, &events);
    agree(world, input, &*events)?;
    let (life, skip) = claim(world, input, &*events)?;
    let todo: Vec<Job> = input
        .jobs
        .iter()
        .filter(|j| !skip.contains(&j.id))
        .cloned()
        .collect();
    let ending = Ending {
        dir: opts.out_dir.clone(),
        jobs: input.jobs.to_vec(),
        finish: rank.finish,
        events: events.clone(),
    };
    watch(world, ending.clone())?;
    let journal = opts.out_dir.join(crate::results::journal::FILE);
    let base = life.as_ref().map_or_else(
        || lifecycle::results(input.plan, &opts.plan_path, &opts.plan_hash, Maker::Worker),
        |l| l.started().clone(),
    );
    let m = Measure {
        plan: input.plan,
        base,
        jobs: &todo,
        journal: &journal,
        table: opts.print_table,
        progress: None,
        events: events.clone(),
        evidence: opts.evidence,
        // Whichever rank records a timeout folds the journal (`keeper`).
        on_timeout: Some(timed_out(ending)),
        startup,
    };
    let ran = measure(world, m);
    let links = rank
        .capture
        .as_ref()
        .map(|c| gather_links(world, c, &*events));
    ran?;
    let Some(life) = life else {
        return Ok(RunOutcome {
            results: lifecycle::results(
                input.plan,
                &opts.plan_path,
                &opts.plan_hash,
                Maker::Worker,
            ),
            results_path: opts.out_dir.join("results.json"),
            exit: Exit::Ok,
            interrupted: None,
            not_reached: Vec::new(),
            owner: false,
        });
    };
    let end = life.finish(&*events, |results| {
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
    })?;
    events.event(&RunEvent::ResultsIn(&end.results_path));
    Ok(RunOutcome {
        exit: lifecycle::exit_for(&end.results),
        results: end.results,
        results_path: end.results_path,
        interrupted: None,
        not_reached: Vec::new(),
        owner: true,
    })
}
