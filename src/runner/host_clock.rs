//! A rank's lateness in the timed loop, beside its per-iteration times (`iterations: true`):
//! the host time from the return of one iteration's call to the start of the next (for the
//! first, from the barrier before the loop). Ranks of one communicator wait for each other, so
//! their iteration times equalise and cannot say which rank the others waited for; where they
//! wait can. A rank that arrives late spends its lateness here, between calls; its peers spend
//! it inside the call, waiting (the late arriver waits least).
//!
//! What it cannot see, measured on the simulated cluster (4 nodes, one rank each, all_reduce
//! 256K, 200 iterations, one node under a 10% CPU quota): the kernel freezes a throttled rank
//! where it next enters the scheduler, and under Open MPI's yielding wait that is inside the
//! call, so its time between calls stayed at most 8 us like its peers' while every rank's
//! iteration p99 was ~73 ms. (A first try read the thread's CPU clock between calls; that
//! read is such an entry, the freezes moved there and the throttled rank showed 62 ms: an
//! artefact of the probe, which is why nothing else is read here.) Its off-CPU time named it,
//! but only 1.4x its peers': on shared cores the waiting peers are descheduled nearly as long.
//! A CPU-slow node shows across node sets instead (`straggler: … fleet median`).
//!
//! The wall clock is read at two points per iteration only when per-iteration timing is on; the
//! loop without it reads nothing more than before.

use std::time::Instant;

/// Readings of one timed loop, room made before it so the loop does not allocate: the start of
/// every iteration, and the return of the call before it (the barrier's, for the first).
#[derive(Debug, Default)]
pub struct Stamps {
    room: usize,
    starts: Vec<Instant>,
    returns: Vec<Instant>,
}

impl Stamps {
    pub fn with_room(iters: usize) -> Stamps {
        Stamps {
            room: iters,
            starts: Vec::with_capacity(iters),
            returns: Vec::with_capacity(iters),
        }
    }

    /// An iteration starts its calls.
    pub fn start(&mut self) {
        if self.starts.len() < self.room {
            self.starts.push(Instant::now());
        }
    }

    /// The calls before the next iteration returned (or the barrier before the loop did).
    pub fn returned(&mut self) {
        if self.returns.len() < self.room {
            self.returns.push(Instant::now());
        }
    }

    /// µs between calls, one per iteration.
    pub fn between_calls_us(&self) -> Vec<f64> {
        self.returns
            .iter()
            .zip(&self.starts)
            .map(|(r, s)| s.saturating_duration_since(*r).as_secs_f64() * 1e6)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_time_outside_the_calls_is_what_is_measured() {
        let mut s = Stamps::with_room(3);
        for late in [0u64, 20, 0] {
            s.returned();
            std::thread::sleep(Duration::from_millis(late));
            s.start();
            // The call: its time must not count.
            std::thread::sleep(Duration::from_millis(10));
        }
        s.returned();
        s.start();
        let b = s.between_calls_us();
        assert_eq!(b.len(), 3, "room for the loop's iterations, no more: {b:?}");
        assert!(b[1] >= 20_000.0, "{b:?}");
        assert!(b[0] < 5_000.0 && b[2] < 5_000.0, "{b:?}");
    }
}
