//! A rerun's schedule for tests between nodes (`pairs`, `isolate`): each node an earlier run
//! failed or left suspect runs as a pair with nodes that run passed. Running the suspects alone
//! (a one-node "pair") or only among themselves would measure nothing between a suspect and a
//! sound node, so a bad link would pass; a pair with a known-good node that fails points at the
//! suspect, and two such pairs isolate it.

use super::schedule::Over;

/// Known-good partners each suspect is confirmed against: two, so that one partner's bad day
/// cannot fail it alone, and attribution's "failed with nodes that passed elsewhere" holds twice.
pub const PARTNERS: usize = 2;

/// How many of `good` a rerun of `suspects` nodes needs: enough that every suspect meets
/// [`PARTNERS`] different ones and the pairs of a round stay disjoint in as few rounds as can be.
pub fn partners_needed(suspects: usize, good: usize) -> usize {
    good.min(suspects * PARTNERS)
}

/// Rounds of disjoint pairs (each ascending), every suspect with up to [`PARTNERS`] different
/// nodes of `good`; empty when `good` is. Suspects take partners in turn, so with at least
/// `PARTNERS × suspects` good nodes every suspect meets its partners in [`PARTNERS`] rounds.
pub fn confirm_rounds(suspects: &[usize], good: &[usize]) -> Vec<Vec<Vec<usize>>> {
    if good.is_empty() {
        return Vec::new();
    }
    let per = PARTNERS.min(good.len());
    let mut todo: Vec<[usize; 2]> = Vec::new();
    for (k, &s) in suspects.iter().enumerate() {
        for p in 0..per {
            let g = good[(k * PARTNERS + p) % good.len()];
            todo.push(if s < g { [s, g] } else { [g, s] });
        }
    }
    let mut rounds = Vec::new();
    while !todo.is_empty() {
        let mut busy = std::collections::HashSet::new();
        let mut round = Vec::new();
        todo.retain(|pair| {
            if pair.iter().any(|i| busy.contains(i)) {
                return true;
            }
            busy.extend(pair.iter().copied());
            round.push(pair.to_vec());
            false
        });
        rounds.push(round);
    }
    rounds
}

/// A rerun's rounds over `n` nodes of which `good` are known-good partners: tests between
/// nodes pair each of the others with them (`isolate` too: it confirms against them);
/// `each-node` runs the others alone; `all` is one set of every node.
pub fn rerun_rounds(over: Over, n: usize, good: &[usize]) -> Vec<Vec<Vec<usize>>> {
    let again: Vec<usize> = (0..n).filter(|i| !good.contains(i)).collect();
    match over {
        Over::All => vec![vec![(0..n).collect()]],
        Over::EachNode => vec![again.iter().map(|&i| vec![i]).collect()],
        Over::Pairs(_) | Over::Isolate => confirm_rounds(&again, good),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_suspect_meets_two_different_good_nodes_in_disjoint_rounds() {
        let r = confirm_rounds(&[2], &[0, 1, 3]);
        assert_eq!(r, vec![vec![vec![0, 2]], vec![vec![1, 2]]]);
        // Two suspects, four good nodes: two rounds of two pairs.
        let r = confirm_rounds(&[0, 5], &[1, 2, 3, 4]);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0], vec![vec![0, 1], vec![3, 5]]);
        for round in &r {
            let mut seen: Vec<usize> = round.iter().flatten().copied().collect();
            let n = seen.len();
            seen.sort();
            seen.dedup();
            assert_eq!(seen.len(), n, "a round's pairs are disjoint: {round:?}");
        }
        // One good node: each suspect meets it, one round each.
        assert_eq!(
            confirm_rounds(&[0, 1], &[2]),
            vec![vec![vec![0, 2]], vec![vec![1, 2]]]
        );
        assert!(confirm_rounds(&[0], &[]).is_empty());
        assert_eq!(partners_needed(1, 7), 2);
        assert_eq!(partners_needed(5, 3), 3);
    }

    #[test]
    fn a_rerun_confirms_isolate_and_pairs_alike_and_runs_each_node_alone() {
        use crate::nodeset::schedule::Pairing;
        // Node 1 again, nodes 0 and 2 known good.
        let pairs = rerun_rounds(Over::Pairs(Pairing::All), 3, &[0, 2]);
        assert_eq!(pairs, vec![vec![vec![0, 1]], vec![vec![1, 2]]]);
        assert_eq!(rerun_rounds(Over::Isolate, 3, &[0, 2]), pairs);
        assert_eq!(
            rerun_rounds(Over::EachNode, 3, &[0, 2]),
            vec![vec![vec![1]]]
        );
        assert_eq!(
            rerun_rounds(Over::All, 3, &[0, 2]),
            vec![vec![vec![0, 1, 2]]]
        );
    }
}
