//! `straggler: "p99 <= 2x fleet median"`: the node slow one iteration in a hundred that passes
//! every other criterion. Each set job's per-iteration statistic (over each iteration's slowest
//! rank, the median over repeats) counts for each of its hosts, each node's value is the median over the test's sets it ran
//! in, and a node above the factor times the fleet's median is named — with that evidence — a
//! **suspect** in `nodes.json` (`crate::nodeset::straggler`). Its sets warn rather than fail: a
//! fleet comparison does not isolate a fault. A rerun (`--rerun-failed`) confirms it: its few sets
//! are judged against the earlier run's fleet, and there a set past the factor fails, so
//! attribution with known-good partners fails the suspect like any other.

use std::collections::BTreeMap;

use super::measure::{median, num, placements, samples, sizes};
use super::straggler::value;
use super::verdict::{Case, JobVerdict, Status};
use crate::expand::Job;
use crate::nodeset::straggler::{Standing, standings};
use crate::plan::straggler::Straggler;
use crate::plan::{Check, Criterion};
use crate::results::{FleetValue, JobResult};

/// One node's standing in one fleet-straggler criterion of one test.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeStanding {
    pub test: String,
    pub host: String,
    pub standing: Standing,
    /// `node05: iteration p50 812 us over 2 set(s), 3.2x the fleet median …`.
    pub line: String,
}

/// A set job's value for each of its hosts: the median over repeats of the statistic over each
/// iteration's slowest rank, at the criterion's largest size and first placement. The set's,
/// not each host's own: a rank that starts late keeps its peers waiting, so inside one
/// communicator the slow node's ranks are the ones that wait least.
pub fn host_values(job: &Job, c: &Criterion, s: &Straggler, r: &JobResult) -> Vec<(String, f64)> {
    let (Some(set), Some(&size), Some(&place)) = (
        r.node_set.as_ref(),
        sizes(job, c.at.as_ref()).last(),
        placements(job, Some(c)).first(),
    ) else {
        return Vec::new();
    };
    let mut v: Vec<f64> = samples(r, size, place)
        .iter()
        .filter_map(|smp| smp.cell.iterations.as_ref())
        .map(|it| value(s.stat, &it.summary))
        .collect();
    let Some(m) = median(&mut v) else {
        return Vec::new();
    };
    set.hosts.iter().map(|h| (h.clone(), m)).collect()
}

fn fleet_criteria(job: &Job) -> impl Iterator<Item = (usize, &Criterion, &Straggler)> {
    job.expect
        .iter()
        .enumerate()
        .filter_map(|(i, c)| match &c.check {
            Check::Straggler(s) if s.fleet => Some((i, c, s)),
            _ => None,
        })
}

/// The node values an earlier run's sets measured, for a rerun's [`FleetValue`]s (one per
/// node: `nodes` 1, the value in `busbw`'s place).
pub fn rerun_values(job: &Job, r: &JobResult) -> Vec<FleetValue> {
    fleet_criteria(job)
        .flat_map(|(_, c, s)| {
            host_values(job, c, s, r)
                .into_iter()
                .map(move |(_, v)| FleetValue {
                    job: job.id.clone(),
                    criterion: crate::expand::table::criterion_text(c),
                    nodes: 1,
                    busbw: v,
                })
        })
        .collect()
}

/// A set job of one criterion: its verdict's index and its hosts' values.
type Member = (usize, Vec<(String, f64)>);

