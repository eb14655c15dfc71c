//! Verdicts: what grading concludes, in a shape every exporter (terminal, JUnit, Markdown, HTML)
//! renders without re-deciding anything.

use serde::Serialize;

use super::diagnosis::Diagnosis;
use crate::exit::Exit;
use crate::plan::{Criterion, Severity};
use crate::results::{Environment, JobResult, JobStatus};

/// Outcome of a check. Ordered from best to worst so the worst of several is their `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    /// The criterion does not apply to this job (e.g. `group_spread` on a job without a split).
    Skipped,
    /// Failed, but its severity is `warn`: reported, never fails the plan.
    Warn,
    Fail,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Skipped => "SKIP",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        }
    }
}

/// One graded point of a criterion: a requested size, or the whole job for criteria without one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Case {
    /// Stable name for CI history: the size (`1G`), or `all` for whole-job checks.
    pub name: String,
    pub requested: Option<u64>,
    pub status: Status,
    /// Readable on its own on a CI page: what was measured, against what, where.
    pub message: String,
}

impl Case {
    /// The case of one requested size.
    pub fn at_size(requested: u64, status: Status, message: String) -> Case {
        Case {
            name: super::measure::size(requested),
            requested: Some(requested),
            status,
            message,
        }
    }

    /// A size's case from the lines that held (`seen`) and those that did not (`fails`).
    pub fn from_lines(requested: u64, fails: &[String], seen: &[String]) -> Case {
        if fails.is_empty() {
            Case::at_size(requested, Status::Pass, seen.join("; "))
        } else {
            Case::at_size(requested, Status::Fail, fails.join("; "))
        }
    }

    /// The one case of a verdict that is not per size.
    pub fn whole(status: Status, message: String) -> Case {
        Case {
            name: "all".into(),
            requested: None,
            status,
            message,
        }
    }
}

/// The verdict of one criterion of one job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CriterionVerdict {
    /// The metric key (`busbw`, `wrong`, …), or `results` / `integrity` for implicit checks.
    pub key: &'static str,
    /// The criterion as the plan reads (`busbw >= 300 GB/s at 1G`).
    pub text: String,
    /// The plan's criterion; `None` for checks baton always makes.
    pub criterion: Option<Criterion>,
    pub status: Status,
    /// One line for summaries: the first failure, or what passed.
    pub message: String,
    pub diagnosis: Option<Diagnosis>,
    pub cases: Vec<Case>,
}

impl CriterionVerdict {
    /// Builds a verdict from its cases; a failing `warn` criterion reports `Warn`.
    /// A verdict about the criterion as a whole (no per-size cases): a missing baseline, too few
    /// repeats, the transport seen.
    pub fn whole(c: &Criterion, text: String, status: Status, message: String) -> Self {
        CriterionVerdict::from_cases(
            c.check.key(),
            text,
            Some(c.clone()),
            vec![Case::whole(status, message.clone())],
            message,
        )
    }

    pub fn from_cases(
        key: &'static str,
        text: String,
        criterion: Option<Criterion>,
        cases: Vec<Case>,
        summary_pass: String,
    ) -> Self {
        let worst = cases.iter().map(|c| c.status).max().unwrap_or(Status::Fail);
        let failing: Vec<&Case> = cases.iter().filter(|c| c.status == Status::Fail).collect();
        let message = match failing.as_slice() {
            [] if cases.is_empty() => "no data: the criterion covers no measured size".into(),
            [] if worst == Status::Skipped => cases
                .first()
                .map_or_else(|| summary_pass.clone(), |c| c.message.clone()),
            [] => summary_pass,
            [one] => one.message.clone(),
            [first, rest @ ..] => format!(
                "{} (and {} more size{})",
                first.message,
                rest.len(),
                if rest.len() == 1 { "" } else { "s" }
            ),
        };
        let warn_only = criterion.as_ref().map(|c| c.severity) == Some(Severity::Warn);
        let demote = |s: Status| {
            if warn_only && s == Status::Fail {
                Status::Warn
            } else {
                s
            }
        };
        let status = demote(worst);
        let cases = cases
            .into_iter()
            .map(|c| Case {
                status: demote(c.status),
                ..c
            })
            .collect();
        CriterionVerdict {
            key,
            text,
            criterion,
            status,
            message,
            diagnosis: None,
            cases,
        }
    }

    /// The message with its diagnosis, as a CI page or a report shows it.
    pub fn full_message(&self) -> String {
        match &self.diagnosis {
            Some(d) => format!("{} — {}", self.message, d.text),
            None => self.message.clone(),
        }
    }
}

/// Where a job's measurements came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    /// The results file.
    pub file: String,
    pub result: JobResult,
}

/// The verdict of one plan job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobVerdict {
    pub id: String,
    /// `all_reduce float sum`, `broadcast float root 0`, with the split when there is one.
    pub what: String,
    pub status: Status,
    pub source: Option<Source>,
    pub baseline: Option<Source>,
    pub criteria: Vec<CriterionVerdict>,
}

