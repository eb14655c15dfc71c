//! Grading node sets: each set's jobs are graded as any job; then the fleet-relative `outlier`
//! criterion compares each set with the median of the sets of its shape, and attribution turns
//! set verdicts into node verdicts (`crate::nodeset::attribution`), test by test.

use std::collections::BTreeMap;

use serde::Serialize;

use super::measure;
use super::verdict::{Case, JobVerdict, Status};
use crate::expand::Job;
use crate::expand::nodesets::is_one_job;
use crate::nodeset::attribution::{self, Outlier, SetOutcome, SetResult, Verdict, attribute_known};
use crate::nodeset::confirm::rerun_rounds;
use crate::nodeset::export::{
    self, ClusterEntry, NodeEntry, NodesFile, SetFacts, TestEntry, TestVerdict,
};
use crate::nodeset::isolate::Recorded;
use crate::nodeset::{Isolator, Over};
use crate::plan::{Check, Criterion, Plan, Test};
use crate::results::{FleetValue, JobResult, Results, SetRun};
use crate::units::Cmp;

/// One node set of a test, as graded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetVerdict {
    pub round: u32,
    pub index: u32,
    pub hosts: Vec<String>,
    pub status: Status,
    /// Its jobs' IDs.
    pub jobs: Vec<String>,
    /// How its step ended, and the hosts found dead after it.
    pub ended: Option<String>,
    pub dead: Vec<String>,
    /// Median busbw at the largest size all its jobs measured (first job), for the pair matrix.
    pub busbw: Option<f64>,
    pub seconds: Option<f64>,
}

/// One test's node sets and the node verdicts they support.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestNodes {
    pub test: String,
    /// `each-node`, `pairs`, `isolate`, `all`.
    pub over: &'static str,
    /// The run's node list.
    pub hosts: Vec<String>,
    pub rounds: u32,
    pub sets: Vec<SetVerdict>,
    pub nodes: NodesFile,
    /// `over: all` that failed or could not run: why, for the cluster findings.
    pub finding: Option<String>,
}

/// One set job's value for an `outlier` criterion: (verdict index, node count, busbw), grouped
/// by (plan job, criterion index).
type Sample = (usize, usize, f64);

/// A set job's value for an `outlier` criterion: its median busbw at the criterion's largest
/// size and first placement.
fn outlier_value(job: &Job, c: &Criterion, result: &JobResult) -> Option<f64> {
    let size = *measure::sizes(job, c.at.as_ref()).last()?;
    let place = *measure::placements(job, Some(c)).first()?;
    measure::median_busbw(result, size, place)
}

/// The values of `outlier` criteria that the node sets of `earlier` measured: the fleet a
/// rerun of a few of its nodes judges its own sets against.
pub fn rerun_fleet(plan: &Plan, earlier: &Results) -> Vec<FleetValue> {
    let jobs = crate::expand::expand(plan).jobs;
    let mut out = Vec::new();
    for r in &earlier.jobs {
        let Some(set) = &r.node_set else { continue };
        let Some(job) = jobs.iter().find(|j| j.id == set.job) else {
            continue;
        };
        out.extend(super::fleet_straggler::rerun_values(job, r));
        for c in job.expect.iter() {
            if !matches!(c.check, Check::Outlier(_)) {
                continue;
            }
            if let Some(busbw) = outlier_value(job, c, r).filter(|v| v.is_finite()) {
                out.push(FleetValue {
                    job: job.id.clone(),
                    criterion: crate::expand::table::criterion_text(c),
                    nodes: set.hosts.len() as u32,
                    busbw,
                });
            }
        }
    }
    out
}

