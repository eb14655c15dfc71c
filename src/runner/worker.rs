//! One process's share of a run: the jobs of one environment set, on one World and Engine.
//! Rank 0 keeps the results, tells the live nccl-tests table as events and appends every row to
//! the run's journal before the next row starts, so a crash or kill loses nothing measured.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::engine::Engine;
use super::events::{Events, RunEvent};
use super::fault::{Fault, FaultKind, Faulty};
use super::sweep::{JobRun, SweepHooks, sweep};
use super::table;
use super::watchdog::Watchdog;
use crate::expand::Job;
use crate::plan::{Backend, Repeat};
use crate::results::journal::{Journal, Record};
use crate::results::{
    self, CellStatus, ErrorKind, GroupInfo, JobError, JobResult, JobStatus, Layout, RankInfo,
    Results, Row,
};
use crate::runner::nccl::GpuInfo;
use crate::units::Size;
use crate::world::World;

/// How long a rank other than 0 waits, after its collective timed out, before it exits: rank 0
/// records the timeout and exits first.
pub(super) const NON_ROOT_TIMEOUT_EXIT_DELAY: std::time::Duration =
    std::time::Duration::from_secs(2);

/// How long a rank whose wait timed out gives a rank 0 on another host to record it before it
/// records rank 0 as silent (`keeper`): rank 0 may be asking NCCL's RAS (a few seconds) first.
const SILENT_AFTER: Duration = Duration::from_secs(10);

/// What a worker needs besides the jobs.
#[derive(Clone)]
pub struct WorkerConfig {
    pub backend: Backend,
    /// The run's journal, which rank 0 appends every record to.
    pub journal: PathBuf,
    /// Tell the nccl-tests table (rank 0).
    pub print_table: bool,
    /// Whoever shows this process's table and messages (the CLI's worker-side reporter).
    pub events: Arc<dyn Events>,
    pub fault: Option<Fault>,
    /// How each rank names its device in the table (`host memory (MPI)`, `device 0 [...]`).
    pub device_label: String,
    /// Results to extend (`--resume`, or earlier env sets); new jobs are appended. Rank 0
    /// journals its environment at the start.
    pub results: Results,
    /// This rank's GPU, recorded per rank in the layout.
    pub gpu: Option<GpuInfo>,
    /// Whether this rank runs the hang watchdog (every MPI rank; only rank 0 of a threaded
    /// process, whose exit takes the other threads with it).
    pub watchdog: bool,
    /// Extra time the watchdog allows beyond the timeout, when the backend aborts hung ops
    /// itself (NCCL) and the watchdog is only the last resort.
    pub watchdog_grace: std::time::Duration,
    /// Sample GPU clocks, temperatures and throttle reasons around each job (rank 0).
    pub telemetry: bool,
    /// Take node evidence around every job (`docs/evidence.md`): the same on every rank.
    pub evidence: bool,
    /// A feed for `baton run`'s progress bar: rank 0 appends the job ID for every finished row.
    pub progress: Option<PathBuf>,
    /// The rank that recorded a timeout (rank 0, or another one where rank 0 could not), before
    /// the process exits 4: where no parent folds the journal (one rank of many under a
    /// launcher), this writes the results.
    pub on_timeout: Option<OnTimeout>,
}

/// See [`WorkerConfig::on_timeout`].
pub type OnTimeout = Arc<dyn Fn(&str) + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(transparent)]
    Results(#[from] results::ResultsError),
    /// The backend cannot go on in this process; the jobs so far are recorded.
    #[error("{job}: {message}; this worker stops, the jobs after it need a fresh process")]
    Fatal { job: String, message: String },
}

struct Shared {
    results: Mutex<Results>,
    /// Rank 0's journal; `None` on other ranks.
    journal: Option<Mutex<Journal>>,
    progress: Option<Mutex<std::fs::File>>,
}

impl Shared {
    /// Journals `rec` (flushed to disk) and applies it to the results in memory.
    fn record(&self, rec: Record) -> Result<(), results::ResultsError> {
        let Some(j) = &self.journal else {
            return Ok(());
        };
        j.lock().unwrap_or_else(|p| p.into_inner()).append(&rec)?;
        let mut r = self.results.lock().unwrap_or_else(|p| p.into_inner());
        results::journal::apply(&mut r, rec);
        Ok(())
    }

