//! Node sets in the plan language (`nodes:`, `over:`, `outlier`) and what `baton check` and
//! `baton expand` show of them, and what the report and the run summary say of node sets run
//! over named hosts on this machine (`common::localsets`).

use crate::common;

use baton::plan::{Diagnostic, Level, NodeSource, Over, Pairing, Plan, parse_str};
use common::{baton_env, code, p, plan_dir, read, render_script, show, stderr, stdout, write};

const HEAD: &str = "version: 1\nname: t\n";

fn test_with(nodes: &str, over: &str, expect: &str) -> String {
    format!(
        "{HEAD}{nodes}tests:\n  - name: a\n    collective: all_reduce\n    sizes: [1G]\n{over}{expect}"
    )
}

fn errors(yaml: &str) -> Vec<Diagnostic> {
    let r = match parse_str("plan.yaml", yaml) {
        Ok(l) => l.report,
        Err(r) => r,
    };
    r.diagnostics
        .into_iter()
        .filter(|d| d.level == Level::Error)
        .collect()
}

#[track_caller]
fn one_error(yaml: &str, line: u64, text: &str) {
    let errs = errors(yaml);
    assert_eq!(errs.len(), 1, "expected one error, got {errs:#?}");
    assert!(
        errs[0].message.contains(text),
        "message {:?} lacks {text:?}",
        errs[0].message
    );
    assert_eq!(
        errs[0].pos.map(|p| p.line),
        Some(line),
        "{:?}",
        errs[0].message
    );
}

fn parsed(yaml: &str) -> Plan {
    match parse_str("plan.yaml", yaml) {
        Ok(l) => l.plan,
        Err(r) => panic!("{:#?}", r.diagnostics),
    }
}

#[test]
fn over_defaults_to_all_and_reads_every_form() {
    let over = |o: &str| parsed(&test_with("", o, "")).tests[0].over;
    assert_eq!(over(""), Over::All);
    assert_eq!(over("    over: each-node\n"), Over::EachNode);
    assert_eq!(over("    over: pairs\n"), Over::Pairs(Pairing::All));
    assert_eq!(
        over("    over: { pairs: ring }\n"),
        Over::Pairs(Pairing::Ring)
    );
    assert_eq!(
        over("    over: { pairs: { rounds: 3, seed: 7 } }\n"),
        Over::Pairs(Pairing::Random { rounds: 3, seed: 7 })
    );
    assert_eq!(
        over("    over: { pairs: { rounds: 2 } }\n"),
        Over::Pairs(Pairing::Random { rounds: 2, seed: 0 })
    );
    assert_eq!(over("    over: isolate\n"), Over::Isolate);
}

#[test]
fn bad_over_values_are_named() {
    one_error(
        &test_with("", "    over: pair\n", ""),
        7,
        "did you mean `pairs`",
    );
    one_error(
        &test_with("", "    over: { pairs: { rounds: 0 } }\n", ""),
        7,
        "`pairs.rounds` is 0",
    );
    one_error(
        &test_with("", "    over: { pairs: { seed: 1 } }\n", ""),
        7,
        "missing required key `rounds`",
    );
    one_error(
        &test_with("", "    over: { pairs: star }\n", ""),
        7,
        "`pairs` must be `all`, `ring`",
    );
    let errs = errors(&test_with("", "    over: { trios: 3 }\n", ""));
    assert!(
        errs.iter()
            .any(|e| e.message.contains("unknown key `trios`") && e.pos.map(|p| p.line) == Some(7)),
        "{errs:#?}"
    );
}

#[test]
fn nodes_expand_hostlists_and_check_them() {
    let plan = parsed(&test_with(
        "nodes:\n  hostlist: node[01-04]\n  exclude: node03\n  domains: [\"node[01-02]\", \"node04\"]\n",
        "    over: pairs\n",
        "",
    ));
    assert_eq!(
        plan.nodes.source,
        NodeSource::Hostlist(vec![
            "node01".into(),
            "node02".into(),
            "node03".into(),
            "node04".into()
        ])
    );
    assert_eq!(plan.nodes.exclude, ["node03"]);
    assert_eq!(plan.nodes.domains.len(), 2);
    assert_eq!(plan.nodes.planned_count(), Some(3));

    one_error(
        &test_with("nodes:\n  hostlist: node[01-04\n", "", ""),
        4,
        "`[` at column 5 is never closed",
    );
    one_error(
        &test_with("nodes:\n  hostlist: \"n1;reboot\"\n", "", ""),
        4,
        "`;` at column 3 cannot be part of a host name",
    );
    one_error(
        &test_with("nodes:\n  hostlist: n[1-2]\n  hostfile: h\n", "", ""),
        5,
        "both `hostlist` and `hostfile`",
    );
    one_error(
        &test_with("nodes:\n  hostlist: n[1-2]\n  exclude: n[1-2]\n", "", ""),
        5,
        "leaves no node",
    );
    one_error(
        &test_with(
            "nodes:\n  hostlist: n[1-4]\n  domains: [\"n[1-2]\", \"n[2-3]\"]\n",
            "",
            "",
        ),
        5,
        "`n2` is in domain 1 and in domain 2",
    );
    one_error(
        &test_with("nodes:\n  hostlist: n[1-2]\n  domains: [n7]\n", "", ""),
        5,
        "domain host `n7` is not in `nodes.hostlist`",
    );
    one_error(
        &test_with("nodes:\n  hostlist: n[1-100001]\n", "", ""),
        4,
        "more than",
    );
}

#[test]
fn over_is_checked_against_a_known_node_list() {
    one_error(
        &test_with("nodes:\n  hostlist: n1\n", "    over: pairs\n", ""),
        9,
        "needs at least 2 nodes",
    );
    one_error(
        &test_with("nodes:\n  hostlist: n[1-2000]\n", "    over: pairs\n", ""),
        9,
        "node sets; at most",
    );
    // From the allocation, the count is unknown until run time: no error.
    assert!(errors(&test_with("", "    over: pairs\n", "")).is_empty());
}

