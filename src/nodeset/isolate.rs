//! Adaptive fault isolation (`over: isolate`): find the bad nodes of N in a handful of rounds
//! instead of the N−1 rounds of all pairs.
//!
//! A pure state machine: [`Isolator::next_round`] proposes disjoint node sets, the caller runs
//! them and hands the outcomes to [`Isolator::record`], until `next_round` says there is nothing
//! left to learn; [`Isolator::attribution`] then gives every node's verdict. It never runs
//! anything and never reads a clock, so the same outcomes always lead to the same rounds: a run
//! that was interrupted resumes by replaying the outcomes it recorded.
//!
//! The steps (docs/node-sets.md has the reasoning and round counts):
//! 1. Screen: every domain (rack, NVLink domain) or, without domains, groups of ⌈√N⌉ nodes.
//! 2. A failing set is examined: if there are enough known-good nodes, each of its unproven
//!    nodes is confirmed directly against one; otherwise it is bisected (at a domain boundary
//!    when it spans several) and the failing halves are examined in turn.
//! 3. When both halves of a failing set pass, the set is probed once more: failing again, it is
//!    a boundary fault between the two halves, named by both sides.
//! 4. Confirmation pairs a suspect with a node that passed; a suspect that fails is confirmed
//!    again with a second good node from another group, so a bad link to the first partner is
//!    not blamed on the suspect.
//! 5. When no work is left, the nodes still standing run once together (the playbook's "remove
//!    and prove"), which also catches faults between screening groups; a failure there is
//!    examined like any other.

use std::collections::{BTreeSet, VecDeque};

use thiserror::Error;

use super::attribution::{Attribution, Fault, SetOutcome, SetResult, attribute};

/// Most rounds one isolation may take; it stops there and leaves what is unproven as suspect.
pub const MAX_ROUNDS: u32 = 64;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum IsolateError {
    #[error("isolation needs at least 2 nodes; the node list has {0}")]
    TooFewNodes(usize),
    #[error("node {node} is in two domains")]
    TwoDomains { node: usize },
    #[error("node {node} is not in the node list of {n}")]
    OutOfRange { node: usize, n: usize },
    #[error("got {got} outcomes for a round of {want} node sets")]
    OutcomeCount { got: usize, want: usize },
    #[error("no round is waiting for outcomes")]
    NoRound,
    #[error("`Dead` names node {node}, which is not in its set")]
    DeadNotInSet { node: usize },
}

/// Work that leads to node sets.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    /// Run this set; examine it when it fails.
    Test(Vec<usize>),
    /// Two halves of a failing set; the ones that passed before are not run again.
    Split { a: Vec<usize>, b: Vec<usize> },
    /// Both halves passed: run their union once more.
    Probe { a: Vec<usize>, b: Vec<usize> },
    /// Pair `node` with a known-good node it has not been tried with.
    Confirm { node: usize, tried: Vec<usize> },
}

#[derive(Debug, Clone)]
pub struct Isolator {
    n: usize,
    /// Screening group (domain or chunk) of every node.
    group: Vec<usize>,
    /// Whether groups are real domains (then bisection cuts at their boundaries).
    domains: bool,
    queue: VecDeque<Item>,
    /// The proposed round: each item with its sets, waiting for outcomes.
    current: Option<Vec<(Item, Vec<Vec<usize>>)>>,
    history: Vec<SetOutcome>,
    good: Vec<bool>,
    dead: Vec<bool>,
    /// Confirmed against two good nodes and failed both times.
    failed: Vec<bool>,
    boundaries: Vec<Fault>,
    /// Node sets already run as the final check, so none runs twice.
    wholes: Vec<Vec<usize>>,
    round: u32,
}

