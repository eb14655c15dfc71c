//! The seam between the shared sweep and a backend: one rank's data movement for one job.

use crate::collective::{Collective, Counts, Dtype, RedOp, Traffic};
use crate::plan::knobs::Knobs;
use crate::results::{ErrorKind, MeasuredWith, Placement};

/// One collective call as the sweep asks for it.
#[derive(Debug, Clone, Copy)]
pub struct OpSpec<'a> {
    pub collective: Collective,
    pub dtype: Dtype,
    pub op: RedOp,
    /// Root within the group.
    pub root: u32,
    /// The requested (swept) size in bytes.
    pub requested: u64,
    pub counts: Counts,
    pub placement: Placement,
    /// Bytes one op touches (nccl-tests' rotation span).
    pub span: u64,
    /// Bytes allocated per buffer (the largest span of the job).
    pub max_bytes: u64,
    pub group_rank: u64,
    pub group_size: u64,
    /// Who sends whom how much (alltoallv only; the others ignore it).
    pub traffic: &'a Traffic,
}

impl OpSpec<'_> {
    /// Byte offset of iteration `idx` inside the buffers (nccl-tests §2.6), so consecutive ops
    /// walk the whole allocation instead of hitting cache.
    pub fn rotation(&self, idx: u64) -> u64 {
        if self.span == 0 {
            return 0;
        }
        let steps = (self.max_bytes / self.span).max(1);
        self.span * (idx % steps)
    }
}

/// A failure inside a backend, classified for the results file.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct EngineError {
    pub kind: ErrorKind,
    pub message: String,
    /// The backend cannot go on in this process (a sticky CUDA error): the worker stops after
    /// recording the job, and `baton run` starts a fresh one for the jobs left.
    pub fatal: bool,
}

impl EngineError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        EngineError {
            kind,
            message: message.into(),
            fatal: false,
        }
    }
}

fn no_graphs() -> EngineError {
    EngineError::new(ErrorKind::Other, "CUDA graphs need the nccl backend")
}

/// One rank's data mover. Calls arrive in the nccl-tests order: `init`, one untimed `launch` +
/// `wait`, the timed `launch`es (grouped by `group_start`/`group_end` when aggregating) + `wait`,
/// then `init` + `launch` + `wait` + `verify` for the check.
pub trait Engine {
    /// The longest a `wait` may take before the backend aborts the op as hung.
    fn set_timeout(&mut self, _limit: std::time::Duration) {}
    /// The next job's engine flags and whether it reports memory, before its `prepare`. A
    /// backend refuses the job when it or the library it loaded cannot honour them; the host
    /// backend has none (the plan's check keeps them off it).
    fn configure(&mut self, _knobs: &Knobs, _memory: bool) -> Result<(), EngineError> {
        Ok(())
    }
    /// What the job since `configure` was measured with, as this rank knows it (its own memory
    /// figures); `None` for a backend without NCCL.
    fn measured_with(&mut self) -> Option<MeasuredWith> {
        None
    }
    /// Buffers for a job whose largest op spans `max_bytes`, on the communicator of this rank's
    /// group under `split` (`None`: all ranks). Called by every rank at once: creating a split
    /// communicator is collective. Backends cache communicators per split across jobs.
    /// `group` is the index of this rank's group in the job's group list (the same list on
    /// every rank), usable directly as an MPI color.
    fn prepare(
        &mut self,
        split: Option<&str>,
        group: usize,
        max_bytes: u64,
        check: bool,
    ) -> Result<(), EngineError>;
    /// Writes the deterministic inputs for `op` (and clears the output).
    fn init(&mut self, op: &OpSpec, seed: u64) -> Result<(), EngineError>;
    fn group_start(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
    fn group_end(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
    /// Starts recording this rank's launches into a CUDA graph instead of running them
    /// (nccl-tests `-G`). Only GPU backends can; the plan checker keeps graphs off the others.
    fn capture_begin(&mut self) -> Result<(), EngineError> {
        Err(no_graphs())
    }
    /// Ends a recording that `capture_begin` began (also after a launch failed inside it, so
    /// the stream leaves capture mode) and keeps it for `replay`. Called only after a
    /// successful `capture_begin`.
    fn capture_end(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
    /// Enqueues the kept recording once.
    fn replay(&mut self) -> Result<(), EngineError> {
        Err(no_graphs())
    }
    /// Per-iteration timing (nccl-tests `-I`): room for `n` marks, made before the timed loop so
    /// the loop itself allocates nothing. Only called when the job asks for iterations.
    fn marks_begin(&mut self, _n: usize) -> Result<(), EngineError> {
        Ok(())
    }
    /// Mark `i` in this rank's order of work: the start of timed iteration `i`, or, for the
    /// last, the end of the loop.
    fn mark(&mut self, _i: usize) -> Result<(), EngineError> {
        Ok(())
    }
    /// After `wait`: µs between consecutive marks, one per iteration (empty: no marks here).
    fn marked(&mut self) -> Result<Vec<f64>, EngineError> {
        Ok(Vec::new())
    }
    /// Timed iteration `it` is about to start: nothing, but where an injected lateness
    /// (`BATON_FAULT=late`) falls, between one iteration's calls and the next.
    fn arrive(&mut self, _it: u64) -> Result<(), EngineError> {
        Ok(())
    }
    /// Enqueues (or, for blocking backends, runs) iteration `idx` of `op`.
    fn launch(&mut self, op: &OpSpec, idx: u64) -> Result<(), EngineError>;
    /// Waits for everything enqueued.
    fn wait(&mut self) -> Result<(), EngineError>;
    /// Wrong elements of this rank's output after the check op, against `seed`'s expected data.
    fn verify(&mut self, op: &OpSpec, seed: u64) -> Result<u64, EngineError>;
    /// Drops communicators after a failure elsewhere (a peer timed out or hit an NCCL error):
    /// the next `prepare` builds fresh ones on every rank.
    fn reset(&mut self) {}
    /// Flips bits of the first output element of `op` (fault injection only).
    fn flip_output_element(&mut self, op: &OpSpec) -> Result<(), EngineError>;
    /// Makes the device fault for real, as a bad kernel would (fault injection only; backends
    /// without a device have nothing to break).
    fn fault_device(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
}
