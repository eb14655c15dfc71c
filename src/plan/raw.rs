//! The plan file exactly as written: serde types with a location on every leaf that a semantic
//! check may need to point at. The JSON Schema in `schemas/plan.schema.json` is generated from
//! these types, so editors and `baton check` agree on the shape.
//!
//! No `#[serde(flatten)]` and no untagged enums: both make serde buffer values and lose locations.
//! Polymorphic fields (`collective`, `sizes`, `repeat`, `env`) are read as located [`Node`]s and
//! interpreted by the checker.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Deserialize;

use super::loc::{Loc, Node, Scalar};
use crate::collective::{Collective, Dtype, RedOp};

macro_rules! with_settings {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident : $t:ty,)* }) => {
        $(#[$m])*
        pub struct $name {
            $($(#[$fm])* pub $f: $t,)*
            /// Datatype (nccl-tests `-d`); NCCL aliases such as `bf16` or `fp32` are accepted.
            #[schemars(with = "Option<Dtype>")]
            pub dtype: Option<Loc<String>>,
            /// Reduction operator (nccl-tests `-o`).
            #[schemars(with = "Option<RedOp>")]
            pub op: Option<Loc<String>>,
            /// Timed iterations per size (nccl-tests `-n`, default 20).
            #[schemars(range(min = 1))]
            pub iters: Option<Loc<i64>>,
            /// Warm-up iterations per size of the warm-up sweep (nccl-tests `-w`, default 1).
            #[schemars(range(min = 0))]
            pub warmup: Option<Loc<i64>>,
            /// Operations aggregated per timed iteration in one NCCL group (nccl-tests `-m`, default 1).
            #[schemars(range(min = 1))]
            pub agg_iters: Option<Loc<i64>>,
            /// Capture the timed loop in a CUDA graph launched this many times (nccl-tests `-G`, default 0 = off).
            #[schemars(range(min = 0))]
            pub cuda_graph: Option<Loc<i64>>,
            /// Validate data after timing (nccl-tests `-c`, default true). Any `#wrong > 0` fails the job.
            pub check: Option<Loc<bool>>,
            /// How per-rank times combine (nccl-tests `-a`): rank0, avg (default), min, max.
            #[schemars(with = "Option<AverageName>")]
            pub average: Option<Loc<String>>,
            /// Which placements to run: both (default), out (out-of-place only), in (in-place only).
            #[schemars(with = "Option<InPlaceName>")]
            pub in_place: Option<Loc<String>>,
            /// Longest one size may take (warm-up + iterations) before it counts as hung, e.g. `5m`.
            pub timeout: Option<Loc<String>>,
            /// Per-iteration, per-rank timing (nccl-tests `-I 1`, default false); not with `cuda_graph`.
            pub iterations: Option<Loc<bool>>,
            /// Buffer registration (nccl-tests `-R`): 0 none (default), 1 `ncclCommRegister`,
            /// 2 symmetric windows (NCCL ≥ 2.27). nccl backend only.
            #[schemars(range(min = 0, max = 2))]
            pub register: Option<Loc<i64>>,
            /// `NCCL_CTA_POLICY` of the communicators (nccl-tests `-x`): 0 default, 1 efficiency,
            /// 2 zero-CTA copy-engine collectives (NCCL ≥ 2.28); absent: NCCL's. nccl backend only.
            #[schemars(range(min = 0, max = 2))]
            pub cta_policy: Option<Loc<i64>>,
            /// NCCL device API implementation (nccl-tests `-D`, > 0, NCCL ≥ 2.28, `register: 2`).
            #[schemars(range(min = 1))]
            pub device_api: Option<Loc<i64>>,
            /// CTAs of the device API implementation (nccl-tests `-V`, 1–128, default 16).
            #[schemars(range(min = 1, max = 128))]
            pub device_ctas: Option<Loc<i64>>,
            /// Wait after each op (nccl-tests `-z`): 0 no (default), 1 wait + barrier, 2 wait,
            /// 3 wait + barrier per iteration with the barrier outside the clock.
            #[schemars(range(min = 0, max = 3))]
            pub blocking: Option<Loc<i64>>,
            /// Ops on the default (null) CUDA stream (nccl-tests `-y`, default false). nccl backend only.
            pub null_stream: Option<Loc<bool>>,
            /// Each rank initialises its communicator on its own thread (nccl-tests `-p 1`): what
            /// baton always does; `false` is refused.
            pub parallel_init: Option<Loc<bool>>,
            /// Record the CPU time of the enqueue loop per cell (nccl-tests `-C`, default false).
            pub cpu_time: Option<Loc<bool>>,
            /// Record the wall-clock time each row finished (nccl-tests `-S`, default false).
            pub timestamps: Option<Loc<bool>>,
            /// Record GPU memory per rank (nccl-tests `-M`): initialisation, user-allocated,
            /// collective. nccl backend only.
            pub memory: Option<Loc<bool>>,
            /// Sweeps run, one repeat each (nccl-tests `-N`, at least 1); not with `repeat`.
            #[schemars(range(min = 1))]
            pub run_cycles: Option<Loc<i64>>,
            /// Leading iterations left out of the per-iteration statistics (nccl-tests `-K`,
            /// needs `iterations: true`, below `iters`).
            #[schemars(range(min = 0))]
            pub per_iter_skip: Option<Loc<i64>>,
        }
    };
}

/// A baton acceptance plan, version 1.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "baton plan")]
pub struct RawPlan {
    /// Plan language version. Only 1 exists.
    #[schemars(with = "VersionOne")]
    pub version: Loc<Scalar>,
    /// Plan name: letters, digits, `.`, `_`, `-`.
    #[schemars(regex(pattern = r"^[A-Za-z0-9._-]+$"))]
    pub name: Loc<String>,
    /// Free text shown in reports.
    pub description: Option<String>,
    /// `nccl` (GPU, the default) or `mpi` (host memory, MPI collectives).
    #[schemars(with = "Option<BackendName>")]
    pub backend: Option<Loc<String>>,
    /// Rank layout, used by `run` and `render`.
    pub launch: Option<RawLaunch>,
    /// The node list that tests with `over:` split into node sets, and its topology.
    pub nodes: Option<RawNodes>,
    /// Environment variables exported to every rank of every test.
    #[schemars(with = "Option<EnvMap>")]
    pub env: Option<Loc<Node>>,
    /// Settings every test inherits unless it sets its own.
    pub defaults: Option<RawSettings>,
    /// The tests; names must be unique.
    #[schemars(length(min = 1))]
    pub tests: Loc<Vec<Loc<RawTest>>>,
    /// Results file that `regression` criteria compare against (grade/run may override it).
    pub baseline: Option<Loc<String>>,
    /// History store (SQLite, from `baton history add`) that `trend` criteria compare against,
    /// relative to the plan file (grade/run `--history` overrides it).
    pub history: Option<Loc<String>>,
    /// Hardware profile for `busbw: ">= 90% of profile"` criteria: a built-in name
    /// (`h200-sxm-8`), a name in `profiles/` beside the plan, or a plan-relative `.yaml` path.
    /// Omitted: picked at grade time from the recorded GPU model and count.
    pub profile: Option<Loc<String>>,
    /// Take node evidence (a probe snapshot before and after every job on every node, the
    /// fleet consistency preflight of node-set runs). Default true; `baton run --no-evidence`
    /// turns it off for one run.
    pub evidence: Option<bool>,
    /// What every node of the node list must have, checked by the fleet consistency preflight
    /// before the bandwidth rounds (beside the fleet's majority, which is always compared).
    pub fleet: Option<RawFleet>,
}

/// The configuration the plan declares for every node (`docs/evidence.md`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFleet {
    /// GPUs per node.
    pub gpus: Option<u64>,
    /// GPU model as NVML names it (`NVIDIA H200`).
    pub gpu_model: Option<String>,
    /// InfiniBand/RoCE ports per node and their rate.
    pub nics: Option<RawNics>,
    /// MTU of every interface.
    pub mtu: Option<u64>,
    /// PCIe link of every GPU: `Gen5 x16`.
    pub pcie: Option<Loc<String>>,
    /// nvidia_peermem loaded (GPUDirect RDMA).
    pub peermem: Option<bool>,
    /// NVIDIA driver version (`580.95.05`).
    pub driver: Option<String>,
    /// NCCL version (`2.28.3`).
    pub nccl: Option<String>,
}

/// NICs a node must have.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawNics {
    pub count: Option<u64>,
    /// Rate of every port: `400 Gb/s`.
    pub rate: Option<Loc<String>>,
}