/// Applies `outlier` criteria: for each criterion, each set job's busbw at the criterion's
/// largest size against the sets of the same plan job and node count — of this run, or of the
/// earlier run's `fleet` when this is a rerun that recorded one.
pub fn apply_outliers(jobs: &[Job], verdicts: &mut [JobVerdict], fleet: &[FleetValue]) {
    let mut groups: BTreeMap<(String, usize), Vec<Sample>> = BTreeMap::new();
    for (vi, (job, v)) in jobs.iter().zip(verdicts.iter()).enumerate() {
        let Some(set) = &job.node_set else { continue };
        for (ci, c) in job.expect.iter().enumerate() {
            if !matches!(c.check, Check::Outlier(_)) {
                continue;
            }
            let value = v
                .source
                .as_ref()
                .and_then(|s| outlier_value(job, c, &s.result))
                .unwrap_or(f64::NAN);
            groups
                .entry((set.job.clone(), ci))
                .or_default()
                .push((vi, set.hosts.len(), value));
        }
    }
    for ((_, ci), members) in groups {
        let Some(job) = members.first().map(|m| &jobs[m.0]) else {
            continue;
        };
        let c = &job.expect[ci];
        let Check::Outlier(t) = &c.check else {
            continue;
        };
        let samples: Vec<(usize, f64)> = members.iter().map(|m| (m.1, m.2)).collect();
        let text = crate::expand::table::criterion_text(c);
        let size = measure::sizes(job, c.at.as_ref())
            .last()
            .map_or_else(|| "its size".to_string(), |s| measure::size(*s));
        let set_job = job.node_set.as_ref().map_or("", |s| s.job.as_str());
        let earlier: Vec<(usize, f64)> = fleet
            .iter()
            .filter(|f| f.job == set_job && f.criterion == text)
            .map(|f| (f.nodes as usize, f.busbw))
            .collect();
        let (limit, strict) = (t.value / 100.0, t.cmp == Cmp::Lt);
        let judged = if earlier.is_empty() {
            attribution::outliers(&samples, limit, strict)
        } else {
            attribution::outliers_against(&earlier, &samples, limit, strict)
        };
        let (of, earlier_run) = if earlier.is_empty() {
            ("", "")
        } else {
            ("the earlier run's ", " in the earlier run")
        };
        for ((vi, _, value), o) in members.iter().zip(judged) {
            let v = &mut verdicts[*vi];
            // Criteria come after the implicit ones, in plan order: find this one by its text.
            let Some(cv) = v
                .criteria
                .iter_mut()
                .find(|x| x.key == "outlier" && x.text == text)
            else {
                continue;
            };
            let (status, message) = match o {
                Outlier::Within { median, deficit, z } => (
                    Status::Pass,
                    format!(
                        "busbw {} GB/s is {} below the median {} GB/s of {of}sets of its shape (robust z {z:.1})",
                        measure::num(*value),
                        measure::pct(deficit.max(0.0) * 100.0),
                        measure::num(median)
                    ),
                ),
                Outlier::Below { median, deficit, z } => (
                    Status::Fail,
                    format!(
                        "busbw {} GB/s is {} below the median {} GB/s of {of}{}-node sets (robust z {z:.1})",
                        measure::num(*value),
                        measure::pct(deficit * 100.0),
                        measure::num(median),
                        job_nodes(job)
                    ),
                ),
                Outlier::TooFew { peers } => (
                    Status::Skipped,
                    format!(
                        "only {peers} set(s) of this shape measured busbw at {size}{earlier_run}: `outlier` needs at least {} to compare",
                        attribution::MIN_PEERS
                    ),
                ),
                Outlier::NoValue { peers } => (
                    Status::Skipped,
                    format!(
                        "this set has no busbw at {size} to compare with the {peers} set(s) of its shape{earlier_run} that do; its other criteria say why"
                    ),
                ),
            };
            let status = if status == Status::Fail && c.severity == crate::plan::Severity::Warn {
                Status::Warn
            } else {
                status
            };
            cv.status = status;
            cv.message = message.clone();
            cv.cases = vec![Case::whole(status, message)];
        }
    }
    for v in verdicts.iter_mut() {
        v.status = super::worst(v.criteria.iter().map(|c| c.status));
    }
}

/// Fails the node sets of tests between nodes (`pairs`, `isolate`) that ran on fewer than
/// two nodes: nothing crossed between nodes, so whatever they measured proves no link.
pub fn fail_lone_sets(plan: &Plan, jobs: &[Job], verdicts: &mut [JobVerdict]) {
    for (job, v) in jobs.iter().zip(verdicts.iter_mut()) {
        let Some(set) = &job.node_set else { continue };
        let over = plan
            .tests
            .iter()
            .find(|t| t.name == job.test)
            .map(|t| t.over);
        let Some(over) = over.filter(|o| matches!(o, Over::Pairs(_) | Over::Isolate)) else {
            continue;
        };
        if set.hosts.len() >= 2 {
            continue;
        }
        let message = format!(
            "`over: {}` ran this set on {} node(s): a pair needs two nodes, so nothing between \
             nodes was measured",
            over.name(),
            set.hosts.len()
        );
        v.criteria.push(failed(
            "node_set",
            "a node set of two or more nodes",
            message,
        ));
        v.status = Status::Fail;
    }
}

