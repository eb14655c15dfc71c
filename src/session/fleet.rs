//! What a run or `grade` hands to a fleet's tools besides its files: Prometheus metrics
//! (`--metrics`) and the verdict POSTed to a webhook (`--notify`), both keyed to the run by an
//! ID that is the same every time the same results are graded.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::grade::Grade;
use crate::notify::{Delivery, Target, Tls};
use crate::output::OutputError;
use crate::results::Results;

/// The run's stable ID: one results file's is its history key (`baton history add` prints it),
/// so a receiver can join a notification with the history; several files' is the hash of
/// their keys, in any order.
pub fn run_id(results: &[&Results]) -> String {
    let mut keys: Vec<String> = results.iter().map(|r| crate::history::key_of(r)).collect();
    if keys.len() == 1 {
        return keys.remove(0);
    }
    keys.sort_unstable();
    crate::digest::sha256_id(keys.join("\n").as_bytes())
}

/// The ID of a run that failed before it measured anything: no results to key it by, so the
/// plan, the output directory and the moment it failed — another attempt is another run, never
/// taken by a receiver for a retry of this one.
pub fn failed_run_id(plan_identity: &str, out_dir: &Path) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!(
        "failed\n{plan_identity}\n{}\n{now}\n{}",
        out_dir.display(),
        std::process::id()
    );
    crate::digest::sha256_id(seed.as_bytes())
}

/// `--metrics TARGET`: the textfile for node_exporter; returns the file written.
pub fn write_metrics(
    g: &Grade,
    exit: crate::exit::Exit,
    target: &Path,
) -> Result<PathBuf, OutputError> {
    crate::metrics::write(target, g, exit)
}

/// `--notify URL`: POSTs the verdict JSON with the run's ID, retrying within `within`; an
/// https receiver is verified against `tls`.
pub fn notify(
    g: &Grade,
    exit: crate::exit::Exit,
    run_id: &str,
    to: &Target,
    tls: &Tls,
    within: Duration,
) -> Delivery {
    let doc = crate::report::Verdict::new(g, exit);
    let body = serde_json::to_vec(&doc).unwrap_or_default();
    crate::notify::send(to, tls, run_id, &body, within)
}

/// The roots an https webhook is verified against: `--notify-ca FILE` (PEM, read bounded),
/// else Mozilla's; `Err` says why the file cannot be used.
pub fn notify_tls(ca: Option<&Path>) -> Result<Tls, String> {
    let Some(file) = ca else {
        return Tls::new(None);
    };
    let pem =
        crate::input::read_bounded(file, 1 << 20, "--notify-ca").map_err(|e| e.to_string())?;
    Tls::new(Some(&pem)).map_err(|why| format!("--notify-ca {}: {why}", file.display()))
}
