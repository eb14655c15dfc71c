//! `baton render` of plans whose tests run over node sets (`over:`): the shipped phase plans
//! always become the node-set batch job, never a plain step on `launch.nodes` nodes; the node
//! count comes from `--nodes`, the plan's node list or `sbatch -N`, and a job that could only
//! test fewer nodes than asked for refuses to start. srun and mpirun scripts refuse, saying why.
//! (The runs on eight nodes are in `tests/services/cluster.rs`.)

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::render::{dry_run, render};
use common::{baton, code, p, read, show, stderr, stdout, tmp, write};

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("plans")
        .join(name)
}

/// The README's path: `baton render plans/phase-a-node.yaml -t slurm` (and phase B) writes the
/// batch job whose `baton run` drives the node sets, not `#SBATCH --nodes=1` and one step.
#[test]
fn shipped_phase_plans_render_the_node_set_batch_job() {
    for plan in ["phase-a-node.yaml", "phase-b-pair.yaml"] {
        let s = dry_run(&shipped(plan), &["-t", "slurm"]);
        assert!(
            s.contains("\"$baton\" run \"$plan\" \"${run_args[@]}\""),
            "{plan}: {s}"
        );
        assert!(!s.contains("exec srun"), "{plan}: a plain step: {s}");
        assert!(
            !s.contains("#SBATCH --nodes="),
            "{plan}: no count was given: {s}"
        );
        // The count is the job's: a job of one node (what sbatch gives without -N) is refused.
        assert!(s.contains("SLURM_JOB_NUM_NODES"), "{plan}: {s}");
        assert!(stdout_line(&s).contains("sbatch -N COUNT"), "{plan}: {s}");
    }
}

/// The line `render` ends with.
fn stdout_line(s: &str) -> &str {
    s.lines().last().unwrap_or_default()
}

/// `render --nodes 8` allocates eight nodes; `--nodes HOSTLIST` allocates exactly those and
/// runs the sets over them in that order; a count the node sets cannot use is refused.
#[test]
fn render_nodes_gives_the_count_or_the_list() {
    let b = shipped("phase-b-pair.yaml");
    let s = dry_run(&b, &["-t", "slurm", "--nodes", "8"]);
    assert!(s.contains("#SBATCH --nodes=8\n"), "{s}");
    assert!(!s.contains("--nodelist"), "{s}");
    assert!(
        s.contains("#   allreduce-1g-4g: over pairs on 8 nodes (the job's, from --nodes): 7 rounds, 28 node sets\n"),
        "{s}"
    );
    assert!(
        !s.contains("SLURM_JOB_NUM_NODES"),
        "the count is the render's: {s}"
    );

    let s = dry_run(&b, &["-t", "slurm", "--nodes", "gpu[04,01-03]"]);
    assert!(s.contains("#SBATCH --nodes=4\n"), "{s}");
    assert!(s.contains("#SBATCH --nodelist=\"gpu[01-04]\"\n"), "{s}");
    assert!(
        s.contains("run_args+=(--nodes 'gpu04,gpu01,gpu02,gpu03')\n"),
        "the list in its own order: {s}"
    );

    let o = render(&b, &["-t", "slurm", "--dry-run", "--nodes", "1"], 2);
    assert!(
        stderr(&o).contains("test `allreduce-1g-4g`: `over: pairs` needs at least 2 nodes"),
        "{}",
        show(&o)
    );
    let o = render(&b, &["-t", "slurm", "--dry-run", "--nodes", "0"], 2);
    assert!(stderr(&o).contains("--nodes 0"), "{}", show(&o));
    // A plan without node sets has its size in `launch.nodes`.
    let q = shipped("examples/quickstart.yaml");
    let o = render(&q, &["-t", "slurm", "--dry-run", "--nodes", "4"], 2);
    assert!(stderr(&o).contains("launch.nodes"), "{}", show(&o));
}

