//! What templates see: the plan's launch settings with defaults resolved, its environment sets,
//! and the paths a script needs (baton as the running machines call it, which is seldom where
//! it lives on the rendering one). Everything a template may print is here, so a custom
//! template that names anything else fails (strict undefined) instead of printing nothing.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::RenderError;
use super::quote::sbatch_problem;
use crate::expand::Job;
use crate::launch;
use crate::plan::{Backend, BatonFrom, CpusPerTask, Plan, Slurm};

/// What a render starts from: a checked plan, the text it was loaded from, and where things are.
pub struct Input<'a> {
    pub plan: &'a Plan,
    /// The plan file as read: scripts carry it, so they run wherever they are copied or submitted.
    pub plan_text: &'a str,
    /// Absolute path of the plan file; relative `baseline` and `hostfile` resolve against it.
    pub plan_path: &'a Path,
    /// The plan's jobs (`expand`), which the scripts' steps split into environment sets.
    pub jobs: &'a [Job],
    /// `render --baton`, verbatim: `baton` as the machines that run the script call it (a name
    /// looked up on their PATH, or a path there); `baton-mpi` is beside it. `None`: the plan's
    /// `launch.baton`.
    pub baton: Option<&'a str>,
    /// The user trusts the plan (`--trust-plan`): the scripts' own baton commands say so too.
    pub trust: crate::plan::Trust,
    /// The plan's program-running keys that the user did not vouch for were vouched for by its
    /// site file (`crate::site::Layered::vouched`): its setup lines render, and the scripts
    /// run the layered plan they carry as trusted.
    pub vouched: bool,
    /// The plan's tests run over node sets: the batch script runs `baton run`, which drives
    /// them inside the allocation ([`super::sweep`]).
    pub sweep: Option<Sweep>,
    /// `render --results`: the scripts' default output directory, the same on every try (an
    /// absolute path), instead of a new one per job or date.
    pub results: Option<&'a str>,
    /// `render --resume`: every run continues what the output directory holds, and the batch
    /// job may be requeued into it.
    pub resume: bool,
    /// Where the scripts' run reports (`--metrics`, `--notify`, `--history`).
    pub fleet: &'a super::fleet::Fleet,
}

/// A batch job whose `baton run` drives node sets (see [`crate::runner::nodesets`]), or runs a
/// plain plan across the job's nodes as one of them.
#[derive(Debug, Clone, Serialize)]
pub struct Sweep {
    /// Nodes to allocate; `None`: the job's own count (`sbatch -N`), and the script refuses a
    /// job of one node, which is what sbatch gives when no count was asked for.
    pub nodes: Option<usize>,
    /// The node list as a hostlist, for `#SBATCH --nodelist`; `None`: any nodes.
    pub nodelist: Option<String>,
    /// The node list for `baton run --nodes`, in its order, when the job cannot read it from
    /// the plan it carries (`render --nodes HOSTLIST`, a hostfile beside the plan).
    pub run_nodes: Option<String>,
    /// One line per test that runs over node sets, for the script's header.
    pub tests: Vec<String>,
    /// A plain plan across several nodes: `baton run` runs it as one step across the job's
    /// nodes, so a node that dies is named where node sets name it.
    pub whole: bool,
}

#[derive(Debug, Serialize)]
pub struct Context {
    /// baton's version, for the script header.
    pub version: &'static str,
    pub plan: PlanInfo,
    pub layout: Layout,
    pub slurm: Slurm,
    pub mpirun: MpirunInfo,
    pub env_sets: Vec<EnvSetInfo>,
    /// `baton` as the script calls it (grading): a name from PATH or a path.
    pub baton: String,
    /// `baton-mpi` as every rank calls it: a name, a path, or a path inside the image.
    pub baton_mpi: String,
    /// What each step starts as a rank: `baton` (nccl backend) or `baton-mpi` (mpi backend).
    pub worker: String,
    /// srun options of every step: `launch.slurm.step` and the binding defaults it leaves.
    pub step: Vec<String>,
    /// Add `--cpus-per-task` = SLURM_CPUS_ON_NODE / ranks per node in the job.
    pub cpus_auto: bool,
    /// `launch.setup`: trusted shell, present only when the plan is trusted.
    pub setup: Vec<String>,
    /// pyxis settings when the plan names an image.
    pub container: Option<Container>,
    /// Pass `--trust-plan` to the scripts' `baton-mpi run`.
    pub trust_plan: bool,
    /// The plan's baseline as an absolute path: the carried plan no longer sits beside it.
    pub baseline: Option<String>,
    pub sweep: Option<Sweep>,
    /// The default output directory (`render --results`), absolute; `None`: per job or date.
    pub results: Option<String>,
    /// Continue what the output directory holds (`render --resume`).
    pub resume: bool,
    /// Where the run reports: what fills `fleet_args` (`fleet.sh.j2`).
    pub fleet: super::fleet::FleetInfo,
}

