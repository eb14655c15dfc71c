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
        Check::Straggler(s) => format!("straggler {s}"),
        Check::Profile(t) => format!("busbw {t} of profile"),
        Check::Relative(r) => match &r.results {
            Some(f) => format!("busbw {} of {} in {f}", r.busbw, r.to),
            None => format!("busbw {} of {}", r.busbw, r.to),
        },
        Check::Trend(t) => format!("trend {t}"),
        Check::NcclTestsMinBw(v) => format!(
            "nccl_tests_min_bw {v} GB/s (average busbw >= {} GB/s)",
            (crate::plan::NCCL_TESTS_MIN_BW_SHARE * v * 1e3).round() / 1e3
        ),
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

/// How many nodes each set of a test holds, for what `ranks=` says of its jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetNodes {
    /// Every set has this many (`each-node` 1, `pairs` 2).
    Fixed(usize),
    /// One set of the whole node list (`over: all` in a run over node sets); `None` while the
    /// list is the allocation's, known at run time.
    List(Option<usize>),
    /// Sets of every size (`isolate`).
    Varies,
}

/// The sets' nodes of each test of a run over node sets, and the plan's ranks per node: a job
/// of such a test runs on its set's nodes, never on `launch.nodes` (one set's size), so its
/// plan job's rank count is not what it runs on. Empty for a plan that runs as one job set.
#[derive(Debug, Clone, Default)]
pub struct SetRanks {
    pub per_node: Option<u64>,
    pub tests: std::collections::HashMap<String, SetNodes>,
}

impl SetRanks {
    /// For `plan` run over node sets on `nodes` nodes (`None`: the allocation's).
    pub fn of(plan: &crate::plan::Plan, nodes: Option<usize>) -> SetRanks {
        use crate::plan::Over;
        let tests = plan
            .tests
            .iter()
            .map(|t| {
                let n = match t.over {
                    Over::All => SetNodes::List(nodes),
                    Over::EachNode => SetNodes::Fixed(1),
                    Over::Pairs(_) => SetNodes::Fixed(2),
                    Over::Isolate => SetNodes::Varies,
                };
                (t.name.clone(), n)
            })
            .collect();
        SetRanks {
            per_node: plan.ranks_per_node(),
            tests,
        }
    }

    /// `ranks=…` of a job and the rank count its memory total is of; `None` for a job that
    /// runs as the plan says.
    fn of_job(&self, j: &Job) -> Option<(String, Option<u64>)> {
        let nodes = *self.tests.get(&j.test)?;
        let per = self.per_node.map_or("auto".to_string(), |p| p.to_string());
        let node = |n: usize| if n == 1 { "node" } else { "nodes" };
        Some(match nodes {
            SetNodes::Fixed(n) => (
                format!("{} per set ({n} {} × {per})", self.times(n), node(n)),
                self.per_node.map(|p| p * n as u64),
            ),
            SetNodes::List(Some(n)) => (
                format!("{} ({n} {} × {per})", self.times(n), node(n)),
                self.per_node.map(|p| p * n as u64),
            ),
            SetNodes::List(None) => (format!("{per} per node × the allocation's nodes"), None),
            SetNodes::Varies => (format!("{per} per node × each set's nodes"), None),
        })
    }

    /// The split groups of a job over node sets, for its set's ranks; `None` for a job that
    /// runs as the plan says. Empty when the set's ranks are known only at run time.
    fn groups_of(&self, j: &Job) -> Option<Vec<Group>> {
        let (_, total) = self.of_job(j)?;
        let (Some(n), Some(per_node)) = (total, self.per_node) else {
            return Some(Vec::new());
        };
        let split = j.split.as_ref().map(|s| &s.split);
        Some(super::groups(split, n, per_node).to_vec())
    }

    fn times(&self, n: usize) -> String {
        self.per_node
            .map_or("auto".to_string(), |p| (p * n as u64).to_string())
    }
}

fn job_line(j: &Job, sets: &SetRanks) -> String {
    let (ranks, total) = match sets.of_job(j) {
        Some((text, total)) => (text, total),
        None => (
            j.ranks.map_or("auto".to_string(), |r| r.to_string()),
            j.ranks,
        ),
    };
    let repeat = match j.repeat {
        Repeat::Times(1) => String::new(),
        Repeat::Times(n) => format!(" ×{n}"),
        Repeat::For(d) => format!(" for {}", humantime::format_duration(d)),
    };
    let mem = match total {
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
        j.split_text().unwrap_or("none"),
        mem
    )
}

/// Renders the expansion as text. `max_jobs` caps the listed jobs (totals always count all);
/// `sets` says what the jobs of tests over node sets run on.
pub fn render(e: &Expansion, max_jobs: usize, sets: &SetRanks) -> String {
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
        let _ = writeln!(out, "{}", job_line(j, sets));
        if !j.expect.is_empty() {
            let crit: Vec<String> = j.expect.iter().map(criterion_text).collect();
            let _ = writeln!(out, "    expect: {}", crit.join("; "));
        }
        if let (Some(groups), Some(_)) = (&j.groups, &j.split) {
            let groups = sets.groups_of(j).unwrap_or_else(|| groups.to_vec());
            for g in &groups {
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
