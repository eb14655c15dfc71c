//! How ranks get started, shared by the rendered scripts and `baton run` so both launch a step
//! the same way: the enclosing launcher's variables ([`launcher`]), jobs grouped into environment
//! sets (one fresh process set per set, because NCCL caches most of its variables per process),
//! the options of every `srun` step, which variables `mpirun` forwards, and the `mpirun` command
//! for a set in its launcher's flavour ([`mpirun_flavour`]).

pub mod launcher;
pub mod mpirun_flavour;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use indexmap::IndexMap;

use crate::expand::Job;

pub use crate::plan::DEFAULT_MPI_RANKS_PER_NODE;

/// Jobs that share one environment, in plan order of their first job.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvSet {
    pub env: IndexMap<String, String>,
    /// Indices into the job list.
    pub jobs: Vec<usize>,
}

/// Groups jobs by their environment. Deterministic, so the orchestrator and its workers agree on
/// set numbers without passing job lists around.
pub fn env_sets(jobs: &[Job]) -> Vec<EnvSet> {
    let mut sets: Vec<EnvSet> = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        let mut env = j.env.clone();
        env.sort_keys();
        match sets.iter_mut().find(|s| s.env == env) {
            Some(s) => s.jobs.push(i),
            None => sets.push(EnvSet { env, jobs: vec![i] }),
        }
    }
    sets
}

/// The jobs of environment set `k`, numbered as [`env_sets`] numbers them over `jobs`, in job
/// order: what one launcher step of a rendered script runs. `Err(n)` when there are only `n` sets.
pub fn env_set_jobs(jobs: &[Job], k: usize) -> Result<Vec<Job>, usize> {
    let sets = env_sets(jobs);
    match sets.get(k) {
        Some(set) => Ok(set.jobs.iter().map(|&i| jobs[i].clone()).collect()),
        None => Err(sets.len()),
    }
}

/// Looks for a sibling executable (e.g. `baton-mpi` next to `baton`), then on PATH.
pub fn find_program(name: &str) -> Option<PathBuf> {
    if let Ok(me) = std::env::current_exe()
        && let Some(dir) = me.parent()
    {
        let p = dir.join(name);
        if p.is_file() {
            return Some(p);
        }
    }
    which(name)
}

pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Variables every rank needs besides the plan's, forwarded with `-x` (the seeds' traps 5 and 6:
/// a remote rank without LD_LIBRARY_PATH cannot find libnccl; without PATH, not even baton).
pub const FORWARDED: &[&str] = &[
    "PATH",
    "LD_LIBRARY_PATH",
    "BATON_FAULT",
    "NCCL_NVLS_ENABLE",
    "BATON_RENDEZVOUS",
    "BATON_RENDEZVOUS_TIMEOUT",
    "BATON_RUN_KEY",
];

/// Prefixes of variables that tune the fabric, the MPI and CUDA: mpirun forwards every one set
/// in the launching shell, since a remote rank sees only what `-x` names and a site's
/// `NCCL_IB_HCA` or `UCX_TLS` silently lost there changes what is measured.
pub const FORWARDED_PREFIXES: &[&str] = &[
    "NCCL_",
    "UCX_",
    "UCC_",
    "HCOLL_",
    "OMPI_MCA_",
    "PRTE_MCA_",
    "PMIX_MCA_",
    "FI_",
    "CUDA_",
    "NVSHMEM_",
];

/// Never forwarded although a prefix matches: the launching machine's device list means
/// nothing on another node (each rank picks its GPU by local rank).
pub const NOT_FORWARDED: &[&str] = &["CUDA_VISIBLE_DEVICES"];

