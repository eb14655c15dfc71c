//! NCCL's lines heard in a run's output, placed on the job that was running when they were
//! printed and on the node that printed them, so they join that job's node evidence like a
//! kernel log line. Jobs of one output run one after another. Which job: first what the
//! printing process said of itself — each rank of baton's worker marks its output as it starts
//! a job, so a line comes after its own process's mark for the job it was printed in (a line
//! before the process's first mark, at communicator init, belongs to the first job) — whatever
//! the line's delay between being printed and being heard. Without a mark (a line naming no
//! process, or a mark for a job the output did not record), by when: the last job that had
//! started by then (a line before the first job's start to the first). When is the time it was
//! heard (to the millisecond), else its own stamp (to the second: it is compared with the
//! starts cut to the second), else unknown (the last job). Which node is the host NCCL's prefix
//! names (`gpu05:5150:5150`, up to the first dot as NCCL prints it); a line that names none of
//! the job's hosts belongs to the job's only host, and is counted, not kept, when the job has
//! several.

use super::diag::Finding;
use crate::probe::kernel_log::KernelEvent;

/// Most lines kept per job and node; the rest are counted.
pub const PER_NODE_LIMIT: usize = 64;

/// A finding, when it was heard (`None`: unknown), and what its process's marks said of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Heard {
    pub at_unix_ms: Option<u64>,
    pub finding: Finding,
    pub started: Started,
}

/// The job the process that printed a line had marked as started when it printed it.
#[derive(Debug, Clone, PartialEq)]
pub enum Started {
    /// No mark speaks for the line (it names no process, or the output has no marks).
    Unknown,
    /// The process had not started a job yet.
    NotYet,
    /// The job of this ID.
    Job(String),
}

/// A job of the output: its ID, when it started (milliseconds since the epoch; unknown when
/// its worker recorded none) and its hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub job: String,
    pub start_unix_ms: Option<u64>,
    pub hosts: Vec<String>,
}

/// The lines of one job on one node (`job` indexes the spans), and how many more there were.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeLines {
    pub job: usize,
    pub host: String,
    pub events: Vec<KernelEvent>,
    pub left_out: u64,
}

/// Places `heard` on `jobs`; `dropped` more lines were heard and not kept (past the output's
/// bound): they are counted on the last job's first host. Entries in job order, then host order.
pub fn place(heard: &[Heard], jobs: &[Span], dropped: u64) -> Vec<NodeLines> {
    let mut out: Vec<NodeLines> = Vec::new();
    if jobs.is_empty() {
        return out;
    }
    let mut unplaced = vec![0u64; jobs.len()];
    let mut placed = Vec::new();
    for h in heard {
        let job = job_of(h, jobs);
        match host_of(h.finding.host.as_deref(), &jobs[job].hosts) {
            Some(host) => placed.push((job, host, h)),
            None => unplaced[job] += 1,
        }
    }
    for (job, host, h) in placed {
        let i = entry(&mut out, job, host);
        if out[i].events.len() < PER_NODE_LIMIT {
            out[i].events.push(h.finding.event.clone());
        } else {
            out[i].left_out += 1;
        }
    }
    unplaced[jobs.len() - 1] += dropped;
    for (job, n) in unplaced.into_iter().enumerate() {
        if let (true, Some(first)) = (n > 0, jobs[job].hosts.first()) {
            let i = entry(&mut out, job, first);
            out[i].left_out += n;
        }
    }
    out.sort_by_key(|n| n.job);
    out
}

/// The index of `job`'s entry for `host` in `out`, made when there is none.
fn entry(out: &mut Vec<NodeLines>, job: usize, host: &str) -> usize {
    match out.iter().position(|n| n.job == job && n.host == host) {
        Some(i) => i,
        None => {
            out.push(NodeLines {
                job,
                host: host.to_string(),
                events: Vec::new(),
                left_out: 0,
            });
            out.len() - 1
        }
    }
}

/// The index of the job `h` was printed in.
fn job_of(h: &Heard, jobs: &[Span]) -> usize {
    match &h.started {
        Started::NotYet => return 0,
        Started::Job(id) => {
            if let Some(i) = jobs.iter().position(|j| &j.job == id) {
                return i;
            }
        }
        Started::Unknown => {}
    }
    let Some(at) = h.at_unix_ms else {
        return jobs.len() - 1;
    };
    // A stamp says the second; the start it is compared with is cut to its second too.
    let coarse = h.at_unix_ms == Some(h.finding.event.at_unix_ms) && h.finding.stamped;
    let start = |s: u64| if coarse { s - s % 1000 } else { s };
    let known = jobs.iter().any(|j| j.start_unix_ms.is_some());
    if !known {
        return jobs.len() - 1;
    }
    jobs.iter()
        .enumerate()
        .filter_map(|(i, j)| Some((i, start(j.start_unix_ms?))))
        .filter(|(_, s)| *s <= at)
        .map(|(i, _)| i)
        .next_back()
        .unwrap_or_else(|| {
            jobs.iter()
                .position(|j| j.start_unix_ms.is_some())
                .unwrap_or(0)
        })
}

