//! `relative: { to: JOB, busbw: ">= 85%" }`: this job's busbw as a share of another job's of
//! the same results, size by size (phase D's "alltoall within 15% of all_reduce"). Medians over
//! repeats on both sides; a size the other job did not measure fails closed. With `results:`,
//! `to` may be a job another run measured over node sets (phase B's pairs): the reference is
//! then the median of its sets (phase C "within 10% of phase B").

use super::context::Ctx;
use super::measure::{median, median_busbw, num, pct, placements, printed_size, size, sizes};
use super::verdict::{Case, CriterionVerdict, Status};
use crate::plan::{Criterion, PlanFiles, Relative};
use crate::results::JobResult;
use crate::results::Placement;

/// What a `relative` criterion compares with.
#[derive(Debug, Clone)]
pub enum Reference {
    /// Another job's results.
    Job(Box<JobResult>),
    /// The node sets another run measured of one plan job: the median set is the reference.
    Sets { job: String, sets: Vec<JobResult> },
}

impl Reference {
    /// The reference busbw at `requested` bytes: the job's median over repeats, or the median
    /// over the sets of each set's.
    fn busbw(&self, requested: u64, p: Placement) -> Option<f64> {
        match self {
            Reference::Job(j) => median_busbw(j, requested, p),
            Reference::Sets { sets, .. } => median(
                &mut sets
                    .iter()
                    .filter_map(|j| median_busbw(j, requested, p))
                    .collect::<Vec<_>>(),
            ),
        }
    }

    /// `theirs` GB/s, said of the reference.
    fn of(&self, to: &str, theirs: f64) -> String {
        match self {
            Reference::Job(_) => format!("{to}'s {} GB/s", num(theirs)),
            Reference::Sets { job, sets } => format!(
                "{} GB/s, the median of {job}'s {} node sets,",
                num(theirs),
                sets.len()
            ),
        }
    }
}

/// Where a `relative` criterion's other job is looked up: its ID, and the results file when it
/// is another run's.
pub fn key(r: &Relative) -> String {
    match &r.results {
        Some(f) => format!("{f}#{}", r.to),
        None => r.to.clone(),
    }
}

/// The job `to` of another run's results (`file`, relative to the plan's directory): by job ID,
/// else the node sets of the plan job (or the test) `to`, else the one job of the test `to`.
pub fn from_file(files: &PlanFiles, file: &str, to: &str) -> Result<Reference, String> {
    let path = files
        .resolve("relative.results", file)
        .map_err(|e| e.to_string())?;
    let r = crate::results::read(&path).map_err(|e| format!("cannot read {file}: {e}"))?;
    if let Some(j) = r.job(to) {
        return Ok(Reference::Job(Box::new(j.clone())));
    }
    if let Some(sets) = node_sets_of(&r.jobs, to) {
        return Ok(sets);
    }
    let of_test: Vec<&JobResult> = r.jobs.iter().filter(|j| j.test == to).collect();
    match of_test.as_slice() {
        [one] => Ok(Reference::Job(Box::new((*one).clone()))),
        [] => Err(format!(
            "{file} has no job or test `{to}` (it has: {})",
            r.jobs
                .iter()
                .map(|j| j.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        many => Err(format!(
            "`{to}` is a test of {} jobs in {file}; name one: {}",
            many.len(),
            many.iter()
                .map(|j| j.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The node sets `jobs` hold of plan job `to`, or of the test `to` when all its sets are of one
/// plan job.
fn node_sets_of(jobs: &[JobResult], to: &str) -> Option<Reference> {
    let of = |pick: &dyn Fn(&JobResult, &str) -> bool| -> Vec<&JobResult> {
        jobs.iter().filter(|j| pick(j, to)).collect()
    };
    let by_job = of(&|j, to| j.node_set.as_ref().is_some_and(|s| s.job == to));
    let sets = if by_job.is_empty() {
        of(&|j, to| j.test == to && j.node_set.is_some())
    } else {
        by_job
    };
    let job = sets.first()?.node_set.as_ref()?.job.clone();
    sets.iter()
        .all(|j| j.node_set.as_ref().is_some_and(|s| s.job == job))
        .then(|| Reference::Sets {
            job,
            sets: sets.into_iter().cloned().collect(),
        })
}

pub fn evaluate(
    ctx: &Ctx<'_>,
    c: &Criterion,
    r: &Relative,
    other: Result<&Reference, String>,
    text: String,
) -> CriterionVerdict {
    if ctx.job.id == r.to && r.results.is_none() {
        return CriterionVerdict::whole(
            c,
            text,
            Status::Skipped,
            format!("{} is the job the others are compared with", r.to),
        );
    }
    let other = match other {
        Ok(o) => o,
        Err(why) => {
            return CriterionVerdict::whole(
                c,
                text,
                Status::Fail,
                format!(
                    "no results for {} to compare with: {why} ({})",
                    r.to, ctx.what
                ),
            );
        }
    };
    let places = placements(ctx.job, Some(c));
    let mut cases = Vec::new();
    for s in sizes(ctx.job, c.at.as_ref()) {
        if c.at.is_none() && printed_size(ctx.result, s) == Some(0) {
            continue;
        }
        let mut fails = Vec::new();
        let mut seen = Vec::new();
        for &p in &places {
            let Some(cur) = median_busbw(ctx.result, s, p) else {
                fails.push(ctx.no_data(s, p));
                continue;
            };
            let Some(theirs) = other.busbw(s, p).filter(|b| *b > 0.0) else {
                fails.push(format!(
                    "{} has no data at {} ({})",
                    r.to,
                    size(s),
                    p.label()
                ));
                continue;
            };
            let share = cur / theirs * 100.0;
            let line = format!(
                "busbw {} GB/s is {} of {} at {} ({}, {})",
                num(cur),
                pct(share),
                other.of(&r.to, theirs),
                size(s),
                ctx.what,
                p.label()
            );
            if r.busbw.holds(share) {
                seen.push(line);
            } else {
                fails.push(format!("{line}, expected {}", r.busbw));
            }
        }
        cases.push(if fails.is_empty() {
            Case::at_size(s, Status::Pass, seen.join("; "))
        } else {
            Case::at_size(s, Status::Fail, fails.join("; "))
        });
    }
    let n = cases.len();
    CriterionVerdict::from_cases(
        "relative",
        text,
        Some(c.clone()),
        cases,
        format!("busbw {} of {} at {n} size(s)", r.busbw, r.to),
    )
}
