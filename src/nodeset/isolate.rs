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
//! 4. Confirmation pairs a suspect with a node that passed, from its own group and then from
//!    before and after it in node-list order; failing on every side, it is a candidate. The
//!    candidates then run together: bad nodes fail together too, while nodes cut off from the
//!    rest pass together and are not blamed.
//! 5. When no work is left, the nodes still standing run once together (the playbook's "remove
//!    and prove"), which also catches faults between screening groups; a failure there is
//!    examined like any other.

use std::collections::{BTreeSet, VecDeque};

use thiserror::Error;

use super::attribution::{Attribution, Fault, SetOutcome, SetResult, Verdict, attribute};

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
    #[error(
        "recorded round {round} ran other node sets than isolation proposes now: the node list or the plan changed since"
    )]
    ReplayMismatch { round: u32 },
    #[error("{recorded} rounds are recorded, but isolation ended after {ran}")]
    ReplayTooLong { recorded: usize, ran: u32 },
}

/// One round as a run recorded it, for [`Isolator::replay`]: the sets it ran, their outcomes,
/// and the nodes the failing sets' records named (NCCL's RAS at a hang).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorded {
    pub sets: Vec<Vec<usize>>,
    pub results: Vec<SetResult>,
    pub named: Vec<usize>,
}

/// The nodes of `set` (indices into `hosts`) among the `named` hosts of its record, in their
/// order: a name outside the set is no finding about it.
pub fn named_in(hosts: &[String], set: &[usize], named: &[&str]) -> Vec<usize> {
    named
        .iter()
        .filter_map(|h| hosts.iter().position(|x| x == h))
        .filter(|i| set.contains(i))
        .collect()
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
    /// Nodes that each failed with two good partners, paired among themselves: bad nodes fail
    /// together too; nodes cut off from the rest pass together and so are not called failed.
    Island(Vec<usize>),
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
    /// Failed with two good partners this round: tested among themselves before they are
    /// called failed, so a group cut off from the rest is not mistaken for bad nodes.
    candidates: Vec<usize>,
    boundaries: Vec<Fault>,
    /// Node sets already run as the final check, so none runs twice.
    wholes: Vec<Vec<usize>>,
    /// Nodes the failing sets of the round being resolved named themselves (NCCL's RAS at a
    /// hang: a missing or behind rank's host): confirmed at once, not bisected for.
    named: Vec<usize>,
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
            candidates: Vec::new(),
            boundaries: Vec::new(),
            wholes,
            named: Vec::new(),
            round: 0,
        })
    }

    /// An isolation resumed from the rounds a run recorded (each round's sets, outcomes and
    /// named nodes, in order): the same outcomes and names lead to the same rounds, so an
    /// interrupted run continues where it stopped. Recorded sets that differ from what
    /// isolation proposes are refused.
    pub fn replay(
        n: usize,
        domains: &[Vec<usize>],
        recorded: &[Recorded],
    ) -> Result<Isolator, IsolateError> {
        let mut iso = Isolator::new(n, domains)?;
        for (k, r) in recorded.iter().enumerate() {
            match iso.next_round() {
                Some(proposed) if proposed == r.sets => iso.record_named(&r.results, &r.named)?,
                Some(_) => {
                    return Err(IsolateError::ReplayMismatch {
                        round: k as u32 + 1,
                    });
                }
                None => {
                    return Err(IsolateError::ReplayTooLong {
                        recorded: recorded.len(),
                        ran: iso.rounds(),
                    });
                }
            }
        }
        Ok(iso)
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
        self.record_named(results, &[])
    }

    /// [`record`](Self::record), with the nodes each failing set's record named (NCCL's RAS
    /// at a hang names the hosts of missing and behind ranks): those go straight to
    /// confirmation against known-good nodes, and the rest of their set is tested again
    /// without them, instead of bisecting the set to find them.
    pub fn record_named(
        &mut self,
        results: &[SetResult],
        named: &[usize],
    ) -> Result<(), IsolateError> {
        if let Some(&node) = named.iter().find(|&&i| i >= self.n) {
            return Err(IsolateError::OutOfRange { node, n: self.n });
        }
        self.named = named.to_vec();
        let r = self.record_outcomes(results);
        self.named.clear();
        r
    }

    fn record_outcomes(&mut self, results: &[SetResult]) -> Result<(), IsolateError> {
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
        // The whole round's evidence first: what one item does next depends on which nodes
        // proved good anywhere in the round.
        for ((_, s), r) in cur
            .iter()
            .flat_map(|(_, sets)| sets.iter().map(move |s| ((), s)))
            .zip(results)
        {
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
        let mut results = results.iter();
        for (item, sets) in cur {
            let got: Vec<SetResult> = results.by_ref().take(sets.len()).cloned().collect();
            self.resolve(item, &sets, &got);
        }
        // Once no confirmation is left, candidates run together (one alone is failed on its
        // evidence as it stands).
        if !self.queue.iter().any(|i| matches!(i, Item::Confirm { .. })) {
            let c = std::mem::take(&mut self.candidates);
            if c.len() >= 2 {
                self.queue.push_front(Item::Island(c));
            }
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
        // A node that passed, and whose every failing set crosses a boundary found, is
        // explained by that boundary: it passes.
        let crosses = |nodes: &[usize]| {
            self.boundaries.iter().any(|b| match b {
                Fault::Boundary { a, b, .. } => {
                    nodes.iter().any(|i| a.contains(i)) && nodes.iter().any(|i| b.contains(i))
                }
                _ => false,
            })
        };
        for r in &mut a.nodes {
            if r.verdict == Verdict::Suspect
                && !r.passed_in.is_empty()
                && r.failed_in.iter().all(|&k| crosses(&self.history[k].nodes))
            {
                r.verdict = Verdict::Passed;
            }
        }
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
                Next::Run(item, sets) => {
                    for &i in sets.iter().flatten() {
                        busy[i] = true;
                    }
                    round.push((item, sets));
                }
                Next::Wait(item) => waiting.push_back(item),
                Next::Replace(items) => {
                    for it in items.into_iter().rev() {
                        self.queue.push_front(it);
                    }
                }
                Next::Drop => {}
            }
        }
        self.queue = waiting;
        round
    }

    fn sets_for(&mut self, item: Item, busy: &[bool]) -> Next {
        let free = |s: &[usize]| s.iter().all(|&i| !busy[i]);
        match item {
            Item::Test(s) => {
                let s = self.alive(&s);
                match s.len() {
                    0 => Next::Drop,
                    1 if self.good[s[0]] => Next::Drop,
                    1 => Next::Replace(vec![Item::Confirm {
                        node: s[0],
                        tried: vec![],
                    }]),
                    _ if free(&s) => Next::Run(Item::Test(s.clone()), vec![s]),
                    _ => Next::Wait(Item::Test(s)),
                }
            }
            Item::Split { a, b } => {
                let (a2, b2) = (self.alive(&a), self.alive(&b));
                if a2 != a || b2 != b {
                    let mut s = a2;
                    s.extend(b2);
                    s.sort();
                    return Next::Replace(vec![Item::Test(s)]);
                }
                let sets: Vec<Vec<usize>> = [&a, &b]
                    .into_iter()
                    .filter(|h| !self.passed_before(h))
                    .cloned()
                    .collect();
                if sets.is_empty() {
                    return Next::Replace(vec![Item::Probe { a, b }]);
                }
                if sets.iter().all(|s| free(s)) {
                    Next::Run(Item::Split { a, b }, sets)
                } else {
                    Next::Wait(Item::Split { a, b })
                }
            }
            Item::Probe { a, b } => {
                let mut s: Vec<usize> = a.iter().chain(&b).copied().collect();
                s.sort();
                if self.alive(&s) != s {
                    return Next::Replace(vec![Item::Test(self.alive(&s))]);
                }
                if free(&s) {
                    Next::Run(Item::Probe { a, b }, vec![s])
                } else {
                    Next::Wait(Item::Probe { a, b })
                }
            }
            Item::Island(nodes) => {
                let nodes = self.alive(&nodes);
                if nodes.len() < 2 {
                    return Next::Drop;
                }
                let mut sets: Vec<Vec<usize>> = nodes.chunks(2).map(<[usize]>::to_vec).collect();
                if let [.., last] = sets.as_slice()
                    && last.len() == 1
                {
                    let lone = sets.pop().unwrap_or_default();
                    if let Some(prev) = sets.last_mut() {
                        prev.extend(lone);
                    }
                }
                if sets.iter().all(|s| free(s)) {
                    Next::Run(Item::Island(nodes), sets)
                } else {
                    Next::Wait(Item::Island(nodes))
                }
            }
            Item::Confirm { node, tried } => {
                if self.dead[node] || self.good[node] {
                    return Next::Drop;
                }
                if busy[node] {
                    return Next::Wait(Item::Confirm { node, tried });
                }
                if !tried.is_empty() && self.untried_side(node, &tried).is_none() {
                    // Its last untried partners died: it has failed on every side there is.
                    self.candidates.push(node);
                    return Next::Drop;
                }
                match self.partner(node, &tried, busy) {
                    Some(g) => {
                        let set = vec![node.min(g), node.max(g)];
                        Next::Run(Item::Confirm { node, tried }, vec![set])
                    }
                    None => Next::Wait(Item::Confirm { node, tried }),
                }
            }
        }
    }

    /// Which side of `node`'s group `g` lies on in node-list order: −1 before, 0 the same
    /// group, 1 after. Node lists are usually in rack order, so a side approximates "beyond a
    /// switch" when the plan names no domains.
    fn side(&self, node: usize, g: usize) -> i64 {
        (self.group[g] as i64 - self.group[node] as i64).signum()
    }

    /// Good nodes on a side `node` has not been confirmed against yet.
    fn untried_side(&self, node: usize, tried: &[usize]) -> Option<i64> {
        let done: BTreeSet<i64> = tried.iter().map(|&t| self.side(node, t)).collect();
        [0, -1, 1].into_iter().find(|side| {
            !done.contains(side)
                && (0..self.n).any(|g| {
                    g != node && self.good[g] && !self.dead[g] && self.side(node, g) == *side
                })
        })
    }

    /// A known-good, idle node for `node` to be confirmed against, from a side of its group it
    /// has not been tried on: its own group first, then before and after it. A node is failed
    /// only after failing with good nodes from every side there is, so a fault between two
    /// parts of the cluster cannot make all its confirmations fail and blame a sound node. A
    /// partner from the wanted side is worth waiting a round for.
    fn partner(&self, node: usize, tried: &[usize], busy: &[bool]) -> Option<usize> {
        let side = self.untried_side(node, tried)?;
        (0..self.n)
            .filter(|&g| {
                g != node && self.good[g] && !self.dead[g] && !busy[g] && self.side(node, g) == side
            })
            .min_by_key(|&g| ((self.group[g] as i64 - self.group[node] as i64).abs(), g))
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
            // Passing together makes them good (recorded); failing leaves them failed.
            Item::Island(_) => {}
            Item::Confirm { node, mut tried } => {
                let s = &sets[0];
                if failed(s) {
                    let partner = s.iter().copied().find(|&i| i != node).unwrap_or(node);
                    tried.push(partner);
                    if self.untried_side(node, &tried).is_some() {
                        self.queue.push_back(Item::Confirm { node, tried });
                    } else {
                        self.candidates.push(node);
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
        let named: Vec<usize> = unknown
            .iter()
            .copied()
            .filter(|i| self.named.contains(i))
            .collect();
        if !named.is_empty() {
            for &node in &named {
                self.queue.push_front(Item::Confirm {
                    node,
                    tried: vec![],
                });
            }
            let rest: Vec<usize> = s.iter().copied().filter(|i| !named.contains(i)).collect();
            if rest.iter().any(|i| !self.good[*i]) {
                self.queue.push_back(Item::Test(rest));
            }
            return;
        }
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

/// What an item becomes in the round being assembled.
enum Next {
    Run(Item, Vec<Vec<usize>>),
    Wait(Item),
    Replace(Vec<Item>),
    Drop,
}

#[cfg(test)]
mod tests;
