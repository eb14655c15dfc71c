//! Rendered scripts that survive being cut short: a stable results directory (`render
//! --results DIR`), `--resume` for a requeued or resubmitted job (requeue-safe: `#SBATCH
//! --requeue` only then, output appended), and a grading step that folds a killed step's
//! journal into its `results.json`, so no reader but baton finds a run of 0 jobs.

use crate::common;

use common::render::{MPI_PLAN, dry_run};
use common::{p, tmp, write};

/// `--results DIR --resume`: every target's OUT defaults to DIR (absolute), every step and the
/// node-set `baton run` resume, and the batch job may be requeued into it. Without them the
/// scripts are as before: a new `%x-%j` directory each time and `--no-requeue`.
#[test]
fn results_and_resume_make_every_script_continue_in_one_directory() {
    let d = tmp("render-resume-text");
    let plan = write(&d, "plan.yaml", MPI_PLAN);
    let want = d.join("acceptance");
    let s = dry_run(
        &plan,
        &["-t", "slurm,srun,mpirun", "--results", p(&want), "--resume"],
    );
    let quoted = format!("'{}'", want.display());
    assert_eq!(
        s.matches(&format!("out=${{1:-{quoted}}}\n")).count(),
        3,
        "{s}"
    );
    assert_eq!(
        s.matches("--env-set 0 --resume -o \"$out/set-0\"").count(),
        3,
        "{s}"
    );
    assert!(
        s.contains("#SBATCH --requeue\n#SBATCH --open-mode=append\n"),
        "{s}"
    );
    assert!(!s.contains("--no-requeue"), "{s}");
    assert!(s.contains("SLURM_RESTART_COUNT"), "{s}");

    let s = dry_run(&plan, &["-t", "slurm"]);
    assert!(s.contains("#SBATCH --no-requeue\n"), "{s}");
    assert!(!s.contains("--resume"), "{s}");
    assert!(
        s.contains("out=${1:-\"$PWD/${SLURM_JOB_NAME:-$name}-${SLURM_JOB_ID:-$$}\"}"),
        "{s}"
    );

    // The node-set batch job hands --resume to its `baton run`.
    let sets = write(
        &d,
        "sets.yaml",
        "version: 1\nname: sets\nbackend: mpi\ntests:\n  - name: a\n    over: pairs\n    collective: all_reduce\n    sizes: [8]\n",
    );
    let s = dry_run(
        &sets,
        &[
            "-t",
            "slurm",
            "--nodes",
            "4",
            "--results",
            "rel/dir",
            "--resume",
        ],
    );
    assert!(s.contains("run_args+=(--resume)\n"), "{s}");
    let abs = std::env::current_dir().unwrap().join("rel/dir");
    assert!(
        s.contains(&format!("out=${{1:-'{}'}}\n", abs.display())),
        "--results is made absolute: {s}"
    );
}

#[cfg(feature = "mpi")]
mod with_mpi {
    use std::path::Path;
    use std::process::{Command, Output};

    use super::*;
    use baton::results::{self, JobStatus};
    use common::{code, path_with_baton, show, stderr};

    /// Two jobs; rank 0 dies (abort) at the second one's first timed op when `crash` is set.
    const TWO_JOBS: &str = "version: 1
name: cut-short
backend: mpi
launch: { nodes: 1, ranks_per_node: 2 }
defaults: { timeout: 20s, iters: 5, warmup: 1 }
tests:
  - name: first
    collective: all_reduce
    sizes: [8, 1K]
    expect: [ { wrong: 0 } ]
  - name: second
    collective: broadcast
    sizes: [8, 1K]
    expect: [ { wrong: 0 } ]
";

    /// Runs the rendered `script` into `out` (`None`: its own default OUT), rank 0 crashing in
    /// job `second` when `crash`; mpirun forwards BATON_FAULT to the ranks.
    fn run(script: &Path, out: Option<&Path>, crash: bool) -> Output {
        let mut c = Command::new("timeout");
        c.arg("300")
            .arg(script)
            .args(out)
            .env("PATH", path_with_baton())
            .env_remove("SLURM_JOB_ID")
            .env_remove("BATON_FAULT");
        if crash {
            c.env("BATON_FAULT", "crash:rank=0:job=second");
        }
        c.output().expect("the script runs")
    }

    fn render_into(d: &Path, extra: &[&str]) -> std::path::PathBuf {
        let plan = write(d, "plan.yaml", TWO_JOBS);
        let scripts = d.join("s");
        let mut args = vec!["render", p(&plan), "-t", "mpirun", "-o", p(&scripts)];
        args.extend(extra);
        let o = common::baton(&args);
        assert_eq!(code(&o), 0, "{}", show(&o));
        d.join("s/cut-short-mpirun.sh")
    }

    /// A step whose rank 0 was killed leaves a journal and a `results.json` of 0 jobs; the
    /// script's grading step folds the journal in, so the file itself holds what was measured.
    #[test]
    fn the_grading_step_folds_a_killed_steps_journal() {
        let d = tmp("render-fold");
        let out = d.join("out");
        let script = render_into(&d, &[]);
        let r = run(&script, Some(&out), true);
        assert_eq!(code(&r), 3, "{}", show(&r));
        let folded = results::read_file(&out.join("set-0/results.json")).unwrap();
        let first = folded.job("first").unwrap_or_else(|| {
            panic!(
                "set-0/results.json holds no job `first`: {folded:?}\n{}",
                show(&r)
            )
        });
        assert_eq!(first.status, JobStatus::Completed);
        assert!(out.join("junit.xml").is_file());
    }

    /// Rendered with `--results DIR --resume`, a script cut short (rank 0 killed) and run again
    /// continues: the completed job is kept as measured, only the other runs, and the verdict
    /// covers both. No earlier results are kept aside: it is one run.
    #[test]
    fn a_script_rendered_with_resume_continues_where_it_stopped() {
        let d = tmp("render-resume-run");
        let out = d.join("acceptance");
        let script = render_into(&d, &["--results", p(&out), "--resume"]);
        let r = run(&script, None, true);
        assert_eq!(code(&r), 3, "{}", show(&r));
        let before = results::read(&out.join("set-0/results.json")).unwrap();
        let first_before = serde_json::to_string(before.job("first").unwrap()).unwrap();

        let r = run(&script, None, false);
        assert_eq!(code(&r), 0, "{}", show(&r));
        assert!(
            stderr(&r).contains("resuming: 1 job(s) already complete, 1 to run"),
            "{}",
            show(&r)
        );
        let after = results::read_file(&out.join("set-0/results.json")).unwrap();
        assert_eq!(
            serde_json::to_string(after.job("first").unwrap()).unwrap(),
            first_before,
            "the completed job is kept as measured"
        );
        assert_eq!(after.job("second").unwrap().status, JobStatus::Completed);
        let aside: Vec<_> = std::fs::read_dir(out.join("set-0"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("results.") && n != "results.json")
            .collect();
        assert!(aside.is_empty(), "{aside:?}");
        assert!(
            common::stdout(&r).contains("plan cut-short: PASS — 2 job(s)"),
            "{}",
            show(&r)
        );
    }
}
