//! The isolation state machine driven by a simulated cluster.

use super::*;
use crate::nodeset::attribution::Verdict;

/// A simulated cluster: bad nodes fail every set they are in, dead nodes never start, and a
/// bad boundary fails every set with nodes on both of its sides.
#[derive(Default)]
struct Oracle {
    bad: Vec<usize>,
    dead: Vec<usize>,
    cuts: Vec<(Vec<usize>, Vec<usize>)>,
}

impl Oracle {
    fn run(&self, s: &[usize]) -> SetResult {
        let dead: Vec<usize> = s
            .iter()
            .copied()
            .filter(|i| self.dead.contains(i))
            .collect();
        if !dead.is_empty() {
            return SetResult::Dead(dead);
        }
        let spans = self
            .cuts
            .iter()
            .any(|(a, b)| s.iter().any(|i| a.contains(i)) && s.iter().any(|i| b.contains(i)));
        if spans || s.iter().any(|i| self.bad.contains(i)) {
            SetResult::Fail
        } else {
            SetResult::Pass
        }
    }

    fn isolate(&self, n: usize, domains: &[Vec<usize>]) -> (Isolator, Attribution) {
        let mut iso = Isolator::new(n, domains).unwrap();
        while let Some(sets) = iso.next_round() {
            let mut seen = BTreeSet::new();
            for &i in sets.iter().flatten() {
                assert!(seen.insert(i), "node {i} twice in round {}", iso.rounds());
            }
            let results: Vec<SetResult> = sets.iter().map(|s| self.run(s)).collect();
            iso.record(&results).unwrap();
        }
        let a = iso.attribution();
        (iso, a)
    }
}

fn log2_ceil(n: usize) -> u32 {
    usize::BITS - (n - 1).leading_zeros()
}

#[test]
fn a_healthy_cluster_passes_in_two_rounds() {
    for n in [2, 3, 8, 32, 1000] {
        let (iso, a) = Oracle::default().isolate(n, &[]);
        assert_eq!(a.with(Verdict::Passed).len(), n);
        assert!(a.faults.is_empty());
        assert!(iso.rounds() <= 2, "n={n}: {} rounds", iso.rounds());
    }
}

#[test]
fn one_bad_node_is_named_and_confirmed_quickly() {
    for n in [8, 32, 128, 1000] {
        for bad in [0, n / 3, n - 1] {
            let (iso, a) = Oracle {
                bad: vec![bad],
                ..Default::default()
            }
            .isolate(n, &[]);
            assert_eq!(a.with(Verdict::Failed), [bad], "n={n}");
            assert_eq!(a.with(Verdict::Passed).len(), n - 1, "n={n}");
            let r = &a.nodes[bad];
            let pairs = r
                .isolated_by
                .iter()
                .filter(|&&k| iso.history()[k].nodes.len() == 2)
                .count();
            assert!(pairs >= 2, "n={n}: confirmed against two good nodes");
            assert!(
                iso.rounds() <= log2_ceil(n) + 3,
                "n={n}: {} rounds",
                iso.rounds()
            );
        }
    }
}

#[test]
fn two_bad_nodes_are_both_named() {
    for (n, bad) in [
        (8, vec![1, 2]),
        (8, vec![0, 7]),
        (32, vec![3, 20]),
        (128, vec![5, 6]),
    ] {
        let (iso, a) = Oracle {
            bad: bad.clone(),
            ..Default::default()
        }
        .isolate(n, &[]);
        assert_eq!(a.with(Verdict::Failed), bad, "n={n}");
        assert_eq!(a.with(Verdict::Suspect), Vec::<usize>::new());
        assert!(iso.rounds() <= log2_ceil(n) + 4, "n={n}: {}", iso.rounds());
    }
}