    /// One finished row of `job` for the progress feed; a feed that cannot be written only
    /// costs the bar, never the run.
    fn tick(&self, job: &str) {
        if let Some(f) = &self.progress {
            use std::io::Write;
            let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
            let _ = writeln!(f, "{job}");
        }
    }
}

fn groups_for(job: &Job, n: u64) -> Vec<GroupInfo> {
    match job.split.as_ref().map(|s| s.split) {
        Some(split) => split
            .groups(n)
            .into_iter()
            .map(|(color, members)| GroupInfo { color, members })
            .collect(),
        None => vec![GroupInfo {
            color: 0,
            members: (0..n).collect(),
        }],
    }
}

fn step_text(job: &Job) -> String {
    let s = &job.sizes;
    if s.len() >= 2
        && s[1].is_multiple_of(s[0])
        && s.windows(2).all(|w| w[1] == w[0] * (s[1] / s[0]))
    {
        format!("{}(factor)", s[1] / s[0])
    } else if s.len() >= 2 && s.windows(2).all(|w| w[1] - w[0] == s[1] - s[0]) {
        format!("{}(bytes)", s[1] - s[0])
    } else {
        "list".into()
    }
}

/// An empty result for `job` (status `Partial`), to be filled with repeats as they finish.
pub fn job_result(job: &Job, backend: Backend, layout: Layout) -> JobResult {
    JobResult {
        id: job.id.clone(),
        test: job.test.clone(),
        identity: Some(crate::expand::job_identity(job, backend)),
        match_by: Default::default(),
        sources: Vec::new(),
        backend,
        collective: job.collective,
        dtype: job.dtype,
        op: job.op,
        root: job.root,
        split: job.split_text().map(str::to_string),
        env: job.env.clone(),
        settings: (&job.settings).into(),
        layout,
        groups: Vec::new(),
        repeats: Vec::new(),
        transports: Vec::new(),
        telemetry: Vec::new(),
        status: JobStatus::Partial,
        reported_avg_busbw: None,
        errors: Vec::new(),
        node_set: job.node_set.clone(),
        evidence: Vec::new(),
        measured_with: None,
    }
}

/// What the job was measured with, memory as the largest figure of any rank when the ranks
/// can still meet (after a hang or a fatal error rank 0 records its own).
fn measured_with<W: World, E: Engine>(
    world: &W,
    engine: &mut E,
    meet: bool,
) -> Option<results::MeasuredWith> {
    let mut m = engine.measured_with()?;
    if meet && let Some(mine) = m.memory {
        let all = |v: u64| world.all_gather_u64(v).into_iter().max().unwrap_or(v);
        m.memory = Some(results::MemoryFigures {
            init_bytes: all(mine.init_bytes),
            user_bytes: all(mine.user_bytes),
            collective_bytes: all(mine.collective_bytes),
        });
    }
    Some(m)
}

/// How much longer than the watchdog a world may wait inside a job, so the watchdog (which
/// records the hang) fires first.
const JOB_LIMIT_MARGIN: std::time::Duration = std::time::Duration::from_secs(30);

/// Arms the watchdog for `what` of `job`, said to be bounded by `limit` and firing `grace` later
/// (the grace is this rank's, not the user's). Besides the sweep's sizes it watches the ranks
/// meeting outside it (evidence, the repeat vote, the memory figures): unwatched, a rank stopped
/// there leaves its peers waiting on the world's own bound (none under MPI), and MPI's allgather
/// lets some peers through, whose watchdogs then fire first and the launcher ends rank 0 before
/// it has recorded the timeout.
fn watch(w: Option<&Watchdog>, (limit, grace): (Duration, Duration), job: &str, what: &str) {
    if let Some(w) = w {
        w.arm(
            limit + grace,
            format!(
                "{job} {what} did not finish within {}",
                humantime::format_duration(limit)
            ),
        );
    }
}

/// How long the ranks' start-up meetings may take when no job says (a worker with no jobs).
const STARTUP_LIMIT: Duration = Duration::from_secs(60);

