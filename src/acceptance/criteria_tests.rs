//! The criteria between phases over real ingested results (the shipped nccl-tests log), each
//! phase made by scaling its busbw: `relative` is the median over a phase's sets, size by size,
//! and fails closed; `steady` holds every repeat within its share of the median.

use super::*;
use crate::results::{Repeat, Results};
use crate::units::{Quantity, parse_threshold};

const ALL_REDUCE: &str = include_str!("../../tests/data/nccl-tests/h200x2/all_reduce.txt");
const ALLTOALL: &str = include_str!("../../tests/data/nccl-tests/h200x2/alltoall.txt");

fn ingested(log: &str, label: &str) -> Results {
    let input = crate::ingest::LogInput {
        name: "log.txt",
        bytes: log.as_bytes(),
    };
    crate::ingest::ingest(&[input], Some(label))
        .unwrap()
        .results
}

/// A repeat with every busbw times `f` (its time divided by `f`).
fn scaled(rep: &Repeat, f: f64, index: u32) -> Repeat {
    let mut r = rep.clone();
    r.index = index;
    for row in &mut r.rows {
        for c in [&mut row.out_of_place, &mut row.in_place]
            .into_iter()
            .flatten()
        {
            c.time_us = c.time_us.map(|t| t / f);
            c.busbw = c.busbw.map(|b| b * f);
            c.algbw = c.algbw.map(|b| b * f);
        }
    }
    r
}

/// A phase of one set per factor (`f` the set's busbw against the log's), each with one repeat
/// per entry of its list.
fn phase(log: &str, sets: &[&[f64]]) -> Results {
    let base = ingested(log, "j");
    let mut r = base.clone();
    r.jobs = sets
        .iter()
        .enumerate()
        .map(|(k, repeats)| {
            let mut j = base.jobs[0].clone();
            j.id = format!("j@r1:set{k}");
            let first = j.repeats[0].clone();
            j.repeats = (0u32..)
                .zip(repeats.iter())
                .map(|(i, &f)| scaled(&first, f, i))
                .collect();
            j
        })
        .collect();
    r
}

fn pct(text: &str) -> crate::units::Threshold {
    parse_threshold(text, Quantity::Percent).unwrap()
}

fn judge_against(c: &Criterion, this: &Results, earlier: &Results) -> CriterionResult {
    judge(c, this, &|k| {
        (k == 0).then(|| ("B".to_string(), earlier.clone()))
    })
}

fn relative(to: usize, busbw: &str) -> Criterion {
    Criterion::Relative {
        to,
        collective: None,
        of: None,
        busbw: pct(busbw),
    }
}

#[test]
fn relative_meets_the_median_set_of_the_earlier_phase_size_by_size() {
    // Phase B: three pairs, one of them slow: its median pair is the log's figure.
    let b = phase(ALL_REDUCE, &[&[1.0], &[1.0], &[0.2]]);
    let c_ok = phase(ALL_REDUCE, &[&[0.93]]);
    let r = judge_against(&relative(0, ">= 90%"), &c_ok, &b);
    assert!(r.passed, "{r:?}");
    assert_eq!(r.text, "busbw >= 90% of phase B's, size by size");
    assert!(
        r.details
            .iter()
            .any(|d| d.contains("is 93.0% of") && d.ends_with("(ok)")),
        "{r:?}"
    );
    let sizes = measured_sizes(&b.jobs[0]).len();
    assert_eq!(r.details.len(), sizes, "one line per size: {r:?}");
    let c_slow = phase(ALL_REDUCE, &[&[0.85]]);
    let r = judge_against(&relative(0, ">= 90%"), &c_slow, &b);
    assert!(!r.passed, "{r:?}");
    assert!(
        r.details
            .iter()
            .any(|d| d.contains("85.0%") && d.ends_with("(FAIL)"))
    );
}

#[test]
fn relative_compares_one_collective_with_another_and_fails_closed() {
    let c = phase(ALL_REDUCE, &[&[1.0]]);
    let d = phase(ALLTOALL, &[&[1.0]]);
    let alltoall_of_all_reduce = Criterion::Relative {
        to: 0,
        collective: Some(crate::collective::Collective::AllToAll),
        of: Some(crate::collective::Collective::AllReduce),
        busbw: pct(">= 1%"),
    };
    let r = judge_against(&alltoall_of_all_reduce, &d, &c);
    assert_eq!(r.text, "alltoall busbw >= 1% of phase B's all_reduce");
    // Every collective both measured: none in common fails, saying so.
    let r = judge_against(&relative(0, ">= 90%"), &d, &c);
    assert!(!r.passed);
    assert_eq!(
        r.details,
        ["no collective measured in both this phase and phase B"]
    );
    // No results for the phase compared with.
    let r = judge(&relative(3, ">= 90%"), &c, &|_| None);
    assert!(!r.passed);
    assert_eq!(r.details, ["the phase compared with has no results"]);
}

#[test]
fn steady_holds_every_repeat_within_its_share_of_the_median() {
    let steady = |w: &str| Criterion::Steady { within: pct(w) };
    let calm = phase(ALL_REDUCE, &[&[1.0, 1.02, 0.98, 1.01]]);
    let r = judge(&steady("<= 5%"), &calm, &|_| None);
    assert!(r.passed, "{r:?}");
    assert!(
        r.details.iter().all(|d| d.contains("of 4 repeats")),
        "{r:?}"
    );
    // One repeat 10% under the median of the others fails its sizes.
    let dip = phase(ALL_REDUCE, &[&[1.0, 1.0, 0.9, 1.0, 1.0]]);
    let r = judge(&steady("<= 5%"), &dip, &|_| None);
    assert!(!r.passed, "{r:?}");
    assert!(
        r.details
            .iter()
            .any(|d| d.contains("10.0% from the median (FAIL)")),
        "{r:?}"
    );
    assert!(judge(&steady("<= 15%"), &dip, &|_| None).passed);
    // One repeat judges nothing: it fails closed.
    let once = phase(ALL_REDUCE, &[&[1.0]]);
    let r = judge(&steady("<= 5%"), &once, &|_| None);
    assert!(!r.passed);
    assert_eq!(
        r.details,
        ["no job of the phase measured two repeats of one size"]
    );
}
