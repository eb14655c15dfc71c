//! The committed JSON Schemas must match the types they are generated from. Regenerate with
//! `BATON_BLESS=1 cargo test --test schemas` after changing the plan, results or node-verdict types.

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
            "{}: {e}; run BATON_BLESS=1 cargo test --test schemas",
            path.display()
        )
    });
    assert!(
        committed == text,
        "{} drifted from the types; run BATON_BLESS=1 cargo test --test schemas and commit it",
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
    for key in ["plan", "status", "exit_code", "jobs", "node_sets", "nodes"] {
        assert!(s["properties"][key].is_object(), "{key}");
    }
    let req: Vec<&str> = s["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(!req.contains(&"node_sets") && !req.contains(&"nodes"));
    check("verdict.schema.json", s);
}
