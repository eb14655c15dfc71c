use std::path::{Path, PathBuf};

use baton::exit::Exit;
use baton::grade::Grade;
use baton::plan::{Plan, Trust};
use baton::results::Results;
use baton::session::{self, Against, Grading};

use super::{CheckFormat, load_plan};

/// Every results file named by its path; `Err(Exit::Invalid)` after printing why one is unusable.
pub(super) fn read_results(paths: &[PathBuf]) -> Result<Vec<(String, Results)>, Exit> {
    paths
        .iter()
        .map(|p| {
            baton::results::read(p)
                .map(|r| (p.display().to_string(), r))
                .map_err(|e| {
                    eprintln!("error: {}", baton::stdout::visible(&e.to_string()));
                    if looks_like_a_log(p) {
                        eprintln!(
                            "hint: {} looks like an nccl-tests log; turn it into results first: baton ingest {} -o results.json",
                            baton::stdout::visible(&p.display().to_string()),
                            baton::stdout::visible(&p.display().to_string())
                        );
                    }
                    Exit::Invalid
                })
        })
        .collect()
}

/// `grade --fold-journals`: each `results.json` whose run left its journal beside it (the run
/// was killed before it could fold it) is rebuilt from the journal, under the directory's lock,
/// so the file holds every row for readers other than baton. The journal stays: it is what a
/// `--resume` continues. A directory still claimed by a run, or a journal that cannot be read,
/// is said and left as it is; grading reads the journal anyway.
pub fn fold_journals(results: &[PathBuf]) {
    use baton::runner::outdir::OutDir;
    for path in results {
        let Some(dir) = path.parent() else { continue };
        let journal = dir.join(baton::results::journal::FILE);
        if path.file_name().is_none_or(|f| f != "results.json") || !journal.is_file() {
            continue;
        }
        match OutDir::claim(dir).and_then(|o| o.fold()) {
            Ok(r) => eprintln!(
                "baton: folded {} into {} ({} job(s))",
                journal.display(),
                path.display(),
                r.jobs.len()
            ),
            Err(e) => eprintln!(
                "baton: {} left as it is: {}",
                path.display(),
                baton::stdout::visible(&e.to_string())
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
                let why = unusable_input(plan, results, baseline);
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

/// Which input stopped grading and why, for the junit.xml of a grade that could not start.
fn unusable_input(plan: &Path, results: &[PathBuf], baseline: Option<&Path>) -> String {
    if let Some(why) = session::plan_problems(plan, Trust::Trusted) {
        return why;
    }
    results
        .iter()
        .map(PathBuf::as_path)
        .chain(baseline)
        .find_map(|p| baton::results::read(p).err())
        .map_or_else(
            || "an input could not be read (see the command's stderr)".into(),
            |e| e.to_string(),
        )
}

/// `Some(Exit::Invalid)` after saying why when an output would replace one of the inputs.
fn outputs_clear(
    outputs: impl IntoIterator<Item = PathBuf>,
    plan: &Path,
    results: &[PathBuf],
    baseline: Option<&Path>,
) -> Option<Exit> {
    let inputs: Vec<&Path> = std::iter::once(plan)
        .chain(results.iter().map(PathBuf::as_path))
        .chain(baseline)
        .collect();
    for out in outputs {
        if let Err(e) = baton::output::refuse_inputs(&out, inputs.iter().copied()) {
            eprintln!("error: {e}");
            return Some(Exit::Invalid);
        }
    }
    None
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

/// Whether `p` starts like nccl-tests output (text or `-J` JSON) rather than a results file.
fn looks_like_a_log(p: &Path) -> bool {
    use std::io::Read;
    let mut bytes = Vec::new();
    let read = baton::input::open_regular(p, "log")
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
