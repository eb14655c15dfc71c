//! The node list of `baton run` (the plan's, the allocation's, `--nodes`, or the failed and
//! suspect nodes of an earlier run) and the node verdict files written after grading.

use std::path::Path;

use baton::exit::Exit;
use baton::expand::nodesets::{self, NodeList};
use baton::plan::{Over, Plan};
use baton::runner::nodesets::Nodes;

mod rerun;

/// The nodes a run drives node sets over, or `None` when the plan runs as one job set as
/// always; `Err` after printing why it cannot run (`Exit::Ok`: a rerun with nothing to do).
pub fn for_run(plan: &Plan, path: &Path, args: &super::run::Args) -> Result<Option<Nodes>, Exit> {
    let tests = selected_tests(plan, args.only.as_deref());
    let rerun = match &args.rerun_failed {
        Some(f) => Some(rerun::of(plan, &tests, f)?),
        None => None,
    };
    let given = match (&args.nodes, &rerun) {
        (Some(h), _) => Some(h.clone()),
        (None, Some(r)) => Some(r.hostlist()),
        (None, None) => args.hostfile.as_deref().map(hostfile_list).transpose()?,
    };
    let plain = plan.tests.iter().all(|t| t.over == Over::All);
    // A plain plan of several nodes is one set of the node list where there is one (the
    // allocation's, the plan's): one step across its nodes, not a refusal inside Slurm.
    let spans = plan.launch.nodes > 1;
    let listed = in_allocation() || plan.nodes.source != baton::plan::NodeSource::Allocation;
    if given.is_none() && plain && !(spans && listed) {
        return Ok(None);
    }
    let resolved = match &given {
        Some(h) => nodesets::given(&plan.nodes, h),
        None => nodesets::resolve(
            &plan.nodes,
            &baton::session::plan_files(path, args.trust),
            std::env::var(nodesets::SLURM_NODELIST).ok().as_deref(),
        ),
    };
    let list = match resolved {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {}: node list: {e}", path.display());
            return Err(Exit::Invalid);
        }
    };
    let NodeList {
        hosts: Some(hosts),
        domains,
        source,
    } = list
    else {
        let t = plan.tests.iter().find(|t| t.over != Over::All);
        eprintln!(
            "error: {}: test `{}` runs `over: {}`, which needs the node list: run inside a Slurm allocation \
             (SLURM_JOB_NODELIST), set `nodes.hostlist` or `nodes.hostfile`, or pass --nodes HOSTLIST",
            path.display(),
            t.map_or("", |t| t.name.as_str()),
            t.map_or("all", |t| t.over.name())
        );
        return Err(Exit::Invalid);
    };
    if let Some(why) = baton::runner::nodesets::launcher_refuses(&hosts) {
        eprintln!("error: {}: {why}", path.display());
        return Err(Exit::Invalid);
    }
    let partners = rerun.as_ref().is_some_and(|r| !r.known_good().is_empty());
    if !partners && let Some(t) = tests.iter().find(|t| hosts.len() < t.over.min_nodes()) {
        eprintln!(
            "error: {}: test `{}` runs `over: {}`, which needs at least {} nodes; the node list \
             has {} ({}): a set of one node measures nothing between nodes",
            path.display(),
            t.name,
            t.over.name(),
            t.over.min_nodes(),
            hosts.len(),
            baton::nodeset::compress(&hosts)
        );
        return Err(Exit::Invalid);
    }
    if plain && spans && rerun.is_none() && hosts.len() != plan.launch.nodes as usize {
        eprintln!(
            "error: {}: {}",
            path.display(),
            misfit(plan, &hosts, &source)
        );
        return Err(Exit::Invalid);
    }
    let n = hosts.len();
    if given.is_none() && !spans && plan.tests.iter().all(|t| nodesets::is_one_job(t.over, n)) {
        return Ok(None);
    }
    Ok(Some(Nodes {
        hosts,
        domains,
        rerun: rerun.map(|r| r.record),
    }))
}

/// The hosts of the hostfile the user named (`--hostfile`), as one hostlist.
fn hostfile_list(f: &Path) -> Result<String, Exit> {
    match nodesets::given_hostfile(&baton::plan::Nodes::default(), f) {
        Ok(NodeList { hosts: Some(h), .. }) => Ok(baton::nodeset::compress(&h)),
        Ok(_) => Ok(String::new()),
        Err(e) => {
            eprintln!(
                "error: --hostfile: {}",
                baton::stdout::visible(&e.to_string())
            );
            Err(Exit::Invalid)
        }
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
        baton::nodeset::compress(hosts),
    )
}

/// The plan's tests that have a job `--only` selects.
fn selected_tests<'p>(plan: &'p Plan, only: Option<&str>) -> Vec<&'p baton::plan::Test> {
    let jobs = baton::expand::expand(plan).jobs;
    plan.tests
        .iter()
        .filter(|t| {
            jobs.iter()
                .any(|j| j.test == t.name && only.is_none_or(|o| j.id.contains(o)))
        })
        .collect()
}

/// Faults printed after the node verdicts; the rest are in `nodes.json` and the report.
const MAX_FAULTS_SHOWN: usize = 20;

/// `nodes.json` and `drain.sh` beside the results, when tests ran over node sets, and what
/// they say.
pub fn write(dir: &Path, g: &baton::grade::Grade, plan: &str) -> anyhow::Result<()> {
    let Some(nodes) = baton::session::write_nodes(dir, g, plan)? else {
        return Ok(());
    };
    eprintln!(
        "baton: nodes: passed {}; failed {}; suspect {} ({})",
        or_none(nodes.passed),
        or_none(nodes.failed),
        or_none(nodes.suspect),
        nodes.nodes_json.display()
    );
    for f in nodes.faults.iter().take(MAX_FAULTS_SHOWN) {
        eprintln!("baton: fault: {}", baton::stdout::visible(f));
    }
    if nodes.faults.len() > MAX_FAULTS_SHOWN {
        eprintln!(
            "baton: … and {} more fault(s) in {}",
            nodes.faults.len() - MAX_FAULTS_SHOWN,
            nodes.nodes_json.display()
        );
    }
    if !nodes.failed.is_empty() {
        eprintln!(
            "baton: to drain the failed nodes, review and run {}",
            nodes.drain_sh.display()
        );
    }
    Ok(())
}

fn or_none(s: &str) -> &str {
    if s.is_empty() { "none" } else { s }
}
