//! What the CLI says of the `junit.xml` of a `run` or `grade` that stopped before it measured
//! or graded anything (`baton::session::run_junit`, `write_failed_junit`).

use std::path::Path;

use baton::exit::Exit;
use baton::session::{self, EarlyJunit};

/// Why `plan` (as `run` and `grade` load it) is unusable, as one line per diagnostic; `None` when
/// it loads.
pub fn plan_problems(plan: &Path, trust: baton::plan::Trust) -> Option<String> {
    session::plan_problems(plan, trust)
}

/// Writes `junit` with one error case `step` saying `message`. Never replaces an input, and a
/// failure to write is a warning: the command's own exit status already tells what went wrong.
pub fn write_junit(junit: &Path, plan: &Path, inputs: &[&Path], step: &str, message: &str) {
    match session::write_failed_junit(junit, plan, inputs, step, message) {
        Ok(()) => eprintln!("junit: {}", junit.display()),
        Err(e) => warn(step, &e),
    }
}

fn warn(step: &str, e: &session::JunitError) {
    eprintln!(
        "warning: no junit.xml for the failed {step}: {}",
        baton::stdout::visible(&e.to_string())
    );
}

/// For `run -o OUT` that ended with `exit` before measuring: `OUT/junit.xml` saying why. Not for
/// one environment set of a rendered script (`--env-set`): the script grades every set into
/// the run's one junit.xml. Returns `exit`, so a call site reads `return Ok(run_junit(…))`.
pub fn run_junit(args: &super::run::Args, exit: Exit, step: &str, message: &str) -> Exit {
    if args.env_set.is_some() {
        return exit;
    }
    match session::run_junit(&args.out, &args.plan, step, message) {
        EarlyJunit::Written(junit) => eprintln!("junit: {}", junit.display()),
        EarlyJunit::Failed(e) => warn(step, &e),
        EarlyJunit::NotOurs => {}
    }
    exit
}
