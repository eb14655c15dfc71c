//! Per-iteration, per-rank timing (`iterations: true`, nccl-tests `-I 1`) and the `straggler`
//! criterion, end to end on real Open MPI (host backend).
#![cfg(feature = "mpi")]

use std::path::Path;
use std::process::Output;

use crate::common;
use baton::results;

const TIMED: &str = "version: 1
name: timed
backend: mpi
launch: { nodes: 1, ranks_per_node: 2 }
tests:
  - name: ar
    collective: all_reduce
    sizes: [1K, 64K]
    iters: 25
    iterations: true
    expect: [ { wrong: 0 } ]
  - name: plain
    collective: all_reduce
    sizes: [1K]
";

#[test]
fn every_rank_iterations_are_recorded_and_the_table_shows_nccl_tests_i_columns() {
    let ran = common::run_plan("iter-timed", TIMED, &[]);
    let (o, out) = (&ran.output, &ran.out);
    let stdout = common::stdout(o);
    assert_eq!(common::code(o), 0, "{stdout}{}", common::stderr(o));
    assert!(
        stdout.contains("#wrong    i_min    i_max    i_p99    i_cv%"),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("# Per-Iteration Report").count(),
        1,
        "only the job that asked"
    );
    let r = results::read(&out.join("results.json")).unwrap();
    let ar = r.job("ar").unwrap();
    assert!(ar.settings.iterations);
    for (_, row, p, c) in ar.cells() {
        let it = c
            .iterations
            .as_ref()
            .unwrap_or_else(|| panic!("{} {p:?}", row.requested));
        assert_eq!(it.times_us.len(), 25);
        assert_eq!(it.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(), [0, 1]);
        // The summary is over each iteration's slowest rank, as nccl-tests reduces process rows.
        let s = &it.summary;
        let max = it.times_us.iter().copied().fold(0.0, f64::max);
        assert_eq!(s.max_us, max);
        assert!(s.min_us <= s.p50_us && s.p50_us <= s.p99_us && s.p99_us <= s.max_us);
        for r in &it.ranks {
            assert!(r.stats.max_us <= max && r.stats.min_us > 0.0, "{r:?}");
        }
    }
    let plain = r.job("plain").unwrap();
    assert!(plain.cells().all(|(_, _, _, c)| c.iterations.is_none()));
    let text = std::fs::read_to_string(out.join("results.json")).unwrap();
    assert_eq!(
        text.matches("\"iterations\": true").count(),
        1,
        "off is not written"
    );
    // The report shows them where recorded: the -I figures per size and the slowest rank.
    let md = common::read(&out.join("report/report.md"));
    assert_eq!(md.matches("Per-iteration times").count(), 1, "{md}");
    let row = md
        .lines()
        .find(|l| l.starts_with("| 64K | out-of-place | 0 |"))
        .unwrap_or_else(|| panic!("a 64K row: {md}"));
    assert!(row.contains("rank ") && row.contains(": p99 "), "{row}");
    let html = common::read(&out.join("report/report.html"));
    assert!(html.contains("<th>slowest rank</th>"), "the HTML too");
}

/// `mpirun -np 2 baton-mpi run … : -np 2 -x BATON_FAULT=slow:us=30000 baton-mpi run …`.
fn mpirun_slowed(plan: &Path, out: &Path) -> Output {
    let worker = env!("CARGO_BIN_EXE_baton-mpi");
    let app = |n: &str| {
        vec![
            "-np".to_string(),
            n.into(),
            worker.into(),
            "run".into(),
            plan.to_str().unwrap().into(),
            "-o".into(),
            out.to_str().unwrap().into(),
        ]
    };
    let mut args: Vec<String> = vec!["--oversubscribe".into(), "--allow-run-as-root".into()];
    args.extend(app("2"));
    args.push(":".into());
    let mut second = app("2");
    second.splice(2..2, ["-x".to_string(), "BATON_FAULT=slow:us=30000".into()]);
    args.extend(second);
    std::process::Command::new("mpirun")
        .args(&args)
        .env_remove("BATON_FAULT")
        .output()
        .unwrap()
}

