//! A run's life in its output directory, the same for every way of running: the results it
//! starts from, made in one place.

use std::path::Path;

use crate::plan::Plan;
use crate::results::{PlanRef, Producer, Results};

/// Which process makes a run's results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Maker {
    /// The process that claims the output directory: it also records the plan's git
    /// revision, asked once per run, not per rank or worker.
    Owner,
    /// A worker or a rank other than the owner: the plan's identity only.
    Worker,
}

/// A new results document of a `run` of `plan`, carrying its identity.
pub fn results(plan: &Plan, plan_path: &Path, hash: &str, maker: Maker) -> Results {
    let mut r = Results::new(Producer::baton("run"));
    r.plan = Some(PlanRef {
        name: plan.name.clone(),
        file: Some(plan_path.display().to_string()),
        hash: Some(hash.to_string()),
        description: plan.description.clone(),
        git: (maker == Maker::Owner)
            .then(|| crate::plan::revision::git_revision(plan_path))
            .flatten(),
    });
    r
}
