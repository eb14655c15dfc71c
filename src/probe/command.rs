//! A helper program run by the probe (`journalctl -k`, `systemctl is-active`, `mpirun
//! --version`): bounded in time and in output, stdin closed, so a hung or chatty program costs
//! at most its deadline and never blocks the probe.

use std::process::Command;
use std::time::Duration;

/// The most bytes of a helper's stdout kept.
pub const OUTPUT_LIMIT: u64 = 4 << 20;

/// What a helper printed on stdout (lossy UTF-8, at most [`OUTPUT_LIMIT`] bytes) and whether it
/// exited zero; why when it could not be started or ran past `limit`.
pub fn output(program: &str, args: &[&str], limit: Duration) -> Result<(String, bool), String> {
    crate::child::bounded_output(Command::new(program).args(args), limit, OUTPUT_LIMIT)
}
