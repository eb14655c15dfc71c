//! Several runs of one plan graded together: a run and its rerun (`--rerun-failed`, or the
//! plan run again) measure some jobs twice, and "2 results match this job" is advice for
//! unlabelled logs, not for them. The rule: the latest measurement is the verdict. Each run is
//! graded on its own, oldest first; a job or node set a later run measured again takes the later
//! verdict, and the earlier one is kept as history ([`Superseded`], a node's `earlier`). Logs
//! stay as matching has them: only `baton run` results record when they started.

use serde::Serialize;

use super::verdict::{Grade, JobVerdict};
use crate::nodeset::export::{EarlierVerdict, NodeEntry, NodesFile};
use crate::results::{MatchBy, Results};

/// An earlier verdict of a job that a later run measured again.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Superseded {
    /// The job ID.
    pub job: String,
    /// The results file of the earlier measurement, and its verdict there.
    pub file: String,
    pub status: String,
    /// The results file whose measurement is the verdict now.
    pub by: String,
}

/// The indices of `results` oldest first, when they are runs of `baton run` (each with its
/// start time) and some job ID is measured in more than one of them; `None` otherwise.
pub fn in_order(results: &[(String, &Results)]) -> Option<Vec<usize>> {
    if results.len() < 2 {
        return None;
    }
    let runs = results
        .iter()
        .all(|(_, r)| r.producer.command == "run" && r.started.is_some());
    let ids = |r: &Results| -> Vec<String> {
        r.jobs
            .iter()
            .filter(|j| j.match_by == MatchBy::Id)
            .map(|j| j.id.clone())
            .collect()
    };
    let mut seen = std::collections::HashSet::new();
    let twice = results
        .iter()
        .flat_map(|(_, r)| {
            let mut v = ids(r);
            v.sort();
            v.dedup();
            v
        })
        .any(|id| !seen.insert(id));
    if !(runs && twice) {
        return None;
    }
    let mut order: Vec<usize> = (0..results.len()).collect();
    let at = |i: usize| {
        results[i]
            .1
            .started
            .as_deref()
            .and_then(|s| humantime::parse_rfc3339_weak(s).ok())
    };
    order.sort_by_key(|&i| at(i));
    Some(order)
}

/// The grades of each run, oldest first, as one: per job the latest measured verdict, per node
/// the latest run that tested it; `all` is the grade of every file together, for what belongs
/// to no one run (environment, run facts, unmatched results).
pub fn combine(per_run: Vec<Grade>, mut all: Grade) -> Grade {
    let mut jobs: Vec<JobVerdict> = Vec::new();
    let mut superseded = Vec::new();
    for g in &per_run {
        for v in &g.jobs {
            let Some(k) = jobs.iter().position(|j| j.id == v.id) else {
                jobs.push(v.clone());
                continue;
            };
            // A run that did not measure a job (it reran other nodes) leaves its verdict be.
            if v.source.is_none() && jobs[k].source.is_some() {
                continue;
            }
            if let Some(s) = superseding(&jobs[k], v) {
                superseded.push(s);
            }
            jobs[k] = v.clone();
        }
    }
    all.status = super::worst(jobs.iter().map(|j| j.status));
    all.jobs = jobs;
    all.superseded = superseded;
    all.node_sets = per_run.iter().flat_map(|g| g.node_sets.clone()).collect();
    all.nodes = latest_nodes(&per_run);
    all
}

fn superseding(old: &JobVerdict, new: &JobVerdict) -> Option<Superseded> {
    let file = old.source.as_ref()?.file.clone();
    Some(Superseded {
        job: old.id.clone(),
        file,
        status: old.status.label().to_string(),
        by: new.source.as_ref()?.file.clone(),
    })
}

/// Per node, its entry from the latest run whose sets tested it, with what earlier runs said
/// of it as history; hostlists recomputed.
fn latest_nodes(per_run: &[Grade]) -> Option<NodesFile> {
    let files: Vec<(&str, &NodesFile)> = per_run
        .iter()
        .filter_map(|g| Some((g.results_files.first()?.as_str(), g.nodes.as_ref()?)))
        .collect();
    let (_, newest) = files.last()?;
    let mut nodes: Vec<(String, NodeEntry)> = Vec::new();
    let was = |file: &str, n: &NodeEntry| EarlierVerdict {
        results: file.to_string(),
        verdict: n.verdict,
        reason: n.reason.clone(),
    };
    for (file, f) in &files {
        for e in &f.nodes {
            match nodes.iter_mut().find(|(_, n)| n.host == e.host) {
                Some((from, n)) if tested(e) || !tested(n) => {
                    let mut history = std::mem::take(&mut n.earlier);
                    history.push(was(from, n));
                    *n = NodeEntry {
                        earlier: history,
                        ..e.clone()
                    };
                    *from = file.to_string();
                }
                // A later run that left the node out says nothing of it.
                Some(_) => {}
                None => nodes.push((file.to_string(), e.clone())),
            }
        }
    }
    let nodes: Vec<NodeEntry> = nodes.into_iter().map(|(_, n)| n).collect();
    Some(NodesFile::of(
        nodes,
        newest.faults.clone(),
        newest.cluster.clone(),
    ))
}

/// Whether a run's sets measured the node (rather than leaving it out, or finding it dead
/// before its sets).
fn tested(e: &NodeEntry) -> bool {
    e.tests.iter().any(|t| t.verdict.judged())
}