#[test]
fn a_bad_boundary_between_healthy_halves_names_both_sides() {
    let a_side: Vec<usize> = (0..4).collect();
    let b_side: Vec<usize> = (4..8).collect();
    let oracle = Oracle {
        cuts: vec![(a_side.clone(), b_side.clone())],
        ..Default::default()
    };
    for domains in [vec![], vec![a_side.clone(), b_side.clone()]] {
        let (iso, a) = oracle.isolate(8, &domains);
        assert_eq!(a.with(Verdict::Passed).len(), 8, "no node is blamed");
        let boundaries: Vec<&Fault> = a
            .faults
            .iter()
            .filter(|f| matches!(f, Fault::Boundary { .. }))
            .collect();
        assert_eq!(boundaries.len(), 1, "{:?}", a.faults);
        assert!(
            matches!(boundaries[0], Fault::Boundary { a, b, sets } if *a == a_side && *b == b_side && sets.len() == 2)
        );
        // Screen, confirm on each side, remove-and-prove, bisect, probe.
        assert!(iso.rounds() <= 8, "{} rounds", iso.rounds());
    }
}

#[test]
fn a_dead_node_costs_only_its_sets() {
    let (iso, a) = Oracle {
        dead: vec![5],
        ..Default::default()
    }
    .isolate(8, &[]);
    assert_eq!(a.with(Verdict::Failed), [5]);
    assert_eq!(a.with(Verdict::Passed).len(), 7);
    let after: Vec<&SetOutcome> = iso
        .history()
        .iter()
        .skip_while(|o| !matches!(o.result, SetResult::Dead(_)))
        .skip(1)
        .collect();
    assert!(
        after.iter().all(|o| !o.nodes.contains(&5)),
        "never scheduled again"
    );
}

#[test]
fn a_dead_node_and_a_bad_node_together() {
    let (_, a) = Oracle {
        dead: vec![2],
        bad: vec![9],
        ..Default::default()
    }
    .isolate(32, &[]);
    assert_eq!(a.with(Verdict::Failed), [2, 9]);
}

#[test]
fn an_interrupted_isolation_resumes_from_its_record() {
    let oracle = Oracle {
        bad: vec![5],
        ..Default::default()
    };
    let (whole, a) = oracle.isolate(32, &[]);
    // Record the first two rounds, "crash", replay them, and finish.
    let mut iso = Isolator::new(32, &[]).unwrap();
    let mut recorded = Vec::new();
    for _ in 0..2 {
        let sets = iso.next_round().unwrap();
        let results: Vec<SetResult> = sets.iter().map(|s| oracle.run(s)).collect();
        iso.record(&results).unwrap();
        recorded.push(Recorded {
            sets,
            results,
            named: Vec::new(),
        });
    }
    let mut resumed = Isolator::replay(32, &[], &recorded).unwrap();
    while let Some(sets) = resumed.next_round() {
        let results: Vec<SetResult> = sets.iter().map(|s| oracle.run(s)).collect();
        resumed.record(&results).unwrap();
    }
    assert_eq!(resumed.history(), whole.history());
    assert_eq!(resumed.attribution(), a);
    // A record from another node list is refused, not reinterpreted.
    assert_eq!(
        Isolator::replay(33, &[], &recorded).unwrap_err(),
        IsolateError::ReplayMismatch { round: 1 }
    );
}

#[test]
fn screening_follows_domains() {
    let domains = vec![
        (0..6).collect::<Vec<_>>(),
        (6..12).collect(),
        (12..16).collect(),
    ];
    let mut iso = Isolator::new(16, &domains).unwrap();
    assert_eq!(iso.next_round().unwrap(), domains);
}

#[test]
fn everything_bad_leaves_suspects_not_guesses() {
    let (_, a) = Oracle {
        bad: (0..8).collect(),
        ..Default::default()
    }
    .isolate(8, &[]);
    assert_eq!(a.with(Verdict::Suspect).len(), 8);
}

