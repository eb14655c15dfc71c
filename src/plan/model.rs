//! The checked plan: every value parsed into its unit and type, defaults applied. This is what
//! the planner expands; nothing downstream re-reads the YAML.

use std::time::Duration;

use indexmap::IndexMap;
use serde::Serialize;

pub use super::transport_rule::TransportRule;
use crate::collective::{Collective, Dtype, RedOp};
pub use crate::nodeset::{Over, Pairing};
use crate::split::Split;
use crate::units::{SizeSelector, Threshold};

/// Which engine moves the data.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Nccl,
    Mpi,
}

/// nccl-tests `-a`: how per-rank times combine into the reported time.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Average {
    Rank0,
    Avg,
    Min,
    Max,
}

/// Which placements run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum InPlace {
    Both,
    Out,
    In,
}

impl InPlace {
    pub fn runs_out_of_place(self) -> bool {
        self != InPlace::In
    }
    pub fn runs_in_place(self) -> bool {
        self != InPlace::Out
    }
}

/// Where the node list comes from.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "from", content = "value")]
pub enum NodeSource {
    /// The allocation `baton run` finds itself in (`SLURM_JOB_NODELIST`).
    #[default]
    Allocation,
    /// Hosts the plan lists, expanded.
    Hostlist(Vec<String>),
    /// A hostfile, as written in the plan (relative to the plan's directory); read when used.
    Hostfile(String),
}

/// The plan's node list and topology (top-level `nodes:`), hostlists expanded.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Nodes {
    pub source: NodeSource,
    pub exclude: Vec<String>,
    pub domains: Vec<Vec<String>>,
}

impl Nodes {
    /// How many nodes the plan's own list has, when it has one (a hostfile is read only when
    /// used, and the allocation is known only inside it).
    pub fn planned_count(&self) -> Option<usize> {
        match &self.source {
            NodeSource::Hostlist(h) => Some(h.iter().filter(|x| !self.exclude.contains(x)).count()),
            _ => None,
        }
    }
}

/// Measurement settings of one test, defaults resolved (nccl-tests 2.19.6 defaults).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    pub dtype: Dtype,
    pub op: RedOp,
    pub iters: u32,
    pub warmup: u32,
    pub agg_iters: u32,
    pub cuda_graph: u32,
    pub check: bool,
    pub average: Average,
    pub in_place: InPlace,
    #[serde(serialize_with = "ser_duration")]
    pub timeout: Duration,
    /// Per-iteration, per-rank timing (nccl-tests `-I 1`): off unless asked, so the timed loop
    /// does no per-iteration work.
    pub iterations: bool,
    /// nccl-tests' engine flags that change what is measured (`plan::knobs`).
    pub knobs: crate::plan::knobs::Knobs,
    /// What is recorded beside the rows (`cpu_time`, `timestamps`, `memory`).
    pub reports: crate::plan::knobs::Reports,
    /// nccl-tests `-N`: the test's repeat count when it sets no `repeat`.
    pub run_cycles: Option<u32>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            dtype: Dtype::Float,
            op: RedOp::Sum,
            iters: 20,
            warmup: 1,
            agg_iters: 1,
            cuda_graph: 0,
            check: true,
            average: Average::Avg,
            in_place: InPlace::Both,
            timeout: Duration::from_secs(300),
            iterations: false,
            knobs: Default::default(),
            reports: Default::default(),
            run_cycles: None,
        }
    }
}

fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&humantime::format_duration(*d).to_string())
}

/// Rank layout as far as the plan fixes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Launch {
    pub nodes: u32,
    /// `None`: resolved at run time (all local GPUs for nccl, 2 for mpi).
    pub ranks_per_node: Option<u32>,
    pub gpus_per_rank: u32,
    pub slurm: Slurm,
    pub mpirun: Mpirun,
    pub baton: BatonFrom,
    /// Trusted shell lines a script runs before its steps (`launch.setup`).
    pub setup: Vec<String>,
}

/// Where a rendered script finds baton when it runs (`launch.baton`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "from", content = "path")]
pub enum BatonFrom {
    /// `baton`/`baton-mpi` by name from PATH: the machine that renders is seldom the one that runs.
    #[default]
    Path,
    /// This absolute path of `baton`, `baton-mpi` beside it.
    Absolute(String),
    /// Inside the container image: by name, or this path of `baton` in the image.
    Image(Option<String>),
}

/// `srun --cpus-per-task` for every step (`launch.slurm.cpus_per_task`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "n")]
pub enum CpusPerTask {
    /// The node's CPUs (SLURM_CPUS_ON_NODE) divided among its ranks, computed in the job: under
    /// task/affinity a rank otherwise may get one core, which starves NCCL's proxy threads.
    #[default]
    Auto,
    Fixed(u32),
    Off,
}

impl Launch {
    /// Total plan ranks (NCCL ranks: processes × GPUs per process), when the plan fixes it.
    pub fn total_ranks(&self) -> Option<u64> {
        self.ranks_per_node
            .map(|r| self.nodes as u64 * r as u64 * self.gpus_per_rank as u64)
    }

