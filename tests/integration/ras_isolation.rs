//! #25: what NCCL's RAS named at a hang, as results keep it (`errors[].ras`), and isolation.
//! The host backend has no RAS and a resumed run measures a hung set again, so no host run can
//! make isolation follow a RAS name live; the GPU path that writes the record stays in
//! `tests/gpu.rs` (`a_stopped_rank_is_named_by_ras_in_the_timeout_record`) and the decisions in
//! the unit tests of `nodeset::isolate` (replay with names) and `runner::hang`. Here a real hung
//! set (a rank that stops joining collectives, over real mpirun) is given the record NCCL
//! 2.30.7's RAS answered with one rank stopped (`tests/data/ras/`): the results still meet
//! their schema, and `grade`'s replay, whose recorded rounds were chosen without that name,
//! does not reinterpret them — the node verdicts stay those the rounds support.
#![cfg(feature = "mpi")]

use crate::common::{self, baton, code, p, read, show, write};

const PLAN: &str = "version: 1\nname: iso\nbackend: mpi\nlaunch: { ranks_per_node: 1 }\n\
    nodes: { hostlist: \"n[1-4]\" }\ndefaults: { iters: 2, warmup: 1, timeout: 5s }\n\
    tests:\n  - name: iso\n    over: isolate\n    collective: broadcast\n    sizes: [64K]\n\
    \x20   expect:\n      - wrong: 0\n";

/// The sets of round `round` of a results document, each as its sorted hosts joined by commas.
fn round_sets(r: &serde_json::Value, round: u64) -> Vec<String> {
    let mut sets: Vec<String> = r["node_sets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["round"] == round)
        .map(|s| {
            let mut hosts: Vec<&str> = s["hosts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h.as_str().unwrap())
                .collect();
            hosts.sort();
            hosts.join(",")
        })
        .collect();
    sets.sort();
    sets
}

/// What RAS said of the hung set {n3, n4}, its stopped rank (pid 690 in the recording) on n4.
fn ras_record() -> serde_json::Value {
    let answer = include_str!("../data/ras/nccl-2.30.7-rank-stopped.json");
    let report = baton::ras::json::parse(answer).unwrap();
    let record = baton::ras::Record::new(&Ok(report), &|r| match r.pid {
        Some(690) => "n4".into(),
        _ => "n3".into(),
    });
    assert_eq!(record.named, ["n4"]);
    serde_json::to_value(record).unwrap()
}

/// `results.json` of `out` with its hung set's timeout carrying `ras`, written as `name`.
fn with_ras(out: &std::path::Path, ras: serde_json::Value, name: &str) -> std::path::PathBuf {
    let mut r: serde_json::Value = serde_json::from_str(&read(&out.join("results.json"))).unwrap();
    let hung = r["jobs"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|j| j["status"] == "timeout")
        .expect("the hung set's job");
    assert!(
        hung["errors"][0].get("ras").is_none(),
        "the host backend asks no RAS: {hung:#}"
    );
    hung["errors"][0]["ras"] = ras;
    write(out, name, &r.to_string())
}

/// The node verdicts `baton grade` gives `results`: its passed, failed and suspect hosts.
fn node_verdicts(plan: &std::path::Path, results: &std::path::Path) -> serde_json::Value {
    let g = baton(&["grade", "--format", "json", p(plan), p(results)]);
    let doc: serde_json::Value =
        serde_json::from_slice(&g.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&g)));
    assert!(doc["nodes"].is_object(), "no node verdicts: {doc:#}");
    doc["nodes"].clone()
}

#[test]
fn a_recorded_ras_record_reads_back_and_does_not_reinterpret_the_rounds() {
    let d = common::tmp("ras-isolation");
    let plan = write(&d, "p.yaml", PLAN);
    // Screening sets {n1,n2} and {n3,n4}; the latter's mpirun gets a rank that stops.
    let agent = common::localsets::agent(&d, &[], Some("n3:1,n4:1"));
    let out = d.join("out");
    let o = common::localsets::baton_over(&agent, &["run", p(&plan), "-o", p(&out)]);
    assert_eq!(code(&o), 4, "the hung set timed out: {}", show(&o));
    let r: serde_json::Value = serde_json::from_str(&read(&out.join("results.json"))).unwrap();
    assert_eq!(round_sets(&r, 1), ["n1,n2", "n3,n4"]);
    // Without a name each unproven node of the hung set is confirmed against a good one.
    let confirm = round_sets(&r, 2);
    assert!(
        confirm.len() == 2 && confirm.iter().all(|s| s.split(',').count() == 2),
        "{confirm:?}"
    );

    let named = with_ras(&out, ras_record(), "named.json");
    let doc: serde_json::Value = serde_json::from_str(&read(&named)).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(&read(std::path::Path::new("schemas/results.schema.json"))).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let back = baton::results::read_file(&named).unwrap();
    let hung = back
        .jobs
        .iter()
        .find(|j| j.status == baton::results::JobStatus::Timeout)
        .unwrap();
    assert_eq!(hung.ras_named(), ["n4"]);
    let rec = hung.errors[0]
        .ras
        .as_ref()
        .unwrap()
        .report
        .as_ref()
        .unwrap();
    let m = &rec.communicators[0].missing[0];
    assert_eq!(
        (m.host.as_str(), m.pid, m.unresponsive),
        ("n4", Some(690), true)
    );

    assert_eq!(
        node_verdicts(&plan, &named),
        node_verdicts(&plan, &out.join("results.json")),
        "rounds chosen without the name are graded as they ran"
    );
}
