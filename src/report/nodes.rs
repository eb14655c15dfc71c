//! The report's node section for runs over node sets: a table with every node's verdict and
//! why, the faults no single node explains, each test's sets in brief, and for `pairs` the pair
//! matrix, in which a bad node is a red row.

use std::fmt::Write;

use super::pair_matrix::{Outcome, PairCell, pair_matrix_svg};
use super::set_summary;
use crate::grade::{Grade, SetVerdict, Status, TestNodes};

/// The pair matrix of a `pairs` test, when it has one.
pub fn matrix(t: &TestNodes) -> Option<String> {
    if t.over != "pairs" {
        return None;
    }
    let index = |h: &String| t.hosts.iter().position(|x| x == h);
    let cells: Vec<PairCell> = t
        .sets
        .iter()
        .filter_map(|s| match s.hosts.as_slice() {
            [a, b] => Some(PairCell {
                a: index(a)?,
                b: index(b)?,
                value: s.busbw,
                outcome: outcome(s),
            }),
            _ => None,
        })
        .collect();
    pair_matrix_svg(&t.hosts, &cells, "GB/s")
}

/// How a set ended, for the matrix. A set recorded without jobs never started: the runner
/// records those of a node proven dead earlier with the dead node (`not run: …`), so every round
/// reads whole; a set that started and lost a node ran, and failed.
fn outcome(s: &SetVerdict) -> Outcome {
    let never_ran =
        s.jobs.is_empty() || s.ended.as_deref().is_some_and(|e| e.starts_with("not run"));
    match (never_ran, s.dead.is_empty(), s.status) {
        (true, false, _) => Outcome::NodeDead,
        (true, true, _) => Outcome::NotRun,
        (false, _, Status::Fail) => Outcome::Failed,
        (false, _, _) => Outcome::Passed,
    }
}

/// Whether a job gets its own section (and chart) in the report: a node set that passed is
/// told by the node section, so a thousand-node sweep does not print half a million jobs. The
/// one set of `over: all` keeps its plan job's ID: it is the job, shown as a plain run's is.
pub fn shown(j: &crate::grade::JobVerdict) -> bool {
    let set = j
        .source
        .as_ref()
        .and_then(|s| s.result.node_set.as_ref())
        .is_some_and(|s| s.job != j.id);
    !(set && j.status == Status::Pass)
}

/// File name of a test's pair matrix beside `report.md`.
pub fn matrix_file(k: usize) -> String {
    format!("charts/pairs-{k:02}.svg")
}

fn sets_line(t: &TestNodes) -> String {
    let failed = t.sets.iter().filter(|s| s.status == Status::Fail).count();
    format!(
        "over: {}: {} set(s) in {} round(s), {failed} failed",
        t.over,
        t.sets.len(),
        t.rounds
    )
}

/// The Markdown section (without node sets, only the nodes' evidence).
pub fn markdown(g: &Grade) -> String {
    let Some(nodes) = &g.nodes else {
        // A run without node sets still has its nodes' evidence (what moved, NCCL's lines).
        let e = super::evidence::markdown(g, cell);
        return if e.is_empty() {
            e
        } else {
            format!("## Nodes\n{e}\n")
        };
    };
    let mut o = String::from("## Nodes\n\n");
    let _ = writeln!(
        o,
        "Passed: {} · failed: {} · suspect: {}\n",
        or_none(&nodes.passed),
        or_none(&nodes.failed),
        or_none(&nodes.suspect)
    );
    o.push_str("| Node | Verdict | Why |\n|---|---|---|\n");
    for n in &nodes.nodes {
        let _ = writeln!(
            o,
            "| {} | {} | {} |",
            cell(&n.host),
            verdict(n.verdict),
            cell(&why(n))
        );
    }
    o.push_str(&super::evidence::markdown(g, cell));
    let faults = super::fault_lines(g);
    if !faults.is_empty() {
        o.push_str("\nFaults no single node explains:\n\n");
        for f in &faults {
            let _ = writeln!(o, "- {}", cell(f));
        }
    }
    if !nodes.cluster.is_empty() {
        o.push_str("\n### Cluster findings\n\nTests over the whole node list that failed as a whole: findings about the cluster, not about any one node.\n\n");
        for c in &nodes.cluster {
            let _ = writeln!(
                o,
                "- {} ({}): {}",
                cell(&c.test),
                cell(&c.hosts),
                cell(&c.reason)
            );
        }
    }
    for (k, t) in g.node_sets.iter().enumerate() {
        let _ = writeln!(o, "\n### {}\n\n{}", cell(&t.test), sets_line(t));
        o.push_str(&set_summary::markdown(&set_summary::rows(g, t), cell));
        if matrix(t).is_some() {
            let _ = writeln!(
                o,
                "\n![Pair matrix of {}]({})",
                cell(&t.test),
                matrix_file(k)
            );
        }
    }
    o.push('\n');
    o
}