#[test]
fn record_checks_what_it_is_given() {
    let mut iso = Isolator::new(4, &[]).unwrap();
    assert_eq!(iso.record(&[]), Err(IsolateError::NoRound));
    let r = iso.next_round().unwrap();
    assert_eq!(
        iso.next_round().unwrap(),
        r,
        "asking twice gives the same round"
    );
    assert!(matches!(
        iso.record(&[]),
        Err(IsolateError::OutcomeCount { got: 0, .. })
    ));
    assert!(matches!(
        Isolator::new(4, &[vec![0, 1], vec![1, 2]]),
        Err(IsolateError::TwoDomains { node: 1 })
    ));
    assert!(matches!(
        Isolator::new(1, &[]),
        Err(IsolateError::TooFewNodes(1))
    ));
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Verdicts never contradict the evidence: only bad or dead nodes fail, a bad node
        /// never passes, and when good nodes are the large majority every bad one is found.
        #[test]
        fn verdicts_never_blame_a_sound_node(
            n in 2usize..90,
            picks in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
            dead in prop::option::of(any::<prop::sample::Index>()),
        ) {
            let mut bad: Vec<usize> = picks.iter().map(|i| i.index(n)).collect();
            bad.sort();
            bad.dedup();
            let dead: Vec<usize> = dead.map(|d| d.index(n)).filter(|d| !bad.contains(d)).into_iter().collect();
            let oracle = Oracle { bad: bad.clone(), dead: dead.clone(), ..Default::default() };
            let (iso, a) = oracle.isolate(n, &[]);
            prop_assert!(iso.rounds() <= MAX_ROUNDS);
            for f in a.with(Verdict::Failed) {
                prop_assert!(bad.contains(&f) || dead.contains(&f), "sound node {} failed", f);
            }
            for b in bad.iter().chain(&dead) {
                prop_assert!(a.nodes[*b].verdict != Verdict::Passed, "bad node {} passed", b);
            }
            if n >= 8 * (bad.len() + dead.len()).max(1) {
                let mut found = a.with(Verdict::Failed);
                found.sort();
                let mut want: Vec<usize> = bad.iter().chain(&dead).copied().collect();
                want.sort();
                prop_assert_eq!(found, want);
                prop_assert_eq!(a.with(Verdict::Suspect), Vec::<usize>::new());
            }
        }

        /// A fault between two parts of the cluster, wherever the cut falls (each side at
        /// least two nodes), never fails a node, and is reported as a fault between nodes.
        #[test]
        fn a_cut_anywhere_blames_no_node(n in 4usize..90, at in any::<prop::sample::Index>()) {
            // A side of one node is a bad node as far as any test can tell.
            let k = 2 + at.index(n - 3);
            let oracle = Oracle {
                cuts: vec![((0..k).collect(), (k..n).collect())],
                ..Default::default()
            };
            let (_, a) = oracle.isolate(n, &[]);
            prop_assert_eq!(a.with(Verdict::Failed), Vec::<usize>::new());
            prop_assert!(!a.faults.is_empty());
        }
    }
}

/// Prints the rounds quoted in docs/node-sets.md:
/// `cargo test --lib nodeset::isolate::tests::round_counts -- --nocapture`.
#[test]
fn round_counts() {
    for n in [8, 32, 128, 1000] {
        let healthy = Oracle::default().isolate(n, &[]).0;
        let one = Oracle {
            bad: vec![n / 2],
            ..Default::default()
        }
        .isolate(n, &[]);
        let two = Oracle {
            bad: vec![1, n - 2],
            ..Default::default()
        }
        .isolate(n, &[]);
        let half: Vec<usize> = (0..n / 2).collect();
        let rest: Vec<usize> = (n / 2..n).collect();
        let cut = Oracle {
            cuts: vec![(half, rest)],
            ..Default::default()
        }
        .isolate(n, &[]);
        assert_eq!(one.1.with(Verdict::Failed), [n / 2]);
        assert_eq!(two.1.with(Verdict::Failed), [1, n - 2]);
        assert_eq!(
            cut.1.with(Verdict::Passed).len(),
            n,
            "n={n}: {:?}",
            cut.1.with(Verdict::Failed)
        );
        assert!(
            cut.1
                .faults
                .iter()
                .any(|f| matches!(f, Fault::Boundary { .. })),
            "n={n}"
        );
        println!(
            "n={n}: healthy {} rounds / {} sets; one bad {} / {}; two bad {} / {}; boundary {} / {}",
            healthy.rounds(),
            healthy.history().len(),
            one.0.rounds(),
            one.0.history().len(),
            two.0.rounds(),
            two.0.history().len(),
            cut.0.rounds(),
            cut.0.history().len()
        );
    }
}

