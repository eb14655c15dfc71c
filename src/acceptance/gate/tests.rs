use super::*;
use crate::acceptance::doc::PhasePlan;
use crate::acceptance::record::NodeInPhase;

fn phase(name: &str, needs: Vec<usize>, suspects: Suspects) -> Phase {
    Phase {
        name: name.into(),
        plan: PhasePlan::File("p.yaml".into()),
        over: None,
        needs,
        only_if_failed: None,
        suspects,
        stop: None,
        criteria: vec![],
        criteria_at: vec![],
    }
}

fn hosts(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("node{i:02}")).collect()
}

fn record(name: &str, status: PhaseStatus, verdicts: &[(&str, NodeVerdict)]) -> PhaseRecord {
    PhaseRecord {
        index: 0,
        name: name.into(),
        dir: String::new(),
        plan_file: String::new(),
        plan: String::new(),
        status,
        why: None,
        started: None,
        finished: None,
        seconds: None,
        run_began: None,
        run_ended: None,
        overhead_s: None,
        nodes_in: String::new(),
        nodes_out: String::new(),
        nodes: verdicts
            .iter()
            .map(|(h, v)| NodeInPhase {
                host: h.to_string(),
                verdict: *v,
                reason: "why".into(),
            })
            .collect(),
        findings: vec![],
        criteria: vec![],
        exit: 0,
    }
}

#[test]
fn a_phase_runs_on_the_nodes_its_needs_passed_failed_and_dead_ones_out() {
    use NodeVerdict::*;
    let phases = vec![
        phase("A", vec![], Suspects::Exclude),
        phase("B", vec![0], Suspects::Exclude),
        phase("C", vec![1], Suspects::Exclude),
    ];
    let a = record(
        "A",
        PhaseStatus::Failed,
        &[("node01", Passed), ("node02", Dead), ("node03", Passed)],
    );
    let b = record(
        "B",
        PhaseStatus::Failed,
        &[("node01", Passed), ("node02", Excluded), ("node03", Failed)],
    );
    let Gate::Run { hosts: h, out } = gate(&hosts(3), &phases, 1, std::slice::from_ref(&a)) else {
        panic!("B runs")
    };
    assert_eq!(h, ["node01", "node03"]);
    assert_eq!(out[0].0, "node02");
    assert!(out[0].1.starts_with("dead in phase A"), "{}", out[0].1);
    let Gate::Run { hosts: h, out } = gate(&hosts(3), &phases, 2, &[a, b]) else {
        panic!("C runs")
    };
    assert_eq!(h, ["node01"]);
    assert_eq!(out.len(), 2);
}

#[test]
fn suspects_follow_the_policy_of_the_phase_that_left_them() {
    use NodeVerdict::*;
    let all = hosts(2);
    let verdicts = [("node01", Passed), ("node02", Suspect)];
    for (policy, want) in [
        (Suspects::Include, 2),
        (Suspects::Exclude, 1),
        (Suspects::Rerun, 1),
    ] {
        let phases = vec![phase("A", vec![], policy), phase("B", vec![0], policy)];
        let a = record("A", PhaseStatus::Failed, &verdicts);
        let Gate::Run { hosts: h, .. } = gate(&all, &phases, 1, &[a]) else {
            panic!("B runs")
        };
        assert_eq!(h.len(), want, "{policy:?}");
    }
}

#[test]
fn a_phase_whose_need_failed_as_a_cluster_never_starts() {
    let phases = vec![
        phase("B", vec![], Suspects::Exclude),
        phase("C", vec![0], Suspects::Exclude),
    ];
    let b = record("B", PhaseStatus::ClusterFailed, &[]);
    let g = gate(&hosts(4), &phases, 1, &[b]);
    assert!(matches!(g, Gate::Not(PhaseStatus::Blocked, _)), "{g:?}");
}

#[test]
fn an_isolation_step_runs_only_when_its_phase_failed() {
    let mut iso = phase("isolate", vec![], Suspects::Exclude);
    iso.only_if_failed = Some(0);
    let phases = vec![phase("B", vec![], Suspects::Exclude), iso];
    let passed = record("B", PhaseStatus::Passed, &[]);
    let g = gate(&hosts(4), &phases, 1, &[passed]);
    assert!(matches!(g, Gate::Not(PhaseStatus::Skipped, _)), "{g:?}");
    let failed = record("B", PhaseStatus::Failed, &[]);
    assert!(matches!(
        gate(&hosts(4), &phases, 1, &[failed]),
        Gate::Run { .. }
    ));
}

#[test]
fn stop_rules_count_failed_and_dead_nodes_over_the_phases_so_far() {
    use NodeVerdict::*;
    let done = [
        record(
            "A",
            PhaseStatus::Failed,
            &[("node01", Dead), ("node02", Passed)],
        ),
        record(
            "B",
            PhaseStatus::Failed,
            &[("node02", Failed), ("node01", Excluded)],
        ),
    ];
    assert!(stops(Some(Stop::FailedNodes(2)), &done, 8).is_none());
    assert!(stops(Some(Stop::FailedNodes(1)), &done, 8).is_some());
    assert!(stops(Some(Stop::FailedPercent(25.0)), &done, 8).is_none());
    let why = stops(Some(Stop::FailedPercent(20.0)), &done, 8).unwrap();
    assert!(why.contains("2 of 8"), "{why}");
    assert!(stops(None, &done, 8).is_none());
}
