//! The inputs of `grade` and `report` as a use case reads them: results files (or why one is
//! unusable, noticing an nccl-tests log given in place of results), journals a killed run left
//! unfolded, and outputs that would replace an input.

use std::path::{Path, PathBuf};

use crate::output::OutputError;
use crate::results::{Notice, Results, ResultsError};
use crate::runner::outdir::OutDir;

/// A results file that cannot be graded.
#[derive(Debug, thiserror::Error)]
#[error("{source}")]
pub struct UnusableResults {
    pub path: PathBuf,
    pub source: ResultsError,
    /// It starts like nccl-tests output: `baton ingest` turns it into results.
    pub looks_like_a_log: bool,
}

/// Every results file named by its path, with what reading them noticed (a journal folded in,
/// damaged lines skipped), or the first that cannot be read.
pub type ReadResults = (Vec<(String, Results)>, Vec<Notice>);

/// [`ReadResults`] of `paths`.
pub fn read_results(paths: &[PathBuf]) -> Result<ReadResults, UnusableResults> {
    let mut files = Vec::with_capacity(paths.len());
    let mut notes = Vec::new();
    for p in paths {
        let (r, n) = crate::results::read_noting(p).map_err(|source| UnusableResults {
            path: p.clone(),
            source,
            looks_like_a_log: looks_like_a_log(p),
        })?;
        files.push((p.display().to_string(), r));
        notes.extend(n);
    }
    Ok((files, notes))
}

/// Whether `p` starts like nccl-tests output (text or `-J` JSON) rather than a results file.
fn looks_like_a_log(p: &Path) -> bool {
    use std::io::Read;
    let mut bytes = Vec::new();
    let read = crate::input::open_regular(p, "log")
        .ok()
        .and_then(|f| f.take(4096).read_to_end(&mut bytes).ok());
    if read.is_none() {
        return false;
    }
    let head = String::from_utf8_lossy(&bytes);
    head.contains("# nThread")
        || head.contains("#  Rank")
        || head.contains("# Collective test starting")
        || head.contains("\"nccl_tests_version\"")
}

/// What became of one journal `fold_journals` found.
pub enum Folded {
    /// `journal` rebuilt into `results`, holding `jobs` jobs.
    Into {
        journal: PathBuf,
        results: PathBuf,
        jobs: usize,
    },
    /// Still claimed by a run, or unreadable: left as it is.
    Left { results: PathBuf, why: String },
}

/// `grade --fold-journals`: each `results.json` whose run left its journal beside it (the run
/// was killed before it could fold it) is rebuilt from the journal, under the directory's lock,
/// so the file holds every row for readers other than baton. The journal stays: it is what a
/// `--resume` continues. Grading reads the journal anyway.
pub fn fold_journals(results: &[PathBuf]) -> Vec<Folded> {
    let mut out = Vec::new();
    for path in results {
        let Some(dir) = path.parent() else { continue };
        let journal = dir.join(crate::results::journal::FILE);
        if path.file_name().is_none_or(|f| f != "results.json") || !journal.is_file() {
            continue;
        }
        out.push(match OutDir::claim(dir).and_then(|o| o.fold()) {
            Ok(r) => Folded::Into {
                journal,
                results: path.clone(),
                jobs: r.results.jobs.len(),
            },
            Err(e) => Folded::Left {
                results: path.clone(),
                why: e.to_string(),
            },
        });
    }
    out
}

/// Which input stopped grading and why, for the junit.xml of a grade that could not start.
pub fn unusable_input(plan: &Path, results: &[PathBuf], baseline: Option<&Path>) -> String {
    if let Some(why) = super::plan_problems(plan, crate::plan::Trust::Trusted) {
        return why;
    }
    results
        .iter()
        .map(PathBuf::as_path)
        .chain(baseline)
        .find_map(|p| crate::results::read(p).err())
        .map_or_else(
            || "an input could not be read (see the command's stderr)".into(),
            |e| e.to_string(),
        )
}

/// Refuses any of `outputs` that would replace the plan, a results file or the baseline.
pub fn outputs_clear(
    outputs: impl IntoIterator<Item = PathBuf>,
    plan: &Path,
    results: &[PathBuf],
    baseline: Option<&Path>,
) -> Result<(), OutputError> {
    let inputs: Vec<&Path> = std::iter::once(plan)
        .chain(results.iter().map(PathBuf::as_path))
        .chain(baseline)
        .collect();
    for out in outputs {
        crate::output::refuse_inputs(&out, inputs.iter().copied())?;
    }
    Ok(())
}
