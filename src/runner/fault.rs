//! Honest fault injection for tests (`BATON_FAULT`), applied around any backend: the faults go
//! through the same code paths a real failure would.
//!
//! - `corrupt:rank=1` flips bits of one output element after the check op, before the real
//!   verification (must show in `#wrong`);
//! - `stall:rank=1` makes that rank stop joining collectives at its first timed op, so its peers
//!   hang inside the op (must hit the timeout);
//! - `crash:rank=1` kills that rank there (the others must end, results so far kept);
//! - `stall-start:rank=1` makes that rank stop before the ranks' start-up meetings (hosts, pids,
//!   devices, before any job), as a rank stuck in its own set-up: its peers wait there (must hit
//!   the start-up limit);
//! - `stop-start:rank=1` makes that rank stop itself (SIGSTOP) at the same point, as a rank
//!   stopped (a debugger, a frozen node's process) before the ranks first meet;
//! - `init-fail:rank=0` fails communicator set-up;
//! - `device-fault:rank=0` makes that rank's GPU hit an illegal address at its first timed op (a
//!   sticky CUDA error: the worker must stop and a fresh one run the jobs left);
//! - `slow:us=300` sleeps that many microseconds (default 200) before every launch, so the
//!   collectives of any group with such a rank run slower but still correctly — the CPU stand-in
//!   for a GPU pair with a degraded path (`NCCL_P2P_DISABLE=1`);
//! - `late:us=2000` sleeps that many microseconds (default 1000) before every timed iteration,
//!   between one iteration's calls and the next: the rank arrives late, its peers wait for it
//!   inside the call, as they do for a rank whose host is slow (a `late` straggler criterion
//!   names it).
//!
//! `:rank=R` picks the rank (default 0). `slow` and `late` without `rank=` hit every rank of the process it
//! is set in: under mpirun's MPMD syntax (`-np 6 baton-mpi … : -np 2 -x BATON_FAULT=slow …`)
//! exactly the ranks of the second app context, as a per-process environment difference would.
//! `:job=SUBSTRING` limits a fault to jobs whose ID contains it.
//!
//! A test facility: read only by a build with the `test-hooks` feature (scripts/test's), and
//! recorded in results.json, JUnit and the report when set ([`active`]). A build without it
//! refuses to start with `BATON_FAULT` set ([`refused`]), so a fault test run against it fails
//! saying why instead of passing unfaulted. No plan or `--set` may set any `BATON_*` variable.

use super::engine::{Engine, EngineError, OpSpec};
use crate::results::ErrorKind;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    Corrupt,
    Stall,
    StallStart,
    StopStart,
    InitFail,
    Crash,
    DeviceFault,
    /// Delay before each launch, in microseconds.
    Slow {
        us: u64,
    },
    /// Delay before each timed iteration, in microseconds.
    Late {
        us: u64,
    },
}

/// Delay of `slow` when `us=` is not given: large against the ~tens of µs a small CPU
/// collective takes, so the slowed group stands out.
const SLOW_DEFAULT_US: u64 = 200;

/// Delay of `late` when `us=` is not given: a millisecond, far past the microseconds a healthy
/// rank spends between calls.
const LATE_DEFAULT_US: u64 = 1000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub kind: FaultKind,
    /// `None`: every rank of this process.
    pub rank: Option<usize>,
    pub job: Option<String>,
}

/// The variable a fault is injected with.
pub const VAR: &str = "BATON_FAULT";

/// The fault this process injects, as written (`stall:rank=1`): what results, JUnit and the
/// report say of a run. `None` in a build without `test-hooks`, and when unset or unreadable.
pub fn active() -> Option<String> {
    let spec = std::env::var(VAR).ok()?;
    Fault::from_env().map(|_| spec)
}

/// Why this process must not start: `BATON_FAULT` is set, and this build cannot inject it. A
/// test that needs a fault then fails saying so, rather than passing without one.
pub fn refused() -> Option<String> {
    if cfg!(feature = "test-hooks") || std::env::var_os(VAR).is_none() {
        return None;
    }
    Some(format!(
        "{VAR} is set, but this baton was built without test hooks: faults are injected only \
         by test builds (cargo feature `test-hooks`, as scripts/test builds); unset {VAR}"
    ))
}

impl Fault {
    /// Reads `BATON_FAULT`; `None` when unset or unreadable (a typo must not fake a fault),
    /// and always in a build without the `test-hooks` feature.
    #[cfg(feature = "test-hooks")]
    pub fn from_env() -> Option<Fault> {
        Fault::parse(&std::env::var(VAR).ok()?)
    }