/// The HTML section (without node sets, only the nodes' evidence); matrices inline.
pub fn html(g: &Grade) -> String {
    let Some(nodes) = &g.nodes else {
        let e = super::evidence::html(g);
        return if e.is_empty() {
            e
        } else {
            format!("<h2>Nodes</h2>{e}")
        };
    };
    let e = super::html::esc;
    let mut o = String::from("<h2>Nodes</h2>");
    let _ = write!(
        o,
        "<p>Passed: {} · failed: {} · suspect: {}</p><table><tr><th>Node</th><th>Verdict</th><th>Why</th></tr>",
        e(or_none(&nodes.passed)),
        e(or_none(&nodes.failed)),
        e(or_none(&nodes.suspect))
    );
    for n in &nodes.nodes {
        let _ = write!(
            o,
            "<tr class=\"{}\" id=\"{}\"><td>{}</td><td>{}</td><td>{}</td></tr>",
            match n.verdict {
                crate::nodeset::Verdict::Failed | crate::nodeset::Verdict::ConfigMismatch => "fail",
                crate::nodeset::Verdict::Suspect => "warn",
                crate::nodeset::Verdict::Passed => "pass",
            },
            anchor(&n.host),
            e(&n.host),
            verdict(n.verdict),
            e(&why(n))
        );
    }
    o.push_str("</table>");
    o.push_str(&super::evidence::html(g));
    let faults = super::fault_lines(g);
    if !faults.is_empty() {
        o.push_str("<p>Faults no single node explains:</p><ul>");
        for f in &faults {
            let _ = write!(o, "<li>{}</li>", e(f));
        }
        o.push_str("</ul>");
    }
    if !nodes.cluster.is_empty() {
        o.push_str("<h3>Cluster findings</h3><p>Tests over the whole node list that failed as a whole: findings about the cluster, not about any one node.</p><ul>");
        for c in &nodes.cluster {
            let _ = write!(
                o,
                "<li>{} ({}): {}</li>",
                e(&c.test),
                e(&c.hosts),
                e(&c.reason)
            );
        }
        o.push_str("</ul>");
    }
    for t in &g.node_sets {
        let _ = write!(o, "<h3>{}</h3><p>{}</p>", e(&t.test), e(&sets_line(t)));
        o.push_str(&set_summary::html(&set_summary::rows(g, t)));
        if let Some(svg) = matrix(t) {
            let _ = write!(
                o,
                "<figure><figcaption>Pair matrix</figcaption>{svg}</figure>"
            );
        }
    }
    o
}

/// The anchor of a node's row in the HTML report (`#node-node03`), which the acceptance
/// report's phases × nodes matrix links to: the host name with anything but letters, digits,
/// `-`, `_` and `.` as `_`, so it is a plain fragment whatever the name holds.
pub fn anchor(host: &str) -> String {
    let slug: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("node-{slug}")
}

/// A node's reason, and what an earlier run said of it when a later one measured it again and
/// its verdict changed (nodes.json keeps every earlier verdict).
fn why(n: &crate::nodeset::export::NodeEntry) -> String {
    let mut s = reason_with_warnings(n);
    for e in n.earlier.iter().filter(|e| e.verdict != n.verdict) {
        s.push_str(&format!(
            " (earlier, in {}: {} — {})",
            super::paths::shown(&e.results),
            verdict(e.verdict),
            e.reason
        ));
    }
    s
}

fn verdict(v: crate::nodeset::Verdict) -> &'static str {
    match v {
        crate::nodeset::Verdict::Passed => "passed",
        crate::nodeset::Verdict::Failed => "failed",
        crate::nodeset::Verdict::Suspect => "suspect",
        crate::nodeset::Verdict::ConfigMismatch => "config-mismatch",
    }
}

/// A node's reason, then its warnings (evidence that moved where its verdict does not rest).
fn reason_with_warnings(n: &crate::nodeset::export::NodeEntry) -> String {
    match n.warnings.is_empty() {
        true => n.reason.clone(),
        false => format!("{}; warning: {}", n.reason, n.warnings.join("; ")),
    }
}

fn or_none(s: &str) -> &str {
    if s.is_empty() { "none" } else { s }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}
