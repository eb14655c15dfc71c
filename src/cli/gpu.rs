//! The local GPU side of `run`: one process, one thread per GPU (in both binaries).

use anyhow::Context;
use baton::exit::Exit;
use baton::runner::fault::Fault;
use baton::runner::lifecycle::{self, Maker};
use baton::runner::nccl::{libs, local};
use baton::runner::{environment, worker};

/// `baton __worker PLAN --plan-hash H --jobs FILE --journal J --gpus N` for `backend: nccl`.
pub fn local_worker(w: &super::WorkerArgs) -> super::Outcome {
    let nccl_version = libs::preflight()?;
    let (plan, jobs, hash) = w.load()?;
    let mut results = lifecycle::results(&plan, &w.plan_name, &hash, Maker::Worker);
    results.environment = environment::capture(&[baton::host::hostname()]);
    local::describe_environment(&mut results, nccl_version);
    let base = worker::WorkerConfig {
        backend: plan.backend,
        journal: w.journal.clone(),
        print_table: w.table,
        events: std::sync::Arc::new(super::ui::Ui::worker()),
        fault: Fault::from_env(),
        device_label: String::new(),
        results,
        gpu: None,
        watchdog: true,
        watchdog_grace: baton::runner::rank::nccl_grace(),
        telemetry: true,
        evidence: plan.evidence && !w.no_evidence,
        progress: w.progress.clone(),
        // A worker of `baton run`: its parent folds the journal.
        on_timeout: None,
    };
    local::run_local(&jobs, w.gpus, base)
        .map_err(anyhow::Error::msg)
        .context("GPU run failed")?;
    Ok(Exit::Ok)
}
