//! Fixed node-set schedules: which nodes run together, round by round. The sets of one round
//! are disjoint, so they run concurrently and a bad node costs only the sets it is in.
//!
//! Nodes are indices into the node list (`0..n`); naming them is the caller's business, so the
//! same schedule serves hostnames from a hostlist, a hostfile or the allocation.

use serde::Serialize;
use thiserror::Error;

/// Most node sets one schedule may hold: all pairs of 1 414 nodes, far more steps than Slurm
/// allows one job by default (`MaxStepCount` 40 000), so a larger sweep is a plan mistake.
pub const MAX_SETS: usize = 1_000_000;
/// Most rounds a random pairing may ask for.
pub const MAX_RANDOM_ROUNDS: u32 = 10_000;

/// Which node sets a test runs on (`over:` in the plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Over {
    /// The whole node list as one job: today's behaviour and phase C.
    All,
    /// Every node alone, all at once: phase A.
    EachNode,
    /// Node pairs: phase B.
    Pairs(Pairing),
    /// Adaptive fault isolation (see `isolate`): rounds depend on earlier outcomes.
    Isolate,
}

/// Which pairs `over: pairs` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "pairing")]
pub enum Pairing {
    /// Every pair exactly once: N−1 rounds (N when N is odd) by the circle method.
    All,
    /// `rounds` rounds, each a random disjoint pairing drawn from `seed`.
    Random { rounds: u32, seed: u64 },
    /// Neighbours in node-list order, the last wrapping to the first.
    Ring,
}

/// One round: disjoint node sets that run at the same time, and the nodes that sit it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Round {
    /// Each set ascending; sets in a stable order.
    pub sets: Vec<Vec<usize>>,
    /// Nodes of the list in no set this round (the bye of an odd pairing).
    pub idle: Vec<usize>,
}

impl Round {
    /// The sets still worth running once some nodes are proven dead (did not start, or hung
    /// and were timed out as dead), and the sets skipped because they hold one: a dead node
    /// costs only its own sets, and later rounds do not wait on it.
    pub fn without_dead(&self, dead: &[bool]) -> (Vec<Vec<usize>>, Vec<Vec<usize>>) {
        self.sets
            .iter()
            .cloned()
            .partition(|s| s.iter().all(|&i| !dead.get(i).copied().unwrap_or(false)))
    }

    fn new(n: usize, sets: Vec<Vec<usize>>) -> Round {
        let mut used = vec![false; n];
        for s in &sets {
            for &i in s {
                used[i] = true;
            }
        }
        let idle = (0..n).filter(|&i| !used[i]).collect();
        Round { sets, idle }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ScheduleError {
    #[error("`over: {over}` needs at least {need} nodes; the node list has {have}")]
    TooFewNodes {
        over: &'static str,
        need: usize,
        have: usize,
    },
    #[error("`over: {over}` on {nodes} nodes makes {sets} node sets; at most {MAX_SETS}")]
    TooManySets {
        over: &'static str,
        nodes: usize,
        sets: u128,
    },
    #[error("`over: isolate` is adaptive: its rounds follow from the outcomes of earlier ones")]
    Adaptive,
}

impl Over {
    /// The plan spelling, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Over::All => "all",
            Over::EachNode => "each-node",
            Over::Pairs(Pairing::All) => "pairs",
            Over::Pairs(Pairing::Random { .. }) => "pairs (random rounds)",
            Over::Pairs(Pairing::Ring) => "pairs: ring",
            Over::Isolate => "isolate",
        }
    }

    /// Fewest nodes this makes sense on.
    pub fn min_nodes(&self) -> usize {
        match self {
            Over::All | Over::EachNode => 1,
            Over::Pairs(_) | Over::Isolate => 2,
        }
    }

    /// How many sets the schedule holds on `n` nodes, without building it.
    pub fn set_count(&self, n: usize) -> Option<u128> {
        let n128 = n as u128;
        Some(match self {
            Over::All => 1,
            Over::EachNode => n128,
            Over::Pairs(Pairing::All) => n128 * n128.saturating_sub(1) / 2,
            Over::Pairs(Pairing::Random { rounds, .. }) => *rounds as u128 * (n128 / 2),
            Over::Pairs(Pairing::Ring) => match n {
                0 | 1 => 0,
                2 => 1,
                _ => n128,
            },
            Over::Isolate => return None,
        })
    }
}