fn job_nodes(job: &Job) -> usize {
    job.node_set.as_ref().map_or(0, |s| s.hosts.len())
}

/// Node verdicts of every test that ran over node sets.
pub fn attribute_tests(
    plan: &Plan,
    jobs: &[Job],
    verdicts: &[JobVerdict],
    results: &[(String, &Results)],
    stragglers: &[super::fleet_straggler::NodeStanding],
) -> Vec<TestNodes> {
    let Some(run) = results
        .iter()
        .map(|r| &r.1)
        .find(|r| !r.node_list.is_empty())
    else {
        return Vec::new();
    };
    let hosts = &run.node_list;
    let index = |h: &String| hosts.iter().position(|x| x == h);
    let mut out = Vec::new();
    for test in &plan.tests {
        let runs: Vec<&SetRun> = run
            .node_sets
            .iter()
            .filter(|s| s.test == test.name)
            .collect();
        if runs.is_empty() {
            continue;
        }
        let mut sets: Vec<(SetVerdict, SetFacts)> = runs
            .iter()
            .map(|s| {
                let mine: Vec<(&Job, &JobVerdict)> = jobs
                    .iter()
                    .zip(verdicts)
                    .filter(|(j, _)| {
                        j.test == test.name
                            && j.node_set
                                .as_ref()
                                .is_some_and(|n| n.round == s.round && n.hosts == s.hosts)
                    })
                    .collect();
                let status = if !s.dead.is_empty() || mine.is_empty() {
                    Status::Fail
                } else {
                    super::worst(mine.iter().map(|(_, v)| v.status))
                };
                let busbw = mine.first().and_then(|(j, v)| {
                    let r = &v.source.as_ref()?.result;
                    let size = *measure::measured_sizes(r).last()?;
                    let place = *measure::placements(j, None).first()?;
                    measure::median_busbw(r, size, place)
                });
                let facts = SetFacts {
                    busbw,
                    failed: first_failed(mine.iter().map(|(_, v)| *v)),
                    ended: s.ended.clone(),
                    launcher: s.launcher.clone(),
                    skipped: s.journal.is_empty() && !s.dead.is_empty(),
                    moved: mine
                        .iter()
                        .filter_map(|(_, v)| v.source.as_ref())
                        .flat_map(|s| super::cite::moved(&s.result))
                        .collect(),
                };
                let verdict = SetVerdict {
                    round: s.round,
                    index: s.index,
                    hosts: s.hosts.clone(),
                    status,
                    jobs: mine.iter().map(|(j, _)| j.id.clone()).collect(),
                    ended: s.ended.clone(),
                    dead: s.dead.clone(),
                    busbw,
                    seconds: s.seconds,
                };
                (verdict, facts)
            })
            .collect();
        sets.sort_by_key(|(s, _)| (s.round, s.index));
        // A set the launcher refused tested nothing: no evidence for or against its nodes; nor
        // did one a signal stopped before its step recorded a job (its sets fail the test, as
        // not done, but blame no node).
        let stopped = run.interrupted.is_some();
        let refused = |s: &SetVerdict| {
            runs.iter()
                .any(|r| r.round == s.round && r.index == s.index && r.refused.is_some())
                || (stopped && s.jobs.is_empty() && s.dead.is_empty())
        };
        let (sets, facts): (Vec<SetVerdict>, Vec<SetFacts>) = sets.into_iter().unzip();
        let facts: Vec<SetFacts> = sets
            .iter()
            .zip(facts)
            .filter(|(s, _)| !refused(s))
            .map(|(_, f)| f)
            .collect();
        let outcomes: Vec<SetOutcome> = sets
            .iter()
            .filter(|s| !refused(s))
            .map(|s| SetOutcome {
                round: s.round,
                nodes: s.hosts.iter().filter_map(index).collect(),
                result: if !s.dead.is_empty() {
                    SetResult::Dead(s.dead.iter().filter_map(index).collect())
                } else if matches!(s.status, Status::Pass | Status::Warn | Status::Skipped) {
                    SetResult::Pass
                } else {
                    SetResult::Fail
                },
            })
            .collect();
        let n = hosts.len();
        let good: Vec<usize> = run
            .rerun
            .iter()
            .flat_map(|r| r.known_good.iter().filter_map(index))
            .collect();
        let generic = || attribute_known(n, &outcomes, &good);
        // A rerun's `isolate` confirms against known-good nodes; it replays no isolation.
        let a = if test.over == Over::Isolate && run.rerun.is_none() {
            let named: Vec<Vec<usize>> = sets
                .iter()
                .filter(|s| !refused(s))
                .zip(&outcomes)
                .map(|(s, o)| match o.result {
                    SetResult::Fail => ras_named(run, hosts, s, &o.nodes),
                    _ => Vec::new(),
                })
                .collect();
            isolate_attribution(plan, hosts, &outcomes, &named).unwrap_or_else(generic)
        } else {
            generic()
        };
        let mut a = a;
        crate::nodeset::evidence::blame(&mut a, &outcomes, &implicated(hosts, &facts));
        let mut file = export::nodes_file(hosts, &a, &outcomes, &facts);
        explain_refused(&mut file, &runs);
        super::fleet_straggler::mark_suspects(&mut file, &test.name, stragglers);
        out.push(TestNodes {
            test: test.name.clone(),
            over: test.over.name(),
            hosts: hosts.clone(),
            rounds: sets.iter().map(|s| s.round).max().unwrap_or(0),
            finding: (test.over == Over::All)
                .then(|| cluster_finding(&test.name, jobs, verdicts))
                .flatten(),
            sets,
            nodes: file,
        });
    }
    out
}

