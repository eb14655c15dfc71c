//! What results are compared with besides the plan's limits: the baseline (`regression`) and
//! the history store (`trend`), each named on the command line or by the plan, relative to
//! the plan file so the pair moves together in git, and inside the plan's directory unless
//! the plan is trusted.

use std::path::{Path, PathBuf};

use crate::grade::{Baseline, History};
use crate::plan::{Check, Plan, Trust};

use super::plan_files;

/// `--baseline` and `--history`: what the user named in place of the plan's own.
#[derive(Debug, Clone, Copy, Default)]
pub struct Against<'a> {
    /// `--baseline` (else the plan's `baseline:`), for `regression`.
    pub baseline: Option<&'a Path>,
    /// `--history` (else the plan's `history:`), for `trend`.
    pub history: Option<&'a Path>,
}

/// Why what the user named cannot be compared with. (What the plan names and cannot be read
/// makes its criteria fail with why instead: the plan, not the command, is wrong.)
#[derive(Debug, thiserror::Error)]
pub enum AgainstError {
    #[error("--baseline: {0}")]
    Baseline(#[source] crate::results::ResultsError),
}

/// The baseline to grade against: `--baseline`, else the plan's `baseline:`.
pub fn baseline_for(
    plan_path: &Path,
    plan: &Plan,
    flag: Option<&Path>,
    trust: Trust,
) -> Result<Baseline, AgainstError> {
    if let Some(p) = flag {
        let r = crate::results::read(p).map_err(AgainstError::Baseline)?;
        return Ok(Baseline::Loaded {
            name: p.display().to_string(),
            results: Box::new(r),
        });
    }
    let Some(rel) = &plan.baseline else {
        return Ok(Baseline::None);
    };
    let name = beside(plan_path, rel);
    let read = plan_files(plan_path, trust)
        .resolve("baseline", rel)
        .map_err(|e| e.to_string())
        .and_then(|p| crate::results::read(&p).map_err(|e| e.to_string()));
    Ok(match read {
        Ok(r) => Baseline::Loaded {
            name,
            results: Box::new(r),
        },
        Err(why) => Baseline::Unreadable { name, why },
    })
}

/// `rel` as a reader finds it: beside the plan file.
fn beside(plan_path: &Path, rel: &str) -> String {
    plan_path
        .parent()
        .unwrap_or(Path::new(""))
        .join(rel)
        .display()
        .to_string()
}

/// The history store `trend` criteria read, opened (or why not).
pub enum OpenedHistory {
    None,
    /// Behind a lock: node-set runs judge sets from several threads, and an SQLite connection
    /// is used by one at a time.
    Store(std::sync::Mutex<crate::history::Store>),
    Unreadable {
        name: String,
        why: String,
    },
}

impl OpenedHistory {
    pub fn as_history(&self) -> History<'_> {
        match self {
            OpenedHistory::None => History::None,
            OpenedHistory::Store(s) => History::Store(s),
            OpenedHistory::Unreadable { name, why } => History::Unreadable {
                name: name.clone(),
                why: why.clone(),
            },
        }
    }
}

/// The history store: `--history`, else the plan's `history:`. Opened, read-only, only when a
/// `trend` criterion reads it; one that cannot be opened makes those criteria fail with why,
/// like an unreadable baseline.
pub fn history_for(
    plan_path: &Path,
    plan: &Plan,
    flag: Option<&Path>,
    trust: Trust,
) -> OpenedHistory {
    let wanted = plan
        .tests
        .iter()
        .any(|t| t.expect.iter().any(|c| matches!(c.check, Check::Trend(_))));
    if !wanted {
        return OpenedHistory::None;
    }
    let env = crate::history::from_env();
    let path: PathBuf = match (flag.or(env.as_deref()), &plan.history) {
        (Some(p), _) => p.to_path_buf(),
        (None, Some(rel)) => match plan_files(plan_path, trust).resolve("history", rel) {
            Ok(p) => p,
            Err(e) => {
                return OpenedHistory::Unreadable {
                    name: beside(plan_path, rel),
                    why: e.to_string(),
                };
            }
        },
        (None, None) => return OpenedHistory::None,
    };
    match crate::history::Store::open(&path) {
        Ok(s) => OpenedHistory::Store(std::sync::Mutex::new(s)),
        Err(e) => OpenedHistory::Unreadable {
            name: crate::history::shown(&path),
            why: e.to_string(),
        },
    }
}
