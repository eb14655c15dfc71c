//! `baton render` through the real binary: what the scripts contain, what is refused and why,
//! and (with `--features mpi`) a rendered mpirun script run against a plan built to inject.

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::render::{MPI_PLAN, dry_run, render};
use common::{baton, code, mpi_plan, p, show, stderr, stdout, tmp, write};

/// A YAML scalar holding exactly `s` (JSON strings are YAML double-quoted scalars).
fn yaml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

#[test]
fn render_writes_executable_scripts_and_prints_them_and_the_job_count() {
    let d = tmp("render-writes");
    let plan = write(&d, "plan.yaml", MPI_PLAN);
    let out = d.join("scripts");
    let text = stdout(&render(
        &plan,
        &["--target", "slurm,srun,mpirun", "-o", p(&out)],
        0,
    ));
    for (file, target) in [
        ("two-sets.sbatch", "slurm"),
        ("two-sets-srun.sh", "srun"),
        ("two-sets-mpirun.sh", "mpirun"),
    ] {
        let path = out.join(file);
        assert!(
            text.contains(&format!("wrote {} ({target})", path.display())),
            "{text}"
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "{file} is executable");
    }
    assert!(
        text.contains("two-sets: 4 job(s) in 2 environment set(s)"),
        "{text}"
    );
}

#[test]
fn dry_run_prints_the_scripts_and_writes_nothing() {
    let d = tmp("render-dry");
    let plan = write(&d, "plan.yaml", MPI_PLAN);
    let out = d.join("never");
    let text = dry_run(&plan, &["-t", "mpirun", "-o", p(&out)]);
    assert!(!out.exists(), "--dry-run created {}", out.display());
    assert!(text.contains("#!/bin/bash\n"), "{text}");
    assert!(text.contains("nothing written"), "{text}");
}

#[test]
fn one_step_per_environment_set_with_its_variables_exported_first() {
    let d = tmp("render-sets");
    let plan = write(&d, "plan.yaml", MPI_PLAN);
    for target in ["slurm", "srun", "mpirun"] {
        let s = dry_run(&plan, &["-t", target]);
        let x = s.find("export NCCL_BATON_SET='x'").expect(&s);
        let step0 = s.find("--env-set 0 -o \"$out/set-0\"").expect(&s);
        let y = s.find("export NCCL_BATON_SET='y'").expect(&s);
        let step1 = s.find("--env-set 1 -o \"$out/set-1\"").expect(&s);
        assert!(x < step0 && step0 < y && y < step1, "{target}: {s}");
        assert!(
            s.contains("\"$baton\" grade \"$plan\" \"${results[@]}\" \"${grade_args[@]}\""),
            "{s}"
        );
        assert!(
            s.contains("grade_args=(--junit \"$out/junit.xml\" --report \"$out/report\")"),
            "{s}"
        );
    }
    let mpirun = dry_run(&plan, &["-t", "mpirun"]);
    // The set's own variables, then the launching shell's PATH, LD_LIBRARY_PATH and fabric
    // variables, by name at run time.
    assert!(
        mpirun.contains("'NCCL_BATON_SET') forward+=(-x \"$v\") ;;"),
        "{mpirun}"
    );
    assert!(
        mpirun.contains("'PATH' | 'LD_LIBRARY_PATH' | 'BATON_FAULT' | "),
        "{mpirun}"
    );
    assert!(
        mpirun.contains("mpirun_args+=(--map-by ppr:2:node)"),
        "{mpirun}"
    );
    assert!(mpirun.contains("mpirun_args=(-np 2)"), "{mpirun}");
}

