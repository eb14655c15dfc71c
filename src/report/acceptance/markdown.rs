//! The acceptance report in Markdown, for a ticket or a pull request: the same cover, matrix
//! and phases as the HTML, each phase's section the per-run Markdown report with its headings
//! one level down and its charts found in the phase's own report directory.

use std::fmt::Write;

use super::model::{Acceptance, Phase};
use super::{count_line, duration, run_rows};
use crate::report::escape::{code, text};
use crate::report::markdown::body;

/// The whole document.
pub fn render(a: &Acceptance) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Cluster acceptance: {}\n", text(&a.cluster));
    let _ = writeln!(o, "**{}** — {}\n", a.verdict.label(), text(&a.summary));
    o.push_str("| | Count | Nodes |\n|---|---|---|\n");
    for (label, hosts) in [
        ("Accepted", &a.accepted),
        ("Failed", &a.failed),
        ("Suspect", &a.suspect),
        ("Nodes", &a.nodes),
    ] {
        let (n, list) = count_line(hosts);
        let _ = writeln!(o, "| {label} | {n} | {} |", code(&list));
    }
    if !a.findings.is_empty() {
        o.push_str("\n## Cluster findings\n\n");
        for f in &a.findings {
            let _ = writeln!(o, "- {}", text(f));
        }
    }
    o.push_str("\n## Drain list\n\n");
    if a.drain.is_empty() {
        o.push_str("Nothing to drain.\n");
    } else {
        o.push_str("| Node | Reason |\n|---|---|\n");
        for d in &a.drain {
            let _ = writeln!(o, "| {} | {} |", code(&d.host), text(&d.reason));
        }
    }
    run_facts(&mut o, a);
    inventory(&mut o, a);
    o.push_str(
        "\n| Handed over by | Accepted by |\n|---|---|\n| Name: | Name: |\n\
         | Organisation: | Organisation: |\n| Signature: | Signature: |\n| Date: | Date: |\n",
    );
    matrix(&mut o, a);
    for p in &a.phases {
        phase(&mut o, p);
    }
    o
}

fn run_facts(o: &mut String, a: &Acceptance) {
    o.push_str("\n## Run\n\n| | |\n|---|---|\n");
    for (label, v) in run_rows(&a.run) {
        let _ = writeln!(o, "| {label} | {} |", text(&v));
    }
}

fn inventory(o: &mut String, a: &Acceptance) {
    if a.inventory.is_empty() {
        return;
    }
    o.push_str("\n## Inventory\n\n| Kind | Item | Value | Nodes |\n|---|---|---|---|\n");
    for i in &a.inventory {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} |",
            i.kind,
            text(&i.item),
            text(&i.value),
            code(&i.nodes)
        );
    }
}

fn matrix(o: &mut String, a: &Acceptance) {
    o.push_str("\n## Phases × nodes\n\n| Node |");
    for p in &a.phases {
        let _ = write!(o, " {} |", text(&p.name));
    }
    o.push_str("\n|---|");
    o.push_str(&"---|".repeat(a.phases.len()));
    o.push('\n');
    for h in &a.nodes {
        let _ = write!(o, "| {} |", code(h));
        for p in &a.phases {
            let cell = match (p.cell(h), p.link(h)) {
                (None, _) => String::new(),
                (Some(c), Some(href)) => format!("[{}]({href})", c.verdict.label()),
                (Some(c), None) => c.verdict.label().to_string(),
            };
            let _ = write!(o, " {cell} |");
        }
        o.push('\n');
    }
    o.push_str("| Phase |");
    for p in &a.phases {
        let _ = write!(o, " {} |", p.verdict.label());
    }
    o.push('\n');
}

fn phase(o: &mut String, p: &Phase) {
    let _ = write!(
        o,
        "\n## {}: {}\n\n{}",
        text(&p.name),
        p.verdict.label(),
        text(&p.summary)
    );
    if let Some(d) = p.duration_s {
        let _ = write!(o, " ({})", duration(d));
    }
    if let Some(r) = &p.report {
        let _ = write!(o, " — [its own report]({r})");
    }
    o.push_str("\n\n");
    let Some(g) = &p.grade else { return };
    // Charts sit beside the phase's own report.
    let dir = p
        .report
        .as_deref()
        .and_then(|r| r.rsplit_once('/'))
        .map_or(String::new(), |(d, _)| format!("{d}/"));
    for line in body(g).lines() {
        let line = line.replace("](charts/", &format!("]({dir}charts/"));
        if line.starts_with('#') {
            let _ = writeln!(o, "##{line}");
        } else {
            let _ = writeln!(o, "{line}");
        }
    }
}
