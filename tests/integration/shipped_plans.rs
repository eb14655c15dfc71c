//! The plans in `plans/` are what users start from: every one must pass the real `baton check`
//! without a warning, carry the editor schema header, and say what it claims to.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use baton::collective::Collective;
use baton::plan::{Average, Backend, Check, Plan, Repeat, Severity, load_file};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn baton(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(args)
        .arg("--color=never")
        .current_dir(root())
        .output()
        .expect("baton runs")
}

/// Every `.yaml` under `plans/`, recursively, as paths relative to the repository root.
fn shipped_plans() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("readable folder") {
            let p = entry.expect("readable entry").path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                out.push(p.strip_prefix(root()).expect("under root").to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("plans"), &mut out);
    out.sort();
    out
}

fn plan(rel: &str) -> Plan {
    load_file(&root().join(rel))
        .unwrap_or_else(|e| panic!("{rel} does not load: {e}"))
        .plan
}

#[test]
fn every_shipped_plan_passes_baton_check_without_warnings() {
    let plans = shipped_plans();
    for required in [
        "plans/phase-a-node.yaml",
        "plans/phase-b-pair.yaml",
        "plans/phase-c-cluster.yaml",
        "plans/phase-d-alltoall.yaml",
        "plans/phase-e-soak.yaml",
        "plans/split-per-node.yaml",
        "plans/split-per-rail.yaml",
        "plans/split-pairs.yaml",
        "plans/gpu-pairs.yaml",
        "plans/p2p-downgrade-guard.yaml",
        "plans/examples/quickstart.yaml",
        "plans/isolate.yaml",
        "plans/examples/nodesets-cpu.yaml",
        // docs/acceptance.md's path on the simulated cluster
        "plans/examples/acceptance-cpu/phase-a.yaml",
        "plans/examples/acceptance-cpu/phase-b.yaml",
        "plans/examples/acceptance-cpu/phase-c.yaml",
        "plans/examples/acceptance-cpu/phase-d.yaml",
        "plans/examples/acceptance-cpu/phase-e.yaml",
        "plans/examples/acceptance-cpu/isolate.yaml",
    ] {
        assert!(
            plans.iter().any(|p| p == Path::new(required)),
            "{required} is missing from {plans:?}"
        );
    }
    for p in &plans {
        let path = p.to_str().expect("UTF-8 path");
        let out = baton(&["check", path]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "baton check {path} failed:\n{stdout}{stderr}"
        );
        assert!(
            stdout.starts_with(&format!("{path}: ok (")),
            "unexpected output for {path}: {stdout}"
        );
        assert!(
            stderr.is_empty(),
            "{path} draws diagnostics; shipped plans must be clean:\n{stderr}"
        );
    }
}

#[test]
fn every_shipped_plan_starts_with_the_schema_header() {
    for p in shipped_plans() {
        let text = std::fs::read_to_string(root().join(&p)).expect("readable plan");
        // plans/x.yaml -> ../schemas/..., plans/examples/x.yaml -> ../../schemas/...
        let depth = p.components().count() - 1;
        let expected = format!(
            "# yaml-language-server: $schema={}schemas/plan.schema.json",
            "../".repeat(depth)
        );
        assert_eq!(
            text.lines().next(),
            Some(expected.as_str()),
            "{} must start with the schema line",
            p.display()
        );
    }
}

