use std::path::{Path, PathBuf};

use baton::collective::Collective;
use baton::exit::Exit;
use baton::ingest::{LogInput, MAX_LOG_BYTES, Options, Outcome, ingest_with};

/// Writes the results of `logs`; the exit code says what the logs show: 0 clean runs, 1 a failed
/// data check, 3 a failed or cut-short run, 4 a timeout (the results are written either way).
pub fn run(
    logs: &[PathBuf],
    out: &Path,
    job: Option<&str>,
    collective: Option<Collective>,
) -> anyhow::Result<Exit> {
    if let Err(e) = baton::output::refuse_inputs(out, logs.iter().map(PathBuf::as_path)) {
        eprintln!("error: -o {e}");
        return Ok(Exit::Invalid);
    }
    let mut contents: Vec<(String, Vec<u8>)> = Vec::new();
    for p in logs {
        let name = p.display().to_string();
        match read_log(p) {
            Ok(b) => contents.push((name, b)),
            Err(e) => {
                eprintln!("error: {}", baton::stdout::visible(&e.to_string()));
                return Ok(Exit::Invalid);
            }
        }
    }
    let inputs: Vec<LogInput<'_>> = contents
        .iter()
        .map(|(name, bytes)| LogInput { name, bytes })
        .collect();
    let opts = Options {
        label: job,
        collective,
    };
    let ingested = match ingest_with(&inputs, &opts) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {}", baton::stdout::visible(&e.to_string()));
            return Ok(Exit::Invalid);
        }
    };
    for w in &ingested.warnings {
        eprintln!("warning: {}", baton::stdout::visible(&w.to_string()));
    }
    if let Err(e) = baton::results::write_atomic(out, &ingested.results) {
        eprintln!("error: {e}");
        return Ok(Exit::Runtime);
    }
    let rows: usize = ingested
        .results
        .jobs
        .iter()
        .flat_map(|j| &j.repeats)
        .map(|r| r.rows.len())
        .sum();
    baton::stdout::print(&format!(
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
