//! Node sets on the simulated cluster (`scripts/cluster-sim up 8`): `baton run` drives each-node,
//! pairs and isolate inside a real Slurm allocation, one `srun --exact -w` step per set, and
//! names the bad node in `nodes.json` and `drain.sh`. Faults are real: a rate-limited link
//! (`tc`), a node whose slurmd and processes are killed, a node whose ranks are stopped.
//!
//! Skipped (`SKIPPED: no simulated cluster`) without a cluster, except in CI (`CI=true`).
#![cfg(feature = "mpi")]

use crate::common;

use std::time::{Duration, Instant};

use baton::results::{self, JobStatus};
use common::cluster::{Fault, cluster_of, drains, nodes_json, run_line, verdict_of};
use common::{code, p, read, show, tmp, write};

/// Phases A and B over six nodes, one of them behind a slow link: rendered as one batch job
/// (`render -t slurm --submit --wait`), it fails exactly that node, drains only it, and draws
/// its row in the pair matrix; `--rerun-failed` then runs again over it alone.
#[test]
fn six_nodes_each_node_and_pairs_fail_exactly_the_slow_node() {
    let Some(c) = cluster_of(6) else { return };
    let nodes = &c.nodes[..6];
    let slow = nodes[2].clone();
    let d = tmp("cluster-sets-slow");
    let plan = write(
        &d,
        "plan.yaml",
        &format!(
            "version: 1
name: sets-slow
backend: mpi
launch: {{ ranks_per_node: 2 }}
nodes: {{ hostlist: \"{}\" }}
defaults: {{ iters: 5, warmup: 1, timeout: 30s }}
tests:
  - name: per-node
    over: each-node
    collective: all_reduce
    sizes: [64K, 1M]
    expect: [ {{ wrong: 0 }} ]
  - name: pairs
    over: pairs
    collective: all_reduce
    sizes: [64K, 1M]
    expect:
      - wrong: 0
      - outlier: \"<= 50%\"
        at: 1M
",
            nodes.join(",")
        ),
    );
    let _slow = Fault::apply(&["slow", &slow, "20mbit"]);
    let o = c.baton(
        &d,
        &[
            "render",
            p(&plan),
            "-t",
            "slurm",
            "-o",
            p(&d.join("job")),
            "--submit",
            "--wait",
        ],
    );
    // A failed criterion: exit 1.
    assert_eq!(code(&o), 1, "{}", show(&o));
    let out = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir() && p.join("results.json").is_file())
        .unwrap_or_else(|| panic!("no output directory in {}: {}", d.display(), show(&o)));
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(r.node_list, nodes);
    // 6 single-node sets and 15 pairs in 5 rounds, each job naming its hosts and round.
    assert_eq!(
        r.jobs.len(),
        21,
        "{:?}",
        r.jobs.iter().map(|j| &j.id).collect::<Vec<_>>()
    );
    for j in &r.jobs {
        let set = j.node_set.as_ref().expect("every job names its node set");
        assert_eq!(j.status, JobStatus::Completed, "{}", j.id);
        let hosts: std::collections::BTreeSet<&str> =
            j.layout.ranks.iter().map(|r| r.host.as_str()).collect();
        let want: std::collections::BTreeSet<&str> = set.hosts.iter().map(String::as_str).collect();
        assert_eq!(hosts, want, "{}: ranks ran where the set says", j.id);
    }
    assert_eq!(r.node_sets.iter().map(|s| s.round).max(), Some(5));
    let n = nodes_json(&out);
    assert_eq!(n["failed"], slow.as_str(), "{n:#}");
    assert_eq!(n["suspect"], "", "{n:#}");
    let (v, why) = verdict_of(&n, &slow);
    assert_eq!(v, "failed");
    // #21 item 10: the figure first, then who confirmed it.
    assert!(
        why.contains("pairs: busbw ") && why.contains("below the median pair"),
        "{why}"
    );
    assert!(why.contains("confirmed with"), "{why}");
    let d_lines = drains(&out);
    assert_eq!(d_lines.len(), 1, "{d_lines:?}");
    assert!(
        d_lines[0].contains(&format!("NodeName='{slow}' State=DRAIN")),
        "{d_lines:?}"
    );
    // The pair matrix: the slow node's row is red in every column but its own.
    let html = read(&out.join("report/report.html"));
    assert!(html.contains("Pair matrix"), "no pair matrix in the report");
    let md = read(&out.join("report/report.md"));
    assert!(
        md.contains(&format!("| {slow} | failed |")),
        "per-node table: {md}"
    );

    // Again over the failed node alone (the per-node test; a pair needs two).
    let again = d.join("again");
    let o = c.salloc_n(
        &d,
        6,
        2,
        300,
        &format!(
            "{} run {} --only per-node --rerun-failed {} -o {}",
            env!("CARGO_BIN_EXE_baton"),
            p(&plan),
            p(&out),
            p(&again)
        ),
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    let r = results::read(&again.join("results.json")).unwrap();
    assert_eq!(r.node_list, std::slice::from_ref(&slow));
    assert_eq!(r.jobs.len(), 1);
}

/// `over: isolate` over eight nodes with one behind a slow link: named and confirmed in at most
/// ⌈log2 8⌉ + 3 = 6 rounds.
#[test]
fn eight_nodes_isolate_names_the_slow_node_in_few_rounds() {
    let Some(c) = cluster_of(8) else { return };
    let nodes = &c.nodes[..8];
    let slow = nodes[5].clone();
    let d = tmp("cluster-sets-isolate");
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1
name: sets-isolate
backend: mpi
launch: { ranks_per_node: 1 }
defaults: { iters: 4, warmup: 1, timeout: 30s }
tests:
  - name: find
    over: isolate
    collective: all_reduce
    sizes: [256K]
    expect:
      - wrong: 0
      # A healthy set moves tens of MB/s here; a set through the 2 Mbit/s link a fraction of one.
      - busbw: \">= 0.002 GB/s\"
",
    );
    let _slow = Fault::apply(&["slow", &slow, "2mbit"]);
    let out = d.join("out");
    let o = c.salloc_n(
        &d,
        8,
        1,
        600,
        &run_line(env!("CARGO_BIN_EXE_baton"), &plan, &out),
    );
    assert_eq!(code(&o), 1, "{}", show(&o));
    let r = results::read(&out.join("results.json")).unwrap();
    let rounds = r.node_sets.iter().map(|s| s.round).max().unwrap();
    eprintln!(
        "isolate over 8 nodes: {rounds} rounds, {} sets",
        r.node_sets.len()
    );
    assert!(rounds <= 6, "{rounds} rounds: {}", show(&o));
    let n = nodes_json(&out);
    assert_eq!(n["failed"], slow.as_str(), "{n:#}");
    assert_eq!(n["suspect"], "", "{n:#}");
    let (_, why) = verdict_of(&n, &slow);
    assert!(why.contains("find:"), "{why}");
    assert_eq!(drains(&out).len(), 1);
}

/// A node killed and another frozen while each-node runs: their sets end (the killed node's
/// promptly, the frozen one's when no row came for its timeout plus start-up), every other set
/// completes, both nodes are failed with their reasons, later rounds leave the dead one out,
/// and the exit code says a set timed out.
#[test]
fn a_killed_and_a_frozen_node_cost_only_their_sets() {
    let Some(c) = cluster_of(6) else { return };
    let nodes = &c.nodes[..6];
    let (killed, frozen) = (nodes[2].clone(), nodes[4].clone());
    let d = tmp("cluster-sets-faults");
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1
name: sets-faults
backend: mpi
launch: { ranks_per_node: 2 }
defaults: { iters: 5, warmup: 1, timeout: 10s }
tests:
  - name: per-node
    over: each-node
    collective: all_reduce
    repeat: 200
    sizes: [64K]
    expect: [ { wrong: 0 } ]
  - name: pairs
    over: pairs
    collective: all_reduce
    sizes: [64K]
    expect: [ { wrong: 0 } ]
",
    );
    let out = d.join("out");
    let script = run_line(env!("CARGO_BIN_EXE_baton"), &plan, &out);
    let mut cmd = c.cmd("timeout");
    cmd.args([
        "400",
        "salloc",
        "--no-kill",
        "-N",
        "6",
        "--ntasks-per-node=2",
    ])
    .args(["bash", "-c", &script])
    .current_dir(&d);
    let run = std::thread::spawn(move || cmd.output().expect("salloc runs"));
    // Wait until every each-node set is measuring.
    let start = Instant::now();
    loop {
        let rows = std::fs::read_dir(out.join("sets/00-per-node"))
            .map(|it| {
                it.filter_map(|e| e.ok())
                    .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
                    .filter(|e| read(&e.path()).contains("\"record\":\"row\""))
                    .count()
            })
            .unwrap_or(0);
        if rows == 6 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120) && !run.is_finished(),
            "the sets never all measured"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    let _k = Fault::apply(&["kill", &killed]);
    let _f = Fault::apply(&["freeze", &frozen]);
    let t = Instant::now();
    let o = run.join().unwrap();
    let took = t.elapsed();
    // The frozen set is stopped 40 s (10 s timeout + 30 s start-up) after its last row.
    assert!(
        took < Duration::from_secs(150),
        "ended {took:?} after the faults"
    );
    assert_eq!(code(&o), 4, "a set timed out: {}", show(&o));
    let r = results::read(&out.join("results.json")).unwrap();
    let n = nodes_json(&out);
    let mut failed = vec![killed.clone(), frozen.clone()];
    failed.sort();
    assert_eq!(n["failed"], baton::nodeset::compress(&failed), "{n:#}");
    // #21 items 6, 10: the dead node's reason names what Slurm said of it, once, though the
    // pairs test never ran it; the frozen one's says it hung.
    let node_failure = format!("Node failure on {killed}");
    let (_, why) = verdict_of(&n, &killed);
    assert!(why.contains("dead") && why.contains(&node_failure), "{why}");
    assert!(!why.contains("pairs:"), "{why}");
    let (_, why) = verdict_of(&n, &frozen);
    assert!(why.contains("hung") && why.contains("alone"), "{why}");
    let set = r
        .node_sets
        .iter()
        .find(|s| s.dead.contains(&killed) && !s.journal.is_empty())
        .expect("the set the node died in");
    assert!(
        set.launcher
            .as_deref()
            .is_some_and(|l| l.contains(&node_failure)),
        "{set:?}"
    );
    let job = r
        .jobs
        .iter()
        .find(|j| {
            j.node_set
                .as_ref()
                .is_some_and(|s| s.hosts == [killed.clone()])
        })
        .unwrap();
    assert!(
        job.errors.iter().any(|e| e.message.contains(&node_failure)),
        "{:?}",
        job.errors
    );
    assert!(
        drains(&out).iter().any(|l| l.contains(&node_failure)),
        "{:?}",
        drains(&out)
    );
    // Every set without a faulty node completed; none with the dead node ran after it died.
    for j in &r.jobs {
        let hosts = &j.node_set.as_ref().unwrap().hosts;
        if hosts.contains(&killed) {
            assert!(
                j.id.starts_with("per-node"),
                "{} ran after its node died",
                j.id
            );
            assert_ne!(j.status, JobStatus::Completed, "{}", j.id);
        } else if hosts != std::slice::from_ref(&frozen) {
            assert_eq!(j.status, JobStatus::Completed, "{} {:?}", j.id, j.errors);
        }
    }
    let skipped = r
        .node_sets
        .iter()
        .filter(|s| s.ended.as_deref().is_some_and(|e| e.starts_with("not run")))
        .count();
    assert_eq!(
        skipped, 5,
        "every pair with the dead node is left out: {:?}",
        r.node_sets
    );
    assert_eq!(drains(&out).len(), 2);
}