/// Whether mpirun forwards `name` from the launching shell: [`FORWARDED`], the
/// [`FORWARDED_PREFIXES`], and the plan's `launch.mpirun.forward` (names, or prefixes ending in `*`).
pub fn forwards(name: &str, plan_forward: &[String]) -> bool {
    let listed = |pattern: &str| match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    };
    if plan_forward.iter().any(|p| listed(p)) {
        return true;
    }
    !NOT_FORWARDED.contains(&name)
        && (FORWARDED.contains(&name) || FORWARDED_PREFIXES.iter().any(|p| name.starts_with(p)))
}

/// The plan's options for every `srun` step, in order: `launch.slurm.step`, then the defaults
/// it does not replace — `--cpus-per-task` (a fixed count, or under `auto` the node's CPUs
/// `cpus_on_node`, from SLURM_CPUS_ON_NODE, shared by its `per_node` ranks: srun has not
/// inherited sbatch's `--cpus-per-task` since Slurm 22.05, and under task/affinity a rank may
/// otherwise get one core, which starves NCCL's proxy threads), `--cpu-bind`, `--gpu-bind`.
pub fn srun_step_options(
    slurm: &crate::plan::Slurm,
    per_node: u64,
    cpus_on_node: Option<u64>,
) -> Vec<String> {
    use crate::plan::CpusPerTask;
    let mut o = slurm.step.clone();
    if !slurm.step_sets_cpus() {
        let cpus = match slurm.cpus_per_task {
            CpusPerTask::Fixed(n) => Some(n as u64),
            CpusPerTask::Auto => cpus_on_node.map(|c| (c / per_node.max(1)).max(1)),
            CpusPerTask::Off => None,
        };
        if let Some(n) = cpus {
            o.push(format!("--cpus-per-task={n}"));
        }
    }
    if let Some(b) = slurm
        .cpu_bind
        .as_ref()
        .filter(|_| !slurm.step_sets_cpu_bind())
    {
        o.push(format!("--cpu-bind={b}"));
    }
    if let Some(b) = &slurm.gpu_bind {
        o.push(format!("--gpu-bind={b}"));
    }
    o
}

/// `mpirun [-H HOSTS] -np N [--oversubscribe] [--allow-run-as-root] -x VAR... program args...`
/// for Open MPI, or Hydra's `mpirun [-hosts HOSTS] -np N -genvlist VAR,... program args...`
/// (MPICH, Intel MPI): whichever `mpirun` says it is.
/// `forward`: the plan's `launch.mpirun.forward`.
pub fn mpirun_command(
    mpirun: &Path,
    hosts: Option<&str>,
    np: u32,
    env: &IndexMap<String, String>,
    forward: &[String],
    program: &Path,
    args: &[OsString],
) -> Command {
    let flavour = mpirun_flavour::flavour_of(mpirun);
    mpirun_command_for(flavour, mpirun, hosts, np, env, forward, program, args)
}

