//! What a measurement is of, as one hash. Job IDs name jobs for people; two plans (or one plan
//! edited mid-run) can give the same ID to different measurements — all_reduce data labelled
//! "broadcast double" after a `--resume` with another plan. An identity covers everything that
//! changes what is measured (collective, dtype, op, root, split, env, sizes, settings, repeats,
//! ranks, backend) and nothing that only changes how it is graded, so a threshold can be tuned
//! and results graded again, while a changed measurement is never mistaken for the old one.

use serde::Serialize;

use super::Job;
use crate::plan::{Backend, Plan};

/// The identity of `job` as run by `backend`: `sha256:` and 64 hex digits.
pub fn job_identity(job: &Job, backend: Backend) -> String {
    #[derive(Serialize)]
    struct Measured<'a> {
        backend: Backend,
        collective: crate::collective::Collective,
        dtype: crate::collective::Dtype,
        op: Option<crate::collective::RedOp>,
        root: Option<u32>,
        split: Option<&'a str>,
        env: &'a indexmap::IndexMap<String, String>,
        sizes: &'a [u64],
        settings: crate::results::JobSettings,
        repeat: crate::plan::Repeat,
        ranks: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        node_set: Option<(u32, &'a [String])>,
    }
    hash(&Measured {
        backend,
        collective: job.collective,
        dtype: job.dtype,
        op: job.op,
        root: job.root,
        split: job.split_text(),
        env: &job.env,
        sizes: &job.sizes,
        settings: (&job.settings).into(),
        repeat: job.repeat,
        ranks: job.ranks,
        // The one set of `over: all` measures what a plain run of the job measures; the hosts
        // are the host set results and the history record beside the identity.
        node_set: job
            .node_set
            .as_ref()
            .filter(|_| job.over != crate::plan::Over::All)
            .map(|s| (s.round, s.hosts.as_slice())),
    })
}

/// The identity of `plan`: its name and layout, and the identity of every job it expands to.
pub fn plan_identity(plan: &Plan, all_jobs: &[Job]) -> String {
    #[derive(Serialize)]
    struct Whole<'a> {
        name: &'a str,
        backend: Backend,
        nodes: u32,
        ranks_per_node: Option<u32>,
        gpus_per_rank: u32,
        jobs: Vec<(&'a str, String)>,
    }
    hash(&Whole {
        name: &plan.name,
        backend: plan.backend,
        nodes: plan.launch.nodes,
        ranks_per_node: plan.launch.ranks_per_node,
        gpus_per_rank: plan.launch.gpus_per_rank,
        jobs: all_jobs
            .iter()
            .map(|j| (j.id.as_str(), job_identity(j, plan.backend)))
            .collect(),
    })
}

fn hash(value: &impl Serialize) -> String {
    let bytes = serde_json::to_vec(value).expect("plain data serializes");
    crate::digest::sha256_id(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs(extra: &str) -> (Plan, Vec<Job>) {
        let yaml = format!(
            "version: 1\nname: t\nbackend: mpi\nlaunch: {{ nodes: 1, ranks_per_node: 2 }}\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1M]\n{extra}"
        );
        let loaded = match crate::plan::parse_str("t.yaml", &yaml) {
            Ok(l) => l,
            Err(r) => panic!("{}", r.short()),
        };
        let jobs = super::super::expand(&loaded.plan).jobs;
        (loaded.plan, jobs)
    }

    #[test]
    fn a_changed_measurement_changes_the_identity_and_a_criterion_does_not() {
        let (p, base) = jobs("");
        let id = job_identity(&base[0], p.backend);
        assert!(id.starts_with("sha256:") && id.len() == 71);
        for other in [
            "    dtype: double\n",
            "    iters: 1\n",
            "    env: { NCCL_ALGO: Ring }\n",
            "    repeat: 2\n",
        ] {
            let (p2, j) = jobs(other);
            assert_ne!(job_identity(&j[0], p2.backend), id, "{other}");
            assert_ne!(plan_identity(&p2, &j), plan_identity(&p, &base), "{other}");
        }
        let (p3, graded) = jobs("    expect:\n      - wrong: 0\n");
        assert_eq!(job_identity(&graded[0], p3.backend), id);
        assert_eq!(plan_identity(&p3, &graded), plan_identity(&p, &base));
    }
}