/// Where and how many ranks run.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLaunch {
    /// Number of nodes (default 1).
    #[schemars(range(min = 1))]
    pub nodes: Option<Loc<i64>>,
    /// Ranks (processes) per node; default: all local GPUs for nccl, 2 for mpi, resolved at run.
    #[schemars(range(min = 1))]
    pub ranks_per_node: Option<Loc<i64>>,
    /// GPUs driven by each rank (nccl-tests `-g`, default 1).
    #[schemars(range(min = 1))]
    pub gpus_per_rank: Option<Loc<i64>>,
    pub slurm: Option<RawSlurm>,
    pub mpirun: Option<RawMpirun>,
    /// Where rendered scripts find baton at run time: `path` (the default: `baton` and
    /// `baton-mpi` by name, from PATH, a module or `setup`), an absolute path of `baton`
    /// (`baton-mpi` beside it), or `image` / `image:/path/in/image/baton` (inside
    /// `launch.slurm.container_image`). `render --baton` overrides it.
    pub baton: Option<Loc<String>>,
    /// Shell lines the scripts run before their steps (`module load …`, site exports):
    /// trusted shell, rendered verbatim, so refused unless `--trust-plan`.
    pub setup: Option<Vec<Loc<String>>>,
}

/// Where the node list comes from: the allocation at run time (the default: Slurm's
/// `SLURM_JOB_NODELIST`), an explicit hostlist, or a hostfile.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawNodes {
    /// A Slurm hostlist, e.g. `node[01-32,40]`.
    pub hostlist: Option<Loc<String>>,
    /// A file with one host (or hostlist) per line, relative to the plan; Open MPI (`node01
    /// slots=8`) and MPICH (`node01:8`) hostfiles work.
    pub hostfile: Option<Loc<String>>,
    /// Hosts to leave out, as a hostlist.
    pub exclude: Option<Loc<String>>,
    /// Topology domains (racks, NVLink domains) as hostlists: `over: isolate` screens one per
    /// domain and bisects at their boundaries.
    pub domains: Option<Loc<Vec<Loc<String>>>>,
}