/// [`mpirun_command`] for a known flavour.
#[allow(clippy::too_many_arguments)]
pub fn mpirun_command_for(
    flavour: mpirun_flavour::MpirunFlavour,
    mpirun: &Path,
    hosts: Option<&str>,
    np: u32,
    env: &IndexMap<String, String>,
    forward: &[String],
    program: &Path,
    args: &[OsString],
) -> Command {
    let mut c = Command::new(mpirun);
    // The plan's variables, then every variable of the launching shell mpirun forwards.
    let mut shell: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| !env.contains_key(k) && forwards(k, forward))
        .collect();
    shell.sort();
    if flavour == mpirun_flavour::MpirunFlavour::Hydra {
        c.envs(env);
        let mut names: Vec<&str> = env.keys().map(String::as_str).collect();
        names.extend(shell.iter().map(String::as_str));
        c.args(mpirun_flavour::hydra_args(hosts, np, &names));
        c.arg(program).args(args);
        return c;
    }
    if let Some(h) = hosts {
        c.arg("-H").arg(h);
    }
    c.arg("-np").arg(np.to_string());
    // One host, possibly fewer cores than ranks: the host backend must still run.
    c.arg("--oversubscribe");
    if is_root() {
        c.arg("--allow-run-as-root");
    }
    for (k, v) in env {
        c.env(k, v);
        c.arg("-x").arg(k);
    }
    for k in shell {
        c.arg("-x").arg(k);
    }
    c.arg(program).args(args);
    c
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::mpirun_flavour::MpirunFlavour;
    use super::*;

    #[test]
    fn env_sets_group_equal_environments() {
        let y = "version: 1\nname: e\nenv: { A: \"1\" }\ntests:\n  - name: t\n    collective: [all_reduce, broadcast]\n    sizes: [1M]\n    matrix:\n      env: [ { P: x }, { P: y } ]\n  - name: u\n    collective: all_gather\n    sizes: [1M]\n    env: { P: x }\n";
        let plan = crate::plan::parse_str("e.yaml", y).unwrap().plan;
        let jobs = crate::expand::expand(&plan).jobs;
        let sets = env_sets(&jobs);
        assert_eq!(sets.len(), 2);
        assert_eq!(sets[0].jobs, vec![0, 2, 4]);
        assert_eq!(sets[1].jobs, vec![1, 3]);
        assert_eq!(sets[1].env.get("P").map(String::as_str), Some("y"));
    }

    #[test]
    fn env_set_jobs_selects_one_set_in_job_order() {
        let y = "version: 1\nname: e\ntests:\n  - name: t\n    collective: [all_reduce, broadcast]\n    sizes: [1M]\n    matrix:\n      env: [ { P: x }, { P: y } ]\n";
        let plan = crate::plan::parse_str("e.yaml", y).unwrap().plan;
        let jobs = crate::expand::expand(&plan).jobs;
        let ids = |k| {
            env_set_jobs(&jobs, k)
                .unwrap()
                .into_iter()
                .map(|j| j.id)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(0), [jobs[0].id.clone(), jobs[2].id.clone()]);
        assert_eq!(ids(1), [jobs[1].id.clone(), jobs[3].id.clone()]);
        assert_eq!(env_set_jobs(&jobs, 2).unwrap_err(), 2);
    }

    /// An mpirun command for 4 ranks on n1 and n2 with NCCL_PROTO=Simple, and its arguments.
    fn four_ranks_on_two_hosts(flavour: MpirunFlavour, mpirun: &str) -> (Command, Vec<String>) {
        let mut env = IndexMap::new();
        env.insert("NCCL_PROTO".to_string(), "Simple".to_string());
        let c = mpirun_command_for(
            flavour,
            Path::new(mpirun),
            Some("n1:2,n2:2"),
            4,
            &env,
            &[],
            Path::new("/x/baton-mpi"),
            &["__worker".into()],
        );
        let args = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        (c, args)
    }

    #[test]
    fn mpirun_forwards_plan_env() {
        let (_, args) = four_ranks_on_two_hosts(MpirunFlavour::OpenMpi, "/usr/bin/mpirun");
        assert_eq!(
            &args[..5],
            ["-H", "n1:2,n2:2", "-np", "4", "--oversubscribe"]
        );
        let x = args.iter().position(|a| a == "NCCL_PROTO").unwrap();
        assert_eq!(args[x - 1], "-x");
        assert!(args.ends_with(&["/x/baton-mpi".to_string(), "__worker".to_string()]));
    }

    #[test]
    fn srun_steps_get_their_share_of_cores_unless_the_plan_says_otherwise() {
        let y = |launch: &str| {
            let t = format!(
                "version: 1\nname: s\nbackend: mpi\nlaunch: {launch}\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [8]\n"
            );
            crate::plan::parse_str("s.yaml", &t)
                .unwrap()
                .plan
                .launch
                .slurm
        };
        let d = y("{ nodes: 1 }");
        assert_eq!(
            srun_step_options(&d, 8, Some(112)),
            ["--cpus-per-task=14", "--cpu-bind=cores"]
        );
        assert_eq!(
            srun_step_options(&d, 8, Some(4)),
            ["--cpus-per-task=1", "--cpu-bind=cores"]
        );
        assert_eq!(
            srun_step_options(&d, 8, None),
            ["--cpu-bind=cores"],
            "outside an allocation"
        );
        let s = y(
            "{ slurm: { step: [\"--network=sn_all\", \"--cpus-per-task=3\"], cpu_bind: off, gpu_bind: closest } }",
        );
        assert_eq!(
            srun_step_options(&s, 8, Some(112)),
            [
                "--network=sn_all",
                "--cpus-per-task=3",
                "--gpu-bind=closest"
            ]
        );
        let s = y("{ slurm: { cpus_per_task: 6, step: [\"--cpu-bind=map_cpu:0,1\"] } }");
        assert_eq!(
            srun_step_options(&s, 8, Some(112)),
            ["--cpu-bind=map_cpu:0,1", "--cpus-per-task=6"]
        );
        let s = y("{ slurm: { cpus_per_task: off } }");
        assert_eq!(srun_step_options(&s, 8, Some(112)), ["--cpu-bind=cores"]);
    }

    #[test]
    fn mpirun_forwards_the_shells_fabric_variables_and_the_plans_names() {
        let plan = ["MY_FLAG".to_string(), "SITE_*".to_string()];
        for n in [
            "NCCL_IB_HCA",
            "UCX_TLS",
            "OMPI_MCA_pml",
            "FI_PROVIDER",
            "CUDA_MODULE_LOADING",
            "PATH",
            "LD_LIBRARY_PATH",
            "MY_FLAG",
            "SITE_X",
        ] {
            assert!(forwards(n, &plan), "{n}");
        }
        for n in [
            "CUDA_VISIBLE_DEVICES",
            "HOME",
            "MY_FLAG2",
            "SSH_AUTH_SOCK",
            "SITEX",
        ] {
            assert!(!forwards(n, &plan), "{n}");
        }
        // The command itself: every matching variable of this process, named once with -x.
        // SAFETY: unit tests of this module set only this variable, which nothing else reads.
        unsafe { std::env::set_var("UCX_BATON_FORWARD_TEST", "1") };
        let mut env = IndexMap::new();
        env.insert("NCCL_PROTO".to_string(), "Simple".to_string());
        let c = mpirun_command(
            Path::new("mpirun"),
            None,
            2,
            &env,
            &plan,
            Path::new("w"),
            &[],
        );
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let named = |n: &str| {
            args.windows(2)
                .filter(|w| w[0] == "-x" && w[1] == n)
                .count()
        };
        assert_eq!(named("UCX_BATON_FORWARD_TEST"), 1, "{args:?}");
        assert_eq!(named("NCCL_PROTO"), 1, "{args:?}");
        assert_eq!(named("CUDA_VISIBLE_DEVICES"), 0, "{args:?}");
    }

    #[test]
    fn hydra_mpirun_gets_hydra_flags_and_the_same_variables() {
        let (c, args) = four_ranks_on_two_hosts(MpirunFlavour::Hydra, "/usr/bin/mpirun.mpich");
        assert_eq!(
            &args[..6],
            ["-hosts", "n1:2,n2:2", "-np", "4", "-genvlist", &args[5]]
        );
        let list: Vec<&str> = args[5].split(',').collect();
        assert_eq!(list[0], "NCCL_PROTO");
        assert!(list.contains(&"PATH"), "{list:?}");
        assert!(
            !args.iter().any(|a| a == "-x" || a.starts_with("--")),
            "{args:?}"
        );
        assert!(
            c.get_envs()
                .any(|(k, v)| k == "NCCL_PROTO" && v.is_some_and(|v| v == "Simple"))
        );
        assert!(args.ends_with(&["/x/baton-mpi".to_string(), "__worker".to_string()]));
    }
}
