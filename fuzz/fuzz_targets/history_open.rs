//! Opening a history store reads a file a plan may name (`history:`), so any bytes as the store
//! — and as its write-ahead log — must open read-only to a store or a typed error, never a
//! panic, an abort, a write or an unbounded allocation; a store that opens must answer `show`'s
//! and `trend`'s queries the same way.
//!
//! The first byte's low bit says whether the rest is split in two: the store file and its
//! `-wal` beside it.

#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use baton::history::{Query, Store};
use libfuzzer_sys::fuzz_target;

/// One scratch directory per fuzzing process.
fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("baton-fuzz-history-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("scratch directory");
        d
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let dir = scratch();
    let store = dir.join("h.sqlite");
    let wal = dir.join("h.sqlite-wal");
    let _ = std::fs::remove_file(dir.join("h.sqlite-shm"));
    let (db, log) = if flags & 1 == 1 {
        rest.split_at(rest.len() / 2)
    } else {
        (rest, &[][..])
    };
    std::fs::write(&store, db).expect("store written");
    if log.is_empty() {
        let _ = std::fs::remove_file(&wal);
    } else {
        std::fs::write(&wal, log).expect("log written");
    }
    let Ok(s) = Store::open(&store) else {
        return;
    };
    let _ = s.rows(&Query::default());
    let _ = s.rows(&Query {
        job: Some("allreduce".into()),
        node: Some("vm".into()),
        last: Some(3),
    });
    let _ = s.busbw_history("identity", "vm", 8 << 30, 10, "key");
    let _ = s.contains("key");
    drop(s);
    // Read-only: the store is as it was written.
    assert_eq!(std::fs::read(&store).expect("store read"), db, "a read wrote the store");
});
