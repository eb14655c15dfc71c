//! Per-iteration timing (nccl-tests `-I 1`, `iterations: true` in a plan): each rank's time of
//! every timed iteration, summarised with nccl-tests' own formulas so the figures compare with
//! its `i_min`, `i_max`, `i_p99`, `i_cv%`, and kept per rank so the slow rank can be named.

use crate::results::{IterationStats, Iterations, RankIterations};

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
            })
            .collect(),
    })
}

/// One rank's times as one string for the world's all-gather (Rust's shortest round-trip form).
pub fn encode(times: &[f64]) -> String {
    times
        .iter()
        .map(f64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The inverse of [`encode`]; anything unreadable counts as no times from that rank.
pub fn decode(text: &str) -> Vec<f64> {
    if text.is_empty() {
        return Vec::new();
    }
    text.split(',')
        .map(str::parse::<f64>)
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_follow_nccl_tests_formulas() {
        // 1..=10: p50 = sorted[5] = 6, p95 = index ceil(9.5)-1 = 9, p99 = index 9.
        let t: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = stats(&t);
        assert_eq!((s.min_us, s.max_us, s.p50_us), (1.0, 10.0, 6.0));
        assert_eq!((s.p95_us, s.p99_us), (10.0, 10.0));
        assert_eq!(s.avg_us, 5.5);
        assert!(
            (s.stdev_us - 8.25f64.sqrt()).abs() < 1e-12,
            "population stdev"
        );
        assert!((s.cv_pct - 8.25f64.sqrt() / 5.5 * 100.0).abs() < 1e-9);
        // 200 samples: p99 = sorted[197] (nearest rank), not the max.
        let t: Vec<f64> = (0..200).map(f64::from).collect();
        let s = stats(&t);
        assert_eq!((s.p95_us, s.p99_us, s.p50_us), (189.0, 197.0, 100.0));
    }

    #[test]
    fn the_summary_takes_each_iterations_slowest_rank() {
        let ranks = vec![vec![1.0, 5.0, 1.0], vec![2.0, 1.0, 2.0], vec![]];
        let it = of_ranks(&ranks).unwrap();
        assert_eq!(it.times_us, vec![2.0, 5.0, 2.0]);
        assert_eq!(it.ranks.len(), 2, "a rank without times is left out");
        assert_eq!(it.slowest().unwrap().rank, 0);
        assert!(of_ranks(&[vec![], vec![]]).is_none());
    }

    #[test]
    fn times_travel_exactly() {
        let t = vec![12.345678901234, 0.1, 1e-9];
        assert_eq!(decode(&encode(&t)), t);
        assert!(decode("").is_empty());
        assert!(decode("1,x").is_empty());
    }
}
