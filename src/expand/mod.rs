//! The planner: a checked [`Plan`] becomes a flat list of [`Job`]s, the cartesian product of each
//! test's axes (collective × dtype × op × split × env). Repeats stay inside a job.

mod id;
mod identity;
mod layout;
pub mod nodesets;
pub mod table;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use indexmap::IndexMap;
use serde::Serialize;

pub use id::{job_id, test_of};
pub use identity::{job_identity, plan_identity};
pub use layout::{Group, Scope, groups};

use crate::collective::{Collective, Dtype, RedOp};
use crate::plan::{Backend, Criterion, Plan, Repeat, Settings};
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
    /// The split as written in the plan; the job ID names it in canonical form (`DIV 8`).
    pub split: Option<String>,
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
    let mut seen: HashSet<String> = HashSet::new();
    for t in &plan.tests {
        let sizes = Arc::new(t.sizes.values());
        let max_size = sizes.iter().copied().max().unwrap_or(0);
        let expect = Arc::new(t.expect.clone());
        let a = &t.axes;
        for &collective in &a.collective {
            for &dtype in &a.dtype {
                for &op in a.ops(collective) {
                    for split in &a.split {
                        for env_entry in &a.env {
                            let parsed = split.as_ref().map(|s| s.split);
                            let values = id::AxisValues {
                                collective,
                                dtype,
                                op,
                                split: parsed.as_ref(),
                                env: env_entry,
                            };
                            let mut named: Vec<&str> = a.named.clone();
                            if !collective.reduces() {
                                named.retain(|n| *n != "op");
                            }
                            let mut job_id = id::job_id(&t.name, &named, &values);
                            if !seen.insert(job_id.clone()) {
                                let mut k = 2;
                                while !seen.insert(format!("{job_id}#{k}")) {
                                    k += 1;
                                }
                                job_id = format!("{job_id}#{k}");
                            }
                            let mut env = t.env.clone();
                            env.extend(env_entry.iter().map(|(k, v)| (k.clone(), v.clone())));
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
                                id: job_id,
                                test: t.name.clone(),
                                collective,
                                dtype,
                                op: collective.reduces().then_some(op),
                                root: collective.rooted().then_some(t.root),
                                split: split.as_ref().map(|s| s.text.clone()),
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
                }
            }
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
