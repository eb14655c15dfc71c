//! What templates see: the plan's launch settings with defaults resolved, its environment sets,
//! and the absolute paths a script needs. Everything a template may print is here, so a custom
//! template that names anything else fails (strict undefined) instead of printing nothing.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::RenderError;
use super::quote::sbatch_problem;
use crate::expand::Job;
use crate::plan::{Backend, Plan, Slurm};
use crate::runner::launch;

/// What a render starts from: a checked plan, the text it was loaded from, and where things are.
pub struct Input<'a> {
    pub plan: &'a Plan,
    /// The plan file as read: scripts carry it, so they run wherever they are copied or submitted.
    pub plan_text: &'a str,
    /// Absolute path of the plan file; relative `baseline` and `hostfile` resolve against it.
    pub plan_path: &'a Path,
    /// The plan's jobs (`expand`), which the scripts' steps split into environment sets.
    pub jobs: &'a [Job],
    /// Absolute path of `baton` on the machines the script runs on (grading runs it).
    pub baton: &'a Path,
    /// Absolute path of `baton-mpi` there (every rank runs it).
    pub baton_mpi: &'a Path,
    /// The user trusts the plan (`--trust-plan`): the scripts' own baton commands say so too.
    pub trust: crate::plan::Trust,
    /// The plan's tests run over node sets: the batch script runs `baton run`, which drives
    /// them inside the allocation.
    pub sweep: Option<Sweep>,
}

/// A batch job whose `baton run` drives node sets (see [`crate::runner::nodesets`]).
#[derive(Debug, Clone, Serialize)]
pub struct Sweep {
    /// Nodes to allocate.
    pub nodes: usize,
    /// The plan's own node list as a hostlist, for `#SBATCH --nodelist`; `None`: any nodes.
    pub nodelist: Option<String>,
    /// One line per test that runs over node sets, for the script's header.
    pub tests: Vec<String>,
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
    pub baton: String,
    pub baton_mpi: String,
    /// Pass `--trust-plan` to the scripts' `baton-mpi run`.
    pub trust_plan: bool,
    /// The plan's baseline as an absolute path: the carried plan no longer sits beside it.
    pub baseline: Option<String>,
    pub sweep: Option<Sweep>,
}

#[derive(Debug, Serialize)]
pub struct PlanInfo {
    pub name: String,
    pub file: String,
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
}

#[derive(Debug, Serialize)]
pub struct EnvSetInfo {
    /// The number `baton run --env-set` takes.
    pub index: usize,
    pub jobs: usize,
    pub env: Vec<EnvVar>,
    /// [`launch::FORWARDED`] variables this set does not set itself: mpirun forwards them from
    /// the launching shell when they are set there.
    pub forward: Vec<&'static str>,
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
                forward: launch::FORWARDED
                    .iter()
                    .copied()
                    .filter(|k| !set.env.contains_key(*k))
                    .collect(),
                env: set
                    .env
                    .into_iter()
                    .map(|(name, value)| EnvVar { name, value })
                    .collect(),
            })
            .collect();
        let baseline = plan
            .baseline
            .as_deref()
            .map(|b| utf8("the baseline", &beside_plan(input.plan_path, b)))
            .transpose()?;
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
                text: input.plan_text.to_string(),
                backend: plan.backend,
                jobs: input.jobs.len(),
            },
            layout: Layout {
                nodes: input
                    .sweep
                    .as_ref()
                    .map_or(launch_cfg.nodes, |s| s.nodes as u32),
                ranks_per_node,
                tasks: input
                    .sweep
                    .as_ref()
                    .map_or(launch_cfg.nodes as u64, |s| s.nodes as u64)
                    * ranks_per_node as u64,
                gpus_per_node: (plan.backend == Backend::Nccl)
                    .then(|| ranks_per_node as u64 * launch_cfg.gpus_per_rank as u64),
            },
            slurm: slurm.clone(),
            mpirun: MpirunInfo {
                hostfile,
                extra: launch_cfg.mpirun.extra.clone(),
            },
            env_sets,
            baton: utf8("baton", input.baton)?,
            baton_mpi: utf8("baton-mpi", input.baton_mpi)?,
            trust_plan: input.trust == crate::plan::Trust::Trusted,
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
        })
    }
}
