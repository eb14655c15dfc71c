//! From node-set outcomes to node verdicts. A set's verdict says something about all of its
//! nodes together; a site engineer drains nodes one at a time. The step between is attribution,
//! and it is where tools blame the wrong node: this module names a node `failed` only when the
//! evidence isolates it, and says what the evidence is.
//!
//! Also the fleet-relative `outlier` rule: a set is compared with the median of the sets of the
//! same shape, so a plan needs no absolute number and a few bad nodes cannot move the yardstick.

use std::collections::BTreeSet;

use crate::stats::median;
use serde::Serialize;

/// How one node set ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SetResult {
    /// Ran, and met the test's criteria.
    Pass,
    /// Ran (or hung, or crashed) and missed a criterion.
    Fail,
    /// Could not run because these nodes did not start or answer: the launcher named them, so
    /// they are proven dead and the rest of the set is untested, not failed.
    Dead(Vec<usize>),
}

/// One node set's outcome: its nodes (indices into the node list) and its round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetOutcome {
    pub round: u32,
    pub nodes: Vec<usize>,
    pub result: SetResult,
}

/// A node's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Passed in a set, and no evidence isolates a fault to it.
    Passed,
    /// The evidence isolates a fault to this node (or it did not start).
    Failed,
    /// In a failing set, but the evidence does not single it out; or never tested.
    Suspect,
    /// Its configuration differs from the fleet's or the plan's (the preflight): left out of
    /// every bandwidth round ([`super::fleet`]).
    #[serde(rename = "config-mismatch")]
    ConfigMismatch,
}

/// A node's verdict and the evidence for it (indices into the outcomes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeReport {
    pub node: usize,
    pub verdict: Verdict,
    /// Sets it was in that failed.
    pub failed_in: Vec<usize>,
    /// Sets it was in that passed.
    pub passed_in: Vec<usize>,
    /// A failing set in which every other node passed elsewhere: the confirming pair, when it
    /// was a pair.
    pub isolated_by: Vec<usize>,
    /// The set in which it did not start.
    pub dead_in: Option<usize>,
    /// It passed in the earlier run a rerun confirms against: sound before this run's sets.
    pub known_good: bool,
    /// Failing sets in which its own counters moved and its partners' did not
    /// ([`super::evidence::blame`]).
    pub evidence_in: Vec<usize>,
}

/// A fault that no single node explains.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Fault {
    /// Two nodes that each pass with others fail together: the link, or the path, between them.
    Link { a: usize, b: usize, set: usize },
    /// Every node of a set passes elsewhere, the set fails: what joins them (a switch, a route).
    Set { nodes: Vec<usize>, set: usize },
    /// The same set failed and passed: a fault that comes and goes.
    Intermittent { nodes: Vec<usize>, sets: Vec<usize> },
    /// Two groups that each pass fail together, twice: the boundary between them.
    Boundary {
        a: Vec<usize>,
        b: Vec<usize>,
        sets: Vec<usize>,
    },
}

