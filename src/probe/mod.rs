//! Node evidence: a snapshot of one node's hardware and OS facts — identity and software,
//! GPUs through NVML, InfiniBand ports and their counters, network interfaces, TCP
//! retransmits, PCIe links and AER counters, kernel log lines that matter — and the [`delta`]
//! of two snapshots, so a verdict can say *why* a node failed, not only that it did. Every
//! source is bounded, and one that is missing or needs a privilege the process lacks is
//! recorded as unavailable with why: evidence never fails a run. No environment is read into
//! it, so it holds no secrets. What is collected and from where: `docs/evidence.md`.

pub mod command;
pub mod delta;
pub mod ib;
pub mod inventory;
pub mod kernel_log;
pub mod kmsg;
pub mod net;
pub mod netlink;
pub mod nvml;
pub mod pci;
pub mod read;
pub mod show;
pub mod software;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// A fact, or why it could not be had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sourced<T> {
    Available(T),
    Unavailable(String),
}

impl<T> From<Result<T, String>> for Sourced<T> {
    fn from(r: Result<T, String>) -> Self {
        match r {
            Ok(v) => Sourced::Available(v),
            Err(why) => Sourced::Unavailable(why),
        }
    }
}

impl<T> Sourced<T> {
    /// The fact, when there is one.
    pub fn get(&self) -> Option<&T> {
        match self {
            Sourced::Available(v) => Some(v),
            Sourced::Unavailable(_) => None,
        }
    }
}

/// Where the probe reads: the roots of sysfs, procfs and the kernel log device, so a test
/// (or an offline look at a recorded node) points it at a tree of files.
#[derive(Debug, Clone)]
pub struct Roots {
    pub sys: PathBuf,
    pub proc: PathBuf,
    pub kmsg: PathBuf,
}

impl Roots {
    /// The node's own trees, not a recorded one: live sources (rtnetlink) may be asked.
    pub fn is_live(&self) -> bool {
        self.sys == Path::new("/sys") && self.proc == Path::new("/proc")
    }
}

impl Default for Roots {
    fn default() -> Self {
        Roots {
            sys: "/sys".into(),
            proc: "/proc".into(),
            kmsg: "/dev/kmsg".into(),
        }
    }
}

/// What one probe reads.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub roots: Roots,
    /// Kernel log lines from this time on (none: since boot).
    pub since: Option<SystemTime>,
    /// Leave NVML alone (a recorded tree has no GPUs to ask).
    pub no_gpus: bool,
    /// Leave the journal alone when the log device cannot be read (a recorded tree).
    pub no_journal: bool,
    /// Run no helper program (`mpirun --version`, `systemctl`): around every job, where what
    /// they tell does not change and their start-up is most of a probe's time.
    pub no_helpers: bool,
}

/// One node at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Snapshot {
    pub taken_unix_ms: u64,
    /// How long taking it took.
    pub took_ms: u64,
    pub software: software::Software,
    pub gpus: Sourced<nvml::Gpus>,
    pub hcas: Sourced<Vec<ib::Hca>>,
    pub interfaces: Sourced<Vec<net::Interface>>,
    /// This network namespace's `Tcp:` counters (`RetransSegs`, `InErrs`, …).
    pub tcp: Sourced<BTreeMap<String, i64>>,
    pub pci: Sourced<Vec<pci::PciDevice>>,
    pub kernel_log: Sourced<kmsg::KernelLog>,
}

/// Takes a snapshot of the node this runs on.
pub fn take(o: &Options) -> Snapshot {
    let start = Instant::now();
    let now = unix_ms(SystemTime::now());
    let r = &o.roots;
    let since = o.since.map_or(0, unix_ms);
    Snapshot {
        taken_unix_ms: now,
        software: software::software(&r.sys, &r.proc, !o.no_helpers),
        gpus: if o.no_gpus {
            Sourced::Unavailable("not asked (--no-gpus)".into())
        } else {
            nvml::gpus().into()
        },
        hcas: ib::hcas(&r.sys).into(),
        interfaces: net::interfaces(&r.sys, r.is_live()).into(),
        tcp: net::tcp(&r.proc).into(),
        pci: pci::devices(&r.sys).into(),
        kernel_log: kmsg::read(&r.kmsg, boot_unix_us(), since, !o.no_journal).into(),
        took_ms: start.elapsed().as_millis() as u64,
    }
}

/// Milliseconds since the epoch (0 for a time before it).
pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// When this machine booted, µs since the epoch, as the kernel log's stamps count: the wall
/// clock less the monotonic clock (the log's clock does not run in suspend, nor does it).
fn boot_unix_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let mono = ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    now.saturating_sub(mono)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::{Path, PathBuf};

    /// A fresh, empty directory for a recorded tree.
    pub fn tree(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("baton-probe-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Writes `text` at `path`, making its directories.
    pub fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// A snapshot of the recorded tree at `root` (`sys/`, `proc/`, `kmsg`), asking nothing live.
    pub fn take_tree(root: &Path) -> super::Snapshot {
        super::take(&super::Options {
            roots: super::Roots {
                sys: root.join("sys"),
                proc: root.join("proc"),
                kmsg: root.join("kmsg"),
            },
            since: None,
            no_gpus: true,
            no_journal: true,
            no_helpers: true,
        })
    }

    #[test]
    fn a_bare_tree_gives_every_source_a_reason_and_no_error() {
        let s = take_tree(&tree("bare"));
        assert!(s.hcas.get().is_none() && s.interfaces.get().is_none());
        assert!(s.tcp.get().is_none() && s.pci.get().is_none());
        assert!(s.kernel_log.get().is_none() && s.software.kernel.get().is_none());
        let json = serde_json::to_string(&s).unwrap();
        let back: super::Snapshot = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
    }
}
