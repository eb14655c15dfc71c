//! A whole plan's env set on the local GPUs from one process: the default on a single node.

use super::device::{Gpu, GpuInfo};
use super::libs;
use super::threads::on_each_gpu;
use crate::expand::Job;
use crate::results::Results;
use crate::runner::worker::{self, WorkerConfig};

/// How a GPU appears in the nccl-tests device list: `device  0 [0000:18:00] NVIDIA H200`.
pub fn device_label(g: &GpuInfo) -> String {
    // The driver's bus id is `00000000:18:00.0`; nccl-tests prints `[0000:18:00]`.
    let id = g.pci_bus_id.split('.').next().unwrap_or("");
    let mut parts = id.split(':');
    let (dom, bus, dev) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    let dom = &dom[dom.len().saturating_sub(4)..];
    format!(
        "device {:2} [{}:{}:{}] {}",
        g.ordinal,
        dom.to_lowercase(),
        bus.to_lowercase(),
        dev.to_lowercase(),
        g.name
    )
}

/// NCCL, driver and topology facts for the results of a GPU run.
pub fn describe_environment(results: &mut Results, nccl_version: i32) {
    let env = &mut results.environment;
    env.nccl_version = Some(libs::version_text(nccl_version));
    env.driver_version = Gpu::driver_version();
    env.topology = crate::runner::telemetry::topology();
}

/// Runs `jobs` with one thread per GPU (`0..ngpus`); rank 0's results come back.
pub fn run_local(jobs: &[Job], ngpus: usize, base: WorkerConfig) -> Result<Results, String> {
    on_each_gpu(
        ngpus,
        |w, engine| {
            let info = engine.gpu.info();
            let mut cfg = base.clone();
            cfg.device_label = device_label(&info);
            cfg.gpu = Some(info);
            if crate::world::World::rank(w) != 0 {
                cfg.print_table = false;
                cfg.watchdog = false;
                cfg.telemetry = false;
            }
            worker::run_jobs(w, engine, jobs, cfg).map_err(|e| e.to_string())
        },
        |why| why,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_like_nccl_tests() {
        let g = GpuInfo {
            ordinal: 1,
            name: "NVIDIA H200".into(),
            uuid: String::new(),
            pci_bus_id: "00000000:00:07.0".into(),
            memory_bytes: 0,
        };
        assert_eq!(device_label(&g), "device  1 [0000:00:07] NVIDIA H200");
    }
}
