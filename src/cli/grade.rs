use std::path::{Path, PathBuf};

use baton::exit::Exit;
use baton::grade::{Baseline, Grade, GradeInput, History, grade};
use baton::plan::Plan;
use baton::report::{
    Exporter, JsonExporter, JunitExporter, ReportInput, TextExporter, write_file, write_report,
};
use baton::results::Results;

use super::{CheckFormat, load_plan, plan_files};

/// The baseline to grade against: `--baseline`, else the plan's `baseline:` (relative to the
/// plan file, so the pair moves together in git, and inside the plan's directory unless the plan
/// is trusted). `Err` after printing why when `--baseline` is unusable (invalid input).
pub fn baseline_for(
    plan_path: &Path,
    plan: &Plan,
    baseline: Option<&Path>,
) -> Result<Baseline, Exit> {
    Ok(match baseline {
        Some(p) => match baton::results::read(p) {
            Ok(r) => Baseline::Loaded {
                name: p.display().to_string(),
                results: Box::new(r),
            },
            Err(e) => {
                eprintln!(
                    "error: --baseline: {}",
                    baton::stdout::visible(&e.to_string())
                );
                return Err(Exit::Invalid);
            }
        },
        None => match &plan.baseline {
            None => Baseline::None,
            Some(rel) => {
                let name = plan_path
                    .parent()
                    .unwrap_or(Path::new(""))
                    .join(rel)
                    .display()
                    .to_string();
                let read = plan_files(plan_path)
                    .resolve("baseline", rel)
                    .map_err(|e| e.to_string())
                    .and_then(|p| baton::results::read(&p).map_err(|e| e.to_string()));
                match read {
                    Ok(r) => Baseline::Loaded {
                        name,
                        results: Box::new(r),
                    },
                    Err(why) => Baseline::Unreadable { name, why },
                }
            }
        },
    })
}

/// The history store `trend` criteria read, opened (or why not).
pub enum OpenedHistory {
    None,
    /// Behind a lock: node-set runs judge sets from several threads, and an SQLite connection
    /// is used by one at a time.
    Store(std::sync::Mutex<baton::history::Store>),
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

/// The history store: `--history`, else the plan's `history:` (relative to the plan file, and
/// inside its directory, like `baseline:`). Opened, read-only, only when a `trend` criterion
/// reads it; one that cannot be opened makes those criteria fail with why, like an unreadable
/// baseline.
pub fn history_for(plan_path: &Path, plan: &Plan, flag: Option<&Path>) -> OpenedHistory {
    let wanted = plan.tests.iter().any(|t| {
        t.expect
            .iter()
            .any(|c| matches!(c.check, baton::plan::Check::Trend(_)))
    });
    if !wanted {
        return OpenedHistory::None;
    }
    let path = match (flag, &plan.history) {
        (Some(p), _) => p.to_path_buf(),
        (None, Some(rel)) => match plan_files(plan_path).resolve("history", rel) {
            Ok(p) => p,
            Err(e) => {
                return OpenedHistory::Unreadable {
                    name: plan_path
                        .parent()
                        .unwrap_or(Path::new(""))
                        .join(rel)
                        .display()
                        .to_string(),
                    why: e.to_string(),
                };
            }
        },
        (None, None) => return OpenedHistory::None,
    };
    match baton::history::Store::open(&path) {
        Ok(s) => OpenedHistory::Store(std::sync::Mutex::new(s)),
        Err(e) => OpenedHistory::Unreadable {
            name: path.display().to_string(),
            why: e.to_string(),
        },
    }
}

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
    baseline: Option<&Path>,
    history: Option<&Path>,
    color: bool,
) -> Result<Grade, Exit> {
    // Grading runs nothing from the plan: a plan CI would refuse to run still grades.
    let loaded = load_plan(
        plan_path,
        color,
        CheckFormat::Human,
        baton::plan::Trust::Trusted,
    )
    .ok_or(Exit::Invalid)?;
    let files = read_results(results)?;
    let base = baseline_for(plan_path, &loaded.plan, baseline)?;
    let plan_file = plan_path.display().to_string();
    let history = history_for(plan_path, &loaded.plan, history);
    let mut g = grade_keyed(
        &loaded.plan,
        &plan_file,
        &files,
        base,
        None,
        &history.as_history(),
    );
    // Results that do not record the plan's commit (ingested logs, older files): the plan as
    // it is now is the best the report can name.
    if g.run.git.is_none() {
        g.run.git = baton::plan::revision::git_revision(plan_path);
    }
    Ok(g)
}