#[test]
fn plan_values_come_out_quoted() {
    let d = tmp("render-quoted");
    let hostile = "it's \"$(touch /tmp/x)\" `id` ${HOME}";
    let plan = mpi_plan(
        &d,
        "quoted",
        &format!(
            "launch:
  nodes: 1
  ranks_per_node: 2
  slurm:
    partition: {h}
    account: acct
    time: \"00:30:00\"
    exclusive: true
    mpi: pmix_v4
    extra: [\"--qos=high\", {e}]
    container_image: {h}
    container_mounts: {h}
  mpirun:
    extra: [\"--mca\", {h}]
env:
  NCCL_BATON_V: {h}
",
            h = yaml_str(hostile),
            e = yaml_str("--comment=a # b")
        ),
        "    sizes: [8]\n",
    );
    // Hostile container and mpirun values are refused unless trusted (tests/integration/trust.rs); trusted,
    // they still reach the script only quoted.
    let q = "'it'\\''s \"$(touch /tmp/x)\" `id` ${HOME}'";
    let sbatch = dry_run(&plan, &["--trust-plan", "-t", "slurm"]);
    for line in [
        "#SBATCH --partition=\"it's \\\"$(touch /tmp/x)\\\" `id` ${HOME}\"\n".to_string(),
        "#SBATCH --account=acct\n".into(),
        "#SBATCH --time=00:30:00\n".into(),
        "#SBATCH --exclusive\n".into(),
        "#SBATCH --qos=high\n".into(),
        "#SBATCH \"--comment=a # b\"\n".into(),
        "#SBATCH --output=%x-%j.out\n".into(),
        "#SBATCH --no-kill\n".into(),
        "#SBATCH --no-requeue\n".into(),
        format!("    export NCCL_BATON_V={q}\n"),
        format!("image=(--container-image={q})\n"),
        format!("container+=(--container-mounts={q}\",$out:$out\")\n"),
        "    exec srun --mpi='pmix_v4' --nodes=1 --ntasks-per-node=2 \\\n".into(),
        "        --kill-on-bad-exit=1 --export=ALL \"${alloc[@]}\" \"${step[@]}\" \"${image[@]}\" \"${container[@]}\" \\\n".into(),
    ] {
        assert!(sbatch.contains(&line), "missing {line:?} in\n{sbatch}");
    }
    assert!(
        !sbatch.contains("--gpus-per-node"),
        "mpi plans need no GPUs"
    );
    let srun = dry_run(&plan, &["--trust-plan", "-t", "srun"]);
    for line in [
        format!("    alloc+=(--partition={q})\n"),
        "    alloc+=(--account='acct')\n".to_string(),
        "    alloc+=(--exclusive)\n".into(),
        "    alloc+=('--qos=high' '--comment=a # b')\n".into(),
    ] {
        assert!(srun.contains(&line), "missing {line:?} in\n{srun}");
    }
    let mpirun = dry_run(&plan, &["--trust-plan", "-t", "mpirun"]);
    assert!(
        mpirun.contains(&format!("mpirun_args+=('--mca' {q})\n")),
        "{mpirun}"
    );
}

#[test]
fn nccl_plans_request_gpus_per_node() {
    let d = tmp("render-nccl");
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1
name: gpus
launch: { nodes: 2, ranks_per_node: 4, gpus_per_rank: 2 }
tests:
  - name: t
    collective: all_reduce
    sizes: [1G]
",
    );
    let s = dry_run(&plan, &["-t", "slurm"]);
    assert!(s.contains("#SBATCH --nodes=2\n"), "{s}");
    assert!(s.contains("#SBATCH --ntasks-per-node=4\n"), "{s}");
    assert!(s.contains("#SBATCH --gpus-per-node=8\n"), "{s}");
    assert!(
        s.contains("--nodes=2 --ntasks-per-node=4 --gpus-per-node=8 \\\n"),
        "{s}"
    );
    let m = dry_run(&plan, &["-t", "mpirun"]);
    assert!(m.contains("mpirun_args=(-np 8)"), "{m}");
    assert!(m.contains("--map-by ppr:4:node"), "{m}");
}

#[test]
fn nccl_plan_without_ranks_per_node_is_refused() {
    let d = tmp("render-nccl-auto");
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1\nname: auto\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [1G]\n",
    );
    let o = render(&plan, &["-t", "slurm", "--dry-run"], 2);
    assert!(stderr(&o).contains("launch.ranks_per_node"), "{}", show(&o));
}

#[test]
fn sbatch_values_with_newlines_are_refused() {
    let d = tmp("render-newline");
    let plan = mpi_plan(
        &d,
        "nl",
        "launch: { slurm: { partition: \"gpu\\n#SBATCH --account=someone-else\" } }\n",
        "    sizes: [8]\n",
    );
    let out = d.join("out");
    let o = render(&plan, &["-t", "slurm", "-o", p(&out)], 2);
    assert!(
        stderr(&o).contains("launch.slurm.partition"),
        "{}",
        show(&o)
    );
    assert!(!out.exists());

    // A custom template that puts multi-line text on an #SBATCH line fails in the filter.
    let t = d.join("templates");
    std::fs::create_dir_all(&t).unwrap();
    write(
        &t,
        "slurm.sbatch.j2",
        "#!/bin/bash\n#SBATCH --comment={{ plan.text | sbatch }}\n",
    );
    let plan = write(&d, "ok.yaml", MPI_PLAN);
    let o = render(
        &plan,
        &["-t", "slurm", "--templates", p(&t), "--dry-run"],
        2,
    );
    assert!(
        stderr(&o).contains("slurm.sbatch.j2") && stderr(&o).contains("control character '\\n'"),
        "{}",
        show(&o)
    );
}

