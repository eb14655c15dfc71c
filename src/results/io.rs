//! Reading and atomically writing results files.

use std::io::Write;
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
}

pub fn read(path: &Path) -> Result<Results, ResultsError> {
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

/// Writes `results` so that a reader (or a crash) sees either the old file or the new one whole:
/// write a temporary file beside it, flush it to disk, then rename over the target.
pub fn write_atomic(path: &Path, results: &Results) -> Result<(), ResultsError> {
    let name = path.display().to_string();
    let werr = |source| ResultsError::Write {
        path: name.clone(),
        source,
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(werr)?;
    let file_name = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.tmp.{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        let bytes = serde_json::to_vec_pretty(results).map_err(std::io::Error::other)?;
        f.write_all(&bytes)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(werr)
}
