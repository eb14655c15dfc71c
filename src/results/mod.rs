//! The results contract: the versioned JSON that `run` writes, `ingest` produces from nccl-tests
//! logs and `grade` reads. Numbers mean what nccl-tests numbers mean: time in µs per op after
//! cross-rank aggregation, algbw/busbw in decimal GB/s, `wrong` as nccl-tests counts it.
//!
//! The JSON Schema in `schemas/results.schema.json` is generated from these types; a test fails
//! when the committed schema drifts from them.

pub mod env;
pub mod evidence;
mod io;
pub mod iterations;
pub mod journal;
pub mod measure;
pub mod measured_with;
mod model;
mod ras;

pub use io::{Notice, ResultsError, read, read_file, read_noting, read_str, write_atomic};
pub use measured_with::{DeviceImplementation, MeasuredWith, MemoryFigures};
pub use model::*;

/// Value of the `format` field, so a results file is recognisable on its own.
pub const FORMAT: &str = "baton-results";
/// Largest results (or baseline) file read. A 1024-rank soak with every row is tens of MiB; a
/// minute of 8-byte rows on two host ranks (`scripts/bench-journal`) is about 300 MiB.
pub const MAX_RESULTS_BYTES: usize = 1 << 30;
/// Current results format version. Readers accept this version only.
pub const VERSION: u32 = 1;

/// The results JSON Schema, generated from the types.
pub fn results_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Results)).expect("schema serializes")
}

/// Now, as RFC 3339 UTC with seconds, for `started`/`finished` stamps.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Folds what a worker saw (hosts, GPUs, library versions) into the run's environment; what the
/// run already knew stays.
pub fn merge_environment(into: &mut Environment, from: Environment) {
    for h in from.hosts {
        match into.hosts.iter_mut().find(|x| x.hostname == h.hostname) {
            Some(x) => {
                for g in h.gpus {
                    if !x.gpus.iter().any(|y| y.index == g.index) {
                        x.gpus.push(g);
                    }
                }
            }
            None => into.hosts.push(h),
        }
    }
    into.driver_version = into.driver_version.take().or(from.driver_version);
    into.cuda_version = into.cuda_version.take().or(from.cuda_version);
    into.nccl_version = into.nccl_version.take().or(from.nccl_version);
    into.mpi_version = into.mpi_version.take().or(from.mpi_version);
    into.topology = into.topology.take().or(from.topology);
    for (k, v) in from.variables {
        into.variables.entry(k).or_insert(v);
    }
}

/// Why `r` would make a bad baseline: the run was cut short, a job did not complete, data came
/// back wrong, or a measured time is impossible (zero, negative, not a number).
pub fn unfit_for_baseline(r: &Results) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(i) = &r.interrupted {
        out.push(format!("the run was stopped ({i})"));
    }
    for j in &r.jobs {
        if j.status != JobStatus::Completed {
            let status = format!("{:?}", j.status).to_lowercase();
            out.push(format!("job `{}` is {status}", j.id));
        }
        let wrong = j
            .cells()
            .filter(|c| c.3.wrong.is_some_and(|w| w > 0))
            .count();
        if wrong > 0 {
            out.push(format!("job `{}` has #wrong > 0 in {wrong} cell(s)", j.id));
        }
        let impossible = j
            .cells()
            .filter(|c| c.3.status == CellStatus::Ok)
            .filter(|c| !c.3.time_us.is_some_and(|t| t.is_finite() && t > 0.0))
            .count();
        if impossible > 0 {
            out.push(format!(
                "job `{}` has {impossible} cell(s) without a positive time",
                j.id
            ));
        }
    }
    out
}
