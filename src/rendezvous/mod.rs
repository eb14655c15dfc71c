//! A TCP rendezvous for multi-process GPU runs, so `baton` needs no MPI library: every rank learns
//! its place from whichever launcher started it ([`crate::launch::launcher`]), meets rank 0 at one address every
//! rank can compute ([`address`]), and then exchanges what NCCL needs to start (its unique id) and
//! the few collectives the runner uses (barriers, all-gathers) through rank 0 ([`world`]).
//!
//! The data itself never goes through here: NCCL moves it. Only a few hundred bytes per job do,
//! so a star through rank 0 over plain sockets is enough, and every failure (a rank that never
//! came, a rank that died or stopped, a root of another run) is named instead of hanging. The
//! ranks prove a per-launch secret to each other ([`key`], [`auth`]), so a stranger on a shared
//! node neither joins nor ends a run (docs/trust.md, "The rendezvous").

pub mod address;
pub mod auth;
mod dial;
pub mod key;
pub mod meet;
pub mod wire;
pub mod world;

pub use address::{Root, root_address};
pub use world::{Member, TcpWorld};

use std::time::Duration;

use crate::launch::launcher::{LauncherError, Placement, detect};

/// Everything that can go wrong finding the other ranks or talking to them.
#[derive(Debug, thiserror::Error)]
pub enum RendezvousError {
    #[error(transparent)]
    Placement(#[from] LauncherError),
    #[error("{0}")]
    NoKey(String),
    #[error(
        "no launcher placed this process (none of BATON_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, \
         PALS_RANKID, PMIX_RANK, SLURM_PROCID with SLURM_STEP_ID is set): start it under srun, \
         mpirun, mpiexec, or set BATON_RANK and BATON_SIZE"
    )]
    NoLauncher,
    #[error("BATON_RENDEZVOUS={value:?}: {why} (expected host:port, e.g. node01:29500)")]
    BadAddress { value: String, why: String },
    #[error(
        "cannot tell where rank 0 listens: {0}; set BATON_RENDEZVOUS=host:port to a host:port of rank 0's node that every rank can reach"
    )]
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
         raise BATON_RENDEZVOUS_TIMEOUT if they start slowly){seen}"
    )]
    Missing {
        missing: String,
        addr: String,
        secs: f64,
        arrived: usize,
        size: usize,
        /// What rank 0 dropped meanwhile, `; …`, or empty.
        seen: String,
    },
    #[error("rank 0 ended the rendezvous: {0}")]
    Refused(String),
    #[error("rank 0 refused this rank: {0}")]
    Turned(String),
    #[error("{0}")]
    Duplicate(String),
    #[error(
        "{who} {what} within {secs:.0} s (a rank stopped, stuck, or far slower than the others; \
         outside a job the ranks wait BATON_RENDEZVOUS_TIMEOUT for each other)"
    )]
    Late {
        who: String,
        what: String,
        secs: f64,
    },
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

impl RendezvousError {
    /// Placement, address, size or key that cannot work is invalid input; the rest happened
    /// while the ranks met or talked.
    pub fn exit(&self) -> crate::exit::Exit {
        use RendezvousError::*;
        match self {
            Placement(_)
            | NoKey(_)
            | NoLauncher
            | BadAddress { .. }
            | NoRoot(_)
            | BadTimeout { .. } => crate::exit::Exit::Invalid,
            _ => crate::exit::Exit::Runtime,
        }
    }
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

/// The world of this process as its launcher placed it, met at the address every rank derives;
/// `purpose` keeps a `baton ranks` and a `baton run` of one step apart.
pub struct Joined {
    pub world: TcpWorld,
    pub placement: Placement,
    pub root: Root,
}

/// Detects the placement, derives the root and meets the other ranks, reading the process
/// environment. `Ok(None)` when no launcher placed this process.
pub fn join_from_env(purpose: &str) -> Result<Option<Joined>, RendezvousError> {
    let get = |k: &str| std::env::var(k).ok();
    let Some(placement) = detect(get)? else {
        return Ok(None);
    };
    let root = root_address(get, &placement)?;
    let host = crate::host::hostname();
    if placement.rank == 0 && root.first_node && !same_host(&host, &root.host) {
        return Err(RendezvousError::NoRoot(format!(
            "rank 0 runs on {host}, not on {} ({}), so the other ranks would look for it there",
            root.host, root.from
        )));
    }
    let join = world::Join {
        rank: placement.rank,
        size: placement.size,
        local_rank: placement.local_rank,
        host,
        inventory: inventory(),
        key: key::launch_key(get, &placement, &root, purpose)?,
        timeout: timeout_from(get)?,
        root: root.clone(),
    };
    let world = TcpWorld::join(&join)?;
    Ok(Some(Joined {
        world,
        placement,
        root,
    }))
}

/// `node01` and `node01.cluster.example` are one host.
fn same_host(a: &str, b: &str) -> bool {
    let short = |s: &str| s.split('.').next().unwrap_or(s).to_ascii_lowercase();
    short(a) == short(b)
}

/// What this rank sees, without loading a driver: the GPU device files and the launcher's
/// `CUDA_VISIBLE_DEVICES`.
pub fn inventory() -> String {
    let gpus = std::fs::read_dir("/dev")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_prefix("nvidia"))
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                })
                .count()
        })
        .unwrap_or(0);
    match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(v) => format!(
            "{gpus} GPU(s), CUDA_VISIBLE_DEVICES={}",
            v.chars().take(64).collect::<String>()
        ),
        Err(_) => format!("{gpus} GPU(s)"),
    }
}

#[cfg(test)]
mod tests {
    use crate::launch::launcher::test_env as env;

    #[test]
    fn timeouts_are_read_and_bad_ones_named() {
        assert_eq!(
            crate::rendezvous::timeout_from(env(&[("BATON_RENDEZVOUS_TIMEOUT", "2.5")])).unwrap(),
            std::time::Duration::from_millis(2500)
        );
        let e = crate::rendezvous::timeout_from(env(&[("BATON_RENDEZVOUS_TIMEOUT", "soon")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("BATON_RENDEZVOUS_TIMEOUT=\"soon\""), "{e}");
    }
}
