//! Per-iteration timing (nccl-tests `-I 1`, `iterations: true` in a plan): each rank's time of
//! every timed iteration, summarised with nccl-tests' own formulas so the figures compare with
//! its `i_min`, `i_max`, `i_p99`, `i_cv%`, and kept per rank so the slow rank can be named.

pub use crate::results::iterations::{add_between_calls, of_ranks, stats};

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
