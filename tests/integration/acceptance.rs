//! The acceptance file as `baton check` and `baton accept` read it, before anything runs: the
//! shipped acceptances check clean, mistakes are located, and a phase plan that cannot run
//! stops `baton accept` before its first phase.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{code, show, tmp, write};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn baton(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(args)
        .arg("--color=never")
        .env_remove("SLURM_JOB_NODELIST")
        .env_remove("SLURM_JOB_ID")
        .current_dir(dir)
        .output()
        .expect("baton runs")
}

#[test]
fn the_shipped_acceptances_check_clean_with_every_phase_plan() {
    for (file, phases) in [
        ("acceptance/sim-cpu.yaml", 5),
        ("acceptance/nccl-8gpu.yaml", 6),
    ] {
        let o = baton(root(), &["check", file]);
        assert_eq!(code(&o), 0, "{file}: {}", show(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.starts_with(&format!("{file}: ok (acceptance ")),
            "{out}"
        );
        assert!(out.contains(&format!("{phases} phases")), "{out}");
        assert!(o.stderr.is_empty(), "{file}: {}", show(&o));
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        assert_eq!(
            text.lines().next(),
            Some("# yaml-language-server: $schema=../schemas/acceptance.schema.json")
        );
    }
}

#[test]
fn a_mistake_in_the_acceptance_file_is_located_exit_2() {
    let d = tmp("accept-bad");
    write(&d, "a.yaml", PLAN_A);
    let f = write(
        &d,
        "acc.yaml",
        "acceptance: 1\nname: x\nphases:\n  - name: A\n    plan: a.yaml\n  - name: C\n    plan: a.yaml\n    criteria:\n      - relative: { to: B }\n",
    );
    let o = baton(&d, &["check", f.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("acc.yaml:9") && err.contains("`B` is no earlier phase"),
        "{err}"
    );
}

const PLAN_A: &str =
    "version: 1\nname: a\ntests: [ { name: t, collective: all_reduce, sizes: [8] } ]\n";

/// `baton accept FILE --nodes n[1-2] -o OUT EXTRA…` in `d`.
fn accept_over_two(d: &Path, f: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["accept", f.to_str().unwrap(), "--nodes", "n[1-2]"];
    args.extend_from_slice(extra);
    args.extend(["-o", out.to_str().unwrap()]);
    baton(d, &args)
}

#[test]
fn a_phase_plan_that_does_not_check_stops_accept_before_any_phase() {
    let d = tmp("accept-bad-plan");
    write(&d, "a.yaml", PLAN_A);
    write(
        &d,
        "e.yaml",
        "version: 1\nname: e\ntests: [ { name: t, collective: all_reduse, sizes: [8] } ]\n",
    );
    let f = write(
        &d,
        "acc.yaml",
        "acceptance: 1\nname: x\nphases:\n  - name: A\n    plan: a.yaml\n  - name: E\n    plan: e.yaml\n",
    );
    let out = d.join("out");
    let o = accept_over_two(&d, &f, &out, &[]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("phase E") && err.contains("e.yaml:3"), "{err}");
    assert!(!out.exists(), "nothing ran, nothing was written");
    let o = baton(&d, &["accept", f.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", show(&o));
}

/// `--metrics` of an acceptance is a directory (a file per phase plan): a file is refused
/// before any phase runs.
#[test]
fn accept_metrics_names_a_directory_or_stops_before_any_phase() {
    let d = tmp("accept-metrics-file");
    write(&d, "a.yaml", PLAN_A);
    let f = write(
        &d,
        "acc.yaml",
        "acceptance: 1\nname: x\nphases:\n  - name: A\n    plan: a.yaml\n",
    );
    let out = d.join("out");
    let m = d.join("m.prom");
    let o = accept_over_two(&d, &f, &out, &["--metrics", m.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--metrics") && err.contains("directory"),
        "{err}"
    );
    assert!(
        !out.exists() && !m.exists(),
        "nothing ran, nothing was written"
    );
}

/// The one-GPU acceptance a newcomer writes on one H200: a busbw floor and `steady` on a phase
/// whose jobs run on one rank. busbw is 0 by definition there: the floor can only ever fail (an
/// error at its line in the plan), and so can `steady`, whose median of 0 is no reference (an
/// error at its line in the acceptance); so can `steady` over jobs that run once. Both exit 2.
/// And the guide's old phase D rule, alltoall within 15% of all_reduce, which fails every healthy
/// multi-node cluster, is warned of where it is written.
#[test]
fn check_refuses_or_warns_of_criteria_a_one_rank_phase_or_a_fabric_rules_out() {
    let d = tmp("accept-never");
    let one_rank = "version: 1\nname: one\nlaunch: { nodes: 1, ranks_per_node: 1 }\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [1G]\n    repeat: 3\n    expect:\n      - wrong: 0\n";
    write(&d, "one.yaml", one_rank);
    write(
        &d,
        "floor.yaml",
        &format!("{one_rank}      - busbw: \">= 400 GB/s\"\n"),
    );
    let acc = "acceptance: 1\nname: one-gpu\nphases:\n  - name: E\n    plan: PLAN\n    criteria:\n      - steady: \"<= 5%\"\n";
    let f = write(&d, "floor-acc.yaml", &acc.replace("PLAN", "floor.yaml"));
    let o = baton(&d, &["check", f.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("floor.yaml:11") && err.contains("`busbw` can only ever fail"),
        "{err}"
    );
    let f = write(&d, "steady-acc.yaml", &acc.replace("PLAN", "one.yaml"));
    let o = baton(&d, &["check", f.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("steady-acc.yaml:7:9")
            && err.contains("`steady` can only ever fail: plan one runs each job on one rank"),
        "{err}"
    );
    // Run once, on 2 ranks: `steady` has no two repeats to compare.
    let once = one_rank
        .replace("ranks_per_node: 1", "ranks_per_node: 2")
        .replace("    repeat: 3\n", "");
    write(&d, "once.yaml", &once);
    let f = write(&d, "once-acc.yaml", &acc.replace("PLAN", "once.yaml"));
    let o = baton(&d, &["check", f.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("once-acc.yaml:7:9") && err.contains("runs every job once"),
        "{err}"
    );
    // The guide's phase D rule.
    write(&d, "two.yaml", &once);
    let f = write(
        &d,
        "d-acc.yaml",
        "acceptance: 1\nname: d\nphases:\n  - name: C\n    plan: two.yaml\n  - name: D\n    plan: two.yaml\n    criteria:\n      - relative: { to: C, collective: alltoall, of: all_reduce, busbw: \">= 85%\" }\n",
    );
    let o = baton(&d, &["check", f.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("d-acc.yaml:9:9")
            && err.contains("alltoall at 85% of all_reduce holds only inside one NVLink domain"),
        "{err}"
    );
}