/// `#SBATCH` options for `render --target slurm`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSlurm {
    pub partition: Option<Loc<String>>,
    pub account: Option<Loc<String>>,
    /// `#SBATCH --qos`.
    pub qos: Option<Loc<String>>,
    /// `#SBATCH --reservation`.
    pub reservation: Option<Loc<String>>,
    /// Wall-time limit in Slurm's format (`MM`, `HH:MM:SS`, `D-HH:MM`...).
    pub time: Option<Loc<String>>,
    pub exclusive: Option<Loc<bool>>,
    /// `srun --mpi=` plugin (default `none` for the nccl backend, whose ranks meet over baton's
    /// TCP rendezvous; `pmix` for the mpi backend).
    pub mpi: Option<Loc<String>>,
    /// Extra `#SBATCH` flags, one per item, e.g. `--qos=high`.
    pub extra: Option<Vec<Loc<String>>>,
    /// pyxis container image (`--container-image`).
    pub container_image: Option<Loc<String>>,
    /// pyxis container mounts (`--container-mounts`).
    pub container_mounts: Option<Loc<String>>,
    /// The name pyxis keeps the imported image under, so later steps reuse it
    /// (`--container-name`; default `baton-PLAN`).
    #[schemars(regex(pattern = r"^[A-Za-z0-9._-]+$"))]
    pub container_name: Option<Loc<String>>,
    /// Variables of the launching environment that override the image's (`--container-env`).
    pub container_env: Option<Vec<Loc<String>>>,
    /// Options of every `srun` step, one per item: `--name` or `--name=value`, e.g.
    /// `--network=sn_all`. A `--cpus-per-task`/`-c` or `--cpu-bind` here replaces baton's default.
    pub step: Option<Vec<Loc<String>>>,
    /// CPUs per rank for `srun --cpus-per-task`: `auto` (the default: the node's CPUs shared by
    /// its ranks, computed in the job from SLURM_CPUS_ON_NODE), a number, or `off`.
    #[schemars(with = "Option<CpusPerTask>")]
    pub cpus_per_task: Option<Loc<Scalar>>,
    /// `srun --cpu-bind=` value (default `cores`; `off` leaves the option out).
    pub cpu_bind: Option<Loc<String>>,
    /// `srun --gpu-bind=` value, e.g. `closest` or `single:1` (default: none).
    pub gpu_bind: Option<Loc<String>>,
}

