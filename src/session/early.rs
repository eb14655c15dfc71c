//! `junit.xml` for a `run` or `grade` that stopped before it measured or graded anything. CI
//! reads junit.xml to colour a pipeline: a run that never started (an invalid plan, no GPU, no
//! launcher) must show a red test with the reason, not "no tests found" next to a green step.

use std::path::Path;

use crate::output::OutputError;
use crate::plan::{LoadError, Trust, load_file_with};
use crate::report::ReportError;

/// Why an early-failure `junit.xml` was not written.
#[derive(Debug, thiserror::Error)]
pub enum JunitError {
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error(transparent)]
    Report(#[from] ReportError),
}

/// Why `plan` (as `run` and `grade` load it) is unusable, as one line per diagnostic; `None` when
/// it loads.
pub fn plan_problems(plan: &Path, trust: Trust) -> Option<String> {
    match load_file_with(plan, trust) {
        Ok(_) => None,
        Err(LoadError::Invalid(report)) => Some(report.short()),
        Err(e) => Some(e.to_string()),
    }
}

/// What JUnit names the suite: the plan's name when it loads, else its file name.
fn suite_name(plan: &Path) -> String {
    match load_file_with(plan, Trust::Trusted) {
        Ok(l) => l.plan.name,
        Err(_) => plan
            .file_name()
            .map_or_else(|| "plan".into(), |n| n.to_string_lossy().into_owned()),
    }
}

/// Writes `junit` with one error case `step` saying `message`; never replaces the plan or one
/// of `inputs`. The error is the caller's to say as a warning: the command's own exit status
/// already tells what went wrong.
pub fn write_failed_junit(
    junit: &Path,
    plan: &Path,
    inputs: &[&Path],
    step: &str,
    message: &str,
) -> Result<(), JunitError> {
    let all = std::iter::once(plan).chain(inputs.iter().copied());
    crate::output::refuse_inputs(junit, all)?;
    let xml = crate::report::failed_before_measuring(&suite_name(plan), step, message)?;
    Ok(crate::report::write_file(junit, &xml)?)
}

/// What became of the early-failure `junit.xml` of a run.
pub enum EarlyJunit {
    Written(std::path::PathBuf),
    Failed(JunitError),
    /// The output directory is another run's: its files are its own.
    NotOurs,
}

/// For `run -o OUT` that stopped before measuring: `OUT/junit.xml` saying why, unless another
/// run holds `out`. A directory that does not exist yet gets the junit.xml and nothing else
/// (no lock file).
pub fn run_junit(out: &Path, plan: &Path, step: &str, message: &str) -> EarlyJunit {
    let claim = if out.exists() {
        match crate::runner::outdir::OutDir::claim(out) {
            Ok(c) => Some(c),
            Err(_) => return EarlyJunit::NotOurs,
        }
    } else {
        None
    };
    let junit = out.join("junit.xml");
    let written = write_failed_junit(&junit, plan, &[], step, message);
    drop(claim);
    match written {
        Ok(()) => EarlyJunit::Written(junit),
        Err(e) => EarlyJunit::Failed(e),
    }
}
