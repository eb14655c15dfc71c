//! The acceptance file's checks.

use std::path::Path;

use super::*;

fn parse_ok(text: &str) -> Acceptance {
    match parse(Path::new("acc.yaml"), text) {
        Ok(a) => a,
        Err(r) => panic!("{}", r.short()),
    }
}

fn errors(text: &str) -> String {
    match parse(Path::new("acc.yaml"), text) {
        Ok(_) => panic!("accepted: {text}"),
        Err(r) => r.short(),
    }
}

const FIVE: &str = "acceptance: 1
name: sim
phases:
  - name: A
    plan: a.yaml
  - name: B
    plan: b.yaml
    suspects: rerun
    stop: { failed_nodes: 2 }
  - name: isolate
    plan: iso.yaml
    needs: [A]
    only_if_failed: B
  - name: C
    plan: c.yaml
    needs: [B, isolate]
    criteria:
      - relative: { to: B }
  - name: D
    plan: { version: 1, name: d, tests: [] }
    over: all
    criteria:
      - relative: { to: C, collective: alltoall, of: all_reduce, busbw: '>= 85%' }
  - name: E
    plan: e.yaml
    criteria:
      - steady:
";

#[test]
fn a_document_names_phases_their_needs_and_the_templates_defaults() {
    let a = parse_ok(FIVE);
    assert_eq!(a.phases.len(), 6);
    assert_eq!(a.phases[1].needs, [0], "default: the phase before");
    assert!(a.phases[0].needs.is_empty());
    assert_eq!(a.phases[2].only_if_failed, Some(1));
    assert_eq!(a.phases[3].needs, [1, 2]);
    assert_eq!(a.phases[1].suspects, Suspects::Rerun);
    assert_eq!(a.phases[0].suspects, Suspects::Exclude);
    assert_eq!(a.phases[1].stop, Some(Stop::FailedNodes(2)));
    let Criterion::Relative { to, busbw, .. } = &a.phases[3].criteria[0] else {
        panic!()
    };
    assert_eq!((*to, busbw.value), (1, 90.0));
    let Criterion::Relative {
        busbw, collective, ..
    } = &a.phases[4].criteria[0]
    else {
        panic!()
    };
    assert_eq!(busbw.value, 85.0);
    assert_eq!(collective.map(|c| c.name()), Some("alltoall"));
    let Criterion::Steady { within } = &a.phases[5].criteria[0] else {
        panic!()
    };
    assert_eq!(within.value, 5.0);
    assert!(matches!(a.phases[4].plan, PhasePlan::Inline(_)));
    assert!(is_acceptance(FIVE));
    assert!(!is_acceptance("version: 1\nname: p\n"));
}

#[test]
fn every_mistake_is_located_and_named() {
    let e =
        errors("acceptance: 1\nname: x\nphases:\n  - name: A\n    plan: a.yaml\n    needs: [Z]\n");
    assert!(
        e.contains("acc.yaml:6") && e.contains("`Z` is no earlier phase"),
        "{e}"
    );
    let e = errors("acceptance: 1\nname: x\nphases:\n  - name: A\n    plan: ../a.yaml\n");
    assert!(e.contains("acc.yaml:5") && e.contains("no `..`"), "{e}");
    let e = errors("acceptance: 2\nname: x\nphases:\n  - name: A\n    plan: a.yaml\n");
    assert!(
        e.contains("acc.yaml:1") && e.contains("acceptance: 1"),
        "{e}"
    );
    let e = errors(
        "acceptance: 1\nname: x\nphases:\n  - name: A\n    plan: a.yaml\n    suspects: maybe\n",
    );
    assert!(e.contains("acc.yaml:6"), "{e}");
    let e =
        errors("acceptance: 1\nname: x\nphases:\n  - name: A\n    plan: a.yaml\n    stop: {}\n");
    assert!(e.contains("failed_nodes"), "{e}");
    let e = errors(
        "acceptance: 1\nname: x\nphases:\n  - name: A b\n    plan: a.yaml\n  - name: B\n    plan: b.yaml\n    criteria: [ { steady: '5%' } ]\n",
    );
    assert!(
        e.contains("letters, digits") && e.contains("comparison"),
        "{e}"
    );
    let e =
        errors("acceptance: 1\nname: x\nphases:\n  - name: A\n    plan: a.yaml\n    colour: red\n");
    assert!(e.contains("acc.yaml:6") && e.contains("colour"), "{e}");
}