#[test]
fn quickstart_is_mpi_and_expands_to_two_small_jobs() {
    let text = std::fs::read_to_string(root().join("plans/examples/quickstart.yaml")).unwrap();
    assert!(
        text.lines().any(|l| l.trim() == "backend: mpi"),
        "quickstart must say `backend: mpi`"
    );

    let p = plan("plans/examples/quickstart.yaml");
    assert_eq!(p.backend, Backend::Mpi);
    assert_eq!(p.launch.nodes, 1);
    assert_eq!(p.launch.ranks_per_node, Some(2));
    assert_eq!(p.launch.total_ranks(), Some(2));

    let e = baton::expand::expand(&p);
    let ids: Vec<&str> = e.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "smoke[collective=all_reduce]",
            "smoke[collective=all_gather]"
        ]
    );
    let sweep: Vec<u64> = (3..=20).map(|p| 1u64 << p).collect(); // 8 B .. 1 MiB
    for j in &e.jobs {
        assert_eq!(j.ranks, Some(2), "{}", j.id);
        assert_eq!(*j.sizes, sweep, "{}", j.id);
        assert!(
            j.expect.iter().any(|c| c.check == Check::Wrong(0)
                && c.at.is_none()
                && c.severity == Severity::Fail),
            "{} must fail on any #wrong",
            j.id
        );
        // Small enough for any machine: a few MiB of host memory per rank.
        assert!(
            j.memory_per_rank <= 4 << 20,
            "{}: {}",
            j.id,
            j.memory_per_rank
        );
    }

    // The CLI agrees: JSON expansion of the same plan.
    let out = baton(&[
        "expand",
        "plans/examples/quickstart.yaml",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    assert_eq!(json["backend"], "mpi");
    assert_eq!(json["total_jobs"], 2);
    assert_eq!(json["jobs"][1]["collective"], "all_gather");
    assert_eq!(json["jobs"][0]["sizes"].as_array().map(Vec::len), Some(18));
}

#[test]
fn phase_plans_encode_the_acceptance_template() {
    let a = plan("plans/phase-a-node.yaml");
    assert_eq!(a.launch.total_ranks(), Some(8), "phase A is one 8-GPU node");
    let b = plan("plans/phase-b-pair.yaml");
    assert_eq!((b.launch.nodes, b.launch.total_ranks()), (2, Some(16)));
    // A runs on every node alone, B on every pair; each job is one node set.
    assert_eq!(a.tests[0].over, baton::plan::Over::EachNode);
    assert_eq!(
        b.tests[0].over,
        baton::plan::Over::Pairs(baton::plan::Pairing::All)
    );
    let iso = plan("plans/isolate.yaml");
    assert_eq!(iso.tests[0].over, baton::plan::Over::Isolate);

    // Phase C is graded against phase B's pairs: `relative` to phase B's plan job in its
    // results file, at least 90% of the median pair (a `regression` against phase B's file
    // could never match: no pair ran on the whole cluster).
    let c = plan("plans/phase-c-cluster.yaml");
    let b_ids: Vec<String> = baton::expand::expand(&b)
        .jobs
        .into_iter()
        .map(|j| j.id)
        .collect();
    let c_jobs = baton::expand::expand(&c).jobs;
    assert_eq!(c_jobs.len(), 1);
    assert!(
        c.tests[0].expect.iter().any(|cr| matches!(
            &cr.check,
            Check::Relative(r) if b_ids.contains(&r.to)
                && r.results.as_deref() == Some("results/phase-b-pair.json")
                && r.busbw.value == 90.0
        )),
        "phase C compares with phase B's job {b_ids:?}"
    );
    assert!(
        !c.tests[0]
            .expect
            .iter()
            .any(|cr| matches!(cr.check, Check::Regression(_))),
        "a regression against phase B's pairs never matches"
    );

    let d = plan("plans/phase-d-alltoall.yaml");
    let colls: Vec<Collective> = d
        .tests
        .iter()
        .flat_map(|t| t.axes.collective.clone())
        .collect();
    assert!(colls.contains(&Collective::AllToAll) && colls.contains(&Collective::AllReduce));

    // Phase E: an hour of repeats, every repeat within 5% of the median, no corrupted data.
    let e = plan("plans/phase-e-soak.yaml");
    let soak = &e.tests[0];
    assert_eq!(soak.repeat, Repeat::For(Duration::from_secs(3600)));
    assert_eq!(soak.settings.iters, 100);
    let checks: Vec<&Check> = soak.expect.iter().map(|c| &c.check).collect();
    assert!(checks.contains(&&Check::Wrong(0)));
    assert!(
        checks
            .iter()
            .any(|c| matches!(c, Check::Variance(t) if t.value == 5.0))
    );

    for (file, p) in [
        ("plans/phase-a-node.yaml", &a),
        ("plans/phase-b-pair.yaml", &b),
        ("plans/phase-c-cluster.yaml", &c),
        ("plans/phase-d-alltoall.yaml", &d),
        ("plans/phase-e-soak.yaml", &e),
    ] {
        // A plan over node sets says so in its description; the others say they are one job
        // over every node, one step across the allocation.
        let desc = p.description.as_deref().unwrap_or_default();
        let over_sets = p.tests.iter().all(|t| t.over != baton::plan::Over::All);
        assert!(
            if over_sets {
                desc.contains("(`over: ")
            } else {
                desc.contains("one step across the") && !desc.contains("a later node-set")
            },
            "{file}: description must say how it covers the nodes"
        );
        for t in &p.tests {
            assert!(
                t.expect.iter().any(|c| c.check == Check::Wrong(0)),
                "{file}: test {} must require wrong: 0",
                t.name
            );
        }
    }
}

#[test]
fn split_plans_isolate_nodes_rails_and_pairs() {
    for (file, split, group_size) in [
        ("plans/split-per-node.yaml", "DIV 8", 8),
        ("plans/split-per-rail.yaml", "MOD 8", 4),
        ("plans/split-pairs.yaml", "OR 1", 2),
    ] {
        let p = plan(file);
        let jobs = baton::expand::expand(&p).jobs;
        assert_eq!(jobs.len(), 1, "{file}");
        let j = &jobs[0];
        assert_eq!(j.split_text(), Some(split), "{file}");
        assert_eq!(j.settings.average, Average::Max, "{file}: nccl-tests -a 3");
        let groups = j.groups.as_ref().expect("rank count is fixed");
        assert!(
            groups.iter().all(|g| g.ranks.len() == group_size),
            "{file}: groups of {group_size}"
        );
        assert!(
            j.expect
                .iter()
                .any(|c| matches!(c.check, Check::GroupSpread(_))),
            "{file}: groups must be compared with each other"
        );
    }
    // Per node stays on NVLink; per rail crosses every node.
    let node = baton::expand::expand(&plan("plans/split-per-node.yaml")).jobs;
    let rail = baton::expand::expand(&plan("plans/split-per-rail.yaml")).jobs;
    let node_groups = node[0].groups.as_ref().unwrap();
    let rail_groups = rail[0].groups.as_ref().unwrap();
    assert!(node_groups.iter().all(|g| g.nodes.len() == 1));
    assert!(rail_groups.iter().all(|g| g.nodes.len() == 4));
}

#[test]
fn p2p_guard_has_all_three_tripwires() {
    let p = plan("plans/p2p-downgrade-guard.yaml");
    assert_eq!(p.launch.total_ranks(), Some(2), "a 2-GPU node");
    assert!(p.baseline.is_some(), "regression needs a baseline");
    let j = &baton::expand::expand(&p).jobs[0];
    assert_eq!(j.env.get("NCCL_DEBUG").map(String::as_str), Some("INFO"));
    let checks: Vec<&Check> = j.expect.iter().map(|c| &c.check).collect();
    assert!(checks.contains(&&Check::Transport(baton::plan::TransportRule::one("P2P"))));
    assert!(checks.iter().any(|c| matches!(c, Check::Regression(_))));
    // The busbw floor must sit far above the ~28 GB/s SHM fallback and apply to large sizes.
    let floor = j
        .expect
        .iter()
        .find_map(|c| match (&c.check, &c.at) {
            (Check::Busbw(t), Some(at)) if at.matches(1 << 30) && !at.matches(1 << 20) => {
                Some(t.value)
            }
            _ => None,
        })
        .expect("a busbw floor at large sizes");
    assert!(floor > 2.0 * 28.0, "floor {floor} GB/s would not catch SHM");
}

/// The reproducers the fuzzer's target would crash on (see the comment in each file). Each must
/// end in a verdict (exit 0 or 2), not a panic (101) or an abort (134).
#[test]
fn known_fuzz_crashes_end_in_a_verdict() {
    let dir = root().join("tests/data/plans/fuzz-crashes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("crash folder")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut crashed = Vec::new();
    for f in &files {
        // A 2 GiB address-space cap turns the unbounded allocation into a quick abort.
        let out = Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 2097152; exec \"$0\" check --color=never \"$1\"")
            .arg(env!("CARGO_BIN_EXE_baton"))
            .arg(f)
            .output()
            .expect("sh runs");
        if !matches!(out.status.code(), Some(0 | 2)) {
            crashed.push(format!("{} -> {:?}", f.display(), out.status));
        }
    }
    assert!(
        crashed.is_empty(),
        "still crashing:\n{}",
        crashed.join("\n")
    );
}
