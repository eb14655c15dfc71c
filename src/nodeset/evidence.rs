//! Attribution that node evidence settles. Timings alone cannot tell which node of a failing
//! pair is at fault when both passed elsewhere (a link fault) or neither did (suspects). When
//! the node's own counters moved during the failing set (its link flapped, an Xid, ECC errors)
//! and its partners' did not, the evidence isolates it: it is failed, and the link fault the
//! timings suggested is explained. A node whose counters did not move is never blamed by it.

use super::attribution::{Attribution, Fault, SetOutcome, SetResult, Verdict};

/// Applies evidence to `a`: `implicated[k]` are the nodes of set `k` whose own counters moved
/// during it (indexed like `outcomes`; may be shorter).
pub fn blame(a: &mut Attribution, outcomes: &[SetOutcome], implicated: &[Vec<usize>]) {
    let mut explained = Vec::new();
    for (k, o) in outcomes.iter().enumerate() {
        let Some([one]) = implicated.get(k).map(Vec::as_slice) else {
            continue;
        };
        if o.result != SetResult::Fail || !o.nodes.contains(one) {
            continue;
        }
        if let Some(r) = a.nodes.iter_mut().find(|r| r.node == *one) {
            r.evidence_in.push(k);
            explained.push(k);
        }
    }
    for r in a.nodes.iter_mut().filter(|r| !r.evidence_in.is_empty()) {
        r.verdict = Verdict::Failed;
    }
    a.faults.retain(|f| match f {
        Fault::Link { set, .. } | Fault::Set { set, .. } => !explained.contains(set),
        _ => true,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodeset::attribution::attribute;

    fn o(round: u32, nodes: &[usize], result: SetResult) -> SetOutcome {
        SetOutcome {
            round,
            nodes: nodes.to_vec(),
            result,
        }
    }

    #[test]
    fn a_node_whose_own_counters_moved_is_failed_and_its_partners_are_not() {
        use SetResult::*;
        // node 2 fails with 0 and 1, passes with 3: timings alone make it a suspect and
        // two link faults.
        let out = vec![
            o(1, &[0, 2], Fail),
            o(1, &[1, 3], Pass),
            o(2, &[1, 2], Fail),
            o(2, &[0, 3], Pass),
            o(3, &[2, 3], Pass),
            o(3, &[0, 1], Pass),
        ];
        let mut a = attribute(4, &out);
        assert_eq!(a.nodes[2].verdict, Verdict::Suspect);
        assert_eq!(a.faults.len(), 2);
        blame(&mut a, &out, &[vec![2], vec![], vec![2]]);
        assert_eq!(a.nodes[2].verdict, Verdict::Failed);
        assert_eq!(a.nodes[2].evidence_in, [0, 2]);
        assert!(a.faults.is_empty(), "{:?}", a.faults);
        for n in [0, 1, 3] {
            assert_eq!(a.nodes[n].verdict, Verdict::Passed);
        }
        // Both ends moved: the evidence does not say which; a passing set blames nobody.
        let mut b = attribute(4, &out);
        blame(&mut b, &out, &[vec![0, 2], vec![1]]);
        assert_eq!(b.nodes[2].verdict, Verdict::Suspect);
        assert_eq!(b.nodes[1].verdict, Verdict::Passed);
        assert_eq!(b.faults.len(), 2);
    }
}
