//! The acceptance's one outcome, `acceptance.json` (`schemas/acceptance-outcome.schema.json`):
//! phases with dates, durations and nodes in and out, each node's verdict per phase with its
//! evidence, cluster findings, cross-phase criteria, the revision and who ran it where. Every
//! combined output (`nodes.json`, `drain.sh`, `junit.xml`, `verdict.json`, the signable
//! `acceptance.html`/`.md`, the summary) is made from it.

use schemars::JsonSchema;
use serde::Serialize;

use super::doc::Acceptance;
use super::record::{NodeVerdict, PhaseRecord, PhaseStatus};
use super::run::Outcome;
use crate::nodeset::compress;
use crate::plan::revision::GitRevision;

/// A node's verdict over the acceptance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Overall {
    /// No phase that tested it found a fault in it.
    Passed,
    /// A phase failed it or found it dead: drain it.
    Failed,
    /// Left suspect (or never tested) and not cleared.
    Suspect,
}

/// One node in one phase, with where its evidence is.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Cell {
    pub phase: String,
    pub verdict: NodeVerdict,
    pub reason: String,
    /// The phase's `nodes.json`, relative to the output directory (none when it did not run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct NodeAcross {
    pub host: String,
    pub verdict: Overall,
    pub reason: String,
    pub phases: Vec<Cell>,
}

/// Who ran it, where, with what.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RanBy {
    pub user: Option<String>,
    pub host: String,
    pub baton: String,
    pub directory: String,
}

/// `acceptance.json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(title = "baton acceptance outcome")]
pub struct AcceptanceFile {
    pub acceptance: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub file: String,
    /// The acceptance file's git commit (the phase plans' revisions are in their results).
    pub revision: Option<GitRevision>,
    pub ran_by: RanBy,
    pub started: Option<String>,
    pub finished: Option<String>,
    pub seconds: Option<f64>,
    /// `passed`, `failed` or `interrupted`.
    pub status: &'static str,
    pub exit: i32,
    /// Hostlists: the whole node list, and each overall verdict.
    pub nodes: String,
    pub passed: String,
    pub failed: String,
    pub suspect: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    pub phases: Vec<PhaseRecord>,
    pub node_verdicts: Vec<NodeAcross>,
    /// Findings about the cluster, each naming its phase.
    pub findings: Vec<String>,
}

/// The JSON Schema of `acceptance.json`.
pub fn outcome_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(AcceptanceFile)).expect("schema serializes")
}

/// The outcome of `o` over `hosts`.
pub fn outcome(doc: &Acceptance, hosts: &[String], o: &Outcome, ran_by: RanBy) -> AcceptanceFile {
    let node_verdicts: Vec<NodeAcross> = hosts.iter().map(|h| across(h, &o.records)).collect();
    let with = |v: Overall| {
        let hs: Vec<&String> = node_verdicts
            .iter()
            .filter(|n| n.verdict == v)
            .map(|n| &n.host)
            .collect();
        compress(&hs)
    };
    let started = o.records.iter().find_map(|r| r.started.clone());
    let finished = o.records.iter().rev().find_map(|r| r.finished.clone());
    let status = match (o.interrupted, o.exit) {
        (Some(_), _) => "interrupted",
        (None, crate::exit::Exit::Ok) => "passed",
        _ => "failed",
    };
    let findings = o
        .records
        .iter()
        .flat_map(|r| {
            r.findings
                .iter()
                .map(move |f| format!("phase {}: {f}", r.name))
        })
        .collect();
    AcceptanceFile {
        acceptance: doc.name.clone(),
        description: doc.description.clone(),
        file: doc.file.display().to_string(),
        revision: crate::plan::revision::git_revision(&doc.file),
        ran_by,
        seconds: super::run::seconds(started.as_deref(), finished.as_deref()),
        started,
        finished,
        status,
        exit: o.exit.code(),
        nodes: compress(hosts),
        passed: with(Overall::Passed),
        failed: with(Overall::Failed),
        suspect: with(Overall::Suspect),
        stopped: o.stopped.clone(),
        phases: o.records.clone(),
        node_verdicts,
        findings,
    }
}

