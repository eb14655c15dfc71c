//! A TCP rendezvous for multi-process GPU runs, so `baton` needs no MPI library: every rank learns
//! its place from whichever launcher started it ([`launcher`]), meets rank 0 at one address every
//! rank can compute ([`address`]), and then exchanges what NCCL needs to start (its unique id) and
//! the few collectives the runner uses (barriers, all-gathers) through rank 0 ([`world`]).
//!
//! The data itself never goes through here: NCCL moves it. Only a few hundred bytes per job do,
//! so a star through rank 0 over plain sockets is enough, and every failure (a rank that never
//! came, a rank that died, a root of another run) is named instead of hanging.

pub mod address;
pub mod launcher;
mod wire;
pub mod world;

pub use address::{Root, root_address};
pub use launcher::{Placement, Source, detect};
pub use world::{Member, TcpWorld};

use std::time::Duration;

/// Everything that can go wrong finding the other ranks or talking to them.
#[derive(Debug, thiserror::Error)]
pub enum RendezvousError {
    #[error("{var}={value:?} is not a non-negative whole number")]
    BadNumber { var: String, value: String },
    #[error("{0}")]
    Inconsistent(String),
    #[error(
        "no launcher placed this process (none of BATON_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, \
         PALS_RANKID, PMIX_RANK, SLURM_PROCID with SLURM_STEP_ID is set): start it under srun, \
         mpirun, mpiexec, or set BATON_RANK and BATON_SIZE"
    )]
    NoLauncher,
    #[error("BATON_RENDEZVOUS={value:?}: {why} (expected host:port, e.g. node01:29500)")]
    BadAddress { value: String, why: String },
    #[error("cannot tell where rank 0 listens: {0}; set BATON_RENDEZVOUS=host:port to a host:port of rank 0's node that every rank can reach")]
    NoRoot(String),
    #[error("{var}={value:?} is not a number of seconds")]
    BadTimeout { var: String, value: String },
    #[error("rank 0 cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("rank {rank} could not reach rank 0 at {addr} within {secs:.0} s: {last}")]
    Unreachable {
        rank: usize,
        addr: String,
        secs: f64,
        last: String,
    },
    #[error("wrong root at {addr}: {why}")]
    WrongRoot { addr: String, why: String },
    #[error(
        "rank(s) {missing} never arrived at {addr} within {secs:.0} s ({arrived} of {size} did; \
         raise BATON_RENDEZVOUS_TIMEOUT if they start slowly)"
    )]
    Missing {
        missing: String,
        addr: String,
        secs: f64,
        arrived: usize,
        size: usize,
    },
    #[error("rank 0 ended the rendezvous: {0}")]
    Refused(String),
    #[error("rank {rank} ({host}) is gone: {why}")]
    PeerLost {
        rank: usize,
        host: String,
        why: String,
    },
    #[error("{who} sent a frame of {len} bytes, over the {cap}-byte limit")]
    TooLarge { who: String, len: u64, cap: u64 },
    #[error("protocol error with {who}: {why}")]
    Protocol { who: String, why: String },
}

/// How long ranks wait for each other at the start (`BATON_RENDEZVOUS_TIMEOUT`, seconds).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// `BATON_RENDEZVOUS_TIMEOUT` from `get`, or [`DEFAULT_TIMEOUT`].
pub fn timeout_from(get: impl Fn(&str) -> Option<String>) -> Result<Duration, RendezvousError> {
    const VAR: &str = "BATON_RENDEZVOUS_TIMEOUT";
    match get(VAR) {
        None => Ok(DEFAULT_TIMEOUT),
        Some(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
            .map(Duration::from_secs_f64)
            .ok_or(RendezvousError::BadTimeout {
                var: VAR.into(),
                value: v,
            }),
    }
}
