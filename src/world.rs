//! Coordination among the ranks of a run — threads of one process, MPI processes or the TCP
//! rendezvous — kept apart from data movement so the sweep, aggregation and verification code is
//! shared by every backend. Below both the runner and the rendezvous, which implements it.

/// What the sweep needs from the set of all ranks taking part.
pub trait World {
    /// Plan rank of this participant (global, numbered node by node).
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    fn barrier(&self);
    /// Every rank's value, indexed by plan rank, on every rank.
    fn all_gather_f64(&self, v: f64) -> Vec<f64>;
    fn all_gather_u64(&self, v: u64) -> Vec<u64>;
    /// Every rank's string (hostnames, device descriptions) on every rank.
    fn all_gather_string(&self, s: &str) -> Vec<String>;
    /// Rank 0's `data` on every rank (how NCCL's unique id reaches the other ranks).
    fn broadcast_bytes(&self, data: &mut [u8]);
    /// While a job measures, its watchdog bounds every wait: a world that bounds its own waits
    /// between jobs allows `Some(limit)` (longer than the watchdog's) then, and its own bound
    /// again after `None`.
    fn job_limit(&self, _limit: Option<std::time::Duration>) {}
    /// Whether its waits between jobs end by themselves, naming the rank that did not come (the
    /// TCP rendezvous); an MPI world's or threads' wait only when every rank arrives.
    fn bounds_its_waits(&self) -> bool {
        false
    }
}

/// A world of one rank (for tests and single-rank runs).
pub struct Solo;

impl World for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn barrier(&self) {}
    fn all_gather_f64(&self, v: f64) -> Vec<f64> {
        vec![v]
    }
    fn all_gather_u64(&self, v: u64) -> Vec<u64> {
        vec![v]
    }
    fn all_gather_string(&self, s: &str) -> Vec<String> {
        vec![s.to_string()]
    }
    fn broadcast_bytes(&self, _: &mut [u8]) {}
}

/// A world behind a reference (`&dyn RankWorld`) is the world itself.
impl<T: World + ?Sized> World for &T {
    fn rank(&self) -> usize {
        (**self).rank()
    }
    fn size(&self) -> usize {
        (**self).size()
    }
    fn barrier(&self) {
        (**self).barrier()
    }
    fn all_gather_f64(&self, v: f64) -> Vec<f64> {
        (**self).all_gather_f64(v)
    }
    fn all_gather_u64(&self, v: u64) -> Vec<u64> {
        (**self).all_gather_u64(v)
    }
    fn all_gather_string(&self, s: &str) -> Vec<String> {
        (**self).all_gather_string(s)
    }
    fn broadcast_bytes(&self, data: &mut [u8]) {
        (**self).broadcast_bytes(data)
    }
    fn job_limit(&self, limit: Option<std::time::Duration>) {
        (**self).job_limit(limit)
    }
    fn bounds_its_waits(&self) -> bool {
        (**self).bounds_its_waits()
    }
}