/// #25: a hung set whose record names a node (NCCL's RAS, recorded from the shared NCCL 2.30.7
/// with one rank stopped): that node is confirmed against a node that passed at once and the
/// rest of its set runs again without it; without the name the set is bisected.
#[test]
fn nodes_ras_named_in_a_hung_set_go_straight_to_confirmation() {
    let j = include_str!("../../../tests/data/ras/nccl-2.30.7-rank-stopped.json");
    let report = crate::ras::json::parse(j).unwrap();
    let hosts: Vec<String> = (0..16).map(|i| format!("n{i:02}")).collect();
    // The hung set's ranks 0–3 as the run knows them: pid → its host.
    let pids = [687u64, 688, 690, 691];
    let host = |r: &crate::ras::Rank| {
        r.pid
            .and_then(|p| pids.iter().position(|q| *q == p))
            .map_or_else(|| r.host.clone(), |i| hosts[10 + i].clone())
    };
    let named = report.named_hosts(&host);
    assert_eq!(named, ["n12"], "the stopped rank's host");
    let idx: Vec<usize> = named
        .iter()
        .filter_map(|h| hosts.iter().position(|x| x == h))
        .collect();
    let domains: Vec<Vec<usize>> = vec![(0..8).collect(), (8..16).collect()];
    let outcomes = [SetResult::Pass, SetResult::Fail];

    let mut iso = Isolator::new(16, &domains).unwrap();
    assert_eq!(iso.next_round().unwrap().len(), 2);
    iso.record_named(&outcomes, &idx).unwrap();
    let r2 = iso.next_round().unwrap();
    assert!(
        r2.iter()
            .any(|s| s.len() == 2 && s.contains(&12) && s.iter().any(|&i| i < 8)),
        "n12 with a node that passed: {r2:?}"
    );
    assert!(r2.contains(&vec![8, 9, 10, 11, 13, 14, 15]), "{r2:?}");

    let mut plain = Isolator::new(16, &domains).unwrap();
    plain.next_round();
    plain.record(&outcomes).unwrap();
    let halves: Vec<Vec<usize>> = vec![(8..12).collect(), (12..16).collect()];
    assert_eq!(plain.next_round().unwrap(), halves, "bisected");
    assert!(
        iso.record_named(&[], &[99]).is_err(),
        "a name outside the list"
    );
}

/// #25: a resumed isolation reads the nodes RAS named back from the record and reaches the
/// same decision as the run: the named node confirmed at once. Without the names the record
/// does not replay (the run went another way), rather than being reinterpreted.
#[test]
fn a_replayed_isolation_with_ras_named_nodes_reaches_the_runs_decision() {
    let domains: Vec<Vec<usize>> = vec![(0..8).collect(), (8..16).collect()];
    let mut run = Isolator::new(16, &domains).unwrap();
    let mut recorded = Vec::new();
    let sets = run.next_round().unwrap();
    let results = vec![SetResult::Pass, SetResult::Fail];
    run.record_named(&results, &[12]).unwrap();
    recorded.push(Recorded {
        sets,
        results,
        named: named_in(
            &(0..16).map(|i| format!("n{i:02}")).collect::<Vec<_>>(),
            &(8..16).collect::<Vec<_>>(),
            &["n12", "elsewhere", "n03"],
        ),
    });
    assert_eq!(recorded[0].named, [12], "only the failed set's own nodes");
    let sets = run.next_round().unwrap();
    let results: Vec<SetResult> = sets
        .iter()
        .map(|s| {
            if s.contains(&12) {
                SetResult::Fail
            } else {
                SetResult::Pass
            }
        })
        .collect();
    run.record(&results).unwrap();
    recorded.push(Recorded {
        sets,
        results,
        named: Vec::new(),
    });

    let mut resumed = Isolator::replay(16, &domains, &recorded).unwrap();
    assert_eq!(resumed.next_round(), run.clone().next_round());
    assert_eq!(resumed.history(), run.history());
    assert_eq!(resumed.attribution(), run.attribution());

    let unnamed: Vec<Recorded> = recorded
        .iter()
        .map(|r| Recorded {
            named: Vec::new(),
            ..r.clone()
        })
        .collect();
    assert_eq!(
        Isolator::replay(16, &domains, &unnamed).unwrap_err(),
        IsolateError::ReplayMismatch { round: 2 }
    );
}