impl Fault {
    /// Every node the fault names.
    pub fn nodes(&self) -> Vec<usize> {
        match self {
            Fault::Link { a, b, .. } => vec![*a, *b],
            Fault::Set { nodes, .. } | Fault::Intermittent { nodes, .. } => nodes.clone(),
            Fault::Boundary { a, b, .. } => a.iter().chain(b).copied().collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attribution {
    pub nodes: Vec<NodeReport>,
    pub faults: Vec<Fault>,
}

impl Attribution {
    pub fn with(&self, v: Verdict) -> Vec<usize> {
        self.nodes
            .iter()
            .filter(|r| r.verdict == v)
            .map(|r| r.node)
            .collect()
    }
}

/// Verdicts for nodes `0..n` from the outcomes of the sets they ran in.
///
/// A node that passed somewhere is sound on its own: a failure it shares with nodes that also
/// passed is a link or set fault, reported as such. A node that never passed is `failed` when a
/// failing set isolates it (it ran alone, or every other node of the set passed elsewhere) or
/// when it did not start; otherwise `suspect`. A node that passed once but failed in pairs with
/// two or more known-good partners is `suspect`: the evidence disagrees with itself.
pub fn attribute(n: usize, outcomes: &[SetOutcome]) -> Attribution {
    attribute_known(n, outcomes, &[])
}

/// [`attribute`] for a rerun: the nodes of `known_good` passed in the earlier run, so they
/// count as having passed before any of these sets, and a pair of a suspect with one of them
/// isolates the suspect.
pub fn attribute_known(n: usize, outcomes: &[SetOutcome], known_good: &[usize]) -> Attribution {
    let mut good = vec![false; n];
    for &i in known_good {
        good[i] = true;
    }
    let known = good.clone();
    for o in outcomes {
        if o.result == SetResult::Pass {
            for &i in &o.nodes {
                good[i] = true;
            }
        }
    }
    let mut reports: Vec<NodeReport> = (0..n)
        .map(|node| NodeReport {
            node,
            verdict: Verdict::Suspect,
            failed_in: Vec::new(),
            passed_in: Vec::new(),
            isolated_by: Vec::new(),
            dead_in: None,
            known_good: known[node],
            evidence_in: Vec::new(),
        })
        .collect();
    let mut faults = Vec::new();
    for (k, o) in outcomes.iter().enumerate() {
        match &o.result {
            SetResult::Pass => o.nodes.iter().for_each(|&i| reports[i].passed_in.push(k)),
            SetResult::Dead(dead) => {
                for &i in dead {
                    reports[i].dead_in.get_or_insert(k);
                }
            }
            SetResult::Fail => {
                for &i in &o.nodes {
                    reports[i].failed_in.push(k);
                }
                let unknown: Vec<usize> = o.nodes.iter().copied().filter(|&i| !good[i]).collect();
                match unknown.as_slice() {
                    [one] => reports[*one].isolated_by.push(k),
                    [] => faults.push(match o.nodes.as_slice() {
                        [a, b] => Fault::Link {
                            a: *a,
                            b: *b,
                            set: k,
                        },
                        _ => Fault::Set {
                            nodes: o.nodes.clone(),
                            set: k,
                        },
                    }),
                    _ => {}
                }
            }
        }
    }
    // A set that failed and also passed is intermittent, not a standing link or set fault.
    let mut intermittent: Vec<Fault> = Vec::new();
    faults.retain(|f| {
        let (nodes, set) = match f {
            Fault::Link { a, b, set } => (vec![*a, *b], *set),
            Fault::Set { nodes, set } => (nodes.clone(), *set),
            _ => return true,
        };
        let passes: Vec<usize> = outcomes
            .iter()
            .enumerate()
            .filter(|(_, o)| o.result == SetResult::Pass && o.nodes == nodes)
            .map(|(k, _)| k)
            .collect();
        if passes.is_empty() {
            return true;
        }
        let mut sets = vec![set];
        sets.extend(passes);
        sets.sort();
        match intermittent
            .iter_mut()
            .find(|f| matches!(f, Fault::Intermittent { nodes: n, .. } if *n == nodes))
        {
            Some(Fault::Intermittent { sets: s, .. }) => {
                s.extend(sets);
                s.sort();
                s.dedup();
            }
            _ => intermittent.push(Fault::Intermittent { nodes, sets }),
        }
        false
    });
    faults.extend(intermittent);
    for r in &mut reports {
        r.verdict = if r.dead_in.is_some() {
            Verdict::Failed
        } else if !r.passed_in.is_empty() || r.known_good {
            if failing_good_partners(outcomes, &good, r) >= 2 {
                Verdict::Suspect
            } else {
                Verdict::Passed
            }
        } else if !r.isolated_by.is_empty() {
            Verdict::Failed
        } else {
            Verdict::Suspect
        };
    }
    Attribution {
        nodes: reports,
        faults,
    }
}

/// How many different known-good nodes this node failed with as a pair.
fn failing_good_partners(outcomes: &[SetOutcome], good: &[bool], r: &NodeReport) -> usize {
    let partners: BTreeSet<usize> = r
        .failed_in
        .iter()
        .filter_map(|&k| match outcomes[k].nodes.as_slice() {
            [a, b] if *a == r.node && good[*b] => Some(*b),
            [a, b] if *b == r.node && good[*a] => Some(*a),
            _ => None,
        })
        .collect();
    partners.len()
}

/// A set's standing against the sets of its shape, for the `outlier` criterion.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum Outlier {
    /// Within the allowed deficit of the median.
    Within { median: f64, deficit: f64, z: f64 },
    /// Further below the median than allowed.
    Below { median: f64, deficit: f64, z: f64 },
    /// Fewer than [`MIN_PEERS`] sets of its shape: no fleet to compare with. Never a pass.
    TooFew { peers: usize },
    /// The set itself has no value (it failed or hung before measuring it); `peers` sets of its
    /// shape have one. Its other criteria say why.
    NoValue { peers: usize },
}

/// Fewest sets of one shape the `outlier` rule compares: with two, a median cannot tell which
/// one is bad.
pub const MIN_PEERS: usize = 3;

/// For each `(shape, value)` (higher is better, e.g. busbw), how far below the median of its
/// shape's values it lies: `deficit = (median − value) / median`. `limit` is the largest allowed
/// deficit (0.10 for `outlier: "<= 10%"`); `strict` makes the limit itself fail (`< 10%`).
/// `z` is the robust z-score against the median absolute deviation (scaled to σ), reported as
/// evidence of how unusual the set is; it is 0 when the fleet has no spread.
pub fn outliers<K: PartialEq>(samples: &[(K, f64)], limit: f64, strict: bool) -> Vec<Outlier> {
    outliers_against(samples, samples, limit, strict)
}

/// [`outliers`] of `samples` against another `fleet`: a rerun's few sets against the earlier
/// run's, whose median a handful of reruns could not give.
pub fn outliers_against<K: PartialEq>(
    fleet: &[(K, f64)],
    samples: &[(K, f64)],
    limit: f64,
    strict: bool,
) -> Vec<Outlier> {
    samples
        .iter()
        .map(|(shape, v)| {
            let mut peers: Vec<f64> = fleet
                .iter()
                .filter(|(s, x)| s == shape && x.is_finite())
                .map(|(_, x)| *x)
                .collect();
            if !v.is_finite() {
                return Outlier::NoValue { peers: peers.len() };
            }
            if peers.len() < MIN_PEERS {
                return Outlier::TooFew { peers: peers.len() };
            }
            let med = median(&mut peers).unwrap_or(f64::NAN);
            let mut dev: Vec<f64> = peers.iter().map(|x| (x - med).abs()).collect();
            let mad = median(&mut dev).unwrap_or(f64::NAN) * 1.4826;
            let z = if mad > 0.0 { (v - med) / mad } else { 0.0 };
            let deficit = if med > 0.0 { (med - v) / med } else { 0.0 };
            let bad = if strict {
                deficit >= limit
            } else {
                deficit > limit
            };
            if bad {
                Outlier::Below {
                    median: med,
                    deficit,
                    z,
                }
            } else {
                Outlier::Within {
                    median: med,
                    deficit,
                    z,
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodeset::schedule::{Over, Pairing, rounds};

    fn out(round: u32, nodes: &[usize], pass: bool) -> SetOutcome {
        SetOutcome {
            round,
            nodes: nodes.to_vec(),
            result: if pass {
                SetResult::Pass
            } else {
                SetResult::Fail
            },
        }
    }

    /// All pairs of `n` nodes, failing by `fails`.
    fn sweep(n: usize, fails: impl Fn(&[usize]) -> bool) -> Vec<SetOutcome> {
        let rs = rounds(&Over::Pairs(Pairing::All), n).unwrap();
        rs.iter()
            .enumerate()
            .flat_map(|(r, round)| round.sets.iter().map(move |s| (r, s.clone())))
            .map(|(r, s)| out(r as u32, &s, !fails(&s)))
            .collect()
    }

    #[test]
    fn a_bad_node_in_a_pair_sweep_is_failed_and_its_partners_pass() {
        let a = attribute(6, &sweep(6, |s| s.contains(&3)));
        assert_eq!(a.with(Verdict::Failed), [3]);
        assert_eq!(a.with(Verdict::Passed), [0, 1, 2, 4, 5]);
        assert_eq!(a.nodes[3].isolated_by.len(), 5);
        assert!(a.faults.is_empty());
    }

    #[test]
    fn a_bad_link_names_both_ends_and_blames_neither() {
        let a = attribute(6, &sweep(6, |s| s == [1, 4]));
        assert_eq!(a.with(Verdict::Passed).len(), 6);
        assert!(matches!(a.faults[..], [Fault::Link { a: 1, b: 4, .. }]));
    }

    #[test]
    fn two_bad_nodes_fail_and_their_shared_pair_isolates_neither() {
        let a = attribute(6, &sweep(6, |s| s.contains(&0) || s.contains(&5)));
        assert_eq!(a.with(Verdict::Failed), [0, 5]);
        assert!(a.faults.is_empty());
    }

    #[test]
    fn one_failing_big_set_makes_suspects_not_failures() {
        let a = attribute(4, &[out(0, &[0, 1, 2, 3], false)]);
        assert_eq!(a.with(Verdict::Suspect), [0, 1, 2, 3]);
        let a = attribute(2, &[out(0, &[0], true), out(0, &[1], false)]);
        assert_eq!(a.with(Verdict::Failed), [1]);
        assert_eq!(a.with(Verdict::Passed), [0]);
    }

    #[test]
    fn dead_nodes_fail_and_the_rest_of_their_set_is_untested() {
        let o = vec![
            SetOutcome {
                round: 0,
                nodes: vec![0, 1],
                result: SetResult::Dead(vec![1]),
            },
            out(1, &[0, 2], true),
        ];
        let a = attribute(4, &o);
        assert_eq!(a.with(Verdict::Failed), [1]);
        assert_eq!(a.with(Verdict::Passed), [0, 2]);
        assert_eq!(a.with(Verdict::Suspect), [3], "never ran");
    }

    #[test]
    fn a_rerun_pair_with_known_good_nodes_isolates_the_suspect() {
        // Node 2 (the earlier run's suspect) fails with 0 and with 1, both known good: failed,
        // and its partners stay passed though they passed no set of this run.
        let o = vec![out(1, &[0, 2], false), out(2, &[1, 2], false)];
        let a = attribute_known(3, &o, &[0, 1]);
        assert_eq!(a.with(Verdict::Failed), [2]);
        assert_eq!(a.with(Verdict::Passed), [0, 1]);
        assert!(a.faults.is_empty());
        // Without the earlier run's word, the same sets single out no one.
        assert_eq!(attribute(3, &o).with(Verdict::Suspect), [0, 1, 2]);
        // A suspect that passes with both is cleared.
        let o = vec![out(1, &[0, 2], true), out(2, &[1, 2], true)];
        assert_eq!(
            attribute_known(3, &o, &[0, 1]).with(Verdict::Passed),
            [0, 1, 2]
        );
    }

    #[test]
    fn inconsistent_evidence_is_suspect_and_flaky_sets_are_intermittent() {
        // 2 fails with 0 and with 1 (both good), yet passes with 3.
        let o = vec![
            out(0, &[0, 1], true),
            out(1, &[0, 2], false),
            out(2, &[1, 2], false),
            out(3, &[2, 3], true),
        ];
        assert_eq!(attribute(4, &o).nodes[2].verdict, Verdict::Suspect);
        let o = vec![out(0, &[0, 1], false), out(1, &[0, 1], true)];
        let a = attribute(2, &o);
        assert_eq!(a.with(Verdict::Passed), [0, 1]);
        assert!(matches!(&a.faults[..], [Fault::Intermittent { sets, .. }] if sets == &[0, 1]));
    }

    #[test]
    fn outliers_are_judged_against_the_median_of_their_shape() {
        let s = [
            (2, 100.0),
            (2, 98.0),
            (2, 101.0),
            (2, 85.0),
            (2, 99.0),
            (8, 400.0),
            (8, 380.0),
        ];
        let o = outliers(&s, 0.10, false);
        assert!(matches!(o[0], Outlier::Within { median, .. } if median == 99.0));
        assert!(matches!(o[3], Outlier::Below { deficit, z, .. } if deficit > 0.14 && z < -3.0));
        assert!(matches!(o[5], Outlier::TooFew { peers: 2 }));
        // A few bad sets do not move the yardstick: three of nine at half speed.
        let mut s: Vec<(u8, f64)> = vec![(0, 100.0); 6];
        s.extend([(0, 50.0); 3]);
        let o = outliers(&s, 0.10, false);
        assert_eq!(
            o.iter()
                .filter(|x| matches!(x, Outlier::Below { .. }))
                .count(),
            3
        );
        // The limit itself passes `<=` and fails `<`.
        let s = [(0, 100.0), (0, 100.0), (0, 90.0)];
        assert!(matches!(
            outliers(&s, 0.10, false)[2],
            Outlier::Within { .. }
        ));
        assert!(matches!(outliers(&s, 0.10, true)[2], Outlier::Below { .. }));
        // A rerun's one set against the earlier run's fleet of its shape.
        let fleet = [(2, 100.0), (2, 98.0), (2, 40.0), (1, 10.0)];
        let o = outliers_against(&fleet, &[(2, 41.0), (2, 99.0)], 0.10, false);
        assert!(matches!(o[0], Outlier::Below { median, .. } if median == 98.0));
        assert!(matches!(o[1], Outlier::Within { .. }));
    }

    /// #21 item 14: a set that measured nothing at the criterion's size, among enough sets that
    /// did, has no value to compare — not too few peers.
    #[test]
    fn a_set_without_a_value_is_told_from_too_few_peers() {
        let s = [(2, f64::NAN), (2, 1.0), (2, 1.0), (2, 1.0)];
        assert_eq!(outliers(&s, 0.1, false)[0], Outlier::NoValue { peers: 3 });
        let s = [(2, f64::NAN), (2, 1.0)];
        assert_eq!(outliers(&s, 0.1, false)[0], Outlier::NoValue { peers: 1 });
        assert_eq!(outliers(&s, 0.1, false)[1], Outlier::TooFew { peers: 1 });
    }
}
