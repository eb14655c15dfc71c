//! What a report says about the run before any verdict: when it ran and for how long, what
//! produced it, which plan version, with which iteration settings. A handover report is read
//! months later by someone who was not there; these are the questions they ask first.

use serde::Serialize;

use crate::plan::Plan;
use crate::plan::revision::GitRevision;
use crate::results::Results;

/// Facts about the graded run(s), merged over the results files.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunInfo {
    /// Earliest `started` of the results files (RFC 3339).
    pub started: Option<String>,
    /// Latest `finished`; absent when any file is unfinished.
    pub finished: Option<String>,
    /// `finished − started`, when both are known.
    pub duration_s: Option<u64>,
    /// `baton 0.1.0 run`, one per distinct producer.
    pub producers: Vec<String>,
    pub description: Option<String>,
    /// The plan's commit when it ran (from the results), else as it is now (set by the CLI).
    pub git: Option<GitRevision>,
    /// Distinct iteration settings of the jobs graded, e.g. `iters 20, warmup 1, …`.
    pub settings: Vec<String>,
    /// Why a run stopped early, per file that says so.
    pub interrupted: Vec<String>,
    /// The faults a test build injected (`BATON_FAULT`), per file that says so.
    pub injected_faults: Vec<String>,
}

impl RunInfo {
    pub fn of(plan: &Plan, results: &[(String, &Results)]) -> RunInfo {
        let started = results
            .iter()
            .filter_map(|r| r.1.started.clone())
            .min_by_key(|s| timestamp(s));
        let finished = if results.iter().all(|r| r.1.finished.is_some()) {
            results
                .iter()
                .filter_map(|r| r.1.finished.clone())
                .max_by_key(|s| timestamp(s))
        } else {
            None
        };
        let duration_s = match (
            started.as_deref().and_then(timestamp),
            finished.as_deref().and_then(timestamp),
        ) {
            (Some(a), Some(b)) => b.duration_since(a).ok().map(|d| d.as_secs()),
            _ => None,
        };
        let mut producers = Vec::new();
        let mut settings = Vec::new();
        for (_, r) in results {
            let p = format!(
                "{} {} ({})",
                r.producer.tool, r.producer.version, r.producer.command
            );
            if !producers.contains(&p) {
                producers.push(p);
            }
            for j in &r.jobs {
                let s = &j.settings;
                let line = format!(
                    "iters {}, warmup {}, agg_iters {}, cuda_graph {}, check {}, average {}, {} repeat(s)",
                    s.iters,
                    s.warmup,
                    s.agg_iters,
                    s.cuda_graph,
                    if s.check { "on" } else { "off" },
                    format!("{:?}", s.average).to_lowercase(),
                    j.repeats.len()
                );
                if !settings.contains(&line) {
                    settings.push(line);
                }
            }
        }
        RunInfo {
            started,
            finished,
            duration_s,
            producers,
            description: plan.description.clone().or_else(|| {
                results
                    .iter()
                    .find_map(|r| r.1.plan.as_ref()?.description.clone())
            }),
            git: results.iter().find_map(|r| r.1.plan.as_ref()?.git.clone()),
            settings,
            interrupted: results
                .iter()
                .filter_map(|r| r.1.interrupted.clone())
                .collect(),
            injected_faults: results
                .iter()
                .filter_map(|r| r.1.injected_fault.clone())
                .collect(),
        }
    }
}

fn timestamp(s: &str) -> Option<std::time::SystemTime> {
    humantime::parse_rfc3339_weak(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{PlanRef, Producer};

    fn results(started: &str, finished: Option<&str>) -> Results {
        let mut r = Results::new(Producer::baton("run"));
        r.started = Some(started.into());
        r.finished = finished.map(str::to_string);
        r.plan = Some(PlanRef {
            name: "p".into(),
            file: None,
            hash: None,
            description: Some("recorded".into()),
            git: Some(GitRevision {
                commit: "a".repeat(40),
                dirty: true,
            }),
            site: None,
        });
        r
    }

    #[test]
    fn spans_every_file_and_takes_the_recorded_revision() {
        let plan = crate::plan::parse_str(
            "p.yaml",
            "version: 1\nname: p\nbackend: mpi\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [8]\n",
        )
        .map_err(|r| r.short())
        .unwrap()
        .plan;
        let files = vec![
            (
                "b".to_string(),
                results("2026-01-01T10:05:00Z", Some("2026-01-01T10:20:00Z")),
            ),
            (
                "a".to_string(),
                results("2026-01-01T10:00:00Z", Some("2026-01-01T10:10:00Z")),
            ),
        ];
        fn named(f: &[(String, Results)]) -> Vec<(String, &Results)> {
            f.iter().map(|(n, r)| (n.clone(), r)).collect()
        }
        let i = RunInfo::of(&plan, &named(&files));
        assert_eq!(i.started.as_deref(), Some("2026-01-01T10:00:00Z"));
        assert_eq!(i.finished.as_deref(), Some("2026-01-01T10:20:00Z"));
        assert_eq!(i.duration_s, Some(1200));
        assert_eq!(i.description.as_deref(), Some("recorded"));
        assert!(i.git.as_ref().unwrap().dirty);
        assert_eq!(i.producers.len(), 1);
        let unfinished = vec![("a".to_string(), results("2026-01-01T10:00:00Z", None))];
        let i = RunInfo::of(&plan, &named(&unfinished));
        assert_eq!((i.finished, i.duration_s), (None, None));
    }
}
