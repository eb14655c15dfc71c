//! `baton render` for a real cluster (issue #12): where baton comes from when the script runs,
//! srun step options and CPU binding, `launch.setup`, pyxis image reuse, what mpirun forwards,
//! and the missing-hostfile warning. `tests/integration/render.rs` holds the rest of render.

use crate::common;

use common::render::{MPI_PLAN, dry_run, render};
use common::{code, mpi_plan, p, show, stderr, stdout, tmp, write};

/// Scripts run on other machines than the one that renders them: baton comes from their PATH
/// by default, `--baton` is kept exactly as written, and the plan can name a path or the image.
#[test]
fn scripts_call_baton_by_name_unless_told_where() {
    let d = tmp("render-paths");
    let plan = write(&d, "plan.yaml", MPI_PLAN);
    let s = dry_run(&plan, &["-t", "slurm"]);
    assert!(s.contains("baton='baton'\n"), "by name from PATH: {s}");
    assert!(s.contains("worker='baton-mpi'\n"), "{s}");
    assert!(
        !s.contains(env!("CARGO_BIN_EXE_baton")),
        "no path of this machine: {s}"
    );
    let s = dry_run(&plan, &["-t", "srun", "--baton", "baton"]);
    assert!(
        s.contains("baton='baton'\n") && s.contains("worker='baton-mpi'\n"),
        "{s}"
    );
    // A relative --baton stays relative (a path on the machines that run it), with a warning
    // because it does not exist here.
    let o = render(
        &plan,
        &["-t", "slurm", "--baton", "opt/bin/baton", "--dry-run"],
        0,
    );
    assert!(
        stdout(&o).contains("worker='opt/bin/baton-mpi'\n"),
        "{}",
        show(&o)
    );
    assert!(
        stderr(&o).contains("baton-mpi does not exist here"),
        "{}",
        show(&o)
    );
    // The plan names an absolute path: a program choice, so only from a trusted plan.
    let abs = write(
        &d,
        "abs.yaml",
        &MPI_PLAN.replace(
            "ranks_per_node: 2 }",
            "ranks_per_node: 2, baton: /opt/b/bin/baton }",
        ),
    );
    let o = render(&abs, &["-t", "mpirun", "--dry-run"], 2);
    assert!(stderr(&o).contains("launch.baton"), "{}", show(&o));
    let s = dry_run(&abs, &["--trust-plan", "-t", "mpirun"]);
    assert!(s.contains("worker='/opt/b/bin/baton-mpi'\n"), "{s}");
    // Inside the image: ranks run the image's baton-mpi; needs an image.
    let img = write(
        &d,
        "img.yaml",
        &MPI_PLAN.replace(
            "ranks_per_node: 2 }",
            "ranks_per_node: 2, baton: \"image:/opt/b/baton\", slurm: { container_image: \"nv#img\" } }",
        ),
    );
    let s = dry_run(&img, &["--trust-plan", "-t", "slurm"]);
    assert!(
        s.contains("worker='/opt/b/baton-mpi'\n") && s.contains("baton='baton'\n"),
        "{s}"
    );
    let noimg = write(
        &d,
        "noimg.yaml",
        &MPI_PLAN.replace("ranks_per_node: 2 }", "ranks_per_node: 2, baton: image }"),
    );
    let o = render(&noimg, &["--trust-plan", "-t", "slurm", "--dry-run"], 2);
    assert!(
        stderr(&o).contains("container_image` is not set"),
        "{}",
        show(&o)
    );
}