/// The rounds of a fixed schedule on `n` nodes.
pub fn rounds(over: &Over, n: usize) -> Result<Vec<Round>, ScheduleError> {
    if n < over.min_nodes() {
        return Err(ScheduleError::TooFewNodes {
            over: over.name(),
            need: over.min_nodes(),
            have: n,
        });
    }
    if let Some(sets) = over.set_count(n)
        && sets > MAX_SETS as u128
    {
        return Err(ScheduleError::TooManySets {
            over: over.name(),
            nodes: n,
            sets,
        });
    }
    Ok(match *over {
        Over::All => vec![Round::new(n, vec![(0..n).collect()])],
        Over::EachNode => vec![Round::new(n, (0..n).map(|i| vec![i]).collect())],
        Over::Pairs(Pairing::All) => circle(n),
        Over::Pairs(Pairing::Random { rounds, seed }) => random_pairings(n, rounds, seed),
        Over::Pairs(Pairing::Ring) => ring(n),
        Over::Isolate => return Err(ScheduleError::Adaptive),
    })
}

fn pair(a: usize, b: usize) -> Vec<usize> {
    vec![a.min(b), a.max(b)]
}

/// The circle method (round-robin tournament): node 0 stays put, the others rotate one place
/// per round, and position i meets position m−1−i. Every pair meets exactly once in m−1 rounds,
/// m = n rounded up to even; with odd n the phantom m−1th node gives one bye per round.
fn circle(n: usize) -> Vec<Round> {
    let m = n + n % 2;
    let mut out = Vec::with_capacity(m - 1);
    for r in 0..m - 1 {
        // Position 0 is node 0; position p ≥ 1 holds node 1 + (p − 1 + r) mod (m − 1).
        let at = |p: usize| {
            if p == 0 { 0 } else { 1 + (p - 1 + r) % (m - 1) }
        };
        let mut sets: Vec<Vec<usize>> = (0..m / 2)
            .map(|i| (at(i), at(m - 1 - i)))
            .filter(|&(a, b)| a < n && b < n)
            .map(|(a, b)| pair(a, b))
            .collect();
        sets.sort();
        out.push(Round::new(n, sets));
    }
    out
}

/// Neighbours: (0,1), (1,2), …, (n−1,0), coloured into disjoint rounds: two for even n, three
/// for odd n (an odd cycle needs three), one for n = 2.
fn ring(n: usize) -> Vec<Round> {
    if n == 2 {
        return vec![Round::new(n, vec![vec![0, 1]])];
    }
    let edges: Vec<(usize, usize)> = (0..n).map(|i| (i, (i + 1) % n)).collect();
    let colour = |i: usize| if n % 2 == 1 && i == n - 1 { 2 } else { i % 2 };
    let colours = if n % 2 == 1 { 3 } else { 2 };
    (0..colours)
        .map(|c| {
            let mut sets: Vec<Vec<usize>> = edges
                .iter()
                .enumerate()
                .filter(|(i, _)| colour(*i) == c)
                .map(|(_, &(a, b))| pair(a, b))
                .collect();
            sets.sort();
            Round::new(n, sets)
        })
        .collect()
}

/// A small deterministic generator (SplitMix64): the same seed gives the same pairing on every
/// machine and every baton version that keeps this function, so a recorded seed reproduces a run.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0), by rejection so no value is favoured.
    pub fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let v = self.next_u64();
            if v < zone {
                return v % n;
            }
        }
    }
}