/// Judges every fleet-straggler criterion: sets its verdict in each set job (pass, warn past the
/// factor, fail past it in a rerun judged against `fleet`, skipped without a fleet) and returns
/// each node's standing.
pub fn apply(jobs: &[Job], verdicts: &mut [JobVerdict], fleet: &[FleetValue]) -> Vec<NodeStanding> {
    // (plan job, criterion index) → the set jobs (verdict index) and their host values.
    let mut groups: BTreeMap<(String, usize), Vec<Member>> = BTreeMap::new();
    for (vi, (job, v)) in jobs.iter().zip(verdicts.iter()).enumerate() {
        let Some(set) = &job.node_set else { continue };
        for (ci, c, s) in fleet_criteria(job) {
            let values = v
                .source
                .as_ref()
                .map_or_else(Vec::new, |src| host_values(job, c, s, &src.result));
            groups
                .entry((set.job.clone(), ci))
                .or_default()
                .push((vi, values));
        }
    }
    let mut out = Vec::new();
    for ((set_job, ci), members) in groups {
        let job = &jobs[members[0].0];
        let c = &job.expect[ci];
        let Check::Straggler(s) = &c.check else {
            continue;
        };
        let text = crate::expand::table::criterion_text(c);
        let earlier: Vec<f64> = fleet
            .iter()
            .filter(|f| f.job == set_job && f.criterion == text && f.nodes == 1)
            .map(|f| f.busbw)
            .collect();
        let rerun = !earlier.is_empty();
        let mut hosts: Vec<String> = Vec::new();
        let mut values: Vec<Vec<f64>> = Vec::new();
        for (_, hv) in &members {
            for (h, v) in hv {
                let i = hosts.iter().position(|x| x == h).unwrap_or_else(|| {
                    hosts.push(h.clone());
                    values.push(Vec::new());
                    hosts.len() - 1
                });
                values[i].push(*v);
            }
        }
        let judged = standings(&values, rerun.then_some(&earlier[..]), s.factor);
        let of = if rerun { "the earlier run's" } else { "the" };
        let lines: Vec<Option<(Standing, String)>> = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let st = judged.as_ref()?.get(i).copied().flatten()?;
                let line = format!(
                    "{h}: iteration {} {} us over {} set(s), {:.1}x {of} fleet median {} us (robust z {:.1}; allowed {s})",
                    s.stat.name(),
                    num(st.value),
                    st.sets,
                    if st.median > 0.0 { st.value / st.median } else { 0.0 },
                    num(st.median),
                    st.z
                );
                Some((st, line))
            })
            .collect();
        for (h, l) in hosts.iter().zip(&lines) {
            if let Some((st, line)) = l {
                out.push(NodeStanding {
                    test: job.test.clone(),
                    host: h.clone(),
                    standing: *st,
                    line: line.clone(),
                });
            }
        }
        for (vi, hv) in &members {
            let mine: Vec<&(Standing, String)> = hv
                .iter()
                .filter_map(|(h, _)| lines[hosts.iter().position(|x| x == h)?].as_ref())
                .collect();
            let (status, message) = set_verdict(&mine, rerun, hv.is_empty(), judged.is_none());
            set_criterion(&mut verdicts[*vi], &text, status, message, c);
        }
    }
    out
}

fn set_verdict(
    mine: &[&(Standing, String)],
    rerun: bool,
    no_value: bool,
    too_few: bool,
) -> (Status, String) {
    if no_value {
        return (
            Status::Skipped,
            "this set has no per-iteration timing at the criterion's size; its other criteria say why".into(),
        );
    }
    if too_few {
        return (
            Status::Skipped,
            format!(
                "fewer than {} nodes measured per-iteration timing: no fleet to compare with",
                crate::nodeset::attribution::MIN_PEERS
            ),
        );
    }
    let slow: Vec<&str> = mine
        .iter()
        .filter(|m| m.0.straggler)
        .map(|m| m.1.as_str())
        .collect();
    match slow.first() {
        Some(_) if rerun => (Status::Fail, slow.join("; ")),
        Some(_) => (
            Status::Warn,
            format!("slow but passing: {}", slow.join("; ")),
        ),
        None => (
            Status::Pass,
            mine.iter()
                .map(|m| m.1.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        ),
    }
}

fn set_criterion(v: &mut JobVerdict, text: &str, status: Status, message: String, c: &Criterion) {
    let status = if status == Status::Fail && c.severity == crate::plan::Severity::Warn {
        Status::Warn
    } else {
        status
    };
    if let Some(cv) = v
        .criteria
        .iter_mut()
        .find(|x| x.key == "straggler" && x.text == text)
    {
        cv.status = status;
        cv.message = message.clone();
        cv.cases = vec![Case::whole(status, message)];
    }
    v.status = super::worst(v.criteria.iter().map(|c| c.status));
}

/// `nodes.json` of one test: a node that passed there but stands out from the fleet becomes a
/// suspect, with the evidence as its reason.
pub fn mark_suspects(
    file: &mut crate::nodeset::export::NodesFile,
    test: &str,
    found: &[NodeStanding],
) {
    use crate::nodeset::Verdict;
    let mut changed = false;
    for e in &mut file.nodes {
        let Some(f) = found
            .iter()
            .find(|f| f.test == test && f.host == e.host && f.standing.straggler)
        else {
            continue;
        };
        if e.verdict == Verdict::Passed {
            e.verdict = Verdict::Suspect;
            e.reason = format!("slow but passing: {}", f.line);
            changed = true;
        }
    }
    if changed {
        let list = |v: Verdict| {
            let h: Vec<&str> = file
                .nodes
                .iter()
                .filter(|e| e.verdict == v)
                .map(|e| e.host.as_str())
                .collect();
            crate::nodeset::compress(&h)
        };
        file.passed = list(Verdict::Passed);
        file.suspect = list(Verdict::Suspect);
    }
}
