//! `variance: <= 5%`: how far any repeat strays from the median, max |x − median| / median of
//! busbw, per covered size and placement. A healthy fabric repeats itself; one that does not is
//! shared, throttling, or badly pinned.

use super::context::Ctx;
use super::measure::{
    exact_busbw, median, num, pct, placements, printed_size, samples, size, sizes,
};
use super::verdict::{Case, CriterionVerdict, Status};
use crate::plan::Criterion;
use crate::results::CellStatus;
use crate::units::Threshold;

const CAUSES: &str = "switch congestion from other tenants, thermal throttling, NUMA imbalance or background processes";

pub fn evaluate(ctx: &Ctx<'_>, c: &Criterion, t: &Threshold, text: String) -> CriterionVerdict {
    let repeats = ctx.result.repeats.len();
    if repeats < 2 {
        let message = format!(
            "variance needs at least 2 repeats; the results of {} have {repeats}",
            ctx.what
        );
        return CriterionVerdict::whole(c, text, Status::Fail, message);
    }
    let places = placements(ctx.job, Some(c));
    let mut cases = Vec::new();
    for s in sizes(ctx.job, c.at.as_ref()) {
        if c.at.is_none() && printed_size(ctx.result, s) == Some(0) {
            continue;
        }
        let mut fails = Vec::new();
        let mut seen = Vec::new();
        for &p in &places {
            let vals: Vec<(u32, f64)> = samples(ctx.result, s, p)
                .iter()
                .filter(|smp| smp.cell.status == CellStatus::Ok)
                .filter_map(|smp| Some((smp.repeat, exact_busbw(ctx.result, smp)?)))
                .collect();
            if vals.len() < 2 {
                fails.push(if vals.is_empty() {
                    ctx.no_data(s, p)
                } else {
                    format!(
                        "only 1 repeat measured at {} ({}, {})",
                        size(s),
                        ctx.what,
                        p.label()
                    )
                });
                continue;
            }
            let mut xs: Vec<f64> = vals.iter().map(|v| v.1).collect();
            let med = median(&mut xs).unwrap_or(0.0);
            if med <= 0.0 {
                fails.push(format!("busbw is 0 at {} ({})", size(s), p.label()));
                continue;
            }
            let (rep, far) = vals
                .iter()
                .copied()
                .max_by(|a, b| (a.1 - med).abs().total_cmp(&(b.1 - med).abs()))
                .unwrap_or((0, med));
            let spread = (far - med).abs() / med * 100.0;
            let line = format!(
                "busbw varies {} across {} repeats at {} ({}, {}): median {} GB/s, repeat {rep} {} GB/s",
                pct(spread),
                vals.len(),
                size(s),
                ctx.what,
                p.label(),
                num(med),
                num(far)
            );
            if t.holds(spread) {
                seen.push(line);
            } else {
                fails.push(format!("{line} (allowed {t}): {CAUSES}"));
            }
        }
        cases.push(Case::from_lines(s, &fails, &seen));
    }
    let n = cases.len();
    CriterionVerdict::from_cases(
        "variance",
        text,
        Some(c.clone()),
        cases,
        format!("busbw within {t} of the median over {repeats} repeats at {n} size(s)"),
    )
}
