//! A plan opened once: its text (carried into the run's directory and scripts), the checked
//! plan with its warnings, its jobs and identity, and the trust it was opened with.

use std::path::{Path, PathBuf};

use crate::expand::{Job, expand, plan_identity};
use crate::plan::{LoadError, Loaded, PlanFiles, Report, Trust};

/// A plan read, checked and expanded.
pub struct OpenedPlan {
    pub path: PathBuf,
    /// The bytes it was checked from, as text.
    pub text: String,
    /// The plan and its warnings (the CLI shows them).
    pub loaded: Loaded,
    /// Every job of the plan, before `--only` or `--env-set`.
    pub jobs: Vec<Job>,
    /// What the plan measures (`expand::plan_identity`): results of another identity are
    /// neither graded nor resumed as this plan's.
    pub identity: String,
    pub trust: Trust,
}

/// Why a plan could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Its diagnostics, each with file, line and column.
    #[error("{}", .0.short())]
    Invalid(Report),
    #[error(transparent)]
    Unreadable(LoadError),
}

/// Reads and checks the plan at `path` once, with the program-running keys `trust` allows.
pub fn open(path: &Path, trust: Trust) -> Result<OpenedPlan, OpenError> {
    let (name, bytes) = crate::plan::read_file(path).map_err(|e| match e {
        LoadError::Invalid(report) => OpenError::Invalid(report),
        e => OpenError::Unreadable(e),
    })?;
    open_bytes(path, &name, &bytes, trust)
}

/// Checks plan `bytes` (named `name` in diagnostics) as the plan at `path`: an acceptance
/// phase's plan, built from its file or written inline, is opened here.
pub fn open_bytes(
    path: &Path,
    name: &str,
    bytes: &[u8],
    trust: Trust,
) -> Result<OpenedPlan, OpenError> {
    let loaded = crate::plan::parse_bytes_with(name, bytes, trust).map_err(OpenError::Invalid)?;
    // The checks refuse anything but UTF-8, so the text is the bytes the plan was checked from.
    let text = String::from_utf8_lossy(bytes).into_owned();
    let jobs = expand(&loaded.plan).jobs;
    let identity = plan_identity(&loaded.plan, &jobs);
    Ok(OpenedPlan {
        path: path.to_path_buf(),
        text,
        loaded,
        jobs,
        identity,
        trust,
    })
}

/// The files beside the plan at `path` it may read, as `trust` allows; beside the plan a
/// rendered script was made from when it says so (`BATON_PLAN_DIR`: the script runs a copy of
/// the plan in its output directory).
pub fn plan_files(path: &Path, trust: Trust) -> PlanFiles {
    match std::env::var_os("BATON_PLAN_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => PlanFiles::in_dir(Path::new(&dir), trust),
        None => PlanFiles::beside(path, trust),
    }
}
