//! The committed JSON Schemas must match the types they are generated from. Regenerate with
//! `BATON_BLESS=1 cargo test --test integration schemas::` after changing the plan, results or
//! node-verdict types.

use std::path::Path;

fn check(file: &str, generated: serde_json::Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(file);
    let text = serde_json::to_string_pretty(&generated).unwrap() + "\n";
    if std::env::var_os("BATON_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run BATON_BLESS=1 cargo test --test integration schemas::",
            path.display()
        )
    });
    assert!(
        committed == text,
        "{} drifted from the types; run BATON_BLESS=1 cargo test --test integration schemas:: and commit it",
        path.display()
    );
}

#[test]
fn plan_schema_matches_types() {
    let s = baton::plan::plan_schema();
    // Spot-check the contract users' editors rely on.
    assert_eq!(s["additionalProperties"], false);
    let req: Vec<&str> = s["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(req, ["version", "name", "tests"]);
    check("plan.schema.json", s);
}

#[test]
fn site_schema_matches_types() {
    let s = baton::site::site_schema();
    assert_eq!(s["additionalProperties"], false);
    assert_eq!(s["required"], serde_json::json!(["site"]));
    check("site.schema.json", s);
}

#[test]
fn results_schema_matches_types() {
    let s = baton::results::results_schema();
    assert!(s["properties"]["jobs"].is_object());
    check("results.schema.json", s);
}

#[test]
fn nodes_schema_matches_types() {
    let s = baton::nodeset::export::nodes_schema();
    for key in ["passed", "failed", "suspect", "nodes", "faults"] {
        assert!(s["properties"][key].is_object(), "{key}");
    }
    check("nodes.schema.json", s);
}

#[test]
fn verdict_schema_matches_types() {
    let s = baton::report::verdict_schema();
    for key in [
        "plan",
        "status",
        "exit_code",
        "jobs",
        "node_sets",
        "nodes",
        "node_set_figures",
    ] {
        assert!(s["properties"][key].is_object(), "{key}");
    }
    let req: Vec<&str> = s["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    // Node-set fields were added within version 1: a document without them is still valid.
    for key in ["node_sets", "nodes", "node_set_figures"] {
        assert!(!req.contains(&key), "{key}");
    }
    check("verdict.schema.json", s);
}

/// The launch keys of issue #12 are in the schema editors validate against: a plan that uses
/// them passes, and a malformed `cpus_per_task` or an unknown launch key does not.
#[test]
fn plan_schema_validates_the_launch_keys() {
    let schema = baton::plan::plan_schema();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    let plan = |launch: serde_json::Value| {
        serde_json::json!({
            "version": 1, "name": "s", "launch": launch,
            "tests": [ { "name": "t", "collective": "all_reduce", "sizes": [8] } ]
        })
    };
    let good = plan(serde_json::json!({
        "baton": "image:/opt/baton/bin/baton",
        "setup": ["module load nccl"],
        "slurm": {
            "step": ["--network=sn_all"], "cpus_per_task": "auto", "cpu_bind": "cores",
            "gpu_bind": "closest", "container_image": "nvcr.io#nvidia/pytorch:24.05-py3",
            "container_name": "acc", "container_env": ["NCCL_IB_HCA"]
        },
        "mpirun": { "forward": ["MY_FLAG", "FI_*"] }
    }));
    assert!(
        v.is_valid(&good),
        "{:?}",
        v.iter_errors(&good)
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
    );
    assert!(v.is_valid(&plan(
        serde_json::json!({ "slurm": { "cpus_per_task": 7 } })
    )));
    for bad in [
        serde_json::json!({ "slurm": { "cpus_per_task": "many" } }),
        serde_json::json!({ "slurm": { "cpus_per_task": 0 } }),
        serde_json::json!({ "slurm": { "container_name": "a b" } }),
        serde_json::json!({ "steps": ["--x"] }),
    ] {
        assert!(!v.is_valid(&plan(bad.clone())), "{bad}");
    }
}

#[test]
fn acceptance_schemas_match_types() {
    let s = baton::acceptance::acceptance_schema();
    for key in ["acceptance", "name", "phases"] {
        assert!(s["properties"][key].is_object(), "{key}");
    }
    check("acceptance.schema.json", s);
    let s = baton::acceptance::outcome_schema();
    for key in ["phases", "node_verdicts", "findings", "ran_by"] {
        assert!(s["properties"][key].is_object(), "{key}");
    }
    check("acceptance-outcome.schema.json", s);
}
