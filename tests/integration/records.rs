//! An acceptance's files and records as an attacker leaves them (#36): a phase plan that is a
//! link out of the acceptance's directory, a phase plan's own files outside it, a `phase.json`
//! copied in from a passing run, a deleted start record, a link planted where a phase's
//! directory goes. Resumes run real `mpirun` on this machine (`--nodes localhost`, two ranks in
//! host memory, a second or two a phase).
#![cfg(feature = "mpi")]

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{code, p, read, show, tmp, write};

fn baton(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(args)
        .arg("--color=never")
        .env_remove("SLURM_JOB_NODELIST")
        .env_remove("SLURM_JOB_ID")
        .env_remove("BATON_FAULT")
        .env_remove("BATON_SITE")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .current_dir(dir)
        .output()
        .expect("baton runs")
}

/// A phase plan of two MPI ranks per node that passes (`wrong: 0`) or cannot (a busbw no
/// machine reaches).
fn phase_plan(passes: bool) -> String {
    let expect = if passes {
        "wrong: 0"
    } else {
        "busbw: \">= 100000 GB/s\""
    };
    format!(
        "version: 1\nname: a\nbackend: mpi\nlaunch: {{ ranks_per_node: 2 }}\ntests: [ {{ name: t, collective: all_reduce, sizes: [8], iters: 2, warmup: 1, expect: [ {{ {expect} }} ] }} ]\n"
    )
}

fn acceptance(plan: &str) -> String {
    format!("acceptance: 1\nname: x\nphases:\n  - name: A\n    plan: {plan}\n    over: each-node\n")
}

fn accept(d: &Path, file: &str, out: &str, nodes: &str) -> Output {
    baton(d, &["accept", file, "--nodes", nodes, "-o", out])
}

/// Finding 2 and 14: a phase plan that links out of the acceptance's directory (to
/// /etc/shadow-like secrets, to /proc) is refused before a byte is read, by `check` and
/// `accept`; one that does not parse is named by place only; `check ACCEPTANCE` refuses what a
/// phase plan names outside (hostfile, baseline, profile) as `check PLAN` does.
#[test]
fn a_phase_plan_obeys_the_plan_relative_file_rules() {
    let d = tmp("records-phase-plan");
    let acc_dir = d.join("acc");
    std::fs::create_dir_all(&acc_dir).unwrap();
    // A "shadow" file outside, whose lines would parse as unknown keys.
    let secret = write(&d, "shadow", "root:SECRET-HASH-1:20228:0:99999:7:::\n");
    std::os::unix::fs::symlink(&secret, acc_dir.join("out.yaml")).unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", acc_dir.join("env.yaml")).unwrap();
    write(&acc_dir, "acc-out.yaml", &acceptance("out.yaml"));
    write(&acc_dir, "acc-env.yaml", &acceptance("env.yaml"));
    for (file, trust) in [
        ("acc-out.yaml", false),
        ("acc-env.yaml", false),
        ("acc-env.yaml", true),
    ] {
        for cmd in ["check", "accept"] {
            let mut args = vec![];
            if trust {
                args.push("--trust-plan");
            }
            args.extend([cmd, file]);
            if cmd == "accept" {
                args.extend(["--nodes", "localhost", "-o", "out"]);
            }
            let o = baton(&acc_dir, &args);
            assert_eq!(code(&o), 2, "{args:?}: {}", show(&o));
            let all = show(&o);
            assert!(!all.contains("SECRET-HASH"), "{args:?}: {all}");
            assert!(!all.contains("PATH="), "{args:?}: {all}");
            assert!(
                all.contains("is outside") || all.contains("never holds a plan's file"),
                "{args:?}: {all}"
            );
            assert!(!acc_dir.join("out").exists(), "nothing ran: {args:?}");
        }
    }
    // Trusted, the link out is read, but what does not parse is named by place only.
    let o = baton(&acc_dir, &["--trust-plan", "check", "acc-out.yaml"]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("out.yaml:1:1"), "{err}");
    assert!(
        !err.contains("SECRET-HASH") && !err.contains("root:"),
        "{err}"
    );
    // The phase plan's own files: a hostfile, a baseline and a profile outside its directory.
    write(&d, "hosts", "secret-host-1\n");
    let named = phase_plan(true).replace(
        "tests:",
        "nodes: { hostfile: ../hosts }\nbaseline: ../base.json\ntests:",
    );
    write(&acc_dir, "named.yaml", &named);
    write(&acc_dir, "acc-named.yaml", &acceptance("named.yaml"));
    let o = baton(&acc_dir, &["check", "acc-named.yaml"]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("nodes.hostfile: ../hosts") && err.contains("baseline: ../base.json"),
        "{err}"
    );
    assert!(!err.contains("secret-host-1"), "{err}");
    // The same plan through `check PLAN` says the same of its baseline.
    let o = baton(&acc_dir, &["check", "named.yaml"]);
    assert_eq!(code(&o), 2, "{}", show(&o));
}