/// pyxis: the image is imported once, by the first step, under `name`; later steps reuse it.
#[derive(Debug, Serialize)]
pub struct Container {
    pub image: String,
    pub name: String,
    pub mounts: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct PlanInfo {
    pub name: String,
    pub file: String,
    /// The plan's directory, absolute: the carried copy's relative files (another run's
    /// results, the history store, profiles) are looked up there (`BATON_PLAN_DIR`).
    pub dir: String,
    pub text: String,
    pub backend: Backend,
    pub jobs: usize,
}

#[derive(Debug, Serialize)]
pub struct Layout {
    pub nodes: u32,
    pub ranks_per_node: u32,
    /// Processes in all: `nodes × ranks_per_node`.
    pub tasks: u64,
    /// GPUs to request per node; `None` for the mpi backend, which runs in host memory.
    pub gpus_per_node: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct MpirunInfo {
    /// Absolute path of the plan's hostfile.
    pub hostfile: Option<String>,
    pub extra: Vec<String>,
    /// Exact names mpirun forwards from the launching shell when set there.
    pub forward_names: Vec<String>,
    /// Prefixes (without `*`) of the names it forwards.
    pub forward_prefixes: Vec<String>,
    /// Names never forwarded although a prefix matches.
    pub not_forwarded: Vec<&'static str>,
}

#[derive(Debug, Serialize)]
pub struct EnvSetInfo {
    /// The number `baton run --env-set` takes.
    pub index: usize,
    pub jobs: usize,
    pub env: Vec<EnvVar>,
    /// `--container-env` names: the plan's `container_env` and this set's variables, so an
    /// image's own settings (NGC images set NCCL_* variables) do not override the plan's.
    pub container_env: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

fn utf8(what: &str, p: &Path) -> Result<String, RenderError> {
    p.to_str()
        .map(str::to_string)
        .ok_or_else(|| RenderError::NotUtf8 {
            what: what.to_string(),
            path: p.to_path_buf(),
        })
}

/// Checks a value bound for an `#SBATCH` line, naming the plan key it came from.
fn sbatch_value(key: &str, value: &str) -> Result<(), RenderError> {
    match sbatch_problem(value) {
        None => Ok(()),
        Some(why) => Err(RenderError::SbatchValue {
            key: key.to_string(),
            value: value.to_string(),
            why,
        }),
    }
}

/// Resolves a path the plan names relative to itself.
fn beside_plan(plan_path: &Path, rel: &str) -> PathBuf {
    plan_path.parent().unwrap_or(Path::new("/")).join(rel)
}

/// `baton-mpi` beside `baton` as written: in its directory when it names one, else by name.
fn beside(baton: &str) -> String {
    if baton == "baton-mpi" || baton.ends_with("/baton-mpi") {
        return baton.to_string();
    }
    match baton.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/baton-mpi"),
        None => "baton-mpi".to_string(),
    }
}

fn mpirun_info(m: &crate::plan::Mpirun, hostfile: Option<String>) -> MpirunInfo {
    // The plan's additions that the built-in list already covers are left out: a pattern that
    // can never match is noise (and shellcheck says so).
    let (prefixes, names): (Vec<&String>, Vec<&String>) = m
        .forward
        .iter()
        .filter(|f| !launch::forwards(f.trim_end_matches('*'), &[]))
        .partition(|f| f.ends_with('*'));
    MpirunInfo {
        hostfile,
        extra: m.extra.clone(),
        forward_names: launch::FORWARDED
            .iter()
            .map(|n| n.to_string())
            .chain(names.into_iter().cloned())
            .collect(),
        forward_prefixes: launch::FORWARDED_PREFIXES
            .iter()
            .map(|p| p.to_string())
            .chain(
                prefixes
                    .into_iter()
                    .map(|p| p.trim_end_matches('*').to_string()),
            )
            .collect(),
        not_forwarded: launch::NOT_FORWARDED
            .iter()
            .copied()
            .filter(|n| !m.forward.iter().any(|f| f == n))
            .collect(),
    }
}

impl Context {
    pub fn new(input: &Input) -> Result<Context, RenderError> {
        let plan = input.plan;
        let launch_cfg = &plan.launch;
        let ranks_per_node = match (launch_cfg.ranks_per_node, plan.backend) {
            (Some(r), _) => r,
            (None, Backend::Mpi) => launch::DEFAULT_MPI_RANKS_PER_NODE,
            (None, Backend::Nccl) => {
                return Err(RenderError::Layout(
                    "`launch.ranks_per_node` is not set: a batch script must request its tasks \
                     before the job can count the GPUs; set it to the GPUs per node (or per \
                     process group)"
                        .into(),
                ));
            }
        };
        let slurm = &launch_cfg.slurm;
        sbatch_value("name", &plan.name)?;
        for (key, value) in [
            ("launch.slurm.partition", &slurm.partition),
            ("launch.slurm.account", &slurm.account),
            ("launch.slurm.qos", &slurm.qos),
            ("launch.slurm.reservation", &slurm.reservation),
            ("launch.slurm.time", &slurm.time),
        ] {
            if let Some(v) = value {
                sbatch_value(key, v)?;
            }
        }
        for x in &slurm.extra {
            sbatch_value("launch.slurm.extra", x)?;
        }
        let env_sets = launch::env_sets(input.jobs)
            .into_iter()
            .enumerate()
            .map(|(index, set)| EnvSetInfo {
                index,
                jobs: set.jobs.len(),
                container_env: slurm
                    .container_env
                    .iter()
                    .cloned()
                    .chain(
                        set.env
                            .keys()
                            .filter(|k| !slurm.container_env.contains(k))
                            .cloned(),
                    )
                    .collect(),
                env: set
                    .env
                    .into_iter()
                    .map(|(name, value)| EnvVar { name, value })
                    .collect(),
            })
            .collect();
        let image_baton = match (&launch_cfg.baton, input.baton) {
            (BatonFrom::Image(p), None) => Some(p.clone().unwrap_or_else(|| "baton".into())),
            _ => None,
        };
        let (baton, baton_mpi) = match input.baton {
            Some(b) => (b.to_string(), beside(b)),
            None => match &launch_cfg.baton {
                BatonFrom::Path => ("baton".to_string(), "baton-mpi".to_string()),
                BatonFrom::Absolute(p) => (p.clone(), beside(p)),
                // Grading runs on the batch node, outside the image: `baton` from its PATH.
                BatonFrom::Image(p) => (
                    "baton".to_string(),
                    p.as_deref().map_or("baton-mpi".to_string(), beside),
                ),
            },
        };
        // Setup lines are shell: the plan checker refuses them from a plan nobody trusts, and
        // the renderer does not rely on it.
        let trusted = input.trust == crate::plan::Trust::Trusted || input.vouched;
        if !launch_cfg.setup.is_empty() && !trusted {
            return Err(RenderError::Untrusted(
                "`launch.setup` lines are shell; render them with --trust-plan".into(),
            ));
        }
        let setup = launch_cfg.setup.clone();
        for x in &slurm.step {
            sbatch_value("launch.slurm.step", x)?;
        }
        // The script grades with `--baseline`, which the plan-relative rule does not judge (it
        // is the user's flag): judge the plan's file here.
        let files = crate::plan::PlanFiles::beside(input.plan_path, input.trust);
        let baseline = plan
            .baseline
            .as_deref()
            .map(|b| {
                let path = files.resolve("baseline", b)?;
                utf8("the baseline", &path)
            })
            .transpose()?;
        let sweep_nodes = input.sweep.as_ref().and_then(|s| s.nodes).map(|n| n as u32);
        // A job whose `baton run` starts the steps asks for what each step starts: one GPU rank
        // per GPU (`runner::nodesets` never starts a process driving several GPUs), else Slurm
        // refuses every step of a plan of one process with 8 GPUs per node.
        let tasks_per_node = if input.sweep.is_some() && plan.backend == Backend::Nccl {
            ranks_per_node * launch_cfg.gpus_per_rank
        } else {
            ranks_per_node
        };
        let hostfile = launch_cfg
            .mpirun
            .hostfile
            .as_deref()
            .map(|h| utf8("the hostfile", &beside_plan(input.plan_path, h)))
            .transpose()?;
        Ok(Context {
            version: env!("CARGO_PKG_VERSION"),
            plan: PlanInfo {
                name: plan.name.clone(),
                file: utf8("the plan", input.plan_path)?,
                dir: utf8("the plan's directory", files.dir())?,
                text: input.plan_text.to_string(),
                backend: plan.backend,
                jobs: input.jobs.len(),
            },
            layout: Layout {
                nodes: sweep_nodes.unwrap_or(launch_cfg.nodes),
                ranks_per_node: tasks_per_node,
                tasks: sweep_nodes.unwrap_or(launch_cfg.nodes) as u64 * tasks_per_node as u64,
                gpus_per_node: (plan.backend == Backend::Nccl)
                    .then(|| ranks_per_node as u64 * launch_cfg.gpus_per_rank as u64),
            },
            slurm: slurm.clone(),
            mpirun: mpirun_info(&launch_cfg.mpirun, hostfile),
            env_sets,
            // The rank program: GPU ranks meet over baton's TCP rendezvous, so plain baton
            // (the image's, when it comes from the image); the host backend measures MPI.
            worker: match plan.backend {
                Backend::Nccl => image_baton.unwrap_or_else(|| baton.clone()),
                Backend::Mpi => baton_mpi.clone(),
            },
            baton,
            baton_mpi,
            step: launch::srun_step_options(slurm, tasks_per_node as u64, None),
            cpus_auto: slurm.cpus_per_task == CpusPerTask::Auto && !slurm.step_sets_cpus(),
            setup,
            container: slurm.container_image.as_ref().map(|image| Container {
                image: image.clone(),
                name: slurm
                    .container_name
                    .clone()
                    .unwrap_or_else(|| format!("baton-{}", plan.name)),
                mounts: slurm.container_mounts.clone(),
            }),
            trust_plan: trusted,
            baseline,
            sweep: match &input.sweep {
                Some(s) => {
                    if let Some(l) = &s.nodelist {
                        sbatch_value("nodes.hostlist", l)?;
                    }
                    Some(s.clone())
                }
                None => None,
            },
            results: input.results.map(str::to_string),
            resume: input.resume,
            fleet: input.fleet.info(),
        })
    }
}
