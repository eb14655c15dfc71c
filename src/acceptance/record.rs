//! What one phase concluded, as `phases/NN-NAME/phase.json` keeps it: a finished phase is read
//! back from here on resume, and gating, stop rules and the combined outputs read only this
//! (and the phase's results), never the run in memory.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A node's verdict in one phase.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum NodeVerdict {
    Passed,
    /// The phase's evidence isolates a fault to this node.
    Failed,
    /// It did not answer after a step of the phase.
    Dead,
    /// In a failing set, not singled out.
    Suspect,
    /// Tested only in sets of the whole phase's nodes, and the phase failed: a cluster
    /// finding, not a verdict on this node.
    Cluster,
    /// Left out of the phase by gating (the reason says which phase and why).
    Excluded,
    /// The phase did not run (skipped, blocked or stopped before it).
    NotRun,
}

impl NodeVerdict {
    /// A verdict that keeps the node out of later phases whatever the suspects policy.
    pub fn is_fault(self) -> bool {
        matches!(self, NodeVerdict::Failed | NodeVerdict::Dead)
    }
}

/// How a phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseStatus {
    Passed,
    /// Nodes failed (or died); the others may go on.
    Failed,
    /// It failed and no node explains it (or a criterion between phases failed): later phases
    /// that need it do not start.
    ClusterFailed,
    /// `only_if_failed` named a phase that passed.
    Skipped,
    /// A phase it needs failed as a cluster, or left no node.
    Blocked,
    /// A stop rule ended the acceptance before it.
    Stopped,
}

impl PhaseStatus {
    pub fn ran(self) -> bool {
        matches!(
            self,
            PhaseStatus::Passed | PhaseStatus::Failed | PhaseStatus::ClusterFailed
        )
    }
}

/// One node in one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NodeInPhase {
    pub host: String,
    pub verdict: NodeVerdict,
    pub reason: String,
}

/// A criterion between phases, as judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CriterionResult {
    /// What it asks, in words (`busbw >= 90% of phase B's all_reduce`).
    pub text: String,
    pub passed: bool,
    /// The figures behind it, one line per size (or the reason it could not be judged).
    pub details: Vec<String>,
}

/// What `phase.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhaseRecord {
    pub index: usize,
    pub name: String,
    /// The phase's directory, relative to the acceptance's output directory.
    pub dir: String,
    /// The plan's file, or `inline`.
    pub plan_file: String,
    pub plan: String,
    pub status: PhaseStatus,
    /// Why it was skipped, blocked or stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// RFC 3339 UTC, from the phase's results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// When the runner was called for this phase and when it returned (after its last row,
    /// before grading), RFC 3339 with milliseconds: baton's own time between phases — grading
    /// and writing one phase, gating and opening the next — is measured from these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_began: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_ended: Option<String>,
    /// baton's own time between the previous phase's run ending and this one's beginning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_s: Option<f64>,
    /// The nodes it ran on, as a hostlist.
    pub nodes_in: String,
    /// The nodes gating left out, as a hostlist (each node's reason is in `nodes`).
    pub nodes_out: String,
    pub nodes: Vec<NodeInPhase>,
    /// Findings about the cluster, not about one node.
    #[serde(default)]
    pub findings: Vec<String>,
    #[serde(default)]
    pub criteria: Vec<CriterionResult>,
    /// The phase's own exit code (as `baton run` would have exited).
    pub exit: i32,
}

impl PhaseRecord {
    pub fn verdict_of(&self, host: &str) -> Option<&NodeInPhase> {
        self.nodes.iter().find(|n| n.host == host)
    }

    /// The nodes it found failed or dead, as a hostlist (empty when none).
    pub fn faulty(&self) -> String {
        let hosts: Vec<&str> = self
            .nodes
            .iter()
            .filter(|n| n.verdict.is_fault())
            .map(|n| n.host.as_str())
            .collect();
        crate::nodeset::compress(&hosts)
    }
}
