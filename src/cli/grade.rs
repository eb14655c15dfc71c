use std::path::{Path, PathBuf};

use baton::exit::Exit;
use baton::grade::Grade;
use baton::plan::{Plan, Trust};
use baton::results::Results;
use baton::session::{self, Against, Grading};
use baton::stdout::visible;

use super::args::{GradeArgs, ReportArgs};
use super::error::CliError;
use super::ui::{self, DiagFormat, Verdict};
use super::{GradeFormat, Outcome, load_plan};

/// `baton grade`.
pub fn grade(args: GradeArgs, trust: Trust) -> Outcome {
    let GradeArgs {
        plan,
        results,
        baseline,
        history,
        junit,
        csv,
        report,
        none_ran: _,
        fold_journals: fold,
        format,
        fleet,
    } = args;
    if fold {
        fold_journals(&results);
    }
    let against = Against {
        baseline: baseline.as_deref(),
        history: history.as_deref(),
    };
    let outputs = Outputs {
        junit: junit.as_deref(),
        csv: csv.as_deref(),
        report: report.as_deref(),
        fleet: Some(&fleet),
    };
    run(&plan, &results, against, outputs, format, trust)
}

/// Every results file named by its path; `Err` saying why one is unusable.
pub(super) fn read_results(paths: &[PathBuf]) -> Result<Vec<(String, Results)>, CliError> {
    let (files, notes) = session::read_results(paths).map_err(|e| {
        let mut said = format!("error: {}", visible(&e.to_string()));
        if e.looks_like_a_log {
            let path = e.path.display().to_string();
            let shown = visible(&path);
            said.push_str(&format!(
                "\nhint: {shown} looks like an nccl-tests log; turn it into results first: baton ingest {shown} -o results.json"
            ));
        }
        CliError::Invalid(said)
    })?;
    for n in &notes {
        ui::say(&format!("baton: {n}"));
    }
    Ok(files)
}

/// `grade --fold-journals` (`baton::session::fold_journals`), saying what became of each.
pub fn fold_journals(results: &[PathBuf]) {
    for f in session::fold_journals(results) {
        match f {
            session::Folded::Into {
                journal,
                results,
                jobs,
            } => ui::say(&format!(
                "baton: folded {} into {} ({jobs} job(s))",
                journal.display(),
                results.display()
            )),
            session::Folded::Left { results, why } => ui::say(&format!(
                "baton: {} left as it is: {why}",
                results.display()
            )),
        }
    }
}

/// Loads the plan, the results and the baseline and grades them; `Err` saying why an input is
/// unusable.
fn graded(
    plan_path: &Path,
    results: &[PathBuf],
    against: Against<'_>,
    trust: Trust,
) -> Result<(Grade, Vec<Results>), CliError> {
    // Grading runs nothing from the plan: a plan CI would refuse to run still grades.
    let loaded = load_plan(plan_path, DiagFormat::Human, Trust::Trusted)?;
    let files = read_results(results)?;
    let grading = grading(&loaded.plan, plan_path, trust, against)?;
    let named: Vec<(String, &Results)> = files.iter().map(|(n, r)| (n.clone(), r)).collect();
    let mut g = grading.grade(&named, None);
    // Results that do not record the plan's commit (ingested logs, older files): the plan as
    // it is now is the best the report can name.
    if g.run.git.is_none() {
        g.run.git = baton::plan::revision::git_revision(plan_path);
    }
    Ok((g, files.into_iter().map(|(_, r)| r).collect()))
}

/// The one grading path of `plan` against what `against` names; `Err` when the named baseline
/// is unusable (invalid input).
pub fn grading<'p>(
    plan: &'p Plan,
    plan_path: &Path,
    trust: Trust,
    against: Against<'_>,
) -> Result<Grading<'p>, CliError> {
    Grading::new(plan, plan_path, trust, against)
        .map_err(|e| CliError::invalid(visible(&e.to_string())))
}

/// Shows the verdicts and writes JUnit and the report where asked: what `grade` and the end of
/// `run` share.
pub fn emit(
    g: &Grade,
    junit: Option<&Path>,
    report: Option<&Path>,
    verdict: Verdict,
) -> Result<(), CliError> {
    verdict.text(&session::verdict_text(g)?)?;
    if let Some(path) = junit {
        session::write_junit(g, path)?;
        verdict.line(&format!("junit: {}", path.display()))?;
    }
    if let Some(dir) = report {
        session::write_report(g, dir)?;
        verdict.line(&format!("report: {}", dir.join("report.html").display()))?;
    }
    Ok(())
}

