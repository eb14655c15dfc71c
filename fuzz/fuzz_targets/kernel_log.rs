//! The kernel log is written by drivers and by anyone with root (`/dev/kmsg` takes writes):
//! any bytes, as kmsg records or journal lines, must give events or nothing — never a panic —
//! and what an event keeps stays bounded.

#![no_main]

use baton::probe::kernel_log::{self, EventKind, LINE_LIMIT};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for line in text.split('\n') {
        let msg = match (kernel_log::parse_kmsg(line), kernel_log::parse_journal(line)) {
            (Some((_, _, m)), _) | (None, Some((_, m))) => m,
            (None, None) => line,
        };
        if let Some(e) = kernel_log::event(msg, 0) {
            assert!(e.line.len() <= LINE_LIMIT);
            let device = match &e.kind {
                EventKind::Xid { device, .. }
                | EventKind::Sxid { device, .. }
                | EventKind::Link { device, .. }
                | EventKind::Aer { device } => device,
            };
            assert!(device.len() <= 64);
            let _ = e.kind.short();
        }
    }
});