/// A watchdog over the ranks' start-up meetings (hosts, pids, devices, before the first job),
/// bounded like the meetings inside a job (the first job's timeout and the margin, this rank's
/// grace on top). A peer that never arrives — stuck in its own set-up, or stopped — holds
/// every rank there, and under Open MPI (or a process's GPU threads) nothing else ends that
/// wait: the worker exits 4. Where `baton run` gave the ranks a place to announce themselves
/// (`arrival`), the first rank whose watchdog fires — whichever is left running, rank 0 or
/// not — records which ranks did not arrive and how; otherwise only the timeout is said.
fn startup_watch(
    cfg: &WorkerConfig,
    me: usize,
    jobs: &[Job],
    arrival: Option<Arc<Mutex<super::arrival::Arrival>>>,
) -> Option<Watchdog> {
    if !cfg.watchdog {
        return None;
    }
    let limit = startup_limit(jobs);
    let events = cfg.events.clone();
    let on_timeout = cfg.on_timeout.clone();
    let w = Watchdog::start(Box::new(move |what: &str| {
        let record = arrival
            .as_ref()
            .map(|a| a.lock().unwrap_or_else(|p| p.into_inner()).record());
        let said = startup_timed_out(record, me, what, &*events);
        if let (Some(what), Some(f)) = (said, &on_timeout) {
            f(&what);
        }
    }));
    w.arm(limit + cfg.watchdog_grace, startup_what(limit));
    Some(w)
}

/// A start-up watchdog fired on rank `me`: who did not arrive, from the announcements' record
/// (`Arrival::record`: its words and whether this rank writes it) where there are
/// announcements, else "a rank did not arrive", recorded by rank 0; said as this rank's
/// timeout. `Some` with the words where this rank writes the record; `None` after giving the
/// writer time to say it first, as at a job's timeout.
pub(super) fn startup_timed_out(
    record: Option<(String, bool)>,
    me: usize,
    what: &str,
    events: &dyn Events,
) -> Option<String> {
    let (what, recorder) = match record {
        Some((who, recorder)) => (format!("{what}: {who}"), recorder),
        None => (format!("{what}: a rank did not arrive"), me == 0),
    };
    events.event(&RunEvent::RankTimeout {
        rank: me,
        what: &what,
    });
    if recorder {
        Some(what)
    } else {
        std::thread::sleep(NON_ROOT_TIMEOUT_EXIT_DELAY);
        None
    }
}

/// How long the ranks' start-up meetings may take: the first job's timeout and the margin.
pub(super) fn startup_limit(jobs: &[Job]) -> Duration {
    jobs.first()
        .map_or(STARTUP_LIMIT, |j| j.settings.timeout + JOB_LIMIT_MARGIN)
}

/// What a start-up watchdog says when it fires, before who did not arrive.
pub(super) fn startup_what(limit: Duration) -> String {
    format!(
        "the ranks' start-up (before the first job) did not finish within {}",
        humantime::format_duration(limit)
    )
}