/// Where `grade` writes besides stdout: `--junit`, `--report`, `--metrics`, `--notify`.
#[derive(Clone, Copy, Default)]
pub struct Outputs<'a> {
    pub junit: Option<&'a Path>,
    pub csv: Option<&'a Path>,
    pub report: Option<&'a Path>,
    pub fleet: Option<&'a super::fleet::FleetArgs>,
}

pub fn run(
    plan: &Path,
    results: &[PathBuf],
    against: Against<'_>,
    outputs: Outputs<'_>,
    format: GradeFormat,
    trust: Trust,
) -> Outcome {
    let Outputs {
        junit,
        csv,
        report,
        fleet,
    } = outputs;
    let baseline = against.baseline;
    if let Some(m) = fleet.and_then(|f| f.metrics.as_deref()) {
        // A directory named by a link would be written through it.
        baton::output::refuse_symlink(m).map_err(CliError::invalid)?;
    }
    let metrics = fleet.and_then(|f| f.metrics.as_deref()).map(|m| {
        // A directory's file is named after the plan: judged before any work, like the others.
        let name = baton::session::open(plan, Trust::Trusted)
            .map(|o| o.loaded.plan.name)
            .unwrap_or_default();
        baton::metrics::file_for(m, &name)
    });
    let mut written: Vec<(&str, PathBuf)> = Vec::new();
    written.extend(junit.map(|j| ("--junit", j.to_path_buf())));
    written.extend(csv.map(|c| ("--csv", c.to_path_buf())));
    if let Some(d) = report {
        written.push(("--report", d.join("report.html")));
        written.push(("--report", d.join("report.md")));
    }
    written.extend(metrics.map(|m| ("--metrics", m)));
    let flagged: Vec<(&str, &Path)> = written.iter().map(|(f, p)| (*f, p.as_path())).collect();
    baton::output::refuse_twice(&flagged).map_err(CliError::invalid)?;
    outputs_clear(written.into_iter().map(|(_, p)| p), plan, results, baseline)?;
    let (g, files) = graded(plan, results, against, trust).map_err(|e| match junit {
        Some(path) => {
            let why = session::unusable_input(plan, results, baseline);
            let inputs: Vec<&Path> = results.iter().map(PathBuf::as_path).collect();
            let said = super::failed_early::write_junit(path, plan, &inputs, "grade", &why);
            e.noted(said)
        }
        None => e,
    })?;
    let json = format == GradeFormat::Json;
    emit(&g, junit, report, Verdict { on_stderr: json })?;
    if let Some(path) = csv {
        session::write_csv(&g, path)?;
        Verdict { on_stderr: json }.line(&format!("csv: {}", path.display()))?;
    }
    if let Some(f) = fleet {
        let files: Vec<&Results> = files.iter().collect();
        super::fleet::publish(f, &g, &files, g.exit(), Verdict { on_stderr: json })?;
    }
    if json {
        ui::out(&session::verdict_json(&g)?)?;
    }
    Ok(g.exit())
}

/// `Err` when an output would replace one of the inputs.
fn outputs_clear(
    outputs: impl IntoIterator<Item = PathBuf>,
    plan: &Path,
    results: &[PathBuf],
    baseline: Option<&Path>,
) -> Result<(), CliError> {
    session::outputs_clear(outputs, plan, results, baseline).map_err(CliError::invalid)
}

/// `baton report`: the report only, exit 0 once written.
pub fn report(args: ReportArgs, trust: Trust) -> Outcome {
    let ReportArgs {
        plan,
        results,
        baseline,
        history,
        output,
    } = args;
    let against = Against {
        baseline: baseline.as_deref(),
        history: history.as_deref(),
    };
    let outputs = [output.join("report.html"), output.join("report.md")];
    outputs_clear(outputs, &plan, &results, against.baseline)?;
    let (g, _) = graded(&plan, &results, against, trust)?;
    for p in session::write_report(&g, &output)? {
        ui::out(&format!("{}\n", p.display()))?;
    }
    Ok(Exit::Ok)
}