/// A node's verdict over the phases: the first fault found; else an uncleared suspicion; else
/// passed when some phase tested it.
fn across(host: &str, records: &[PhaseRecord]) -> NodeAcross {
    let phases: Vec<Cell> = records
        .iter()
        .filter_map(|r| {
            let n = r.verdict_of(host)?;
            Some(Cell {
                phase: r.name.clone(),
                verdict: n.verdict,
                reason: n.reason.clone(),
                evidence: r.status.ran().then(|| format!("{}/nodes.json", r.dir)),
            })
        })
        .collect();
    let first = |f: &dyn Fn(NodeVerdict) -> bool| phases.iter().find(|c| f(c.verdict));
    let (verdict, reason) = if let Some(c) = first(&|v| v.is_fault()) {
        let what = if c.verdict == NodeVerdict::Dead {
            "dead"
        } else {
            "failed"
        };
        let why = said_once(what, &c.reason);
        (Overall::Failed, format!("phase {}: {what}: {why}", c.phase))
    } else if let Some(c) = first(&|v| v == NodeVerdict::Suspect) {
        (
            Overall::Suspect,
            format!("phase {}: suspect: {}", c.phase, c.reason),
        )
    } else if let Some(c) = first(&|v| v == NodeVerdict::Passed) {
        let n = phases
            .iter()
            .filter(|c| c.verdict == NodeVerdict::Passed)
            .count();
        (
            Overall::Passed,
            format!("passed in {n} phase(s), first in phase {}", c.phase),
        )
    } else {
        (Overall::Suspect, "never tested by a phase".to_string())
    };
    NodeAcross {
        host: host.to_string(),
        verdict,
        reason,
        phases,
    }
}

/// `reason` without the `WHAT: ` that the drain line already says, at the start of each of its
/// tests' parts (`allreduce-intra-node: dead: did not answer` → `allreduce-intra-node: did not
/// answer`).
fn said_once(what: &str, reason: &str) -> String {
    let word = format!("{what}: ");
    reason
        .split("; ")
        .map(|part| {
            if let Some(rest) = part.strip_prefix(&word) {
                return rest.to_string();
            }
            match part.split_once(": ") {
                Some((test, rest)) if rest.starts_with(&word) => {
                    format!("{test}: {}", &rest[word.len()..])
                }
                _ => part.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Whether a phase's record counts as having run (for the report's words).
pub fn phase_word(s: PhaseStatus) -> &'static str {
    match s {
        PhaseStatus::Passed => "passed",
        PhaseStatus::Failed => "failed (nodes)",
        PhaseStatus::ClusterFailed => "failed (cluster)",
        PhaseStatus::Skipped => "skipped",
        PhaseStatus::Blocked => "blocked",
        PhaseStatus::Stopped => "stopped",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acceptance::record::NodeInPhase;

    fn record(name: &str, verdict: NodeVerdict, reason: &str) -> PhaseRecord {
        PhaseRecord {
            index: 0,
            name: name.into(),
            dir: format!("phases/01-{name}"),
            plan_file: "a.yaml".into(),
            plan: "a".into(),
            status: PhaseStatus::Failed,
            why: None,
            started: None,
            finished: None,
            seconds: None,
            run_began: None,
            run_ended: None,
            overhead_s: None,
            nodes_in: "node03".into(),
            nodes_out: String::new(),
            nodes: vec![NodeInPhase {
                host: "node03".into(),
                verdict,
                reason: reason.into(),
            }],
            findings: Vec::new(),
            criteria: Vec::new(),
            exit: 3,
        }
    }

    /// A drain reason names phase and cause once, whatever the phase's own reason repeats.
    #[test]
    fn a_drain_reason_says_dead_once() {
        let why = "allreduce-intra-node: dead: did not answer after its set's step in round 1 \
                   (set node03); no later set ran on it";
        let n = across("node03", &[record("A", NodeVerdict::Dead, why)]);
        assert_eq!(
            n.reason,
            "phase A: dead: allreduce-intra-node: did not answer after its set's step in \
             round 1 (set node03); no later set ran on it"
        );
        let n = across(
            "node03",
            &[record("A", NodeVerdict::Dead, "dead: did not answer")],
        );
        assert_eq!(n.reason, "phase A: dead: did not answer");
        let two = "soak: dead: did not answer; pairs: dead before this test: none of its sets ran";
        let n = across("node03", &[record("A", NodeVerdict::Dead, two)]);
        assert_eq!(
            n.reason,
            "phase A: dead: soak: did not answer; pairs: dead before this test: none of its sets ran"
        );
        let n = across(
            "node03",
            &[record(
                "B",
                NodeVerdict::Failed,
                "allreduce: failed: busbw low",
            )],
        );
        assert_eq!(n.reason, "phase B: failed: allreduce: busbw low");
    }
}
