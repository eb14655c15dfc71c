//! Reading a job's measurements: per requested size and placement, across repeats, with
//! bandwidths recomputed from time where a ratio needs more digits than nccl-tests prints (busbw
//! at small sizes prints as 0.00). Grading, the report and the history store all read results
//! this one way.

use super::{Cell, CellStatus, JobResult, Placement, Row};

/// One measured cell of one repeat.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    pub repeat: u32,
    pub row: &'a Row,
    pub cell: &'a Cell,
}

/// Every repeat's cell at `requested` in `placement`.
pub fn samples(r: &JobResult, requested: u64, placement: Placement) -> Vec<Sample<'_>> {
    r.repeats
        .iter()
        .flat_map(|rep| {
            rep.rows
                .iter()
                .filter(move |row| row.requested == requested)
                .filter_map(move |row| {
                    row.cell(placement).map(|cell| Sample {
                        repeat: rep.index,
                        row,
                        cell,
                    })
                })
        })
        .collect()
}

/// Ranks of the communicator whose numbers are recorded: rank 0's group when split.
pub fn comm_size(r: &JobResult) -> u64 {
    r.groups
        .iter()
        .find(|g| g.members.contains(&0))
        .map_or(r.layout.nranks, |g| g.members.len() as u64)
        .max(1)
}

/// busbw with full precision: from the printed size and time per op (the collective's own
/// formula), falling back to the recorded value when there is no time.
pub fn exact_busbw(r: &JobResult, s: &Sample<'_>) -> Option<f64> {
    match s.cell.time_us {
        Some(t) if t > 0.0 => Some(r.collective.bandwidths(s.row.size, t, comm_size(r)).1),
        _ => s.cell.busbw,
    }
}

/// Median of the exact busbw over repeats at a size; `None` without usable data.
pub fn median_busbw(r: &JobResult, requested: u64, placement: Placement) -> Option<f64> {
    let mut v: Vec<f64> = samples(r, requested, placement)
        .iter()
        .filter(|s| s.cell.status == CellStatus::Ok)
        .filter_map(|s| exact_busbw(r, s))
        .collect();
    median(&mut v)
}

/// Median over repeats of the busbw nccl-tests printed, for messages (ratios use
/// [`median_busbw`]).
pub fn median_printed_busbw(r: &JobResult, requested: u64, placement: Placement) -> Option<f64> {
    let mut v: Vec<f64> = samples(r, requested, placement)
        .iter()
        .filter(|s| s.cell.status == CellStatus::Ok)
        .filter_map(|s| s.cell.busbw)
        .collect();
    median(&mut v)
}

pub use crate::stats::median;

/// Median over repeats of the time per op (µs) at a size; `None` without a usable time.
pub fn median_time_us(r: &JobResult, requested: u64, placement: Placement) -> Option<f64> {
    let mut v: Vec<f64> = samples(r, requested, placement)
        .iter()
        .filter(|s| s.cell.status == CellStatus::Ok)
        .filter_map(|s| s.cell.time_us)
        .filter(|t| t.is_finite() && *t > 0.0)
        .collect();
    median(&mut v)
}

/// The placement a job is followed by over time (history, metrics): out-of-place unless only
/// in-place ran.
pub fn followed_placement(r: &JobResult) -> Placement {
    if r.cells().any(|c| c.2 == Placement::OutOfPlace) {
        Placement::OutOfPlace
    } else {
        Placement::InPlace
    }
}

/// Every requested size the results hold, ascending.
pub fn measured_sizes(r: &JobResult) -> Vec<u64> {
    let mut v: Vec<u64> = r
        .repeats
        .iter()
        .flat_map(|rep| rep.rows.iter().map(|row| row.requested))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The printed size of a requested size (0 for chunked rows too small to split).
pub fn printed_size(r: &JobResult, requested: u64) -> Option<u64> {
    r.repeats
        .iter()
        .flat_map(|rep| &rep.rows)
        .find(|row| row.requested == requested)
        .map(|row| row.size)
}
