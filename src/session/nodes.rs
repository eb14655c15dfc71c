//! The nodes a run drives node sets over: the plan's node list, the allocation's, `--nodes`,
//! `--hostfile`, or the failed and suspect nodes of an earlier run (`rerun`) — or none, when
//! the plan runs as one job set as always.

use std::path::Path;

use crate::expand::nodesets::{self, NodeList, NodeListError};
use crate::plan::{NodeSource, Over, Plan, Test, Trust};
use crate::runner::nodesets::Nodes;

use super::RerunList;

/// What the user asked of the node list (`run --only`, `--nodes`, `--hostfile`), and the rerun
/// `--rerun-failed` gave.
pub struct NodeRequest<'a> {
    pub only: Option<&'a str>,
    pub hostlist: Option<&'a str>,
    pub hostfile: Option<&'a Path>,
    pub rerun: Option<RerunList>,
}

/// Why a run cannot drive the node sets it needs.
#[derive(Debug, thiserror::Error)]
pub enum NodesError {
    #[error("--hostfile: {0}")]
    Hostfile(NodeListError),
    #[error("{plan}: node list: {source}")]
    List { plan: String, source: NodeListError },
    #[error(
        "{plan}: test `{test}` runs `over: {over}`, which needs the node list: run inside a Slurm \
         allocation (SLURM_JOB_NODELIST), set `nodes.hostlist` or `nodes.hostfile`, or pass --nodes HOSTLIST"
    )]
    NoList {
        plan: String,
        test: String,
        over: &'static str,
    },
    /// The launcher would refuse these host names.
    #[error("{plan}: {why}")]
    Launcher { plan: String, why: String },
    #[error(
        "{plan}: test `{test}` runs `over: {over}`, which needs at least {min} nodes; the node list \
         has {n} ({hosts}): a set of one node measures nothing between nodes"
    )]
    TooFew {
        plan: String,
        test: String,
        over: &'static str,
        min: usize,
        n: usize,
        hosts: String,
    },
    /// A plain plan of `launch.nodes` nodes given another count.
    #[error("{plan}: {why}")]
    Misfit { plan: String, why: String },
}

/// The nodes a run of `plan` (at `path`) drives node sets over, or `None` when it runs as one
/// job set.
pub fn for_run(
    plan: &Plan,
    path: &Path,
    req: NodeRequest<'_>,
    trust: Trust,
) -> Result<Option<Nodes>, NodesError> {
    let shown = path.display().to_string();
    let tests = selected_tests(plan, req.only);
    let given = match (req.hostlist, &req.rerun) {
        (Some(h), _) => Some(h.to_string()),
        (None, Some(r)) => Some(r.hostlist()),
        (None, None) => req.hostfile.map(hostfile_list).transpose()?,
    };
    let plain = plan.tests.iter().all(|t| t.over == Over::All);
    // A plain plan of several nodes is one set of the node list where there is one (the
    // allocation's, the plan's): one step across its nodes, not a refusal inside Slurm.
    let spans = plan.launch.nodes > 1;
    let listed = in_allocation() || plan.nodes.source != NodeSource::Allocation;
    if given.is_none() && plain && !(spans && listed) {
        return Ok(None);
    }
    let resolved = match &given {
        Some(h) => nodesets::given(&plan.nodes, h),
        None => nodesets::resolve(
            &plan.nodes,
            &super::plan_files(path, trust),
            std::env::var(nodesets::SLURM_NODELIST).ok().as_deref(),
        ),
    };
    let list = resolved.map_err(|source| NodesError::List {
        plan: shown.clone(),
        source,
    })?;
    let NodeList {
        hosts: Some(hosts),
        domains,
        source,
    } = list
    else {
        let t = plan.tests.iter().find(|t| t.over != Over::All);
        return Err(NodesError::NoList {
            plan: shown,
            test: t.map_or("", |t| t.name.as_str()).to_string(),
            over: t.map_or("all", |t| t.over.name()),
        });
    };
    if let Some(why) = crate::runner::nodesets::launcher_refuses(&hosts) {
        return Err(NodesError::Launcher { plan: shown, why });
    }
    let partners = req
        .rerun
        .as_ref()
        .is_some_and(|r| !r.known_good().is_empty());
    if !partners && let Some(t) = tests.iter().find(|t| hosts.len() < t.over.min_nodes()) {
        return Err(NodesError::TooFew {
            plan: shown,
            test: t.name.clone(),
            over: t.over.name(),
            min: t.over.min_nodes(),
            n: hosts.len(),
            hosts: crate::nodeset::compress(&hosts),
        });
    }
    if plain && spans && req.rerun.is_none() && hosts.len() != plan.launch.nodes as usize {
        let why = misfit(plan, &hosts, &source);
        return Err(NodesError::Misfit { plan: shown, why });
    }
    let n = hosts.len();
    if given.is_none() && !spans && plan.tests.iter().all(|t| nodesets::is_one_job(t.over, n)) {
        return Ok(None);
    }
    Ok(Some(Nodes {
        hosts,
        domains,
        rerun: req.rerun.map(|r| r.record),
    }))
}

/// The hosts of the hostfile the user named (`--hostfile`), as one hostlist.
fn hostfile_list(f: &Path) -> Result<String, NodesError> {
    match nodesets::given_hostfile(&crate::plan::Nodes::default(), f) {
        Ok(NodeList { hosts: Some(h), .. }) => Ok(crate::nodeset::compress(&h)),
        Ok(_) => Ok(String::new()),
        Err(e) => Err(NodesError::Hostfile(e)),
    }
}

/// Whether this is a Slurm allocation's shell or batch script (`salloc`, `sbatch`).
fn in_allocation() -> bool {
    std::env::var_os("SLURM_JOB_ID").is_some()
        && std::env::var_os(nodesets::SLURM_NODELIST).is_some()
}

/// Why a plain plan of `launch.nodes` nodes does not fit the node list it was given.
fn misfit(plan: &Plan, hosts: &[String], source: &str) -> String {
    let (want, have) = (plan.launch.nodes, hosts.len());
    let per = plan
        .ranks_per_node()
        .map_or_else(|| "R".to_string(), |r| r.to_string());
    format!(
        "plan `{}` runs one step across `launch.nodes: {want}` nodes, but the node list has \
         {have} node{} ({}, from {source}): allocate {want} (`salloc --no-kill -N {want} \
         --ntasks-per-node={per}`), give {want} of them with --nodes HOSTLIST, or set \
         `launch.nodes: {have}` to test these",
        plan.name,
        if have == 1 { "" } else { "s" },
        crate::nodeset::compress(hosts),
    )
}

/// The plan's tests that have a job `--only` selects.
pub fn selected_tests<'p>(plan: &'p Plan, only: Option<&str>) -> Vec<&'p Test> {
    let jobs = crate::expand::expand(plan).jobs;
    plan.tests
        .iter()
        .filter(|t| {
            jobs.iter()
                .any(|j| j.test == t.name && only.is_none_or(|o| j.id.contains(o)))
        })
        .collect()
}