    /// No test hooks in this build: no fault, whatever the environment says.
    #[cfg(not(feature = "test-hooks"))]
    pub fn from_env() -> Option<Fault> {
        None
    }

    pub fn parse(s: &str) -> Option<Fault> {
        let mut parts = s.split(':');
        let kind = match parts.next()? {
            "corrupt" => FaultKind::Corrupt,
            "stall" => FaultKind::Stall,
            "stall-start" => FaultKind::StallStart,
            "stop-start" => FaultKind::StopStart,
            "init-fail" => FaultKind::InitFail,
            "crash" => FaultKind::Crash,
            "device-fault" => FaultKind::DeviceFault,
            "slow" => FaultKind::Slow {
                us: SLOW_DEFAULT_US,
            },
            "late" => FaultKind::Late {
                us: LATE_DEFAULT_US,
            },
            _ => return None,
        };
        // A slowdown is set per process (MPMD); the other faults pick one rank, rank 0 by default.
        let rank = match kind {
            FaultKind::Slow { .. } | FaultKind::Late { .. } => None,
            _ => Some(0),
        };
        let mut f = Fault {
            kind,
            rank,
            job: None,
        };
        for p in parts {
            match (p.split_once('=')?, &mut f.kind) {
                (("rank", r), _) => f.rank = Some(r.parse().ok()?),
                (("job", j), _) => f.job = Some(j.to_string()),
                (("us", n), FaultKind::Slow { us } | FaultKind::Late { us }) => {
                    *us = n.parse().ok()?
                }
                _ => return None,
            }
        }
        Some(f)
    }

    pub fn applies(&self, rank: usize, job_id: &str) -> bool {
        self.rank.is_none_or(|r| r == rank)
            && self.job.as_deref().is_none_or(|j| job_id.contains(j))
    }
}

/// Wraps an engine and injects `fault` when it applies to this rank and job.
pub struct Faulty<'e, E: Engine> {
    pub inner: &'e mut E,
    pub fault: Option<FaultKind>,
    /// Told before an injected crash, so the rank's last words are the fault's.
    events: &'e dyn crate::runner::events::Events,
    stalled: bool,
    faulted: bool,
}

impl<'e, E: Engine> Faulty<'e, E> {
    pub fn new(
        inner: &'e mut E,
        fault: Option<FaultKind>,
        events: &'e dyn crate::runner::events::Events,
    ) -> Self {
        Faulty {
            inner,
            fault,
            events,
            stalled: false,
            faulted: false,
        }
    }
}