    /// Plan ranks per node, when known.
    pub fn ranks_per_node_total(&self) -> Option<u64> {
        self.ranks_per_node
            .map(|r| r as u64 * self.gpus_per_rank as u64)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Slurm {
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    pub reservation: Option<String>,
    pub time: Option<String>,
    pub exclusive: bool,
    pub mpi: String,
    pub extra: Vec<String>,
    pub container_image: Option<String>,
    pub container_mounts: Option<String>,
    /// pyxis name of the imported image (default `baton-PLAN`), set when there is an image.
    pub container_name: Option<String>,
    pub container_env: Vec<String>,
    /// `srun` step options (`launch.slurm.step`), each `--name` or `--name=value`.
    pub step: Vec<String>,
    pub cpus_per_task: CpusPerTask,
    /// `--cpu-bind=` value; `None`: left out.
    pub cpu_bind: Option<String>,
    pub gpu_bind: Option<String>,
}

impl Slurm {
    /// Whether `step` sets `--cpus-per-task` itself, replacing `cpus_per_task`.
    pub fn step_sets_cpus(&self) -> bool {
        self.step
            .iter()
            .any(|o| option_name(o) == "--cpus-per-task" || option_name(o) == "-c")
    }

    /// Whether `step` sets `--cpu-bind` itself, replacing `cpu_bind`.
    pub fn step_sets_cpu_bind(&self) -> bool {
        self.step.iter().any(|o| option_name(o) == "--cpu-bind")
    }
}

/// `--name` of `--name=value`.
pub fn option_name(o: &str) -> &str {
    o.split_once('=').map_or(o, |(n, _)| n)
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Mpirun {
    pub hostfile: Option<String>,
    pub extra: Vec<String>,
    /// More names, or prefixes ending in `*`, to forward from the launching shell.
    pub forward: Vec<String>,
}

/// The requested sizes of a test, in bytes, ascending as swept.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sizes {
    Factor { from: u64, to: u64, factor: u64 },
    Step { from: u64, to: u64, step: u64 },
    List(Vec<u64>),
}

impl Sizes {
    /// Every requested size. Sweeps stop at the last value ≤ `to`, like nccl-tests.
    pub fn values(&self) -> Vec<u64> {
        match *self {
            Sizes::Factor { from, to, factor } => {
                let mut v = Vec::new();
                let mut s = from;
                while s <= to {
                    v.push(s);
                    match s.checked_mul(factor) {
                        Some(n) => s = n,
                        None => break,
                    }
                }
                v
            }
            Sizes::Step { from, to, step } => {
                let mut v = Vec::new();
                let mut s = Some(from);
                while let Some(x) = s.filter(|x| *x <= to) {
                    v.push(x);
                    s = x.checked_add(step);
                }
                v
            }
            Sizes::List(ref l) => l.clone(),
        }
    }

    /// How many sizes `values` would return, computed without building the list.
    pub fn len(&self) -> u64 {
        match *self {
            Sizes::Factor { from, to, factor } => {
                let mut n = 0;
                let mut s = from as u128;
                while s <= to as u128 {
                    n += 1;
                    s *= factor as u128;
                }
                n
            }
            Sizes::Step { from, to, step } => (to.saturating_sub(from)) / step.max(1) + 1,
            Sizes::List(ref l) => l.len() as u64,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn max(&self) -> u64 {
        self.values().into_iter().max().unwrap_or(0)
    }
}

/// How often a job's sweep runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Repeat {
    Times(u32),
    #[serde(serialize_with = "ser_duration")]
    For(Duration),
}

impl Repeat {
    pub fn min_count(&self) -> u32 {
        match self {
            Repeat::Times(n) => *n,
            Repeat::For(_) => 1,
        }
    }
}

/// Does a failed criterion fail the plan, or only get reported?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Fail,
    Warn,
}

/// What a criterion measures and its limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    Busbw(Threshold),
    Algbw(Threshold),
    Time(Threshold),
    Wrong(u64),
    Transport(TransportRule),
    Regression(Threshold),
    Variance(Threshold),
    GroupSpread(Threshold),
    /// Largest deficit below the median of node sets of the same shape.
    Outlier(Threshold),
    /// Largest drop below the median of the job's own last runs (the history store).
    Trend(crate::units::Trend),
    /// busbw as a share of the hardware profile's figure (`>= 90% of profile`).
    Profile(Threshold),
    /// busbw as a share of another job's of the same run, size by size.
    Relative(Relative),
    /// No rank or split group whose per-iteration statistic stands out (`p99 <= 2x median`).
    Straggler(crate::plan::straggler::Straggler),
    /// nccl-tests' `NCCL_TESTS_MIN_BW` (GB/s): the average busbw over the job's cells at least
    /// 0.9 × it.
    NcclTestsMinBw(f64),
}

/// nccl-tests fails a run whose average busbw is below this share of `NCCL_TESTS_MIN_BW`
/// (2.19.6, `src/common.cu`); `nccl_tests_min_bw` passes at it.
pub const NCCL_TESTS_MIN_BW_SHARE: f64 = 0.9;

/// `relative: { to, busbw }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Relative {
    /// The job ID compared with (a test name of one job is resolved to its job's ID).
    pub to: String,
    pub busbw: Threshold,
    /// Another run's results file holding `to`, as the plan names it (relative to the plan);
    /// `None`: `to` is a job of the same run.
    pub results: Option<String>,
}

