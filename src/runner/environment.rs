//! What a handover report must name about where numbers were measured.

use indexmap::IndexMap;

use crate::results::{Environment, Host};

/// Variable prefixes that change collective performance or placement.
const PREFIXES: &[&str] = &[
    "NCCL_",
    "CUDA_",
    "OMPI_MCA_",
    "UCX_",
    "NVIDIA_",
    "SLURM_JOB_",
    "SLURM_NODELIST",
];

/// Variables mpirun sets for its own bookkeeping in every rank: noise in a report.
const LAUNCHER_INTERNAL: &[&str] = &[
    "OMPI_MCA_ess",
    "OMPI_MCA_orte",
    "OMPI_MCA_initial_wdir",
    "OMPI_MCA_pmix",
    "OMPI_MCA_shmem",
    "OMPI_MCA_mpi_oversubscribe",
    "OMPI_MCA_plm",
    "OMPI_MCA_rmaps",
];

/// Environment of this process: the shaping variables and the given hosts.
pub fn capture(hosts: &[String]) -> Environment {
    let mut variables: IndexMap<String, String> = std::env::vars()
        .filter(|(k, _)| PREFIXES.iter().any(|p| k.starts_with(p)))
        .filter(|(k, _)| !LAUNCHER_INTERNAL.iter().any(|p| k.starts_with(p)))
        .collect();
    variables.sort_keys();
    let mut names: Vec<&String> = hosts.iter().collect();
    names.sort();
    names.dedup();
    Environment {
        hosts: names
            .into_iter()
            .map(|h| Host {
                hostname: h.clone(),
                gpus: Vec::new(),
            })
            .collect(),
        variables,
        ..Environment::default()
    }
}