/// #21 blocker 2 (#20 F8): `--rerun-failed` of a pairs failure pairs the failed node with nodes
/// the earlier run passed — never runs it alone — and fails it again while its link is still
/// slow; `outlier` is judged against the earlier run's sets of the same shape, not skipped.
#[test]
fn a_pairs_rerun_pairs_the_slow_node_with_passed_nodes_and_still_fails_it() {
    let Some(c) = cluster_of(6) else { return };
    let nodes = &c.nodes[..6];
    let slow = nodes[3].clone();
    let d = tmp("cluster-sets-rerun");
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1
name: sets-rerun
backend: mpi
launch: { ranks_per_node: 1 }
defaults: { iters: 5, warmup: 1, timeout: 30s }
tests:
  - name: pairs
    over: pairs
    collective: all_reduce
    sizes: [64K, 1M]
    expect:
      - wrong: 0
      - outlier: \"<= 50%\"
        at: 1M
",
    );
    let _slow = Fault::apply(&["slow", &slow, "20mbit"]);
    let (a, b) = (d.join("a"), d.join("b"));
    let baton = env!("CARGO_BIN_EXE_baton");
    let script = format!(
        "{baton} run {plan} -o {a}; echo $? > {a}.rc; {baton} run {plan} --rerun-failed {a} -o {b}",
        plan = p(&plan),
        a = p(&a),
        b = p(&b)
    );
    let o = c
        .cmd("timeout")
        .args(["600", "salloc", "--no-kill", "-N", "6", "-w"])
        .arg(baton::nodeset::compress(nodes))
        .args(["--ntasks-per-node=1", "bash", "-c", &script])
        .current_dir(&d)
        .output()
        .expect("salloc runs");
    assert_eq!(read(&d.join("a.rc")).trim(), "1", "{}", show(&o));
    assert_eq!(nodes_json(&a)["failed"], slow.as_str(), "{}", show(&o));
    // The rerun: the slow node with two nodes that passed, each a pair, and it fails again.
    assert_eq!(code(&o), 1, "{}", show(&o));
    let r = results::read(&b.join("results.json")).unwrap();
    assert_eq!(r.node_sets.len(), 2, "{:?}", r.node_sets);
    for s in &r.node_sets {
        assert_eq!(s.hosts.len(), 2, "{:?}", s.hosts);
        assert!(s.hosts.contains(&slow), "{:?}", s.hosts);
    }
    let n = nodes_json(&b);
    assert_eq!(n["failed"], slow.as_str(), "{n:#}");
    assert_eq!(n["suspect"], "", "{n:#}");
    let d_lines = drains(&b);
    assert_eq!(d_lines.len(), 1, "{d_lines:?}");
    let junit = read(&b.join("junit.xml"));
    assert!(
        junit.contains("below the median") && junit.contains("of the earlier run"),
        "outlier judged against the earlier run's fleet: {junit}"
    );
}

