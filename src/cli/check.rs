use std::path::PathBuf;

use baton::exit::Exit;

use super::{CheckFormat, load_plan};

pub fn run(plans: &[PathBuf], format: CheckFormat, color: bool) -> anyhow::Result<Exit> {
    let mut exit = Exit::Ok;
    for p in plans {
        match load_plan(p, color, format, super::plan_trust()) {
            Some(loaded) => {
                let jobs = baton::expand::expand(&loaded.plan).total_jobs;
                baton::stdout::print(&format!(
                    "{}: ok ({} tests, {} jobs)\n",
                    p.display(),
                    loaded.plan.tests.len(),
                    jobs
                ))?;
            }
            None => exit = Exit::Invalid,
        }
    }
    Ok(exit)
}
