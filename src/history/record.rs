//! What the history keeps of a results file: per job, who it was (identity and host set), how it
//! ended, and per requested size the median out-of-place busbw and time over repeats — the
//! numbers a trend is drawn and judged on. Not the raw cells: the results file stays the record.

use crate::results::measure::{followed_placement, measured_sizes, median_busbw, median_time_us};
use crate::results::{JobResult, Results};

/// One run as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// `sha256:…` of the results' content: adding the same results twice adds one run.
    pub key: String,
    /// When the run started (RFC 3339), else when it was added.
    pub date: String,
    pub plan: String,
    pub plan_hash: Option<String>,
    pub jobs: Vec<JobRecord>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    pub job: String,
    /// What a trend compares like with like on: the job's identity (what was measured), or
    /// `id:JOB` for results that carry none (ingested logs).
    pub identity: String,
    /// Sorted, comma-separated hosts the job ran on: a nightly on node X is never judged
    /// against node Y's history.
    pub hosts: String,
    /// `completed`, `partial`, `error`, `timeout`.
    pub status: String,
    pub sizes: Vec<SizeRecord>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SizeRecord {
    pub requested: u64,
    /// GB/s, median over repeats, out-of-place (in-place where only that ran).
    pub busbw: Option<f64>,
    /// µs, likewise.
    pub time_us: Option<f64>,
}

/// The identity a trend looks a job up by.
pub fn identity_of(j: &JobResult) -> String {
    j.identity.clone().unwrap_or_else(|| format!("id:{}", j.id))
}

/// The job's hosts, sorted and comma-separated; the run's hosts when ranks name none.
pub fn hosts_of(j: &JobResult, r: &Results) -> String {
    let mut h: Vec<&str> = j.layout.ranks.iter().map(|x| x.host.as_str()).collect();
    if h.is_empty() {
        h = r
            .environment
            .hosts
            .iter()
            .map(|x| x.hostname.as_str())
            .collect();
    }
    h.sort_unstable();
    h.dedup();
    h.join(",")
}

/// The content key of `r`: its canonical JSON (as baton writes it) hashed, so the same results
/// read from two copies of a file, or re-saved, are one run.
pub fn key_of(r: &Results) -> String {
    let bytes = serde_json::to_vec(r).unwrap_or_default();
    crate::digest::sha256_id(&bytes)
}

pub fn record(r: &Results, added: &str) -> RunRecord {
    RunRecord {
        key: key_of(r),
        date: r.started.clone().unwrap_or_else(|| added.to_string()),
        plan: r.plan.as_ref().map_or_else(String::new, |p| p.name.clone()),
        plan_hash: r.plan.as_ref().and_then(|p| p.hash.clone()),
        jobs: r
            .jobs
            .iter()
            .map(|j| {
                let p = followed_placement(j);
                JobRecord {
                    job: j.id.clone(),
                    identity: identity_of(j),
                    hosts: hosts_of(j, r),
                    status: format!("{:?}", j.status).to_lowercase(),
                    sizes: measured_sizes(j)
                        .into_iter()
                        .map(|s| SizeRecord {
                            requested: s,
                            busbw: median_busbw(j, s, p).filter(|b| b.is_finite()),
                            time_us: median_time_us(j, s, p),
                        })
                        .collect(),
                }
            })
            .collect(),
    }
}
