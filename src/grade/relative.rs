//! `relative: { to: JOB, busbw: ">= 85%" }`: this job's busbw as a share of another job's of
//! the same results, size by size (phase D's "alltoall within 15% of all_reduce"). Medians over
//! repeats on both sides; a size the other job did not measure fails closed.

use super::context::Ctx;
use super::measure::{median_busbw, num, pct, placements, printed_size, size, sizes};
use super::verdict::{Case, CriterionVerdict, Status};
use crate::plan::{Criterion, PlanFiles, Relative};
use crate::results::JobResult;

/// Where a `relative` criterion's other job is looked up: its ID, and the results file when it
/// is another run's.
pub fn key(r: &Relative) -> String {
    match &r.results {
        Some(f) => format!("{f}#{}", r.to),
        None => r.to.clone(),
    }
}

/// The job `to` of another run's results (`file`, relative to the plan's directory): by job ID,
/// else the one job of the test `to`.
pub fn from_file(files: &PlanFiles, file: &str, to: &str) -> Result<JobResult, String> {
    let path = files
        .resolve("relative.results", file)
        .map_err(|e| e.to_string())?;
    let r = crate::results::read(&path).map_err(|e| format!("cannot read {file}: {e}"))?;
    if let Some(j) = r.job(to) {
        return Ok(j.clone());
    }
    let of_test: Vec<&JobResult> = r.jobs.iter().filter(|j| j.test == to).collect();
    match of_test.as_slice() {
        [one] => Ok((*one).clone()),
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

pub fn evaluate(
    ctx: &Ctx<'_>,
    c: &Criterion,
    r: &Relative,
    other: Result<&JobResult, String>,
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
            let Some(theirs) = median_busbw(other, s, p).filter(|b| *b > 0.0) else {
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
                "busbw {} GB/s is {} of {}'s {} GB/s at {} ({}, {})",
                num(cur),
                pct(share),
                r.to,
                num(theirs),
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
