//! One door for untrusted input (#36): every file baton reads because a plan, a site file, an
//! acceptance file, a record or a flag named it goes through `src/input.rs` (regular files
//! only, bounded, never blocking) — with the trust rule of its kind in `src/plan/files.rs`
//! (plan-relative files) and `src/output.rs` (records in baton's own output directories, never
//! through a link). This scan fails when library or CLI code opens a file for reading any other
//! way: a new reader either goes through the door or is added below with why it may not.

use std::path::Path;

/// Ways to read a file that bypass the door.
const READERS: &[&str] = &[
    "fs::read(",
    "fs::read_to_string(",
    "File::open(",
    ".read(true)",
];

/// Files that read outside the door, each with why: the machine's own state (never a path a
/// user or a plan names), or a file baton itself just created and checked.
const EXCEPTIONS: &[(&str, &str)] = &[
    ("src/input.rs", "the door itself"),
    (
        "src/output.rs",
        "opens the directory it just wrote into, to sync it; opens outputs read-write (a lock) with O_NOFOLLOW",
    ),
    (
        "src/host.rs",
        "/proc/sys/kernel/hostname: the machine's own name",
    ),
    ("src/launch/mod.rs", "/proc/self/status: this process's own"),
    (
        "src/runner/stalled.rs",
        "/proc/PID/stat of a rank baton started",
    ),
    (
        "src/probe/kmsg.rs",
        "/dev/kmsg (or --kmsg): a probe reads the kernel's log, non-blocking and bounded",
    ),
    (
        "src/runner/supervise.rs",
        "the feed file of a rank baton started, in the run's own directory",
    ),
    (
        "src/runner/outdir.rs",
        "the lock holder's note in the run's own directory, read after the lock is taken",
    ),
    (
        "src/runner/transport.rs",
        "the transport capture files the run's own ranks wrote in its directory",
    ),
    (
        "src/results/journal.rs",
        "re-opens the journal open_append has just checked (regular, no link) to read its last byte",
    ),
    (
        "src/runner/keeper.rs",
        "opens the run's own journal only to lock it (flock) and compare its inode with the path's; reads nothing",
    ),
    (
        "src/runner/arrival.rs",
        "the ranks' announcements and start-up record in the worker's own directory (O_NOFOLLOW, bounded), and /proc/PID/environ of this host's launcher processes (bounded)",
    ),
    (
        "src/rendezvous/key.rs",
        "the per-user rendezvous key: opened with O_NOFOLLOW and checked for owner and mode",
    ),
];

/// The code of `text` before its unit tests (`#[cfg(test)]`), where a test may read freely.
fn code_of(text: &str) -> &str {
    match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    }
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_reader_of_a_named_file_goes_through_the_one_door() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut bypass = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        let name = f.file_name().unwrap().to_string_lossy();
        if name == "tests.rs" || name.ends_with("_tests.rs") || rel.contains("/tests/") {
            continue;
        }
        if EXCEPTIONS.iter().any(|(e, _)| *e == rel) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in code_of(&text).lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if let Some(r) = READERS.iter().find(|r| code.contains(*r)) {
                bypass.push(format!("{rel}:{}: `{r}`: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        bypass.is_empty(),
        "files read outside src/input.rs (go through crate::input, or add the file to EXCEPTIONS with why):\n{}",
        bypass.join("\n")
    );
    // Every exception still reads: a stale one would let a new reader in unnoticed.
    for (e, why) in EXCEPTIONS {
        let text = std::fs::read_to_string(root.join(e)).unwrap_or_default();
        assert!(
            READERS.iter().any(|r| code_of(&text).contains(r)),
            "{e} ({why}) no longer reads outside the door: take it off the list"
        );
    }
}