/// Why a test over the whole node list failed: its first failed criterion, as its verdict
/// says it (`not run: n3 was proven dead earlier …` when it could not run).
fn cluster_finding(test: &str, jobs: &[Job], verdicts: &[JobVerdict]) -> Option<String> {
    jobs.iter()
        .zip(verdicts)
        .filter(|(j, v)| j.test == test && v.status == Status::Fail)
        .flat_map(|(_, v)| v.criteria.iter())
        .find(|c| c.status == Status::Fail)
        .map(|c| format!("{}: {}", c.text, c.message))
}

/// Per set, the nodes whose own counters moved during it (not TCP's, which both ends count, nor
/// NCCL's reports, which the survivors of a fault print too).
fn implicated(hosts: &[String], facts: &[SetFacts]) -> Vec<Vec<usize>> {
    facts
        .iter()
        .map(|f| {
            let mut nodes: Vec<usize> = f
                .moved
                .iter()
                .filter(|(_, c)| c.iter().any(|c| c.isolates()))
                .filter_map(|(h, _)| hosts.iter().position(|x| x == h))
                .collect();
            nodes.sort_unstable();
            nodes.dedup();
            nodes
        })
        .collect()
}

/// The first criterion the set's jobs failed: its key and its text as the plan reads.
fn first_failed<'v>(jobs: impl Iterator<Item = &'v JobVerdict>) -> Option<(&'static str, String)> {
    jobs.flat_map(|v| v.criteria.iter())
        .find(|c| c.status == Status::Fail)
        .map(|c| (c.key, c.text.clone()))
}

/// The node-set run among `results` (the one with a node list).
fn node_set_run<'r>(results: &[(String, &'r Results)]) -> Option<&'r Results> {
    results
        .iter()
        .map(|r| r.1)
        .find(|r| !r.node_list.is_empty())
}

