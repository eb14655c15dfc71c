//! The acceptance report's view model: plain data, filled by whoever ran the phases (the
//! acceptance runner's outcome), so the report decides nothing and can be rendered from a
//! fixture. Hostlists, counts and links are computed from it, never stored twice.

use crate::grade::Grade;

/// Everything the signable report shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Acceptance {
    /// The cluster's name, as the site calls it.
    pub cluster: String,
    pub verdict: ClusterVerdict,
    /// Why, in one sentence (`2 of 8 nodes failed and are drained; the 6 others passed every phase`).
    pub summary: String,
    /// Every node the acceptance started with, in node-list order.
    pub nodes: Vec<String>,
    pub accepted: Vec<String>,
    pub failed: Vec<String>,
    pub suspect: Vec<String>,
    /// The drain list: each failed node and why (the `drain.sh` reasons).
    pub drain: Vec<Drain>,
    /// Findings about the cluster as a whole (a whole-cluster criterion that failed).
    pub findings: Vec<String>,
    pub inventory: Vec<InventoryRow>,
    pub run: RunFacts,
    /// The phases in the order they ran.
    pub phases: Vec<Phase>,
}

/// The acceptance's outcome for the whole cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterVerdict {
    /// Every node and every phase passed.
    Accepted,
    /// The phases passed on the nodes left after the failed ones were excluded.
    AcceptedWithExclusions,
    /// A phase failed on the nodes it kept, or a cluster finding stands.
    Rejected,
    /// Not every phase ran (stopped by a rule, a signal or a crash).
    Incomplete,
}

impl ClusterVerdict {
    pub fn label(self) -> &'static str {
        match self {
            Self::Accepted => "ACCEPTED",
            Self::AcceptedWithExclusions => "ACCEPTED WITH EXCLUSIONS",
            Self::Rejected => "REJECTED",
            Self::Incomplete => "INCOMPLETE",
        }
    }

    /// Its colour class in the HTML (the per-run report's).
    pub fn class(self) -> &'static str {
        match self {
            Self::Accepted => "pass",
            Self::AcceptedWithExclusions | Self::Incomplete => "warn",
            Self::Rejected => "fail",
        }
    }
}

/// A node to drain, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drain {
    pub host: String,
    pub reason: String,
}

/// One line of the software and hardware inventory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InventoryRow {
    /// `software` or `hardware`.
    pub kind: &'static str,
    /// `NCCL`, `driver`, `GPU`, `kernel`, …
    pub item: String,
    pub value: String,
    /// The nodes that have it, as a hostlist (`node[01-08]`): two rows of one item are a
    /// mismatch a reader sees at once.
    pub nodes: String,
}

/// When, where and by whom the acceptance ran, and from which plans.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunFacts {
    /// The acceptance file (or plan), as given.
    pub file: String,
    /// Git revisions of the plans (`git 0151a8ed929d`, `dirty` when the file differed).
    pub revisions: Vec<String>,
    /// RFC 3339 times of the first phase's start and the last phase's end.
    pub started: Option<String>,
    pub finished: Option<String>,
    pub duration_s: Option<u64>,
    /// The user, the host and the command that ran it.
    pub by: Option<String>,
    pub host: Option<String>,
    pub command: Option<String>,
    /// `baton 0.1.0`.
    pub baton: String,
}

/// One phase: its verdict, each node's verdict in it, and its own report.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// Short and unique (`a`, `pairs`): the phase section's anchor.
    pub id: String,
    /// `Phase A — every node alone`.
    pub name: String,
    pub verdict: PhaseVerdict,
    /// One sentence: what it ran on and what it found.
    pub summary: String,
    pub duration_s: Option<u64>,
    /// The phase's own HTML report, relative to the acceptance report
    /// (`phase-a/report/report.html`): each matrix cell links to its node's row there.
    pub report: Option<String>,
    /// Each node's verdict in this phase, in node-list order; a node it never saw is absent.
    pub cells: Vec<Cell>,
    /// The phase's grade, rendered as its section by the per-run report's renderers.
    pub grade: Option<Grade>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseVerdict {
    Passed,
    Failed,
    /// Never started: a stop rule, or a phase it depends on failed.
    NotRun,
}

impl PhaseVerdict {
    pub fn label(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::NotRun => "not run",
        }
    }
}

/// A node's verdict in one phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub host: String,
    pub verdict: CellVerdict,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellVerdict {
    Passed,
    Failed,
    /// Did not start or answer in this phase.
    Dead,
    Suspect,
    /// The phase failed as a cluster (one set of every node, or a criterion between phases):
    /// a finding about the cluster, not about this node, which the cover counts nowhere.
    Cluster,
    /// Left out by gating: it failed (or died in) an earlier phase.
    Excluded,
}

impl CellVerdict {
    pub fn label(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Dead => "dead",
            Self::Suspect => "suspect",
            Self::Cluster => "cluster",
            Self::Excluded => "excluded",
        }
    }

    /// Its colour class in the HTML.
    pub fn class(self) -> &'static str {
        match self {
            Self::Passed => "pass",
            Self::Failed | Self::Dead => "fail",
            Self::Suspect | Self::Cluster => "warn",
            Self::Excluded => "skip",
        }
    }
}

impl Phase {
    /// A node's cell, when the phase saw it.
    pub fn cell(&self, host: &str) -> Option<&Cell> {
        self.cells.iter().find(|c| c.host == host)
    }

    /// Where a node's evidence is: its row in the phase's report.
    pub fn link(&self, host: &str) -> Option<String> {
        let r = self.report.as_ref()?;
        Some(format!("{r}#{}", crate::report::nodes::anchor(host)))
    }
}
