use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::collective::{Collective, Dtype, RedOp};
use crate::plan::revision::GitRevision;
use crate::plan::{Average, Backend, InPlace};

/// One results file: the measurements of one run (or one ingest) of a plan's jobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "baton results")]
pub struct Results {
    /// Always `baton-results`.
    pub format: String,
    /// Format version; this baton reads 1.
    pub version: u32,
    pub producer: Producer,
    /// The plan the jobs came from, when known (ingested logs may have none).
    pub plan: Option<PlanRef>,
    /// RFC 3339 UTC.
    pub started: Option<String>,
    /// RFC 3339 UTC; absent while a run is still writing or when it was cut short.
    pub finished: Option<String>,
    /// The signal that stopped the run and when (`SIGTERM at 2026-…`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    /// The fault a test build injected into this run (`BATON_FAULT`, e.g. `stall:rank=1`):
    /// its failures are made, not measured. Absent in every other run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected_fault: Option<String>,
    pub environment: Environment,
    pub jobs: Vec<JobResult>,
    /// The node list of a node-set run, in the order node indices refer to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_list: Vec<String>,
    /// Every node set a node-set run started, with how its launcher step ended: what
    /// attribution needs beyond the verdicts of its jobs (nodes that never started).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_sets: Vec<SetRun>,
    /// What a `--rerun-failed` run carries over from the run it reruns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun: Option<Rerun>,
    /// The fleet consistency preflight of a node-set run (`docs/evidence.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight: Option<super::evidence::Preflight>,
}

/// What a rerun takes from the earlier run: a rerun of a few nodes has no fleet of its own and
/// no sound node to pair a suspect with, so it brings both along.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Rerun {
    /// The `nodes.json` it reruns.
    pub of: String,
    /// Nodes that run passed: each failed or suspect node is paired with some of them.
    #[serde(default)]
    pub known_good: Vec<String>,
    /// The earlier run's sets' values for `outlier` criteria, the fleet a rerun's sets are
    /// judged against.
    #[serde(default)]
    pub fleet: Vec<FleetValue>,
}

/// One earlier node set's value for one `outlier` criterion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FleetValue {
    /// The plan job it was a node set of.
    pub job: String,
    /// The criterion as the report writes it (`outlier <= 10% at 1M`).
    pub criterion: String,
    /// Nodes in the set: its shape.
    pub nodes: u32,
    /// Its median busbw at the criterion's size, GB/s.
    pub busbw: f64,
}

/// The node set a job ran on: its hosts, and the round of its test's schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NodeSetRef {
    /// The plan job this is one node set of.
    pub job: String,
    /// Round of the test's schedule, from 1.
    pub round: u32,
    /// The set's place in its round, from 0.
    pub index: u32,
    /// Hostnames, in node-list order.
    pub hosts: Vec<String>,
}

/// One node set's launcher step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SetRun {
    /// The test it ran.
    pub test: String,
    pub round: u32,
    pub index: u32,
    pub hosts: Vec<String>,
    /// Its own journal, relative to the run's output directory.
    pub journal: String,
    /// The step's output, relative to the run's output directory.
    pub log: String,
    /// How the step ended (`exit 0`, `timed out after 90 s`); absent while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    /// Hosts proven dead: the step failed and they did not answer a trivial step after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dead: Vec<String>,
    /// Wall time of the step, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// The launcher's own refusal of the step (Slurm could not create it, PMI did not start,
    /// the program was not found): a fault of the launch, not of the set's nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// What the launcher said of a node when the step failed (`srun: error: Node failure on
    /// node06`), as it printed it: the cause beside the probe's verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher: Option<String>,
}

impl Results {
    /// These results with the site file their plan was laid over recorded.
    pub fn with_site(mut self, site: Option<crate::site::SiteRef>) -> Self {
        if let Some(p) = &mut self.plan {
            p.site = site;
        }
        self
    }

