//! Reading measurements the way criteria need them: the placements and sizes a criterion covers,
//! and how messages name jobs and numbers. The reading of results itself is
//! [`crate::results::measure`], shared with the report and the history store.

use crate::expand::Job;
use crate::plan::{Criterion, InPlace};
use crate::results::{JobResult, Placement};
use crate::units::{Size, SizeSelector};

pub use crate::results::measure::{
    exact_busbw, measured_sizes, median, median_busbw, median_printed_busbw, printed_size, samples,
};

/// Placements a criterion reads: those the job ran, narrowed by the criterion's `in_place`.
pub fn placements(job: &Job, c: Option<&Criterion>) -> Vec<Placement> {
    let runs = job.settings.in_place;
    let wanted = c.and_then(|c| c.in_place).unwrap_or(InPlace::Both);
    let mut v = Vec::new();
    if runs.runs_out_of_place() && wanted.runs_out_of_place() {
        v.push(Placement::OutOfPlace);
    }
    if runs.runs_in_place() && wanted.runs_in_place() {
        v.push(Placement::InPlace);
    }
    v
}

/// Requested sizes a criterion covers: the plan's sizes that `at` selects (all without `at`).
pub fn sizes(job: &Job, at: Option<&SizeSelector>) -> Vec<u64> {
    job.sizes
        .iter()
        .copied()
        .filter(|s| at.is_none_or(|a| a.matches(*s)))
        .collect()
}

/// `all_reduce float sum`, `broadcast float root 0`, `… split DIV 8`: how messages name a job.
pub fn describe(job: &Job) -> String {
    let mut s = format!("{} {}", job.collective, job.dtype);
    if let Some(op) = job.op {
        s.push_str(&format!(" {op}"));
    }
    if let Some(root) = job.root {
        s.push_str(&format!(" root {root}"));
    }
    if let Some(split) = job.split_text() {
        s.push_str(&format!(" split {split}"));
    }
    s
}

/// How messages name a result job: `all_reduce float sum in 2 groups`.
pub fn describe_result(r: &JobResult) -> String {
    let mut s = format!("{} {}", r.collective, r.dtype);
    if let Some(op) = r.op {
        s.push_str(&format!(" {op}"));
    }
    if let Some(root) = r.root {
        s.push_str(&format!(" root {root}"));
    }
    if !r.groups.is_empty() {
        s.push_str(&format!(" in {} groups", r.groups.len()));
    }
    s
}

/// A number as messages print it: two decimals like nccl-tests, trailing zeros dropped.
pub fn num(v: f64) -> String {
    // Two decimals, or two significant digits below 0.1: a host-memory run's 0.004 GB/s is not 0.
    let decimals = if v != 0.0 && v.abs() < 0.1 && v.is_finite() {
        ((-v.abs().log10()).ceil() as usize + 1).min(12)
    } else {
        2
    };
    let s = format!("{v:.decimals$}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.to_string() }
}

/// A percentage with one decimal.
pub fn pct(v: f64) -> String {
    format!("{v:.1}%")
}

/// A requested size as plans write it (`8G`, `1M`, `1536`).
pub fn size(s: u64) -> String {
    Size(s).to_string()
}

/// The sizes the results hold, for "no data" messages: `8..1G (28 sizes)`.
pub fn measured_range(r: &JobResult) -> String {
    match measured_sizes(r).as_slice() {
        [] => "no rows".into(),
        [one] => format!("only {}", size(*one)),
        [first, .., last] => format!("{}..{}", size(*first), size(*last)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_medians() {
        assert_eq!(num(27.6), "27.6");
        assert_eq!(num(300.0), "300");
        assert_eq!(num(343.417), "343.42");
        assert_eq!(num(0.001), "0.001");
        assert_eq!(num(0.00456), "0.0046");
        assert_eq!(num(0.0), "0");
        assert_eq!(pct(12.345), "12.3%");
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }
}