/// #21 blocker 3: `salloc -N 8` without `--ntasks-per-node` (the README's old command) gives
/// one task per node, so Slurm refuses every two-rank step. That is the launcher's refusal,
/// not eight failed nodes: exit 3 with Slurm's message and the fix, nobody failed, no drain.
#[test]
fn a_step_slurm_refuses_blames_no_node_and_drains_nothing() {
    let Some(c) = cluster_of(8) else { return };
    let d = tmp("cluster-sets-refused");
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1
name: sets-refused
backend: mpi
launch: { ranks_per_node: 2 }
defaults: { iters: 2, warmup: 1, timeout: 30s }
tests:
  - name: per-node
    over: each-node
    collective: all_reduce
    sizes: [64K]
    expect: [ { wrong: 0 } ]
  - name: pairs
    over: pairs
    collective: all_reduce
    sizes: [64K]
    expect: [ { wrong: 0 } ]
",
    );
    let out = d.join("out");
    let o = c
        .cmd("timeout")
        .args(["300", "salloc", "--no-kill", "-N", "8"])
        .arg(env!("CARGO_BIN_EXE_baton"))
        .args(["run", p(&plan), "-o", p(&out)])
        .current_dir(&d)
        .output()
        .expect("salloc runs");
    assert_eq!(code(&o), 3, "{}", show(&o));
    let err = show(&o);
    assert!(
        err.contains("More processors requested than permitted"),
        "{err}"
    );
    assert!(err.contains("--ntasks-per-node=2"), "{err}");
    let n = nodes_json(&out);
    assert_eq!(n["failed"], "", "{n:#}");
    for e in n["nodes"].as_array().unwrap() {
        assert_ne!(e["verdict"], "failed", "{e}");
        let why = e["reason"].as_str().unwrap();
        assert!(why.contains("the launcher refused"), "{why}");
    }
    assert!(drains(&out).is_empty(), "{:?}", drains(&out));
    // The run stopped at the refusal: no set of the second test was started.
    let r = results::read(&out.join("results.json")).unwrap();
    assert!(
        r.node_sets.iter().all(|s| s.test == "per-node"),
        "{:?}",
        r.node_sets
    );
}

