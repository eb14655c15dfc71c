//! Per-iteration statistics with nccl-tests' own formulas (`computeIterStats` of its
//! `src/util.cu`), shared by the runner that times iterations and the ingest of a `-J` log that
//! recorded them, so both give figures that compare with nccl-tests' `i_min`, `i_max`, `i_p99`,
//! `i_cv%`.

use super::{IterationStats, Iterations, RankIterations};

/// nccl-tests' `percentileIndex`: nearest rank, so with fewer than 100 samples p99 may be the max.
fn percentile_index(n: usize, percentile: usize) -> usize {
    ((n * percentile).div_ceil(100))
        .saturating_sub(1)
        .min(n - 1)
}

/// nccl-tests' `computeIterStats`: p50 is the upper median (`sorted[n/2]`), stdev the population's.
pub fn stats(times: &[f64]) -> IterationStats {
    if times.is_empty() {
        return IterationStats::default();
    }
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let avg = sorted.iter().sum::<f64>() / n as f64;
    let var = sorted.iter().map(|t| (t - avg) * (t - avg)).sum::<f64>() / n as f64;
    let stdev = var.sqrt();
    IterationStats {
        min_us: sorted[0],
        max_us: sorted[n - 1],
        avg_us: avg,
        p50_us: sorted[n / 2],
        p95_us: sorted[percentile_index(n, 95)],
        p99_us: sorted[percentile_index(n, 99)],
        stdev_us: stdev,
        cv_pct: if avg > 0.0 { stdev / avg * 100.0 } else { 0.0 },
    }
}

/// Every rank's times (index = plan rank) → the cell's iterations: the summary over each
/// iteration's slowest rank, as nccl-tests reduces its process rows. Ranks that sent no times
/// (a backend without marks) are left out; `None` when none sent any.
pub fn of_ranks(per_rank: &[Vec<f64>]) -> Option<Iterations> {
    let n = per_rank.iter().map(Vec::len).max().filter(|n| *n > 0)?;
    let full: Vec<(usize, &Vec<f64>)> = per_rank
        .iter()
        .enumerate()
        .filter(|(_, t)| t.len() == n)
        .collect();
    let times_us: Vec<f64> = (0..n)
        .map(|i| full.iter().map(|(_, t)| t[i]).fold(0.0, f64::max))
        .collect();
    Some(Iterations {
        summary: stats(&times_us),
        times_us,
        ranks: full
            .iter()
            .map(|(r, t)| RankIterations {
                rank: *r as u64,
                stats: stats(t),
                between_calls: None,
            })
            .collect(),
    })
}

/// Each rank's times between calls (index = plan rank, as in [`of_ranks`]) beside its times; a
/// rank that sent none keeps none.
pub fn add_between_calls(it: &mut Iterations, between_calls: &[Vec<f64>]) {
    for r in &mut it.ranks {
        r.between_calls = between_calls
            .get(r.rank as usize)
            .filter(|t| !t.is_empty())
            .map(|t| stats(t));
    }
}
