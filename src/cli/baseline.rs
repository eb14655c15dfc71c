use std::path::{Path, PathBuf};

use baton::exit::Exit;

/// Saves one or more results files as one baseline (any results file already is one). A
/// baseline is what later runs are judged against: a bad run saved as one makes regressions
/// pass (zero times) or fail (a broken job), so bad runs — including runs whose criteria failed
/// — need `--force`.
pub fn save(
    results: &[PathBuf],
    out: &Path,
    force: bool,
    plan: Option<&Path>,
    trust: baton::plan::Trust,
) -> anyhow::Result<Exit> {
    if let Err(e) = baton::output::refuse_inputs(out, results.iter().map(PathBuf::as_path)) {
        eprintln!("error: -o {e}");
        return Ok(Exit::Invalid);
    }
    let files = match super::grade::read_results(results) {
        Ok(f) => f,
        Err(e) => return Ok(e),
    };
    let mut bad: Vec<String> = files
        .iter()
        .flat_map(|(name, r)| {
            baton::results::unfit_for_baseline(r)
                .into_iter()
                .map(move |p| format!("{name}: {p}"))
        })
        .collect();
    for (path, (name, r)) in results.iter().zip(&files) {
        match failed_criteria(path, r, plan, trust) {
            Ok(failed) => bad.extend(failed.into_iter().map(|p| format!("{name}: {p}"))),
            Err(e) => return Ok(e),
        }
    }
    if !bad.is_empty() {
        for b in bad.iter().take(20) {
            eprintln!("{} {b}", if force { "warning:" } else { "error:" });
        }
        if bad.len() > 20 {
            eprintln!("… and {} more", bad.len() - 20);
        }
        if !force {
            eprintln!(
                "error: not saved: a baseline must be a good run; fix or rerun it, or pass --force to save it anyway"
            );
            return Ok(Exit::Invalid);
        }
    }
    let mut iter = files.into_iter();
    let Some((first_name, mut merged)) = iter.next() else {
        return Ok(Exit::Invalid);
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
                eprintln!(
                    "error: job `{}` is in both {other} and {name}, measured on the same hosts ({}); save them as separate baselines",
                    j.id,
                    if hosts.is_empty() {
                        "not recorded".to_string()
                    } else {
                        hosts.join(",")
                    }
                );
                return Ok(Exit::Invalid);
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
    if let Err(e) = baton::results::write_atomic(out, &merged) {
        eprintln!("error: {}", baton::stdout::visible(&e.to_string()));
        return Ok(Exit::Runtime);
    }
    baton::stdout::print(&format!(
        "{}: baseline of {} job(s)\n",
        out.display(),
        merged.jobs.len()
    ))?;
    Ok(Exit::Ok)
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
) -> Result<Vec<String>, Exit> {
    let Some(plan_path) = plan_of(path, given) else {
        if r.plan.is_some() {
            eprintln!(
                "warning: {}: not checked against the plan's criteria: no parts/plan.yaml beside it; pass --plan PLAN",
                path.display()
            );
        }
        return Ok(Vec::new());
    };
    // Grading runs nothing from the plan; its warnings were said when it ran, so only an
    // invalid plan is reported.
    let trusted = baton::plan::Trust::Trusted;
    let Ok(loaded) = baton::plan::load_file_with(&plan_path, trusted) else {
        super::load_plan(&plan_path, false, super::CheckFormat::Human, trusted);
        return Err(Exit::Invalid);
    };
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

pub fn compare(
    old: &Path,
    new: &Path,
    markdown: bool,
    report_only: bool,
    any_hosts: bool,
) -> anyhow::Result<Exit> {
    let files = match super::grade::read_results(&[old.to_path_buf(), new.to_path_buf()]) {
        Ok(f) => f,
        Err(e) => return Ok(e),
    };
    let (selected, mismatches) = baton::baseline::select(&files[0].1, &[&files[1].1]);
    if !any_hosts && !mismatches.is_empty() {
        for m in &mismatches {
            eprintln!("error: {}", baton::stdout::visible(&m.message(&files[0].0)));
        }
        eprintln!("hint: --any-hosts compares runs of different hosts anyway");
        return Ok(Exit::Invalid);
    }
    let old_results = if any_hosts { &files[0].1 } else { &selected };
    let c = baton::grade::compare(&files[0].0, old_results, &files[1].0, &files[1].1);
    baton::stdout::print(&baton::report::render_comparison(&c, markdown))?;
    Ok(if c.regressed() && !report_only {
        Exit::Failed
    } else {
        Exit::Ok
    })
}