#[test]
fn outlier_needs_node_sets() {
    let plan = parsed(&test_with(
        "",
        "    over: pairs\n",
        "    expect:\n      - outlier: \"<= 10%\"\n",
    ));
    assert_eq!(plan.tests[0].expect[0].check.key(), "outlier");
    one_error(
        &test_with("", "", "    expect:\n      - outlier: \"<= 10%\"\n"),
        8,
        "`outlier` compares node sets",
    );
    one_error(
        &test_with(
            "",
            "    over: pairs\n",
            "    expect:\n      - outlier: \">= 10%\"\n",
        ),
        9,
        "largest allowed value",
    );
}

const PAIRS: &str = "version: 1\nname: sweep\nnodes:\n  hostlist: node[01-05]\ntests:\n  - name: whole\n    collective: all_reduce\n    sizes: [1G]\n  - name: pairs\n    collective: all_reduce\n    sizes: [1G]\n    over: pairs\n  - name: iso\n    collective: all_reduce\n    sizes: [1G]\n    over: isolate\n";

#[test]
fn check_shows_each_tests_node_sets() {
    let (_, plan, _) = plan_dir("nodesets-check", PAIRS);
    let o = baton_env(&["check", p(&plan)], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(
            "  pairs: over pairs on 5 nodes (node[01-05], from nodes.hostlist): 5 rounds, 10 node sets\n"
        ),
        "{out}"
    );
    assert!(out.contains("  iso: over isolate on 5 nodes"), "{out}");
    assert!(
        !out.contains("  whole:"),
        "`over: all` is today's single job: {out}"
    );
}

#[test]
fn expand_lists_rounds_with_hosts() {
    let (_, plan, _) = plan_dir("nodesets-expand", PAIRS);
    let o = baton_env(&["expand", p(&plan)], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("node sets\n"), "{out}");
    let rounds: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("    round "))
        .collect();
    assert_eq!(rounds.len(), 6, "5 pair rounds, 1 screening round: {out}");
    assert!(
        rounds[0].contains("(idle: "),
        "odd N has a bye: {}",
        rounds[0]
    );
    let o = baton_env(&["expand", p(&plan), "--format", "json"], &[]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let sets = &v["node_sets"];
    assert_eq!(sets[0]["test"], "pairs");
    assert_eq!(sets[0]["total_sets"], 10);
    assert_eq!(sets[0]["rounds"].as_array().unwrap().len(), 5);
    assert_eq!(sets[1]["adaptive"], true);
}

