//! `--metrics` and `--notify` of `run` and `grade`: the fleet's view of a verdict, said once
//! the verdict is.

use std::path::PathBuf;
use std::time::Duration;

use baton::exit::Exit;
use baton::grade::Grade;
use baton::notify::Target;
use baton::results::Results;
use baton::session;

use super::error::CliError;
use super::ui::Verdict;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct FleetArgs {
    /// Write Prometheus metrics (node_exporter's textfile format) here: a file, or a directory
    /// (node_exporter's textfile directory) that gets `baton-PLAN.prom`. See docs/fleet.md.
    #[arg(long, value_name = "FILE|DIR")]
    pub metrics: Option<PathBuf>,
    /// POST the verdict JSON (schemas/verdict.schema.json) to this http:// URL, with the run's
    /// ID in `X-Baton-Run-Id`; retried within --notify-within; never changes the exit code.
    #[arg(long, value_name = "URL", value_parser = target)]
    pub notify: Option<Target>,
    /// The longest --notify may take, retries included (1 to 3600).
    #[arg(long, value_name = "SECONDS", default_value_t = 30, requires = "notify",
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub notify_within: u64,
}

fn target(s: &str) -> Result<Target, String> {
    Target::parse(s).map_err(|e| e.to_string())
}

/// Writes the metrics and sends the verdict where asked, saying what became of each;
/// `exit` is the command's, sent in the verdict and never changed by a delivery.
pub fn publish(
    a: &FleetArgs,
    g: &Grade,
    results: &[&Results],
    exit: Exit,
    verdict: Verdict,
) -> Result<(), CliError> {
    if let Some(target) = &a.metrics {
        let file = session::write_metrics(g, exit, target)?;
        verdict.line(&format!("metrics: {}", file.display()))?;
    }
    if let Some(to) = &a.notify {
        let id = session::run_id(results);
        let within = Duration::from_secs(a.notify_within);
        let d = session::notify(g, exit, &id, to, within);
        let tries = format!(
            "{} attempt(s), {:.1} s",
            d.attempts,
            d.elapsed.as_secs_f64()
        );
        let line = match &d.outcome {
            Ok(status) => format!("notify: {to}: delivered run {id} ({status}; {tries})"),
            Err(why) => {
                format!(
                    "notify: {to}: run {id} not delivered ({why}; {tries}); the exit code is the verdict's"
                )
            }
        };
        verdict.line(&line)?;
    }
    Ok(())
}
