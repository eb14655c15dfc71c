use std::path::{Path, PathBuf};

use baton::exit::Exit;
use baton::stdout::visible;

use super::error::CliError;
use super::ui::{self, DiagFormat};
use super::{BaselineAction, Outcome};

/// `baton baseline save|compare`.
pub fn dispatch(action: BaselineAction, trust: baton::plan::Trust) -> Outcome {
    match action {
        BaselineAction::Save {
            results,
            output,
            force,
            plan,
        } => save(&results, &output, force, plan.as_deref(), trust),
        BaselineAction::Compare {
            old,
            new,
            markdown,
            report_only,
            any_hosts,
        } => compare(&old, &new, markdown, report_only, any_hosts),
    }
}

/// Saves one or more results files as one baseline (any results file already is one). A
/// baseline is what later runs are judged against: a bad run saved as one makes regressions
/// pass (zero times) or fail (a broken job), so bad runs — including runs whose criteria failed
/// — need `--force`.
fn save(
    results: &[PathBuf],
    out: &Path,
    force: bool,
    plan: Option<&Path>,
    trust: baton::plan::Trust,
) -> Outcome {
    baton::output::refuse_inputs(out, results.iter().map(PathBuf::as_path))
        .map_err(|e| CliError::invalid(format!("-o {e}")))?;
    let files = super::grade::read_results(results)?;
    let mut bad: Vec<String> = files
        .iter()
        .flat_map(|(name, r)| {
            baton::results::unfit_for_baseline(r)
                .into_iter()
                .map(move |p| format!("{name}: {p}"))
        })
        .collect();
    for (path, (name, r)) in results.iter().zip(&files) {
        let failed = failed_criteria(path, r, plan, trust)?;
        bad.extend(failed.into_iter().map(|p| format!("{name}: {p}")));
    }
    unfit(&bad, force)?;
    let merged = merged(files)?;
    baton::results::write_atomic(out, &merged)
        .map_err(|e| CliError::runtime(visible(&e.to_string())))?;
    ui::out(&format!(
        "{}: baseline of {} job(s)\n",
        out.display(),
        merged.jobs.len()
    ))?;
    Ok(Exit::Ok)
}

/// What makes the run unfit for a baseline, said as warnings with `--force`; `Err` without it.
fn unfit(bad: &[String], force: bool) -> Result<(), CliError> {
    if bad.is_empty() {
        return Ok(());
    }
    let mut lines: Vec<String> = bad
        .iter()
        .take(20)
        .map(|b| format!("{} {b}", if force { "warning:" } else { "error:" }))
        .collect();
    if bad.len() > 20 {
        lines.push(format!("… and {} more", bad.len() - 20));
    }
    if force {
        lines.iter().for_each(|l| ui::say(l));
        return Ok(());
    }
    lines.push(
        "error: not saved: a baseline must be a good run; fix or rerun it, or pass --force to save it anyway".into(),
    );
    Err(CliError::Invalid(lines.join("\n")))
}

/// The results files as one baseline; `Err` when two hold a job measured on the same hosts.
fn merged(
    files: Vec<(String, baton::results::Results)>,
) -> Result<baton::results::Results, CliError> {
    let mut iter = files.into_iter();
    let Some((first_name, mut merged)) = iter.next() else {
        return Err(CliError::Told(Exit::Invalid));
    };
    // A job may be kept once per host set: grading picks the entry of the run's own hosts.
    let mut owner: Vec<(String, Vec<String>, String)> = merged
        .jobs
        .iter()
        .map(|j| {
            (
                j.id.clone(),
                baton::baseline::hosts_of(j),
                first_name.clone(),
            )
        })
        .collect();
    for (name, r) in iter {
        for j in r.jobs {
            let hosts = baton::baseline::hosts_of(&j);
            let clash = |(id, h, _): &&(String, Vec<String>, String)| {
                *id == j.id && (*h == hosts || h.is_empty() || hosts.is_empty())
            };
            if let Some((_, _, other)) = owner.iter().find(clash) {
                return Err(CliError::invalid(format!(
                    "job `{}` is in both {other} and {name}, measured on the same hosts ({}); save them as separate baselines",
                    j.id,
                    if hosts.is_empty() {
                        "not recorded".to_string()
                    } else {
                        hosts.join(",")
                    }
                )));
            }
            owner.push((j.id.clone(), hosts, name.clone()));
            merged.jobs.push(j);
        }
        merged.producer.sources.extend(r.producer.sources);
        for h in r.environment.hosts {
            if !merged
                .environment
                .hosts
                .iter()
                .any(|x| x.hostname == h.hostname)
            {
                merged.environment.hosts.push(h);
            }
        }
    }
    Ok(merged)
}

