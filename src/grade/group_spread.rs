//! `group_spread: <= 10%`: split groups run the same collective at the same time over paths that
//! should be alike (every node's NVLink, every rail), so the slowest group should be close to the
//! fastest. Spread = (fastest − slowest) / fastest busbw; a failure names the slowest group and
//! its GPUs, which is where to look.

use super::context::Ctx;
use super::diagnosis::{Diagnosis, Shape};
use super::measure::{median, num, pct, placements, samples, size, sizes};
use super::verdict::{Case, CriterionVerdict, Status};
use crate::expand::table::rank_ranges;
use crate::plan::Criterion;
use crate::units::Threshold;

fn single(c: &Criterion, text: String, status: Status, message: String) -> CriterionVerdict {
    CriterionVerdict::whole(c, text, status, message)
}

/// `group 3 (ranks 3,11: node01 GPU 3, node02 GPU 3)`.
pub fn name_group(ctx: &Ctx<'_>, color: u64) -> String {
    let members: Vec<u64> = ctx
        .result
        .groups
        .iter()
        .find(|g| g.color == color)
        .map(|g| g.members.clone())
        .unwrap_or_default();
    let gpus: Vec<String> = members
        .iter()
        .filter_map(|m| ctx.result.layout.ranks.iter().find(|r| r.rank == *m))
        .map(|r| match r.device {
            Some(d) => format!("{} GPU {d}", r.host),
            None => r.host.clone(),
        })
        .collect();
    let mut s = format!("group {color} (ranks {}", rank_ranges(&members));
    if !gpus.is_empty() {
        s.push_str(&format!(": {}", gpus.join(", ")));
    }
    s.push(')');
    s
}

pub fn evaluate(ctx: &Ctx<'_>, c: &Criterion, t: &Threshold, text: String) -> CriterionVerdict {
    if ctx.job.split.is_none() {
        return single(
            c,
            text,
            Status::Skipped,
            format!("{} does not split: no groups to compare", ctx.what),
        );
    }
    // The groups the run recorded, else the plan's (an ingested log may not list them).
    let one_group = match ctx.result.groups.as_slice() {
        [only] => Some(only.members.len()),
        [] => match ctx.job.groups.as_deref().map(Vec::as_slice) {
            Some([only]) => Some(only.ranks.len()),
            _ => None,
        },
        _ => None,
    };
    if let Some(n) = one_group {
        return single(
            c,
            text,
            Status::Skipped,
            format!(
                "{}: the split makes one group here ({n} rank(s)): nothing to compare",
                ctx.what
            ),
        );
    }
    let places = placements(ctx.job, Some(c));
    let mut cases = Vec::new();
    let mut slowest_seen: Vec<u64> = Vec::new();
    for s in sizes(ctx.job, c.at.as_ref()) {
        let mut fails = Vec::new();
        let mut seen = Vec::new();
        for &p in &places {
            let smp = samples(ctx.result, s, p);
            if smp.is_empty() {
                fails.push(ctx.no_data(s, p));
                continue;
            }
            // Median over repeats of each group's busbw.
            let mut per: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
            for x in &smp {
                for g in &x.cell.groups {
                    per.entry(g.color).or_default().push(g.busbw);
                }
            }
            if per.len() < 2 {
                fails.push(format!(
                    "no per-group figures at {} ({}, {}): nccl-tests prints only rank 0's group; per-group numbers come from `baton run`",
                    size(s),
                    ctx.what,
                    p.label()
                ));
                continue;
            }
            let meds: Vec<(u64, f64)> = per
                .into_iter()
                .filter_map(|(color, mut v)| Some((color, median(&mut v)?)))
                .collect();
            let fast = meds.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
            let slow = meds.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1));
            let (Some(fast), Some(slow)) = (fast, slow) else {
                continue;
            };
            let spread = if fast.1 > 0.0 {
                (fast.1 - slow.1) / fast.1 * 100.0
            } else {
                0.0
            };
            let line = format!(
                "group spread {} at {} ({}, {}): slowest {} at {} GB/s, fastest group {} at {} GB/s",
                pct(spread),
                size(s),
                ctx.what,
                p.label(),
                name_group(ctx, slow.0),
                num(slow.1),
                fast.0,
                num(fast.1)
            );
            if t.holds(spread) {
                seen.push(line);
            } else {
                slowest_seen.push(slow.0);
                fails.push(format!("{line} (allowed {t})"));
            }
        }
        cases.push(Case::from_lines(s, &fails, &seen));
    }
    let n = cases.len();
    let mut v = CriterionVerdict::from_cases(
        "group_spread",
        text,
        Some(c.clone()),
        cases,
        format!("split groups within {t} of each other at {n} size(s)"),
    );
    slowest_seen.sort_unstable();
    slowest_seen.dedup();
    if let [color] = slowest_seen.as_slice() {
        v.diagnosis = Some(slow_group(ctx, *color));
    }
    v
}

/// One group is always the slow one: name it and what its path is.
fn slow_group(ctx: &Ctx<'_>, color: u64) -> Diagnosis {
    let scope = ctx
        .job
        .groups
        .as_ref()
        .and_then(|g| g.iter().find(|g| g.color == color))
        .map(|g| g.scope);
    let hint = super::hints::slow_group(ctx.result.backend, scope);
    Diagnosis {
        shape: Shape::SlowGroup { color },
        text: format!("one slow split group: {} — {hint}", name_group(ctx, color)),
    }
}
