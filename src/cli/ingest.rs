use std::path::{Path, PathBuf};

use baton::exit::Exit;
use baton::ingest::{LogInput, MAX_LOG_BYTES, ingest};

pub fn run(logs: &[PathBuf], out: &Path, job: Option<&str>) -> anyhow::Result<Exit> {
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
    let ingested = match ingest(&inputs, job) {
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
    Ok(Exit::Ok)
}

fn read_log(p: &Path) -> Result<Vec<u8>, baton::input::ReadError> {
    baton::input::read_bounded(p, MAX_LOG_BYTES, "log")
}
