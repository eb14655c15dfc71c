//! Node evidence around a job, as the results keep it: per node the job ran on, the probe's
//! snapshot before and after the job and what moved between them. A verdict cites the delta
//! (`eth0 carrier_changes +4`); the snapshots stay so a reader can check what the delta says.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::nodeset::fleet::{InventoryRow, Mismatch};
use crate::probe::Snapshot;
use crate::probe::delta::Delta;

/// One node's evidence around one job. `after` and `delta` are absent when the job ended
/// without its ranks meeting again (a hung collective): the `before` is still worth keeping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NodeEvidence {
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Snapshot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Snapshot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<Delta>,
    /// Why there is no `after`: the node did not answer the probe after its set failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl NodeEvidence {
    /// The lines of what moved on this node (none without a delta).
    pub fn moved(&self) -> Vec<String> {
        self.delta.as_ref().map_or_else(Vec::new, Delta::lines)
    }
}

/// Folds `new` into a job's `evidence`: a node's entry is replaced by its newer one, so the
/// end of a job (before, after and delta) replaces what its start recorded (before only).
pub fn merge(evidence: &mut Vec<NodeEvidence>, new: Vec<NodeEvidence>) {
    for e in new {
        match evidence.iter_mut().find(|x| x.host == e.host) {
            Some(x) => *x = e,
            None => evidence.push(e),
        }
    }
}

/// The fleet consistency preflight: every node's snapshot before the bandwidth rounds, the
/// nodes that differ from the fleet or the plan (left out of every round), and the fields
/// that differ anywhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Preflight {
    pub nodes: Vec<PreflightNode>,
    pub mismatches: Vec<Mismatch>,
    pub inventory: Vec<InventoryRow>,
    /// Its wall time, launcher step and comparison: the part of evidence's cost that a run
    /// pays once, apart from the snapshots around its jobs (`scripts/bench-evidence`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub took_ms: Option<u64>,
}

/// One node's preflight snapshot, or why there is none (it did not answer in time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PreflightNode {
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<Snapshot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl Preflight {
    /// The hosts left out of the rounds, each with its mismatches as one reason
    /// (`eth0 mtu 1400, fleet 1500`).
    pub fn excluded(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for m in &self.mismatches {
            match out.iter_mut().find(|(h, _)| *h == m.host) {
                Some((_, why)) => {
                    why.push_str("; ");
                    why.push_str(&m.line());
                }
                None => out.push((m.host.clone(), m.line())),
            }
        }
        out
    }
}
