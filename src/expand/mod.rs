//! The planner: a checked [`Plan`] becomes a flat list of [`Job`]s, the cartesian product of each
//! test's axes (collective × dtype × op × split × env). Repeats stay inside a job.

mod identity;
mod layout;
pub mod nodesets;
pub mod table;

use std::collections::HashMap;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::Serialize;

pub use identity::{job_identity, plan_identity};
pub use layout::{Group, Scope, groups};

use crate::collective::{Collective, Dtype, RedOp};
use crate::plan::{Backend, Criterion, Plan, Repeat, Settings, SplitSpec};
use crate::split::Split;

/// One job: a single collective sweep with fixed dtype, op, split and environment.
#[derive(Debug, Clone, Serialize)]
pub struct Job {
    pub id: String,
    pub test: String,
    pub collective: Collective,
    pub dtype: Dtype,
    /// `None` for collectives that do not reduce.
    pub op: Option<RedOp>,
    /// `None` for rootless collectives.
    pub root: Option<u32>,
    /// The split, parsed once by `check`, with its text as written in the plan (which results
    /// record and identities hash); the job ID names it in canonical form (`DIV 8`).
    #[serde(serialize_with = "split_text")]
    pub split: Option<SplitSpec>,
    /// Plan env, then test env, then the matrix env entry.
    pub env: IndexMap<String, String>,
    /// Requested sizes in bytes.
    pub sizes: Arc<Vec<u64>>,
    pub settings: Settings,
    pub repeat: Repeat,
    pub expect: Arc<Vec<Criterion>>,
    /// Total plan ranks, when the plan's layout fixes it (`None` = resolved at run).
    pub ranks: Option<u64>,
    /// Split groups (one group of all ranks without a split); `None` while ranks are unknown.
    pub groups: Option<Arc<Vec<Group>>>,
    /// User buffers per rank at the largest size: send + recv (+ expected when checking).
    pub memory_per_rank: u64,
    /// The node set this job runs on, for one set of a test with `over:` (see
    /// [`nodesets::set_job`]); `None` for the plan's own jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_set: Option<crate::results::NodeSetRef>,
    /// Its test's `over:`: a set of `over: all` is the plan job itself, ID and identity.
    #[serde(skip)]
    pub over: crate::plan::Over,
}

impl Job {
    /// The split as the plan wrote it (`None`: no split).
    pub fn split_text(&self) -> Option<&str> {
        self.split.as_ref().map(|s| s.text.as_str())
    }
}

/// A job's split in `expand --format json`: the text the plan wrote.
fn split_text<S: serde::Serializer>(split: &Option<SplitSpec>, s: S) -> Result<S::Ok, S::Error> {
    split.as_ref().map(|x| x.text.as_str()).serialize(s)
}

/// All jobs of a plan.
#[derive(Debug, Clone, Serialize)]
pub struct Expansion {
    pub plan: String,
    pub backend: Backend,
    pub jobs: Vec<Job>,
    pub total_jobs: usize,
    /// Largest `memory_per_rank` over all jobs: what the biggest GPU buffer set needs.
    pub max_memory_per_rank: u64,
    /// Node sets of the tests with `over:` other than `all`; filled by the caller from
    /// [`nodesets::resolve`], since the node list may come from a file or the allocation.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub node_sets: Vec<nodesets::TestSets>,
}

/// Expands every test of `plan` into jobs, in plan order.
pub fn expand(plan: &Plan) -> Expansion {
    let ranks = plan.launch.total_ranks();
    let per_node = plan.launch.ranks_per_node_total().unwrap_or(1);
    let mut group_cache: HashMap<Option<Split>, Arc<Vec<Group>>> = HashMap::new();
    let mut jobs = Vec::new();
    for (t, points) in plan
        .tests
        .iter()
        .zip(crate::plan::jobs::points(&plan.tests))
    {
        let sizes = Arc::new(t.sizes.values());
        let max_size = sizes.iter().copied().max().unwrap_or(0);
        let expect = Arc::new(t.expect.clone());
        for p in points {
            let (collective, dtype, op) = (p.collective, p.dtype, p.op);
            let parsed = p.split.map(|s| s.split);
            let mut env = t.env.clone();
            env.extend(p.env.iter().map(|(k, v)| (k.clone(), v.clone())));
            let groups = ranks.map(|n| {
                group_cache
                    .entry(parsed)
                    .or_insert_with(|| groups(parsed.as_ref(), n, per_node))
                    .clone()
            });
            let comm_size = groups
                .as_ref()
                .and_then(|g| g.iter().map(|g| g.ranks.len() as u64).max())
                .unwrap_or(1);
            jobs.push(Job {
                id: p.id,
                test: t.name.clone(),
                collective,
                dtype,
                op: collective.reduces().then_some(op),
                root: collective.rooted().then_some(t.root),
                split: p.split.cloned(),
                env,
                sizes: sizes.clone(),
                settings: Settings {
                    dtype,
                    op,
                    ..t.settings.clone()
                },
                repeat: t.repeat,
                expect: expect.clone(),
                ranks,
                groups,
                memory_per_rank: collective.buffer_bytes(
                    max_size,
                    dtype,
                    comm_size,
                    t.settings.check,
                ),
                node_set: None,
                over: t.over,
            });
        }
    }
    let max_memory_per_rank = jobs.iter().map(|j| j.memory_per_rank).max().unwrap_or(0);
    Expansion {
        plan: plan.name.clone(),
        backend: plan.backend,
        total_jobs: jobs.len(),
        jobs,
        max_memory_per_rank,
        node_sets: Vec::new(),
    }
}
