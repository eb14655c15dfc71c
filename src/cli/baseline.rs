use std::path::{Path, PathBuf};

use baton::exit::Exit;

/// Saves one or more results files as one baseline (any results file already is one). A
/// baseline is what later runs are judged against: a bad run saved as one makes regressions
/// pass (zero times) or fail (a broken job), so bad runs need `--force`.
pub fn save(results: &[PathBuf], out: &Path, force: bool) -> anyhow::Result<Exit> {
    if let Err(e) = baton::output::refuse_inputs(out, results.iter().map(PathBuf::as_path)) {
        eprintln!("error: -o {e}");
        return Ok(Exit::Invalid);
    }
    let files = match super::grade::read_results(results) {
        Ok(f) => f,
        Err(e) => return Ok(e),
    };
    let bad: Vec<String> = files
        .iter()
        .flat_map(|(name, r)| {
            baton::results::unfit_for_baseline(r)
                .into_iter()
                .map(move |p| format!("{name}: {p}"))
        })
        .collect();
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
