//! `junit.xml` for a `run` or `grade` that stopped before it measured or graded anything. CI
//! reads junit.xml to colour a pipeline: a run that never started (an invalid plan, no GPU, no
//! launcher) must show a red test with the reason, not "no tests found" next to a green step.

use std::path::Path;

use baton::exit::Exit;

/// Why `plan` (as `run` and `grade` load it) is unusable, as one line per diagnostic; `None` when
/// it loads.
pub fn plan_problems(plan: &Path, trust: baton::plan::Trust) -> Option<String> {
    match baton::plan::load_file_with(plan, trust) {
        Ok(_) => None,
        Err(baton::plan::LoadError::Invalid(report)) => Some(report.short()),
        Err(e) => Some(e.to_string()),
    }
}

/// What JUnit names the suite: the plan's name when it loads, else its file name.
fn suite_name(plan: &Path) -> String {
    match baton::plan::load_file_with(plan, baton::plan::Trust::Trusted) {
        Ok(l) => l.plan.name,
        Err(_) => plan
            .file_name()
            .map_or_else(|| "plan".into(), |n| n.to_string_lossy().into_owned()),
    }
}

/// Writes `junit` with one error case `step` saying `message`. Never replaces an input, and a
/// failure to write is a warning: the command's own exit status already tells what went wrong.
pub fn write_junit(junit: &Path, plan: &Path, inputs: &[&Path], step: &str, message: &str) {
    let all = std::iter::once(plan).chain(inputs.iter().copied());
    let written = baton::output::refuse_inputs(junit, all)
        .map_err(|e| e.to_string())
        .and_then(|()| {
            baton::report::failed_before_measuring(&suite_name(plan), step, message)
                .map_err(|e| e.to_string())
        })
        .and_then(|xml| baton::report::write_file(junit, &xml).map_err(|e| e.to_string()));
    match written {
        Ok(()) => eprintln!("junit: {}", junit.display()),
        Err(e) => eprintln!(
            "warning: no junit.xml for the failed {step}: {}",
            baton::stdout::visible(&e)
        ),
    }
}

/// For `run -o OUT` that ended with `exit` before measuring: `OUT/junit.xml` saying why. Not for
/// one environment set of a rendered script (`--env-set`): the script grades every set into
/// the run's one junit.xml. Not into a directory another run holds: that run's files are its own.
/// A directory that does not exist yet gets the junit.xml and nothing else (no lock file).
/// Returns `exit`, so a call site reads `return Ok(run_junit(…))`.
pub fn run_junit(args: &super::run::Args, exit: Exit, step: &str, message: &str) -> Exit {
    if args.env_set.is_some() {
        return exit;
    }
    let claim = if args.out.exists() {
        match baton::runner::outdir::OutDir::claim(&args.out) {
            Ok(c) => Some(c),
            Err(_) => return exit,
        }
    } else {
        None
    };
    write_junit(&args.out.join("junit.xml"), &args.plan, &[], step, message);
    drop(claim);
    exit
}