impl Check {
    pub fn key(&self) -> &'static str {
        match self {
            Check::Busbw(_) => "busbw",
            Check::Algbw(_) => "algbw",
            Check::Time(_) => "time",
            Check::Wrong(_) => "wrong",
            Check::Transport(_) => "transport",
            Check::Regression(_) => "regression",
            Check::Variance(_) => "variance",
            Check::GroupSpread(_) => "group_spread",
            Check::Outlier(_) => "outlier",
            Check::Straggler(_) => "straggler",
            Check::Profile(_) => "busbw",
            Check::Relative(_) => "relative",
            Check::Trend(_) => "trend",
            Check::NcclTestsMinBw(_) => "nccl_tests_min_bw",
        }
    }
}

/// One pass criterion of a test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Criterion {
    pub check: Check,
    /// Requested sizes it applies to; `None` = every size.
    pub at: Option<SizeSelector>,
    pub severity: Severity,
    /// Narrowed placement; `None` = every placement that ran.
    pub in_place: Option<InPlace>,
}

/// The matrix axes of a test in canonical order; a job takes one value of each.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Axes {
    pub collective: Vec<Collective>,
    pub dtype: Vec<Dtype>,
    pub op: Vec<RedOp>,
    /// `None` inside: no split.
    pub split: Vec<Option<SplitSpec>>,
    pub env: Vec<IndexMap<String, String>>,
    /// Axes the user listed (in `matrix`, or a `collective` list): these name jobs.
    pub named: Vec<&'static str>,
}

impl Axes {
    /// The ops the jobs of collective `c` take. The op axis only multiplies collectives that
    /// reduce; the others take its first value, which they ignore.
    pub fn ops(&self, c: Collective) -> &[RedOp] {
        if c.reduces() {
            &self.op
        } else {
            &self.op[..self.op.len().min(1)]
        }
    }

    /// How many jobs the test expands to, counted the way `expand` builds them, without building
    /// them (the plan's job limit is checked on this).
    pub fn job_count(&self) -> u64 {
        let rest = [self.dtype.len(), self.split.len(), self.env.len()]
            .iter()
            .fold(1u64, |n, len| n.saturating_mul(*len as u64));
        self.collective
            .iter()
            .map(|c| rest.saturating_mul(self.ops(*c).len() as u64))
            .fold(0u64, u64::saturating_add)
    }
}

/// A split as written and as parsed.
#[derive(Debug, Clone, Serialize)]
pub struct SplitSpec {
    pub text: String,
    #[serde(skip)]
    pub split: Split,
}

/// The same split whatever its spelling: `DIV 8`, `div 8` and `/8` form the same groups, so a
/// matrix listing two of them would run one job twice under two IDs.
impl PartialEq for SplitSpec {
    fn eq(&self, other: &Self) -> bool {
        self.split == other.split
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Test {
    pub name: String,
    pub sizes: Sizes,
    pub root: u32,
    pub env: IndexMap<String, String>,
    pub settings: Settings,
    pub axes: Axes,
    pub repeat: Repeat,
    pub expect: Vec<Criterion>,
    /// The node sets it runs on.
    pub over: Over,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub version: u32,
    pub name: String,
    pub description: Option<String>,
    pub backend: Backend,
    pub launch: Launch,
    pub nodes: Nodes,
    pub env: IndexMap<String, String>,
    pub tests: Vec<Test>,
    pub baseline: Option<String>,
    /// History store `trend` criteria are graded against, relative to the plan file.
    pub history: Option<String>,
    /// Hardware profile `… of profile` criteria read (a name or a plan-relative file); `None`:
    /// picked at grade time from the recorded GPUs.
    pub profile: Option<String>,
    /// Node evidence around every job and the fleet preflight (`evidence:`, default true).
    pub evidence: bool,
    /// What the plan's `fleet:` declares, in the inventory's words (field, value).
    pub fleet: crate::nodeset::fleet::Declared,
}

/// Processes per node of an mpi-backend plan that leaves `launch.ranks_per_node` open: two is
/// the fewest that exercise a collective, and runs on any machine.
pub const DEFAULT_MPI_RANKS_PER_NODE: u32 = 2;

impl Plan {
    /// Ranks per node as runs start them: `launch.ranks_per_node` (times GPUs per rank), else,
    /// for the host backend, [`DEFAULT_MPI_RANKS_PER_NODE`]; `None` for nccl left open.
    pub fn ranks_per_node(&self) -> Option<u64> {
        self.launch
            .ranks_per_node_total()
            .or((self.backend == Backend::Mpi).then_some(DEFAULT_MPI_RANKS_PER_NODE as u64))
    }
}