/// The plan's own hostfile is read at render time and the list handed to `baton run`: the plan
/// the job carries sits in OUT, where a relative hostfile is not.
#[test]
fn a_plans_hostfile_is_resolved_when_rendering() {
    let d = tmp("render-sets-hostfile");
    write(&d, "hosts.txt", "n3\nn1 slots=8\nn2\n");
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1\nname: hf\nbackend: mpi\nnodes: { hostfile: hosts.txt }\ntests:\n  - name: a\n    over: each-node\n    collective: all_reduce\n    sizes: [8]\n",
    );
    let s = dry_run(&plan, &["-t", "slurm"]);
    assert!(s.contains("#SBATCH --nodes=3\n"), "{s}");
    assert!(s.contains("#SBATCH --nodelist=\"n[1-3]\"\n"), "{s}");
    assert!(s.contains("run_args+=(--nodes 'n3,n1,n2')\n"), "{s}");
}

/// srun and mpirun scripts run one step over every node: they refuse a plan with node sets and
/// say what does run it. Before, phase B's srun script was a plain two-node step.
#[test]
fn srun_and_mpirun_scripts_refuse_node_sets_saying_why() {
    for (plan, target) in [
        ("phase-b-pair.yaml", "srun"),
        ("phase-a-node.yaml", "srun"),
        ("phase-a-node.yaml", "mpirun"),
        ("phase-b-pair.yaml", "slurm,mpirun"),
    ] {
        let d = tmp("render-sets-refused");
        let o = render(&shipped(plan), &["-t", target, "-o", p(&d)], 2);
        let e = stderr(&o);
        assert!(e.contains("runs `over: "), "{plan} {target}: {}", show(&o));
        assert!(
            e.contains("Render `-t slurm`"),
            "{plan} {target}: {}",
            show(&o)
        );
        assert!(
            std::fs::read_dir(&d).unwrap().next().is_none(),
            "{plan} {target}: nothing written"
        );
    }
}

/// `--submit` of a job whose node count nobody gave is refused before sbatch runs.
#[test]
fn submit_needs_a_node_count() {
    let d = tmp("render-sets-submit");
    let o = render(
        &shipped("phase-a-node.yaml"),
        &["-t", "slurm", "-o", p(&d), "--submit"],
        2,
    );
    assert!(stderr(&o).contains("--nodes COUNT"), "{}", show(&o));
}