/// #21 item 4: SIGTERM while pairs run in an allocation: the run's report and junit.xml say
/// what `baton grade` says of the same results afterwards (FAIL, sets cut short), never
/// "PASS 0 of 0", and no node is drained for having been stopped.
#[test]
fn sigterm_during_node_sets_grades_as_grade_does_afterwards() {
    let Some(c) = cluster_of(4) else { return };
    let d = tmp("cluster-sets-sigterm");
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1
name: sets-sigterm
backend: mpi
launch: { ranks_per_node: 1 }
defaults: { iters: 5, warmup: 1, timeout: 30s }
tests:
  - name: pairs
    over: pairs
    collective: all_reduce
    repeat: 100
    sizes: [64K]
    expect: [ { wrong: 0 } ]
",
    );
    let out = d.join("out");
    let journal = out.join("journal.jsonl");
    // The run in the background; once a set has ended, SIGTERM to baton alone, as `kill` would.
    let script = format!(
        "{} run {} -o {} & b=$!; for i in $(seq 600); do grep -q set_ended {} 2>/dev/null && break; sleep 0.2; done; \
         kill -TERM $b; wait $b; echo $? > {}/rc",
        env!("CARGO_BIN_EXE_baton"),
        p(&plan),
        p(&out),
        p(&journal),
        p(&d)
    );
    let o = c.salloc(&d, 1, &script);
    assert_eq!(read(&d.join("rc")).trim(), "5", "{}", show(&o));
    let line = common::verdicts::same_as_grade(env!("CARGO_BIN_EXE_baton"), &d, &plan, &out);
    assert!(line.contains("FAIL"), "{line}");
    assert!(drains(&out).is_empty(), "{:?}", drains(&out));
}