impl Isolator {
    /// An isolation over nodes `0..n`. `domains` are disjoint node groups (racks, NVLink
    /// domains); nodes in none are screened in groups of about √N.
    pub fn new(n: usize, domains: &[Vec<usize>]) -> Result<Isolator, IsolateError> {
        if n < 2 {
            return Err(IsolateError::TooFewNodes(n));
        }
        let mut group = vec![usize::MAX; n];
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for d in domains {
            let mut g = Vec::new();
            for &i in d {
                if i >= n {
                    return Err(IsolateError::OutOfRange { node: i, n });
                }
                if group[i] != usize::MAX {
                    return Err(IsolateError::TwoDomains { node: i });
                }
                group[i] = groups.len();
                g.push(i);
            }
            if !g.is_empty() {
                g.sort();
                groups.push(g);
            }
        }
        let rest: Vec<usize> = (0..n).filter(|&i| group[i] == usize::MAX).collect();
        let size = (rest.len() as f64).sqrt().ceil().max(2.0) as usize;
        for chunk in rest.chunks(size) {
            groups.push(chunk.to_vec());
        }
        // A group of one node tests nothing between nodes: it joins its neighbour.
        let mut merged: Vec<Vec<usize>> = Vec::new();
        for g in groups {
            match merged.last_mut() {
                Some(last) if g.len() == 1 || last.len() == 1 => {
                    last.extend(g);
                    last.sort();
                }
                _ => merged.push(g),
            }
        }
        for (k, g) in merged.iter().enumerate() {
            for &i in g {
                group[i] = k;
            }
        }
        let mut wholes = Vec::new();
        if merged.len() == 1 {
            wholes.push(merged[0].clone());
        }
        Ok(Isolator {
            n,
            group,
            domains: !domains.is_empty(),
            queue: merged.into_iter().map(Item::Test).collect(),
            current: None,
            history: Vec::new(),
            good: vec![false; n],
            dead: vec![false; n],
            failed: vec![false; n],
            boundaries: Vec::new(),
            wholes,
            round: 0,
        })
    }

    /// Rounds proposed so far.
    pub fn rounds(&self) -> u32 {
        self.round
    }

    /// Every outcome recorded so far, in order.
    pub fn history(&self) -> &[SetOutcome] {
        &self.history
    }

    /// The next round's node sets, disjoint; `None` when isolation is over. Asking again before
    /// recording gives the same round.
    pub fn next_round(&mut self) -> Option<Vec<Vec<usize>>> {
        if let Some(cur) = &self.current {
            return Some(cur.iter().flat_map(|(_, s)| s.clone()).collect());
        }
        if self.round >= MAX_ROUNDS {
            return None;
        }
        let mut round = self.assemble();
        if round.is_empty() {
            // Whatever is left waits for a good partner that will never come.
            self.queue.clear();
            let whole: Vec<usize> = (0..self.n).filter(|&i| self.good[i]).collect();
            if whole.len() >= 2 && !self.wholes.contains(&whole) {
                self.wholes.push(whole.clone());
                self.queue.push_back(Item::Test(whole));
                round = self.assemble();
            }
        }
        if round.is_empty() {
            return None;
        }
        self.round += 1;
        let sets = round.iter().flat_map(|(_, s)| s.clone()).collect();
        self.current = Some(round);
        Some(sets)
    }

    /// Outcomes of the round [`next_round`](Self::next_round) proposed, one per set, in order.
    pub fn record(&mut self, results: &[SetResult]) -> Result<(), IsolateError> {
        let cur = self.current.as_ref().ok_or(IsolateError::NoRound)?;
        let want: usize = cur.iter().map(|(_, s)| s.len()).sum();
        if results.len() != want {
            return Err(IsolateError::OutcomeCount {
                got: results.len(),
                want,
            });
        }
        let sets = cur.iter().flat_map(|(_, s)| s);
        for (s, r) in sets.zip(results) {
            if let SetResult::Dead(d) = r
                && let Some(&node) = d.iter().find(|i| !s.contains(i))
            {
                return Err(IsolateError::DeadNotInSet { node });
            }
        }
        let cur = self.current.take().unwrap_or_default();
        let mut results = results.iter();
        for (item, sets) in cur {
            let got: Vec<SetResult> = results.by_ref().take(sets.len()).cloned().collect();
            for (s, r) in sets.iter().zip(&got) {
                self.history.push(SetOutcome {
                    round: self.round,
                    nodes: s.clone(),
                    result: r.clone(),
                });
                match r {
                    SetResult::Pass => s.iter().for_each(|&i| self.good[i] = true),
                    SetResult::Dead(d) => d.iter().for_each(|&i| self.dead[i] = true),
                    SetResult::Fail => {}
                }
            }
            self.resolve(item, &sets, &got);
        }
        Ok(())
    }

    /// Every node's verdict from the evidence so far, with the boundary faults found.
    pub fn attribution(&self) -> Attribution {
        let mut a = attribute(self.n, &self.history);
        // A link or set fault across a boundary is the boundary, already named.
        a.faults.retain(|f| {
            let nodes = f.nodes();
            !self.boundaries.iter().any(|b| match b {
                Fault::Boundary { a, b, .. } => {
                    nodes.iter().all(|i| a.contains(i) || b.contains(i))
                        && nodes.iter().any(|i| a.contains(i))
                        && nodes.iter().any(|i| b.contains(i))
                }
                _ => false,
            })
        });
        a.faults.extend(self.boundaries.iter().cloned());
        a
    }