    pub fn new(producer: Producer) -> Self {
        Results {
            format: super::FORMAT.to_string(),
            version: super::VERSION,
            producer,
            plan: None,
            started: Some(super::now_rfc3339()),
            finished: None,
            interrupted: None,
            injected_fault: None,
            environment: Environment::default(),
            jobs: Vec::new(),
            node_list: Vec::new(),
            node_sets: Vec::new(),
            rerun: None,
            preflight: None,
        }
    }

    pub fn job(&self, id: &str) -> Option<&JobResult> {
        self.jobs.iter().find(|j| j.id == id)
    }
}

/// Which program and command wrote the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Producer {
    /// `baton`.
    pub tool: String,
    pub version: String,
    /// `run` or `ingest`.
    pub command: String,
    /// Where the data came from beyond the command: ingested log paths, the launcher.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

impl Producer {
    pub fn baton(command: &str) -> Self {
        Producer {
            tool: "baton".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            command: command.into(),
            sources: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanRef {
    pub name: String,
    /// Path of the plan file as given to the command.
    pub file: Option<String>,
    /// Identity of what the plan measures (`sha256:…` over its name, launch and every job's
    /// identity); `--resume` continues only results of the same plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// The plan's `description`, so a report of these results can say what they were for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The git commit the plan file was at when it ran, when it is in a repository: a report
    /// names exactly which plan version produced the numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitRevision>,
    /// The site file laid over the plan (`--site`, `BATON_SITE` or the default): where it was
    /// and a hash of its bytes, never its values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<crate::site::SiteRef>,
}

/// Where the measurements were taken: what a handover report must name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Environment {
    #[serde(default)]
    pub hosts: Vec<Host>,
    pub driver_version: Option<String>,
    pub cuda_version: Option<String>,
    /// NCCL version as `2.28.3`.
    pub nccl_version: Option<String>,
    pub mpi_version: Option<String>,
    /// `nvidia-smi topo -m` of the first host, when available.
    pub topology: Option<String>,
    /// NCCL_*, CUDA_* and other variables that shape the results.
    // Allow-listed, secrets' values `<redacted>`, whoever wrote the file (`crate::secrets`).
    #[serde(default, with = "crate::secrets::serde_recorded")]
    #[schemars(with = "IndexMap<String, String>")]
    pub variables: IndexMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Host {
    pub hostname: String,
    #[serde(default)]
    pub gpus: Vec<Gpu>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Gpu {
    /// CUDA device ordinal on its host.
    pub index: u32,
    pub name: String,
    pub uuid: Option<String>,
    /// PCI bus id, e.g. `0000:18:00.0`.
    pub pci_bus_id: Option<String>,
    pub memory_bytes: Option<u64>,
}

/// Results of one expanded job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobResult {
    /// Job ID from `baton expand`, e.g. `intra-node-allreduce[dtype=bfloat16]`.
    pub id: String,
    /// Test name in the plan (the part of the ID before `[`).
    pub test: String,
    /// Identity of what was measured (`sha256:…` over backend, collective, dtype, op, root,
    /// split, env, sizes, settings, repeats and ranks): results are graded or resumed only
    /// against a plan job with the same identity. Absent in ingested logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    pub backend: Backend,
    pub collective: Collective,
    pub dtype: Dtype,
    /// Reduction operator; `None` for collectives that do not reduce.
    pub op: Option<RedOp>,
    /// Root rank; `None` for rootless collectives.
    pub root: Option<u32>,
    /// NCCL_TESTS_SPLIT expression, as written.
    pub split: Option<String>,
    /// Variables the plan set for this job (ingest: the variables the log states).
    // Secrets' values are `<redacted>`, whoever wrote the file (`crate::secrets`).
    #[serde(default, with = "crate::secrets::serde_redacted")]
    #[schemars(with = "IndexMap<String, String>")]
    pub env: IndexMap<String, String>,
    pub settings: JobSettings,
    pub layout: Layout,
    /// Split groups (one entry per color); empty without a split.
    #[serde(default)]
    pub groups: Vec<GroupInfo>,
    /// One entry per repeat of the sweep, in order.
    #[serde(default)]
    pub repeats: Vec<Repeat>,
    /// Transport per channel and peer pair, when captured.
    #[serde(default)]
    pub transports: Vec<TransportLink>,
    /// GPU telemetry around the job, to tell a slow run from a hot one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub telemetry: Vec<TelemetrySample>,
    pub status: JobStatus,
    /// The `# Avg bus bandwidth` an ingested nccl-tests log printed for this job's run (GB/s,
    /// the mean busbw over every cell of the run), kept as the log's own claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_avg_busbw: Option<f64>,
    /// Errors not tied to one cell (init failures, launcher errors) and copies of cell errors.
    #[serde(default)]
    pub errors: Vec<JobError>,
    /// How `grade` pairs this job with a plan job. Absent (`id`) for `run` and `ingest --job`.
    #[serde(default, skip_serializing_if = "MatchBy::is_id")]
    pub match_by: MatchBy,
    /// Logs the job was read from (ingest), so a verdict can name the file a number came from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// The node set it ran on, in a node-set run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_set: Option<NodeSetRef>,
    /// Per node the job ran on: snapshots before and after it and what moved (node evidence,
    /// `docs/evidence.md`); absent when the run took none (`evidence: false`, ingested logs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<super::evidence::NodeEvidence>,
    /// The NCCL and engine flags the job was measured with (absent: the host backend, or a
    /// results file older than the record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_with: Option<super::MeasuredWith>,
}

/// How a job's results find their plan job. A log nobody labelled cannot know the plan's job ID,
/// so grading falls back to what the log itself states.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatchBy {
    /// `id` is a plan job ID (written by `run`, or given with `ingest --job`).
    #[default]
    Id,
    /// `id` is only descriptive; match by collective, dtype, op, root and split.
    Attributes,
}

impl MatchBy {
    pub fn is_id(&self) -> bool {
        *self == MatchBy::Id
    }
}

impl JobResult {
    /// Every measured cell of every repeat with its row, for graders.
    pub fn cells(&self) -> impl Iterator<Item = (&Repeat, &Row, Placement, &Cell)> {
        self.repeats.iter().flat_map(|rep| {
            rep.rows.iter().flat_map(move |row| {
                row.out_of_place
                    .iter()
                    .map(move |c| (rep, row, Placement::OutOfPlace, c))
                    .chain(
                        row.in_place
                            .iter()
                            .map(move |c| (rep, row, Placement::InPlace, c)),
                    )
            })
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobSettings {
    pub iters: u32,
    pub warmup: u32,
    pub agg_iters: u32,
    pub cuda_graph: u32,
    pub check: bool,
    pub average: Average,
    pub in_place: InPlace,
    /// Per-iteration, per-rank timing was on (`iterations: true`, nccl-tests `-I 1`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub iterations: bool,
    /// nccl-tests' engine flags (`register`, `cta_policy`, `device_api`, `blocking`,
    /// `null_stream`, `per_iter_skip`); each absent when off.
    #[serde(default, flatten)]
    pub knobs: crate::plan::knobs::Knobs,
}

impl From<&crate::plan::Settings> for JobSettings {
    fn from(s: &crate::plan::Settings) -> Self {
        JobSettings {
            iters: s.iters,
            warmup: s.warmup,
            agg_iters: s.agg_iters,
            cuda_graph: s.cuda_graph,
            check: s.check,
            average: s.average,
            in_place: s.in_place,
            iterations: s.iterations,
            knobs: s.knobs,
        }
    }
}

/// The ranks of the communicator (or of all groups together, when split).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Layout {
    /// Plan ranks: processes × GPUs per process.
    pub nranks: u64,
    pub nodes: u32,
    pub processes: u32,
    pub gpus_per_process: u32,
    #[serde(default)]
    pub ranks: Vec<RankInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RankInfo {
    /// Plan rank (global, numbered node by node).
    pub rank: u64,
    pub host: String,
    pub pid: Option<u32>,
    /// CUDA device ordinal on the host; `None` for the host backend.
    pub device: Option<u32>,
    pub gpu_uuid: Option<String>,
    pub pci_bus_id: Option<String>,
    /// Split color of the rank's group.
    pub group: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GroupInfo {
    /// Split color.
    pub color: u64,
    /// Plan ranks in the group, ascending (group rank = index).
    pub members: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Repeat {
    /// 0-based.
    pub index: u32,
    pub started: Option<String>,
    pub rows: Vec<Row>,
}

/// One requested size: nccl-tests' table row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Row {
    /// Requested size in bytes (the swept value that `at:` selects).
    pub requested: u64,
    /// Size nccl-tests prints (can be smaller than requested for chunked collectives).
    pub size: u64,
    /// nccl-tests' count column (per rank or per peer for chunked collectives).
    pub count: u64,
    pub out_of_place: Option<Cell>,
    pub in_place: Option<Cell>,
}

impl Row {
    pub fn cell(&self, p: Placement) -> Option<&Cell> {
        match p {
            Placement::OutOfPlace => self.out_of_place.as_ref(),
            Placement::InPlace => self.in_place.as_ref(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    OutOfPlace,
    InPlace,
}

impl Placement {
    pub fn label(self) -> &'static str {
        match self {
            Placement::OutOfPlace => "out-of-place",
            Placement::InPlace => "in-place",
        }
    }
}

/// One placement of one size: nccl-tests' half-row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Cell {
    pub status: CellStatus,
    /// µs per op, aggregated across ranks by the `average` mode.
    pub time_us: Option<f64>,
    /// GB/s (1e9 B/s).
    pub algbw: Option<f64>,
    /// GB/s (1e9 B/s).
    pub busbw: Option<f64>,
    /// Wrong elements summed over all ranks; `None` when not checked (nccl-tests `N/A`).
    pub wrong: Option<u64>,
    pub error: Option<String>,
    /// Per split group; empty without a split.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupCell>,
    /// Per-iteration, per-rank timing (`iterations: true`); absent when it was off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<Iterations>,
    /// µs per op the host spent enqueueing, aggregated like `time_us` (`cpu_time: true`,
    /// nccl-tests `-C 1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time_us: Option<f64>,
    /// When the cell finished, RFC 3339 (`timestamps: true`, nccl-tests `-S 1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// The distribution of one series of iteration times, µs per op, as nccl-tests `-I` computes
/// it: p50 the upper median, p95/p99 nearest-rank, stdev over the whole population.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IterationStats {
    pub min_us: f64,
    pub max_us: f64,
    pub avg_us: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub stdev_us: f64,
    /// stdev / avg, in percent (nccl-tests `i_cv%`).
    pub cv_pct: f64,
}

/// A cell's iterations: what nccl-tests `-I` prints, and each rank's own share of it, so the
/// rank that makes an iteration slow can be named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Iterations {
    /// Over each iteration's slowest rank (nccl-tests' `i_min`, `i_max`, `i_p99`, `i_cv%`,
    /// which take the max over process rows per iteration).
    pub summary: IterationStats,
    /// Each iteration's time on its slowest rank (nccl-tests' `times_us`).
    pub times_us: Vec<f64>,
    /// Every rank's own iterations, in plan-rank order.
    pub ranks: Vec<RankIterations>,
}

/// One rank's iterations of a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RankIterations {
    /// Plan rank.
    pub rank: u64,
    #[serde(flatten)]
    pub stats: IterationStats,
    /// Per iteration, the host time from the previous call's return to this iteration's start
    /// (µs per iteration): where a rank that arrives late spends its lateness, while its peers
    /// wait inside the call (`runner::host_clock`). Absent in results recorded before it and
    /// in logs of nccl-tests, which has no such figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between_calls: Option<IterationStats>,
}

impl Iterations {
    /// The rank whose p99 time between calls is highest (the first of equals), with those
    /// figures; `None` without them.
    pub fn latest(&self) -> Option<(u64, &IterationStats)> {
        self.ranks
            .iter()
            .filter_map(|r| Some((r.rank, r.between_calls.as_ref()?)))
            .fold(None, |best: Option<(u64, &IterationStats)>, x| match best {
                Some(b) if b.1.p99_us >= x.1.p99_us => Some(b),
                _ => Some(x),
            })
    }

    /// The rank whose iteration p99 is highest (the first of equals).
    pub fn slowest(&self) -> Option<&RankIterations> {
        self.ranks
            .iter()
            .fold(None, |best: Option<&RankIterations>, r| match best {
                Some(b) if b.stats.p99_us >= r.stats.p99_us => Some(b),
                _ => Some(r),
            })
    }
}

impl Cell {
    pub fn measured(time_us: f64, algbw: f64, busbw: f64, wrong: Option<u64>) -> Self {
        Cell {
            status: CellStatus::Ok,
            time_us: Some(time_us),
            algbw: Some(algbw),
            busbw: Some(busbw),
            wrong,
            error: None,
            groups: Vec::new(),
            iterations: None,
            cpu_time_us: None,
            timestamp: None,
        }
    }

    pub fn failed(status: CellStatus, error: impl Into<String>) -> Self {
        Cell {
            status,
            time_us: None,
            algbw: None,
            busbw: None,
            wrong: None,
            error: Some(error.into()),
            groups: Vec::new(),
            iterations: None,
            cpu_time_us: None,
            timestamp: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CellStatus {
    Ok,
    Error,
    Timeout,
    /// Not run (e.g. does not fit in GPU memory, or the job stopped before it).
    Skipped,
}

/// One split group's figures for a cell; time aggregated over the group's ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GroupCell {
    pub color: u64,
    pub time_us: f64,
    pub algbw: f64,
    pub busbw: f64,
    pub wrong: Option<u64>,
}

/// A connection NCCL reported: channel, peer pair and the transport it chose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TransportLink {
    pub channel: u32,
    /// Rank (within its communicator) that sends.
    pub from_rank: u64,
    pub to_rank: u64,
    /// Transport class: P2P, SHM, NET, NET/IB, NET/Socket, NVLS, CollNet.
    pub transport: String,
    /// The text NCCL printed after `via`, e.g. `P2P/direct pointer`, `NET/IB/0/GDRDMA`.
    pub detail: String,
    /// Host whose log reported it.
    pub host: Option<String>,
    /// Communicator hash / group color the line belongs to, when known.
    pub comm: Option<String>,
}

/// GPU state sampled before or after a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TelemetrySample {
    /// `before` or `after`.
    pub when: String,
    pub host: String,
    pub gpu: u32,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub temperature_c: Option<u32>,
    pub power_w: Option<f64>,
    #[serde(default)]
    pub throttle_reasons: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Every planned cell ran (some may still have errors; see the cells).
    Completed,
    /// Still being written, or cut short (crash, Ctrl-C): the cells present are valid.
    Partial,
    /// The job could not run (init failure, launcher error).
    Error,
    /// A collective hung and was aborted.
    Timeout,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobError {
    pub kind: ErrorKind,
    pub message: String,
    pub repeat: Option<u32>,
    pub requested: Option<u64>,
    pub placement: Option<Placement>,
    /// At a hang, what NCCL's RAS said: per rank host, pid, GPU, init and abort state,
    /// asynchronous error and collective counts, and the hosts it named (`docs/nccl-evidence.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ras: Option<Box<crate::ras::Record>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    Nccl,
    Cuda,
    Mpi,
    OutOfMemory,
    Timeout,
    Launcher,
    /// A signal (Ctrl-C, Slurm's time limit, scancel) stopped the run during this job.
    Interrupted,
    /// The results could not be written (disk full, unwritable output).
    Output,
    Other,
}