/// `rounds` random disjoint pairings. Each round pairs nodes greedily in a random order, avoiding
/// pairs already run, over a few draws, and keeps the draw that repeats the fewest: K rounds
/// cover K·n/2 distinct pairs whenever the greedy pass finds them.
fn random_pairings(n: usize, rounds: u32, seed: u64) -> Vec<Round> {
    const DRAWS: usize = 8;
    let mut rng = SplitMix64::new(seed);
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(rounds as usize);
    for _ in 0..rounds {
        let mut best: Option<(usize, Vec<Vec<usize>>)> = None;
        for _ in 0..DRAWS {
            let mut order: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                order.swap(i, rng.below(i as u64 + 1) as usize);
            }
            // Greedy: each unpaired node takes the next unpaired one it has not met yet.
            let mut taken = vec![false; n];
            let mut sets: Vec<Vec<usize>> = Vec::with_capacity(n / 2);
            for (k, &a) in order.iter().enumerate() {
                if taken[a] {
                    continue;
                }
                let free = || order[k + 1..].iter().copied().filter(|&b| !taken[b]);
                let Some(b) = free()
                    .find(|&b| !seen.contains(&pair(a, b)))
                    .or_else(|| free().next())
                else {
                    break;
                };
                taken[a] = true;
                taken[b] = true;
                sets.push(pair(a, b));
            }
            let repeats = sets.iter().filter(|s| seen.contains(*s)).count();
            if best.as_ref().is_none_or(|(r, _)| repeats < *r) {
                best = Some((repeats, sets));
            }
        }
        let mut sets = best.map(|b| b.1).unwrap_or_default();
        sets.sort();
        seen.extend(sets.iter().cloned());
        out.push(Round::new(n, sets));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn assert_disjoint(r: &Round, n: usize) {
        let mut seen = HashSet::new();
        for s in &r.sets {
            for &i in s {
                assert!(i < n);
                assert!(seen.insert(i), "node {i} twice in one round");
            }
        }
        for &i in &r.idle {
            assert!(seen.insert(i), "idle node {i} is also in a set");
        }
        assert_eq!(seen.len(), n);
    }

    #[test]
    fn all_pairs_meet_exactly_once_in_the_fewest_rounds() {
        for n in 2..=40 {
            let rs = rounds(&Over::Pairs(Pairing::All), n).unwrap();
            assert_eq!(rs.len(), if n % 2 == 0 { n - 1 } else { n }, "n={n}");
            let mut pairs = HashSet::new();
            for r in &rs {
                assert_disjoint(r, n);
                assert_eq!(r.sets.len(), n / 2);
                assert_eq!(r.idle.len(), n % 2, "odd n has one bye per round");
                for s in &r.sets {
                    assert_eq!(s.len(), 2);
                    assert!(pairs.insert(s.clone()), "n={n}: pair {s:?} twice");
                }
            }
            assert_eq!(pairs.len(), n * (n - 1) / 2);
        }
    }

    #[test]
    fn dead_nodes_skip_only_their_own_sets() {
        let rs = rounds(&Over::Pairs(Pairing::All), 6).unwrap();
        let mut dead = vec![false; 6];
        dead[3] = true;
        for r in &rs {
            let (run, skipped) = r.without_dead(&dead);
            assert_eq!(skipped.len(), 1, "node 3 is in one pair per round");
            assert!(skipped[0].contains(&3));
            assert_eq!(run.len(), 2);
            assert!(run.iter().all(|s| !s.contains(&3)));
        }
    }

    #[test]
    fn each_node_and_all() {
        let r = rounds(&Over::EachNode, 5).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].sets, vec![vec![0], vec![1], vec![2], vec![3], vec![4]]);
        let r = rounds(&Over::All, 3).unwrap();
        assert_eq!(r[0].sets, vec![vec![0, 1, 2]]);
        assert!(r[0].idle.is_empty());
    }

    #[test]
    fn ring_covers_neighbours_in_two_or_three_rounds() {
        for n in 2..=40 {
            let rs = rounds(&Over::Pairs(Pairing::Ring), n).unwrap();
            let want = match n {
                2 => 1,
                _ if n % 2 == 0 => 2,
                _ => 3,
            };
            assert_eq!(rs.len(), want, "n={n}");
            let mut pairs = HashSet::new();
            for r in &rs {
                assert_disjoint(r, n);
                pairs.extend(r.sets.iter().cloned());
            }
            let neighbours: HashSet<Vec<usize>> = (0..n).map(|i| pair(i, (i + 1) % n)).collect();
            assert_eq!(pairs, neighbours, "n={n}");
        }
    }

    #[test]
    fn random_pairings_are_disjoint_seeded_and_spread() {
        let over = Over::Pairs(Pairing::Random { rounds: 5, seed: 7 });
        for n in 2..=40 {
            let rs = rounds(&over, n).unwrap();
            assert_eq!(rs.len(), 5);
            let mut pairs = HashSet::new();
            for r in &rs {
                assert_disjoint(r, n);
                assert_eq!(r.sets.len(), n / 2);
                pairs.extend(r.sets.iter().cloned());
            }
            if n >= 16 {
                assert_eq!(
                    pairs.len(),
                    5 * (n / 2),
                    "n={n}: repeated a pair needlessly"
                );
            }
            assert_eq!(rs, rounds(&over, n).unwrap(), "same seed, same rounds");
        }
        let other = Over::Pairs(Pairing::Random { rounds: 5, seed: 8 });
        assert_ne!(rounds(&over, 32).unwrap(), rounds(&other, 32).unwrap());
    }

    #[test]
    fn refuses_too_few_nodes_and_too_many_sets() {
        assert!(matches!(
            rounds(&Over::Pairs(Pairing::All), 1),
            Err(ScheduleError::TooFewNodes {
                need: 2,
                have: 1,
                ..
            })
        ));
        assert!(matches!(
            rounds(&Over::Pairs(Pairing::All), 2000),
            Err(ScheduleError::TooManySets { .. })
        ));
        assert_eq!(rounds(&Over::Isolate, 8), Err(ScheduleError::Adaptive));
    }
}