    fn alive(&self, s: &[usize]) -> Vec<usize> {
        s.iter().copied().filter(|&i| !self.dead[i]).collect()
    }

    fn passed_before(&self, s: &[usize]) -> bool {
        self.history
            .iter()
            .any(|o| o.result == SetResult::Pass && o.nodes == s)
    }

    /// Takes from the queue every item whose sets fit beside those already taken.
    fn assemble(&mut self) -> Vec<(Item, Vec<Vec<usize>>)> {
        let mut busy = vec![false; self.n];
        let mut round = Vec::new();
        let mut waiting = VecDeque::new();
        while let Some(item) = self.queue.pop_front() {
            match self.sets_for(item, &busy) {
                Plan::Run(item, sets) => {
                    for &i in sets.iter().flatten() {
                        busy[i] = true;
                    }
                    round.push((item, sets));
                }
                Plan::Wait(item) => waiting.push_back(item),
                Plan::Replace(items) => {
                    for it in items.into_iter().rev() {
                        self.queue.push_front(it);
                    }
                }
                Plan::Drop => {}
            }
        }
        self.queue = waiting;
        round
    }

    fn sets_for(&self, item: Item, busy: &[bool]) -> Plan {
        let free = |s: &[usize]| s.iter().all(|&i| !busy[i]);
        match item {
            Item::Test(s) => {
                let s = self.alive(&s);
                match s.len() {
                    0 => Plan::Drop,
                    1 if self.good[s[0]] => Plan::Drop,
                    1 => Plan::Replace(vec![Item::Confirm {
                        node: s[0],
                        tried: vec![],
                    }]),
                    _ if free(&s) => Plan::Run(Item::Test(s.clone()), vec![s]),
                    _ => Plan::Wait(Item::Test(s)),
                }
            }
            Item::Split { a, b } => {
                let (a2, b2) = (self.alive(&a), self.alive(&b));
                if a2 != a || b2 != b {
                    let mut s = a2;
                    s.extend(b2);
                    s.sort();
                    return Plan::Replace(vec![Item::Test(s)]);
                }
                let sets: Vec<Vec<usize>> = [&a, &b]
                    .into_iter()
                    .filter(|h| !self.passed_before(h))
                    .cloned()
                    .collect();
                if sets.is_empty() {
                    return Plan::Replace(vec![Item::Probe { a, b }]);
                }
                if sets.iter().all(|s| free(s)) {
                    Plan::Run(Item::Split { a, b }, sets)
                } else {
                    Plan::Wait(Item::Split { a, b })
                }
            }
            Item::Probe { a, b } => {
                let mut s: Vec<usize> = a.iter().chain(&b).copied().collect();
                s.sort();
                if self.alive(&s) != s {
                    return Plan::Replace(vec![Item::Test(self.alive(&s))]);
                }
                if free(&s) {
                    Plan::Run(Item::Probe { a, b }, vec![s])
                } else {
                    Plan::Wait(Item::Probe { a, b })
                }
            }
            Item::Confirm { node, tried } => {
                if self.dead[node] || self.good[node] {
                    return Plan::Drop;
                }
                if busy[node] {
                    return Plan::Wait(Item::Confirm { node, tried });
                }
                match self.partner(node, &tried, busy) {
                    Some(g) => {
                        let set = vec![node.min(g), node.max(g)];
                        Plan::Run(Item::Confirm { node, tried }, vec![set])
                    }
                    None => Plan::Wait(Item::Confirm { node, tried }),
                }
            }
        }
    }

