use std::path::{Path, PathBuf};

use baton::exit::Exit;
use baton::grade::{Baseline, Grade, GradeInput, grade};
use baton::report::{Exporter, JunitExporter, ReportInput, TextExporter, write_file, write_report};
use baton::results::Results;

use super::{CheckFormat, load_plan};

/// Loads the plan, the results and the baseline and grades them; `Err(exit)` after printing why
/// when an input is unusable.
fn graded(
    plan_path: &Path,
    results: &[PathBuf],
    baseline: Option<&Path>,
    color: bool,
) -> Result<Grade, Exit> {
    let loaded = load_plan(plan_path, color, CheckFormat::Human).ok_or(Exit::Invalid)?;
    let files: Vec<(String, Results)> = results
        .iter()
        .map(|p| {
            baton::results::read(p)
                .map(|r| (p.display().to_string(), r))
                .map_err(|e| {
                    eprintln!("error: {e}");
                    Exit::Invalid
                })
        })
        .collect::<Result<_, _>>()?;
    let base = match baseline {
        Some(p) => match baton::results::read(p) {
            Ok(r) => Baseline::Loaded {
                name: p.display().to_string(),
                results: Box::new(r),
            },
            Err(e) => {
                eprintln!("error: --baseline: {e}");
                return Err(Exit::Invalid);
            }
        },
        None => match &loaded.plan.baseline {
            None => Baseline::None,
            Some(rel) => {
                // A plan names its baseline relative to itself, so the pair moves together in git.
                let p = plan_path.parent().unwrap_or(Path::new("")).join(rel);
                let name = p.display().to_string();
                match baton::results::read(&p) {
                    Ok(r) => Baseline::Loaded {
                        name,
                        results: Box::new(r),
                    },
                    Err(e) => Baseline::Unreadable {
                        name,
                        why: e.to_string(),
                    },
                }
            }
        },
    };
    let plan_file = plan_path.display().to_string();
    Ok(grade(&GradeInput {
        plan: &loaded.plan,
        plan_file: Some(&plan_file),
        results: &files,
        baseline: &base,
    }))
}

pub fn run(
    plan: &Path,
    results: &[PathBuf],
    baseline: Option<&Path>,
    junit: Option<&Path>,
    report: Option<&Path>,
    color: bool,
) -> anyhow::Result<Exit> {
    let g = match graded(plan, results, baseline, color) {
        Ok(g) => g,
        Err(exit) => return Ok(exit),
    };
    let input = ReportInput { grade: &g };
    baton::stdout::print(&String::from_utf8_lossy(&TextExporter.export(&input)?))?;
    if let Some(path) = junit {
        write_file(path, &JunitExporter.export(&input)?)?;
        baton::stdout::print(&format!("junit: {}\n", path.display()))?;
    }
    if let Some(dir) = report {
        write_report(dir, &input)?;
        baton::stdout::print(&format!("report: {}\n", dir.join("report.html").display()))?;
    }
    Ok(g.exit())
}

pub fn report(
    plan: &Path,
    results: &[PathBuf],
    baseline: Option<&Path>,
    out: &Path,
    color: bool,
) -> anyhow::Result<Exit> {
    let g = match graded(plan, results, baseline, color) {
        Ok(g) => g,
        Err(exit) => return Ok(exit),
    };
    for p in write_report(out, &ReportInput { grade: &g })? {
        baton::stdout::print(&format!("{}\n", p.display()))?;
    }
    Ok(Exit::Ok)
}
