use std::path::{Path, PathBuf};

use baton::collective::Collective;
use baton::exit::Exit;
use baton::ingest::{LogInput, MAX_LOG_BYTES, Options, Outcome, ingest_with};
use baton::stdout::visible;

use super::error::CliError;
use super::ui;

/// Writes the results of `logs`; the exit code says what the logs show: 0 clean runs, 1 a failed
/// data check, 3 a failed or cut-short run, 4 a timeout (the results are written either way).
pub fn run(
    logs: &[PathBuf],
    out: &Path,
    job: Option<&str>,
    collective: Option<Collective>,
) -> super::Outcome {
    baton::output::refuse_inputs(out, logs.iter().map(PathBuf::as_path))
        .map_err(|e| CliError::invalid(format!("-o {e}")))?;
    let mut contents: Vec<(String, Vec<u8>)> = Vec::new();
    for p in logs {
        let bytes = read_log(p).map_err(|e| CliError::invalid(visible(&e.to_string())))?;
        contents.push((p.display().to_string(), bytes));
    }
    let inputs: Vec<LogInput<'_>> = contents
        .iter()
        .map(|(name, bytes)| LogInput { name, bytes })
        .collect();
    let opts = Options {
        label: job,
        collective,
    };
    let ingested =
        ingest_with(&inputs, &opts).map_err(|e| CliError::invalid(visible(&e.to_string())))?;
    for w in &ingested.warnings {
        ui::say(&format!("warning: {w}"));
    }
    baton::results::write_atomic(out, &ingested.results).map_err(CliError::runtime)?;
    let rows: usize = ingested
        .results
        .jobs
        .iter()
        .flat_map(|j| &j.repeats)
        .map(|r| r.rows.len())
        .sum();
    ui::out(&format!(
        "{}: {} job(s), {} row(s) from {} log(s){}\n",
        out.display(),
        ingested.results.jobs.len(),
        rows,
        logs.len(),
        match ingested.warnings.len() {
            0 => String::new(),
            n => format!(", {n} warning(s)"),
        }
    ))?;
    Ok(match ingested.outcome {
        Outcome::Clean => Exit::Ok,
        Outcome::CheckFailed => Exit::Failed,
        Outcome::RunFailed => Exit::Runtime,
        Outcome::TimedOut => Exit::Timeout,
    })
}

fn read_log(p: &Path) -> Result<Vec<u8>, baton::input::ReadError> {
    baton::input::read_bounded(p, MAX_LOG_BYTES, "log")
}

/// `--collective all_reduce` (or the program name, `all_reduce_perf`).
pub fn parse_collective(s: &str) -> Result<Collective, String> {
    let name = s.strip_suffix("_perf").unwrap_or(s);
    name.parse().map_err(|_| {
        format!(
            "unknown collective `{s}`: one of {}",
            Collective::names().join(", ")
        )
    })
}