    /// A known-good, idle node for `node` to be confirmed against. The first comes from its own
    /// group, else the nearest group in node-list order (likely the same rack or leaf); the
    /// second from the other side of its group, so that a fault between two parts of the cluster
    /// cannot make both confirmations fail and blame a sound node.
    fn partner(&self, node: usize, tried: &[usize], busy: &[bool]) -> Option<usize> {
        let own = self.group[node] as i64;
        let ok = |g: &usize| {
            *g != node && self.good[*g] && !self.dead[*g] && !busy[*g] && !tried.contains(g)
        };
        let candidates = (0..self.n).filter(ok);
        match tried.first() {
            None => candidates.min_by_key(|&g| ((self.group[g] as i64 - own).abs(), g)),
            Some(&first) => {
                let first_side = (self.group[first] as i64 - own).signum();
                let tried_groups: BTreeSet<usize> = tried.iter().map(|&t| self.group[t]).collect();
                candidates.min_by_key(|&g| {
                    let side = (self.group[g] as i64 - own).signum();
                    let rank = if side == first_side {
                        2
                    } else if side == 0 {
                        1
                    } else {
                        0
                    };
                    (
                        rank,
                        tried_groups.contains(&self.group[g]),
                        (self.group[g] as i64 - own).abs(),
                        g,
                    )
                })
            }
        }
    }

    /// What an item's outcomes lead to.
    fn resolve(&mut self, item: Item, sets: &[Vec<usize>], got: &[SetResult]) {
        if got.iter().any(|r| matches!(r, SetResult::Dead(_))) {
            // The rest of the set is untested: the same work again, without the dead.
            self.queue.push_front(item);
            return;
        }
        let failed = |s: &[usize]| {
            sets.iter()
                .zip(got)
                .any(|(x, r)| x == s && *r == SetResult::Fail)
        };
        match item {
            Item::Test(s) => {
                if failed(&s) {
                    self.examine(s);
                }
            }
            Item::Split { a, b } => {
                let (fa, fb) = (failed(&a), failed(&b));
                if fa {
                    self.examine(a.clone());
                }
                if fb {
                    self.examine(b.clone());
                }
                if !fa && !fb {
                    self.queue.push_back(Item::Probe { a, b });
                }
            }
            Item::Probe { a, b } => {
                let s: Vec<usize> = sets[0].clone();
                if failed(&s) {
                    let k = self.history.len();
                    let first = self
                        .history
                        .iter()
                        .position(|o| o.nodes == s && o.result == SetResult::Fail);
                    let mut runs: Vec<usize> = first.into_iter().collect();
                    runs.push(k - 1);
                    runs.dedup();
                    self.boundaries.push(Fault::Boundary { a, b, sets: runs });
                }
            }
            Item::Confirm { node, mut tried } => {
                let s = &sets[0];
                if failed(s) {
                    let partner = s.iter().copied().find(|&i| i != node).unwrap_or(node);
                    tried.push(partner);
                    if tried.len() < 2 {
                        self.queue.push_back(Item::Confirm { node, tried });
                    } else {
                        self.failed[node] = true;
                    }
                }
            }
        }
    }

    /// A failing set: confirm its unproven nodes directly when good partners are plentiful,
    /// otherwise bisect it.
    fn examine(&mut self, s: Vec<usize>) {
        let unknown: Vec<usize> = s
            .iter()
            .copied()
            .filter(|&i| !self.good[i] && !self.dead[i])
            .collect();
        let good = self.good.iter().filter(|g| **g).count();
        if unknown.is_empty() {
            // Every node passed elsewhere: the fault is between them. Bisect to find the cut.
            if s.len() >= 4 {
                let (a, b) = self.halves(&s);
                self.queue.push_back(Item::Split { a, b });
            }
            return;
        }
        if unknown.len() <= 3 || unknown.len() * 2 <= good || s.len() < 4 {
            for node in unknown {
                self.queue.push_back(Item::Confirm {
                    node,
                    tried: vec![],
                });
            }
        } else {
            let (a, b) = self.halves(&s);
            self.queue.push_back(Item::Split { a, b });
        }
    }

    /// Two halves of `s`: at the domain boundary nearest the middle when `s` spans domains,
    /// otherwise at the middle of the node list order.
    fn halves(&self, s: &[usize]) -> (Vec<usize>, Vec<usize>) {
        let mut s = s.to_vec();
        s.sort_by_key(|&i| (self.group[i], i));
        let mid = s.len() / 2;
        let cut = if self.domains {
            (1..s.len())
                .filter(|&k| self.group[s[k]] != self.group[s[k - 1]])
                .min_by_key(|&k| k.abs_diff(mid))
                .unwrap_or(mid)
        } else {
            s.sort();
            mid
        };
        let (mut a, mut b) = (s[..cut].to_vec(), s[cut..].to_vec());
        a.sort();
        b.sort();
        (a, b)
    }
}

enum Plan {
    Run(Item, Vec<Vec<usize>>),
    Wait(Item),
    Replace(Vec<Item>),
    Drop,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodeset::attribution::Verdict;

