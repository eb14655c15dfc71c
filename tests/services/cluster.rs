//! Multi-node runs on the simulated cluster (`scripts/cluster-sim up 4`): four namespace nodes
//! with their own hostnames, a real slurmctld and one slurmd per node, Open MPI over TCP on
//! the bridge. Checks that rendered scripts place ranks on four hosts and that results name
//! them, and that a slow node and a dead node are found.
//!
//! Without a cluster the tests print `SKIPPED: no simulated cluster: …` and pass, except in CI
//! (`CI=true` or `BATON_REQUIRE_CLUSTER=1`), where that is a failure. They take one lock, so they
//! run one at a time whatever `--test-threads` says: a fault on a node would spoil another test's run.
#![cfg(feature = "mpi")]

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use baton::results::{self, CellStatus, JobStatus, Results};
use common::cluster::{Cluster, Fault, cluster, cluster_of, drains, nodes_json, verdict_of};
use common::{code, p, read, render_script, show, stdout, tmp, write};

/// Four nodes of two ranks: a world all_reduce (every rank's traffic crosses nodes) and a
/// `DIV 2` split, one group per node.
fn placement_plan(dir: &Path, name: &str, launch_extra: &str) -> PathBuf {
    write(
        dir,
        "plan.yaml",
        &format!(
            "version: 1
name: {name}
backend: mpi
launch: {{ nodes: 4, ranks_per_node: 2{launch_extra} }}
defaults: {{ timeout: 60s, iters: 10, warmup: 2 }}
tests:
  - name: world
    collective: all_reduce
    sizes: [64K, 1M]
    expect: [ {{ wrong: 0 }} ]
  - name: per-node
    collective: all_reduce
    sizes: [64K, 1M]
    split: \"DIV 2\"
    expect: [ {{ wrong: 0 }} ]
"
        ),
    )
}

/// Ranks 2k and 2k+1 ran on node0(k+1), results list the four hosts, and the `DIV 2` split
/// made one group per node whose members all name that node.
fn assert_placement(results_json: &Path) {
    let r: Results = results::read(results_json).unwrap_or_else(|e| panic!("{e}"));
    let hosts: Vec<&str> = r
        .environment
        .hosts
        .iter()
        .map(|h| h.hostname.as_str())
        .collect();
    assert_eq!(hosts, ["node01", "node02", "node03", "node04"]);
    let expected: BTreeMap<String, Vec<u64>> = (0..4u64)
        .map(|k| (format!("node{:02}", k + 1), vec![2 * k, 2 * k + 1]))
        .collect();
    assert_eq!(r.jobs.len(), 2);
    for j in &r.jobs {
        assert_eq!(j.status, JobStatus::Completed, "{}: {:?}", j.id, j.errors);
        assert_eq!((j.layout.nranks, j.layout.nodes), (8, 4), "{}", j.id);
        let mut on: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for rank in &j.layout.ranks {
            on.entry(rank.host.clone()).or_default().push(rank.rank);
        }
        assert_eq!(on, expected, "{}: ranks per host", j.id);
    }
    let split = r.job("per-node").expect("the split job");
    assert_eq!(split.groups.len(), 4, "{:?}", split.groups);
    for (k, g) in split.groups.iter().enumerate() {
        let group_hosts: Vec<&str> = g
            .members
            .iter()
            .map(|m| split.layout.ranks[*m as usize].host.as_str())
            .collect();
        let node = format!("node{:02}", k + 1);
        assert_eq!(
            group_hosts,
            [node.as_str(), node.as_str()],
            "group {}",
            g.color
        );
        for m in &g.members {
            assert_eq!(split.layout.ranks[*m as usize].group, Some(g.color));
        }
    }
}

fn scontrol_job(c: &Cluster, id: &str) -> String {
    stdout(
        &c.cmd("scontrol")
            .args(["show", "job", id])
            .output()
            .expect("scontrol"),
    )
}

/// `submitted batch job N: …` → N.
fn job_id(o: &Output) -> String {
    let s = stdout(o);
    let rest = s
        .split("submitted batch job ")
        .nth(1)
        .unwrap_or_else(|| panic!("no job ID in {}", show(o)));
    rest.split(':').next().unwrap().to_string()
}

