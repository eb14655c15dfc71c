//! Plan loading must turn any input into a plan or a diagnostic, never a panic, an abort or an
//! unbounded allocation; a plan that loads must also expand.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(loaded) = baton::plan::parse_bytes("fuzz.yaml", data) {
        let expansion = baton::expand::expand(&loaded.plan);
        assert_eq!(expansion.total_jobs, expansion.jobs.len());
    }
});
