//! Reading a results file or a baseline (which is one) must turn any bytes into results or a
//! typed error, never a panic, an abort or an unbounded allocation; results that read must also
//! compare against themselves as a baseline and write back.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(r) = baton::results::read_str("fuzz.json", &text) {
        let c = baton::grade::compare("old.json", &r, "new.json", &r);
        let _ = baton::report::render_comparison(&c, true);
        serde_json::to_string(&r).expect("results serialize");
    }
});