/// Every srun step carries the plan's step options and, unless they replace them, each rank's
/// share of the node's cores and core binding; a fixed count is also requested from sbatch.
#[test]
fn step_options_and_cpu_binding_reach_every_srun_step() {
    let d = tmp("render-step");
    let plan = write(
        &d,
        "plan.yaml",
        &MPI_PLAN.replace(
            "ranks_per_node: 2 }",
            "ranks_per_node: 2, slurm: { step: [\"--network=sn_all\", \"--comment=a b\"], gpu_bind: closest } }",
        ),
    );
    for t in ["slurm", "srun"] {
        let s = dry_run(&plan, &["-t", t]);
        assert!(
            s.contains("step=('--network=sn_all' '--comment=a b' '--cpu-bind=cores' '--gpu-bind=closest')\n"),
            "{s}"
        );
        assert!(s.contains("SLURM_CPUS_ON_NODE / 2"), "{s}");
        assert_eq!(s.matches("\"${step[@]}\"").count(), 2, "both steps: {s}");
    }
    let fixed = write(
        &d,
        "fixed.yaml",
        &MPI_PLAN.replace(
            "ranks_per_node: 2 }",
            "ranks_per_node: 2, slurm: { cpus_per_task: 6, cpu_bind: off } }",
        ),
    );
    let s = dry_run(&fixed, &["-t", "slurm"]);
    assert!(s.contains("#SBATCH --cpus-per-task=6\n"), "{s}");
    assert!(s.contains("step=('--cpus-per-task=6')\n"), "{s}");
    assert!(
        !s.contains("SLURM_CPUS_ON_NODE") && !s.contains("--cpu-bind"),
        "{s}"
    );
    for (bad, why) in [
        ("\"--foo bar\"", "is not `--name` or `--name=value`"),
        ("\"-x\"", "is not `--name` or `--name=value`"),
        (
            "\"--export=ALL,LD_PRELOAD=/x.so\"",
            "not a vetted scheduling or resource option",
        ),
    ] {
        let p = write(
            &d,
            "bad.yaml",
            &MPI_PLAN.replace(
                "ranks_per_node: 2 }",
                &format!("ranks_per_node: 2, slurm: {{ step: [{bad}] }} }}"),
            ),
        );
        let o = render(&p, &["-t", "slurm", "--dry-run"], 2);
        assert!(stderr(&o).contains(why), "{bad}: {}", show(&o));
        assert!(
            stderr(&o).contains("launch.slurm.step"),
            "{bad}: {}",
            show(&o)
        );
    }
}

/// `launch.setup` is shell: refused from a plan nobody trusts, and with --trust-plan written as
/// is, in a marked block before the first step of every target.
#[test]
fn setup_lines_need_trust_and_run_verbatim_before_the_steps() {
    let d = tmp("render-setup");
    let plan = write(
        &d,
        "plan.yaml",
        &MPI_PLAN.replace(
            "ranks_per_node: 2 }",
            "ranks_per_node: 2, setup: [\"module load nccl/2.21 || true\", \"export NCCL_IB_HCA=mlx5_0\"] }",
        ),
    );
    let o = render(&plan, &["-t", "slurm", "--dry-run"], 2);
    assert!(
        stderr(&o).contains("`launch.setup` is shell"),
        "{}",
        show(&o)
    );
    assert!(stderr(&o).contains("--trust-plan"), "{}", show(&o));
    let s = dry_run(&plan, &["--trust-plan", "-t", "slurm,srun,mpirun"]);
    let scripts: Vec<&str> = s.split("#!/bin/bash\n").skip(1).collect();
    assert_eq!(scripts.len(), 3, "{s}");
    for script in scripts {
        let block = "# ---- launch.setup: shell from the site file, or the plan's own trusted with --trust-plan, run as written ----\nmodule load nccl/2.21 || true\nexport NCCL_IB_HCA=mlx5_0\n# ---- end of launch.setup ----\n";
        let at = script.find(block).unwrap_or_else(|| panic!("{script}"));
        let first_step = script.find("exec ").unwrap();
        assert!(at < first_step, "{script}");
    }
}

/// pyxis: the first step imports the image under a name, later steps of the job reuse the name;
/// mounts add the output directory; `--container-env` names the plan's and the set's variables.
#[test]
fn pyxis_image_is_imported_once_and_reused_by_name() {
    let d = tmp("render-pyxis");
    let plan = write(
        &d,
        "plan.yaml",
        &MPI_PLAN.replace(
            "ranks_per_node: 2 }",
            "ranks_per_node: 2, slurm: { container_image: \"nvcr.io#nvidia/pytorch:24.05-py3\", container_mounts: /data:/data, container_env: [NCCL_IB_HCA] } }",
        ),
    );
    let o = render(&plan, &["-t", "slurm", "--dry-run"], 2);
    assert!(stderr(&o).contains("container_env"), "{}", show(&o));
    let s = dry_run(&plan, &["--trust-plan", "-t", "slurm"]);
    assert!(
        s.contains("image=(--container-image='nvcr.io#nvidia/pytorch:24.05-py3')\n"),
        "{s}"
    );
    assert!(
        s.contains("container+=(--container-name='baton-two-sets')\n"),
        "{s}"
    );
    assert!(
        s.contains("container+=(--container-mounts='/data:/data'\",$out:$out\")\n"),
        "{s}"
    );
    assert_eq!(
        s.matches("\"${image[@]}\" \"${container[@]}\"").count(),
        2,
        "{s}"
    );
    assert_eq!(
        s.matches("--container-env='NCCL_IB_HCA,NCCL_BATON_SET'")
            .count(),
        2,
        "{s}"
    );
    assert_eq!(
        s.matches("    image=()\n").count(),
        2,
        "the image is dropped once imported: {s}"
    );
    assert_eq!(s.matches("--container-image").count(), 1, "{s}");
    let named = write(
        &d,
        "named.yaml",
        &MPI_PLAN.replace(
            "ranks_per_node: 2 }",
            "ranks_per_node: 2, slurm: { container_image: img, container_name: acc-1 } }",
        ),
    );
    let s = dry_run(&named, &["--trust-plan", "-t", "srun"]);
    assert!(s.contains("container+=(--container-name='acc-1')\n"), "{s}");
}

