//! Ingest must turn any bytes into results or a typed error, never a panic, an abort, a hang or
//! an unbounded allocation: as nccl-tests text (with NCCL_DEBUG lines) or JSON (`-J`), alone, as
//! two logs of one job (`--job`), or beside a debug-only capture. Whatever results come out must
//! survive the results file round trip.

#![no_main]

use baton::ingest::{LogInput, ingest};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the shape; a NUL splits the rest into two logs.
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (a, b) = match rest.iter().position(|&c| c == 0) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let mut logs = vec![LogInput {
        name: "a.log",
        bytes: a,
    }];
    if let Some(b) = b {
        logs.push(LogInput {
            name: "b.log",
            bytes: b,
        });
    }
    let label = (mode & 1 == 1).then_some("job[x=1]");
    if let Ok(i) = ingest(&logs, label) {
        let text = serde_json::to_string(&i.results).expect("results serialize");
        let back = baton::results::read_str("fuzz.json", &text).expect("results read back");
        assert_eq!(back.jobs.len(), i.results.jobs.len());
    }
});
