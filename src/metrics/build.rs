//! A grade as metric families. Names follow Prometheus' conventions: base units in the name
//! (`bytes_per_second`, `seconds`), every family a gauge (no `_total`: nothing here counts up),
//! labels only of bounded sets — the plan, its job IDs, requested sizes as numbers of bytes,
//! hosts, and fixed state names — never a message or other free text. The job label is
//! `job_id`: `job` and `instance` are the labels Prometheus gives every scraped series.

use super::text::{Family, Sample};
use crate::exit::Exit;
use crate::grade::{Grade, JobVerdict, Status};
use crate::nodeset::attribution::Verdict;
use crate::probe::delta::ChangeKind;
use crate::results::CellStatus;
use crate::results::measure::{
    followed_placement, measured_sizes, median_busbw, median_time_us, samples,
};

/// The node verdict states, as `baton_node_verdict`'s `verdict` label spells them; a node's
/// sample is 1 for its state and 0 for the others, so a query needs no absent series.
const NODE_STATES: [&str; 4] = ["passed", "failed", "suspect", "config-mismatch"];
const JOB_STATES: [&str; 4] = ["pass", "warn", "fail", "skipped"];

/// Every family of `g`; `exit` is the command's (a runtime failure outranks the verdict's),
/// `now` (seconds since the epoch) when the file is written.
pub fn families(g: &Grade, exit: Exit, now: f64) -> Vec<Family> {
    let plan = || ("plan", g.plan.clone());
    vec![
        run_info(g),
        gauge(
            "baton_run_start_timestamp_seconds",
            "When the graded run started (earliest results file), seconds since the epoch.",
            epoch(g.run.started.as_deref()).map(|t| Sample::new(vec![plan()], t)),
        ),
        gauge(
            "baton_run_end_timestamp_seconds",
            "When the graded run finished (latest results file), seconds since the epoch.",
            epoch(g.run.finished.as_deref()).map(|t| Sample::new(vec![plan()], t)),
        ),
        gauge(
            "baton_metrics_timestamp_seconds",
            "When baton wrote these metrics, seconds since the epoch.",
            Some(Sample::new(vec![plan()], now)),
        ),
        gauge(
            "baton_run_exit_code",
            "The command's exit status (0 passed, 1 a criterion failed, 3 runtime failure, 4 timeout, 5 interrupted).",
            Some(Sample::new(vec![plan()], f64::from(exit.code()))),
        ),
        Family {
            name: "baton_run_status",
            help: "The plan's verdict: 1 for its status, 0 for the others.",
            samples: states(&JOB_STATES, status(g.status), || vec![plan()]),
        },
        Family {
            name: "baton_job_status",
            help: "Each plan job's verdict: 1 for its status, 0 for the others.",
            samples: g
                .jobs
                .iter()
                .flat_map(|j| {
                    states(&JOB_STATES, status(j.status), || {
                        vec![plan(), ("job_id", j.id.clone())]
                    })
                })
                .collect(),
        },
        per_size(g, Measure::Busbw),
        per_size(g, Measure::Time),
        iteration_p99(g),
        node_verdicts(g),
        evidence_increases(g),
    ]
}

fn gauge(name: &'static str, help: &'static str, s: Option<Sample>) -> Family {
    Family {
        name,
        help,
        samples: s.into_iter().collect(),
    }
}

fn run_info(g: &Grade) -> Family {
    let revision = g.run.git.as_ref().map_or_else(String::new, |r| {
        let dirty = if r.dirty { "-dirty" } else { "" };
        format!("{}{dirty}", r.commit)
    });
    let labels = vec![
        ("plan", g.plan.clone()),
        ("revision", revision),
        ("baton_version", env!("CARGO_PKG_VERSION").to_string()),
        (
            "nccl_version",
            g.environment.nccl_version.clone().unwrap_or_default(),
        ),
    ];
    gauge(
        "baton_run_info",
        "The graded run: plan, plan revision (git commit), baton and NCCL versions; always 1.",
        Some(Sample::new(labels, 1.0)),
    )
}