#[test]
fn custom_templates_override_by_name_and_are_strict() {
    let d = tmp("render-templates");
    let plan = write(&d, "plan.yaml", MPI_PLAN);
    let t = d.join("templates");
    std::fs::create_dir_all(&t).unwrap();

    write(
        &t,
        "mpirun.sh.j2",
        "#!/bin/sh\necho {{ plan.name | shell_quote }} {{ layout.tasks }}\n",
    );
    let s = dry_run(&plan, &["-t", "mpirun", "--templates", p(&t)]);
    assert!(s.contains("#!/bin/sh\necho 'two-sets' 2\n"), "{s}");
    // Targets the directory does not override keep the built-in template.
    let s = dry_run(&plan, &["-t", "srun", "--templates", p(&t)]);
    assert!(s.contains("exec srun --mpi='pmix'"), "{s}");

    write(&t, "mpirun.sh.j2", "echo {{ plan.nmae | shell_quote }}\n");
    let o = render(
        &plan,
        &["-t", "mpirun", "--templates", p(&t), "--dry-run"],
        2,
    );
    let e = stderr(&o);
    assert!(
        e.contains("mpirun.sh.j2") && e.contains("undefined") && e.contains("templates see:"),
        "{e}"
    );

    write(&t, "mpirun.sh.j2", "echo {{ plan.name }}\n");
    let o = render(
        &plan,
        &["-t", "mpirun", "--templates", p(&t), "--dry-run"],
        2,
    );
    assert!(stderr(&o).contains("without quoting"), "{}", show(&o));

    let missing = d.join("missing");
    let o = render(
        &plan,
        &["-t", "mpirun", "--templates", p(&missing), "--dry-run"],
        2,
    );
    assert!(stderr(&o).contains("cannot read templates"), "{}", show(&o));
}

#[test]
fn render_exit_codes() {
    let d = tmp("render-exit");
    let bad = write(
        &d,
        "bad.yaml",
        "version: 1\nname: b\ntests:\n  - name: t\n    colective: all_reduce\n",
    );
    let o = baton(&["render", p(&bad), "-t", "slurm", "--dry-run"]);
    assert_eq!(code(&o), 2, "invalid plan: {}", show(&o));
    let plan = write(&d, "plan.yaml", MPI_PLAN);
    let o = baton(&["render", p(&plan), "-t", "mpirun", "--submit"]);
    assert_eq!(code(&o), 2, "--submit without slurm: {}", show(&o));
    let o = baton(&["render", p(&plan), "-t", "nomad"]);
    assert_eq!(code(&o), 2, "unknown target: {}", show(&o));
    // The output path is a file: a runtime failure, not bad input.
    let file = write(&d, "file", "");
    let o = baton(&["render", p(&plan), "-t", "mpirun", "-o", p(&file.join("x"))]);
    assert_eq!(code(&o), 3, "{}", show(&o));
}

