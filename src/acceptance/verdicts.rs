//! A phase's node verdicts, only from the sets that tested each node: a node found dead is dead;
//! a node tested only in sets of all the phase's nodes gets no verdict of its own when the
//! phase fails (a whole-cluster criterion failing is a cluster finding, not N suspect nodes);
//! otherwise the phase's attribution (`nodes.json`) says.

use crate::grade::{Grade, Status};
use crate::nodeset::attribution::Verdict;

use super::record::{NodeInPhase, NodeVerdict, PhaseStatus};

/// Each of `hosts` in the phase graded `g`; `failed` whether the phase failed as a whole
/// (a criterion, or a set, failed).
pub fn of_phase(g: &Grade, hosts: &[String], failed: bool) -> Vec<NodeInPhase> {
    let whole = g.node_sets.iter().all(|t| t.over == "all");
    hosts
        .iter()
        .map(|h| {
            let entry = g
                .nodes
                .as_ref()
                .and_then(|n| n.nodes.iter().find(|e| e.host == *h));
            let reason = entry.map_or_else(String::new, |e| e.reason.clone());
            let dead = g
                .node_sets
                .iter()
                .flat_map(|t| &t.sets)
                .any(|s| s.dead.contains(h));
            let (verdict, reason) = if dead {
                (NodeVerdict::Dead, reason)
            } else if whole {
                whole_set(failed, hosts.len())
            } else {
                match entry.map(|e| e.verdict) {
                    Some(Verdict::Passed) => (NodeVerdict::Passed, reason),
                    Some(Verdict::Failed) => (NodeVerdict::Failed, reason),
                    Some(Verdict::Suspect) => (NodeVerdict::Suspect, reason),
                    Some(Verdict::ConfigMismatch) => (NodeVerdict::Failed, reason),
                    None => (NodeVerdict::Suspect, "no set of the phase tested it".into()),
                }
            };
            NodeInPhase {
                host: h.clone(),
                verdict,
                reason,
            }
        })
        .collect()
}

fn whole_set(failed: bool, n: usize) -> (NodeVerdict, String) {
    if failed {
        let why =
            format!("tested only with all {n} nodes of the phase, which failed: a cluster finding");
        (NodeVerdict::Cluster, why)
    } else {
        (
            NodeVerdict::Passed,
            format!("passed with all {n} nodes of the phase"),
        )
    }
}

/// How a phase that ran ended: passed; failed with nodes to blame; or failed as a cluster
/// (no node explains it, or a criterion between phases failed).
pub fn status(g: &Grade, nodes: &[NodeInPhase], criteria_passed: bool) -> PhaseStatus {
    let blamed = nodes.iter().any(|n| n.verdict.is_fault());
    if g.status != Status::Fail && criteria_passed {
        PhaseStatus::Passed
    } else if blamed && criteria_passed {
        PhaseStatus::Failed
    } else {
        PhaseStatus::ClusterFailed
    }
}

/// What the phase found that no node explains: faults between nodes, and the first failure of
/// each failed job when no node is blamed.
pub fn findings(g: &Grade, nodes: &[NodeInPhase]) -> Vec<String> {
    let mut v: Vec<String> = crate::report::fault_lines(g);
    if !nodes.iter().any(|n| n.verdict.is_fault()) {
        for j in g.jobs.iter().filter(|j| j.status == Status::Fail) {
            if let Some(c) = j.criteria.iter().find(|c| c.status == Status::Fail) {
                let first = c.cases.iter().find(|k| k.status == Status::Fail);
                let said = first.map_or(String::new(), |k| format!(": {}", k.message));
                v.push(format!("{}: {}{said}", j.id, c.text));
            }
        }
    }
    v
}
