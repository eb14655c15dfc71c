//! Reading and atomically writing results files.

use std::path::Path;

use super::{FORMAT, Results, VERSION};

#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("cannot read results {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write results {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: not a baton results file: {message}")]
    Parse {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: not a baton results file (format is `{found}`, expected `{FORMAT}`)")]
    Format { path: String, found: String },
    #[error(
        "{path}: results format version {found} is not supported; this baton reads version {VERSION}"
    )]
    Version { path: String, found: u32 },
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
}

/// Reads a results file. When a run's journal lies beside it (the run was killed before it
/// could fold its rows in), the results are rebuilt from the journal, which holds every row.
pub fn read(path: &Path) -> Result<Results, ResultsError> {
    read_noting(path).map(|(r, _)| r)
}

/// What a reader of results should be told about how they were read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The run's journal held rows `results.json` did not: both were read.
    Unfolded { journal: String, results: String },
    /// The journal had lines cut short (a crash mid-write), skipped.
    Damaged { journal: String, lines: usize },
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notice::Unfolded { journal, results } => write!(
                f,
                "{journal} holds rows not yet folded into {results} (the run did not finish); reading both"
            ),
            Notice::Damaged { journal, lines } => {
                write!(f, "{journal}: skipped {lines} damaged line(s)")
            }
        }
    }
}

/// [`read`], with what the reader should be told (a journal read beside it, damaged lines).
pub fn read_noting(path: &Path) -> Result<(Results, Vec<Notice>), ResultsError> {
    let journal = path.with_file_name(super::journal::FILE);
    if path.file_name().is_some_and(|f| f == "results.json") && journal.is_file() {
        let name = journal.display().to_string();
        let mut notes = vec![Notice::Unfolded {
            journal: name.clone(),
            results: path.display().to_string(),
        }];
        let r = super::journal::rebuild_counted(&journal)?;
        if r.damaged > 0 {
            notes.push(Notice::Damaged {
                journal: name,
                lines: r.damaged,
            });
        }
        return Ok((r.results, notes));
    }
    Ok((read_file(path)?, Vec::new()))
}

/// Reads exactly the results file at `path`, never its journal.
pub fn read_file(path: &Path) -> Result<Results, ResultsError> {
    let name = path.display().to_string();
    let text = crate::input::read_bounded(path, super::MAX_RESULTS_BYTES, "results file").map_err(
        |e| ResultsError::Read {
            path: name.clone(),
            source: e.into_io(),
        },
    )?;
    read_str(&name, &String::from_utf8_lossy(&text))
}

pub fn read_str(name: &str, text: &str) -> Result<Results, ResultsError> {
    // Check the envelope first so a wrong file gets a message about what it is, not a field.
    #[derive(serde::Deserialize)]
    struct Envelope {
        format: Option<String>,
        version: Option<u32>,
    }
    let parse_err = |e: serde_json::Error| ResultsError::Parse {
        path: name.to_string(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    };
    let env: Envelope = serde_json::from_str(text).map_err(parse_err)?;
    match env.format.as_deref() {
        Some(FORMAT) => {}
        other => {
            return Err(ResultsError::Format {
                path: name.to_string(),
                found: other.unwrap_or("missing").to_string(),
            });
        }
    }
    if env.version != Some(VERSION) {
        return Err(ResultsError::Version {
            path: name.to_string(),
            found: env.version.unwrap_or(0),
        });
    }
    serde_json::from_str(text).map_err(parse_err)
}

/// Writes `results` so that a reader (or a crash) sees either the old file or the new one whole.
pub fn write_atomic(path: &Path, results: &Results) -> Result<(), ResultsError> {
    let mut bytes = serde_json::to_vec_pretty(results).map_err(|e| ResultsError::Write {
        path: path.display().to_string(),
        source: std::io::Error::other(e),
    })?;
    bytes.push(b'\n');
    crate::output::write_atomic(path, &bytes).map_err(ResultsError::from)
}