/// #21 item 5: inside an allocation `baton run` drives a plain multi-node plan (no `over:`, or
/// `over: all`) as one step across the allocation's nodes, instead of refusing it as if it were
/// outside Slurm; an allocation of another size than `launch.nodes` is named, both numbers.
#[test]
fn a_plain_multi_node_plan_runs_as_one_step_across_the_allocation() {
    let Some(c) = cluster_of(8) else { return };
    let d = tmp("cluster-plain-multi-node");
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1
name: plain-8
backend: mpi
launch: { nodes: 8, ranks_per_node: 1 }
defaults: { iters: 2, warmup: 1, timeout: 30s }
tests:
  - name: whole
    collective: all_reduce
    sizes: [64K]
    expect: [ { wrong: 0 } ]
  - name: whole-all
    over: all
    collective: all_reduce
    sizes: [64K]
    expect: [ { wrong: 0 } ]
",
    );
    let baton = env!("CARGO_BIN_EXE_baton");
    let out = d.join("out");
    let o = c.salloc_n(
        &d,
        8,
        1,
        300,
        &format!("{baton} run {} -o {}", p(&plan), p(&out)),
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(
        r.jobs.len(),
        2,
        "{:?}",
        r.jobs.iter().map(|j| &j.id).collect::<Vec<_>>()
    );
    for j in &r.jobs {
        assert_eq!(j.status, JobStatus::Completed, "{} {:?}", j.id, j.errors);
        let hosts: std::collections::BTreeSet<&str> =
            j.layout.ranks.iter().map(|r| r.host.as_str()).collect();
        assert_eq!(
            hosts.len(),
            8,
            "{}: one step across the 8 nodes: {hosts:?}",
            j.id
        );
    }
    // Seven nodes for a plan of eight: what does not fit, named; nothing run.
    let short = d.join("short");
    let o = c.salloc_n(
        &d,
        7,
        1,
        120,
        &format!("{baton} run {} -o {}", p(&plan), p(&short)),
    );
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = show(&o);
    assert!(
        err.contains("launch.nodes: 8") && err.contains("7 node"),
        "{err}"
    );
    assert!(!err.contains("run it under Slurm"), "{err}");
    assert!(!short.join("results.json").exists());
}

/// #25: a node behind a slow link whose every criterion but the fleet straggler passes: over
/// pairs of four nodes (a rank each), each pair of its is slow and each partner's only once, so
/// the fleet-relative straggler names it — and only it — suspect, with the figure, and the run
/// passes. p50, not p99: on this loaded 2-core machine the scheduler puts stalls into every
/// set's p99. `each-node` cannot see a link: a node's own ranks do not cross it.
#[test]
fn a_slow_link_node_is_the_fleet_straggler_of_its_pairs_and_a_suspect() {
    let Some(c) = cluster_of(4) else { return };
    let nodes = &c.nodes[..4];
    let slow = nodes[2].clone();
    let d = tmp("cluster-fleet-straggler");
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1
name: fleet-straggler
backend: mpi
launch: { ranks_per_node: 1 }
defaults: { iters: 10, warmup: 1, timeout: 60s, iterations: true }
tests:
  - name: pairs
    over: pairs
    collective: all_reduce
    sizes: [64K, 1M]
    expect:
      - wrong: 0
      - straggler: \"p50 <= 2x fleet median\"
        at: 1M
",
    );
    let _slow = Fault::apply(&["slow", &slow, "20mbit"]);
    let out = d.join("out");
    let o = c.salloc(&d, 1, &run_line(env!("CARGO_BIN_EXE_baton"), &plan, &out));
    assert_eq!(code(&o), 0, "slow but passing: {}", show(&o));
    let n = nodes_json(&out);
    assert_eq!(n["suspect"], slow.as_str(), "{n:#}");
    assert_eq!(n["failed"], "", "{n:#}");
    let (v, why) = verdict_of(&n, &slow);
    assert_eq!(v, "suspect");
    assert!(
        why.contains("slow but passing")
            && why.contains("iteration p50")
            && why.contains("fleet median"),
        "{why}"
    );
    assert!(drains(&out).is_empty(), "a suspect is not drained");
}