/// Grades with the baseline keyed to the hosts the results measured (`baton::baseline`): a job
/// the baseline holds only from other hosts fails its `regression` saying so, instead of being
/// compared with another machine's numbers.
pub fn grade_keyed(
    plan: &Plan,
    plan_file: &str,
    files: &[(String, Results)],
    base: Baseline,
    only: Option<&[String]>,
    history: &History<'_>,
) -> Grade {
    let runs: Vec<&Results> = files.iter().map(|(_, r)| r).collect();
    let (base, mismatches) = match base {
        Baseline::Loaded { name, results } => {
            let (kept, mismatches) = baton::baseline::select(&results, &runs);
            let base = Baseline::Loaded {
                name: name.clone(),
                results: Box::new(kept),
            };
            (base, Some((name, mismatches)))
        }
        other => (other, None),
    };
    let plan_files = plan_files(Path::new(plan_file));
    let mut g = grade(&GradeInput {
        plan,
        plan_file: Some(plan_file),
        results: files,
        baseline: &base,
        only,
        history,
        files: Some(&plan_files),
    });
    if let Some((name, mismatches)) = mismatches {
        baton::grade::explain_host_mismatches(&mut g, &mismatches, &name);
    }
    g
}

/// Prints the verdicts and writes JUnit and the report where asked: what `grade` and the end of
/// `run` share.
pub fn emit(
    g: &Grade,
    junit: Option<&Path>,
    report: Option<&Path>,
    text_on_stderr: bool,
) -> anyhow::Result<()> {
    let input = ReportInput { grade: g };
    let text = String::from_utf8_lossy(&TextExporter.export(&input)?).into_owned();
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
        write_file(path, &JunitExporter.export(&input)?)?;
        say(format!("junit: {}", path.display()))?;
    }
    if let Some(dir) = report {
        write_report(dir, &input)?;
        say(format!("report: {}", dir.join("report.html").display()))?;
    }
    Ok(())
}

/// What results are compared against besides the plan's limits.
#[derive(Clone, Copy)]
pub struct Against<'a> {
    /// `--baseline` (else the plan's `baseline:`), for `regression`.
    pub baseline: Option<&'a Path>,
    /// `--history` (else the plan's `history:`), for `trend`.
    pub history: Option<&'a Path>,
}

pub fn run(
    plan: &Path,
    results: &[PathBuf],
    against: Against<'_>,
    junit: Option<&Path>,
    report: Option<&Path>,
    format: super::GradeFormat,
    color: bool,
) -> anyhow::Result<Exit> {
    let Against { baseline, history } = against;
    let outputs = junit.map(Path::to_path_buf).into_iter().chain(
        report
            .into_iter()
            .flat_map(|d| [d.join("report.html"), d.join("report.md")]),
    );
    if let Some(exit) = outputs_clear(outputs, plan, results, baseline) {
        return Ok(exit);
    }
    let g = match graded(plan, results, baseline, history, color) {
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
        let doc = JsonExporter.export(&ReportInput { grade: &g })?;
        baton::stdout::print(&String::from_utf8_lossy(&doc))?;
    }
    Ok(g.exit())
}

/// Which input stopped grading and why, for the junit.xml of a grade that could not start.
fn unusable_input(plan: &Path, results: &[PathBuf], baseline: Option<&Path>) -> String {
    if let Some(why) = super::failed_early::plan_problems(plan, baton::plan::Trust::Trusted) {
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
    color: bool,
) -> anyhow::Result<Exit> {
    let outputs = [out.join("report.html"), out.join("report.md")];
    if let Some(exit) = outputs_clear(outputs, plan, results, baseline) {
        return Ok(exit);
    }
    let g = match graded(plan, results, baseline, history, color) {
        Ok(g) => g,
        Err(exit) => return Ok(exit),
    };
    for p in write_report(out, &ReportInput { grade: &g })? {
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
