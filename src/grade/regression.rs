//! `regression: <= 5%`: busbw at each covered size may drop at most that much below the
//! baseline (median over repeats on both sides). Bandwidths are recomputed from size and time so
//! small sizes, which nccl-tests prints as 0.00 GB/s, still compare.

use super::context::Ctx;
use super::measure::{
    median_busbw, median_printed_busbw, num, pct, placements, printed_size, size, sizes,
};
use super::verdict::{Case, CriterionVerdict, Grade, JobVerdict, Status};
use crate::baseline::HostMismatch;
use crate::plan::Criterion;
use crate::units::Threshold;

pub fn evaluate(ctx: &Ctx<'_>, c: &Criterion, t: &Threshold, text: String) -> CriterionVerdict {
    let base = match &ctx.baseline {
        Ok(b) => *b,
        Err(why) => {
            let message = format!("{why} ({})", ctx.what);
            return CriterionVerdict::whole(c, text, Status::Fail, message);
        }
    };
    let places = placements(ctx.job, Some(c));
    let mut cases = Vec::new();
    for s in sizes(ctx.job, c.at.as_ref()) {
        // Sizes too small to split move no bytes: there is no bandwidth to compare. Skipped
        // when the criterion covers every size, a failure when it names them.
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
            let Some(old) = median_busbw(base, s, p).filter(|b| *b > 0.0) else {
                fails.push(format!(
                    "no baseline data at {} ({}, {})",
                    size(s),
                    ctx.what,
                    p.label()
                ));
                continue;
            };
            let drop = (1.0 - cur / old) * 100.0;
            let shown = |r, v| median_printed_busbw(r, s, p).unwrap_or(v);
            let line = format!(
                "busbw {} GB/s vs baseline {} GB/s at {} ({}, {}): {}{}",
                num(shown(ctx.result, cur)),
                num(shown(base, old)),
                size(s),
                ctx.what,
                p.label(),
                if drop >= 0.0 {
                    format!("{} below", pct(drop))
                } else {
                    format!("{} above", pct(-drop))
                },
                if t.holds(drop) {
                    String::new()
                } else {
                    format!(" (allowed {t})")
                }
            );
            if t.holds(drop) {
                seen.push(line);
            } else {
                fails.push(line);
            }
        }
        let (status, message) = if fails.is_empty() {
            (Status::Pass, seen.join("; "))
        } else {
            (
                Status::Fail,
                format!("{}{}", fails.join("; "), ctx.transport_note()),
            )
        };
        cases.push(Case::at_size(s, status, message));
    }
    if cases.is_empty() {
        let message = format!(
            "no size with data to compare against the baseline ({})",
            ctx.what
        );
        cases.push(Case::whole(Status::Fail, message));
    }
    let n = cases.len();
    let mut v = CriterionVerdict::from_cases(
        "regression",
        text,
        Some(c.clone()),
        cases,
        format!("busbw within {t} of the baseline at {n} size(s)"),
    );
    if v.status != Status::Pass {
        v.diagnosis = ctx.shape_against_baseline(&places);
    }
    v
}

/// Replaces the "no baseline for this job" of each mismatched job's `regression` criteria with
/// why: grading still fails them closed, and now says which hosts each side measured.
pub fn explain_host_mismatches(g: &mut Grade, mismatches: &[HostMismatch], baseline: &str) {
    for m in mismatches {
        let measured =
            |j: &&mut JobVerdict| j.source.as_ref().is_some_and(|s| s.result.id == m.job);
        for j in g.jobs.iter_mut().filter(measured) {
            let message = m.message_for(&j.id, baseline);
            for c in j.criteria.iter_mut().filter(|c| c.key == "regression") {
                c.message = message.clone();
                c.diagnosis = None;
                let status = c.status;
                c.cases = vec![Case::whole(status, message.clone())];
            }
        }
    }
}