#[test]
fn a_slowed_group_is_named_by_the_straggler_criterion() {
    let (_dir, plan, out) = common::plan_dir(
        "iter-straggler",
        "version: 1
name: straggler
backend: mpi
launch: { nodes: 1, ranks_per_node: 4 }
tests:
  - name: ar
    collective: all_reduce
    split: \"DIV 2\"
    sizes: [1K]
    iters: 30
    iterations: true
    expect:
      - straggler: \"p50 <= 2x median\"
",
    );
    // p50, not p99: four ranks on a loaded 2-core machine put scheduler stalls of
    // ~25 ms into every rank's p99 (measured). 30 ms per op: under a build beside it the
    // unslowed pair's p50 was ~10 ms (a 3 ms delay went unseen).
    let o = mpirun_slowed(&plan, &out);
    let (stdout, stderr) = (common::stdout(&o), common::stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{stdout}{stderr}");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(
        junit.contains("group 1 (ranks 2-3") && junit.contains("iteration p50"),
        "{junit}"
    );
    assert!(!junit.contains("group 0 (ranks 0-1"), "{junit}");
}

/// `BATON_FAULT=late:us=20000:rank=2`: rank 2 arrives 20 ms late at every iteration of one
/// communicator. Every rank's iteration times are then alike (the others wait inside the call),
/// so only the time between calls names it: the iteration form passes, the `late` form names
/// rank 2 and no other, and the report shows it as the latest rank.
#[test]
fn a_late_rank_inside_one_communicator_is_named_by_its_time_between_calls() {
    let ran = common::run_plan(
        "iter-late",
        "version: 1
name: late
backend: mpi
launch: { nodes: 1, ranks_per_node: 4 }
tests:
  - name: ar
    collective: all_reduce
    sizes: [1K]
    iters: 20
    iterations: true
    expect:
      - straggler: \"late p50 <= 2x median\"
      - straggler: \"p50 <= 2x median\"
",
        &[("BATON_FAULT", "late:us=20000:rank=2")],
    );
    let (o, out) = (&ran.output, &ran.out);
    assert_eq!(
        common::code(o),
        1,
        "{}{}",
        common::stdout(o),
        common::stderr(o)
    );
    let r = results::read(&out.join("results.json")).unwrap();
    let (_, _, _, c) = r.job("ar").unwrap().cells().next().unwrap();
    let it = c.iterations.as_ref().unwrap();
    let late: Vec<f64> = it
        .ranks
        .iter()
        .map(|r| r.between_calls.expect("recorded per rank").p50_us)
        .collect();
    assert!(late[2] >= 20_000.0, "{late:?}");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(
        junit.contains("rank 2 (") && junit.contains("between calls p50"),
        "{junit}"
    );
    for other in ["rank 0 (", "rank 1 (", "rank 3 ("] {
        assert!(!junit.contains(other), "{other} is not late: {junit}");
    }
    // Each criterion is a testcase: the `late` one failed, the iteration one passed.
    let case = |text: &str| {
        junit
            .split("<testcase ")
            .find(|c| {
                c.starts_with("name=\"") && c.split('"').nth(1).is_some_and(|n| n.contains(text))
            })
            .unwrap_or_else(|| panic!("a testcase for {text}: {junit}"))
            .split("</testcase>")
            .next()
            .unwrap()
            .contains("<failure")
    };
    assert!(case("late p50"), "{junit}");
    assert!(
        !case("straggler p50"),
        "iteration times are alike inside one communicator: {junit}"
    );
    let md = common::read(&out.join("report/report.md"));
    let row = md
        .lines()
        .find(|l| l.starts_with("| 1K | out-of-place | 0 |"))
        .unwrap_or_else(|| panic!("a 1K row: {md}"));
    assert!(row.contains("| rank 2 ("), "the latest rank: {row}");
}

#[test]
fn straggler_without_iterations_and_iterations_with_graphs_are_located_errors() {
    let (_d, plan, _) = common::plan_dir(
        "iter-check",
        "version: 1
name: bad
tests:
  - name: a
    collective: all_reduce
    sizes: [1K]
    expect:
      - straggler: \"p99 <= 2x median\"
  - name: b
    collective: all_reduce
    sizes: [1K]
    cuda_graph: 2
    iterations: true
  - name: c
    collective: all_reduce
    sizes: [1K]
    iterations: true
    expect:
      - straggler: \"p99 <= 0.5x median\"
",
    );
    let o = common::baton(&["check", plan.to_str().unwrap()]);
    let err = common::stderr(&o) + &common::stdout(&o);
    assert_eq!(common::code(&o), 2, "{err}");
    assert!(err.contains("which this test does not record"), "{err}");
    assert!(err.contains("add `iterations: true`"), "{err}");
    assert!(
        err.contains("per-iteration timing cannot see inside a replayed CUDA graph"),
        "{err}"
    );
    assert!(
        err.contains("plan.yaml:8:"),
        "located at the straggler key: {err}"
    );
    assert!(
        err.contains("plan.yaml:13:"),
        "located at the iterations key: {err}"
    );
    assert!(err.contains("a factor above 1"), "{err}");
}