/// Options for `render --target mpirun`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMpirun {
    /// Hostfile; rendered with `slots=` per host.
    pub hostfile: Option<Loc<String>>,
    /// Extra mpirun arguments, one per item.
    pub extra: Option<Vec<Loc<String>>>,
    /// More variables mpirun forwards from the launching shell to every rank, besides the plan's
    /// and the built-in prefixes: names (`MY_FLAG`) or prefixes ending in `*` (`FI_*`).
    pub forward: Option<Vec<Loc<String>>>,
}

with_settings! {
    /// Settings inherited by every test.
    #[derive(Debug, Default, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct RawSettings {}
}

with_settings! {
    /// One test: a collective sweep with its criteria, expanded over its matrix into jobs.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct RawTest {
        /// Unique test name: letters, digits, `.`, `_`, `-`.
        #[schemars(regex(pattern = r"^[A-Za-z0-9._-]+$"))]
        pub name: Loc<String>,
        /// One collective or a list of them (one job each). Give this or `matrix.collective`.
        #[schemars(with = "Option<CollectiveField>")]
        pub collective: Option<Loc<Node>>,
        /// Requested sizes: `{from, to, factor}`, `{from, to, step}`, or a list.
        #[schemars(with = "SizesField")]
        pub sizes: Loc<Node>,
        /// Root rank for broadcast and reduce (a rank of the group when split). Default 0.
        #[schemars(range(min = 0))]
        pub root: Option<Loc<i64>>,
        /// NCCL_TESTS_SPLIT expression, e.g. `DIV 8`, `MOD 8`, `OR 1`, `AND 0x7`.
        pub split: Option<Loc<String>>,
        /// Environment merged over the plan's.
        #[schemars(with = "Option<EnvMap>")]
        pub env: Option<Loc<Node>>,
        /// Node sets the test runs on: `all` (default: the whole node list as one job),
        /// `each-node`, `pairs` (every pair), `{pairs: {rounds: K, seed: S}}`, `{pairs: ring}`,
        /// `isolate` (adaptive fault isolation), or `gpu-pairs` (every GPU pair inside each node,
        /// by communicator splits: a split axis of circle-method rounds, not node sets).
        #[schemars(with = "Option<OverField>")]
        pub over: Option<Loc<Node>>,
        /// Cartesian axes; each job takes one value of every axis.
        pub matrix: Option<RawMatrix>,
        /// Repeat the job's sweep N times, or for a duration (`1h`).
        #[schemars(with = "Option<RepeatField>")]
        pub repeat: Option<Loc<Node>>,
        /// Pass criteria.
        pub expect: Option<Loc<Vec<RawCriterion>>>,
    }
}

