//! Executing jobs: the nccl-tests measurement protocol shared by every backend, the seams to the
//! backends ([`engine::Engine`]) and to rank coordination ([`crate::world::World`]), and the live table;
//! and [`run`], the one entry of `baton run` whatever runs it.

use std::path::PathBuf;
use std::sync::Arc;

use crate::exit::Exit;
use crate::expand::Job;
use crate::plan::Plan;
use crate::results::{self, Results};
use events::Events;
use outdir::OutDirError;

pub mod engine;
pub mod pattern;
pub mod sweep;
pub mod table;

pub mod arrival;
pub mod environment;
pub mod events;
pub mod evidence;
pub mod fault;
pub mod hang;
pub mod host_clock;
pub mod interrupt;
pub mod iterations;
pub mod job_marks;
pub mod keeper;
pub mod layout;
pub mod lifecycle;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod nccl;
pub mod nccl_lines;
pub mod nodesets;
pub mod orchestrate;
pub mod outdir;
pub mod rank;
pub mod refusal;
pub mod set_events;
pub mod stalled;
pub mod supervise;
pub mod telemetry;
pub mod traffic;
pub mod transport;
pub mod watchdog;
pub mod worker;
pub mod worker_args;

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
    /// The site file laid over the plan, which the results record.
    pub site: Option<crate::site::SiteRef>,
    /// Take node evidence around every job, unless the plan says `evidence: false`
    /// (`--no-evidence` turns it off).
    pub evidence: bool,
}

pub struct RunOutcome {
    pub results: Results,
    pub results_path: PathBuf,
    pub exit: Exit,
    /// The signal that stopped the run, if one did.
    pub interrupted: Option<&'static str>,
    /// Jobs the run never reached (it was stopped first).
    pub not_reached: Vec<String>,
    /// Whether this process holds the run's results: a rank other than 0 holds none (rank 0
    /// has them).
    pub owner: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// One rank of many could not run (its words, on rank 0 only).
    #[error(transparent)]
    Rank(#[from] rank::RankError),
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
            RunError::Rank(e) => e.exit(),
            _ => Exit::Runtime,
        }
    }
}

/// What a run runs.
pub struct Input<'a> {
    pub plan: &'a Plan,
    /// The jobs selected (`--only`, `--env-set`).
    pub jobs: &'a [Job],
    pub opts: &'a RunOptions,
}

/// How a run runs.
pub enum Mode<'a> {
    /// Outside any launcher: a worker process set per environment set, on this node.
    Local,
    /// Over node sets (`over:`), a launcher step per set, round by round; `judge` steers
    /// `over: isolate`.
    NodeSets {
        nodes: &'a nodesets::Nodes,
        judge: nodesets::Judge<'a>,
    },
    /// One rank of many its launcher started.
    Rank(rank::RankMode<'a>),
}

/// Runs `input` as `mode` says, telling `events` how it goes: claims the output directory,
/// starts or resumes the run, runs it, and folds its journal into the final `results.json`.
pub fn run(
    input: &Input<'_>,
    mode: Mode<'_>,
    events: Arc<dyn Events>,
) -> Result<RunOutcome, RunError> {
    match mode {
        Mode::Local => orchestrate::run(input, &*events),
        Mode::NodeSets { nodes, judge } => nodesets::run(input, nodes, judge, &*events),
        Mode::Rank(r) => rank::run(input, r, events),
    }
}
