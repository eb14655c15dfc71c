//! What `baton run` says of its node list (`baton::session::nodes_for_run`, `rerun_of`) and of
//! the node verdict files written after grading.

use std::path::Path;

use baton::exit::Exit;
use baton::runner::nodesets::Nodes;
use baton::session::{self, NodeRequest, NodesError, RerunError};

/// The nodes a run drives node sets over, or `None` when the plan runs as one job set as
/// always; `Err` after printing why it cannot run (`Exit::Ok`: a rerun with nothing to do).
pub fn for_run(
    plan: &baton::plan::Plan,
    path: &Path,
    args: &super::run::Args,
) -> Result<Option<Nodes>, Exit> {
    let rerun = match &args.rerun_failed {
        Some(f) => {
            let tests = session::selected_tests(plan, args.only.as_deref());
            match session::rerun_of(plan, &tests, f) {
                Ok(r) => {
                    eprintln!("baton: {}", r.note());
                    Some(r)
                }
                Err(e @ RerunError::Nothing(_)) => {
                    eprintln!("baton: {e}");
                    return Err(Exit::Ok);
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    return Err(Exit::Invalid);
                }
            }
        }
        None => None,
    };
    let req = NodeRequest {
        only: args.only.as_deref(),
        hostlist: args.nodes.as_deref(),
        hostfile: args.hostfile.as_deref(),
        rerun,
    };
    session::nodes_for_run(plan, path, req, args.trust).map_err(|e| {
        match e {
            NodesError::Hostfile(_) => {
                eprintln!("error: {}", baton::stdout::visible(&e.to_string()))
            }
            e => eprintln!("error: {e}"),
        }
        Exit::Invalid
    })
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
