//! The run metadata at the top of the report, computed once for Markdown and HTML: what a
//! reader months later needs before any number — when, for how long, which plan version, which
//! software, which hosts, how many iterations, against which baseline.

use super::paths::shown;
use crate::grade::Grade;

/// One line of the metadata table.
pub struct MetaRow {
    pub label: &'static str,
    pub value: String,
    /// Values are file names (shown as code) rather than prose.
    pub paths: Vec<String>,
}

fn row(label: &'static str, value: impl Into<String>) -> MetaRow {
    MetaRow {
        label,
        value: value.into(),
        paths: Vec::new(),
    }
}

fn files(label: &'static str, paths: Vec<String>) -> MetaRow {
    MetaRow {
        label,
        value: String::new(),
        paths,
    }
}

/// `2026-11-30T16:50:01Z` → `2026-11-30 16:50:01 UTC`; anything else as written.
pub(super) fn when(s: &str) -> String {
    match s.strip_suffix('Z') {
        Some(t) if t.len() == 19 && t.as_bytes().get(10) == Some(&b'T') => {
            format!("{} {} UTC", &t[..10], &t[11..])
        }
        _ => s.to_string(),
    }
}

/// The baseline as graded: a file name, possibly with why it could not be read.
fn baseline(g: &Grade) -> MetaRow {
    match g.baseline.as_deref() {
        None => row("Baseline", "none"),
        Some(b) => match b.split_once(" (unreadable: ") {
            Some((name, why)) => MetaRow {
                label: "Baseline",
                value: format!("unreadable: {}", why.trim_end_matches(')')),
                paths: vec![shown(name)],
            },
            None => files("Baseline", vec![shown(b)]),
        },
    }
}

/// `git 0151a8ed929d`, and why it may not be the plan that ran.
fn revision(git: &crate::plan::revision::GitRevision) -> String {
    format!(
        "git {}{}",
        // From a results file, so any text: cut on characters, not bytes.
        git.commit.chars().take(12).collect::<String>(),
        if git.dirty {
            " (dirty: the plan differs from this commit)"
        } else {
            ""
        }
    )
}

pub fn rows(g: &Grade) -> Vec<MetaRow> {
    let r = &g.run;
    let e = &g.environment;
    let mut v = Vec::new();
    v.push(row(
        "Plan",
        match &r.description {
            Some(d) => format!("{} — {}", g.plan, d.trim()),
            None => g.plan.clone(),
        },
    ));
    if let Some(f) = &g.plan_file {
        v.push(files("Plan file", vec![shown(f)]));
    }
    if let Some(git) = &r.git {
        v.push(row("Plan revision", revision(git)));
    }
    let span = match (&r.started, &r.finished) {
        (Some(a), Some(b)) => format!(
            "{} → {}{}",
            when(a),
            when(b),
            r.duration_s
                .map(|s| format!(
                    " ({})",
                    humantime::format_duration(std::time::Duration::from_secs(s))
                ))
                .unwrap_or_default()
        ),
        (Some(a), None) => format!("started {}, not finished", when(a)),
        _ => "not recorded".into(),
    };
    v.push(row("Run", span));
    for i in &r.interrupted {
        v.push(row("Stopped", i.clone()));
    }
    for f in &r.injected_faults {
        v.push(row(
            "Injected fault",
            format!("{f} (a test build's BATON_FAULT: failures here were made, not measured)"),
        ));
    }
    if !r.producers.is_empty() {
        v.push(row("Produced by", r.producers.join(", ")));
    }
    let versions: Vec<String> = [
        ("NCCL", &e.nccl_version),
        ("driver", &e.driver_version),
        ("CUDA", &e.cuda_version),
        ("MPI", &e.mpi_version),
    ]
    .into_iter()
    .filter_map(|(k, x)| Some(format!("{k} {}", x.as_deref()?)))
    .collect();
    v.push(row(
        "Versions",
        if versions.is_empty() {
            "not recorded".into()
        } else {
            versions.join(" · ")
        },
    ));
    // As a Slurm hostlist (`node[001-512]`): a thousand names would bury the table.
    let hosts: Vec<&str> = e.hosts.iter().map(|h| h.hostname.as_str()).collect();
    v.push(row(
        "Hosts",
        if hosts.is_empty() {
            "not recorded".into()
        } else {
            format!(
                "{} ({} host{})",
                crate::nodeset::hostlist::compress(&hosts),
                hosts.len(),
                if hosts.len() == 1 { "" } else { "s" }
            )
        },
    ));
    if !r.settings.is_empty() {
        v.push(row("Iterations", r.settings.join("; ")));
    }
    v.push(baseline(g));
    v.push(files(
        "Results",
        g.results_files.iter().map(|f| shown(f)).collect(),
    ));
    let reruns = super::reruns::lines(g);
    if !reruns.is_empty() {
        v.push(row("Reruns", reruns.join("; ")));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_of_any_text_is_cut_safely() {
        let git = crate::plan::revision::GitRevision {
            commit: "ééééééééééééééé".into(),
            dirty: true,
        };
        assert_eq!(
            revision(&git),
            "git éééééééééééé (dirty: the plan differs from this commit)"
        );
    }

    #[test]
    fn timestamps_read_as_dates() {
        assert_eq!(when("2026-11-30T16:50:01Z"), "2026-11-30 16:50:01 UTC");
        assert_eq!(when("yesterday"), "yesterday");
    }
}
