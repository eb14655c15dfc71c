//! The `junit.xml` of a `run` or `grade` that stopped before it measured or graded anything
//! (`baton::session::run_junit`, `write_failed_junit`), and the line that says so, kept with the
//! command's error so it is said after it.

use std::path::Path;

use baton::session::{self, EarlyJunit};

use super::error::CliError;

/// Why `plan` (as `run` and `grade` load it) is unusable, as one line per diagnostic; `None` when
/// it loads.
pub fn plan_problems(plan: &Path, trust: baton::plan::Trust) -> Option<String> {
    session::plan_problems(plan, trust)
}

/// Writes `junit` with one error case `step` saying `message`, and returns the line saying so.
/// Never replaces an input, and a failure to write is a warning: the command's own exit status
/// already tells what went wrong.
pub fn write_junit(
    junit: &Path,
    plan: &Path,
    inputs: &[&Path],
    step: &str,
    message: &str,
) -> String {
    match session::write_failed_junit(junit, plan, inputs, step, message) {
        Ok(()) => format!("junit: {}", junit.display()),
        Err(e) => warning(step, &e),
    }
}

fn warning(step: &str, e: &session::JunitError) -> String {
    format!("warning: no junit.xml for the failed {step}: {e}")
}

/// For `run -o OUT` that failed with `error` before measuring: `OUT/junit.xml` saying `message`,
/// the line about it noted on `error`. Not for one environment set of a rendered script
/// (`--env-set`): the script grades every set into the run's one junit.xml.
pub fn run_junit(args: &super::run::Args, error: CliError, step: &str, message: &str) -> CliError {
    if args.env_set.is_some() {
        return error;
    }
    match session::run_junit(&args.out, &args.plan, step, message) {
        EarlyJunit::Written(junit) => error.noted(format!("junit: {}", junit.display())),
        EarlyJunit::Failed(e) => error.noted(warning(step, &e)),
        EarlyJunit::NotOurs => error,
    }
}