#[test]
fn sbatch_places_two_ranks_on_each_of_four_nodes_over_the_bridge() {
    let Some(c) = cluster() else { return };
    let d = tmp("cluster-sbatch");
    let plan = placement_plan(&d, "four-nodes", "");
    let before = c.bridge_bytes();
    let o = c.baton(
        &d,
        &[
            "render",
            p(&plan),
            "-t",
            "slurm",
            "-o",
            p(&d.join("scripts")),
            "--submit",
            "--wait",
        ],
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    let id = job_id(&o);
    let job = scontrol_job(&c, &id);
    assert!(job.contains("JobState=COMPLETED"), "{job}");
    assert!(job.contains(" NodeList=node[01-04]"), "{job}");
    let out = d.join(format!("four-nodes-{id}"));
    // A plain plan across nodes is one `baton run` in the batch job: one results.json.
    assert_placement(&out.join("results.json"));
    assert!(out.join("junit.xml").is_file());
    // Ranks on different nodes talked over the bridge: every node's link carried the world
    // all_reduce (10 + 2 iterations of 1 MiB, each rank sending about 1.75 MiB, twice: in and
    // out of place). Shared memory between nodes would leave the links nearly idle.
    let after = c.bridge_bytes();
    for (node, b) in before.iter().filter(|(n, _)| c.nodes[..4].contains(n)) {
        let moved = after[node] - b;
        assert!(
            moved > 20 << 20,
            "{node}'s link carried only {moved} bytes during the run"
        );
    }
}

/// A batch script with `launch.setup` lines and srun step options, rendered for PATH (the
/// default) and submitted with `--submit --wait -o DIR --results DIR`: setup runs before
/// `baton run` and its exports reach the ranks, and the results name the four hosts.
#[test]
fn sbatch_script_with_setup_and_step_options_runs_on_four_nodes() {
    let Some(c) = cluster() else { return };
    let d = tmp("cluster-setup-step");
    let plan = placement_plan(
        &d,
        "setup-step",
        ", setup: [\"touch \\\"$out/setup-ran\\\"\", \"export NCCL_BATON_SETUP=from-setup\"], \
         slurm: { step: [\"--distribution=block\", \"--comment=baton step\"] }",
    );
    let scripts = d.join("scripts");
    let out = d.join("results");
    let o = c.baton(
        &d,
        &[
            "--trust-plan",
            "render",
            p(&plan),
            "-t",
            "slurm",
            "-o",
            p(&scripts),
            "--submit",
            "--wait",
            "--results",
            p(&out),
        ],
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    let script = read(&scripts.join("setup-step.sbatch"));
    // One `baton run` in the batch job, whose step takes the plan's step options and CPU
    // binding from the same `srun_step_options` as the rendered steps did.
    assert!(script.contains("\"$baton\" run \"$plan\""), "{script}");
    assert!(out.join("setup-ran").is_file(), "{}", show(&o));
    assert_placement(&out.join("results.json"));
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(
        r.environment
            .variables
            .get("NCCL_BATON_SETUP")
            .map(String::as_str),
        Some("from-setup")
    );
    let job = scontrol_job(&c, &job_id(&o));
    assert!(job.contains("JobState=COMPLETED"), "{job}");
}

#[test]
fn srun_script_in_an_allocation_places_ranks_the_same() {
    let Some(c) = cluster() else { return };
    let d = tmp("cluster-srun");
    let plan = placement_plan(&d, "four-srun", "");
    let script = render_script(&d, &plan, "srun", &d.join("scripts"));
    let out = d.join("out");
    let o = c.salloc(&d, 2, &format!("exec '{}' '{}'", p(&script), p(&out)));
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_placement(&out.join("set-0/results.json"));
}

#[test]
fn mpirun_script_with_the_allocations_hostfile_places_ranks_the_same() {
    let Some(c) = cluster() else { return };
    let d = tmp("cluster-mpirun");
    let plan = placement_plan(&d, "four-mpirun", ", mpirun: { hostfile: hosts }");
    let script = render_script(&d, &plan, "mpirun", &d.join("scripts"));
    let out = d.join("out");
    // The hostfile is the allocation's node list, written inside it; mpirun starts its daemons
    // on those nodes through Slurm.
    let o = c.salloc(
        &d,
        2,
        &format!(
            "scontrol show hostnames \"$SLURM_JOB_NODELIST\" >hosts && exec '{}' '{}'",
            p(&script),
            p(&out)
        ),
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(
        read(&out.join("hostfile")),
        "node01 slots=2\nnode02 slots=2\nnode03 slots=2\nnode04 slots=2\n"
    );
    assert_placement(&out.join("set-0/results.json"));
}

/// Median over repeats and placements of each group's busbw at `requested` bytes.
fn group_busbw(r: &Results, requested: u64) -> BTreeMap<u64, f64> {
    let mut per: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for (_, row, _, cell) in r.jobs[0].cells() {
        if row.requested == requested {
            for g in &cell.groups {
                per.entry(g.color).or_default().push(g.busbw);
            }
        }
    }
    per.into_iter()
        .map(|(color, mut v)| {
            v.sort_by(f64::total_cmp);
            (color, v[v.len() / 2])
        })
        .collect()
}

#[test]
fn a_slow_node_slows_its_group_and_group_spread_names_it() {
    let Some(c) = cluster() else { return };
    let d = tmp("cluster-slow");
    // One rank per node and DIV 2: group 0 is node01+node02, group 1 node03+node04, each
    // group's all_reduce crossing the bridge.
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1
name: slow-node
backend: mpi
launch: { nodes: 4, ranks_per_node: 1 }
defaults: { timeout: 60s, iters: 10, warmup: 2 }
tests:
  - name: pairs
    collective: all_reduce
    repeat: 3
    sizes: [256K]
    split: \"DIV 2\"
    expect: [ { group_spread: \"<= 50%\" } ]
",
    );
    let script = render_script(&d, &plan, "srun", &d.join("scripts"));
    let out = d.join("out");
    let _slow = Fault::apply(&["slow", "node04", "50mbit"]);
    let o = c.salloc(&d, 1, &format!("exec '{}' '{}'", p(&script), p(&out)));
    assert_eq!(code(&o), 1, "the spread criterion fails: {}", show(&o));
    let r = results::read(&out.join("set-0/results.json")).unwrap();
    let bw = group_busbw(&r, 256 << 10);
    let ratio = bw[&0] / bw[&1];
    eprintln!(
        "slow node04 (50mbit): group busbw {bw:?} GB/s, healthy/slow ratio {ratio:.1} at 256K"
    );
    assert!(
        ratio >= 3.0,
        "node04's group should be clearly slower: {bw:?}"
    );
    let log = stdout(&o);
    assert!(
        log.contains("slowest group 1 (ranks 2-3: node03, node04)"),
        "group_spread names the slow node's group and hosts: {log}"
    );
}

/// The run directory `out` once a set's journal under it (`baton run` in the batch job) holds
/// a measured row.
fn measuring(out: &Path) -> bool {
    let Ok(tests) = std::fs::read_dir(out.join("sets")) else {
        return false;
    };
    tests.filter_map(Result::ok).any(|t| {
        std::fs::read_dir(t.path()).is_ok_and(|files| {
            files.filter_map(Result::ok).any(|f| {
                f.path().extension().is_some_and(|x| x == "jsonl")
                    && read(&f.path()).contains("\"record\":\"row\"")
            })
        })
    })
}

/// `sbatch --parsable --wait SCRIPT OUT` from `dir`, in the background.
fn submit(c: &Cluster, dir: &Path, script: &Path, out: &Path) -> std::thread::JoinHandle<Output> {
    let mut cmd = c.cmd("timeout");
    cmd.args(["600", "sbatch", "--parsable", "--wait"])
        .arg(script)
        .arg(out)
        .current_dir(dir);
    std::thread::spawn(move || cmd.output().expect("sbatch runs"))
}

/// Waits until the batch job writing `out` measures something.
fn until_measuring(out: &Path, run: &std::thread::JoinHandle<Output>) {
    let start = Instant::now();
    while !measuring(out) {
        assert!(
            start.elapsed() < Duration::from_secs(240) && !run.is_finished(),
            "the job never measured anything"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// #21 item 6: a plain plan across eight nodes (phase E's shape: no `over:`), rendered with
/// `-t slurm` and submitted with `sbatch`, is one `baton run` in the allocation. Healthy, it
/// passes with the plan's own job IDs (what the plain launcher steps named them). With node03
/// killed mid-run, results.json names the dead node and Slurm's words, so do the report and
/// nodes.json, drain.sh drains exactly it, and what was measured before the kill is kept.
#[test]
fn a_node_killed_under_a_rendered_plain_plan_is_named_and_drained() {
    let Some(c) = cluster_of(8) else { return };
    let d = tmp("cluster-kill");
    let timeout = Duration::from_secs(90);
    let plan = write(
        &d,
        "plan.yaml",
        &format!(
            "version: 1
name: kill-node
backend: mpi
launch: {{ nodes: 8, ranks_per_node: 2 }}
defaults: {{ timeout: {}s, iters: 10, warmup: 2 }}
tests:
  - name: t
    collective: all_reduce
    repeat: 20s
    sizes: [64K, 256K]
    expect: [ {{ wrong: 0 }} ]
",
            timeout.as_secs()
        ),
    );
    let o = c.baton(&d, &["render", p(&plan), "-t", "slurm", "-o", "job"]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let script = d.join("job/kill-node.sbatch");
    assert!(read(&script).contains("#SBATCH --nodes=8\n"));
    let plan_ids: Vec<String> = baton::expand::expand(&baton::plan::load_file(&plan).unwrap().plan)
        .jobs
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(plan_ids, ["t"]);
    let ids = |r: &Results| r.jobs.iter().map(|j| j.id.clone()).collect::<Vec<_>>();

    let healthy = d.join("healthy");
    let o = submit(&c, &d, &script, &healthy).join().unwrap();
    assert_eq!(code(&o), 0, "{}", show(&o));
    let r = results::read(&healthy.join("results.json")).unwrap();
    assert_eq!(ids(&r), plan_ids, "the plain path's job IDs");
    assert_eq!(r.jobs[0].status, JobStatus::Completed);
    assert_eq!(r.jobs[0].layout.nodes, 8);
    let all = baton::nodeset::compress(&c.nodes[..8]);
    let n = nodes_json(&healthy);
    assert_eq!(n["passed"], all.as_str(), "{n:#}");
    assert!(drains(&healthy).is_empty());
    let md = read(&healthy.join("report/report.md"));
    assert!(
        md.contains(" `t` — "),
        "the job has its section, as a plain run's: {md}"
    );

    let out = d.join("killed");
    let run = submit(&c, &d, &script, &out);
    until_measuring(&out, &run);
    let _dead = Fault::apply(&["kill", "node03"]);
    let killed = Instant::now();
    let o = run.join().unwrap();
    let took = killed.elapsed();
    assert_eq!(code(&o), 3, "{}", show(&o));
    assert!(
        took < timeout,
        "the run ended {took:?} after the kill: not within the plan's timeout {timeout:?}"
    );
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(ids(&r), plan_ids);
    let j = &r.jobs[0];
    // Cut short by the launcher (the old plain steps left it `partial`): an error, failed.
    assert_eq!(j.status, JobStatus::Error, "{:?}", j.errors);
    assert!(
        j.cells().any(|(_, _, _, c)| c.status == CellStatus::Ok),
        "what was measured before the kill is kept"
    );
    // srun says "Node failure on node03" when Slurm declared the node failed before the step
    // ended; when a rank on another node gave up first it says only that tasks were killed.
    // The dead node is named either way, and the launcher's words whenever it said them.
    let said = "Node failure on node03";
    let step_log = std::fs::read_dir(out.join("sets/00-t"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .map(|e| read(&e.path()))
        .collect::<String>();
    let launcher_said = step_log.contains(said);
    assert!(
        j.errors
            .iter()
            .any(|e| e.message.contains("node03 did not answer")
                && (!launcher_said || e.message.contains(said))),
        "{:?}",
        j.errors
    );
    let set = &r.node_sets[0];
    assert_eq!(set.dead, ["node03"]);
    assert!(
        !launcher_said || set.launcher.as_deref().is_some_and(|l| l.contains(said)),
        "{set:?}"
    );
    let n = nodes_json(&out);
    assert_eq!(n["failed"], "node03", "{n:#}");
    let (verdict, why) = verdict_of(&n, "node03");
    assert_eq!(verdict, "failed");
    assert!(
        why.contains("dead") && (!launcher_said || why.contains(said)),
        "{why}"
    );
    let drained = drains(&out);
    assert_eq!(drained.len(), 1, "{drained:?}");
    assert!(drained[0].contains("NodeName='node03' "), "{drained:?}");
    let md = read(&out.join("report/report.md"));
    assert!(
        md.contains("node03") && (!launcher_said || md.contains(said)),
        "{md}"
    );
}

#[test]
fn a_frozen_node_times_out_and_the_batch_job_ends_recording_the_timeout() {
    let Some(c) = cluster() else { return };
    let d = tmp("cluster-freeze");
    let timeout = Duration::from_secs(20);
    let plan = write(
        &d,
        "plan.yaml",
        &format!(
            "version: 1
name: freeze-node
backend: mpi
launch: {{ nodes: 4, ranks_per_node: 1 }}
defaults: {{ timeout: {}s, iters: 10, warmup: 2 }}
tests:
  - name: t
    collective: all_reduce
    repeat: 500
    sizes: [64K]
",
            timeout.as_secs()
        ),
    );
    let o = c.baton(&d, &["render", p(&plan), "-t", "slurm", "-o", "job"]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let out = d.join("out");
    let run = submit(&c, &d, &d.join("job/freeze-node.sbatch"), &out);
    until_measuring(&out, &run);
    let file = out.join("results.json");
    // The job's second node: `freeze` stops every baton process of a node, and on the first,
    // the batch host, that would stop the job's own `baton run` too.
    let nodes = stdout(
        &c.cmd("squeue")
            .args(["-h", "-n", "freeze-node", "-o", "%N"])
            .output()
            .expect("squeue"),
    );
    let nodes = baton::nodeset::expand(nodes.trim()).expect("the job's nodes");
    let _frozen = Fault::apply(&["freeze", &nodes[1]]);
    let frozen = Instant::now();
    let o = run.join().unwrap();
    let took = frozen.elapsed();
    // Rank 0 exits 4 first; what srun reports then depends on how the other ranks end when the
    // step is torn down (the frozen one, continued, may abort in MPI: 16), so 4 or 3.
    assert!([3, 4].contains(&code(&o)), "{}", show(&o));
    // The timeout, then srun ending the step and the script grading: well under a minute more.
    assert!(
        took < timeout + Duration::from_secs(60),
        "the run ended {took:?} after the freeze"
    );
    let r = results::read(&file).unwrap();
    assert_eq!(
        r.jobs[0].status,
        JobStatus::Timeout,
        "{:?}",
        r.jobs[0].errors
    );
    assert!(
        r.jobs[0]
            .errors
            .iter()
            .any(|e| e.message.contains("did not finish within 20s")),
        "{:?}",
        r.jobs[0].errors
    );
}

/// Ranks dealt round-robin over the nodes (`srun -m cyclic`): results still count four nodes
/// and name each rank's own host.
#[test]
fn cyclic_placement_counts_four_nodes_and_names_each_ranks_host() {
    let Some(c) = cluster() else { return };
    let d = tmp("cluster-cyclic");
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1
name: cyclic
backend: mpi
launch: { nodes: 4, ranks_per_node: 2 }
defaults: { timeout: 60s, iters: 5, warmup: 1 }
tests:
  - name: t
    collective: all_reduce
    sizes: [64K]
",
    );
    let out = d.join("out");
    let o = c
        .cmd("timeout")
        .args(["300", "srun", "--mpi=pmix", "--kill-on-bad-exit=1"])
        .args(["-N", "4", "-n", "8", "-m", "cyclic"])
        .arg(env!("CARGO_BIN_EXE_baton-mpi"))
        .args(["run", p(&plan), "-o", p(&out)])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", show(&o));
    let r = results::read(&out.join("results.json")).unwrap();
    let j = &r.jobs[0];
    assert_eq!((j.layout.nranks, j.layout.nodes), (8, 4));
    // Whichever four nodes Slurm gave (a node a previous test's job still holds is skipped),
    // cyclic placement deals the ranks round the nodes in order.
    let mut hosts: Vec<&str> = j.layout.ranks.iter().map(|r| r.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    assert_eq!(hosts.len(), 4, "{:?}", j.layout.ranks);
    for rank in &j.layout.ranks {
        assert_eq!(rank.host, hosts[rank.rank as usize % 4], "{rank:?}");
    }
}

/// A machine restarted (or a CI image taken) while a cluster was up keeps its state files and
/// pid files, whose pids may now belong to anything. `status` must then fail, so that
/// `scripts/test` brings a cluster up instead of running every multi-node test against none.
#[test]
fn status_calls_a_cluster_whose_controller_is_gone_stale() {
    let dir = tmp("cluster-sim-stale");
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    write(&dir, "node-list", "node01\nnode02\n");
    // A live pid that is not slurmctld: this test's own.
    write(&run, "slurmctld.pid", &std::process::id().to_string());
    let o = std::process::Command::new(common::cluster::SIM)
        .arg("status")
        .env("BATON_CLUSTER_DIR", &dir)
        .output()
        .unwrap();
    assert_eq!(code(&o), 4, "{}", show(&o));
    assert!(
        stdout(&o).contains("controller: not running"),
        "{}",
        show(&o)
    );
}

/// A CPU twin of a shipped phase plan, for a cluster without GPUs: the shipped file's header,
/// launch and tests (names, `over:`, collectives) as they are, with `backend: mpi`, two host
/// ranks where a GPU plan has eight, no `gpus_per_rank`, small sizes and `wrong: 0` only (the
/// busbw floors are GPU numbers). Each edit is asserted, so a change to the shipped plan that
/// this no longer follows fails here.
fn cpu_twin(shipped: &str) -> String {
    let text = read(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("plans")
            .join(shipped),
    );
    let (head, tests) = text.split_once("\ntests:\n").expect("a tests: section");
    assert!(head.contains("\nbackend: nccl\n"), "{shipped}");
    let mut twin: String = head
        .replace("\nbackend: nccl\n", "\nbackend: mpi\n")
        .replace("ranks_per_node: 8", "ranks_per_node: 2")
        .lines()
        .filter(|l| !l.trim_start().starts_with("gpus_per_rank:"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(twin.contains("\ndefaults:\n"), "{shipped}");
    twin = twin.replace("\ndefaults:\n", "\ndefaults:\n  iters: 5\n  warmup: 1\n");
    twin.push_str("tests:\n");
    let kept = ["  - name:", "    over:", "    collective:"];
    for l in tests
        .lines()
        .filter(|l| kept.iter().any(|k| l.starts_with(k)))
    {
        twin.push_str(l.split(" #").next().unwrap());
        twin.push('\n');
        if l.starts_with("    collective:") {
            twin.push_str("    sizes: [8, 64K]\n    expect: [ { wrong: 0 } ]\n");
        }
    }
    assert!(twin.contains("    over: "), "{shipped}: {twin}");
    twin
}

/// The run directory `NAME-JOBID` of batch job `id` under `dir`, and its node verdicts.
fn node_set_run(dir: &Path, name: &str, id: &str) -> (Results, serde_json::Value) {
    let out = dir.join(format!("{name}-{id}"));
    let r = results::read(&out.join("results.json")).unwrap();
    let nodes = serde_json::from_str(&read(&out.join("nodes.json"))).unwrap();
    (r, nodes)
}

/// Every job of `r` ran on exactly the hosts of its node set, completed, and the sets are
/// `want` distinct sets of `size` nodes.
fn assert_sets(r: &Results, size: usize, want: usize) {
    let mut sets = std::collections::BTreeSet::new();
    for j in &r.jobs {
        let set = j.node_set.as_ref().expect("every job names its node set");
        assert_eq!(j.status, JobStatus::Completed, "{}: {:?}", j.id, j.errors);
        assert_eq!(set.hosts.len(), size, "{}", j.id);
        let ran: std::collections::BTreeSet<&str> =
            j.layout.ranks.iter().map(|r| r.host.as_str()).collect();
        let named: std::collections::BTreeSet<&str> =
            set.hosts.iter().map(String::as_str).collect();
        assert_eq!(ran, named, "{}: ranks ran where the set says", j.id);
        sets.insert(set.hosts.clone());
    }
    assert_eq!((r.jobs.len(), sets.len()), (want, want), "{sets:?}");
}

/// Issue #21, blocker 1, the README's path: phase A (a CPU twin: `backend: mpi`, see
/// [`cpu_twin`]) rendered with `-t slurm` and no count, then `sbatch -N 8`: eight single-node
/// sets on eight hosts, each node passed. Before, the script said `#SBATCH --nodes=1` and one
/// plain step, and the report said PASS for one host.
#[test]
fn phase_a_rendered_for_slurm_and_submitted_with_sbatch_n_8_tests_every_node() {
    let Some(c) = common::cluster::cluster_of(8) else {
        return;
    };
    let d = tmp("cluster-phase-a");
    let plan = write(&d, "phase-a-node.yaml", &cpu_twin("phase-a-node.yaml"));
    let o = c.baton(&d, &["render", p(&plan), "-t", "slurm", "-o", "job"]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let script = read(&d.join("job/phase-a-node.sbatch"));
    assert!(!script.contains("#SBATCH --nodes="), "{script}");
    let o = c
        .cmd("timeout")
        .args(["600", "sbatch", "--parsable", "--wait", "-N", "8"])
        .arg("job/phase-a-node.sbatch")
        .current_dir(&d)
        .output()
        .unwrap();
    let id = stdout(&o).trim().split(';').next().unwrap().to_string();
    assert_eq!(
        code(&o),
        0,
        "{}\n{}",
        show(&o),
        read(&d.join(format!("phase-a-node-{id}.out")))
    );
    let (r, nodes) = node_set_run(&d, "phase-a-node", &id);
    assert_eq!(r.node_list, &c.nodes[..8]);
    assert_sets(&r, 1, 8);
    let all = baton::nodeset::compress(&c.nodes[..8]);
    assert_eq!(nodes["passed"], all.as_str(), "{nodes:#}");
}

/// Phase B (its CPU twin) rendered with `--nodes 8` and submitted with `--submit --wait`:
/// 28 pairs in 7 rounds, every node passed, and the verdict printed where the job ended
/// (issue #21 item 15), not only its exit status.
#[test]
fn phase_b_rendered_with_nodes_8_runs_all_28_pairs_and_prints_the_verdict() {
    let Some(c) = common::cluster::cluster_of(8) else {
        return;
    };
    let d = tmp("cluster-phase-b");
    let plan = write(&d, "phase-b-pair.yaml", &cpu_twin("phase-b-pair.yaml"));
    let o = c.baton(
        &d,
        &[
            "render",
            p(&plan),
            "-t",
            "slurm",
            "-o",
            "job",
            "--nodes",
            "8",
            "--submit",
            "--wait",
        ],
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(
        stdout(&o).contains("plan phase-b-pair: PASS — 28 job(s)"),
        "the verdict: {}",
        show(&o)
    );
    let id = job_id(&o);
    let (r, nodes) = node_set_run(&d, "phase-b-pair", &id);
    assert_eq!(r.node_list.len(), 8);
    assert_sets(&r, 2, 28);
    assert_eq!(r.node_sets.iter().map(|s| s.round).max(), Some(7));
    let all = baton::nodeset::compress(&c.nodes[..8]);
    assert_eq!(nodes["passed"], all.as_str(), "{nodes:#}");
}