/// One sample per state, 1 for `current`.
fn states(
    all: &[&'static str],
    current: &str,
    labels: impl Fn() -> Vec<(&'static str, String)>,
) -> Vec<Sample> {
    all.iter()
        .map(|s| {
            let mut l = labels();
            l.push(("status", s.to_string()));
            Sample::new(l, if *s == current { 1.0 } else { 0.0 })
        })
        .collect()
}

fn status(s: Status) -> &'static str {
    match s {
        Status::Pass => "pass",
        Status::Warn => "warn",
        Status::Fail => "fail",
        Status::Skipped => "skipped",
    }
}

#[derive(Clone, Copy)]
enum Measure {
    Busbw,
    Time,
}

/// busbw or time per job and requested size: out-of-place (in-place where only that ran),
/// median over repeats, as the history keeps them.
fn per_size(g: &Grade, m: Measure) -> Family {
    let samples = g.jobs.iter().flat_map(|j| job_sizes(g, j, m)).collect();
    match m {
        Measure::Busbw => Family {
            name: "baton_busbw_bytes_per_second",
            help: "Bus bandwidth per job and requested size, median over repeats (out-of-place).",
            samples,
        },
        Measure::Time => Family {
            name: "baton_time_seconds",
            help: "Time of one collective per job and requested size, median over repeats (out-of-place).",
            samples,
        },
    }
}

fn job_sizes(g: &Grade, j: &JobVerdict, m: Measure) -> Vec<Sample> {
    let Some(src) = &j.source else {
        return Vec::new();
    };
    let r = &src.result;
    let p = followed_placement(r);
    measured_sizes(r)
        .into_iter()
        .filter_map(|s| {
            let v = match m {
                Measure::Busbw => median_busbw(r, s, p).map(|b| b * 1e9),
                Measure::Time => median_time_us(r, s, p).map(|t| t * 1e-6),
            }?;
            let labels = vec![
                ("plan", g.plan.clone()),
                ("job_id", j.id.clone()),
                ("size_bytes", s.to_string()),
            ];
            v.is_finite().then(|| Sample::new(labels, v))
        })
        .collect()
}

/// The iteration p99 of each job and requested size where the run timed iterations
/// (`iterations: true`, or an nccl-tests `-J` log of `-I 1`): over each iteration's slowest
/// rank, median over repeats.
fn iteration_p99(g: &Grade) -> Family {
    let samples = g
        .jobs
        .iter()
        .filter_map(|j| Some((j, &j.source.as_ref()?.result)))
        .flat_map(|(j, r)| {
            let p = followed_placement(r);
            measured_sizes(r).into_iter().filter_map(move |s| {
                let mut v: Vec<f64> = samples(r, s, p)
                    .iter()
                    .filter(|x| x.cell.status == CellStatus::Ok)
                    .filter_map(|x| x.cell.iterations.as_ref())
                    .map(|i| i.summary.p99_us * 1e-6)
                    .filter(|t| t.is_finite())
                    .collect();
                let p99 = crate::stats::median(&mut v)?;
                let labels = vec![
                    ("plan", g.plan.clone()),
                    ("job_id", j.id.clone()),
                    ("size_bytes", s.to_string()),
                ];
                Some(Sample::new(labels, p99))
            })
        })
        .collect();
    Family {
        name: "baton_iteration_p99_seconds",
        help: "Iteration time p99 per job and requested size (over each iteration's slowest rank), median over repeats; only where iterations were timed.",
        samples,
    }
}

/// How much each node's counters climbed during the graded jobs (node evidence: the probe's
/// snapshots before and after each job), summed per host, device and counter. Labels are the
/// kernel's own device and counter names, a bounded set per node; state changes and kernel
/// lines stay in the results and the report.
fn evidence_increases(g: &Grade) -> Family {
    let mut sums: std::collections::BTreeMap<(String, String, String), f64> = Default::default();
    let changes = g
        .jobs
        .iter()
        .filter_map(|j| j.source.as_ref())
        .flat_map(|s| &s.result.evidence)
        .flat_map(|e| {
            e.delta
                .iter()
                .flat_map(|d| &d.changes)
                .map(move |c| (&e.host, c))
        });
    for (host, c) in changes {
        if let ChangeKind::Increased { before, after } = c.kind {
            let key = (host.clone(), c.subject.clone(), c.what.clone());
            *sums.entry(key).or_default() += after.saturating_sub(before) as f64;
        }
    }
    let samples = sums
        .into_iter()
        .map(|((host, device, counter), v)| {
            let labels = vec![
                ("plan", g.plan.clone()),
                ("host", host),
                ("device", device),
                ("counter", counter),
            ];
            Sample::new(labels, v)
        })
        .collect();
    Family {
        name: "baton_node_evidence_increase",
        help: "How much a node's counter climbed during the graded jobs (node evidence), summed over jobs, per host, device and counter.",
        samples,
    }
}

fn node_verdicts(g: &Grade) -> Family {
    let samples = g
        .nodes
        .iter()
        .flat_map(|n| &n.nodes)
        .flat_map(|n| {
            let current = match n.verdict {
                Verdict::Passed => "passed",
                Verdict::Failed => "failed",
                Verdict::Suspect => "suspect",
                Verdict::ConfigMismatch => "config-mismatch",
            };
            NODE_STATES.iter().map(move |s| {
                let labels = vec![
                    ("plan", g.plan.clone()),
                    ("host", n.host.clone()),
                    ("verdict", s.to_string()),
                ];
                Sample::new(labels, if *s == current { 1.0 } else { 0.0 })
            })
        })
        .collect();
    Family {
        name: "baton_node_verdict",
        help: "Each node's verdict over the node-set tests: 1 for its verdict, 0 for the others.",
        samples,
    }
}

/// An RFC 3339 time as seconds since the epoch.
fn epoch(t: Option<&str>) -> Option<f64> {
    let t = humantime::parse_rfc3339_weak(t?).ok()?;
    t.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs_f64())
}
