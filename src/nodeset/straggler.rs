//! The fleet-relative straggler: a node whose per-iteration time, over the node sets it ran in,
//! stands out from the fleet's. Every criterion it meets can pass while one iteration in a
//! hundred stalls on it; only its peers show that. As in the `outlier` rule, the yardstick is the
//! median of the fleet (a few slow nodes cannot move it), and the robust z against the median
//! absolute deviation is the evidence of how unusual the node is.
//!
//! A node's value is the median over its sets: ranks of one communicator wait for each other, so
//! in `over: pairs` a slow node slows each partner once, but every one of its own sets.

use serde::Serialize;

use super::attribution::MIN_PEERS;
use crate::stats::median;

/// A node's standing against the fleet's nodes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Standing {
    /// The median of its sets' values.
    pub value: f64,
    /// The fleet's median of node values.
    pub median: f64,
    /// Robust z-score (median absolute deviation scaled to σ); 0 when the fleet has no spread.
    pub z: f64,
    /// How many of its sets measured a value.
    pub sets: usize,
    /// Above `factor` times the fleet's median.
    pub straggler: bool,
}

/// Each node's standing from its sets' values (`nodes[i]`: node i's values, higher is slower),
/// judged against the node values of `fleet` (this run's own nodes when `None`). `None` when
/// fewer than [`MIN_PEERS`] nodes have a value: no fleet to compare with.
pub fn standings(
    nodes: &[Vec<f64>],
    fleet: Option<&[f64]>,
    factor: f64,
) -> Option<Vec<Option<Standing>>> {
    let own: Vec<Option<(f64, usize)>> = nodes
        .iter()
        .map(|v| {
            let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
            let n = v.len();
            median(&mut v).map(|m| (m, n))
        })
        .collect();
    let mut peers: Vec<f64> = match fleet {
        Some(f) => f.iter().copied().filter(|x| x.is_finite()).collect(),
        None => own.iter().flatten().map(|x| x.0).collect(),
    };
    if peers.len() < MIN_PEERS {
        return None;
    }
    let med = median(&mut peers)?;
    let mut dev: Vec<f64> = peers.iter().map(|x| (x - med).abs()).collect();
    let mad = median(&mut dev).unwrap_or(0.0) * 1.4826;
    Some(
        own.into_iter()
            .map(|o| {
                o.map(|(value, sets)| Standing {
                    value,
                    median: med,
                    z: if mad > 0.0 { (value - med) / mad } else { 0.0 },
                    sets,
                    straggler: med > 0.0 && value > factor * med,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_slow_in_all_its_sets_stands_out_and_its_partners_do_not() {
        // Pairs of four nodes, node 3 slow: every set with it is slow (its partners wait).
        let nodes = vec![
            vec![10.0, 11.0, 40.0],
            vec![10.0, 12.0, 41.0],
            vec![11.0, 12.0, 39.0],
            vec![40.0, 41.0, 39.0],
        ];
        let s = standings(&nodes, None, 2.0).unwrap();
        let slow: Vec<usize> = (0..4)
            .filter(|&i| s[i].is_some_and(|x| x.straggler))
            .collect();
        assert_eq!(slow, [3]);
        let n3 = s[3].unwrap();
        assert_eq!((n3.value, n3.sets), (40.0, 3));
        assert!(n3.z > 3.0, "{n3:?}");
    }

    #[test]
    fn too_few_nodes_or_an_earlier_fleet() {
        assert!(standings(&[vec![1.0], vec![9.0]], None, 2.0).is_none());
        let s = standings(&[vec![], vec![9.0]], Some(&[3.0, 3.0, 4.0]), 2.0).unwrap();
        assert!(s[0].is_none());
        assert!(s[1].unwrap().straggler);
    }
}
