use std::path::{Path, PathBuf};

use baton::exit::Exit;
use baton::plan::Trust;
use baton::stdout::visible;

use super::error::CliError;
use super::ui::{self, DiagFormat};
use super::{CheckFormat, GivenNodes, Outcome, load_plan, node_sets};

/// Checks every plan, saying what is wrong with each as it is found; exit 2 when any is invalid.
pub fn run(
    plans: &[PathBuf],
    format: CheckFormat,
    nodes: Option<GivenNodes<'_>>,
    trust: Trust,
) -> Outcome {
    let format = match format {
        CheckFormat::Human => DiagFormat::Human,
        CheckFormat::Short => DiagFormat::Short,
    };
    let mut exit = Exit::Ok;
    for p in plans {
        match check(p, format, nodes, trust) {
            Ok(()) => {}
            Err(e @ CliError::Unexpected(_)) => return Err(e),
            Err(e) => {
                ui::error(&e);
                exit = Exit::Invalid;
            }
        }
    }
    match exit {
        Exit::Ok => Ok(Exit::Ok),
        told => Err(CliError::Told(told)),
    }
}

/// One plan: `PLAN: ok (…)` with its node sets and profiles on stdout, or why it is not.
fn check(
    p: &Path,
    format: DiagFormat,
    nodes: Option<GivenNodes<'_>>,
    trust: Trust,
) -> Result<(), CliError> {
    if baton::acceptance::is_acceptance_file(p) {
        return super::accept::check(p, format, trust);
    }
    let loaded = load_plan(p, format, trust)?;
    let sets = node_sets(&loaded.plan, p, nodes, trust)?;
    let jobs = baton::expand::expand(&loaded.plan).total_jobs;
    let mut out = format!(
        "{}: ok ({} tests, {} jobs)\n",
        p.display(),
        loaded.plan.tests.len(),
        jobs
    );
    for s in &sets {
        out.push_str(&format!("  {}: {}\n", s.test, s.summary()));
    }
    mpirun_names(p, &sets);
    let files = baton::session::plan_files(p, trust);
    let mut problems: Vec<String> = files
        .refused(&loaded.plan)
        .iter()
        .map(ToString::to_string)
        .collect();
    for w in baton::profile::floors_above(&loaded.plan, &files) {
        ui::say(&format!("warning: {}: {}", p.display(), visible(&w)));
    }
    match baton::profile::check_plan(&loaded.plan, &files) {
        Ok(line) => out.extend(line.map(|l| format!("  {l}\n"))),
        Err(p) => problems.extend(p),
    }
    if !problems.is_empty() {
        let lines: Vec<String> = problems
            .iter()
            .map(|m| format!("error: {}: {}", p.display(), visible(m)))
            .collect();
        return Err(CliError::Invalid(lines.join("\n")));
    }
    ui::out(&out)?;
    Ok(())
}

/// Host names `baton run` would refuse outside an allocation (Open MPI rejects `_`): said at
/// check time, as a warning, since the same plan may run under Slurm, which takes them.
fn mpirun_names(plan: &Path, sets: &[baton::expand::nodesets::TestSets]) {
    let Some(list) = sets.iter().find_map(|s| s.nodes.as_deref()) else {
        return;
    };
    let hosts = baton::nodeset::expand(list).unwrap_or_default();
    if let Some(why) = baton::runner::nodesets::launcher_refuses(&hosts) {
        ui::say(&format!("warning: {}: {why}", plan.display()));
    }
}
