//! `baton probe`: one node's evidence — software, GPUs, NICs, interfaces, TCP, PCIe, kernel log
//! lines — as text or JSON (`docs/evidence.md`). A source it cannot read is shown unavailable
//! with why, never an error: exit 0 unless an argument is wrong (2).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use baton::exit::Exit;
use baton::probe::{self, Options, Roots};

use super::error::CliError;
use super::ui;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// human: a line per source and device; json: the snapshot in full.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Kernel log lines from this time on: a duration ago (`10m`, `1h`), an RFC 3339 time
    /// (`2026-12-01T12:00:00Z`) or `@SECONDS` since the epoch. Default: since boot.
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Read sysfs below this directory instead of /sys (a recorded tree).
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    sys: PathBuf,
    /// Read procfs below this directory instead of /proc.
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    proc: PathBuf,
    /// Read the kernel log from this file instead of /dev/kmsg (and not from the journal).
    #[arg(long, value_name = "FILE")]
    kmsg: Option<PathBuf>,
    /// Leave the GPUs (NVML) alone.
    #[arg(long)]
    no_gpus: bool,
    /// Run no helper program (`mpirun --version`, `systemctl is-active`): MPI and the fabric
    /// manager are then unavailable, "not asked". The preflight asks so: neither is compared.
    #[arg(long)]
    no_helpers: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Format {
    Human,
    Json,
}

pub fn run(a: Args) -> super::Outcome {
    let since = a
        .since
        .as_deref()
        .map(since)
        .transpose()
        .map_err(|why| CliError::Invalid(format!("baton probe: --since {why}")))?;
    let options = Options {
        no_journal: a.kmsg.is_some(),
        roots: Roots {
            sys: a.sys,
            proc: a.proc,
            kmsg: a.kmsg.unwrap_or_else(|| Roots::default().kmsg),
        },
        since,
        no_gpus: a.no_gpus,
        no_helpers: a.no_helpers,
    };
    let snapshot = probe::take(&options);
    let text = match a.format {
        Format::Human => probe::show::human(&snapshot),
        Format::Json => serde_json::to_string_pretty(&snapshot)? + "\n",
    };
    ui::out(&text)?;
    Ok(Exit::Ok)
}

/// `10m` ago, an RFC 3339 time or `@SECONDS`.
fn since(s: &str) -> Result<SystemTime, String> {
    if let Some(secs) = s.strip_prefix('@') {
        let secs: u64 = secs
            .parse()
            .map_err(|_| format!("{s:?}: @ takes seconds since the epoch"))?;
        return Ok(SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
    }
    if let Ok(ago) = humantime::parse_duration(s) {
        return SystemTime::now()
            .checked_sub(ago)
            .ok_or_else(|| format!("{s:?} reaches before the epoch"));
    }
    humantime::parse_rfc3339_weak(s)
        .map_err(|_| format!("{s:?} is neither a duration (10m), an RFC 3339 time nor @SECONDS"))
}