/// A job across four nodes, one rank each, whose rank on the third node arrives 30 ms late at
/// every iteration (`BATON_FAULT=late`, set in every rank's environment, taken by rank 2
/// only): every rank's iteration times are alike (the others wait for it inside the call), its
/// time between calls is not, and `late` names that node's rank and no other.
#[test]
fn a_late_rank_across_nodes_is_named_the_straggler_of_its_set() {
    let Some(c) = cluster_of(4) else { return };
    let late = c.nodes[2].clone();
    let d = tmp("cluster-late-straggler");
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1
name: late-straggler
backend: mpi
launch: { nodes: 4, ranks_per_node: 1 }
defaults: { iters: 20, warmup: 2, timeout: 60s, iterations: true }
tests:
  - name: ar
    collective: all_reduce
    sizes: [64K]
    expect:
      - wrong: 0
      - straggler: \"late p50 <= 2x median\"
",
    );
    let out = d.join("out");
    let o = c.salloc(
        &d,
        1,
        &format!(
            "BATON_FAULT=late:us=30000:rank=2 {} run {} -o {}",
            env!("CARGO_BIN_EXE_baton"),
            p(&plan),
            p(&out)
        ),
    );
    assert_eq!(code(&o), 1, "the straggler criterion fails: {}", show(&o));
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(
        junit.contains(&format!("rank 2 ({late}")) && junit.contains("between calls p50"),
        "{junit}"
    );
    for n in c.nodes[..4].iter().filter(|n| **n != late) {
        assert!(
            !junit.contains(&format!("({n}")),
            "{n} is not late: {junit}"
        );
    }
}

/// `each-node` over four nodes, one of them under a 10% CPU quota: its own set's iterations
/// stall whenever the kernel throttles it (no link is crossed: only a CPU-slow node shows
/// here), every criterion but the fleet-relative straggler passes, and that names it — and
/// only it — a suspect; the run passes. 1M and p99: the timed loop must outlast the quota's
/// 10 ms (at 64K it fit in one period and showed no freeze), and one scheduler stall of a
/// healthy node on the shared cores (22 ms measured) must not be its p99.
#[test]
fn a_cpu_slow_node_is_the_fleet_straggler_of_each_node_and_a_suspect() {
    let Some(c) = cluster_of(4) else { return };
    let slow = c.nodes[1].clone();
    let d = tmp("cluster-cpu-fleet-straggler");
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1
name: cpu-fleet-straggler
backend: mpi
launch: { ranks_per_node: 2 }
defaults: { iters: 200, warmup: 5, timeout: 60s, iterations: true }
tests:
  - name: each
    over: each-node
    collective: all_reduce
    sizes: [1M]
    expect:
      - wrong: 0
      - straggler: \"p99 <= 2x fleet median\"
",
    );
    let _cpu = Fault::apply(&["cpu", &slow, "10"]);
    let out = d.join("out");
    let o = c.salloc(&d, 2, &run_line(env!("CARGO_BIN_EXE_baton"), &plan, &out));
    assert_eq!(code(&o), 0, "slow but passing: {}", show(&o));
    let n = nodes_json(&out);
    assert_eq!(n["suspect"], slow.as_str(), "{n:#}");
    assert_eq!(n["failed"], "", "{n:#}");
    let (v, why) = verdict_of(&n, &slow);
    assert_eq!(v, "suspect");
    assert!(
        why.contains("slow but passing") && why.contains("iteration p99"),
        "{why}"
    );
}

