//! Node evidence around every job: one rank per node (the first rank of its host, local rank
//! 0) takes a probe snapshot before and after the job, at its boundaries and never inside the
//! timed loop, and every snapshot reaches rank 0 in one gather, which journals them and the
//! delta. The workers already run on every node, so no launcher step is added. Every rank
//! calls [`Around::gather`] at the same points, so the decision to take evidence must be the
//! same on all of them (it comes from the plan and the command line).

use std::time::{Duration, SystemTime};

use crate::probe::{self, Snapshot};
use crate::results::evidence::NodeEvidence;
use crate::world::World;

/// Kernel log lines are kept from a little before the job's start: the log's clock and the
/// wall clock drift apart by milliseconds, and a line the job caused must not be lost.
const LOG_SLACK: Duration = Duration::from_secs(1);

/// How this rank takes part in a run's evidence.
pub struct Around {
    /// This rank is its host's first, and takes the snapshots.
    taker: bool,
    /// Ask NVML (the job's engine uses GPUs).
    gpus: bool,
}

impl Around {
    /// `None` when the run takes no evidence; `hosts` is every rank's host, by rank.
    pub fn new(on: bool, me: usize, hosts: &[String], gpus: bool) -> Option<Around> {
        on.then(|| Around {
            taker: hosts.iter().position(|h| *h == hosts[me]) == Some(me),
            gpus,
        })
    }

    /// Every host's snapshot, on rank 0 (empty elsewhere), named as `hosts` (by rank) names
    /// it: kernel log lines from `since` on.
    pub fn gather<W: World>(
        &self,
        world: &W,
        hosts: &[String],
        since: SystemTime,
    ) -> Vec<(String, Snapshot)> {
        let mine = if self.taker {
            let s = probe::take(&probe::Options {
                since: Some(since - LOG_SLACK),
                no_gpus: !self.gpus,
                no_helpers: true,
                ..Default::default()
            });
            serde_json::to_string(&s).unwrap_or_default()
        } else {
            String::new()
        };
        let all = world.all_gather_string(&mine);
        if world.rank() != 0 {
            return Vec::new();
        }
        all.iter()
            .zip(hosts)
            .filter(|(s, _)| !s.is_empty())
            .filter_map(|(s, h)| Some((h.clone(), serde_json::from_str::<Snapshot>(s).ok()?)))
            .collect()
    }
}

/// The evidence at a job's start: each node's before.
pub fn started(snaps: Vec<(String, Snapshot)>) -> Vec<NodeEvidence> {
    snaps
        .into_iter()
        .map(|(host, s)| NodeEvidence {
            host,
            before: Some(s),
            after: None,
            delta: None,
            unavailable: None,
            nccl: None,
        })
        .collect()
}

/// The evidence at a job's end: each node's before (from `start`), after and what moved.
pub fn ended(start: &[NodeEvidence], snaps: Vec<(String, Snapshot)>) -> Vec<NodeEvidence> {
    snaps
        .into_iter()
        .map(|(host, after)| {
            let before = start
                .iter()
                .find(|e| e.host == host)
                .and_then(|e| e.before.clone());
            let delta = before.as_ref().map(|b| probe::delta::delta(b, &after));
            NodeEvidence {
                host,
                before,
                after: Some(after),
                delta,
                unavailable: None,
                nccl: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_rank_of_each_host_takes_the_snapshots() {
        let hosts: Vec<String> = ["a", "a", "b", "b", "a"].map(String::from).to_vec();
        let takers: Vec<bool> = (0..5)
            .map(|r| Around::new(true, r, &hosts, false).unwrap().taker)
            .collect();
        assert_eq!(takers, [true, false, true, false, false]);
        assert!(Around::new(false, 0, &hosts, false).is_none());
    }

    #[test]
    fn a_solo_world_gathers_this_nodes_snapshot_and_its_delta() {
        let hosts = ["me".to_string()];
        let a = Around::new(true, 0, &hosts, false).unwrap();
        let t0 = SystemTime::now();
        let start = started(a.gather(&crate::world::Solo, &hosts, t0));
        assert_eq!(start.len(), 1);
        assert_eq!(start[0].host, "me");
        let end = ended(&start, a.gather(&crate::world::Solo, &hosts, t0));
        assert!(end[0].before.is_some() && end[0].after.is_some());
        assert!(end[0].delta.is_some());
    }
}
