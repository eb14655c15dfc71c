//! `--metrics` and `--notify` of `run` and `grade`: the fleet's view of a verdict, said once
//! the verdict is.

use std::path::PathBuf;
use std::time::Duration;

use baton::exit::Exit;
use baton::grade::Grade;
use baton::notify::{Target, Tls};
use baton::results::Results;
use baton::session;

use super::error::CliError;
use super::ui::Verdict;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct FleetArgs {
    /// Write Prometheus metrics (node_exporter's textfile format) here: a file, or a directory
    /// (node_exporter's textfile directory) that gets `baton-PLAN.prom`. Default: the site
    /// file's `outputs.metrics`. See docs/fleet.md.
    #[arg(long, value_name = "FILE|DIR")]
    pub metrics: Option<PathBuf>,
    /// POST the verdict JSON (schemas/verdict.schema.json) to this http(s):// URL, with the run's
    /// ID in `X-Baton-Run-Id`; retried within --notify-within; never changes the exit code.
    /// Default: the site file's `outputs.notify`.
    #[arg(long, value_name = "URL", value_parser = TargetParser)]
    pub notify: Option<Target>,
    /// The longest --notify may take, retries included (1 to 3600; default: the site file's
    /// `outputs.notify_within`, else 30).
    #[arg(long, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub notify_within: Option<u64>,
    /// Verify an https:// --notify receiver against the certificates of this PEM file (a
    /// site's own CA) instead of the usual public roots.
    #[arg(long, value_name = "FILE")]
    pub notify_ca: Option<PathBuf>,
    /// The roots --notify-ca gave, read and checked by [`FleetArgs::checked`] before any work.
    #[arg(skip)]
    pub tls: Option<Tls>,
}

impl FleetArgs {
    /// These flags with the site file's `outputs:` filling what they leave out.
    pub fn with_site(self, site: &baton::site::Outputs) -> FleetArgs {
        FleetArgs {
            metrics: self.metrics.or_else(|| site.metrics.clone()),
            notify: self.notify.or_else(|| site.notify.clone()),
            notify_within: self
                .notify_within
                .or(site.notify_within.map(|d| d.as_secs())),
            notify_ca: self.notify_ca,
            tls: self.tls,
        }
    }

    /// These flags with `--notify-ca` read and checked now: a CA file that is missing, not a
    /// regular file or holds no certificate is invalid input (exit 2) before anything runs,
    /// not a verdict silently not sent after the work.
    pub fn checked(self) -> Result<FleetArgs, CliError> {
        let Some(ca) = self.notify_ca.as_deref() else {
            return Ok(self);
        };
        let tls = session::notify_tls(Some(ca)).map_err(CliError::invalid)?;
        Ok(FleetArgs {
            tls: Some(tls),
            ..self
        })
    }

    fn within(&self) -> Duration {
        self.notify_within
            .map_or(baton::notify::DEFAULT_WITHIN, Duration::from_secs)
    }
}

/// `--history` of `run` and `grade`: the flag, else `BATON_HISTORY`, else the site file's
/// `outputs.history` (the plan's own `history:` comes after all three).
pub fn history(flag: Option<PathBuf>, site: &baton::site::Outputs) -> Option<PathBuf> {
    flag.or_else(baton::history::from_env)
        .or_else(|| site.history.clone())
}

/// `--notify URL`, parsed; a URL it refuses is shown without its credentials, path or query
/// (where receivers keep their tokens), never whole as clap would show it.
#[derive(Clone)]
struct TargetParser;

impl clap::builder::TypedValueParser for TargetParser {
    type Value = Target;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Target, clap::Error> {
        let text = value.to_string_lossy();
        Target::parse(&text).map_err(|e| {
            let flag = arg.map_or("--notify <URL>".to_string(), ToString::to_string);
            let shown = baton::secrets::webhook_redacted(&text);
            let shown = baton::stdout::visible(&shown);
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value '{shown}' for '{flag}': {e}\n"),
            )
            .with_cmd(cmd)
        })
    }
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
    publish_as(a, g, &session::run_id(results), exit, verdict)
}

/// A run that ended on `error` before it had results to grade: its plan graded with none (every
/// job fails closed) and published with the run's exit, so the fleet hears of it too. A
/// publication that fails is said first; `error` and its exit code stand.
pub fn failed(
    a: &FleetArgs,
    g: Option<Grade>,
    id: &str,
    error: CliError,
    verdict: Verdict,
) -> CliError {
    let Some(g) = g.filter(|_| a.metrics.is_some() || a.notify.is_some()) else {
        return error;
    };
    let exit = error.exit();
    if let Err(e) = publish_as(a, &g, id, exit, verdict) {
        super::ui::error(&e);
    }
    error
}

fn publish_as(
    a: &FleetArgs,
    g: &Grade,
    id: &str,
    exit: Exit,
    verdict: Verdict,
) -> Result<(), CliError> {
    if let Some(target) = &a.metrics {
        let file = session::write_metrics(g, exit, target)?;
        verdict.line(&format!("metrics: {}", file.display()))?;
    }
    if let Some(to) = &a.notify {
        let tls = match &a.tls {
            Some(tls) => Ok(tls.clone()),
            None => session::notify_tls(a.notify_ca.as_deref()),
        };
        let d = match tls {
            Ok(tls) => session::notify(g, exit, id, to, &tls, a.within()),
            Err(why) => baton::notify::Delivery {
                attempts: 0,
                elapsed: Duration::ZERO,
                outcome: Err(why),
            },
        };
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
