//! The one grading path: the final verdict of a run, `baton grade`, and the judge that steers
//! `over: isolate` set by set all grade here, with the plan file, its files, the baseline
//! keyed to the hosts the results measured, and the history store — so a set's `regression`,
//! plan-local `profile` or `relative: {results:}` verdict cannot steer isolation one way and
//! be reported the other.

use std::path::Path;

use crate::exit::Exit;
use crate::expand::Job;
use crate::grade::{Baseline, Grade, GradeInput, Status, grade};
use crate::plan::{Check, Plan, PlanFiles, Trust};
use crate::results::Results;

use super::{Against, AgainstError, OpenedHistory, baseline_for, history_for, plan_files};

/// What a plan's results are graded with, resolved once for a run or a `grade`.
pub struct Grading<'p> {
    plan: &'p Plan,
    plan_file: String,
    files: PlanFiles,
    baseline: Baseline,
    history: OpenedHistory,
    /// The plan's jobs, for the judge's choice of what a set's verdict depends on.
    jobs: Vec<Job>,
}

impl<'p> Grading<'p> {
    /// Grading of `plan` (read from `plan_path`) against what `against` names, else what the
    /// plan names; `trust` bounds which of the plan's files may be read.
    pub fn new(
        plan: &'p Plan,
        plan_path: &Path,
        trust: Trust,
        against: Against<'_>,
    ) -> Result<Self, AgainstError> {
        let baseline = baseline_for(plan_path, plan, against.baseline, trust)?;
        let history = history_for(plan_path, plan, against.history, trust);
        Ok(Self::with(plan, plan_path, trust, baseline, history))
    }

    /// Grading against a baseline and history store already chosen.
    pub fn with(
        plan: &'p Plan,
        plan_path: &Path,
        trust: Trust,
        baseline: Baseline,
        history: OpenedHistory,
    ) -> Self {
        Grading {
            plan,
            plan_file: plan_path.display().to_string(),
            files: plan_files(plan_path, trust),
            baseline,
            history,
            jobs: crate::expand::expand(plan).jobs,
        }
    }

    /// Grades `results` (named), only the plan jobs in `only` when given. The baseline is
    /// keyed to the hosts the results measured (`crate::baseline`): a job the baseline holds
    /// only from other hosts fails its `regression` saying so, instead of being compared with
    /// another machine's numbers.
    pub fn grade(&self, results: &[(String, &Results)], only: Option<&[String]>) -> Grade {
        let runs: Vec<&Results> = results.iter().map(|(_, r)| *r).collect();
        let (keyed, mismatches) = match &self.baseline {
            Baseline::Loaded { name, results } => {
                let (kept, mismatches) = crate::baseline::select(results, &runs);
                let keyed = Baseline::Loaded {
                    name: name.clone(),
                    results: Box::new(kept),
                };
                (Some(keyed), Some((name, mismatches)))
            }
            _ => (None, None),
        };
        let mut g = grade(&GradeInput {
            plan: self.plan,
            plan_file: Some(&self.plan_file),
            results,
            baseline: keyed.as_ref().unwrap_or(&self.baseline),
            only,
            history: &self.history.as_history(),
            files: Some(&self.files),
        });
        if let Some((name, mismatches)) = mismatches {
            crate::grade::explain_host_mismatches(&mut g, &mismatches, name);
        }
        g
    }

    /// The judge of `over: isolate`: whether every one of a set's jobs (`set_jobs`, recorded in
    /// `run`, the run so far) passes, as the final verdict will grade it. Only the plan jobs the
    /// set ran are graded (with the jobs their `relative` criteria compare with), each over all
    /// its sets so far, as `outlier` compares a set with its fleet; the run is borrowed, not
    /// copied, for each decision.
    pub fn judge(&self, run: &Results, set_jobs: &[String]) -> bool {
        let only = self.judged_jobs(run, set_jobs);
        let g = self.grade(&[("results.json".to_string(), run)], Some(&only));
        set_jobs.iter().all(|id| {
            g.jobs
                .iter()
                .find(|j| &j.id == id)
                .is_some_and(|j| j.status != Status::Fail)
        })
    }

    /// The plan jobs whose sets `set_jobs` are, and the jobs their `relative` criteria name.
    fn judged_jobs(&self, run: &Results, set_jobs: &[String]) -> Vec<String> {
        let mut only: Vec<String> = Vec::new();
        let mut add = |id: &str| {
            if !only.iter().any(|o| o == id) {
                only.push(id.to_string());
            }
        };
        let of_set = run
            .jobs
            .iter()
            .filter(|j| set_jobs.contains(&j.id))
            .filter_map(|j| j.node_set.as_ref().map(|s| s.job.as_str()));
        for plan_job in of_set {
            add(plan_job);
            let job = self.jobs.iter().find(|j| j.id == plan_job);
            for c in job.iter().flat_map(|j| j.expect.iter()) {
                if let Check::Relative(r) = &c.check
                    && r.results.is_none()
                {
                    add(&r.to);
                }
            }
        }
        only
    }
}

/// A graded run's exit: a timeout, runtime failure or signal outranks a failed criterion.
pub fn run_exit(run: Exit, g: &Grade) -> Exit {
    match run {
        Exit::Timeout | Exit::Runtime | Exit::Interrupted => run,
        _ => g.exit(),
    }
}
