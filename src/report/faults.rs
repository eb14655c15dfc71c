//! The faults no single node explains, one line each, for the report and the run's summary.
//! Attribution names a fault by its shape (two nodes that pass with others fail together: a
//! *link*); how the set failed is in its jobs. A set that timed out did not run slow, it hung —
//! a frozen process or a path that stopped delivering — and the line says so.

use std::collections::{HashMap, HashSet};

use crate::grade::{Grade, JobVerdict, SetVerdict, TestNodes};
use crate::nodeset::export::FaultEntry;
use crate::results::{ErrorKind, JobStatus};

/// Every fault of every test: `pairs: link n2–n3: hung (timed out in round 1); failed together
/// in round 1, each passed with others`.
pub fn fault_lines(g: &Grade) -> Vec<String> {
    let by_id: HashMap<&str, &JobVerdict> = g.jobs.iter().map(|j| (j.id.as_str(), j)).collect();
    g.node_sets
        .iter()
        .flat_map(|t| t.nodes.faults.iter().map(move |f| (t, f)))
        .map(|(t, f)| line(t, f, &by_id))
        .collect()
}

fn line(t: &TestNodes, f: &FaultEntry, by_id: &HashMap<&str, &JobVerdict>) -> String {
    let sides = if f.b.is_empty() {
        f.a.clone()
    } else {
        format!("{}–{}", f.a, f.b)
    };
    let hung: Vec<u32> = fault_sets(t, f)
        .filter(|s| timed_out(s, by_id))
        .map(|s| s.round)
        .collect();
    match hung.as_slice() {
        [] => format!("{}: {} {sides}: {}", t.test, f.kind, f.reason),
        rounds => format!(
            "{}: {} {sides}: hung (timed out in round {}); {}",
            t.test,
            f.kind,
            rounds
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            f.reason
        ),
    }
}

/// The failed sets of `t` made only of the fault's nodes, at least two of them: the sets the
/// fault was seen in.
fn fault_sets<'t>(t: &'t TestNodes, f: &FaultEntry) -> impl Iterator<Item = &'t SetVerdict> {
    let nodes: HashSet<String> = [&f.a, &f.b]
        .into_iter()
        .filter(|l| !l.is_empty())
        .flat_map(|l| crate::nodeset::expand(l).unwrap_or_default())
        .collect();
    t.sets.iter().filter(move |s| {
        s.status == crate::grade::Status::Fail
            && s.hosts.len() >= 2
            && s.hosts.iter().all(|h| nodes.contains(h))
    })
}

/// Whether one of the set's jobs ended by a timeout: the ranks' watchdog, or the runner
/// stopping a step whose journal fell silent.
fn timed_out(s: &SetVerdict, by_id: &HashMap<&str, &JobVerdict>) -> bool {
    s.jobs
        .iter()
        .filter_map(|id| by_id.get(id.as_str())?.source.as_ref())
        .any(|src| {
            src.result.status == JobStatus::Timeout
                || src
                    .result
                    .errors
                    .iter()
                    .any(|e| e.kind == ErrorKind::Timeout)
        })
}