/// How many node sets of `test` the run recorded, and how many its schedule holds (`None`:
/// `isolate`, whose rounds had not run out), when it recorded fewer: the run stopped before
/// the rest (a signal, a crash, a launcher refusal), so the test is not done.
fn unfinished(test: &Test, run: &Results) -> Option<(usize, Option<usize>)> {
    let hosts = &run.node_list;
    let n = hosts.len();
    // A set ran when it left a job, or a node of it was dead (it ran, or was skipped for it);
    // a set a signal stopped before its step started left neither.
    let recorded: Vec<&SetRun> = run
        .node_sets
        .iter()
        .filter(|s| s.test == test.name)
        .filter(|s| {
            !s.dead.is_empty()
                || run.jobs.iter().any(|j| {
                    j.node_set.as_ref().is_some_and(|n| {
                        (n.round, n.index, &n.hosts) == (s.round, s.index, &s.hosts)
                    })
                })
        })
        .collect();
    let good: Vec<usize> = run
        .rerun
        .iter()
        .flat_map(|r| r.known_good.iter())
        .filter_map(|h| hosts.iter().position(|x| x == h))
        .collect();
    let expected = if !good.is_empty() {
        Some(rerun_rounds(test.over, n, &good).iter().map(Vec::len).sum())
    } else if test.over == Over::Isolate {
        let cut = run.interrupted.is_some() || run.finished.is_none();
        // Whether isolation would go on cannot be told from the sets alone: a run that
        // stopped before it finished is not done; one that finished is.
        return (cut || recorded.is_empty()).then_some((recorded.len(), None));
    } else if test.over == Over::All || is_one_job(test.over, n) {
        Some(1)
    } else {
        test.over.set_count(n).map(|c| c as usize)
    };
    let expected = expected?;
    (recorded.len() < expected).then_some((recorded.len(), Some(expected)))
}

/// The plan jobs of node-set tests whose schedule the run did not finish, beside the set jobs
/// it did run: they stand for the sets that never ran, and fail closed.
pub fn keep_unfinished(
    plan: &Plan,
    plan_jobs: &[Job],
    jobs: &mut Vec<Job>,
    results: &[(String, &Results)],
) {
    let Some(run) = node_set_run(results) else {
        return;
    };
    for test in &plan.tests {
        if unfinished(test, run).is_none() {
            continue;
        }
        for pj in plan_jobs.iter().filter(|j| j.test == test.name) {
            if !jobs.iter().any(|j| j.id == pj.id) {
                jobs.push(pj.clone());
            }
        }
    }
}

/// Says why the plan job of a node-set test has no results: its sets never ran, or not all
/// of them did before the run stopped.
pub fn explain_unrun(
    plan: &Plan,
    jobs: &[Job],
    verdicts: &mut [JobVerdict],
    results: &[(String, &Results)],
) {
    let Some(run) = node_set_run(results) else {
        return;
    };
    let by = run
        .interrupted
        .as_deref()
        .map_or(String::new(), |s| format!(" (stopped by {s})"));
    for (job, v) in jobs.iter().zip(verdicts.iter_mut()) {
        if job.node_set.is_some() || v.source.is_some() {
            continue;
        }
        let Some(test) = plan.tests.iter().find(|t| t.name == job.test) else {
            continue;
        };
        // The sets' own reason (`not run: n3 was proven dead earlier`) says more than "none ran".
        let said = v
            .criteria
            .iter()
            .find(|c| c.key == "results" && c.message.starts_with("not run"))
            .map(|c| c.message.clone());
        let message = match unfinished(test, run) {
            Some((0, _)) | None => match said {
                Some(why) => format!("{why}{by}"),
                None => format!("no node set of this test ran{by}"),
            },
            Some((k, Some(e))) => {
                format!("cut short{by}: {k} of its {e} node set(s) ran, the rest never started")
            }
            Some((k, None)) => {
                format!("cut short{by}: {k} node set(s) ran before isolation could finish")
            }
        };
        v.criteria = vec![failed("results", "results present and complete", message)];
        v.status = Status::Fail;
    }
}

/// A check baton makes of node sets, failed with `message`.
fn failed(key: &'static str, text: &str, message: String) -> super::verdict::CriterionVerdict {
    super::verdict::CriterionVerdict::from_cases(
        key,
        text.into(),
        None,
        vec![Case::whole(Status::Fail, message.clone())],
        message,
    )
}

/// Nodes left untested because the launcher refused their set's step say so: they are
/// suspect only in that nothing was measured on them, which a rerun after the fix does.
fn explain_refused(file: &mut NodesFile, runs: &[&SetRun]) {
    for e in &mut file.nodes {
        if !(e.failed_rounds.is_empty() && e.passed_rounds.is_empty()) {
            continue;
        }
        let why = runs
            .iter()
            .find(|r| r.hosts.contains(&e.host))
            .and_then(|r| r.refused.as_deref());
        if let Some(why) = why {
            e.reason = format!("never tested: the launcher refused its set's step ({why})");
        }
    }
}