/// Matrix axes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMatrix {
    /// Collectives, one job each; instead of the test's `collective`, not with it.
    #[schemars(with = "Option<Vec<Collective>>")]
    pub collective: Option<Loc<Vec<Loc<String>>>>,
    #[schemars(with = "Option<Vec<Dtype>>")]
    pub dtype: Option<Loc<Vec<Loc<String>>>>,
    #[schemars(with = "Option<Vec<RedOp>>")]
    pub op: Option<Loc<Vec<Loc<String>>>>,
    pub split: Option<Loc<Vec<Loc<String>>>>,
    #[schemars(with = "Option<Vec<EnvMap>>")]
    pub env: Option<Loc<Vec<Loc<Node>>>>,
}

/// One pass criterion: exactly one metric key, with optional `at`, `severity` and `in_place`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCriterion {
    /// Bus bandwidth, e.g. `>= 340 GB/s`, or a share of the hardware profile's figure,
    /// `>= 90% of profile`.
    pub busbw: Option<Loc<String>>,
    /// Algorithm bandwidth, e.g. `>= 190 GB/s`.
    pub algbw: Option<Loc<String>>,
    /// Time per op, e.g. `<= 20 us`.
    pub time: Option<Loc<String>>,
    /// Largest allowed #wrong; only 0 makes sense.
    #[schemars(range(min = 0, max = 0))]
    pub wrong: Option<Loc<i64>>,
    /// How NCCL must connect: a class every link uses (P2P, SHM, NET, NET/IB, NET/Socket), a
    /// list of alternatives (`[P2P, NVLS]`), or a mapping with `is`, `not`, `gdr`, `intra_node`
    /// and `inter_node` (see docs/plan-language.md). NVLS and CollNet named alone are required.
    #[schemars(with = "Option<TransportField>")]
    pub transport: Option<Loc<Node>>,
    /// Largest busbw drop against the baseline, e.g. `<= 5%`.
    pub regression: Option<Loc<String>>,
    /// Largest spread of each repeat around the median of the repeats, e.g. `<= 5%`.
    pub variance: Option<Loc<String>>,
    /// Largest gap between the slowest and the fastest split group, e.g. `<= 10%`.
    pub group_spread: Option<Loc<String>>,
    /// Largest deficit below the median of the node sets of the same shape, e.g. `<= 10%`:
    /// fleet-relative, so it needs no absolute number. Needs `over:` other than `all`.
    pub outlier: Option<Loc<String>>,
    /// No rank (or split group) whose per-iteration statistic exceeds a multiple of the others'
    /// median, e.g. `p99 <= 2x median`. Needs `iterations: true`.
    pub straggler: Option<Loc<String>>,
    /// Largest busbw drop below the median of this job's last runs on the same hosts, from the
    /// history store: `<= 5% below the median of the last 10 runs`. Without `at`, the largest size.
    pub trend: Option<Loc<String>>,
    /// nccl-tests' `NCCL_TESTS_MIN_BW` by name, in GB/s (`300`, or `"300 GB/s"`): the average
    /// busbw over every size and placement is at least 0.9 × it, as nccl-tests checks it.
    #[schemars(with = "Option<Scalar>")]
    pub nccl_tests_min_bw: Option<Loc<Scalar>>,
    /// busbw as a share of another job's of the same run at the same sizes, e.g.
    /// `{ to: allreduce, busbw: ">= 85%" }`.
    pub relative: Option<RawRelative>,
    /// Requested sizes this applies to: one size, `>= 1G`, `1G..4G`; omitted = every size.
    #[schemars(with = "Option<Scalar>")]
    pub at: Option<Loc<Scalar>>,
    /// `fail` (default) or `warn` (reported, never fails).
    #[schemars(with = "Option<SeverityName>")]
    pub severity: Option<Loc<String>>,
    /// Narrow to one placement: `out` or `in` (default: both that ran).
    #[schemars(with = "Option<InPlaceName>")]
    pub in_place: Option<Loc<String>>,
}

/// `relative: { to: TEST_OR_JOB, busbw: ">= 85%" [, results: FILE] }`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRelative {
    /// The test (of one job) or job ID compared with.
    pub to: Loc<String>,
    /// Least share of its busbw at the same requested sizes, e.g. `>= 85%`.
    pub busbw: Loc<String>,
    /// Another run's results.json (relative to this plan) holding `to`: phase C within 10% of
    /// phase B, across plans. Without it, `to` is a job of this run.
    #[serde(default)]
    pub results: Option<Loc<String>>,
}

