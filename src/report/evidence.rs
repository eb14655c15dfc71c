//! The report's node evidence: the preflight's inventory table (one row per field that
//! differs anywhere, one column per value, the nodes that have it), what moved on each node
//! in which job, and a timeline of the kernel's events (Xid, link, AER) beside the rounds.

use std::fmt::Write;

use crate::grade::Grade;
use crate::probe::delta::{ChangeKind, clock};

/// The nodes the preflight left out, for the one-line summary: `; 1 node config-mismatch:
/// node05 eth0 mtu 1400, fleet 1500` (empty when none).
pub fn mismatch_summary(g: &Grade) -> String {
    let m = crate::grade::config_mismatches(g.nodes.as_ref());
    if m.is_empty() {
        return String::new();
    }
    let each: Vec<String> = m.iter().map(|(h, why)| format!("{h} {why}")).collect();
    let nodes = if m.len() == 1 { "node" } else { "nodes" };
    format!("; {} {nodes} config-mismatch: {}", m.len(), each.join("; "))
}

/// (node, job, what moved) for every job whose evidence shows a change, in job order.
fn moved(g: &Grade) -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    for j in &g.jobs {
        let Some(s) = &j.source else { continue };
        for e in &s.result.evidence {
            let lines = e.moved();
            if !lines.is_empty() {
                out.push((e.host.clone(), j.id.clone(), lines));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// (time, node, job, line) of every kernel event the jobs' deltas hold and every line of NCCL's
/// the runner heard, by time.
pub(super) fn events(g: &Grade) -> Vec<(u64, String, String, String)> {
    let mut out = Vec::new();
    for j in &g.jobs {
        let Some(s) = &j.source else { continue };
        for e in &s.result.evidence {
            for c in e.changes() {
                if let ChangeKind::Event { at_unix_ms, line } = c.kind {
                    out.push((at_unix_ms, e.host.clone(), j.id.clone(), line));
                }
            }
        }
    }
    out.sort();
    out
}

/// The HTML sections (empty when there is no evidence).
pub fn html(g: &Grade) -> String {
    let e = super::html::esc;
    let mut o = String::new();
    if !g.inventory.is_empty() {
        o.push_str("<h3>Fleet inventory</h3><table><tr><th>field</th><th>values (nodes)</th></tr>");
        for r in &g.inventory {
            let cells: Vec<String> = r
                .values
                .iter()
                .map(|(v, hosts)| {
                    format!("<b>{}</b>: {}", e(v), e(&crate::nodeset::compress(hosts)))
                })
                .collect();
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td></tr>",
                e(&r.field),
                cells.join(" · ")
            );
        }
        o.push_str("</table>");
    }
    let m = moved(g);
    if !m.is_empty() {
        o.push_str(
            "<h3>Node evidence</h3><table><tr><th>node</th><th>job</th><th>what moved</th></tr>",
        );
        for (host, job, lines) in &m {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                e(host),
                e(job),
                e(&lines.join(", "))
            );
        }
        o.push_str("</table>");
    }
    let ev = events(g);
    if !ev.is_empty() {
        o.push_str("<h3>Kernel and NCCL events</h3>");
        o.push_str(&super::timeline::svg(
            &super::timeline::rounds(g),
            &super::timeline::marks(g),
        ));
        o.push_str("<ul>");
        for (at, host, job, line) in &ev {
            let _ = write!(
                o,
                "<li>{} {} ({}): {}</li>",
                clock(*at),
                e(host),
                e(job),
                e(line)
            );
        }
        o.push_str("</ul>");
    }
    o
}

/// The Markdown sections (empty when there is no evidence).
pub fn markdown(g: &Grade, cell: fn(&str) -> String) -> String {
    let mut o = String::new();
    if !g.inventory.is_empty() {
        o.push_str("\n### Fleet inventory\n\n| Field | Values (nodes) |\n|---|---|\n");
        for r in &g.inventory {
            let cells: Vec<String> = r
                .values
                .iter()
                .map(|(v, hosts)| {
                    format!(
                        "**{}**: {}",
                        cell(v),
                        cell(&crate::nodeset::compress(hosts))
                    )
                })
                .collect();
            let _ = writeln!(o, "| {} | {} |", cell(&r.field), cells.join(" · "));
        }
    }
    let m = moved(g);
    if !m.is_empty() {
        o.push_str("\n### Node evidence\n\n| Node | Job | What moved |\n|---|---|---|\n");
        for (host, job, lines) in &m {
            let _ = writeln!(
                o,
                "| {} | {} | {} |",
                cell(host),
                cell(job),
                cell(&lines.join(", "))
            );
        }
    }
    let ev = events(g);
    if !ev.is_empty() {
        o.push_str("\n### Kernel and NCCL events\n\n");
        for (at, host, job, line) in &ev {
            let _ = writeln!(
                o,
                "- {} {} ({}): {}",
                clock(*at),
                cell(host),
                cell(job),
                cell(line)
            );
        }
    }
    o
}