/// The host of `hosts` that `named` is (the same name, or its part before the first dot), else
/// the only host.
fn host_of<'a>(named: Option<&str>, hosts: &'a [String]) -> Option<&'a str> {
    fn short(h: &str) -> &str {
        h.split('.').next().unwrap_or(h)
    }
    named
        .and_then(|n| {
            hosts
                .iter()
                .find(|h| h.as_str() == n || short(h) == short(n))
        })
        .or(match hosts {
            [only] => Some(only),
            _ => None,
        })
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ras::diag;

    fn heard(line: &str, at: Option<u64>) -> Heard {
        Heard {
            at_unix_ms: at,
            finding: diag::line(line, at.unwrap_or(0)).expect(line),
            started: Started::Unknown,
        }
    }

    fn span(start: Option<u64>, hosts: &[&str]) -> Span {
        Span {
            job: format!("job-{}", start.unwrap_or(0)),
            start_unix_ms: start,
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
        }
    }

    fn said(p: &[NodeLines]) -> Vec<(usize, &str, usize, u64)> {
        p.iter()
            .map(|n| (n.job, n.host.as_str(), n.events.len(), n.left_out))
            .collect()
    }

    const WARN: &str = "node02:77:77 [0] NCCL WARN Call to ibv_modify_qp failed";

    #[test]
    fn a_line_goes_to_the_job_running_when_it_was_heard_on_the_host_it_names() {
        let jobs = [
            span(Some(10_000), &["node01", "node02"]),
            span(Some(20_000), &["node01", "node02"]),
        ];
        let p = place(
            &[
                heard(WARN, Some(5_000)),  // at init, before any job: the first
                heard(WARN, Some(19_999)), // still the first
                heard(WARN, Some(20_000)), // the second has started
                heard("node01.cluster:9:9 [1] NCCL WARN x", Some(25_000)),
            ],
            &jobs,
            0,
        );
        assert_eq!(
            said(&p),
            [
                (0, "node02", 2, 0),
                (1, "node02", 1, 0),
                (1, "node01", 1, 0)
            ]
        );
    }

    #[test]
    fn a_processs_mark_places_its_line_however_late_it_was_heard() {
        let jobs = [
            span(Some(10_000), &["node02"]),
            span(Some(20_000), &["node02"]),
            span(Some(30_000), &["node02"]),
        ];
        let marked = |started| Heard {
            started,
            ..heard(WARN, Some(35_000))
        };
        let p = place(
            &[
                marked(Started::NotYet),
                marked(Started::Job("job-20000".into())),
                marked(Started::Job("a job not recorded".into())),
                marked(Started::Unknown),
            ],
            &jobs,
            0,
        );
        assert_eq!(
            said(&p),
            [
                (0, "node02", 1, 0),
                (1, "node02", 1, 0),
                (2, "node02", 2, 0)
            ]
        );
    }

    #[test]
    fn a_stamp_is_compared_to_the_second_and_an_undated_line_goes_to_the_last_job() {
        // 2026-11-30 21:04:05 UTC.
        let stamped = format!("[2026-11-30 21:04:05] {WARN}");
        let at = 1_796_072_645_000;
        let jobs = [
            span(Some(at - 3_000), &["node02"]),
            span(Some(at + 700), &["node02"]),
        ];
        let h = heard(&stamped, None);
        let by_stamp = Heard {
            at_unix_ms: Some(h.finding.event.at_unix_ms),
            ..h.clone()
        };
        // Printed in the second the second job started: its stamp cannot say earlier.
        assert_eq!(said(&place(&[by_stamp], &jobs, 0)), [(1, "node02", 1, 0)]);
        assert_eq!(said(&place(&[h], &jobs, 0)), [(1, "node02", 1, 0)]);
        let first = span(Some(at + 5_000), &["node02"]);
        let early = Heard {
            at_unix_ms: Some(at),
            ..heard(&stamped, None)
        };
        assert_eq!(said(&place(&[early], &[first], 0)), [(0, "node02", 1, 0)]);
    }

    #[test]
    fn a_line_naming_no_host_of_the_job_is_its_only_hosts_or_counted() {
        let line = "NCCL DIAG [INFO] p2p: only 54/56 GPU-to-GPU peer accesses passed verification";
        let one = [span(Some(0), &["gpu03"])];
        assert_eq!(
            said(&place(&[heard(line, Some(1))], &one, 0)),
            [(0, "gpu03", 1, 0)]
        );
        let two = [span(Some(0), &["gpu03", "gpu04"])];
        let p = place(&[heard(line, Some(1)), heard(WARN, Some(1))], &two, 3);
        assert_eq!(said(&p), [(0, "gpu03", 0, 5)]);
        assert!(place(&[heard(line, Some(1))], &[], 0).is_empty());
    }

    #[test]
    fn a_node_keeps_its_first_lines_and_counts_the_rest() {
        let many: Vec<Heard> = (0..PER_NODE_LIMIT + 5)
            .map(|i| heard(WARN, Some(i as u64)))
            .collect();
        let p = place(&many, &[span(None, &["node02"])], 0);
        assert_eq!(said(&p), [(0, "node02", PER_NODE_LIMIT, 5)]);
    }
}