/// A `stop-start` or `stall-start` fault for rank `me`: it never arrives at the meetings that
/// follow, stopped (SIGSTOP; it sleeps on if woken), as one a debugger or a frozen node holds,
/// or running, as one stuck in its own set-up.
pub(super) fn fault_at_start(fault: Option<&Fault>, me: usize) {
    let Some(f) = fault.filter(|f| f.applies(me, "")) else {
        return;
    };
    if f.kind == FaultKind::StopStart {
        // SAFETY: raises a signal in this process.
        unsafe { libc::raise(libc::SIGSTOP) };
    }
    if matches!(f.kind, FaultKind::StallStart | FaultKind::StopStart) {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

/// Runs `jobs` on this rank. Returns the results (complete on rank 0; other ranks return what
/// they were given).
pub fn run_jobs<W: World, E: Engine>(
    world: &W,
    engine: &mut E,
    jobs: &[Job],
    cfg: WorkerConfig,
) -> Result<Results, WorkerError> {
    let me = world.rank();
    let n = world.size() as u64;
    // A world that bounds its own waits names the rank that did not come; the others wait
    // for every rank, and a watchdog bounds their start-up.
    let arrival = cfg
        .progress
        .as_deref()
        .and_then(|feed| {
            super::arrival::Arrival::new(super::arrival::dir_for(feed), me, n as usize)
        })
        .map(|a| Arc::new(Mutex::new(a)));
    let startup = (!world.bounds_its_waits())
        .then(|| startup_watch(&cfg, me, jobs, arrival.clone()))
        .flatten();
    // Where this worker's records begin, for a rank that keeps them when rank 0 cannot.
    let journal_from = super::keeper::Keeper::start_of(&cfg.journal);
    fault_at_start(cfg.fault.as_ref(), me);
    if let Some(a) = &arrival {
        a.lock().unwrap_or_else(|p| p.into_inner()).announce();
    }
    let hostname = crate::host::hostname();
    let hosts = world.all_gather_string(&hostname);
    let pids = world.all_gather_u64(std::process::id() as u64);
    let labels = world.all_gather_string(&cfg.device_label);
    let gpus: Vec<Option<GpuInfo>> = world
        .all_gather_string(&serde_json::to_string(&cfg.gpu).unwrap_or_default())
        .iter()
        .map(|s| serde_json::from_str(s).ok().flatten())
        .collect();
    let mut cfg = cfg;
    if me == 0 && gpus.iter().any(Option::is_some) {
        record_gpus(&mut cfg.results.environment, &hosts, &gpus);
    }
    // Distinct hosts, wherever the launcher put the ranks (cyclic placement alternates them).
    let nodes = hosts
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len() as u32;

    let progress = cfg.progress.as_ref().and_then(|p| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .ok()
            .map(Mutex::new)
    });
    let journal = if me == 0 {
        Some(Mutex::new(Journal::open(&cfg.journal)?))
    } else {
        None
    };
    let environment = cfg.results.environment.clone();
    let shared = Arc::new(Shared {
        results: Mutex::new(cfg.results),
        journal,
        progress,
    });
    shared.record(Record::Environment {
        environment: Box::new(environment),
    })?;
    drop(startup);
    // One rank per process: each can speak for a rank 0 that cannot (`keeper`). The ranks of
    // one process's threads live and die together; rank 0 keeps their record alone.
    let one_per_process =
        pids.iter().collect::<std::collections::BTreeSet<_>>().len() == pids.len();
    let keeper = (one_per_process && n > 1).then(|| {
        Arc::new(super::keeper::Keeper::new(
            &cfg.journal,
            journal_from,
            me,
            &hosts,
            &pids,
        ))
    });
    super::keeper::set_current(keeper.clone());
    let current: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let watchdog = cfg.watchdog.then(|| {
        let shared = shared.clone();
        let current = current.clone();
        let (hosts, pids) = (hosts.clone(), pids.clone());
        let events = cfg.events.clone();
        let on_timeout = cfg.on_timeout.clone();
        let keeper = keeper.clone();
        Watchdog::start(Box::new(move |what: &str| {
            // Which ranks of this host cannot take part: what the record can say of whom the
            // collective waits for.
            let mut what = match super::stalled::ranks_not_running(me, &hosts, &pids) {
                Some(seen) => format!("{what}; {seen}"),
                None => what.to_string(),
            };
            // Whose record it is: rank 0's unless it was kept already (then rank 0 was the
            // one behind); another rank's where rank 0 cannot (`keeper`).
            let turn = keeper.as_ref().and_then(|k| k.timeout_turn(SILENT_AFTER));
            let writes = turn.is_some() || (keeper.is_none() && me == 0);
            if let Some((_, Some(silent))) = &turn {
                what = format!("{what}; {silent}");
            }
            // NCCL's own view, asked before the abort where the engine saw the hang first.
            let mut ras = None;
            if writes && let Some(answer) = super::hang::last_or_ask() {
                what = format!("{what}; {}", super::hang::words(&answer, &hosts, &pids));
                ras = Some(Box::new(super::hang::record(&answer, &hosts, &pids)));
            }
            events.event(&RunEvent::RankTimeout {
                rank: me,
                what: &what,
            });
            if !writes {
                // Every rank's deadline passes at about the same moment. A launcher that ends the
                // step at the first rank to exit (srun --kill-on-bad-exit) would otherwise often
                // kill rank 0 before it has recorded the timeout, and report the signal (143)
                // instead of baton's 4.
                if me != 0 {
                    std::thread::sleep(NON_ROOT_TIMEOUT_EXIT_DELAY);
                }
                return;
            }
            let job = current.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some(job) = job {
                let error = JobError {
                    kind: ErrorKind::Timeout,
                    message: format!("hung collective: {what}"),
                    repeat: None,
                    requested: None,
                    placement: None,
                    ras,
                };
                // Rank 0 through its own journal; another rank appends to the one it holds.
                let _ = match &turn {
                    Some((held, _)) if me != 0 => held.end_open(JobStatus::Timeout, &error),
                    _ => shared
                        .record(Record::End {
                            job,
                            status: JobStatus::Timeout,
                            errors: vec![error],
                            telemetry: Vec::new(),
                        })
                        .map(|()| 1),
                };
            }
            if let Some(f) = &on_timeout {
                f(&what);
            }
            // The journal stays locked until the record is kept (and folded).
            drop(turn);
        }))
    });

    let around = super::evidence::Around::new(cfg.evidence, me, &hosts, cfg.gpu.is_some());
    let mut check_seed = 1000u64;
    for job in jobs {
        let groups = groups_for(job, n);
        let smallest = groups.iter().map(|g| g.members.len()).min().unwrap_or(0) as u64;
        let layout = Layout {
            nranks: n,
            nodes,
            processes: n as u32,
            gpus_per_process: 1,
            ranks: (0..n as usize)
                .map(|r| RankInfo {
                    rank: r as u64,
                    host: hosts[r].clone(),
                    pid: Some(pids[r] as u32),
                    device: gpus[r].as_ref().map(|g| g.ordinal),
                    gpu_uuid: gpus[r].as_ref().map(|g| g.uuid.clone()),
                    pci_bus_id: gpus[r].as_ref().map(|g| g.pci_bus_id.clone()),
                    group: job.split.as_ref().and_then(|_| {
                        groups
                            .iter()
                            .find(|g| g.members.contains(&(r as u64)))
                            .map(|g| g.color)
                    }),
                })
                .collect(),
        };
        let mut jr = job_result(job, cfg.backend, layout);
        if job.split.is_some() {
            jr.groups = groups.clone();
        }
        let root = job.root.unwrap_or(0) as u64;
        let bad_root = job.root.is_some() && root >= smallest;
        if bad_root {
            jr.status = JobStatus::Error;
            jr.errors.push(JobError {
                kind: ErrorKind::Other,
                message: format!(
                    "root {root} is out of range: the smallest group has {smallest} ranks"
                ),
                repeat: None,
                requested: None,
                placement: None,
                ras: None,
            });
        }
        if me == 0 && cfg.telemetry && !bad_root {
            jr.telemetry.extend(super::telemetry::sample("before"));
        }
        shared.record(Record::Job { job: Box::new(jr) })?;
        *current.lock().unwrap_or_else(|p| p.into_inner()) = Some(job.id.clone());
        cfg.events.event(&RunEvent::JobStarts {
            rank: me,
            job: &job.id,
        });
        if bad_root {
            if me == 0 {
                cfg.events.event(&RunEvent::JobSkipped {
                    job: &job.id,
                    why: &format!("root {root} is out of range"),
                });
            }
            continue;
        }
        let since = std::time::SystemTime::now();
        // The ranks meeting outside the sweep wait as long as the world does inside it.
        let grace = cfg.watchdog_grace;
        let meeting = (job.settings.timeout + JOB_LIMIT_MARGIN, grace);
        let start_evidence = match &around {
            Some(a) => {
                watch(watchdog.as_ref(), meeting, &job.id, "evidence before it");
                super::evidence::started(a.gather(world, &hosts, since))
            }
            None => Vec::new(),
        };
        if !start_evidence.is_empty() {
            shared.record(Record::Evidence {
                job: job.id.clone(),
                nodes: start_evidence.clone(),
            })?;
        }
        if me == 0 && cfg.print_table {
            let header = table_header(job, &hosts, &pids, &labels, &groups, cfg.backend);
            cfg.events.event(&RunEvent::Table(&header));
        }

        let fault = cfg
            .fault
            .as_ref()
            .filter(|f| f.applies(me, &job.id))
            .map(|f| f.kind.clone());
        engine.set_timeout(job.settings.timeout);
        let mut faulty = Faulty::new(engine, fault, &*cfg.events);
        let started = Instant::now();
        let mut repeat = 0u32;
        let mut all_cells: Vec<(f64, bool)> = Vec::new();
        let mut fatal: Option<String> = None;
        let mut status = JobStatus::Completed;
        let mut errors = Vec::new();
        loop {
            let run = JobRun {
                collective: job.collective,
                dtype: job.dtype,
                op: job.op.unwrap_or(job.settings.op),
                root: root as u32,
                split: job.split_text(),
                sizes: &job.sizes,
                settings: &job.settings,
                groups: &groups,
            };
            shared.record(Record::Repeat {
                job: job.id.clone(),
                index: repeat,
                started: Some(results::now_rfc3339()),
            })?;
            let mut hooks = Hooks {
                me,
                shared: &shared,
                watchdog: watchdog.as_ref(),
                timeout: job.settings.timeout,
                grace: cfg.watchdog_grace,
                job_id: &job.id,
                print: cfg.print_table,
                events: &*cfg.events,
                dtype: job.dtype.name(),
                redop: job.op.map_or(job.collective.no_redop(), |o| o.name()),
                root: job.root.map_or(-1, |r| r as i64),
                reports: job.settings.reports,
                cells: &mut all_cells,
            };
            // Inside the sweep the watchdog bounds every wait; the world's own bound returns
            // for the repeat vote and everything between jobs.
            world.job_limit(Some(meeting.0 + grace));
            let outcome = sweep(world, &mut faulty, &run, &mut check_seed, &mut hooks);
            world.job_limit(None);
            let vote = (job.settings.timeout, grace);
            watch(watchdog.as_ref(), vote, &job.id, "repeat vote");
            if let Err(e) = outcome {
                if e.fatal {
                    fatal = Some(e.message.clone());
                }
                if me == 0 {
                    cfg.events.event(&RunEvent::JobFailed {
                        job: &job.id,
                        message: &e.message,
                    });
                }
                status = if e.kind == ErrorKind::Timeout {
                    JobStatus::Timeout
                } else {
                    JobStatus::Error
                };
                // The engine asked RAS at the hang, before it aborted the communicators.
                let hung = e.kind == ErrorKind::Timeout;
                let ras = hung
                    .then(super::hang::kept)
                    .flatten()
                    .map(|a| Box::new(super::hang::record(&a, &hosts, &pids)));
                // And what this rank sees of the ranks on its host.
                let seen = hung
                    .then(|| super::stalled::ranks_not_running(me, &hosts, &pids))
                    .flatten();
                errors.push(JobError {
                    kind: e.kind,
                    message: match seen {
                        Some(seen) => format!("{}; {seen}", e.message),
                        None => e.message.clone(),
                    },
                    repeat: Some(repeat),
                    requested: None,
                    placement: None,
                    ras,
                });
                break;
            }
            repeat += 1;
            let more = match job.repeat {
                Repeat::Times(t) => repeat < t,
                Repeat::For(d) => started.elapsed() < d,
            };
            // Rank 0's clock decides for everyone, so every rank runs the same repeats.
            let more = world.all_gather_u64(more as u64)[0] == 1;
            if !more {
                break;
            }
        }
        let meet = fatal.is_none() && status != JobStatus::Timeout;
        watch(watchdog.as_ref(), meeting, &job.id, "after its last repeat");
        if let Some(m) = measured_with(world, &mut faulty, meet) {
            shared.record(Record::MeasuredWith {
                job: job.id.clone(),
                measured_with: Box::new(m),
            })?;
        }
        // After a hung collective or a fatal error the ranks may not meet again.
        if let Some(a) = around.as_ref().filter(|_| fatal.is_none())
            && status != JobStatus::Timeout
        {
            let end = super::evidence::ended(&start_evidence, a.gather(world, &hosts, since));
            if !end.is_empty() {
                shared.record(Record::Evidence {
                    job: job.id.clone(),
                    nodes: end,
                })?;
            }
        }
        if let Some(w) = &watchdog {
            w.disarm();
        }
        // The engine timed out here as on rank 0; where rank 0 cannot record it, this rank
        // does, then ends the process as the watchdog would.
        if me != 0
            && status == JobStatus::Timeout
            && let Some((held, silent)) = keeper
                .as_ref()
                .and_then(|k| k.timeout_turn(SILENT_AFTER.max(cfg.watchdog_grace)))
        {
            keep_for_rank_zero(&held, silent, errors, (&*cfg.events, &cfg.on_timeout), me);
        }
        // A write that failed is fatal: nothing more can be recorded, so the job ends here.
        if fatal.is_none() || errors.iter().all(|e| e.kind != ErrorKind::Output) {
            let telemetry = if me == 0 && cfg.telemetry {
                super::telemetry::sample("after")
            } else {
                Vec::new()
            };
            shared.record(Record::End {
                job: job.id.clone(),
                status,
                errors,
                telemetry,
            })?;
        }
        if me == 0 && cfg.print_table {
            let failing = all_cells.iter().filter(|c| c.1).count() as u64;
            let avg = if all_cells.is_empty() {
                0.0
            } else {
                all_cells.iter().map(|c| c.0).sum::<f64>() / all_cells.len() as f64
            };
            let footer = table::footer(failing, avg, &job.collective.nccl_tests_binary());
            cfg.events.event(&RunEvent::Table(&footer));
        }
        if let Some(message) = fatal {
            return Err(WorkerError::Fatal {
                job: job.id.clone(),
                message,
            });
        }
    }
    drop(watchdog);
    let r = shared
        .results
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    Ok(r)
}

/// A rank other than 0 records the timeout its engine saw, which rank 0 cannot (stopped, gone
/// or silent), folds the journal where no parent does, and ends the process with exit 4.
fn keep_for_rank_zero(
    held: &super::keeper::Held,
    silent: Option<String>,
    mut errors: Vec<JobError>,
    (events, on_timeout): (&dyn Events, &Option<OnTimeout>),
    me: usize,
) -> ! {
    if let (Some(e), Some(silent)) = (errors.last_mut(), silent) {
        e.message = format!("{}; {silent}", e.message);
    }
    let what = errors
        .last()
        .map_or_else(String::new, |e| e.message.clone());
    events.event(&RunEvent::RankTimeout {
        rank: me,
        what: &what,
    });
    if let Some(e) = errors.pop() {
        let _ = held.end_open(JobStatus::Timeout, &e);
    }
    if let Some(f) = on_timeout {
        f(&what);
    }
    std::process::exit(crate::exit::Exit::Timeout.code())
}

/// Lists each host's GPUs (in ordinal order) in the environment, from the ranks' reports.
fn record_gpus(env: &mut results::Environment, hosts: &[String], gpus: &[Option<GpuInfo>]) {
    for (host, gpu) in hosts.iter().zip(gpus) {
        let Some(g) = gpu else { continue };
        let h = match env.hosts.iter_mut().position(|h| &h.hostname == host) {
            Some(i) => &mut env.hosts[i],
            None => {
                env.hosts.push(results::Host {
                    hostname: host.clone(),
                    gpus: Vec::new(),
                });
                env.hosts.last_mut().expect("just pushed")
            }
        };
        if !h.gpus.iter().any(|x| x.index == g.ordinal) {
            h.gpus.push(results::Gpu {
                index: g.ordinal,
                name: g.name.clone(),
                uuid: Some(g.uuid.clone()),
                pci_bus_id: Some(g.pci_bus_id.clone()),
                memory_bytes: Some(g.memory_bytes),
            });
            h.gpus.sort_by_key(|x| x.index);
        }
    }
}

struct Hooks<'a> {
    me: usize,
    shared: &'a Shared,
    watchdog: Option<&'a Watchdog>,
    timeout: std::time::Duration,
    grace: std::time::Duration,
    job_id: &'a str,
    print: bool,
    events: &'a dyn Events,
    dtype: &'a str,
    redop: &'a str,
    root: i64,
    /// Which report columns the table carries (`cpu_time`, `timestamps`).
    reports: crate::plan::knobs::Reports,
    /// (busbw, failed) of every printed cell, for the footer.
    cells: &'a mut Vec<(f64, bool)>,
}

