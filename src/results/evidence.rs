//! Node evidence around a job, as the results keep it: per node the job ran on, the probe's
//! snapshot before and after the job and what moved between them. A verdict cites the delta
//! (`eth0 carrier_changes +4`); the snapshots stay so a reader can check what the delta says.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::nodeset::fleet::{InventoryRow, Mismatch};
use crate::probe::Snapshot;
use crate::probe::delta::{Change, ChangeKind, Delta};
use crate::probe::kernel_log::KernelEvent;

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
    /// What NCCL itself printed on this node during the job (`NCCL WARN`, `NCCL DIAG`, a GID
    /// table changing), read from the job's captured output by the runner (`ras::diag`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl: Option<NcclLines>,
}

/// NCCL's lines of one node in one job, each as the probe's event of kind `nccl`, bounded
/// (`ras::placed::PER_NODE_LIMIT`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct NcclLines {
    pub events: Vec<KernelEvent>,
    /// Lines heard and not kept: past the bound, or (on the job's first node) naming no node
    /// of a job of several.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub left_out: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl NodeEvidence {
    /// A node's entry with nothing in it yet.
    pub fn empty(host: &str) -> NodeEvidence {
        NodeEvidence {
            host: host.to_string(),
            before: None,
            after: None,
            delta: None,
            unavailable: None,
            nccl: None,
        }
    }

    /// Everything that moved on this node during the job: the delta's changes, then NCCL's
    /// lines as events.
    pub fn changes(&self) -> Vec<Change> {
        let mut out: Vec<Change> = self.delta.iter().flat_map(|d| d.changes.clone()).collect();
        for e in self.nccl.iter().flat_map(|n| n.events.iter()) {
            let subject = match &e.kind {
                crate::probe::kernel_log::EventKind::Nccl { subject, .. } => subject.clone(),
                _ => "NCCL".to_string(),
            };
            out.push(Change {
                subject,
                what: e.kind.short(),
                kind: ChangeKind::Event {
                    at_unix_ms: e.at_unix_ms,
                    line: e.line.clone(),
                },
            });
        }
        out
    }

    /// The lines of what moved on this node.
    pub fn moved(&self) -> Vec<String> {
        self.changes().iter().map(Change::line).collect()
    }
}

/// Folds `new` into a job's `evidence`: a node's entry is replaced by its newer one, so the
/// end of a job (before, after and delta) replaces what its start recorded (before only); the
/// NCCL lines the node's entry holds stay.
pub fn merge(evidence: &mut Vec<NodeEvidence>, new: Vec<NodeEvidence>) {
    for mut e in new {
        match evidence.iter_mut().find(|x| x.host == e.host) {
            Some(x) => {
                if e.nccl.is_none() {
                    e.nccl = x.nccl.take();
                }
                *x = e
            }
            None => evidence.push(e),
        }
    }
}

/// Adds NCCL's `lines` of `host` to a job's `evidence`, to the node's entry or a new one.
pub fn add_nccl(evidence: &mut Vec<NodeEvidence>, host: &str, lines: NcclLines) {
    let i = match evidence.iter().position(|x| x.host == host) {
        Some(i) => i,
        None => {
            evidence.push(NodeEvidence::empty(host));
            evidence.len() - 1
        }
    };
    let n = evidence[i].nccl.get_or_insert_with(NcclLines::default);
    for e in lines.events {
        if !n.events.contains(&e) {
            n.events.push(e);
        }
    }
    n.left_out += lines.left_out;
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