    /// A simulated cluster: bad nodes fail every set they are in, dead nodes never start, and a
    /// bad boundary fails every set with nodes on both of its sides.
    #[derive(Default)]
    struct Oracle {
        bad: Vec<usize>,
        dead: Vec<usize>,
        cuts: Vec<(Vec<usize>, Vec<usize>)>,
    }

    impl Oracle {
        fn run(&self, s: &[usize]) -> SetResult {
            let dead: Vec<usize> = s
                .iter()
                .copied()
                .filter(|i| self.dead.contains(i))
                .collect();
            if !dead.is_empty() {
                return SetResult::Dead(dead);
            }
            let spans = self
                .cuts
                .iter()
                .any(|(a, b)| s.iter().any(|i| a.contains(i)) && s.iter().any(|i| b.contains(i)));
            if spans || s.iter().any(|i| self.bad.contains(i)) {
                SetResult::Fail
            } else {
                SetResult::Pass
            }
        }

        fn isolate(&self, n: usize, domains: &[Vec<usize>]) -> (Isolator, Attribution) {
            let mut iso = Isolator::new(n, domains).unwrap();
            while let Some(sets) = iso.next_round() {
                let mut seen = BTreeSet::new();
                for &i in sets.iter().flatten() {
                    assert!(seen.insert(i), "node {i} twice in round {}", iso.rounds());
                }
                let results: Vec<SetResult> = sets.iter().map(|s| self.run(s)).collect();
                iso.record(&results).unwrap();
            }
            let a = iso.attribution();
            (iso, a)
        }
    }

    fn log2_ceil(n: usize) -> u32 {
        usize::BITS - (n - 1).leading_zeros()
    }

    #[test]
    fn a_healthy_cluster_passes_in_two_rounds() {
        for n in [2, 3, 8, 32, 1000] {
            let (iso, a) = Oracle::default().isolate(n, &[]);
            assert_eq!(a.with(Verdict::Passed).len(), n);
            assert!(a.faults.is_empty());
            assert!(iso.rounds() <= 2, "n={n}: {} rounds", iso.rounds());
        }
    }

    #[test]
    fn one_bad_node_is_named_and_confirmed_quickly() {
        for n in [8, 32, 128, 1000] {
            for bad in [0, n / 3, n - 1] {
                let (iso, a) = Oracle {
                    bad: vec![bad],
                    ..Default::default()
                }
                .isolate(n, &[]);
                assert_eq!(a.with(Verdict::Failed), [bad], "n={n}");
                assert_eq!(a.with(Verdict::Passed).len(), n - 1, "n={n}");
                let r = &a.nodes[bad];
                let pairs = r
                    .isolated_by
                    .iter()
                    .filter(|&&k| iso.history()[k].nodes.len() == 2)
                    .count();
                assert!(pairs >= 2, "n={n}: confirmed against two good nodes");
                assert!(
                    iso.rounds() <= log2_ceil(n) + 3,
                    "n={n}: {} rounds",
                    iso.rounds()
                );
            }
        }
    }

    #[test]
    fn two_bad_nodes_are_both_named() {
        for (n, bad) in [
            (8, vec![1, 2]),
            (8, vec![0, 7]),
            (32, vec![3, 20]),
            (128, vec![5, 6]),
        ] {
            let (iso, a) = Oracle {
                bad: bad.clone(),
                ..Default::default()
            }
            .isolate(n, &[]);
            assert_eq!(a.with(Verdict::Failed), bad, "n={n}");
            assert_eq!(a.with(Verdict::Suspect), Vec::<usize>::new());
            assert!(iso.rounds() <= log2_ceil(n) + 4, "n={n}: {}", iso.rounds());
        }
    }

    #[test]
    fn a_bad_boundary_between_healthy_halves_names_both_sides() {
        let a_side: Vec<usize> = (0..4).collect();
        let b_side: Vec<usize> = (4..8).collect();
        let oracle = Oracle {
            cuts: vec![(a_side.clone(), b_side.clone())],
            ..Default::default()
        };
        for domains in [vec![], vec![a_side.clone(), b_side.clone()]] {
            let (iso, a) = oracle.isolate(8, &domains);
            assert_eq!(a.with(Verdict::Passed).len(), 8, "no node is blamed");
            let boundaries: Vec<&Fault> = a
                .faults
                .iter()
                .filter(|f| matches!(f, Fault::Boundary { .. }))
                .collect();
            assert_eq!(boundaries.len(), 1, "{:?}", a.faults);
            assert!(
                matches!(boundaries[0], Fault::Boundary { a, b, sets } if *a == a_side && *b == b_side && sets.len() == 2)
            );
            assert!(iso.rounds() <= 6, "{} rounds", iso.rounds());
        }
    }