/// `expand` shows the ranks a job of a node-set test runs on — its set's nodes times the
/// plan's ranks per node — not `launch.nodes` × ranks per node (`ranks=2` for a test over all
/// 8 nodes).
#[test]
fn expand_shows_the_ranks_of_each_tests_sets() {
    let text = "version: 1\nname: t\nbackend: mpi\nlaunch: { ranks_per_node: 2 }\nnodes: { hostlist: \"n[1-8]\" }\ntests:\n  - { name: whole, collective: all_reduce, sizes: [1M] }\n  - { name: pairs, over: pairs, collective: all_reduce, sizes: [1M] }\n  - { name: each, over: each-node, collective: all_reduce, sizes: [1M] }\n  - { name: iso, over: isolate, collective: all_reduce, sizes: [1M] }\n";
    let (_, plan, _) = plan_dir("nodesets-expand-ranks", text);
    let o = baton_env(&["expand", p(&plan)], &[]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let out = stdout(&o);
    let line = |test: &str| {
        out.lines()
            .skip_while(|l| *l != test)
            .nth(1)
            .unwrap_or_else(|| panic!("no job {test}: {out}"))
            .to_string()
    };
    for (test, ranks) in [
        ("whole", " ranks=16 (8 nodes × 2) "),
        ("pairs", " ranks=4 per set (2 nodes × 2) "),
        ("each", " ranks=2 per set (1 node × 2) "),
        ("iso", " ranks=2 per node × each set's nodes "),
    ] {
        assert!(line(test).contains(ranks), "{}", line(test));
    }
    assert!(
        line("whole").contains("48.0 MiB total"),
        "{}",
        line("whole")
    );
    // Without a node list the count is the allocation's, known only at run time.
    let bare = text.replace("nodes: { hostlist: \"n[1-8]\" }\n", "");
    let (_, plan, _) = plan_dir("nodesets-expand-ranks-alloc", &bare);
    if std::env::var("SLURM_JOB_NODELIST").is_err() {
        let out = stdout(&baton_env(&["expand", p(&plan)], &[]));
        assert!(
            out.contains(" ranks=2 per node × the allocation's nodes "),
            "{out}"
        );
    }
}

#[test]
fn without_a_node_list_sets_come_from_the_allocation() {
    let text = "version: 1\nname: t\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1G]\n    over: each-node\n";
    let (_, plan, _) = plan_dir("nodesets-alloc", text);
    let o = baton_env(&["check", p(&plan)], &[]);
    let out = stdout(&o);
    // The test process may itself run inside an allocation; both answers name their source.
    if std::env::var("SLURM_JOB_NODELIST").is_err() {
        assert!(
            out.contains("  a: over each-node on nodes from the allocation at run time\n"),
            "{out}"
        );
    }
    let o = baton_env(&["check", p(&plan)], &[("SLURM_JOB_NODELIST", "gpu[1-3]")]);
    assert!(
        stdout(&o).contains("  a: over each-node on 3 nodes (gpu[1-3], from SLURM_JOB_NODELIST): 1 round, 3 node sets\n"),
        "{}",
        stdout(&o)
    );
    let o = baton_env(&["check", p(&plan)], &[("SLURM_JOB_NODELIST", "gpu[1-")]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("SLURM_JOB_NODELIST: `[` at column 4 is never closed"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn hostfiles_are_read_relative_to_the_plan() {
    let text = "version: 1\nname: t\nnodes:\n  hostfile: hosts.txt\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1G]\n    over: { pairs: ring }\n";
    let (dir, plan, _) = plan_dir("nodesets-hostfile", text);
    let o = baton_env(&["check", p(&plan)], &[]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("hostfile hosts.txt: "),
        "{}",
        stderr(&o)
    );
    write(
        &dir,
        "hosts.txt",
        "# rack 1\nn01 slots=8\nn02 slots=8\nn03\nn04\n",
    );
    let o = baton_env(&["check", p(&plan)], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains(
            "over pairs: ring on 4 nodes (n[01-04], from hostfile hosts.txt): 2 rounds, 4 node sets"
        ),
        "{}",
        stdout(&o)
    );
    let o = baton_env(&["check", p(&plan)], &[("SLURM_JOB_NODELIST", "n1")]);
    assert_eq!(code(&o), 0, "the plan's own list wins over the allocation");
}

#[test]
fn too_few_nodes_in_the_allocation_is_an_error() {
    let text = "version: 1\nname: t\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1G]\n    over: pairs\n";
    let (_, plan, _) = plan_dir("nodesets-few", text);
    let o = baton_env(&["check", p(&plan)], &[("SLURM_JOB_NODELIST", "n1")]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("test `a`: `over: pairs` needs at least 2 nodes"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn render_sweeps_node_sets_as_one_batch_job_and_refuses_plain_scripts() {
    let text = PAIRS.replace("nodes:\n", "launch:\n  ranks_per_node: 8\nnodes:\n");
    let (dir, plan, _) = plan_dir("nodesets-render", &text);
    // srun and mpirun scripts run one set of all nodes: they cannot drive node sets.
    let o = baton_env(
        &["render", p(&plan), "-t", "srun", "-o", p(&dir.join("job"))],
        &[],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("Render `-t slurm`"), "{}", stderr(&o));
    // The batch job allocates the plan's nodes and lets `baton run` drive the sets.
    let script = render_script(&dir, &plan, "slurm", &dir.join("job"));
    let text = read(&script);
    for want in [
        "#SBATCH --nodes=5\n",
        "#SBATCH --nodelist=\"node[01-05]\"\n",
        "#SBATCH --no-kill\n",
        "\"$baton\" run \"$plan\" \"${run_args[@]}\"",
        "#   pairs: over pairs on 5 nodes",
    ] {
        assert!(text.contains(want), "{want:?} not in {text}");
    }
    assert!(!text.contains("exec srun"), "no step of its own: {text}");
    let sc = std::process::Command::new("shellcheck")
        .arg(&script)
        .output();
    if let Ok(sc) = sc {
        assert!(sc.status.success(), "{}", show(&sc));
    }

    // `launch.nodes: 1` is one set's size, not the node list: each-node still renders as the
    // node-set batch job (issue #21: it was one plain step on one node, graded PASS), and
    // render ignores the allocation it runs in: the job's count is sbatch's.
    let one = "version: 1\nname: a\nlaunch:\n  nodes: 1\n  ranks_per_node: 8\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1G]\n    over: each-node\n";
    let (dir, plan, _) = plan_dir("nodesets-one", one);
    let o = baton_env(
        &["render", p(&plan), "-t", "slurm", "-o", p(&dir.join("job"))],
        &[("SLURM_JOB_NODELIST", "n[1-8]")],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = read(&dir.join("job/a.sbatch"));
    assert!(text.contains("\"$baton\" run \"$plan\""), "{text}");
    assert!(
        !text.contains("#SBATCH --nodes") && !text.contains("--nodelist"),
        "{text}"
    );
}

#[test]
fn run_over_node_sets_needs_a_node_list() {
    let text = "version: 1\nname: a\nbackend: mpi\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1K]\n    over: pairs\n";
    let (_, plan, out) = plan_dir("nodesets-nolist", text);
    let o = baton_env(&["run", p(&plan), "-o", p(&out)], &[]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("test `a` runs `over: pairs`, which needs the node list"),
        "{}",
        stderr(&o)
    );
    assert!(!out.join("results.json").exists(), "nothing ran");
    // --rerun-failed of a run that failed no node has nothing to do.
    let prev = out.parent().unwrap().join("prev");
    std::fs::create_dir_all(&prev).unwrap();
    write(
        &prev,
        "nodes.json",
        r#"{"passed":"n[1-4]","failed":"","suspect":"","nodes":[],"faults":[]}"#,
    );
    let o = baton_env(
        &["run", p(&plan), "-o", p(&out), "--rerun-failed", p(&prev)],
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("names no failed or suspect node"),
        "{}",
        stderr(&o)
    );
    write(&prev, "nodes.json", "{\"failed\": 3}");
    let o = baton_env(
        &[
            "run",
            p(&plan),
            "-o",
            p(&out),
            "--rerun-failed",
            p(&prev.join("nodes.json")),
        ],
        &[],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not a baton nodes.json"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn outlier_on_a_job_run_alone_is_skipped_not_passed() {
    // The fixtures are one 2-GPU node: one node set, no fleet to compare it with.
    let d = common::tmp("nodesets-outlier-grade");
    let r = common::healthy(&d);
    let pl = common::two_gpu_plan(
        &d,
        "one-set.yaml",
        &format!(
            "{}    over: each-node\n    expect:\n      - outlier: \"<= 10%\"\n        at: 8G\n",
            common::ALLREDUCE_SWEEP
        ),
    );
    let o = common::baton(&["grade", p(&pl), p(&r)]);
    assert_eq!(code(&o), 0, "{}", common::show(&o));
    let out = stdout(&o);
    assert!(
        out.contains(
            "ran as a single node set: `outlier` needs at least 3 sets of one shape to compare"
        ),
        "{out}"
    );
}

#[test]
fn nodes_flag_previews_sets_over_any_list() {
    let (_, plan, _) = plan_dir("nodesets-flag", PAIRS);
    let o = baton_env(&["check", p(&plan), "--nodes", "gpu[001-064]"], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("  pairs: over pairs on 64 nodes (gpu[001-064], from --nodes): 63 rounds, 2016 node sets\n"),
        "{}",
        stdout(&o)
    );
    let o = baton_env(&["expand", p(&plan), "--nodes", "gpu[1-3"], &[]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("--nodes: `[` at column 4 is never closed"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn check_warns_when_sets_exceed_slurms_step_limit() {
    let text = "version: 1\nname: a\nbackend: mpi\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1K]\n    over: pairs\n  - name: b\n    collective: all_reduce\n    sizes: [1K]\n    over: { pairs: { rounds: 10 } }\n";
    let (_, plan, _) = plan_dir("nodesets-steps", text);
    let o = baton_env(&["check", p(&plan)], &[("SLURM_JOB_NODELIST", "n[1-300]")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(
            "299 rounds, 44850 node sets — more steps than Slurm's default MaxStepCount (40000)"
        ),
        "{out}"
    );
    let b = out.lines().find(|l| l.contains("  b: ")).unwrap();
    assert!(!b.contains("MaxStepCount"), "10 random rounds fit: {b}");
}

/// A node-set batch job runs the plan's `launch.setup` before its `baton run` (which then starts
/// every set's srun step with the plan's step options), and only from a trusted plan.
#[test]
fn node_set_batch_script_runs_setup_before_baton_run() {
    let text = PAIRS.replace(
        "nodes:\n",
        "launch:\n  ranks_per_node: 8\n  setup: [\"module load baton\"]\nnodes:\n",
    );
    let (dir, plan, _) = plan_dir("nodesets-render-setup", &text);
    let o = baton_env(&["render", p(&plan), "-t", "slurm", "--dry-run"], &[]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`launch.setup` is shell"),
        "{}",
        stderr(&o)
    );
    let o = baton_env(
        &[
            "--trust-plan",
            "render",
            p(&plan),
            "-t",
            "slurm",
            "-o",
            p(&dir.join("job")),
        ],
        &[],
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    let s = read(&dir.join("job/sweep.sbatch"));
    let setup = s.find("\nmodule load baton\n").expect("the setup line");
    let run = s.find("\"$baton\" run \"$plan\"").unwrap();
    assert!(setup < run, "{s}");
}

/// Four named hosts over this machine (`common::localsets`), one rank each (so a rank per
/// orted: shared memory between orteds of one machine is not what a node has): every node
/// alone, every pair (busbw judged at 64K), then the whole list as one job. `broadcast`: its
/// busbw on one rank is not zero.
#[cfg(feature = "mpi")]
const LOCAL_SETS: &str = "version: 1
name: local-sets
backend: mpi
launch: { ranks_per_node: 1 }
nodes: { hostlist: \"n[1-4]\" }
defaults: { iters: 2, warmup: 1, timeout: 10s }
tests:
  - name: each
    over: each-node
    collective: broadcast
    sizes: [8, 256K]
    expect: [ { wrong: 0 } ]
  - name: pairs
    over: pairs
    collective: broadcast
    sizes: [8, 64K, 256K]
    expect:
      - wrong: 0
      - busbw: \">= 0.000001 GB/s\"
        at: 64K
  - name: whole
    collective: broadcast
    sizes: [64K]
    expect: [ { wrong: 0 } ]
";

/// `baton run` of [`LOCAL_SETS`] through the agent, in its own directory: (output dir, output).
#[cfg(feature = "mpi")]
fn run_local_sets(
    name: &str,
    dead: &[&str],
    hung: Option<&str>,
) -> (std::path::PathBuf, std::process::Output) {
    let d = common::tmp(name);
    let agent = common::localsets::agent(&d, dead, hung);
    let plan = write(&d, "p.yaml", LOCAL_SETS);
    let out = d.join("out");
    let o = common::localsets::baton_over(&agent, &["run", p(&plan), "-o", p(&out)]);
    (out, o)
}

/// A pair whose set hangs (a rank stops joining collectives): the run's summary names the
/// fault no node explains and says it hung, instead of "passed n[1-4]; failed none"; and the
/// report gives the sets that passed their numbers: per test and shape, at the size a criterion
/// judged, how many sets measured, median, min, percentiles and max, and the lowest sets by host.
#[cfg(feature = "mpi")]
#[test]
fn a_hung_pair_is_named_in_the_summary_and_passing_sets_carry_numbers() {
    let (out, o) = run_local_sets("nodesets-hung-pair", &[], Some("n2:1,n3:1"));
    let err = stderr(&o);
    assert_eq!(code(&o), 4, "a set timed out: {}", show(&o));
    let fault = err
        .lines()
        .find(|l| l.starts_with("baton: fault"))
        .unwrap_or_else(|| panic!("no fault in the summary: {err}"));
    assert!(
        fault.contains("link n2–n3") && fault.contains("hung") && fault.contains("round 1"),
        "{fault}"
    );
    let md = read(&out.join("report/report.md"));
    let pairs = &md[md.find("### pairs").expect("a pairs section")..];
    assert!(
        pairs.contains(
            "| Shape | Size | Sets measured | Median GB/s | Min | p10 | p90 | Max | Lowest |"
        ),
        "{pairs}"
    );
    let row = pairs
        .lines()
        .find(|l| l.starts_with("| 2 nodes | 64K | 5 of 6 |"))
        .unwrap_or_else(|| panic!("no row of the 5 pairs measured at the judged 64K: {pairs}"));
    assert!(
        row.contains("n[") && row.contains(" GB/s"),
        "lowest sets named: {row}"
    );
    let each = &md[md.find("### each").expect("an each section")..];
    assert!(
        each.lines()
            .any(|l| l.starts_with("| 1 node | 256K | 4 of 4 |")),
        "each-node is judged at its largest size without a bandwidth criterion: {each}"
    );
    assert!(md.contains("hung"), "the report's fault says hung too");
    // The verdicts count the pairs that passed under the test's own verdict (FAIL: a reader
    // who stops at this line must not read PASS); the hung one is printed in full.
    assert!(
        stdout(&o)
            .lines()
            .any(|l| l == "FAIL  pairs: 5 of 6 node sets passed"),
        "{}",
        stdout(&o)
    );
    let html = read(&out.join("report/report.html"));
    assert!(
        html.contains("<th>Lowest</th>") && html.contains("<td>5 of 6</td>"),
        "the HTML has the same table"
    );
    // The verdict JSON carries the same figures and still meets the committed schema.
    let plan = out.parent().unwrap().join("p.yaml");
    let g = baton_env(
        &[
            "grade",
            "--format",
            "json",
            p(&plan),
            p(&out.join("results.json")),
        ],
        &[],
    );
    let doc: serde_json::Value = serde_json::from_slice(&g.stdout).unwrap();
    let figures = doc["node_set_figures"]
        .as_array()
        .expect("node_set_figures");
    let pairs = figures
        .iter()
        .find(|f| f["test"] == "pairs")
        .expect("a pairs entry");
    assert_eq!(
        (
            &pairs["nodes"],
            &pairs["size_bytes"],
            &pairs["sets"],
            &pairs["measured"]
        ),
        (&2.into(), &65536.into(), &6.into(), &5.into())
    );
    assert_eq!(pairs["lowest"].as_array().unwrap().len(), 3);
    let schema: serde_json::Value =
        serde_json::from_str(&read(std::path::Path::new("schemas/verdict.schema.json"))).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
}

/// #21 item 13: the verdicts at the end of a node-set run count each test's passing sets on
/// one line instead of a PASS line per set job; `baton grade` of the same results says the same.
/// `over: all` is one set, the job itself: its line is the job's, as a plain run prints it.
#[cfg(feature = "mpi")]
#[test]
fn passing_sets_are_counted_per_test_not_listed() {
    let (out, o) = run_local_sets("nodesets-pass-count", &[], None);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let text = stdout(&o);
    let verdicts = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with("PASS") || l.starts_with("FAIL") || l.starts_with("WARN"))
            .map(|l| l.split("  [").next().unwrap_or(l).to_string())
            .collect()
    };
    assert_eq!(
        verdicts(&text),
        [
            "PASS  each: 4 of 4 node sets passed",
            "PASS  pairs: 6 of 6 node sets passed",
            "PASS  whole  broadcast float root 0"
        ],
        "{text}"
    );
    let plan = out.parent().unwrap().join("p.yaml");
    let g = baton_env(&["grade", p(&plan), p(&out.join("results.json"))], &[]);
    assert_eq!(verdicts(&stdout(&g)), verdicts(&text), "{}", show(&g));
}

/// A dead node (found dead in `each`, the first test): its pairs never run, and are grey
/// with a cross in the pair matrix, as its legend says — not red as if its links had failed;
/// and a test not run because of it says so rather than "no results for this job".
#[cfg(feature = "mpi")]
#[test]
fn a_dead_nodes_sets_read_not_run() {
    let (out, o) = run_local_sets("nodesets-dead-node", &["n3"], None);
    let svg = read(&out.join("report/charts/pairs-01.svg"));
    let title = |a: &str, b: &str| {
        svg.lines()
            .find(|l| l.contains(&format!("<title>{a} × {b}:")))
            .unwrap_or_else(|| panic!("no cell {a} × {b}: {svg}"))
            .to_string()
    };
    for (a, b) in [("n2", "n3"), ("n3", "n4"), ("n1", "n3")] {
        let cell = title(a, b);
        assert!(cell.contains("(not run: node dead)"), "{cell}");
    }
    assert!(
        !svg.contains("rgb(170,20,20)\"><title>"),
        "no pair failed: {svg}"
    );
    assert!(svg.contains(">not run: node dead<") && !svg.contains("grey did not run"));
    let out_text = stdout(&o);
    let whole = out_text
        .lines()
        .skip_while(|l| !l.contains(" whole "))
        .nth(1)
        .unwrap_or_else(|| panic!("no verdict of `whole`: {}", show(&o)));
    assert!(
        whole.contains("not run: n3 was proven dead earlier") && !whole.contains("no results"),
        "{whole}"
    );
}

/// Node sets over `mpirun -H` on this machine: Open MPI reaches each "host" through a fake ssh
/// agent that runs the command here and fails for the hosts named in `DEAD` (as ssh does for a
/// node that is down), so real launches of real ranks run without a cluster.
#[cfg(feature = "mpi")]
mod over_mpirun {
    use std::path::{Path, PathBuf};
    use std::process::Output;

    use super::common::localsets::{node, nodes_json};
    use super::common::{self, baton_env, code, p, read, show, write};

    const PAIRS: &str = "version: 1
name: f8
backend: mpi
launch: { ranks_per_node: 1 }
nodes: { hostlist: \"n[1-4]\" }
defaults: { iters: 2, warmup: 1, timeout: 20s }
tests:
  - name: pairs
    over: pairs
    collective: all_reduce
    sizes: [8]
    expect: [ { wrong: 0 } ]
";

    /// The plan `text` in a fresh directory with the fake ssh agent beside it.
    fn setup(name: &str, text: &str) -> (PathBuf, PathBuf) {
        let d = common::tmp(name);
        let agent = write(
            &d,
            "fakessh",
            // Each host's orted its own session directory (see common::localsets::agent).
            "#!/bin/bash\nh=$1; shift\ncase \" $DEAD \" in *\" $h \"*) exit 255;; esac\nexport TMPDIR=/tmp/baton-fakessh/$h\nmkdir -p \"$TMPDIR\"\nexec bash -c \"$*\"\n",
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
        let plan = write(&d, "plan.yaml", text);
        (d, plan)
    }

    /// `baton ARGS` with mpirun's ssh replaced by the fake agent, `dead` hosts unreachable.
    fn run(d: &Path, args: &[&str], dead: &str) -> Output {
        let agent = d.join("fakessh");
        baton_env(
            args,
            &[
                ("OMPI_MCA_plm_rsh_agent", p(&agent)),
                ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
                ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
                // Every "host" is an orted on this machine: Open MPI 4.1's orted maps its shared
                // topology into a hole of its address space it picked a moment earlier and, under load,
                // sometimes segfaults there (hwloc_shmem_topology_write). Each daemon reads its own.
                ("OMPI_MCA_rtc_hwloc_vmhole", "none"),
                ("DEAD", dead),
            ],
        )
    }

    fn set_hosts(dir: &Path) -> Vec<Vec<String>> {
        let r = baton::results::read(&dir.join("results.json")).unwrap();
        r.node_sets.iter().map(|s| s.hosts.clone()).collect()
    }

    /// #20 F8, #21 blocker 2: a rerun of a pairs failure pairs the failed node with nodes the
    /// earlier run passed, never runs it as a one-node "pair"; it still fails while the node
    /// is down and passes (paired) once it is back. nodes.json carries the rounds (F13).
    #[test]
    fn a_pairs_rerun_pairs_the_failed_node_with_nodes_that_passed() {
        let (d, plan) = setup("mpirun-rerun-pairs", PAIRS);
        let (a, b, c) = (d.join("a"), d.join("b"), d.join("c"));
        let o = run(&d, &["run", p(&plan), "-o", p(&a)], "n3");
        assert_ne!(code(&o), 0, "{}", show(&o));
        let n = nodes_json(&a);
        assert_eq!(n["failed"], "n3", "{n:#}");
        // F13: the rounds of each node's failing and passing sets.
        assert!(
            !node(&n, "n3")["failed_rounds"]
                .as_array()
                .unwrap()
                .is_empty(),
            "{n:#}"
        );
        assert!(
            !node(&n, "n1")["passed_rounds"]
                .as_array()
                .unwrap()
                .is_empty(),
            "{n:#}"
        );

        // Still down: every set of the rerun is a pair of n3 with a node that passed.
        let o = run(
            &d,
            &["run", p(&plan), "--rerun-failed", p(&a), "-o", p(&b)],
            "n3",
        );
        assert_ne!(code(&o), 0, "the node is still down: {}", show(&o));
        let sets = set_hosts(&b);
        assert!(!sets.is_empty(), "{}", show(&o));
        for s in &sets {
            assert_eq!(s.len(), 2, "a rerun set is a pair: {sets:?}");
        }
        assert!(
            sets.iter().any(|s| s.contains(&"n3".to_string())),
            "{sets:?}"
        );
        let n = nodes_json(&b);
        assert_eq!(n["failed"], "n3", "{n:#}");
        assert!(read(&b.join("drain.sh")).contains("NodeName='n3'"));

        // Back up: it passes, paired with two different known-good nodes.
        let o = run(
            &d,
            &["run", p(&plan), "--rerun-failed", p(&a), "-o", p(&c)],
            "",
        );
        assert_eq!(code(&o), 0, "{}", show(&o));
        let sets = set_hosts(&c);
        assert_eq!(sets.len(), 2, "{sets:?}");
        assert!(
            sets.iter()
                .all(|s| s.len() == 2 && s.contains(&"n3".to_string()))
        );
        assert_ne!(sets[0], sets[1], "two different partners: {sets:?}");
        let n = nodes_json(&c);
        assert_eq!(n["failed"], "", "{n:#}");
        assert_eq!(n["suspect"], "", "{n:#}");
        let why = node(&n, "n3")["reason"].as_str().unwrap().to_string();
        assert!(why.contains("passed in 2 sets"), "{why}");
        let partner = sets[0].iter().find(|h| *h != "n3").unwrap();
        let why = node(&n, partner)["reason"].as_str().unwrap().to_string();
        assert!(why.contains("known good"), "{why}");
    }

    /// A one-node `pairs` run is refused, and so is a rerun of a single node with no node the
    /// earlier run passed to pair it with (exit 2, nothing run).
    #[test]
    fn a_pair_of_one_node_is_refused() {
        let (d, plan) = setup("mpirun-one-node-pair", PAIRS);
        let out = d.join("out");
        let o = run(&d, &["run", p(&plan), "--nodes", "n1", "-o", p(&out)], "");
        assert_eq!(code(&o), 2, "{}", show(&o));
        assert!(show(&o).contains("needs at least 2 nodes"), "{}", show(&o));
        assert!(!out.join("results.json").exists());
        let prev = d.join("prev");
        std::fs::create_dir_all(&prev).unwrap();
        write(
            &prev,
            "nodes.json",
            r#"{"passed":"","failed":"n3","suspect":"","nodes":[],"faults":[]}"#,
        );
        let o = run(
            &d,
            &["run", p(&plan), "--rerun-failed", p(&prev), "-o", p(&out)],
            "",
        );
        assert_eq!(code(&o), 2, "{}", show(&o));
        assert!(
            show(&o).contains("passed no node to pair it with"),
            "{}",
            show(&o)
        );
        assert!(!out.join("results.json").exists());
        // `outlier` in a rerun needs the earlier run's fleet: its results beside nodes.json.
        write(
            &prev,
            "nodes.json",
            r#"{"passed":"n[1-2]","failed":"n3","suspect":"","nodes":[],"faults":[]}"#,
        );
        let outlier = PAIRS.replace(
            "[ { wrong: 0 } ]",
            "[ { wrong: 0 }, { outlier: \"<= 50%\" } ]",
        );
        let plan = write(&d, "outlier.yaml", &outlier);
        let o = run(
            &d,
            &["run", p(&plan), "--rerun-failed", p(&prev), "-o", p(&out)],
            "",
        );
        assert_eq!(code(&o), 2, "{}", show(&o));
        assert!(show(&o).contains("earlier run's sets"), "{}", show(&o));
    }

    /// #20 F12: a rerun of a run that failed and suspected no node runs nothing, exits 0 and
    /// writes no JUnit error.
    #[test]
    fn a_rerun_with_nothing_to_rerun_writes_no_junit_error() {
        let (d, plan) = setup("mpirun-rerun-nothing", PAIRS);
        let prev = write(&d, "nodes.json", r#"{"failed":"","suspect":""}"#);
        let out = d.join("out");
        let o = run(
            &d,
            &["run", p(&plan), "--rerun-failed", p(&prev), "-o", p(&out)],
            "",
        );
        assert_eq!(code(&o), 0, "{}", show(&o));
        assert!(show(&o).contains("nothing to rerun"), "{}", show(&o));
        let junit = out.join("junit.xml");
        assert!(
            !junit.exists() || !read(&junit).contains("<error"),
            "{}",
            read(&junit)
        );
    }

    /// #21 item 4: SIGTERM while pairs run: the run's junit.xml and report say what `baton
    /// grade` says of the same results afterwards — FAIL, with the sets cut short — never
    /// "PASS 0 of 0".
    #[test]
    fn sigterm_mid_run_grades_as_grade_does_afterwards() {
        let (d, plan) = setup(
            "mpirun-sigterm",
            &PAIRS.replace("    sizes: [8]\n", "    sizes: [8]\n    repeat: 40\n"),
        );
        let out = d.join("out");
        let agent = d.join("fakessh");
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(["run", p(&plan), "-o", p(&out)])
            .env("PATH", common::path_with_baton())
            .env("NO_COLOR", "1")
            .env("OMPI_MCA_plm_rsh_agent", &agent)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env_remove("BATON_FAULT")
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let t = std::time::Instant::now();
        while !std::fs::read_to_string(out.join("journal.jsonl"))
            .is_ok_and(|j| j.contains("\"set_ended\""))
        {
            assert!(t.elapsed().as_secs() < 60, "no set ended");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        common::procs::signal(child.id() as i32, libc::SIGTERM);
        let (rc, err) = common::procs::wait(child, std::time::Duration::from_secs(60));
        assert_eq!(rc, 5, "{err}");
        let line = common::verdicts::same_as_grade(env!("CARGO_BIN_EXE_baton"), &d, &plan, &out);
        assert!(line.contains("FAIL"), "{line}");
        let cases = common::verdicts::junit_cases(&read(&out.join("junit.xml")));
        assert!(cases.len() >= 2, "{cases:?}");
        // Nodes whose sets a signal stopped are not dead: nothing to drain.
        let drain = read(&out.join("drain.sh"));
        assert!(!drain.contains("scontrol update"), "{drain}");
    }

    /// #20 F14: outside Slurm, a host name Open MPI refuses (`_`) is refused before anything
    /// runs, instead of every node being probed dead and drained.
    #[test]
    fn host_names_open_mpi_refuses_are_refused_before_running() {
        let (d, plan) = setup("mpirun-underscore", &PAIRS.replace("n[1-4]", "a_b,n2,n3"));
        let out = d.join("out");
        let o = run(&d, &["run", p(&plan), "-o", p(&out)], "");
        assert_eq!(code(&o), 2, "{}", show(&o));
        assert!(
            show(&o).contains("refuses host names with `_`: a_b"),
            "{}",
            show(&o)
        );
        assert!(!out.join("drain.sh").exists());
        // `check` says so up front (a warning: under Slurm the same names run).
        let o = run(&d, &["check", p(&plan)], "");
        assert_eq!(code(&o), 0, "{}", show(&o));
        assert!(
            show(&o).contains("warning:") && show(&o).contains("a_b"),
            "{}",
            show(&o)
        );
        // Names that read as options or paths are no host names anywhere.
        for bad in ["-n1,n2", "n1,.n2", "n1,a..b"] {
            let (d, plan) = setup("mpirun-badname", &PAIRS.replace("n[1-4]", bad));
            let o = run(&d, &["check", p(&plan)], "");
            assert_eq!(code(&o), 2, "{bad}: {}", show(&o));
        }
    }

    /// #21 item 13: a node-set run shows its progress by round, a failed set in full (with
    /// where its output is), and counts the sets that completed instead of a line each.
    #[test]
    fn progress_is_shown_by_round_failures_in_full_passes_counted() {
        let (d, plan) = setup("mpirun-progress", PAIRS);
        let out = d.join("out");
        let o = run(&d, &["run", p(&plan), "-o", p(&out)], "n3");
        assert_ne!(code(&o), 0, "{}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        // Four nodes: three rounds of two pairs; n3's first pair fails, its later ones are
        // not run.
        for r in 1..=3 {
            assert!(
                err.contains(&format!("baton: pairs: round {r} of 3: ")),
                "round {r}: {err}"
            );
        }
        let failed: Vec<&str> = err.lines().filter(|l| l.contains("FAILED")).collect();
        assert_eq!(failed.len(), 1, "{err}");
        assert!(
            failed[0].contains("n3") && failed[0].contains("output: sets/00-pairs/r00"),
            "{err}"
        );
        assert!(err.contains("1 set(s) completed, 1 failed"), "{err}");
        assert!(err.contains("1 not run (dead node)"), "{err}");
        // No line per set that completed.
        assert!(!err.contains(": exit 0 ("), "{err}");
    }
}

/// `over: isolate` over four named hosts on this machine, one rank each, judged by `expect`
/// (plan-level keys in `top`): the plan, written into `d`.
#[cfg(feature = "mpi")]
fn isolate_plan(d: &std::path::Path, top: &str, expect: &str) -> std::path::PathBuf {
    write(
        d,
        "p.yaml",
        &format!(
            "version: 1\nname: iso\nbackend: mpi\nlaunch: {{ ranks_per_node: 1 }}\n\
             nodes: {{ hostlist: \"n[1-4]\" }}\ndefaults: {{ iters: 2, warmup: 1, timeout: 10s }}\n{top}\
             tests:\n  - name: iso\n    over: isolate\n    collective: broadcast\n    sizes: [64K]\n\
             \x20   expect:\n{expect}"
        ),
    )
}

/// A node set's hosts, comma-separated.
#[cfg(feature = "mpi")]
fn set_hosts(set: &serde_json::Value) -> String {
    let hosts: Vec<&str> = set["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    hosts.join(",")
}

/// The sets `isolate` ran, as `(round, hosts)`, from a run's results.
#[cfg(feature = "mpi")]
fn sets_run(out: &std::path::Path) -> Vec<(u64, String)> {
    let r: serde_json::Value = serde_json::from_str(&read(&out.join("results.json"))).unwrap();
    r["node_sets"]
        .as_array()
        .expect("node_sets")
        .iter()
        .map(|s| (s["round"].as_u64().unwrap(), set_hosts(s)))
        .collect()
}

/// The verdict `baton grade` gives each set the run ran, as `(round, hosts, status)`.
#[cfg(feature = "mpi")]
fn graded_sets(plan: &std::path::Path, out: &std::path::Path) -> Vec<(u64, String, String)> {
    let g = baton_env(
        &[
            "grade",
            "--format",
            "json",
            p(plan),
            p(&out.join("results.json")),
        ],
        &[],
    );
    let doc: serde_json::Value =
        serde_json::from_slice(&g.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&g)));
    doc["node_sets"]
        .as_array()
        .expect("node_sets")
        .iter()
        .map(|s| {
            let status = s["status"].as_str().unwrap().to_string();
            (s["round"].as_u64().unwrap(), set_hosts(s), status)
        })
        .collect()
}

/// #22: what steers `over: isolate` is the verdict the report gives. A `regression` whose
/// baseline holds every set only from other hosts fails every set in the final verdict (a
/// baseline is compared only with runs on the same hosts); the judge that chose the rounds must
/// fail them too, so isolation goes on examining the failed screening sets instead of ending
/// with "every set passed" rounds that the report then calls failed.
#[cfg(feature = "mpi")]
#[test]
fn isolation_is_steered_by_the_host_keyed_baseline_the_report_uses() {
    let d = common::tmp("nodesets-iso-keyed");
    let plan = isolate_plan(&d, "", "      - wrong: 0\n");
    let agent = common::localsets::agent(&d, &[], None);
    let first = d.join("first");
    let o = common::localsets::baton_over(&agent, &["run", p(&plan), "-o", p(&first)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    // The same measurements, as if taken on other machines.
    let mut base: serde_json::Value =
        serde_json::from_str(&read(&first.join("results.json"))).unwrap();
    for j in base["jobs"].as_array_mut().unwrap() {
        for r in j["layout"]["ranks"].as_array_mut().unwrap() {
            r["host"] = "elsewhere".into();
        }
    }
    write(&d, "base.json", &base.to_string());
    let plan = isolate_plan(
        &d,
        "baseline: base.json\n",
        "      - regression: \"<= 99%\"\n",
    );
    let out = d.join("out");
    let o = common::localsets::baton_over(&agent, &["run", p(&plan), "-o", p(&out)]);
    assert_eq!(code(&o), 1, "every set fails its regression: {}", show(&o));
    assert!(
        stdout(&o).contains("a baseline is compared only with runs on the same hosts"),
        "{}",
        show(&o)
    );
    let graded = graded_sets(&plan, &out);
    assert!(
        graded.iter().all(|(_, _, s)| s == "fail"),
        "every set fails: {graded:?}"
    );
    // Both screening sets failed, so isolation examines them: it never ends with the
    // survivors' round of all four nodes that follows a screen where everything passed.
    let ran = sets_run(&out);
    assert_eq!(ran.iter().filter(|(r, _)| *r == 1).count(), 2, "{ran:?}");
    assert!(
        !ran.iter().any(|(r, h)| *r == 2 && h == "n1,n2,n3,n4"),
        "isolation steered by verdicts the report does not give: {ran:?}"
    );
}

/// #22: a plan's own files steer `over: isolate` as they grade the report: a `relative`
/// criterion against another run's results beside the plan (a share no set reaches) fails
/// every set in both. (A plan-local hardware profile is the same lookup through the plan's
/// files, but profiles hold NCCL figures, which need a GPU: `backend: mpi` refuses them.)
#[cfg(feature = "mpi")]
#[test]
fn isolation_is_steered_by_the_plans_own_files() {
    let d = common::tmp("nodesets-iso-relative");
    let plan = isolate_plan(&d, "", "      - wrong: 0\n");
    let agent = common::localsets::agent(&d, &[], None);
    let first = d.join("first");
    let o = common::localsets::baton_over(&agent, &["run", p(&plan), "-o", p(&first)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    std::fs::copy(first.join("results.json"), d.join("phase-b.json")).unwrap();
    let plan = isolate_plan(
        &d,
        "",
        "      - relative: { to: iso, results: phase-b.json, busbw: \">= 100000%\" }\n",
    );
    let out = d.join("out");
    let o = common::localsets::baton_over(&agent, &["run", p(&plan), "-o", p(&out)]);
    assert_eq!(code(&o), 1, "every set fails its share: {}", show(&o));
    let graded = graded_sets(&plan, &out);
    assert!(
        graded.iter().all(|(_, _, s)| s == "fail"),
        "every set fails: {graded:?}"
    );
    let ran = sets_run(&out);
    assert!(
        !ran.iter().any(|(r, h)| *r == 2 && h == "n1,n2,n3,n4"),
        "isolation steered by verdicts the report does not give: {ran:?}"
    );
}