impl JobVerdict {
    pub fn timed_out(&self) -> bool {
        self.source
            .as_ref()
            .is_some_and(|s| s.result.status == JobStatus::Timeout)
    }

    /// Failed criteria, then warnings: what a reader looks at first.
    pub fn problems(&self) -> impl Iterator<Item = &CriterionVerdict> {
        self.criteria
            .iter()
            .filter(|c| c.status == Status::Fail)
            .chain(self.criteria.iter().filter(|c| c.status == Status::Warn))
    }
}

/// Everything `grade` concluded about a plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Grade {
    pub plan: String,
    pub plan_file: Option<String>,
    pub status: Status,
    pub jobs: Vec<JobVerdict>,
    /// Results that no plan job took, with why: a typo in a label shows up here.
    pub unmatched: Vec<String>,
    /// The baseline used, or why there is none.
    pub baseline: Option<String>,
    /// Where the measurements were taken, merged over the results files.
    pub environment: Environment,
    pub results_files: Vec<String>,
    /// When, how and from which plan version the graded results were produced.
    pub run: super::RunInfo,
    /// Tests that ran over node sets: their sets and node verdicts.
    pub node_sets: Vec<super::TestNodes>,
    /// Node verdicts over every such test (`nodes.json`).
    pub nodes: Option<crate::nodeset::export::NodesFile>,
    /// Verdicts a later run of the plan replaced by measuring their jobs again.
    pub superseded: Vec<super::Superseded>,
    /// The preflight's fields that differ anywhere (the report's inventory table).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inventory: Vec<crate::nodeset::fleet::InventoryRow>,
    /// Every fact the preflight's probes found (`probe::inventory::facts`), each value with its
    /// nodes: the acceptance cover's inventory.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<crate::nodeset::fleet::InventoryRow>,
}

impl Grade {
    /// 4 when a job timed out (a hang is not a slow fabric), 1 when a criterion failed, else 0.
    pub fn exit(&self) -> Exit {
        if self.jobs.iter().any(JobVerdict::timed_out) {
            Exit::Timeout
        } else if self.status == Status::Fail {
            Exit::Failed
        } else {
            Exit::Ok
        }
    }

    /// Jobs with failures first, then warnings, then the rest, each group in plan order.
    pub fn jobs_by_severity(&self) -> Vec<&JobVerdict> {
        self.jobs_by_severity_indexed()
            .into_iter()
            .map(|(_, j)| j)
            .collect()
    }

    /// [`Grade::jobs_by_severity`] with each job's index in plan order (its stable anchor).
    pub fn jobs_by_severity_indexed(&self) -> Vec<(usize, &JobVerdict)> {
        let mut v: Vec<(usize, &JobVerdict)> = self.jobs.iter().enumerate().collect();
        v.sort_by_key(|(_, j)| std::cmp::Reverse(j.status));
        v
    }

    pub fn count(&self, s: Status) -> usize {
        self.jobs.iter().filter(|j| j.status == s).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Check, InPlace};

    fn case(status: Status, message: &str) -> Case {
        Case {
            name: "1G".into(),
            requested: Some(1 << 30),
            status,
            message: message.into(),
        }
    }

    fn criterion(severity: Severity) -> Criterion {
        Criterion {
            check: Check::Wrong(0),
            at: None,
            severity,
            in_place: Some(InPlace::Both),
        }
    }

    #[test]
    fn worst_case_decides_and_warn_demotes() {
        let cases = vec![case(Status::Pass, "ok"), case(Status::Fail, "bad at 1G")];
        let v = CriterionVerdict::from_cases(
            "wrong",
            "t".into(),
            Some(criterion(Severity::Fail)),
            cases.clone(),
            "all good".into(),
        );
        assert_eq!((v.status, v.message.as_str()), (Status::Fail, "bad at 1G"));
        let v = CriterionVerdict::from_cases(
            "wrong",
            "t".into(),
            Some(criterion(Severity::Warn)),
            cases,
            "all good".into(),
        );
        assert_eq!(v.status, Status::Warn);
        assert!(v.cases.iter().all(|c| c.status != Status::Fail));
        let v = CriterionVerdict::from_cases(
            "wrong",
            "t".into(),
            None,
            vec![
                case(Status::Fail, "a"),
                case(Status::Fail, "b"),
                case(Status::Fail, "c"),
            ],
            String::new(),
        );
        assert_eq!(v.message, "a (and 2 more sizes)");
        let empty = CriterionVerdict::from_cases("wrong", "t".into(), None, vec![], String::new());
        assert_eq!(
            empty.status,
            Status::Fail,
            "no cases is no data: fail closed"
        );
        assert!(empty.message.starts_with("no data"));
    }
}
