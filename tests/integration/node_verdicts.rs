//! Node verdicts across tests and across runs (#23): a node's verdict comes from the sets that
//! tested it, a whole-cluster test that fails is a cluster finding rather than every node
//! suspect, and a rerun supersedes what it measured again — real `baton run`s of node sets over
//! `mpirun -H` through the local agent (`common::localsets`).
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common;
use common::localsets::{node, nodes_json};
use common::{baton_env, code, p, read, show, stdout, write};

/// Every node alone, every pair, then the whole list (`over: all`, the default) with `whole`.
fn plan(whole: &str) -> String {
    format!(
        "version: 1
name: verdicts
backend: mpi
launch: {{ ranks_per_node: 1 }}
nodes: {{ hostlist: \"n[1-4]\" }}
defaults: {{ iters: 2, warmup: 1, timeout: 10s }}
tests:
  - name: each
    over: each-node
    collective: broadcast
    sizes: [8, 64K]
    expect: [ {{ wrong: 0 }} ]
  - name: pairs
    over: pairs
    collective: broadcast
    sizes: [8, 64K]
    expect: [ {{ wrong: 0 }} ]
  - name: whole
    collective: broadcast
    sizes: [64K]
    expect: [ {whole} ]
"
    )
}

/// `baton ARGS` in `d` with `dead` refusing connections.
fn run(d: &Path, dead: &[&str], args: &[&str]) -> Output {
    let agent_dir = d.join(format!("agent-{}", dead.join("-")));
    std::fs::create_dir_all(&agent_dir).unwrap();
    let agent = common::localsets::agent(&agent_dir, dead, None);
    common::localsets::baton_over(&agent, args)
}

fn setup(name: &str, whole: &str) -> (PathBuf, PathBuf) {
    let d = common::tmp(name);
    let plan = write(&d, "p.yaml", &plan(whole));
    (d, plan)
}

/// One dead node: the test over the whole list cannot run, yet the other nodes passed every
/// set that tested them — they are passed, not "suspect: never tested"; each node's verdict
/// per test is in nodes.json, and the test that did not run is a cluster finding.
#[test]
fn a_dead_node_leaves_the_others_to_the_sets_that_tested_them() {
    let (d, plan) = setup("verdicts-dead", "{ wrong: 0 }");
    let out = d.join("out");
    let o = run(&d, &["n3"], &["run", p(&plan), "-o", p(&out)]);
    assert_ne!(code(&o), 0, "{}", show(&o));
    let n = nodes_json(&out);
    assert_eq!(
        (&n["passed"], &n["failed"], &n["suspect"]),
        (&"n[1-2,4]".into(), &"n3".into(), &"".into()),
        "{n:#}"
    );
    let tests = node(&n, "n1")["tests"]
        .as_array()
        .expect("per-test verdicts");
    let whole = tests.iter().find(|t| t["test"] == "whole").expect("whole");
    assert_eq!(whole["verdict"], "not_tested", "{whole}");
    let pairs: Vec<&serde_json::Value> = tests.iter().filter(|t| t["test"] == "pairs").collect();
    assert!(
        !pairs.is_empty()
            && pairs
                .iter()
                .all(|t| t["verdict"] == "passed" && t["set"] != ""),
        "{tests:?}"
    );
    let cluster = n["cluster"].as_array().expect("cluster findings");
    assert!(
        cluster
            .iter()
            .any(|c| c["test"] == "whole" && c["reason"].as_str().unwrap().contains("n3")),
        "{cluster:?}"
    );
    let schema: serde_json::Value =
        serde_json::from_str(&read(Path::new("schemas/nodes.schema.json"))).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(&n).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let md = read(&out.join("report/report.md"));
    assert!(md.contains("### Cluster findings"), "{md}");
}

/// A healthy cluster whose whole-cluster criterion fails: a cluster finding, its own section
/// in nodes.json and the report — not every node suspect ("passed none").
#[test]
fn a_whole_cluster_criterion_failing_is_a_cluster_finding() {
    let (d, plan) = setup("verdicts-cluster", "{ busbw: \">= 100000 GB/s\", at: 64K }");
    let out = d.join("out");
    let o = run(&d, &[], &["run", p(&plan), "-o", p(&out)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    let n = nodes_json(&out);
    assert_eq!(
        (&n["passed"], &n["suspect"]),
        (&"n[1-4]".into(), &"".into()),
        "{n:#}"
    );
    let cluster = n["cluster"].as_array().expect("cluster findings");
    assert_eq!(cluster.len(), 1, "{cluster:?}");
    assert_eq!(cluster[0]["test"], "whole");
    assert_eq!(cluster[0]["hosts"], "n[1-4]");
    assert!(
        cluster[0]["reason"].as_str().unwrap().contains("busbw"),
        "{cluster:?}"
    );
    let whole = node(&n, "n2")["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["test"] == "whole")
        .cloned()
        .unwrap();
    assert_eq!(whole["verdict"], "cluster", "{whole}");
    let err = common::stderr(&o);
    assert!(err.contains("passed n[1-4]"), "{err}");
}

/// A run, then its `--rerun-failed` with the dead node back: `grade` and `report` of both
/// take the rerun's measurements over the first run's for the jobs and sets it measured again
/// (and say so), instead of failing each job as "2 results match"; the healed node is passed,
/// its earlier failure kept as history.
#[test]
fn a_rerun_supersedes_what_it_measured_again() {
    let (d, plan) = setup("verdicts-rerun", "{ wrong: 0 }");
    let (first, again) = (d.join("first"), d.join("again"));
    let o = run(&d, &["n3"], &["run", p(&plan), "-o", p(&first)]);
    assert_ne!(code(&o), 0, "{}", show(&o));
    let nodes = first.join("nodes.json");
    let o = run(
        &d,
        &[],
        &[
            "run",
            p(&plan),
            "--rerun-failed",
            p(&nodes),
            "-o",
            p(&again),
        ],
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    let (a, b) = (first.join("results.json"), again.join("results.json"));
    let g = baton_env(&["grade", p(&plan), p(&a), p(&b)], &[]);
    let text = stdout(&g);
    assert_eq!(code(&g), 0, "{}", show(&g));
    assert!(!text.contains("2 results match"), "{text}");
    assert!(
        text.contains(&format!("{} supersedes {}", p(&b), p(&a))),
        "the output says which run superseded which: {text}"
    );
    // The order on the command line does not matter: the later run wins.
    let g = baton_env(&["grade", p(&plan), p(&b), p(&a)], &[]);
    assert_eq!(code(&g), 0, "{}", show(&g));
    let rep = d.join("rep");
    let r = baton_env(&["report", p(&plan), p(&a), p(&b), "-o", p(&rep)], &[]);
    assert_eq!(code(&r), 0, "{}", show(&r));
    let md = read(&rep.join("report.md"));
    let nodes = &md[md.find("## Nodes").expect("a Nodes section")..];
    assert!(
        nodes.contains("Passed: n[1-4] · failed: none · suspect: none"),
        "{nodes}"
    );
    let n3 = nodes
        .lines()
        .find(|l| l.starts_with("| n3 |"))
        .unwrap_or_else(|| panic!("{nodes}"));
    assert!(
        n3.contains("| passed |") && n3.contains("earlier") && n3.contains("dead"),
        "the earlier failure is history: {n3}"
    );
    let j = baton_env(&["grade", "--format", "json", p(&plan), p(&a), p(&b)], &[]);
    let doc: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert!(
        doc["superseded"].as_array().is_some_and(|s| !s.is_empty()),
        "{doc:#}"
    );
}