/// Issue #37: a frozen node that is rank 0 of its pair sets — the rank that keeps each set's
/// journal. Its partners wait, time out and record each hang themselves, naming rank 0's node
/// silent (the set journal is on the shared output, rank 0 on another host); only the frozen
/// node is failed and drained, and no record, reason or drain line names a partner.
#[test]
fn a_frozen_rank_0_node_is_named_and_its_partners_are_not() {
    let Some(c) = cluster_of(4) else { return };
    let nodes = c.nodes[..4].to_vec();
    // The circle method keeps the first node in place: it is in every round, first of its pair.
    let frozen = nodes[0].clone();
    let d = tmp("cluster-sets-frozen-rank0");
    let plan = write(
        &d,
        "plan.yaml",
        &format!(
            "version: 1
name: frozen-rank0
backend: mpi
launch: {{ ranks_per_node: 1 }}
nodes: {{ hostlist: \"{}\" }}
defaults: {{ iters: 5, warmup: 1, timeout: 3s }}
tests:
  - name: pairs
    over: pairs
    collective: all_reduce
    repeat: 100
    sizes: [64K]
    expect: [ {{ wrong: 0 }} ]
",
            nodes.join(",")
        ),
    );
    let out = d.join("out");
    let script = run_line(env!("CARGO_BIN_EXE_baton"), &plan, &out);
    let o = std::thread::scope(|s| {
        let run = s.spawn(|| c.salloc_n(&d, 4, 1, 400, &script));
        // Healed when the test ends, however it ends.
        let _f = Fault::apply(&["freeze", &frozen]);
        freeze_for_good(&out, &frozen, &run);
        run.join().unwrap()
    });
    assert_eq!(code(&o), 4, "a set timed out: {}", show(&o));
    let r = results::read(&out.join("results.json")).unwrap();
    let n = nodes_json(&out);
    assert_eq!(n["failed"], frozen.as_str(), "{n:#}");
    let drained = drains(&out);
    assert!(
        drained.len() == 1 && drained[0].contains(&frozen),
        "{drained:?}"
    );
    // A set whose rank 0 was the frozen node and that hung while measuring: its partner kept
    // the record and named rank 0's node, never its own.
    let mut named = 0;
    for j in r.jobs.iter().filter(|j| j.status == JobStatus::Timeout) {
        let hosts = &j.node_set.as_ref().unwrap().hosts;
        assert!(
            hosts.contains(&frozen),
            "{} timed out: {:?}",
            j.id,
            j.errors
        );
        let said: String = j.errors.iter().map(|e| e.message.clone()).collect();
        for partner in hosts.iter().filter(|h| **h != frozen) {
            assert!(
                !said.contains(&format!(" on {partner})")),
                "{} blames {partner}: {said}",
                j.id
            );
        }
        if j.layout.ranks.first().is_some_and(|r| r.host == frozen) && said.contains("rank 0 (pid ")
        {
            assert!(
                said.contains(&format!(" on {frozen}) did not record the timeout")),
                "{said}"
            );
            named += 1;
        }
    }
    assert!(named >= 1, "no set named its frozen rank 0: {:#?}", r.jobs);
    for partner in &nodes[1..] {
        let (v, why) = verdict_of(&n, partner);
        assert_ne!(v, "failed", "{partner}: {why}");
    }
}

/// Once a set of `node` measures, the node freezes and stays frozen until `run` ends: every
/// baton process started on it later is stopped too, as on a node that hangs whatever runs
/// there (the caller's `Fault` heals it).
fn freeze_for_good(
    out: &std::path::Path,
    node: &str,
    run: &std::thread::ScopedJoinHandle<'_, std::process::Output>,
) {
    let start = Instant::now();
    let measuring = || {
        std::fs::read_dir(out.join("sets"))
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|round| {
                std::fs::read_dir(round.path())
                    .into_iter()
                    .flatten()
                    .flatten()
            })
            .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
            .any(|e| read(&e.path()).contains("\"record\":\"row\""))
    };
    while !measuring() {
        assert!(
            start.elapsed() < Duration::from_secs(120) && !run.is_finished(),
            "no set ever measured"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    while !run.is_finished() {
        let again = std::process::Command::new(common::cluster::SIM)
            .args(["freeze", node])
            .output()
            .expect("cluster-sim");
        assert!(again.status.success(), "{}", show(&again));
        std::thread::sleep(Duration::from_millis(300));
    }
}
