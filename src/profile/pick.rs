//! Which profile a job is graded against: the one its plan names, else the one whose GPU model
//! and count match what the results recorded.

use super::{Profile, ProfileError, available, named};
use crate::plan::PlanFiles;
use crate::results::{Environment, JobResult};

/// The profile of one job, or why there is none.
pub type Picked = Result<Profile, String>;

/// The profile among `profiles` for `count` GPUs named `gpu`.
pub fn pick<'p>(profiles: &'p [Profile], gpu: &str, count: u64) -> Option<&'p Profile> {
    profiles.iter().find(|p| p.fits(gpu, count))
}

/// The profile for a job: the plan's `profile:` when set, else picked from the recorded GPUs
/// of the hosts the job ran on and its rank count.
pub fn for_job(
    plan_profile: Option<&str>,
    files: Option<&PlanFiles>,
    env: Option<&Environment>,
    job: &JobResult,
) -> Picked {
    if let Some(name) = plan_profile {
        return named(name, files).map_err(|e| e.to_string());
    }
    let profiles = available(files).map_err(|e: ProfileError| e.to_string())?;
    let hosts: Vec<&str> = job.layout.ranks.iter().map(|r| r.host.as_str()).collect();
    let gpu = env.and_then(|e| {
        e.hosts
            .iter()
            .filter(|h| hosts.is_empty() || hosts.contains(&h.hostname.as_str()))
            .flat_map(|h| h.gpus.iter())
            .map(|g| g.name.as_str())
            .next()
    });
    let Some(gpu) = gpu else {
        return Err(
            "no profile: the plan names none (`profile:`) and the results record no GPU model to pick one by"
                .into(),
        );
    };
    let count = job.layout.nranks;
    pick(&profiles, gpu, count).cloned().ok_or_else(|| {
        format!(
            "no profile for {count} × {gpu} (built in: {}); name one with `profile:` or add profiles/NAME.yaml beside the plan",
            profiles
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}