// ---- schema-only types: they describe polymorphic fields for the JSON Schema ----

/// `auto`, `off` or a count.
struct CpusPerTask;

impl JsonSchema for CpusPerTask {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CpusPerTask".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "oneOf": [
                { "enum": ["auto", "off"] },
                { "type": "integer", "minimum": 1 }
            ]
        })
    }
}

struct VersionOne;

impl JsonSchema for VersionOne {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "VersionOne".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "const": 1 })
    }
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum BackendName {
    Nccl,
    Mpi,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum AverageName {
    Rank0,
    Avg,
    Min,
    Max,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum InPlaceName {
    Both,
    Out,
    In,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum SeverityName {
    Fail,
    Warn,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
enum TransportName {
    P2P,
    #[serde(rename = "SHM")]
    Shm,
    #[serde(rename = "NET")]
    Net,
    #[serde(rename = "NET/IB")]
    NetIb,
    #[serde(rename = "NET/Socket")]
    NetSocket,
    #[serde(rename = "NVLS")]
    Nvls,
    CollNet,
    /// NET/Socket.
    Socket,
    /// NET/IB.
    #[serde(rename = "IB")]
    Ib,
    /// CollNet.
    #[serde(rename = "SHARP")]
    Sharp,
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum TransportNames {
    One(TransportName),
    Many(Vec<TransportName>),
}

/// One scope of a transport rule: classes allowed (`is`), refused (`not`), GPUDirect RDMA.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ScopeRuleField {
    /// Alternatives: every link in the scope uses one of these.
    is: Option<TransportNames>,
    /// Exclusions: no link in the scope uses one of these.
    not: Option<TransportNames>,
    /// Network links must (true) or must not (false) use GPUDirect RDMA (`…/GDRDMA`).
    gdr: Option<bool>,
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum ScopeField {
    Names(TransportNames),
    Rule(ScopeRuleField),
}

/// A transport rule with scopes.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct TransportRuleField {
    is: Option<TransportNames>,
    not: Option<TransportNames>,
    gdr: Option<bool>,
    /// Links between ranks on the same node.
    intra_node: Option<ScopeField>,
    /// Links between ranks on different nodes.
    inter_node: Option<ScopeField>,
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum TransportField {
    Names(TransportNames),
    Rule(TransportRuleField),
}

type EnvMap = IndexMap<String, Scalar>;

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum CollectiveField {
    One(Collective),
    Many(Vec<Collective>),
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum SizeValue {
    Bytes(u64),
    Text(String),
}

#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct SizeRange {
    from: SizeValue,
    to: SizeValue,
    /// Multiply by this integer (≥ 2) each step.
    factor: Option<u64>,
    /// Add this many bytes each step.
    step: Option<SizeValue>,
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum SizesField {
    Range(SizeRange),
    List(Vec<SizeValue>),
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum RepeatField {
    Times(u64),
    For(String),
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum OverField {
    Name(OverName),
    Pairs(OverPairs),
}

#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[allow(dead_code)]
enum OverName {
    All,
    EachNode,
    Pairs,
    Isolate,
    GpuPairs,
}

#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct OverPairs {
    pairs: PairsField,
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum PairsField {
    /// `all` (every pair) or `ring` (neighbours).
    Name(PairsName),
    Random(RandomPairs),
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum PairsName {
    All,
    Ring,
}

#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct RandomPairs {
    /// Rounds of random disjoint pairs.
    #[schemars(range(min = 1, max = 10000))]
    rounds: u32,
    /// Seed of the pairing (default 0): the same seed gives the same pairs.
    seed: Option<u64>,
}

/// The plan's JSON Schema (draft 2020-12), generated from the types above.
pub fn plan_schema() -> serde_json::Value {
    let schema = schemars::schema_for!(RawPlan);
    serde_json::to_value(schema).expect("schema serializes")
}