    #[test]
    fn a_dead_node_costs_only_its_sets() {
        let (iso, a) = Oracle {
            dead: vec![5],
            ..Default::default()
        }
        .isolate(8, &[]);
        assert_eq!(a.with(Verdict::Failed), [5]);
        assert_eq!(a.with(Verdict::Passed).len(), 7);
        let after: Vec<&SetOutcome> = iso
            .history()
            .iter()
            .skip_while(|o| !matches!(o.result, SetResult::Dead(_)))
            .skip(1)
            .collect();
        assert!(
            after.iter().all(|o| !o.nodes.contains(&5)),
            "never scheduled again"
        );
    }

    #[test]
    fn a_dead_node_and_a_bad_node_together() {
        let (_, a) = Oracle {
            dead: vec![2],
            bad: vec![9],
            ..Default::default()
        }
        .isolate(32, &[]);
        assert_eq!(a.with(Verdict::Failed), [2, 9]);
    }

    #[test]
    fn screening_follows_domains() {
        let domains = vec![
            (0..6).collect::<Vec<_>>(),
            (6..12).collect(),
            (12..16).collect(),
        ];
        let mut iso = Isolator::new(16, &domains).unwrap();
        assert_eq!(iso.next_round().unwrap(), domains);
    }

    #[test]
    fn everything_bad_leaves_suspects_not_guesses() {
        let (_, a) = Oracle {
            bad: (0..8).collect(),
            ..Default::default()
        }
        .isolate(8, &[]);
        assert_eq!(a.with(Verdict::Suspect).len(), 8);
    }

    #[test]
    fn record_checks_what_it_is_given() {
        let mut iso = Isolator::new(4, &[]).unwrap();
        assert_eq!(iso.record(&[]), Err(IsolateError::NoRound));
        let r = iso.next_round().unwrap();
        assert_eq!(
            iso.next_round().unwrap(),
            r,
            "asking twice gives the same round"
        );
        assert!(matches!(
            iso.record(&[]),
            Err(IsolateError::OutcomeCount { got: 0, .. })
        ));
        assert!(matches!(
            Isolator::new(4, &[vec![0, 1], vec![1, 2]]),
            Err(IsolateError::TwoDomains { node: 1 })
        ));
        assert!(matches!(
            Isolator::new(1, &[]),
            Err(IsolateError::TooFewNodes(1))
        ));
    }

    /// Prints the rounds quoted in docs/node-sets.md:
    /// `cargo test --lib nodeset::isolate::tests::round_counts -- --nocapture`.
    #[test]
    fn round_counts() {
        for n in [8, 32, 128, 1000] {
            let healthy = Oracle::default().isolate(n, &[]).0;
            let one = Oracle {
                bad: vec![n / 2],
                ..Default::default()
            }
            .isolate(n, &[]);
            let two = Oracle {
                bad: vec![1, n - 2],
                ..Default::default()
            }
            .isolate(n, &[]);
            let half: Vec<usize> = (0..n / 2).collect();
            let rest: Vec<usize> = (n / 2..n).collect();
            let cut = Oracle {
                cuts: vec![(half, rest)],
                ..Default::default()
            }
            .isolate(n, &[]);
            assert_eq!(one.1.with(Verdict::Failed), [n / 2]);
            assert_eq!(two.1.with(Verdict::Failed), [1, n - 2]);
            assert_eq!(
                cut.1.with(Verdict::Passed).len(),
                n,
                "n={n}: {:?}",
                cut.1.with(Verdict::Failed)
            );
            assert!(
                cut.1
                    .faults
                    .iter()
                    .any(|f| matches!(f, Fault::Boundary { .. })),
                "n={n}"
            );
            println!(
                "n={n}: healthy {} rounds / {} sets; one bad {} / {}; two bad {} / {}; boundary {} / {}",
                healthy.rounds(),
                healthy.history().len(),
                one.0.rounds(),
                one.0.history().len(),
                two.0.rounds(),
                two.0.history().len(),
                cut.0.rounds(),
                cut.0.history().len()
            );
        }
    }
}
