//! Baselines keyed by what they measured: a job *and the hosts it ran on*. A nightly gate on
//! node X compared against node Y's numbers measures the difference between two nodes, not a
//! regression — and passes or fails for that reason alone. So a baseline entry stands for a run
//! only when both measured the job on the same hosts; one baseline file may hold a job once per
//! host set (`baseline save` of node X's and node Y's runs), and the entry of the run's own hosts
//! is the one compared. Where hosts are not recorded (some nccl-tests logs), nothing can be told
//! apart and the job's entry is used as before.

use crate::results::{JobResult, Results};

/// The hosts a job's ranks ran on, sorted, without repeats; empty when not recorded.
pub fn hosts_of(j: &JobResult) -> Vec<String> {
    let mut h: Vec<String> = j
        .layout
        .ranks
        .iter()
        .map(|r| r.host.clone())
        .filter(|h| !h.is_empty())
        .collect();
    h.sort();
    h.dedup();
    h
}

/// Whether `a` and `b` measured the same job: the same plan job ID, or for ingested logs without
/// one (`ingest` without `--job`) the same collective, type, operation, root and rank count.
fn same_job(a: &JobResult, b: &JobResult) -> bool {
    use crate::results::MatchBy;
    if a.match_by == MatchBy::Id && b.match_by == MatchBy::Id {
        return a.id == b.id;
    }
    a.collective == b.collective
        && a.dtype == b.dtype
        && a.op == b.op
        && a.root == b.root
        && a.layout.nranks == b.layout.nranks
}

/// A job the baseline holds only from other hosts than the run's.
#[derive(Debug, Clone, PartialEq)]
pub struct HostMismatch {
    /// The job's ID in the run's results.
    pub job: String,
    /// The run's hosts.
    pub hosts: Vec<String>,
    /// The host set of each baseline entry of the job.
    pub baseline_hosts: Vec<Vec<String>>,
}

impl HostMismatch {
    /// What a reader needs to know, naming both sides and the fix.
    pub fn message(&self, baseline: &str) -> String {
        self.message_for(&self.job, baseline)
    }

    /// [`HostMismatch::message`] naming the job `job` (the plan's ID for it).
    pub fn message_for(&self, job: &str, baseline: &str) -> String {
        let sets: Vec<String> = self.baseline_hosts.iter().map(|h| h.join(",")).collect();
        format!(
            "job `{job}` ran on {}, but the baseline {baseline} has it only from {}: a baseline is compared only with runs on the same hosts (save one from {} with `baton baseline save`)",
            self.hosts.join(","),
            sets.join(" and "),
            self.hosts.join(",")
        )
    }
}

/// The baseline as the runs in `runs` should see it: per job, only the entry measured on the
/// run's hosts; jobs the baseline holds only from other hosts are left out and returned.
pub fn select(baseline: &Results, runs: &[&Results]) -> (Results, Vec<HostMismatch>) {
    let mut kept = Vec::new();
    let mut mismatches: Vec<HostMismatch> = Vec::new();
    for j in &baseline.jobs {
        let run_job = runs.iter().flat_map(|r| &r.jobs).find(|r| same_job(r, j));
        let run_hosts = run_job.map(hosts_of).unwrap_or_default();
        let mine = hosts_of(j);
        if run_hosts.is_empty() || mine.is_empty() || mine == run_hosts {
            kept.push(j.clone());
            continue;
        }
        // Another entry of this job may be the run's hosts; or none is, and it is a mismatch.
        let other_fits = baseline
            .jobs
            .iter()
            .any(|o| same_job(o, j) && (hosts_of(o) == run_hosts || hosts_of(o).is_empty()));
        if !other_fits {
            let id = run_job.map_or(&j.id, |r| &r.id);
            match mismatches.iter_mut().find(|m| m.job == *id) {
                Some(m) => m.baseline_hosts.push(mine),
                None => mismatches.push(HostMismatch {
                    job: id.clone(),
                    hosts: run_hosts,
                    baseline_hosts: vec![mine],
                }),
            }
        }
    }
    let mut selected = baseline.clone();
    selected.jobs = kept;
    (selected, mismatches)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = include_str!("../tests/data/nccl-tests/h200x2/all_reduce.txt");

    /// A results file of the fixture log's job once per `(id, hosts)`, its ranks on those hosts.
    fn results(jobs: &[(&str, &[&str])]) -> Results {
        let input = [crate::ingest::LogInput {
            name: "ar.txt",
            bytes: LOG.as_bytes(),
        }];
        let mut r = crate::ingest::ingest(&input, Some("x")).unwrap().results;
        let template = r.jobs.remove(0);
        for (id, hosts) in jobs {
            let mut j = template.clone();
            j.id = id.to_string();
            j.match_by = crate::results::MatchBy::Id;
            for (k, rank) in j.layout.ranks.iter_mut().enumerate() {
                rank.host = hosts
                    .get(k)
                    .or(hosts.first())
                    .map_or("", |h| *h)
                    .to_string();
            }
            r.jobs.push(j);
        }
        r
    }

    #[test]
    fn the_entry_of_the_runs_hosts_is_kept_and_other_hosts_are_a_mismatch() {
        let base = results(&[("a", &["n1"]), ("a", &["n2"]), ("b", &["n2"]), ("c", &[])]);
        let run = results(&[("a", &["n2"]), ("b", &["n1"]), ("c", &["n1"])]);
        let (kept, mismatches) = select(&base, &[&run]);
        let kept: Vec<(String, Vec<String>)> = kept
            .jobs
            .iter()
            .map(|j| (j.id.clone(), hosts_of(j)))
            .collect();
        assert_eq!(
            kept,
            [("a".into(), vec!["n2".into()]), ("c".into(), vec![])],
            "a from n2, c unknown hosts kept; b only from n2"
        );
        assert_eq!(
            mismatches,
            [HostMismatch {
                job: "b".into(),
                hosts: vec!["n1".into()],
                baseline_hosts: vec![vec!["n2".into()]],
            }]
        );
        assert!(
            mismatches[0]
                .message("base.json")
                .starts_with("job `b` ran on n1, but the baseline base.json has it only from n2: ")
        );
    }
}
