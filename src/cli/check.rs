use std::path::PathBuf;

use baton::exit::Exit;
use baton::stdout::visible;

use super::{CheckFormat, load_plan, node_sets};

pub fn run(
    plans: &[PathBuf],
    format: CheckFormat,
    nodes: Option<super::GivenNodes<'_>>,
    trust: baton::plan::Trust,
    color: bool,
) -> anyhow::Result<Exit> {
    let mut exit = Exit::Ok;
    for p in plans {
        match load_plan(p, color, format, trust) {
            Some(loaded) => {
                let Some(sets) = node_sets(&loaded.plan, p, nodes, trust) else {
                    exit = Exit::Invalid;
                    continue;
                };
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
                match baton::profile::check_plan(&loaded.plan, &files) {
                    Ok(line) => out.extend(line.map(|l| format!("  {l}\n"))),
                    Err(p) => problems.extend(p),
                }
                if !problems.is_empty() {
                    for m in problems {
                        eprintln!("error: {}: {}", p.display(), visible(&m));
                    }
                    exit = Exit::Invalid;
                    continue;
                }
                baton::stdout::print(&out)?;
            }
            None => exit = Exit::Invalid,
        }
    }
    Ok(exit)
}

/// Host names `baton run` would refuse outside an allocation (Open MPI rejects `_`): said at
/// check time, as a warning, since the same plan may run under Slurm, which takes them.
fn mpirun_names(plan: &std::path::Path, sets: &[baton::expand::nodesets::TestSets]) {
    let Some(list) = sets.iter().find_map(|s| s.nodes.as_deref()) else {
        return;
    };
    let hosts = baton::nodeset::expand(list).unwrap_or_default();
    if let Some(why) = baton::runner::nodesets::launcher_refuses(&hosts) {
        eprintln!("warning: {}: {why}", plan.display());
    }
}