/// The nodes of a failed set that its jobs' RAS records named, as the run read them.
fn ras_named(run: &Results, hosts: &[String], s: &SetVerdict, nodes: &[usize]) -> Vec<usize> {
    let named: Vec<&str> = s
        .jobs
        .iter()
        .filter_map(|id| run.job(id))
        .flat_map(|j| j.ras_named())
        .collect();
    crate::nodeset::isolate::named_in(hosts, nodes, &named)
}

/// `isolate`'s own attribution (boundaries, confirmed candidates), replayed from the recorded
/// rounds and the nodes RAS named in them (`named`, per outcome); `None` when the rounds do not
/// replay (the plan's criteria changed since the run, so the verdicts now differ from those
/// that chose the rounds): generic attribution then.
fn isolate_attribution(
    plan: &Plan,
    hosts: &[String],
    outcomes: &[SetOutcome],
    named: &[Vec<usize>],
) -> Option<attribution::Attribution> {
    let domains = crate::expand::nodesets::domain_indices(&plan.nodes.domains, hosts);
    let mut recorded: Vec<Recorded> = Vec::new();
    for (o, named) in outcomes.iter().zip(named) {
        let r = o.round as usize;
        while recorded.len() < r {
            recorded.push(Recorded::default());
        }
        let round = &mut recorded[r - 1];
        round.sets.push(o.nodes.clone());
        round.results.push(o.result.clone());
        round.named.extend(named);
    }
    let iso = Isolator::replay(hosts.len(), &domains, &recorded).ok()?;
    Some(iso.attribution())
}

/// How strong test `test`'s evidence for node `e` is, so a merged reason leads with the
/// strongest: its death seen, then the more failing sets it ran in; 0 when the test never ran
/// it (it had died before: its sets there hold no job).
fn strength(tests: &[TestNodes], test: &str, e: &NodeEntry) -> u32 {
    let Some(t) = tests.iter().find(|t| t.test == test) else {
        return 0;
    };
    let ran: Vec<&SetVerdict> = t
        .sets
        .iter()
        .filter(|s| s.hosts.contains(&e.host) && !s.jobs.is_empty())
        .collect();
    if ran.iter().any(|s| s.dead.contains(&e.host)) {
        return u32::MAX;
    }
    ran.iter().filter(|s| s.status == Status::Fail).count() as u32
}

const MISMATCH: &str = "config-mismatch: ";
const LEFT_OUT: &str = "; left out of every bandwidth round";

/// A config-mismatch node's reason in `nodes.json`.
fn mismatch_reason(why: &str) -> String {
    format!("{MISMATCH}{why}{LEFT_OUT}")
}

/// The nodes left out for their configuration, each with what differs
/// (`eth0 mtu 1400, fleet 1500`): each is a failed node, so the grade fails.
pub fn config_mismatches(nodes: Option<&NodesFile>) -> Vec<(&str, &str)> {
    nodes
        .map_or(&[][..], |n| &n.nodes[..])
        .iter()
        .filter(|n| n.verdict == Verdict::ConfigMismatch)
        .map(|n| {
            let why = n.reason.strip_prefix(MISMATCH).unwrap_or(&n.reason);
            (n.host.as_str(), why.strip_suffix(LEFT_OUT).unwrap_or(why))
        })
        .collect()
}

/// `nodes` with the nodes the preflight left out of the rounds: verdict `config-mismatch`,
/// the reason naming each field, its value and the fleet's (or the plan's).
pub fn with_preflight(mut nodes: NodesFile, results: &[(String, &Results)]) -> NodesFile {
    let Some(pf) = results.iter().find_map(|r| r.1.preflight.as_ref()) else {
        return nodes;
    };
    for (host, why) in pf.excluded() {
        nodes.nodes.retain(|n| n.host != host);
        nodes.nodes.push(NodeEntry::new(
            host,
            Verdict::ConfigMismatch,
            mismatch_reason(&why),
        ));
    }
    nodes
}

