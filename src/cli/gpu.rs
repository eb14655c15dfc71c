//! The local GPU side of `run`: one process, one thread per GPU (in both binaries).

use anyhow::Context;
use baton::exit::Exit;
use baton::runner::fault::Fault;
use baton::runner::nccl::{libs, local};
use baton::runner::{environment, orchestrate, worker};

/// `baton __worker PLAN --plan-hash H --jobs FILE --journal J --gpus N` for `backend: nccl`.
pub fn local_worker(w: &super::WorkerArgs) -> anyhow::Result<Exit> {
    let nccl_version = libs::preflight()?;
    let (plan, jobs, hash) = super::worker_plan(w)?;
    let mut results = orchestrate::new_results(&plan, &w.plan_name, "run", &hash);
    results.environment = environment::capture(&[baton::host::hostname()]);
    local::describe_environment(&mut results, nccl_version);
    let base = worker::WorkerConfig {
        backend: plan.backend,
        journal: w.journal.clone(),
        print_table: w.table,
        fault: Fault::from_env(),
        device_label: String::new(),
        results,
        gpu: None,
        watchdog: true,
        watchdog_grace: grace(),
        telemetry: true,
        progress: w.progress.clone(),
    };
    local::run_local(&jobs, w.gpus, base)
        .map_err(anyhow::Error::msg)
        .context("GPU run failed")?;
    Ok(Exit::Ok)
}

/// NCCL aborts hung collectives itself at the timeout; the watchdog is the last resort after it.
pub fn grace() -> std::time::Duration {
    std::time::Duration::from_secs(15)
}