/// Every target, with every plan option that changes the script, passes shellcheck.
#[test]
fn rendered_scripts_pass_shellcheck() {
    if std::process::Command::new("shellcheck")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: no shellcheck (scripts/install-deps installs it)");
        return;
    }
    let d = tmp("render-shellcheck");
    let plan = mpi_plan(
        &d,
        "lint",
        "launch:
  nodes: 2
  ranks_per_node: 2
  slurm:
    partition: p
    account: a
    time: \"10:00\"
    exclusive: true
    extra: [\"--qos=x\"]
    container_image: \"nvcr.io#nvidia/pytorch:24.05-py3\"
    container_mounts: /data:/data
    container_env: [NCCL_IB_HCA]
    step: [\"--network=sn_all\", \"--comment=it's\"]
    gpu_bind: closest
  setup: [\"module load nccl 2>/dev/null || true\", \"export NCCL_DEBUG=WARN\"]
  mpirun: { hostfile: hosts, extra: [\"--bind-to\", \"none\"], forward: [MY_FLAG, \"FI_*\"] }
baseline: base.json
env: { NCCL_A: \"1\" }
",
        "    sizes: [8]
    matrix:
      env: [ { B: x }, { B: y } ]
",
    );
    let out = d.join("scripts");
    // Containers need --trust-plan, which the scripts then pass to their own baton-mpi.
    render(
        &plan,
        &["--trust-plan", "-t", "slurm,srun,mpirun", "-o", p(&out)],
        0,
    );
    // Again with a fixed results directory and --resume, and the plan as a node-set batch job
    // without a node count and with a hostlist.
    let resumed = d.join("resumed");
    render(
        &plan,
        &[
            "--trust-plan",
            "-t",
            "slurm,srun,mpirun",
            "-o",
            p(&resumed),
            "--results",
            "/r",
            "--resume",
        ],
        0,
    );
    let sets = write(
        &d,
        "sets.yaml",
        &common::read(&plan).replace("    sizes: [8]\n", "    over: pairs\n    sizes: [8]\n"),
    );
    // A plain plan across nodes without an image: the one `baton run` batch job.
    let whole = write(
        &d,
        "whole.yaml",
        &common::read(&plan).replace(
            "    container_image: \"nvcr.io#nvidia/pytorch:24.05-py3\"\n",
            "",
        ),
    );
    let one_run = d.join("one-run");
    let o = render(
        &whole,
        &["--trust-plan", "-t", "slurm", "-o", p(&one_run)],
        0,
    );
    assert!(stdout(&o).contains("run by `baton run`"), "{}", show(&o));
    let (uncounted, listed) = (d.join("uncounted"), d.join("listed"));
    render(
        &sets,
        &["--trust-plan", "-t", "slurm", "-o", p(&uncounted)],
        0,
    );
    render(
        &sets,
        &[
            "--trust-plan",
            "-t",
            "slurm",
            "-o",
            p(&listed),
            "--nodes",
            "b,a",
            "--resume",
        ],
        0,
    );
    let mut scripts: Vec<std::path::PathBuf> = ["lint.sbatch", "lint-srun.sh", "lint-mpirun.sh"]
        .into_iter()
        .flat_map(|f| [out.join(f), resumed.join(f)])
        .collect();
    for f in &scripts {
        assert!(
            common::read(f).contains("run \"$plan\" --trust-plan --env-set"),
            "{}",
            f.display()
        );
    }
    scripts.extend([
        uncounted.join("lint.sbatch"),
        listed.join("lint.sbatch"),
        one_run.join("lint.sbatch"),
    ]);
    for f in scripts {
        let r = std::process::Command::new("shellcheck")
            .args(["-s", "bash"])
            .arg(&f)
            .output()
            .unwrap();
        assert_eq!(code(&r), 0, "{}: {}", f.display(), show(&r));
    }
}

#[test]
fn run_env_set_out_of_range_is_bad_input() {
    let d = tmp("render-env-set-range");
    let plan = write(&d, "plan.yaml", MPI_PLAN);
    let o = baton(&["run", p(&plan), "--env-set", "2", "-o", p(&d.join("o"))]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("form 2 environment set(s), numbered from 0"),
        "{}",
        show(&o)
    );
}

#[cfg(feature = "mpi")]
mod with_mpi {
    use super::*;
    use baton::results::{self, JobStatus};

    #[test]
    fn run_env_set_runs_only_that_sets_jobs() {
        let d = tmp("render-env-set-run");
        let plan = write(&d, "plan.yaml", MPI_PLAN);
        let out = d.join("o");
        let o = baton(&["run", p(&plan), "--env-set", "1", "-o", p(&out)]);
        assert_eq!(code(&o), 0, "{}", show(&o));
        let r = results::read(&out.join("results.json")).unwrap();
        let ids: Vec<&str> = r.jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "t[collective=all_reduce,NCCL_BATON_SET=y]",
                "t[collective=broadcast,NCCL_BATON_SET=y]"
            ]
        );
    }

    /// Env values built to run commands, in a plan under a directory whose name has quotes: the
    /// rendered mpirun script runs, nothing is executed, and every rank sees the exact text.
    #[test]
    fn injection_through_plan_values_stays_literal() {
        let d = tmp("render-injection");
        let marker =
            |tag: &str| std::env::temp_dir().join(format!("pwned-{}-{tag}", std::process::id()));
        let values = [
            format!("$(touch {})", marker("subst").display()),
            format!("`touch {}`", marker("backtick").display()),
            format!("'; touch {}; '", marker("quote").display()),
            format!("\"; touch {}; \"\nsecond line", marker("dquote").display()),
        ];
        for v in &values {
            let _ = std::fs::remove_file(v);
        }
        let dir = d.join("it's a \"plan\" $(dir)");
        std::fs::create_dir_all(&dir).unwrap();
        let env: String = values
            .iter()
            .enumerate()
            .map(|(i, v)| format!("  NCCL_BATON_HOSTILE_{i}: {}\n", yaml_str(v)))
            .collect();
        let text = format!(
            "version: 1
name: hostile
backend: mpi
launch: {{ nodes: 1, ranks_per_node: 2 }}
env:
{env}tests:
  - name: t
    collective: all_reduce
    sizes: [8]
    expect: [ {{ wrong: 0 }} ]
"
        );
        let plan = write(&dir, "plan 'q'.yaml", &text);
        let script = common::render_script(&d, &plan, "mpirun", &dir.join("scripts `x`"));
        let out = dir.join("out \"o\" $(y) 'z'");
        common::run_script(&script, &out, 0);
        for tag in ["subst", "backtick", "quote", "dquote"] {
            assert!(
                !marker(tag).exists(),
                "{tag}: a plan value ran as a command"
            );
        }
        assert_eq!(
            common::read(&out.join("plan.yaml")),
            text,
            "the carried plan"
        );
        let res = results::read(&out.join("set-0/results.json")).unwrap();
        for (i, v) in values.iter().enumerate() {
            assert_eq!(
                res.environment
                    .variables
                    .get(&format!("NCCL_BATON_HOSTILE_{i}")),
                Some(v),
                "what rank 0 saw"
            );
        }
        assert!(res.jobs.iter().all(|j| j.status == JobStatus::Completed));
        assert!(out.join("junit.xml").is_file());
        assert!(out.join("report/report.html").is_file());
    }

    /// A step that dies is recorded, the next environment set still runs, grading fails the
    /// dead set's jobs closed, and the script exits 3. The fault comes from the shell the script
    /// runs in (no plan may set `BATON_*`), for the first set's job only.
    #[test]
    fn a_failed_step_does_not_stop_the_next_set() {
        let d = tmp("render-failed-step");
        let plan = mpi_plan(
            &d,
            "crash",
            "launch: { nodes: 1, ranks_per_node: 2 }\ndefaults: { timeout: 20s }\n",
            "    sizes: [8]
    matrix:
      env: [ { NCCL_BATON_SET: crash }, { NCCL_BATON_SET: ok } ]
    expect: [ { wrong: 0 } ]
",
        );
        let script = common::render_script(&d, &plan, "mpirun", &d.join("s"));
        let out = d.join("out");
        let r = std::process::Command::new("timeout")
            .arg("300")
            .arg(&script)
            .arg(&out)
            .env("PATH", common::path_with_baton())
            .env_remove("SLURM_JOB_ID")
            .env("BATON_FAULT", "crash:rank=1:job=NCCL_BATON_SET=crash")
            .output()
            .unwrap();
        assert_eq!(code(&r), 3, "{}", show(&r));
        assert!(
            stderr(&r).contains("baton: environment set 0 ended with exit status"),
            "{}",
            show(&r)
        );
        let set1 = results::read(&out.join("set-1/results.json")).unwrap();
        assert_eq!(set1.jobs[0].status, JobStatus::Completed);
        let junit = common::read(&out.join("junit.xml"));
        assert!(
            junit.contains(r#"<testsuite name="t[NCCL_BATON_SET=ok]" tests="2" skipped="0" errors="0" failures="0">"#),
            "{junit}"
        );
        assert!(
            junit.contains(r#"<testsuite name="t[NCCL_BATON_SET=crash]" tests="2" skipped="0" errors="0" failures="2">"#),
            "{junit}"
        );
    }

    /// A rendered script of two environment sets leaves one junit.xml and one report, at the top
    /// of its output, and prints the verdict once: its steps write results only.
    #[test]
    fn a_script_of_two_sets_writes_one_junit_and_prints_one_verdict() {
        let d = tmp("render-one-junit");
        let plan = write(&d, "plan.yaml", MPI_PLAN);
        let script = common::render_script(&d, &plan, "mpirun", &d.join("s"));
        let out = d.join("out");
        let _ = std::fs::remove_dir_all(&out);
        let r = common::run_script(&script, &out, 0);
        let mut junits = Vec::new();
        let mut reports = Vec::new();
        let mut stack = vec![out.clone()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.file_name().unwrap() == "junit.xml" {
                    junits.push(path);
                } else if path.file_name().unwrap() == "report.html" {
                    reports.push(path);
                }
            }
        }
        assert_eq!(junits, [out.join("junit.xml")]);
        assert_eq!(reports, [out.join("report/report.html")]);
        assert_eq!(
            stdout(&r).matches("plan two-sets: PASS").count(),
            1,
            "{}",
            show(&r)
        );
        assert!(results::read(&out.join("set-1/results.json")).is_ok());
    }
}
