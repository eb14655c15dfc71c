//! What `baton run` drives (`baton::session::nodes_for_run`, `rerun_of`), and what it says of
//! the node verdict files written after grading.

use std::path::Path;

use baton::runner::nodesets::Nodes;
use baton::session::{self, NodeRequest, NodesError, RerunError};
use baton::stdout::visible;

use super::error::CliError;
use super::ui;

/// What a run drives.
pub enum Driven {
    /// The plan's jobs, as always.
    Jobs,
    /// Node sets over these nodes.
    Sets(Nodes),
    /// Nothing: a rerun of a run that failed no node (said why).
    Nothing,
}

/// What a run drives: its jobs, or node sets over the nodes named; `Err` saying why it cannot
/// run.
pub fn for_run(
    plan: &baton::plan::Plan,
    path: &Path,
    args: &super::run::Args,
) -> Result<Driven, CliError> {
    let rerun = match &args.rerun_failed {
        Some(f) => {
            let tests = session::selected_tests(plan, args.only.as_deref());
            match session::rerun_of(plan, &tests, f) {
                Ok(r) => {
                    ui::say(&format!("baton: {}", r.note()));
                    Some(r)
                }
                Err(e @ RerunError::Nothing(_)) => {
                    ui::say(&format!("baton: {e}"));
                    return Ok(Driven::Nothing);
                }
                Err(e) => return Err(CliError::invalid(e)),
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
    match session::nodes_for_run(plan, path, req, args.trust) {
        Ok(Some(nodes)) => Ok(Driven::Sets(nodes)),
        Ok(None) => Ok(Driven::Jobs),
        Err(e @ NodesError::Hostfile(_)) => Err(CliError::invalid(visible(&e.to_string()))),
        Err(e) => Err(CliError::invalid(e)),
    }
}

/// Faults printed after the node verdicts; the rest are in `nodes.json` and the report.
const MAX_FAULTS_SHOWN: usize = 20;

/// `nodes.json` and `drain.sh` beside the results, when tests ran over node sets, and what
/// they say.
pub fn write(dir: &Path, g: &baton::grade::Grade, plan: &str) -> Result<(), CliError> {
    let Some(nodes) = baton::session::write_nodes(dir, g, plan)? else {
        return Ok(());
    };
    ui::say(&format!(
        "baton: nodes: passed {}; failed {}; suspect {} ({})",
        or_none(nodes.passed),
        or_none(nodes.failed),
        or_none(nodes.suspect),
        nodes.nodes_json.display()
    ));
    for f in nodes.faults.iter().take(MAX_FAULTS_SHOWN) {
        ui::say(&format!("baton: fault: {f}"));
    }
    if nodes.faults.len() > MAX_FAULTS_SHOWN {
        ui::say(&format!(
            "baton: … and {} more fault(s) in {}",
            nodes.faults.len() - MAX_FAULTS_SHOWN,
            nodes.nodes_json.display()
        ));
    }
    if !nodes.failed.is_empty() {
        ui::say(&format!(
            "baton: to drain the failed nodes, review and run {}",
            nodes.drain_sh.display()
        ));
    }
    Ok(())
}

fn or_none(s: &str) -> &str {
    if s.is_empty() { "none" } else { s }
}
