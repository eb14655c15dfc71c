//! The integration tests that need no cluster and no GPU, as one binary: each file here is one
//! module, and the whole library is linked once instead of once per file (ripgrep's and
//! nextest's layout). `tests/services/` holds the Slurm and simulated-cluster tests, `tests/gpu.rs`
//! the GPU ones.

#[path = "../common/mod.rs"]
mod common;

mod acceptance;
mod acceptance_report;
mod architecture;
mod battery;
mod cli;
mod docs_commands;
mod evidence;
mod exit_codes;
mod expand;
mod fleet_failed;
mod fleet_outputs;
mod fleet_site;
mod grade;
mod history;
mod history_postgres;
mod hostile_input;
mod hung_ranks;
mod ingest;
mod ingest_fuzz;
mod integrity;
mod iterations;
mod junit;
mod knobs;
mod metrics;
mod min_bw;
mod nccl_lines;
mod node_verdicts;
mod nodesets;
mod notify;
mod one_door;
mod outputs;
mod plan_check;
mod plan_props;
mod portable;
mod probe;
mod profiles;
mod ras_isolation;
mod real_logs;
mod records;
mod relative;
mod render;
mod render_fleet;
mod render_launch;
mod render_nodesets;
mod render_resume;
mod rendezvous;
mod report;
mod run_mpi;
mod run_mpi_collectives;
mod run_mpich;
mod schemas;
mod shipped_plans;
mod site;
mod soak_report;
mod split_diagnosis;
mod trust;
