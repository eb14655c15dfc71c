//! The human view of an expansion: one line per job, its split groups under it, then totals.

use std::fmt::Write;

use super::{Expansion, Group, Job, Scope};
use crate::plan::{Check, Criterion, Repeat};
use crate::units::{Size, human_bytes};

/// Compresses ascending ranks into ranges: `0-7`, `3,11`, `0-3,8-11`.
pub fn rank_ranges(ranks: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let start = ranks[i];
        let mut end = start;
        while i + 1 < ranks.len() && ranks[i + 1] == end + 1 {
            i += 1;
            end = ranks[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

pub fn sizes_summary(sizes: &[u64]) -> String {
    match sizes {
        [] => "-".into(),
        [one] => Size(*one).to_string(),
        _ if sizes.len() <= 4 => sizes
            .iter()
            .map(|s| Size(*s).to_string())
            .collect::<Vec<_>>()
            .join(","),
        _ => format!(
            "{}..{} ({})",
            Size(sizes[0]),
            Size(*sizes.last().unwrap_or(&0)),
            sizes.len()
        ),
    }
}

pub fn criterion_text(c: &Criterion) -> String {
    let mut s = match &c.check {
        Check::Busbw(t) => format!("busbw {t}"),
        Check::Algbw(t) => format!("algbw {t}"),
        Check::Time(t) => format!("time {t}"),
        Check::Wrong(w) => format!("wrong == {w}"),
        Check::Transport(t) => format!("transport {t}"),
        Check::Regression(t) => format!("regression {t}"),
        Check::Variance(t) => format!("variance {t}"),
        Check::GroupSpread(t) => format!("group_spread {t}"),
        Check::Outlier(t) => format!("outlier {t}"),
        Check::Profile(t) => format!("busbw {t} of profile"),
        Check::Relative(r) => match &r.results {
            Some(f) => format!("busbw {} of {} in {f}", r.busbw, r.to),
            None => format!("busbw {} of {}", r.busbw, r.to),
        },
        Check::Trend(t) => format!("trend {t}"),
    };
    if let Some(at) = &c.at {
        let _ = write!(s, " at {at}");
    }
    // Two criteria that differ only in placement must not read (or name a JUnit test) alike.
    match c.in_place {
        Some(crate::plan::InPlace::Out) => s.push_str(" out-of-place"),
        Some(crate::plan::InPlace::In) => s.push_str(" in-place"),
        Some(crate::plan::InPlace::Both) | None => {}
    }
    if c.severity == crate::plan::Severity::Warn {
        s.push_str(" (warn)");
    }
    s
}

fn group_line(g: &Group) -> String {
    let scope = match g.scope {
        Scope::IntraNode => "intra-node",
        Scope::CrossNode => "cross-node",
    };
    let nodes = if g.nodes.len() == 1 {
        format!("node {}", g.nodes[0])
    } else {
        format!("nodes {}", rank_ranges(&g.nodes))
    };
    format!(
        "      group {:<4} ranks {:<16} {:<14} {scope}",
        g.color,
        rank_ranges(&g.ranks),
        nodes
    )
}

fn job_line(j: &Job) -> String {
    let ranks = j.ranks.map_or("auto".to_string(), |r| r.to_string());
    let repeat = match j.repeat {
        Repeat::Times(1) => String::new(),
        Repeat::Times(n) => format!(" ×{n}"),
        Repeat::For(d) => format!(" for {}", humantime::format_duration(d)),
    };
    let mem = match j.ranks {
        Some(n) => format!(
            "{} /rank, {} total",
            human_bytes(j.memory_per_rank),
            human_bytes(j.memory_per_rank.saturating_mul(n))
        ),
        None => format!("{} /rank", human_bytes(j.memory_per_rank)),
    };
    format!(
        "{}\n    {} {} {}{} ranks={} sizes={}{} split={} mem={}",
        j.id,
        j.collective,
        j.dtype,
        j.op.map_or("-".to_string(), |o| o.to_string()),
        j.root.map_or(String::new(), |r| format!(" root={r}")),
        ranks,
        sizes_summary(&j.sizes),
        repeat,
        j.split.as_deref().unwrap_or("none"),
        mem
    )
}

/// Renders the expansion as text. `max_jobs` caps the listed jobs (totals always count all).
pub fn render(e: &Expansion, max_jobs: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "plan {} ({} backend)",
        e.plan,
        match e.backend {
            crate::plan::Backend::Nccl => "nccl",
            crate::plan::Backend::Mpi => "mpi",
        }
    );
    for j in e.jobs.iter().take(max_jobs) {
        let _ = writeln!(out, "{}", job_line(j));
        if !j.expect.is_empty() {
            let crit: Vec<String> = j.expect.iter().map(criterion_text).collect();
            let _ = writeln!(out, "    expect: {}", crit.join("; "));
        }
        if let (Some(groups), Some(_)) = (&j.groups, &j.split) {
            for g in groups.iter() {
                let _ = writeln!(out, "{}", group_line(g));
            }
        }
    }
    if e.jobs.len() > max_jobs {
        let _ = writeln!(out, "… {} more jobs not listed", e.jobs.len() - max_jobs);
    }
    // The mpi backend's buffers are in host memory; "GPU" would send readers to the wrong limit.
    let memory = match e.backend {
        crate::plan::Backend::Nccl => "largest GPU memory per rank",
        crate::plan::Backend::Mpi => "largest memory per rank (host)",
    };
    let _ = writeln!(
        out,
        "total_jobs: {}  {memory}: {}",
        e.total_jobs,
        human_bytes(e.max_memory_per_rank)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(rank_ranges(&[0, 1, 2, 3, 4, 5, 6, 7]), "0-7");
        assert_eq!(rank_ranges(&[3, 11]), "3,11");
        assert_eq!(rank_ranges(&[0, 1, 2, 3, 8, 9, 10, 11]), "0-3,8-11");
        assert_eq!(rank_ranges(&[5]), "5");
    }

    #[test]
    fn criteria_name_their_placement() {
        let c = |in_place| Criterion {
            check: Check::Wrong(0),
            at: Some(crate::units::SizeSelector::Exactly(1 << 30)),
            severity: crate::plan::Severity::Fail,
            in_place,
        };
        assert_eq!(criterion_text(&c(None)), "wrong == 0 at 1G");
        assert_eq!(
            criterion_text(&c(Some(crate::plan::InPlace::In))),
            "wrong == 0 at 1G in-place"
        );
        assert_eq!(
            criterion_text(&c(Some(crate::plan::InPlace::Out))),
            "wrong == 0 at 1G out-of-place"
        );
    }

    #[test]
    fn size_summaries() {
        assert_eq!(sizes_summary(&[1 << 30, 4 << 30]), "1G,4G");
        let sweep: Vec<u64> = (3..=33).map(|p| 1u64 << p).collect();
        assert_eq!(sizes_summary(&sweep), "8..8G (31)");
    }
}
