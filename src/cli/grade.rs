use std::path::{Path, PathBuf};

use baton::exit::Exit;
use baton::grade::Grade;
use baton::plan::{Plan, Trust};
use baton::results::Results;
use baton::session::{self, Against, Grading};

use super::{CheckFormat, load_plan};

/// Every results file named by its path; `Err(Exit::Invalid)` after printing why one is unusable.
pub(super) fn read_results(paths: &[PathBuf]) -> Result<Vec<(String, Results)>, Exit> {
    let read = session::read_results(paths).map_err(|e| {
        eprintln!("error: {}", baton::stdout::visible(&e.to_string()));
        if e.looks_like_a_log {
            let path = e.path.display().to_string();
            let shown = baton::stdout::visible(&path);
            eprintln!(
                "hint: {shown} looks like an nccl-tests log; turn it into results first: baton ingest {shown} -o results.json"
            );
        }
        Exit::Invalid
    });
    let (files, notes) = read?;
    for n in &notes {
        super::ui::say(&format!("baton: {n}"));
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
            } => eprintln!(
                "baton: folded {} into {} ({jobs} job(s))",
                journal.display(),
                results.display()
            ),
            session::Folded::Left { results, why } => eprintln!(
                "baton: {} left as it is: {}",
                results.display(),
                baton::stdout::visible(&why)
            ),
        }
    }
}

/// Loads the plan, the results and the baseline and grades them; `Err(exit)` after printing why
/// when an input is unusable.
fn graded(
    plan_path: &Path,
    results: &[PathBuf],
    against: Against<'_>,
    trust: Trust,
    color: bool,
) -> Result<Grade, Exit> {
    // Grading runs nothing from the plan: a plan CI would refuse to run still grades.
    let loaded =
        load_plan(plan_path, color, CheckFormat::Human, Trust::Trusted).ok_or(Exit::Invalid)?;
    let files = read_results(results)?;
    let grading = grading(&loaded.plan, plan_path, trust, against)?;
    let named: Vec<(String, &Results)> = files.iter().map(|(n, r)| (n.clone(), r)).collect();
    let mut g = grading.grade(&named, None);
    // Results that do not record the plan's commit (ingested logs, older files): the plan as
    // it is now is the best the report can name.
    if g.run.git.is_none() {
        g.run.git = baton::plan::revision::git_revision(plan_path);
    }
    Ok(g)
}

/// The one grading path of `plan` against what `against` names; `Err` after printing why the
/// named baseline is unusable (invalid input).
pub fn grading<'p>(
    plan: &'p Plan,
    plan_path: &Path,
    trust: Trust,
    against: Against<'_>,
) -> Result<Grading<'p>, Exit> {
    Grading::new(plan, plan_path, trust, against).map_err(|e| {
        eprintln!("error: {}", baton::stdout::visible(&e.to_string()));
        Exit::Invalid
    })
}

/// Prints the verdicts and writes JUnit and the report where asked: what `grade` and the end of
/// `run` share.
pub fn emit(
    g: &Grade,
    junit: Option<&Path>,
    report: Option<&Path>,
    text_on_stderr: bool,
) -> anyhow::Result<()> {
    let text = session::verdict_text(g)?;
    if text_on_stderr {
        eprint!("{}", baton::stdout::visible(&text));
    } else {
        baton::stdout::print(&text)?;
    }
    let say = |line: String| -> std::io::Result<()> {
        if text_on_stderr {
            eprintln!("{}", baton::stdout::visible(&line));
            Ok(())
        } else {
            baton::stdout::print(&format!("{line}\n"))
        }
    };
    if let Some(path) = junit {
        session::write_junit(g, path)?;
        say(format!("junit: {}", path.display()))?;
    }
    if let Some(dir) = report {
        session::write_report(g, dir)?;
        say(format!("report: {}", dir.join("report.html").display()))?;
    }
    Ok(())
}

/// Where `grade` writes besides stdout: `--junit`, `--report`.
#[derive(Clone, Copy, Default)]
pub struct Outputs<'a> {
    pub junit: Option<&'a Path>,
    pub report: Option<&'a Path>,
}

pub fn run(
    plan: &Path,
    results: &[PathBuf],
    against: Against<'_>,
    outputs: Outputs<'_>,
    format: super::GradeFormat,
    trust: Trust,
    color: bool,
) -> anyhow::Result<Exit> {
    let Outputs { junit, report } = outputs;
    let baseline = against.baseline;
    let outputs = junit.map(Path::to_path_buf).into_iter().chain(
        report
            .into_iter()
            .flat_map(|d| [d.join("report.html"), d.join("report.md")]),
    );
    if let Some(exit) = outputs_clear(outputs, plan, results, baseline) {
        return Ok(exit);
    }
    let g = match graded(plan, results, against, trust, color) {
        Ok(g) => g,
        Err(exit) => {
            if let Some(path) = junit {
                let why = session::unusable_input(plan, results, baseline);
                let inputs: Vec<&Path> = results.iter().map(PathBuf::as_path).collect();
                super::failed_early::write_junit(path, plan, &inputs, "grade", &why);
            }
            return Ok(exit);
        }
    };
    let json = format == super::GradeFormat::Json;
    emit(&g, junit, report, json)?;
    if json {
        baton::stdout::print(&session::verdict_json(&g)?)?;
    }
    Ok(g.exit())
}

/// `Some(Exit::Invalid)` after saying why when an output would replace one of the inputs.
fn outputs_clear(
    outputs: impl IntoIterator<Item = PathBuf>,
    plan: &Path,
    results: &[PathBuf],
    baseline: Option<&Path>,
) -> Option<Exit> {
    let refused = session::outputs_clear(outputs, plan, results, baseline).err()?;
    eprintln!("error: {refused}");
    Some(Exit::Invalid)
}

pub fn report(
    plan: &Path,
    results: &[PathBuf],
    baseline: Option<&Path>,
    history: Option<&Path>,
    out: &Path,
    trust: Trust,
    color: bool,
) -> anyhow::Result<Exit> {
    let outputs = [out.join("report.html"), out.join("report.md")];
    if let Some(exit) = outputs_clear(outputs, plan, results, baseline) {
        return Ok(exit);
    }
    let against = Against { baseline, history };
    let g = match graded(plan, results, against, trust, color) {
        Ok(g) => g,
        Err(exit) => return Ok(exit),
    };
    for p in session::write_report(&g, out)? {
        baton::stdout::print(&format!("{}\n", p.display()))?;
    }
    Ok(Exit::Ok)
}
