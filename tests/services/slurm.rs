//! Rendered scripts on the real engines: Slurm (sbatch, srun with PMIx) and Open MPI's mpirun.
//! The Slurm tests need a running cluster (`scripts/slurm-local start`) and print
//! `SKIPPED: no slurm` without one (a failure in CI: `CI=true`); the mpirun tests only need
//! Open MPI.
#![cfg(feature = "mpi")]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use baton::results::{self, JobStatus, Results};
use common::{
    baton_in, code, mpi_plan, p, read, render_script, run_script, show, stderr, stdout, tmp, write,
};

/// Whether a Slurm controller answers (asked once: without one, sinfo retries for seconds);
/// prints the skip line when not (fails in CI: [`common::missing`]).
fn slurm_up() -> bool {
    static UP: OnceLock<bool> = OnceLock::new();
    let up = *UP.get_or_init(|| {
        Command::new("timeout")
            .args(["15", "sinfo", "-h", "-o", "%T"])
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
    });
    if !up {
        common::missing(
            "slurm",
            "BATON_REQUIRE_SLURM",
            "sinfo does not answer (run scripts/slurm-local start)",
        );
    }
    up
}

/// A plan of two environment sets (one srun or mpirun step each) whose values need quoting.
fn two_set_plan(dir: &Path, name: &str, launch: &str, expect: &str) -> PathBuf {
    write(
        dir,
        "plan.yaml",
        &format!(
            "version: 1
name: {name}
backend: mpi
launch: {launch}
defaults: {{ timeout: 30s }}
tests:
  - name: t
    collective: [all_reduce, all_gather]
    sizes: {{ from: 8, to: 64K, factor: 8 }}
    matrix:
      env: [ {{ NCCL_BATON_SET: \"a b\" }}, {{ NCCL_BATON_SET: \"$(c) 'd'\" }} ]
    expect: [ {expect} ]
"
        ),
    )
}

/// Both sets' results: every job completed on `ranks` ranks, each set saw its own variable.
fn assert_two_sets(out: &Path, ranks: u64) {
    for (k, value) in [(0, "a b"), (1, "$(c) 'd'")] {
        let r: Results = results::read(&out.join(format!("set-{k}/results.json")))
            .unwrap_or_else(|e| panic!("set {k}: {e}"));
        assert_eq!(r.jobs.len(), 2, "set {k}");
        for j in &r.jobs {
            assert_eq!(j.status, JobStatus::Completed, "{}", j.id);
            assert_eq!(j.layout.nranks, ranks, "{}", j.id);
            assert_eq!(j.env.get("NCCL_BATON_SET").map(String::as_str), Some(value));
        }
        assert_eq!(
            r.environment
                .variables
                .get("NCCL_BATON_SET")
                .map(String::as_str),
            Some(value),
            "set {k}: the variable the ranks' process saw"
        );
    }
    let junit = read(&out.join("junit.xml"));
    assert_eq!(
        junit.matches("<testsuite name=").count(),
        4,
        "one suite per job: {junit}"
    );
    assert!(!junit.contains("<failure"), "{junit}");
    assert!(out.join("report/report.html").is_file());
}

fn scontrol_job(id: &str) -> String {
    let o = Command::new("scontrol")
        .args(["show", "job", id])
        .output()
        .expect("scontrol runs");
    stdout(&o)
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
fn sbatch_runs_the_rendered_script_to_completion() {
    if !slurm_up() {
        return;
    }
    let d = tmp("slurm-sbatch");
    let plan = two_set_plan(
        &d,
        "sbatch-two",
        "{ nodes: 1, ranks_per_node: 2 }",
        "{ wrong: 0 }",
    );
    // Submitted from a directory other than the scripts': the job must find everything.
    let submit_dir = d.join("submit here");
    std::fs::create_dir_all(&submit_dir).unwrap();
    let o = baton_in(
        &submit_dir,
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
    let job = scontrol_job(&id);
    assert!(job.contains("JobState=COMPLETED"), "{job}");
    assert!(job.contains("ExitCode=0:0"), "{job}");
    let log = read(&submit_dir.join(format!("sbatch-two-{id}.out")));
    assert!(log.contains("plan sbatch-two: PASS"), "{log}");
    assert_two_sets(&submit_dir.join(format!("sbatch-two-{id}")), 2);
}

#[test]
fn a_failing_criterion_fails_the_batch_job() {
    if !slurm_up() {
        return;
    }
    let d = tmp("slurm-failing");
    let plan = mpi_plan(
        &d,
        "too-fast",
        "launch: { nodes: 1, ranks_per_node: 2 }\n",
        "    sizes: [1M]\n    expect: [ { time: \"<= 0.001 us\" } ]\n",
    );
    // --results: CI names where the results land instead of parsing a job ID.
    let results = d.join("nightly results");
    let o = baton_in(
        &d,
        &[
            "render",
            p(&plan),
            "-t",
            "slurm",
            "--submit",
            "--wait",
            "--results",
            p(&results),
        ],
    );
    assert_eq!(code(&o), 1, "{}", show(&o));
    let id = job_id(&o);
    let job = scontrol_job(&id);
    assert!(job.contains("JobState=FAILED"), "{job}");
    assert!(job.contains("ExitCode=1:0"), "{job}");
    assert!(
        stdout(&o).contains(&format!("results in {}", results.display())),
        "{}",
        show(&o)
    );
    let junit = read(&results.join("junit.xml"));
    assert_eq!(junit.matches("<failure").count(), 1, "{junit}");
}

#[test]
fn sbatch_rejecting_the_script_shows_its_error_and_exits_3() {
    if !slurm_up() {
        return;
    }
    let d = tmp("slurm-rejected");
    let plan = mpi_plan(
        &d,
        "nowhere",
        "launch: { nodes: 1, ranks_per_node: 2, slurm: { partition: no-such-partition } }\n",
        "    sizes: [8]\n",
    );
    let o = baton_in(&d, &["render", p(&plan), "-t", "slurm", "--submit"]);
    assert_eq!(code(&o), 3, "{}", show(&o));
    let e = stderr(&o);
    assert!(e.contains("sbatch rejected"), "{e}");
    assert!(
        e.contains("sbatch: error:") && e.contains("no-such-partition"),
        "sbatch's own message: {e}"
    );
}

#[test]
fn srun_pmix_starts_baton_mpi_as_two_ranks() {
    if !slurm_up() {
        return;
    }
    let list = Command::new("srun").arg("--mpi=list").output().unwrap();
    let plugins = format!("{}{}", stdout(&list), stderr(&list));
    assert!(
        plugins.contains("pmix"),
        "this Slurm has no pmix MPI plugin (Debian: slurm-wlm-basic-plugins); srun --mpi=list: {plugins}"
    );
    let d = tmp("slurm-srun");
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/examples/quickstart.yaml");
    let out = d.join("out");
    let o = Command::new("timeout")
        .args(["120", "srun", "--mpi=pmix", "-n", "2"])
        .arg(env!("CARGO_BIN_EXE_baton-mpi"))
        .args(["run", p(&plan), "-o", p(&out)])
        .env_remove("BATON_FAULT")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", show(&o));
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs.len(), 2);
    for j in &r.jobs {
        assert_eq!(j.status, JobStatus::Completed, "{}", j.id);
        assert_eq!(j.layout.nranks, 2, "{}", j.id);
    }
    assert!(
        r.environment.variables.contains_key("SLURM_JOB_ID"),
        "ran inside a Slurm job: {:?}",
        r.environment.variables
    );
}

#[test]
fn srun_script_runs_each_set_as_its_own_step() {
    if !slurm_up() {
        return;
    }
    let d = tmp("slurm-srun-script");
    let plan = two_set_plan(
        &d,
        "srun-two",
        "{ nodes: 1, ranks_per_node: 2, slurm: { time: \"00:05:00\" } }",
        "{ wrong: 0 }",
    );
    let script = render_script(&d, &plan, "srun", &d.join("scripts"));
    let out = d.join("out");
    run_script(&script, &out, 0);
    assert_two_sets(&out, 2);
}

/// The rendered mpirun script: `-np 2` placed with a hostfile (`slots=2`).
#[test]
fn mpirun_script_np2_with_a_hostfile() {
    let d = tmp("mpirun-np2");
    write(&d, "hosts", "# the plan's hosts\nlocalhost slots=99\n\n");
    let plan = two_set_plan(
        &d,
        "np-two",
        "{ nodes: 1, ranks_per_node: 2, mpirun: { hostfile: hosts } }",
        "{ wrong: 0 }",
    );
    let script = render_script(&d, &plan, "mpirun", &d.join("scripts"));
    let out = d.join("out");
    run_script(&script, &out, 0);
    assert_eq!(read(&out.join("hostfile")), "localhost slots=2\n");
    assert_two_sets(&out, 2);
}

/// `-np 4` on a machine with fewer cores: the plan's mpirun extra `--oversubscribe`.
#[test]
fn mpirun_script_np4_oversubscribed() {
    let d = tmp("mpirun-np4");
    let plan = two_set_plan(
        &d,
        "np-four",
        "{ nodes: 1, ranks_per_node: 4, mpirun: { extra: [\"--oversubscribe\"] } }",
        "{ wrong: 0 }",
    );
    let script = render_script(&d, &plan, "mpirun", &d.join("scripts"));
    assert!(read(&script).contains("mpirun_args+=('--oversubscribe')"));
    let out = d.join("out");
    run_script(&script, &out, 0);
    assert_two_sets(&out, 4);
}