/// One `nodes.json` for the run: a node's verdict comes from the tests whose sets tested it —
/// failed in any is failed, else suspect in any is suspect, else passed; its reasons name their
/// tests. A test that never ran the node (it was dead before, or left out) and a test over the
/// whole node list that failed as a whole (a cluster finding, `cluster`) judge no node; a node
/// no test judged is suspect, never tested.
pub fn merged(tests: &[TestNodes]) -> Option<NodesFile> {
    let first = tests.first()?;
    let hosts = &first.hosts;
    let mut nodes: Vec<NodeEntry> = Vec::new();
    for h in hosts {
        let entries: Vec<(&str, &NodeEntry)> = tests
            .iter()
            .filter_map(|t| {
                Some((
                    t.test.as_str(),
                    t.nodes.nodes.iter().find(|e| &e.host == h)?,
                ))
            })
            .collect();
        let per_test: Vec<TestEntry> = tests.iter().filter_map(|t| test_entry(t, h)).collect();
        let judged: Vec<(&str, &NodeEntry)> = entries
            .iter()
            .filter(|(t, _)| per_test.iter().any(|p| p.test == *t && p.verdict.judged()))
            .copied()
            .collect();
        let from = if judged.is_empty() { &entries } else { &judged };
        let verdict = if judged.is_empty() {
            Verdict::Suspect
        } else if judged.iter().any(|(_, e)| e.verdict == Verdict::Failed) {
            Verdict::Failed
        } else if judged.iter().any(|(_, e)| e.verdict == Verdict::Suspect) {
            Verdict::Suspect
        } else {
            Verdict::Passed
        };
        let mut mine: Vec<(&str, &NodeEntry, u32)> = from
            .iter()
            .filter(|(_, e)| judged.is_empty() || e.verdict == verdict)
            .map(|(t, e)| (*t, *e, strength(tests, t, e)))
            .collect();
        // The strongest evidence first; tests that never ran the node (it had died) say
        // nothing the test where it died does not.
        mine.sort_by_key(|m| std::cmp::Reverse(m.2));
        if mine.iter().any(|m| m.2 > 0) {
            mine.retain(|m| m.2 > 0);
        }
        let reason = mine
            .iter()
            .map(|(t, e, _)| format!("{t}: {}", e.reason))
            .collect::<Vec<_>>()
            .join("; ");
        let rounds = |of: fn(&NodeEntry) -> &Vec<u32>| {
            let mut r: Vec<u32> = entries.iter().flat_map(|(_, e)| of(e)).copied().collect();
            r.sort_unstable();
            r.dedup();
            r
        };
        nodes.push(NodeEntry {
            host: h.clone(),
            verdict,
            reason,
            failed_rounds: rounds(|e| &e.failed_rounds),
            passed_rounds: rounds(|e| &e.passed_rounds),
            tests: per_test,
            earlier: Vec::new(),
            warnings: entries
                .iter()
                .flat_map(|(t, e)| e.warnings.iter().map(move |w| format!("{t}: {w}")))
                .collect(),
        });
    }
    let faults = tests
        .iter()
        .filter(|t| t.finding.is_none())
        .flat_map(|t| {
            t.nodes.faults.iter().map(move |f| export::FaultEntry {
                reason: format!("{}: {}", t.test, f.reason),
                ..f.clone()
            })
        })
        .collect();
    let cluster = tests.iter().filter_map(cluster_entry).collect();
    Some(NodesFile::of(nodes, faults, cluster))
}

/// A failed test over the whole node list, as a cluster finding.
fn cluster_entry(t: &TestNodes) -> Option<ClusterEntry> {
    let reason = t.finding.clone()?;
    let hosts: Vec<&str> = t
        .sets
        .iter()
        .flat_map(|s| s.hosts.iter().map(String::as_str))
        .collect();
    Some(ClusterEntry {
        test: t.test.clone(),
        hosts: crate::nodeset::compress(&hosts),
        reason,
    })
}

/// Whether a set measured anything: not one the runner skipped for a node dead before it, nor
/// one the launcher refused.
fn ran(s: &SetVerdict) -> bool {
    !s.jobs.is_empty() && !s.ended.as_deref().is_some_and(|e| e.starts_with("not run"))
}

