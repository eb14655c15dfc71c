//! `straggler: "p99 <= 2x median"`: the slow-one-iteration-in-a-hundred rank that average busbw
//! hides. Each rank's per-iteration statistic (or, in a split job, each group's: the median of
//! its ranks', since a group's ranks wait for each other) is compared with the median of the
//! others'; one that exceeds the factor is named with its host and GPU. Ranks of one
//! communicator wait for each other too, so a slow rank there also slows its peers' iterations:
//! what stands out within one communicator is a rank's own stall, and between groups or node
//! sets, the slow path.
//!
//! `late p99 <= 2x median` compares where the ranks spent the time instead: each rank's time
//! between calls (`runner::host_clock`), against the median of the others' and at least a
//! quarter of the cell's median iteration, so that the microseconds every healthy rank spends
//! between calls are never compared with each other. The rank its peers waited for is named.

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

/// Lateness under this share of a cell's median iteration is never a straggler's: every rank
/// spends some microseconds between calls, and their ratios are noise.
const LATE_FLOOR: f64 = 0.25;

/// The units compared in one cell: (name, value) per rank, or per split group; under `late`,
/// per rank by its time between calls.
fn units(ctx: &Ctx<'_>, it: &Iterations, s: &Straggler) -> Vec<(String, f64)> {
    let stat = s.stat;
    if s.late {
        return it
            .ranks
            .iter()
            .filter_map(|r| {
                Some((
                    name_rank(ctx, r.rank),
                    value(stat, r.between_calls.as_ref()?),
                ))
            })
            .collect();
    }
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

/// Each unit against the median of the others (at least `floor`): the lines of those past the
/// factor, with that yardstick.
fn stragglers(units: &[(String, f64)], s: &Straggler, floor: f64) -> Vec<(String, f64, f64)> {
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
            let med = median(&mut rest)?.max(floor);
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
                if s.late && it.ranks.iter().all(|r| r.between_calls.is_none()) {
                    fails.push(format!(
                        "no time between calls at {} ({}, {}): recorded by an older baton or ingested from nccl-tests, which has no such figure",
                        size(sz),
                        ctx.what,
                        p.label()
                    ));
                    continue;
                }
                let u = units(ctx, it, s);
                if u.len() < 2 {
                    continue;
                }
                compared += 1;
                let floor = if s.late {
                    LATE_FLOOR * it.summary.p50_us
                } else {
                    0.0
                };
                let found = stragglers(&u, s, floor);
                let what = if s.late { "between calls" } else { "iteration" };
                for (name, v, med) in &found {
                    fails.push(format!(
                        "{name}: {what} {stat} {} us, {:.1}x the others' median {} us at {} ({}, {}, repeat {rep}; allowed {s})",
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
                        "largest {what} {stat} {} us at {} ({})",
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
        let found = stragglers(&u, &s, 0.0);
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].0.as_str(), found[0].1, found[0].2),
            ("rank 3", 30.0, 10.0)
        );
        let even = [(String::from("a"), 10.0), (String::from("b"), 12.0)];
        assert!(stragglers(&even, &s, 0.0).is_empty());
    }

    #[test]
    fn lateness_is_named_past_the_floor_and_microseconds_are_not() {
        let s = parse("late p99 <= 2x median").unwrap();
        // Measured shape (simulated cluster, one node under a 10% CPU quota): microseconds
        // between calls on the peers, tens of milliseconds on the throttled rank.
        let u: Vec<(String, f64)> = [5.2, 6.2, 54465.0, 5.9]
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("rank {i}"), *v))
            .collect();
        let found = stragglers(&u, &s, LATE_FLOOR * 6491.0);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "rank 2");
        assert_eq!(
            found[0].2,
            LATE_FLOOR * 6491.0,
            "the yardstick is the floor"
        );
        // A healthy cell: one rank's 12 us against the others' 4 us is noise, not lateness.
        let healthy = [
            (String::from("a"), 4.0),
            (String::from("b"), 12.0),
            (String::from("c"), 4.5),
        ];
        assert!(stragglers(&healthy, &s, LATE_FLOOR * 100.0).is_empty());
        assert_eq!(
            stragglers(&healthy, &s, 0.0).len(),
            1,
            "without the floor it would be"
        );
    }
}
