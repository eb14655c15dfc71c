//! This machine's name, as every record of a run gives it (results, transport captures, the
//! rendezvous, the output directory's lock). Below all of them, so none reaches into the worker.

/// This machine's host name (nccl-tests prints it up to the first dot).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "localhost".into())
}