/// What test `t` says of node `h`: from the sets of it that ran and held the node.
fn test_entry(t: &TestNodes, h: &String) -> Option<TestEntry> {
    let e = t.nodes.nodes.iter().find(|e| &e.host == h)?;
    let held: Vec<&SetVerdict> = t.sets.iter().filter(|s| s.hosts.contains(h)).collect();
    let tested: Vec<&SetVerdict> = held.iter().copied().filter(|s| ran(s)).collect();
    let failing = tested.iter().find(|s| s.status == Status::Fail);
    let deciding = match e.verdict {
        Verdict::Passed => tested.iter().find(|s| s.status != Status::Fail),
        _ => failing,
    }
    .or(tested.first())
    .or(held.first());
    let set = deciding.map_or(String::new(), |s| crate::nodeset::compress(&s.hosts));
    let (verdict, reason) = if tested.is_empty() {
        (TestVerdict::NotTested, e.reason.clone())
    } else if t.finding.is_some() && !failing.is_some_and(|s| s.dead.contains(h)) {
        let why = "the test over the whole node list failed as a whole: a cluster finding";
        (TestVerdict::Cluster, why.to_string())
    } else {
        let v = match e.verdict {
            Verdict::Passed => TestVerdict::Passed,
            Verdict::Failed => TestVerdict::Failed,
            Verdict::Suspect => TestVerdict::Suspect,
            // Left out of every round before it started.
            Verdict::ConfigMismatch => TestVerdict::NotTested,
        };
        (v, e.reason.clone())
    };
    Some(TestEntry {
        test: t.test.clone(),
        set,
        verdict,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_mismatch_node_is_named_with_what_differs() {
        let entry = |host: &str, verdict, reason: String| NodeEntry {
            host: host.into(),
            verdict,
            reason,
            failed_rounds: Vec::new(),
            passed_rounds: Vec::new(),
            warnings: Vec::new(),
            tests: Vec::new(),
            earlier: Vec::new(),
        };
        let nodes = NodesFile {
            passed: "n1".into(),
            failed: "n2".into(),
            suspect: String::new(),
            nodes: vec![
                entry("n1", Verdict::Passed, "passed".into()),
                entry(
                    "n2",
                    Verdict::ConfigMismatch,
                    mismatch_reason("eth0 mtu 1400, fleet 1500"),
                ),
            ],
            faults: Vec::new(),
            cluster: Vec::new(),
        };
        assert_eq!(
            config_mismatches(Some(&nodes)),
            [("n2", "eth0 mtu 1400, fleet 1500")]
        );
        assert!(config_mismatches(None).is_empty());
    }

    fn set(round: u32, hosts: &[&str], status: Status, dead: &[&str], ran: bool) -> SetVerdict {
        SetVerdict {
            round,
            index: 0,
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            status,
            jobs: if ran { vec!["j".into()] } else { Vec::new() },
            ended: None,
            dead: dead.iter().map(|h| h.to_string()).collect(),
            busbw: None,
            seconds: None,
        }
    }

    fn test_nodes(test: &str, sets: Vec<SetVerdict>, reason: &str) -> TestNodes {
        let entry = |host: &str, verdict, reason: &str| NodeEntry {
            failed_rounds: vec![1],
            ..NodeEntry::new(host, verdict, reason)
        };
        TestNodes {
            test: test.into(),
            over: "pairs",
            hosts: vec!["n1".into(), "n2".into()],
            rounds: 1,
            sets,
            nodes: NodesFile {
                passed: "n1".into(),
                failed: "n2".into(),
                suspect: String::new(),
                nodes: vec![
                    entry("n1", Verdict::Passed, "passed in 1 set"),
                    entry("n2", Verdict::Failed, reason),
                ],
                faults: Vec::new(),
                cluster: Vec::new(),
            },
            finding: None,
        }
    }

    /// #21 item 10: one reason per node, the strongest evidence first; a test that never ran
    /// the node (it had died) does not repeat that it is dead.
    #[test]
    fn a_merged_reason_leads_with_the_strongest_evidence_and_says_death_once() {
        let died = test_nodes(
            "soak",
            vec![set(1, &["n1", "n2"], Status::Fail, &["n2"], true)],
            "dead: did not answer after its set's step in round 1",
        );
        let measured = test_nodes(
            "pairs",
            vec![set(1, &["n1", "n2"], Status::Fail, &[], true)],
            "busbw 1.80 GB/s, 97% below the median pair",
        );
        let never = test_nodes(
            "late",
            vec![set(1, &["n1", "n2"], Status::Fail, &["n2"], false)],
            "dead before this test: none of its sets ran",
        );
        let m = merged(&[measured, never, died]).unwrap();
        assert_eq!(
            m.nodes[1].reason,
            "soak: dead: did not answer after its set's step in round 1; \
             pairs: busbw 1.80 GB/s, 97% below the median pair"
        );
    }
}