/// The script rendered without a count refuses a one-node job when it starts (exit 2, before
/// `baton run`): sbatch without -N gives one node, which would test one node and pass.
#[test]
fn a_job_of_one_node_without_a_rendered_count_refuses_to_start() {
    let d = tmp("render-sets-one-node");
    let o = baton(&[
        "render",
        p(&shipped("phase-a-node.yaml")),
        "-t",
        "slurm",
        "-o",
        p(&d),
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let script = d.join("phase-a-node.sbatch");
    assert!(read(&script).contains("SLURM_JOB_NUM_NODES"));
    let out = d.join("out");
    let r = Command::new("bash")
        .arg(&script)
        .arg(&out)
        .env("SLURM_JOB_ID", "7")
        .env("SLURM_JOB_NUM_NODES", "1")
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(code(&r), 2, "{}", show(&r));
    assert!(stderr(&r).contains("sbatch -N COUNT"), "{}", show(&r));
    assert!(stdout(&r).is_empty(), "{}", show(&r));
}

/// Issue #21 item 16: what the shipped plans and `render --help` say about rendering is true
/// now: node sets are driven (no "until baton drives node sets"), phase B's pair jobs are no
/// baseline for phase C, isolation's one bad node takes 5 rounds (docs/node-sets.md's table),
/// and `--baton` defaults to the plan's `launch.baton` (baton from PATH), not "this binary".
#[test]
fn render_docs_in_plans_and_help_are_current() {
    for plan in ["phase-a-node.yaml", "phase-b-pair.yaml", "isolate.yaml"] {
        let text = read(&shipped(plan));
        assert!(!text.contains("Until baton"), "{plan}");
        assert!(!text.contains("(same job ID)"), "{plan}");
        assert!(!text.contains("confirmed in 4 rounds"), "{plan}");
    }
    assert!(read(&shipped("isolate.yaml")).contains("confirmed in 5 rounds"));
    let table = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/node-sets.md"));
    assert!(
        table.contains("| 8 | 2 rounds / 4 sets | 5 / 9 |"),
        "the measured table moved"
    );
    let help = stdout(&baton(&["render", "--help"]));
    assert!(!help.contains("Default: this binary"), "{help}");
    assert!(
        help.contains("by name from\n          PATH") || help.contains("by name from PATH"),
        "{help}"
    );
    assert!(help.contains("--nodes <COUNT|HOSTLIST>"), "{help}");
}

/// A plain plan across eight nodes, with two environment sets.
const PLAIN8: &str = "version: 1
name: plain-8
backend: mpi
launch: { nodes: 8, ranks_per_node: 2 }
tests:
  - name: soak
    collective: all_reduce
    sizes: [1M]
    matrix:
      env: [ { NCCL_BATON_SET: x }, { NCCL_BATON_SET: y } ]
";

/// #21 item 6: a plain plan across several nodes (phase E) is one `baton run` inside its
/// allocation, as node sets are, so a node that dies is named in results.json, the report,
/// nodes.json and drain.sh rather than only in the job's `.out`; its environment sets run one
/// after another inside that run. One node, an image (pyxis) or several GPUs per process keep
/// the launcher step per environment set, and so do the srun and mpirun scripts.
#[test]
fn a_plain_multi_node_plan_renders_as_one_baton_run() {
    let d = tmp("render-plain-multi");
    let plan = write(&d, "plan.yaml", PLAIN8);
    let s = dry_run(&plan, &["-t", "slurm"]);
    assert!(s.contains("#SBATCH --nodes=8\n"), "{s}");
    assert!(s.contains("#SBATCH --ntasks-per-node=2\n"), "{s}");
    assert!(
        s.contains("\"$baton\" run \"$plan\" \"${run_args[@]}\""),
        "{s}"
    );
    assert!(!s.contains("exec srun") && !s.contains("--env-set"), "{s}");
    assert!(
        !s.contains("SLURM_JOB_NUM_NODES") && !s.contains("run_args+=(--nodes"),
        "the allocation is the node list: {s}"
    );
    assert!(s.contains("one step across 8 node(s)"), "{s}");
    assert!(
        stdout_line(&s).contains(
            "plain-8: 2 job(s) in 2 environment set(s), run by `baton run` in one batch job across 8 node(s)"
        ),
        "{s}"
    );
    for target in ["srun", "mpirun"] {
        let t = dry_run(&plan, &["-t", target]);
        assert!(t.contains("--env-set 1 -o \"$out/set-1\""), "{target}: {t}");
    }
    for (what, from, to) in [
        ("one node", "nodes: 8", "nodes: 1"),
        (
            "an image",
            "ranks_per_node: 2 }",
            "ranks_per_node: 2, slurm: { container_image: img } }",
        ),
        (
            "two GPUs per process",
            "backend: mpi\nlaunch: { nodes: 8, ranks_per_node: 2 }",
            "launch: { nodes: 8, ranks_per_node: 2, gpus_per_rank: 2 }",
        ),
    ] {
        let other = write(&d, "other.yaml", &PLAIN8.replace(from, to));
        let t = dry_run(&other, &["--trust-plan", "-t", "slurm"]);
        assert!(t.contains("--env-set 1 -o \"$out/set-1\""), "{what}: {t}");
    }
}

/// A node-set batch job asks for the tasks its steps start: phase A runs one process driving 8
/// GPUs per node, and each node set's step starts one GPU rank per GPU (8 tasks per node), so
/// the allocation must hold 8 tasks per node, or Slurm refuses every step.
#[test]
fn a_node_set_job_asks_for_the_tasks_its_steps_start() {
    let s = dry_run(
        &shipped("phase-a-node.yaml"),
        &["-t", "slurm", "--nodes", "8"],
    );
    assert!(s.contains("#SBATCH --ntasks-per-node=8\n"), "{s}");
    assert!(s.contains("#SBATCH --gpus-per-node=8\n"), "{s}");
    let s = dry_run(
        &shipped("phase-b-pair.yaml"),
        &["-t", "slurm", "--nodes", "8"],
    );
    assert!(s.contains("#SBATCH --ntasks-per-node=8\n"), "{s}");
    assert!(s.contains("#SBATCH --gpus-per-node=8\n"), "{s}");
}
