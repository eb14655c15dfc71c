//! The results contract: the versioned JSON that `run` writes, `ingest` produces from nccl-tests
//! logs and `grade` reads. Numbers mean what nccl-tests numbers mean: time in µs per op after
//! cross-rank aggregation, algbw/busbw in decimal GB/s, `wrong` as nccl-tests counts it.
//!
//! The JSON Schema in `schemas/results.schema.json` is generated from these types; a test fails
//! when the committed schema drifts from them.

mod io;
mod model;

pub use io::{ResultsError, read, read_str, write_atomic};
pub use model::*;

/// Value of the `format` field, so a results file is recognisable on its own.
pub const FORMAT: &str = "baton-results";
/// Largest results (or baseline) file read: a 1024-rank soak with every row is tens of MiB.
pub const MAX_RESULTS_BYTES: usize = 256 << 20;
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