/// Four named hosts over this machine (`common::localsets`), one of them slowed by 100 ms before
/// every launch (a 1K all_reduce between two orteds here takes 5–20 ms on its slowest rank, measured): no criterion but the fleet-relative straggler notices, and that names it a
/// suspect — from `each-node` sets (its own) and from `pairs` (every pair of its is slow, each
/// partner's only once) — with the figure, while the run passes. p50: four orteds on a loaded
/// 2-core machine put scheduler stalls into p99.
#[test]
fn a_slow_but_passing_node_is_a_suspect_of_the_fleet_straggler() {
    let d = common::tmp("iter-fleet-straggler");
    let agent = common::localsets::agent_slowing(&d, "n3", 100_000);
    let plan = common::write(
        &d,
        "p.yaml",
        "version: 1
name: fleet-straggler
backend: mpi
launch: { ranks_per_node: 1 }
nodes: { hostlist: \"n[1-4]\" }
defaults: { iters: 20, warmup: 1, timeout: 30s, iterations: true }
tests:
  - name: each
    over: each-node
    collective: all_reduce
    sizes: [1K]
    expect:
      - wrong: 0
      - straggler: \"p50 <= 2x fleet median\"
  - name: pairs
    over: pairs
    collective: all_reduce
    sizes: [1K]
    expect:
      - straggler: \"p50 <= 2x fleet median\"
",
    );
    let out = d.join("out");
    let o =
        common::localsets::baton_over(&agent, &["run", common::p(&plan), "-o", common::p(&out)]);
    assert_eq!(
        common::code(&o),
        0,
        "slow but passing: {}",
        common::show(&o)
    );
    let n = common::localsets::nodes_json(&out);
    assert_eq!(n["suspect"], "n3", "{n:#}");
    assert_eq!(n["failed"], "", "{n:#}");
    let e = common::localsets::node(&n, "n3");
    let why = e["reason"].as_str().unwrap();
    assert!(
        why.contains("slow but passing")
            && why.contains("iteration p50")
            && why.contains("fleet median"),
        "{why}"
    );
    for t in e["tests"].as_array().unwrap() {
        assert_eq!(t["verdict"], "suspect", "{t:#}");
    }
    assert_eq!(
        common::localsets::node(&n, "n1")["verdict"],
        "passed",
        "{n:#}"
    );

    // Confirmed like any suspect: `--rerun-failed` runs it again, alone and with nodes that
    // passed, judged against the earlier run's fleet, and there it fails.
    let again = d.join("again");
    let o = common::localsets::baton_over(
        &agent,
        &[
            "run",
            common::p(&plan),
            "--rerun-failed",
            common::p(&out),
            "-o",
            common::p(&again),
        ],
    );
    assert_eq!(common::code(&o), 1, "{}", common::show(&o));
    let n = common::localsets::nodes_json(&again);
    assert_eq!(n["failed"], "n3", "{n:#}");
    let junit = common::read(&again.join("junit.xml"));
    assert!(
        junit.contains("the earlier run&apos;s fleet median")
            || junit.contains("the earlier run's fleet median"),
        "{junit}"
    );
}

#[test]
fn a_fleet_straggler_over_one_set_is_a_located_error() {
    let (_d, plan, _) = common::plan_dir(
        "iter-fleet-check",
        "version: 1
name: bad
tests:
  - name: a
    collective: all_reduce
    sizes: [1K]
    iterations: true
    expect:
      - straggler: \"p99 <= 2x fleet median\"
",
    );
    let o = common::baton(&["check", plan.to_str().unwrap()]);
    let err = common::stderr(&o) + &common::stdout(&o);
    assert_eq!(common::code(&o), 2, "{err}");
    assert!(err.contains("compares nodes across node sets"), "{err}");
    assert!(err.contains("plan.yaml:9:"), "{err}");
}