/// The plan a run is judged by: `--plan`, else the copy `baton run` kept beside its results.
fn plan_of(results: &Path, given: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = given {
        return Some(p.to_path_buf());
    }
    let kept = results.parent()?.join("parts").join("plan.yaml");
    kept.is_file().then_some(kept)
}

/// Criteria of its plan that the run `r` failed, one line each. Those comparing with a
/// baseline or the history (`regression`, `trend`, `relative` to another results file) are left
/// out: they judge against what is being saved, or against files this command does not check.
/// A run with no plan to judge by is said on stderr and passes; `Err` when `--plan` is unusable.
fn failed_criteria(
    path: &Path,
    r: &baton::results::Results,
    given: Option<&Path>,
    trust: baton::plan::Trust,
) -> Result<Vec<String>, CliError> {
    let Some(plan_path) = plan_of(path, given) else {
        if r.plan.is_some() {
            ui::say(&format!(
                "warning: {}: not checked against the plan's criteria: no parts/plan.yaml beside it; pass --plan PLAN",
                path.display()
            ));
        }
        return Ok(Vec::new());
    };
    // Grading runs nothing from the plan; its warnings were said when it ran, so only an
    // invalid plan is reported.
    let trusted = baton::plan::Trust::Trusted;
    let loaded = super::load::load_quietly(&plan_path, DiagFormat::Plain, trusted)?;
    // Only the jobs this run measured: a run of `--only` some jobs is a baseline of those.
    let ran: Vec<String> = r
        .jobs
        .iter()
        .map(|j| j.node_set.as_ref().map_or(&j.id, |s| &s.job).clone())
        .collect();
    let none = (
        baton::grade::Baseline::None,
        baton::session::OpenedHistory::None,
    );
    let grading = baton::session::Grading::with(&loaded.plan, &plan_path, trust, none.0, none.1);
    let g = grading.grade(&[(path.display().to_string(), r)], Some(&ran));
    Ok(g.jobs
        .iter()
        .flat_map(|j| j.criteria.iter().map(move |c| (j, c)))
        .filter(|(_, c)| c.status == baton::grade::Status::Fail && judges_the_run(c))
        .map(|(j, c)| {
            format!(
                "job `{}`: criterion `{}` of {} failed: {}",
                j.id,
                c.text,
                plan_path.display(),
                c.message
            )
        })
        .collect())
}

/// Whether a criterion judges the run on its own, not against a baseline, the history or
/// another run's file.
fn judges_the_run(c: &baton::grade::CriterionVerdict) -> bool {
    use baton::plan::Check;
    match c.criterion.as_ref().map(|k| &k.check) {
        Some(Check::Regression(_) | Check::Trend(_)) => false,
        Some(Check::Relative(r)) => r.results.is_none(),
        _ => true,
    }
}

fn compare(old: &Path, new: &Path, markdown: bool, report_only: bool, any_hosts: bool) -> Outcome {
    let files = super::grade::read_results(&[old.to_path_buf(), new.to_path_buf()])?;
    let (selected, mismatches) = baton::baseline::select(&files[0].1, &[&files[1].1]);
    if !any_hosts && !mismatches.is_empty() {
        let mut lines: Vec<String> = mismatches
            .iter()
            .map(|m| format!("error: {}", visible(&m.message(&files[0].0))))
            .collect();
        lines.push("hint: --any-hosts compares runs of different hosts anyway".into());
        return Err(CliError::Invalid(lines.join("\n")));
    }
    let old_results = if any_hosts { &files[0].1 } else { &selected };
    let c = baton::grade::compare(&files[0].0, old_results, &files[1].0, &files[1].1);
    ui::out(&baton::report::render_comparison(&c, markdown))?;
    Ok(if c.regressed() && !report_only {
        Exit::Failed
    } else {
        Exit::Ok
    })
}
