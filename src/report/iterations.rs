//! A job's per-iteration figures (`iterations: true`, nccl-tests `-I`): per size and placement
//! the distribution over each iteration's slowest rank, which rank was slowest and which spent
//! the most time between calls (the one the others waited for) — the figures a `straggler`
//! verdict reads, beside the table of medians.

use crate::grade::JobVerdict;
use crate::grade::{num, size};
use crate::results::Placement;

/// One size and placement of one repeat.
#[derive(Debug, Clone, PartialEq)]
pub struct IterRow {
    pub requested: String,
    pub placement: &'static str,
    pub repeat: u32,
    pub min: String,
    pub p50: String,
    pub p99: String,
    pub max: String,
    pub cv: String,
    /// `rank 3 (node07 GPU 3): p99 812 us`.
    pub slowest: String,
    /// The rank latest between calls, `rank 2 (node03): p99 54465 us`; empty when the results
    /// have no time between calls.
    pub latest: String,
}

/// The rows of `j`, empty when its results recorded no per-iteration timing.
pub fn rows(j: &JobVerdict) -> Vec<IterRow> {
    let Some(src) = &j.source else {
        return Vec::new();
    };
    let r = &src.result;
    let mut out = Vec::new();
    for rep in &r.repeats {
        for row in &rep.rows {
            for p in [Placement::OutOfPlace, Placement::InPlace] {
                let Some(it) = row.cell(p).and_then(|c| c.iterations.as_ref()) else {
                    continue;
                };
                let s = &it.summary;
                let at = |rank: u64| {
                    r.layout
                        .ranks
                        .iter()
                        .find(|l| l.rank == rank)
                        .map(|l| match l.device {
                            Some(d) => format!(" ({} GPU {d})", l.host),
                            None => format!(" ({})", l.host),
                        })
                        .unwrap_or_default()
                };
                let slowest = it.slowest().map_or_else(String::new, |x| {
                    format!(
                        "rank {}{}: p99 {} us",
                        x.rank,
                        at(x.rank),
                        num(x.stats.p99_us)
                    )
                });
                let latest = it.latest().map_or_else(String::new, |(rank, b)| {
                    format!("rank {rank}{}: p99 {} us", at(rank), num(b.p99_us))
                });
                out.push(IterRow {
                    requested: size(row.requested),
                    placement: p.label(),
                    repeat: rep.index,
                    min: num(s.min_us),
                    p50: num(s.p50_us),
                    p99: num(s.p99_us),
                    max: num(s.max_us),
                    cv: format!("{:.1}", s.cv_pct),
                    slowest,
                    latest,
                });
            }
        }
    }
    out
}