/// mpirun hands remote ranks the plan's variables and the launching shell's fabric, MPI and
/// CUDA variables (and the plan's own additions), by name at run time.
#[test]
fn mpirun_script_forwards_the_shells_fabric_variables() {
    let d = tmp("render-forward");
    let plan = write(
        &d,
        "plan.yaml",
        &MPI_PLAN.replace(
            "ranks_per_node: 2 }",
            "ranks_per_node: 2, mpirun: { forward: [MY_FLAG, \"SITE_*\"] } }",
        ),
    );
    let s = dry_run(&plan, &["-t", "mpirun"]);
    assert!(s.contains("done < <(compgen -e)"), "{s}");
    assert!(
        s.contains("'NCCL_BATON_SET') forward+=(-x \"$v\") ;;"),
        "{s}"
    );
    assert!(s.contains("'CUDA_VISIBLE_DEVICES') ;;"), "{s}");
    for p in [
        "'PATH' | ",
        "'MY_FLAG' | ",
        "'NCCL_'* | ",
        "'UCX_'* | ",
        "'OMPI_MCA_'* | ",
        "'SITE_'*) forward+=",
    ] {
        assert!(s.contains(p), "{p}: {s}");
    }
    let o = render(
        &write(
            &d,
            "bad.yaml",
            &MPI_PLAN.replace(
                "ranks_per_node: 2 }",
                "ranks_per_node: 2, mpirun: { forward: [\"A B\"] } }",
            ),
        ),
        &["-t", "mpirun", "--dry-run"],
        2,
    );
    assert!(stderr(&o).contains("launch.mpirun.forward"), "{}", show(&o));
}

/// A hostfile the plan names but that is missing is worth a warning at render time, not an
/// error: the scripts read it when they run.
#[test]
fn a_missing_hostfile_is_a_warning_at_render_time() {
    let d = tmp("render-hostfile");
    let plan = write(
        &d,
        "plan.yaml",
        &MPI_PLAN.replace(
            "ranks_per_node: 2 }",
            "ranks_per_node: 2, mpirun: { hostfile: hosts } }",
        ),
    );
    let o = render(&plan, &["-t", "mpirun", "--dry-run"], 0);
    assert!(
        stderr(&o).contains(&format!(
            "warning: `launch.mpirun.hostfile` {} does not exist",
            d.join("hosts").display()
        )),
        "{}",
        show(&o)
    );
    write(&d, "hosts", "node01\n");
    let o = render(&plan, &["-t", "mpirun", "--dry-run"], 0);
    assert!(!stderr(&o).contains("hostfile"), "{}", show(&o));
}

#[cfg(feature = "mpi")]
mod with_mpi {
    use super::*;
    use baton::results;

    /// `launch.setup` runs in the script before its steps, and what it exports reaches the
    /// ranks: rank 0 records the variable in results.json.
    #[test]
    fn setup_lines_run_before_the_steps_and_their_exports_reach_the_ranks() {
        let d = tmp("render-setup-run");
        let plan = mpi_plan(
            &d,
            "setup",
            "launch:
  nodes: 1
  ranks_per_node: 2
  setup: [\"touch \\\"$out/setup-ran\\\"\", \"export NCCL_BATON_SETUP=from-setup\"]
",
            "    sizes: [8]\n    expect: [ { wrong: 0 } ]\n",
        );
        let scripts = d.join("s");
        let o = common::baton_in(
            &d,
            &[
                "render",
                p(&plan),
                "--trust-plan",
                "-t",
                "mpirun",
                "-o",
                p(&scripts),
            ],
        );
        assert_eq!(code(&o), 0, "{}", show(&o));
        let out = d.join("out");
        common::run_script(&scripts.join("setup-mpirun.sh"), &out, 0);
        assert!(out.join("setup-ran").is_file());
        let r = results::read(&out.join("set-0/results.json")).unwrap();
        assert_eq!(
            r.environment
                .variables
                .get("NCCL_BATON_SETUP")
                .map(String::as_str),
            Some("from-setup"),
            "{:?}",
            r.environment.variables
        );
    }
}
