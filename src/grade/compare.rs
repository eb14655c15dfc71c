//! Two runs side by side — last week's baseline and today's — per job and size, with the ratio
//! and the shape of any drop. What `baton baseline compare` prints.

use serde::Serialize;

use super::diagnosis::{Diagnosis, classify};
use super::evidence::{Side, explain, facts, settings_changed};
use super::measure::{
    describe_result, measured_sizes, median, median_busbw, printed_size, samples,
};
use crate::results::{CellStatus, JobResult, Placement, Results};

/// Drop (%) that counts as real in a comparison.
const TOLERANCE: f64 = 5.0;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeComparison {
    pub requested: u64,
    /// Median over repeats of the recorded (printed) values, out-of-place.
    pub old_time_us: Option<f64>,
    pub new_time_us: Option<f64>,
    pub old_busbw: Option<f64>,
    pub new_busbw: Option<f64>,
    /// new / old busbw, from size and time (1.0 = unchanged, 0.8 = 20% slower).
    pub ratio: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobComparison {
    pub id: String,
    pub old_id: String,
    pub what: String,
    pub sizes: Vec<SizeComparison>,
    pub diagnosis: Option<Diagnosis>,
    /// Transport classes seen (old, new), when the runs captured them.
    pub old_transports: Vec<String>,
    pub new_transports: Vec<String>,
    /// NCCL/UCX variables whose values differ: `NAME=new (old: …)`.
    pub settings: Vec<String>,
}

impl Comparison {
    /// Whether any job got slower than the tolerance at some size: what `baseline compare`
    /// exits 1 on.
    pub fn regressed(&self) -> bool {
        self.jobs.iter().any(|j| j.diagnosis.is_some())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub old: String,
    pub new: String,
    pub jobs: Vec<JobComparison>,
    /// Jobs of either side with no counterpart.
    pub unmatched: Vec<String>,
}

fn same_job(a: &JobResult, b: &JobResult) -> bool {
    a.collective == b.collective
        && a.dtype == b.dtype
        && a.op == b.op
        && a.root == b.root
        && a.layout.nranks == b.layout.nranks
        && a.groups == b.groups
}

fn recorded(
    r: &JobResult,
    s: u64,
    f: impl Fn(&crate::results::Cell) -> Option<f64>,
) -> Option<f64> {
    let mut v: Vec<f64> = samples(r, s, Placement::OutOfPlace)
        .iter()
        .filter(|x| x.cell.status == CellStatus::Ok)
        .filter_map(|x| f(x.cell))
        .collect();
    median(&mut v)
}

fn classes(r: &JobResult) -> Vec<String> {
    let mut v: Vec<String> = r.transports.iter().map(|t| t.transport.clone()).collect();
    v.sort();
    v.dedup();
    v
}

/// Compares every job of `new` with its counterpart in `old` (same ID, else same collective,
/// dtype, op, root, ranks and groups).
pub fn compare(old_name: &str, old: &Results, new_name: &str, new: &Results) -> Comparison {
    let mut used = vec![false; old.jobs.len()];
    let mut jobs = Vec::new();
    let mut unmatched = Vec::new();
    for n in &new.jobs {
        let k = old.jobs.iter().position(|o| o.id == n.id).or_else(|| {
            old.jobs
                .iter()
                .enumerate()
                .position(|(i, o)| !used[i] && same_job(o, n))
        });
        let Some(k) = k else {
            unmatched.push(format!(
                "{new_name}: {} ({}) has no counterpart in {old_name}",
                n.id,
                describe_result(n)
            ));
            continue;
        };
        used[k] = true;
        let o = &old.jobs[k];
        let mut all: Vec<u64> = measured_sizes(o);
        all.extend(measured_sizes(n));
        all.sort_unstable();
        all.dedup();
        let sizes: Vec<SizeComparison> = all
            .iter()
            .map(|&s| {
                let moves = printed_size(n, s)
                    .or(printed_size(o, s))
                    .is_some_and(|b| b > 0);
                let ratio = match (
                    median_busbw(o, s, Placement::OutOfPlace),
                    median_busbw(n, s, Placement::OutOfPlace),
                ) {
                    (Some(a), Some(b)) if a > 0.0 && moves => Some(b / a),
                    _ => None,
                };
                SizeComparison {
                    requested: s,
                    old_time_us: recorded(o, s, |c| c.time_us),
                    new_time_us: recorded(n, s, |c| c.time_us),
                    old_busbw: recorded(o, s, |c| c.busbw),
                    new_busbw: recorded(n, s, |c| c.busbw),
                    ratio,
                }
            })
            .collect();
        let drops: Vec<(u64, f64)> = sizes
            .iter()
            .filter_map(|c| Some((c.requested, (1.0 - c.ratio?) * 100.0)))
            .collect();
        let (old_t, new_t) = (classes(o), classes(n));
        let then = Side {
            job: o,
            env: Some(&old.environment),
        };
        let now = Side {
            job: n,
            env: Some(&new.environment),
        };
        let diagnosis = classify(&drops, TOLERANCE).map(|d| {
            explain(
                super::hints::drop_shape(n.backend, d),
                facts(then, now, None),
            )
        });
        let settings = settings_changed(then, now)
            .into_iter()
            .map(|(k, new, old)| {
                format!(
                    "{k}={} (old: {})",
                    new.as_deref().unwrap_or("not set"),
                    old.as_deref().unwrap_or("not recorded")
                )
            })
            .collect();
        jobs.push(JobComparison {
            id: n.id.clone(),
            old_id: o.id.clone(),
            what: describe_result(n),
            diagnosis,
            sizes,
            old_transports: old_t,
            new_transports: new_t,
            settings,
        });
    }
    for (i, o) in old.jobs.iter().enumerate() {
        if !used[i] {
            unmatched.push(format!(
                "{old_name}: {} ({}) has no counterpart in {new_name}",
                o.id,
                describe_result(o)
            ));
        }
    }
    Comparison {
        old: old_name.to_string(),
        new: new_name.to_string(),
        jobs,
        unmatched,
    }
}
