//! Checks baton makes whatever the plan says: that the job produced results, and that no
//! element came back wrong. Any #wrong > 0 is corrupted data — hardware, not tuning — so it
//! fails the job even without a `wrong: 0` criterion.

use super::context::Ctx;
use super::measure::{placements, samples, size, sizes};
use super::verdict::{Case, CriterionVerdict, Status};
use crate::plan::Criterion;
use crate::results::{JobResult, JobStatus, Placement};

/// The implicit "results" check: present, and the job ran to its end.
pub fn completed(ctx: &Ctx<'_>) -> CriterionVerdict {
    let r = ctx.result;
    let errors: Vec<&str> = r.errors.iter().map(|e| e.message.as_str()).collect();
    let first_error = errors.first().map(|e| format!(": {e}")).unwrap_or_default();
    let (status, message) = match r.status {
        JobStatus::Completed => (
            Status::Pass,
            format!(
                "{} repeat(s) of {} from {}",
                r.repeats.len(),
                ctx.what,
                sources(r)
            ),
        ),
        // A run cut short (a signal, a time limit, a killed worker) did not measure what the
        // plan asked — a soak stopped at minute 3 of 10 proves nothing about minute 10; only a
        // truncated log of a count-repeated job is graded on the rows it has.
        JobStatus::Partial
            if r.sources.is_empty() || matches!(ctx.job.repeat, crate::plan::Repeat::For(_)) =>
        {
            (
                Status::Fail,
                format!(
                    "the job was cut short before it finished ({} row(s) kept){first_error}",
                    r.repeats.iter().map(|x| x.rows.len()).sum::<usize>()
                ),
            )
        }
        JobStatus::Partial => (
            Status::Warn,
            format!(
                "results are partial (the log is truncated); graded on the {} row(s) present{first_error}",
                r.repeats.iter().map(|x| x.rows.len()).sum::<usize>()
            ),
        ),
        JobStatus::Error => (Status::Fail, format!("the job failed{first_error}")),
        JobStatus::Timeout => (
            Status::Fail,
            format!("the job timed out (a collective hung){first_error}"),
        ),
    };
    CriterionVerdict {
        key: "results",
        text: "results present and complete".into(),
        criterion: None,
        status,
        message: message.clone(),
        diagnosis: None,
        cases: vec![Case::whole(status, message)],
    }
}

fn sources(r: &JobResult) -> String {
    if r.sources.is_empty() {
        "`baton run`".into()
    } else {
        r.sources.join(", ")
    }
}

/// Whether nccl-tests verifies this placement at all (in-place alltoall/sendrecv it does not).
fn checked(ctx: &Ctx<'_>, p: Placement) -> bool {
    p == Placement::OutOfPlace || ctx.job.collective.checks_in_place()
}

/// The first cell with wrong elements, as a message.
fn first_corruption(ctx: &Ctx<'_>, only: Option<&[u64]>, places: &[Placement]) -> Option<String> {
    ctx.result.cells().find_map(|(rep, row, p, cell)| {
        let w = cell.wrong.filter(|w| *w > 0)?;
        if !places.contains(&p) || only.is_some_and(|o| !o.contains(&row.requested)) {
            return None;
        }
        Some(format!(
            "#wrong {w} at {} ({}, {}, repeat {}): {}",
            size(row.requested),
            ctx.what,
            p.label(),
            rep.index,
            super::hints::corruption(ctx.result.backend)
        ))
    })
}

/// The implicit integrity check, made when the plan has no `wrong` criterion.
pub fn implicit(ctx: &Ctx<'_>) -> CriterionVerdict {
    let all = [Placement::OutOfPlace, Placement::InPlace];
    let checked_cells = ctx
        .result
        .cells()
        .filter(|(_, _, _, c)| c.wrong.is_some())
        .count();
    let (status, message) = match first_corruption(ctx, None, &all) {
        Some(m) => (Status::Fail, m),
        None if checked_cells == 0 => (
            Status::Pass,
            "no cell was checked (validation off): corruption would go unseen".into(),
        ),
        None => (
            Status::Pass,
            format!("#wrong 0 in all {checked_cells} checked cells"),
        ),
    };
    CriterionVerdict {
        key: "integrity",
        text: "no wrong elements (#wrong 0)".into(),
        criterion: None,
        status,
        message: message.clone(),
        diagnosis: None,
        cases: vec![Case::whole(status, message)],
    }
}

/// `wrong: 0`: at every covered size some checked cell exists, and none has wrong elements.
pub fn explicit(ctx: &Ctx<'_>, c: &Criterion, text: String) -> CriterionVerdict {
    let places = placements(ctx.job, Some(c));
    let mut cases = Vec::new();
    for s in sizes(ctx.job, c.at.as_ref()) {
        let (status, message) = match first_corruption(ctx, Some(&[s]), &places) {
            Some(m) => (Status::Fail, m),
            None => {
                let verified = places
                    .iter()
                    .filter(|&&p| checked(ctx, p))
                    .flat_map(|&p| samples(ctx.result, s, p))
                    .filter(|smp| smp.cell.wrong.is_some())
                    .count();
                if verified > 0 {
                    (Status::Pass, format!("#wrong 0 at {}", size(s)))
                } else if places.iter().all(|&p| samples(ctx.result, s, p).is_empty()) {
                    (Status::Fail, ctx.no_data(s, places[0]))
                } else {
                    (
                        Status::Fail,
                        format!(
                            "no checked data at {} ({}): validation was off (-c 0), so corruption cannot be ruled out",
                            size(s),
                            ctx.what
                        ),
                    )
                }
            }
        };
        cases.push(Case {
            name: size(s),
            requested: Some(s),
            status,
            message,
        });
    }
    let n = cases.len();
    CriterionVerdict::from_cases(
        "wrong",
        text,
        Some(c.clone()),
        cases,
        format!("#wrong 0 at {n} size(s)"),
    )
}
