//! The tests that drive the shared services, as one binary: the one-node Slurm
//! (`scripts/slurm-local`) and the simulated cluster (`scripts/cluster-sim`), whose tests take
//! one lock (`/tmp/baton-cluster-sim.lock`) and so run one at a time across processes.

#[path = "../common/mod.rs"]
mod common;

mod cluster;
mod cluster_accept;
mod cluster_evidence;
mod cluster_nccl_lines;
mod cluster_nodesets;
mod probe;
mod slurm;