/// Finding 6: a `phase.json` copied from a passing run into a run whose results hold a failed
/// job is refused on resume, naming both the record's claim and what the results say; never
/// "passed", exit 0.
#[test]
fn a_phase_record_is_checked_against_its_results_on_resume() {
    let d = tmp("records-phase-json");
    write(&d, "pass.yaml", &phase_plan(true));
    write(&d, "fail.yaml", &phase_plan(false));
    write(&d, "acc-pass.yaml", &acceptance("pass.yaml"));
    write(&d, "acc-fail.yaml", &acceptance("fail.yaml"));
    let o = accept(&d, "acc-pass.yaml", "good", "localhost");
    assert_eq!(code(&o), 0, "{}", show(&o));
    let o = accept(&d, "acc-fail.yaml", "bad", "localhost");
    assert_eq!(code(&o), 1, "{}", show(&o));
    // A legitimate resume reads every finished phase back and agrees with it.
    let o = accept(&d, "acc-pass.yaml", "good", "localhost");
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(show(&o).contains("read back"), "{}", show(&o));
    let o = accept(&d, "acc-fail.yaml", "bad", "localhost");
    assert_eq!(code(&o), 1, "{}", show(&o));
    // The passing run's record over the failing run's.
    let record = d.join("bad/phases/01-A/phase.json");
    let passed = read(&d.join("good/phases/01-A/phase.json"));
    let tampered = passed.replace(
        "\"plan_file\": \"pass.yaml\"",
        "\"plan_file\": \"fail.yaml\"",
    );
    std::fs::write(&record, tampered).unwrap();
    let o = accept(&d, "acc-fail.yaml", "bad", "localhost");
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("phase.json says the phase passed")
            && err.contains("its results grade it failed"),
        "{err}"
    );
    assert!(!show(&o).contains("PASSED"), "{}", show(&o));
    // Linked in rather than copied: a record is never read through a link.
    std::fs::remove_file(&record).unwrap();
    std::os::unix::fs::symlink(d.join("good/phases/01-A/phase.json"), &record).unwrap();
    let o = accept(&d, "acc-fail.yaml", "bad", "localhost");
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(show(&o).contains("symbolic link"), "{}", show(&o));
}

/// Finding 15: with `acceptance.started.json` deleted, a resume on another node list is
/// refused (it cannot be told what the finished phases were run for), not a fresh start.
#[test]
fn a_missing_start_record_next_to_finished_phases_is_refused() {
    let d = tmp("records-start");
    write(&d, "pass.yaml", &phase_plan(true));
    write(&d, "acc.yaml", &acceptance("pass.yaml"));
    let o = accept(&d, "acc.yaml", "out", "localhost");
    assert_eq!(code(&o), 0, "{}", show(&o));
    std::fs::remove_file(d.join("out/acceptance.started.json")).unwrap();
    let o = accept(&d, "acc.yaml", "out", "localhost,ghost-node");
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no acceptance.started.json") && err.contains("01-A"),
        "{err}"
    );
    assert!(!d.join("out/acceptance.started.json").exists());
}

/// Finding 7: a link planted at `OUT/phases` (or at a phase's own directory) is refused and
/// its target never written; the same for a node-set run's `OUT/sets`.
#[test]
fn no_output_directory_is_reached_through_a_link_at_any_depth() {
    let d = tmp("records-links");
    write(&d, "pass.yaml", &phase_plan(true));
    write(&d, "acc.yaml", &acceptance("pass.yaml"));
    let victim = d.join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    for planted in ["phases", "phases/01-A"] {
        let out = d.join("out");
        let _ = std::fs::remove_dir_all(&out);
        if planted == "phases/01-A" {
            // A finished acceptance whose phase directory is then swapped for a link.
            let o = accept(&d, "acc.yaml", "out", "localhost");
            assert_eq!(code(&o), 0, "{}", show(&o));
            std::fs::remove_dir_all(out.join(planted)).unwrap();
        }
        let at = out.join(planted);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&victim, &at).unwrap();
        let o = accept(&d, "acc.yaml", "out", "localhost");
        assert_eq!(code(&o), 2, "{planted}: {}", show(&o));
        assert!(show(&o).contains("symbolic link"), "{}", show(&o));
        assert_eq!(
            std::fs::read_dir(&victim).unwrap().count(),
            0,
            "{planted}: written through the link"
        );
    }
    // `baton run` of a node-set plan: `OUT/sets` planted.
    let out = d.join("run-out");
    std::fs::create_dir_all(&out).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("sets")).unwrap();
    let each = phase_plan(true).replace("name: t,", "name: t, over: each-node,");
    write(&d, "each.yaml", &each);
    let o = baton(
        &d,
        &["run", "each.yaml", "--nodes", "localhost", "-o", p(&out)],
    );
    assert_ne!(code(&o), 0, "{}", show(&o));
    assert!(show(&o).contains("symbolic link"), "{}", show(&o));
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
}
