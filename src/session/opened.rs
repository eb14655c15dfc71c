//! A plan opened once: its text (carried into the run's directory and scripts), the checked
//! plan with its warnings, its jobs and identity, and the trust it was opened with.

use std::path::{Path, PathBuf};

use crate::expand::{Job, expand, plan_identity};
use crate::plan::{LoadError, Loaded, PlanFiles, Report, Trust};
use crate::site::Layers;

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
    /// The layered plan holds program-running keys its site file vouched for
    /// ([`crate::site::Layered::vouched`]).
    pub vouched: bool,
    /// The site file laid over it, for the results.
    pub site: Option<crate::site::SiteRef>,
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
    open_with(path, trust, &Layers::default())
}

/// [`open`] with a site file and `--set`s laid over the plan (`crate::site::load_layered`):
/// what every command that checks, expands, renders or runs a plan opens it with.
pub fn open_with(path: &Path, trust: Trust, layers: &Layers) -> Result<OpenedPlan, OpenError> {
    let layered = crate::site::load_layered(path, trust, layers).map_err(|e| match e {
        LoadError::Invalid(report) => OpenError::Invalid(report),
        e => OpenError::Unreadable(e),
    })?;
    Ok(opened(path, trust, layered))
}

/// Checks plan `bytes` (named `name` in diagnostics) as the plan at `path`, with `layers` laid
/// over it: an acceptance phase's plan, built from its file or written inline, is opened here.
pub fn open_bytes(
    path: &Path,
    name: &str,
    bytes: &[u8],
    trust: Trust,
    layers: &Layers,
) -> Result<OpenedPlan, OpenError> {
    // The checks refuse anything but UTF-8 and say where.
    let text = std::str::from_utf8(bytes).map_err(|_| {
        OpenError::Invalid(
            crate::plan::parse_bytes_with(name, bytes, trust)
                .err()
                .unwrap_or_else(|| Report::new(name, "")),
        )
    })?;
    let layered =
        crate::site::parse_layered(name, text, trust, layers).map_err(OpenError::Invalid)?;
    Ok(opened(path, trust, layered))
}

fn opened(path: &Path, trust: Trust, layered: crate::site::Layered) -> OpenedPlan {
    let jobs = expand(&layered.loaded.plan).jobs;
    let identity = plan_identity(&layered.loaded.plan, &jobs);
    OpenedPlan {
        path: path.to_path_buf(),
        text: layered.text,
        loaded: layered.loaded,
        jobs,
        identity,
        trust,
        vouched: layered.vouched,
        site: layered.site,
    }
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