impl SweepHooks for Hooks<'_> {
    fn before(&mut self, requested: Option<u64>) {
        let what = match requested {
            Some(b) => format!("at {}", Size(b)),
            None => "warm-up".to_string(),
        };
        let limit = (self.timeout, self.grace);
        watch(self.watchdog, limit, self.job_id, &what);
    }

    fn row(&mut self, row: &Row) -> Result<(), String> {
        if self.me != 0 {
            return Ok(());
        }
        for c in [&row.out_of_place, &row.in_place].into_iter().flatten() {
            let failed = c.status != CellStatus::Ok || c.wrong.is_some_and(|w| w > 0);
            self.cells.push((c.busbw.unwrap_or(0.0), failed));
        }
        self.shared
            .record(Record::Row {
                job: self.job_id.to_string(),
                row: Box::new(row.clone()),
            })
            .map_err(|e| e.to_string())?;
        self.shared.tick(self.job_id);
        if self.print {
            let line = table::row(row, self.dtype, self.redop, self.root, self.reports) + "\n";
            self.events.event(&RunEvent::Table(&line));
        }
        Ok(())
    }
}

/// A job's nccl-tests header: what runs, on which ranks and devices, and the column heads.
fn table_header(
    job: &Job,
    hosts: &[String],
    pids: &[u64],
    labels: &[String],
    groups: &[GroupInfo],
    backend: Backend,
) -> String {
    let s = &job.settings;
    let min = job.sizes.iter().min().copied().unwrap_or(0);
    let max = job.sizes.iter().max().copied().unwrap_or(0);
    let mut out = String::new();
    out.push_str(&format!(
        "# baton version {} backend={} job={}\n",
        env!("CARGO_PKG_VERSION"),
        match backend {
            Backend::Nccl => "nccl",
            Backend::Mpi => "mpi",
        },
        job.id
    ));
    out.push_str(&format!(
        "# Collective test starting: {}\n",
        job.collective.nccl_tests_binary()
    ));
    out.push_str(&format!(
        "# nThread 1 nGpus 1 minBytes {min} maxBytes {max} step: {} warmup iters: {} iters: {} agg iters: {} validation: {} graph: {} unalign: 0\n",
        step_text(job),
        s.warmup,
        s.iters,
        s.agg_iters,
        s.check as u8,
        s.cuda_graph
    ));
    out.push_str(blocking_line(s.knobs.blocking));
    if s.iterations && s.cuda_graph == 0 {
        out.push_str("# Per-Iteration Report: CUDA event timing; i_* uses max over process rows");
        if s.knobs.per_iter_skip > 0 {
            out.push_str(&format!(
                "; summary skips first {} iterations",
                s.knobs.per_iter_skip
            ));
        }
        out.push_str(" \n");
    }
    out.push_str("#\n# Using devices\n");
    for (r, host) in hosts.iter().enumerate() {
        let color = groups
            .iter()
            .find(|g| g.members.contains(&(r as u64)))
            .map_or(0, |g| g.color);
        let short = host.split('.').next().unwrap_or(host);
        out.push_str(&format!(
            "#  Rank {r:2} Group {color:2} Pid {:6} on {short:>10} {}\n",
            pids[r], labels[r]
        ));
    }
    out.push_str("#\n");
    out.push_str(&table::header(s.iterations && s.cuda_graph == 0, s.reports));
    out
}

/// nccl-tests' header line for a `-z` mode (none for 0), so a reader of the log, and ingest,
/// knows how the ops were timed.
fn blocking_line(b: crate::plan::knobs::Blocking) -> &'static str {
    use crate::plan::knobs::Blocking;
    match b {
        Blocking::Off => "",
        Blocking::WaitBarrier => {
            "# Blocking Enabled: wait and barrier after each inner iteration (-m) \n"
        }
        Blocking::Wait => "# Blocking Enabled: wait after each inner iteration (-m), no barrier \n",
        Blocking::Iteration => {
            "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier \n"
        }
    }
}
