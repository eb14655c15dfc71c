//! Criteria between phases, pure over their results. They compare *phases*, not host sets: a
//! phase's value of a collective at a size is the median, over the phase's completed node-set
//! jobs of that collective, of each job's median out-of-place busbw over its repeats — so phase
//! C (one set of every node) meets phase B (every pair) at the same sizes, and a few bad pairs
//! do not move B's reference.

use crate::collective::Collective;
use crate::results::measure::{exact_busbw, measured_sizes, median_busbw, samples};
use crate::results::{CellStatus, JobResult, JobStatus, Placement, Results};
use crate::units::Threshold;
use crate::units::human_bytes;

use super::doc::Criterion;
use super::record::CriterionResult;

/// Judges `c` of a phase whose results are `this`; `phase` gives an earlier phase's name and
/// results by index.
pub fn judge(
    c: &Criterion,
    this: &Results,
    phase: &dyn Fn(usize) -> Option<(String, Results)>,
) -> CriterionResult {
    match c {
        Criterion::Relative {
            to,
            collective,
            of,
            busbw,
        } => match phase(*to) {
            Some((name, earlier)) => relative(this, &name, &earlier, *collective, *of, busbw),
            None => CriterionResult {
                text: format!("busbw {busbw} of an earlier phase's"),
                passed: false,
                details: vec!["the phase compared with has no results".into()],
            },
        },
        Criterion::Steady { within } => steady(this, within),
    }
}

fn completed(r: &Results, c: Collective) -> impl Iterator<Item = &JobResult> {
    r.jobs
        .iter()
        .filter(move |j| j.collective == c && j.status == JobStatus::Completed)
}

/// The phase's value of collective `c` at `size`: see the module's doc.
pub fn phase_busbw(r: &Results, c: Collective, size: u64) -> Option<f64> {
    let mut v: Vec<f64> = completed(r, c)
        .filter_map(|j| median_busbw(j, size, Placement::OutOfPlace))
        .collect();
    crate::stats::median(&mut v)
}

fn sizes(r: &Results, c: Collective) -> Vec<u64> {
    let mut v: Vec<u64> = completed(r, c).flat_map(measured_sizes).collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn collectives(r: &Results) -> Vec<Collective> {
    let mut v: Vec<Collective> = r.jobs.iter().map(|j| j.collective).collect();
    v.sort();
    v.dedup();
    v
}

fn relative(
    this: &Results,
    name: &str,
    earlier: &Results,
    collective: Option<Collective>,
    of: Option<Collective>,
    want: &Threshold,
) -> CriterionResult {
    let pairs: Vec<(Collective, Collective)> = match collective {
        Some(c) => vec![(c, of.unwrap_or(c))],
        None => collectives(this)
            .into_iter()
            .filter(|c| collectives(earlier).contains(c))
            .map(|c| (c, c))
            .collect(),
    };
    let text = match (collective, of) {
        (Some(c), Some(o)) if c != o => format!("{c} busbw {want} of phase {name}'s {o}"),
        _ => format!("busbw {want} of phase {name}'s, size by size"),
    };
    let mut details = Vec::new();
    let mut passed = !pairs.is_empty();
    for (c, o) in pairs {
        let theirs = sizes(earlier, o);
        let common: Vec<u64> = sizes(this, c)
            .into_iter()
            .filter(|s| theirs.contains(s))
            .collect();
        if common.is_empty() {
            passed = false;
            details.push(format!("{c}: no size measured in both phases"));
        }
        for s in common {
            let line = match (phase_busbw(this, c, s), phase_busbw(earlier, o, s)) {
                (Some(a), Some(b)) if b > 0.0 => {
                    let share = 100.0 * a / b;
                    let ok = want.holds(share);
                    passed &= ok;
                    let mark = if ok { "ok" } else { "FAIL" };
                    format!(
                        "{c} {}: {} GB/s is {share:.1}% of {} GB/s ({mark})",
                        human_bytes(s),
                        gbs(a),
                        gbs(b)
                    )
                }
                _ => {
                    passed = false;
                    format!("{c} {}: no busbw to compare", human_bytes(s))
                }
            };
            details.push(line);
        }
    }
    if details.is_empty() {
        details.push(format!(
            "no collective measured in both this phase and phase {name}"
        ));
    }
    CriterionResult {
        text,
        passed,
        details,
    }
}

/// A bandwidth in three significant digits (small CPU figures stay readable).
fn gbs(v: f64) -> String {
    format!("{v:.3e}")
        .parse::<f64>()
        .map_or(v.to_string(), |r| r.to_string())
}

/// The farthest repeat from the median of its repeats, as a percent, per job and size.
fn worst_deviation(j: &JobResult, size: u64) -> Option<(f64, usize)> {
    let v: Vec<f64> = samples(j, size, Placement::OutOfPlace)
        .iter()
        .filter(|s| s.cell.status == CellStatus::Ok)
        .filter_map(|s| exact_busbw(j, s))
        .collect();
    let median = crate::stats::median(&mut v.clone())?;
    let worst = v
        .iter()
        .map(|x| 100.0 * (x - median).abs() / median)
        .fold(0.0, f64::max);
    (median > 0.0).then_some((worst, v.len()))
}

fn steady(this: &Results, within: &Threshold) -> CriterionResult {
    let text = format!("every repeat's busbw within {within} of its median");
    let mut details = Vec::new();
    let mut passed = true;
    let mut judged = 0;
    for j in this
        .jobs
        .iter()
        .filter(|j| j.status == JobStatus::Completed)
    {
        for s in measured_sizes(j) {
            match worst_deviation(j, s) {
                Some((_, n)) if n < 2 => {}
                Some((worst, n)) => {
                    judged += 1;
                    let ok = within.holds(worst);
                    passed &= ok;
                    let mark = if ok { "ok" } else { "FAIL" };
                    details.push(format!(
                        "{} {}: farthest of {n} repeats {worst:.1}% from the median ({mark})",
                        j.id,
                        human_bytes(s)
                    ));
                }
                None => {}
            }
        }
    }
    if judged == 0 {
        passed = false;
        details.push("no job of the phase measured two repeats of one size".into());
    }
    CriterionResult {
        text,
        passed,
        details,
    }
}

#[cfg(test)]
#[path = "criteria_tests.rs"]
mod tests;
