//! Gating and stop rules, pure: which nodes a phase runs on given the phases before it, whether
//! it runs at all, and whether the acceptance stops after a phase.

use super::doc::{Phase, Stop};
use super::raw::Suspects;
use super::record::{NodeVerdict, PhaseRecord, PhaseStatus};

/// What gating decided for a phase.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// Run on `hosts`; `out` are the nodes left out, each with why.
    Run {
        hosts: Vec<String>,
        out: Vec<(String, String)>,
    },
    /// Not run, and why (`Skipped` or `Blocked`).
    Not(PhaseStatus, String),
}

/// The phases `phase` depends on, directly or through the phases it needs.
fn ancestors(phases: &[Phase], of: usize) -> Vec<usize> {
    let mut seen = vec![false; of];
    let mut stack: Vec<usize> = phases[of].needs.clone();
    while let Some(k) = stack.pop() {
        if k < of && !seen[k] {
            seen[k] = true;
            stack.extend(phases[k].needs.iter().copied());
        }
    }
    (0..of).filter(|&k| seen[k]).collect()
}

/// Where phase `at` runs: `all` less every node an ancestor failed, found dead, left suspect
/// (when that phase's policy excludes suspects) or had already left out.
pub fn gate(all: &[String], phases: &[Phase], at: usize, done: &[PhaseRecord]) -> Gate {
    let phase = &phases[at];
    if let Some(k) = phase.only_if_failed
        && let Some(r) = done.get(k)
        && !matches!(r.status, PhaseStatus::Failed | PhaseStatus::ClusterFailed)
    {
        return Gate::Not(
            PhaseStatus::Skipped,
            format!(
                "it runs only when phase {} fails, and that phase did not fail",
                r.name
            ),
        );
    }
    for &k in &phase.needs {
        let Some(r) = done.get(k) else { continue };
        if matches!(r.status, PhaseStatus::ClusterFailed | PhaseStatus::Blocked) {
            return Gate::Not(
                PhaseStatus::Blocked,
                format!(
                    "phase {} it needs failed as a cluster or did not run",
                    r.name
                ),
            );
        }
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for k in ancestors(phases, at) {
        let Some(r) = done.get(k) else { continue };
        for n in &r.nodes {
            if out.iter().any(|(h, _)| *h == n.host) {
                continue;
            }
            if let Some(why) = excludes(r, phases[k].suspects, n.verdict, &n.reason) {
                out.push((n.host.clone(), why));
            }
        }
    }
    let hosts: Vec<String> = all
        .iter()
        .filter(|h| !out.iter().any(|(o, _)| o == *h))
        .cloned()
        .collect();
    if hosts.is_empty() {
        return Gate::Not(PhaseStatus::Blocked, "no node is left to run it on".into());
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Gate::Run { hosts, out }
}

/// Why a node's verdict in phase `r` keeps it out of a later phase, if it does.
fn excludes(r: &PhaseRecord, policy: Suspects, v: NodeVerdict, reason: &str) -> Option<String> {
    let said = |what: &str| format!("{what} in phase {}: {reason}", r.name);
    match v {
        NodeVerdict::Failed => Some(said("failed")),
        NodeVerdict::Dead => Some(said("dead")),
        NodeVerdict::Suspect if policy != Suspects::Include => Some(said("suspect")),
        NodeVerdict::Excluded => Some(reason.to_string()),
        _ => None,
    }
}

/// The distinct nodes failed or dead in any phase so far.
pub fn faulty(done: &[PhaseRecord]) -> Vec<String> {
    let mut v: Vec<String> = done
        .iter()
        .flat_map(|r| r.nodes.iter())
        .filter(|n| n.verdict.is_fault())
        .map(|n| n.host.clone())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Why the acceptance stops after a phase with `rule`, if it does: more than K nodes (or X% of
/// the `total`) failed or dead so far.
pub fn stops(rule: Option<Stop>, done: &[PhaseRecord], total: usize) -> Option<String> {
    let n = faulty(done).len();
    let share = if total == 0 {
        0.0
    } else {
        100.0 * n as f64 / total as f64
    };
    match rule? {
        Stop::FailedNodes(k) if n > k as usize => Some(format!(
            "{n} node(s) failed or dead, more than the stop rule's {k}"
        )),
        Stop::FailedPercent(x) if share > x => Some(format!(
            "{n} of {total} node(s) failed or dead ({share:.0}%), more than the stop rule's {x}%"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