impl<E: Engine> Engine for Faulty<'_, E> {
    fn set_timeout(&mut self, limit: std::time::Duration) {
        self.inner.set_timeout(limit)
    }
    fn configure(
        &mut self,
        knobs: &crate::plan::knobs::Knobs,
        memory: bool,
    ) -> Result<(), EngineError> {
        self.inner.configure(knobs, memory)
    }
    fn measured_with(&mut self) -> Option<crate::results::MeasuredWith> {
        self.inner.measured_with()
    }
    fn prepare(
        &mut self,
        split: Option<&str>,
        group: usize,
        max_bytes: u64,
        check: bool,
    ) -> Result<(), EngineError> {
        // After the real set-up, so every rank has taken part in its collective calls: the
        // failure is reported, not a mismatch that would hang the other ranks.
        self.inner.prepare(split, group, max_bytes, check)?;
        if self.fault == Some(FaultKind::InitFail) {
            return Err(EngineError::new(
                ErrorKind::Other,
                "injected fault: communicator initialisation failed",
            ));
        }
        Ok(())
    }
    fn init(&mut self, op: &OpSpec, seed: u64) -> Result<(), EngineError> {
        self.inner.init(op, seed)
    }
    fn group_start(&mut self) -> Result<(), EngineError> {
        self.inner.group_start()
    }
    fn group_end(&mut self) -> Result<(), EngineError> {
        self.inner.group_end()
    }
    fn arrive(&mut self, it: u64) -> Result<(), EngineError> {
        if let Some(FaultKind::Late { us }) = self.fault {
            std::thread::sleep(std::time::Duration::from_micros(us));
        }
        self.inner.arrive(it)
    }
    fn launch(&mut self, op: &OpSpec, idx: u64) -> Result<(), EngineError> {
        if let Some(FaultKind::Slow { us }) = self.fault {
            // Sleeping, not spinning: with ranks oversubscribed on a few cores a busy wait takes
            // the CPU the other groups need and slows them as much (measured: the slowed pair then
            // stood out from the rest by under 75%); a slow link does not slow its neighbours.
            std::thread::sleep(std::time::Duration::from_micros(us));
        }
        if self.fault == Some(FaultKind::Crash) && idx > 0 {
            self.events
                .event(&crate::runner::events::RunEvent::InjectedCrash);
            std::process::abort();
        }
        if self.fault == Some(FaultKind::DeviceFault) && idx > 0 && !self.faulted {
            self.faulted = true;
            self.inner.fault_device()?;
        }
        if self.fault == Some(FaultKind::Stall) && idx > 0 {
            // This rank stops joining collectives: its peers hang inside the op, as they do
            // when a rank dies or wedges.
            self.stalled = true;
        }
        if self.stalled {
            return Ok(());
        }
        self.inner.launch(op, idx)
    }
    fn marks_begin(&mut self, n: usize) -> Result<(), EngineError> {
        self.inner.marks_begin(n)
    }
    fn mark(&mut self, i: usize) -> Result<(), EngineError> {
        self.inner.mark(i)
    }
    fn marked(&mut self) -> Result<Vec<f64>, EngineError> {
        self.inner.marked()
    }
    fn capture_begin(&mut self) -> Result<(), EngineError> {
        self.inner.capture_begin()
    }
    fn capture_end(&mut self) -> Result<(), EngineError> {
        self.inner.capture_end()
    }
    fn replay(&mut self) -> Result<(), EngineError> {
        self.inner.replay()
    }
    fn wait(&mut self) -> Result<(), EngineError> {
        self.inner.wait()
    }
    fn verify(&mut self, op: &OpSpec, seed: u64) -> Result<u64, EngineError> {
        if self.fault == Some(FaultKind::Corrupt) && op.counts.param > 0 {
            self.inner.flip_output_element(op)?;
        }
        self.inner.verify(op, seed)
    }
    fn flip_output_element(&mut self, op: &OpSpec) -> Result<(), EngineError> {
        self.inner.flip_output_element(op)
    }
    fn fault_device(&mut self) -> Result<(), EngineError> {
        self.inner.fault_device()
    }
    fn reset(&mut self) {
        self.inner.reset()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        assert_eq!(
            Fault::parse("stall:rank=1:job=bcast"),
            Some(Fault {
                kind: FaultKind::Stall,
                rank: Some(1),
                job: Some("bcast".into())
            })
        );
        assert_eq!(Fault::parse("corrupt").unwrap().rank, Some(0));
        let f = Fault::parse("stall-start:rank=1").unwrap();
        assert_eq!((f.kind, f.rank), (FaultKind::StallStart, Some(1)));
        let f = Fault::parse("stop-start:rank=3").unwrap();
        assert_eq!((f.kind, f.rank), (FaultKind::StopStart, Some(3)));
        assert_eq!(Fault::parse("explode"), None);
        assert_eq!(Fault::parse("corrupt:rank=x"), None);
        let f = Fault::parse("corrupt:rank=1:job=ar").unwrap();
        assert!(f.applies(1, "ar[dtype=float]") && !f.applies(0, "ar") && !f.applies(1, "bcast"));
    }

    #[test]
    fn slow_hits_every_rank_of_its_process_unless_told() {
        let f = Fault::parse("slow").unwrap();
        assert_eq!(f.kind, FaultKind::Slow { us: 200 });
        assert_eq!(f.rank, None);
        assert!(f.applies(0, "x") && f.applies(7, "x"));
        let f = Fault::parse("slow:us=300:rank=6:job=or").unwrap();
        assert_eq!(f.kind, FaultKind::Slow { us: 300 });
        assert!(f.applies(6, "ar[split=or 1]") && !f.applies(7, "ar[split=or 1]"));
        assert!(!f.applies(6, "ar[split=div 4]"));
        let f = Fault::parse("late:us=3000:rank=2").unwrap();
        assert_eq!((f.kind, f.rank), (FaultKind::Late { us: 3000 }, Some(2)));
        assert_eq!(
            Fault::parse("late").unwrap().kind,
            FaultKind::Late { us: 1000 }
        );
        // Strict: a typo or a field another fault does not take must not fake a fault.
        for bad in [
            "slow:us=",
            "slow:us=-5",
            "slow:us=fast",
            "slow:ms=3",
            "stall:us=300",
            "slow:us",
            "late:us=soon",
        ] {
            assert_eq!(Fault::parse(bad), None, "{bad}");
        }
    }
}
