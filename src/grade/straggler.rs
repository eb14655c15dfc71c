//! `straggler: "p99 <= 2x median"`: the slow-one-iteration-in-a-hundred rank that average busbw
//! hides. Each rank's per-iteration statistic (or, in a split job, each group's: the median of
//! its ranks', since a group's ranks wait for each other) is compared with the median of the
//! others'; one that exceeds the factor is named with its host and GPU. Ranks of one
//! communicator wait for each other too, so a slow rank there also slows its peers' iterations:
//! what stands out within one communicator is a rank's own stall, and between groups or node
//! sets, the slow path.

use super::context::Ctx;
use super::group_spread::name_group;
use super::measure::{median, num, placements, samples, size, sizes};
use super::verdict::{Case, CriterionVerdict, Status};
use crate::plan::Criterion;
use crate::plan::straggler::{IterStat, Straggler};
use crate::results::{IterationStats, Iterations};

pub(super) fn value(stat: IterStat, s: &IterationStats) -> f64 {
    match stat {
        IterStat::P50 => s.p50_us,
        IterStat::P95 => s.p95_us,
        IterStat::P99 => s.p99_us,
        IterStat::Max => s.max_us,
    }
}

/// `rank 2 (node07 GPU 2, pid 4242)`.
pub fn name_rank(ctx: &Ctx<'_>, rank: u64) -> String {
    match ctx.result.layout.ranks.iter().find(|r| r.rank == rank) {
        Some(r) => {
            let mut at = r.host.clone();
            if let Some(d) = r.device {
                at.push_str(&format!(" GPU {d}"));
            }
            if let Some(p) = r.pid {
                at.push_str(&format!(", pid {p}"));
            }
            format!("rank {rank} ({at})")
        }
        None => format!("rank {rank}"),
    }
}

/// The units compared in one cell: (name, value) per rank, or per split group.
fn units(ctx: &Ctx<'_>, it: &Iterations, stat: IterStat) -> Vec<(String, f64)> {
    let of_rank = |r: u64| {
        it.ranks
            .iter()
            .find(|x| x.rank == r)
            .map(|x| value(stat, &x.stats))
    };
    if ctx.result.groups.len() > 1 {
        return ctx
            .result
            .groups
            .iter()
            .filter_map(|g| {
                let mut v: Vec<f64> = g.members.iter().filter_map(|m| of_rank(*m)).collect();
                Some((name_group(ctx, g.color), median(&mut v)?))
            })
            .collect();
    }
    it.ranks
        .iter()
        .map(|r| (name_rank(ctx, r.rank), value(stat, &r.stats)))
        .collect()
}

/// Each unit against the median of the others: the lines of those past the factor.
fn stragglers(units: &[(String, f64)], s: &Straggler) -> Vec<(String, f64, f64)> {
    units
        .iter()
        .enumerate()
        .filter_map(|(i, (name, v))| {
            let mut rest: Vec<f64> = units
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, u)| u.1)
                .collect();
            let med = median(&mut rest)?;
            (med > 0.0 && *v > s.factor * med).then(|| (name.clone(), *v, med))
        })
        .collect()
}

pub fn evaluate(ctx: &Ctx<'_>, c: &Criterion, s: &Straggler, text: String) -> CriterionVerdict {
    if s.fleet {
        // Judged across the test's node sets once all are graded (`super::fleet_straggler`).
        let why = format!("{}: judged per node across the test's node sets", ctx.what);
        return CriterionVerdict::whole(c, text, Status::Skipped, why);
    }
    let places = placements(ctx.job, Some(c));
    let stat = s.stat.name();
    let mut cases = Vec::new();
    let mut compared = 0usize;
    for sz in sizes(ctx.job, c.at.as_ref()) {
        let (mut fails, mut seen) = (Vec::new(), Vec::new());
        for &p in &places {
            let smp = samples(ctx.result, sz, p);
            let timed: Vec<&Iterations> = smp
                .iter()
                .filter_map(|x| x.cell.iterations.as_ref())
                .collect();
            if timed.is_empty() {
                fails.push(format!(
                    "no per-iteration timing at {} ({}, {}): the results were not recorded with `iterations: true`",
                    size(sz),
                    ctx.what,
                    p.label()
                ));
                continue;
            }
            for (rep, it) in timed.iter().enumerate() {
                let u = units(ctx, it, s.stat);
                if u.len() < 2 {
                    continue;
                }
                compared += 1;
                let found = stragglers(&u, s);
                for (name, v, med) in &found {
                    fails.push(format!(
                        "{name}: iteration {stat} {} us, {:.1}x the others' median {} us at {} ({}, {}, repeat {rep}; allowed {s})",
                        num(*v),
                        v / med,
                        num(*med),
                        size(sz),
                        ctx.what,
                        p.label()
                    ));
                }
                if found.is_empty() {
                    let worst = u.iter().map(|x| x.1).fold(0.0, f64::max);
                    seen.push(format!(
                        "largest iteration {stat} {} us at {} ({})",
                        num(worst),
                        size(sz),
                        p.label()
                    ));
                }
            }
        }
        cases.push(Case::from_lines(sz, &fails, &seen));
    }
    if compared == 0 && cases.iter().all(|c| c.status == Status::Pass) {
        return CriterionVerdict::whole(
            c,
            text,
            Status::Skipped,
            format!(
                "{}: one rank and no split groups: nothing to compare",
                ctx.what
            ),
        );
    }
    let n = cases.len();
    CriterionVerdict::from_cases(
        "straggler",
        text,
        Some(c.clone()),
        cases,
        format!("no rank or group past {s} at {n} size(s)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::straggler::parse;

    #[test]
    fn the_unit_past_the_factor_is_named_and_the_rest_are_not() {
        let s = parse("p99 <= 2x median").unwrap();
        let u: Vec<(String, f64)> = [10.0, 11.0, 9.0, 30.0]
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("rank {i}"), *v))
            .collect();
        let found = stragglers(&u, &s);
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].0.as_str(), found[0].1, found[0].2),
            ("rank 3", 30.0, 10.0)
        );
        let even = [(String::from("a"), 10.0), (String::from("b"), 12.0)];
        assert!(stragglers(&even, &s).is_empty());
    }
}
