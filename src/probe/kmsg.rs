//! Reading the kernel log since a time: `/dev/kmsg` without blocking (each read one record,
//! `EAGAIN` at the end, `EPIPE` when records were overwritten while reading), else
//! `journalctl -k`, both bounded in bytes, lines and time. `/dev/kmsg` needs CAP_SYSLOG when
//! `kernel.dmesg_restrict=1`; the journal needs the `systemd-journal` or `adm` group.

use std::io::{ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::kernel_log::{self, KernelEvent};

/// The most bytes of kernel log read (the kernel's ring buffer is rarely over 16 MiB).
const BYTE_LIMIT: usize = 32 << 20;
/// The most events kept; later ones are counted as left out.
pub const EVENT_LIMIT: usize = 1000;
/// How long `journalctl` may take.
const JOURNAL_TIME: Duration = Duration::from_secs(3);

/// The kept lines of the kernel log since a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KernelLog {
    /// `/dev/kmsg` or `journalctl -k`.
    pub source: String,
    pub since_unix_ms: u64,
    pub events: Vec<KernelEvent>,
    /// Events past [`EVENT_LIMIT`], or bytes past the read bound, that were not kept.
    pub left_out: u64,
}

/// The kernel log's events since `since_unix_ms`: from `kmsg` (the device, or a recorded file
/// of its records) whose stamps count from `boot_unix_us`, else from the journal when `journal`
/// is set; why neither could be read.
pub fn read(
    kmsg: &Path,
    boot_unix_us: u64,
    since_unix_ms: u64,
    journal: bool,
) -> Result<KernelLog, String> {
    let dev = match from_kmsg(kmsg, boot_unix_us, since_unix_ms) {
        Ok(log) => return Ok(log),
        Err(why) => why,
    };
    if !journal {
        return Err(dev);
    }
    from_journal(since_unix_ms).map_err(|j| format!("{dev}; {j}"))
}

fn from_kmsg(path: &Path, boot_unix_us: u64, since_unix_ms: u64) -> Result<KernelLog, String> {
    let why = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut file = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(why)?;
    let t = file.metadata().map_err(why)?.file_type();
    if !(t.is_char_device() || t.is_file()) {
        return Err(format!("{}: not the kernel log device", path.display()));
    }
    let mut log = empty("/dev/kmsg", since_unix_ms);
    let mut buf = vec![0u8; 16 * 1024];
    let (mut carry, mut total) = (Vec::new(), 0usize);
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(why(e)),
        };
        total += n;
        if total > BYTE_LIMIT {
            log.left_out += 1;
            break;
        }
        // Only the bytes just read can hold a new line end: searching all of `carry` again
        // each time is quadratic in a line that never ends (a device that is not the log).
        let before = carry.len();
        carry.extend_from_slice(&buf[..n]);
        let end = carry[before..]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| before + i + 1);
        let lines: Vec<u8> = carry.drain(..end).collect();
        for line in String::from_utf8_lossy(&lines).lines() {
            let Some((_, usec, msg)) = kernel_log::parse_kmsg(line) else {
                continue;
            };
            keep(&mut log, msg, (boot_unix_us + usec) / 1000);
        }
    }
    Ok(log)
}

fn from_journal(since_unix_ms: u64) -> Result<KernelLog, String> {
    let since = format!("--since=@{}", since_unix_ms / 1000);
    let args = [
        "-k",
        "-q",
        "--no-pager",
        "-o",
        "short-unix",
        "-n",
        "100000",
        &since,
    ];
    let (out, ok) = super::command::output("journalctl", &args, JOURNAL_TIME)?;
    if !ok {
        return Err("journalctl -k failed (no journal, or no permission to read it)".into());
    }
    let mut log = empty("journalctl -k", since_unix_ms);
    for line in out.lines() {
        if let Some((us, msg)) = kernel_log::parse_journal(line) {
            keep(&mut log, msg, us / 1000);
        }
    }
    Ok(log)
}

fn empty(source: &str, since_unix_ms: u64) -> KernelLog {
    KernelLog {
        source: source.into(),
        since_unix_ms,
        events: Vec::new(),
        left_out: 0,
    }
}

fn keep(log: &mut KernelLog, msg: &str, at_unix_ms: u64) {
    if at_unix_ms < log.since_unix_ms {
        return;
    }
    let Some(e) = kernel_log::event(msg, at_unix_ms) else {
        return;
    };
    if log.events.len() < EVENT_LIMIT {
        log.events.push(e);
    } else {
        log.left_out += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::tests::{tree, write};

    #[test]
    fn recorded_records_since_a_time_are_kept_and_noise_is_not() {
        let d = tree("kmsg");
        let path = d.join("kmsg");
        write(
            &path,
            "6,1,1000000,-;Linux version 6.8.0\n\
             4,2,5000000,-;NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=a, Graphics Exception\n\
             \x20SUBSYSTEM=pci\n\
             4,3,9000000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=a, GPU has fallen off the bus.\n\
             6,4,9500000,-;mlx5_core 0000:0c:00.0 ib0: Link down\n",
        );
        // Booted at t=100 s; since t=106 s: the Xid 13 (t=105 s) is before.
        let log = read(&path, 100_000_000, 106_000, false).unwrap();
        let kinds: Vec<String> = log.events.iter().map(|e| e.kind.short()).collect();
        assert_eq!(kinds, ["Xid 79", "0000:0c:00.0 ib0 link down"]);
        assert_eq!(log.events[0].at_unix_ms, 109_000);
    }

    #[test]
    fn a_missing_log_is_a_reason() {
        let why = read(Path::new("/nonexistent/kmsg"), 0, 0, false).unwrap_err();
        assert!(why.contains("/nonexistent/kmsg"), "{why}");
        let d = tree("kmsg-dir");
        assert!(
            read(&d, 0, 0, false)
                .unwrap_err()
                .contains("not the kernel log")
        );
    }

    #[test]
    fn the_real_device_reads_without_blocking() {
        // Root here reads it; elsewhere a permission error is a reason, never a hang.
        let t = std::time::Instant::now();
        let _ = read(Path::new("/dev/kmsg"), 0, 0, false);
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
