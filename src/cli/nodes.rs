//! The node list of `baton run` (the plan's, the allocation's, `--nodes`, or the failed and
//! suspect nodes of an earlier run) and the node verdict files written after grading.

use std::path::Path;

use baton::exit::Exit;
use baton::expand::nodesets::{self, NodeList};
use baton::plan::{Over, Plan};
use baton::runner::nodesets::Nodes;

/// Largest `nodes.json` read back: a thousand nodes with reasons is well under a megabyte.
const MAX_NODES_JSON: usize = 16 << 20;

/// The nodes a run drives node sets over, or `None` when the plan runs as one job set as
/// always; `Err` after printing why it cannot run.
pub fn for_run(plan: &Plan, path: &Path, args: &super::run::Args) -> Result<Option<Nodes>, Exit> {
    let given = match (&args.nodes, &args.rerun_failed) {
        (Some(h), _) => Some(h.clone()),
        (None, Some(f)) => Some(rerun_list(f)?),
        (None, None) => None,
    };
    if given.is_none() && plan.tests.iter().all(|t| t.over == Over::All) {
        return Ok(None);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let resolved = match &given {
        Some(h) => nodesets::given(&plan.nodes, h),
        None => nodesets::resolve(
            &plan.nodes,
            dir,
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
        ..
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
    let n = hosts.len();
    if given.is_none() && plan.tests.iter().all(|t| nodesets::is_one_job(t.over, n)) {
        return Ok(None);
    }
    Ok(Some(Nodes { hosts, domains }))
}

/// The failed and suspect nodes of an earlier run's `nodes.json` (or of the directory holding
/// it), as one hostlist.
fn rerun_list(f: &Path) -> Result<String, Exit> {
    let file = if f.is_dir() {
        f.join("nodes.json")
    } else {
        f.to_path_buf()
    };
    let text = baton::input::read_bounded(&file, MAX_NODES_JSON, "nodes.json").map_err(|e| {
        eprintln!("error: --rerun-failed: {e}");
        Exit::Invalid
    })?;
    #[derive(serde::Deserialize)]
    struct Verdicts {
        failed: String,
        suspect: String,
    }
    let v: Verdicts = serde_json::from_slice(&text).map_err(|e| {
        eprintln!(
            "error: --rerun-failed: {}: not a baton nodes.json: {e}",
            file.display()
        );
        Exit::Invalid
    })?;
    let lists: Vec<&str> = [v.failed.as_str(), v.suspect.as_str()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    if lists.is_empty() {
        eprintln!(
            "baton: --rerun-failed: {} names no failed or suspect node: nothing to run again",
            file.display()
        );
        return Err(Exit::Ok);
    }
    let mut hosts = Vec::new();
    for l in lists {
        match baton::nodeset::expand(l) {
            Ok(h) => hosts.extend(h),
            Err(e) => {
                eprintln!("error: --rerun-failed: {}: {e}", file.display());
                return Err(Exit::Invalid);
            }
        }
    }
    eprintln!(
        "baton: running again over the failed and suspect nodes of {}: {}",
        file.display(),
        baton::nodeset::compress(&hosts)
    );
    Ok(baton::nodeset::compress(&hosts))
}

/// Faults printed after the node verdicts; the rest are in `nodes.json` and the report.
const MAX_FAULTS_SHOWN: usize = 20;

/// `nodes.json` and `drain.sh` beside the results, when tests ran over node sets.
pub fn write(dir: &Path, g: &baton::grade::Grade, plan: &str) -> anyhow::Result<()> {
    let Some(nodes) = &g.nodes else {
        return Ok(());
    };
    baton::nodeset::export::write_files(dir, nodes, plan)?;
    eprintln!(
        "baton: nodes: passed {}; failed {}; suspect {} ({})",
        or_none(&nodes.passed),
        or_none(&nodes.failed),
        or_none(&nodes.suspect),
        dir.join("nodes.json").display()
    );
    let faults = baton::report::fault_lines(g);
    for f in faults.iter().take(MAX_FAULTS_SHOWN) {
        eprintln!("baton: fault: {}", baton::stdout::visible(f));
    }
    if faults.len() > MAX_FAULTS_SHOWN {
        eprintln!(
            "baton: … and {} more fault(s) in {}",
            faults.len() - MAX_FAULTS_SHOWN,
            dir.join("nodes.json").display()
        );
    }
    if !nodes.failed.is_empty() {
        eprintln!(
            "baton: to drain the failed nodes, review and run {}",
            dir.join("drain.sh").display()
        );
    }
    Ok(())
}

fn or_none(s: &str) -> &str {
    if s.is_empty() { "none" } else { s }
}
