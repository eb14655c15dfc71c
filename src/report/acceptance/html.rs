//! The acceptance report as one self-contained HTML file that prints as the document a
//! customer signs: the cover (verdict, node counts, drain list, run facts, inventory, the
//! signature block) on its own page, the phases × nodes matrix (rows by node, so a thousand
//! nodes split across pages with the header repeated), then a page per phase with its own
//! report, as the per-run renderer draws it.

use std::fmt::Write;

use super::model::{Acceptance, Phase, PhaseVerdict};
use super::{count_line, duration, run_rows};
use crate::report::ReportError;
use crate::report::html::{STYLE, body, esc};

/// The print rules of the acceptance document, after the per-run report's. The paper size is
/// the printer's (A4 or Letter): every page is laid out to fit the smaller of the two.
const PRINT: &str = r#"
.cover h1 { font-size: 1.9em; }
.counts td.num { font-size: 1.3em; font-weight: 600; width: 3em; }
.matrix td.cell { text-align: center; white-space: nowrap; }
.matrix td.pass { background: #e8f5e9; } .matrix td.fail { background: #fdecea; }
.matrix td.warn { background: #fff4e5; } .matrix td.skip { background: #f2f2f2; color: #616161; }
.matrix th.phase { text-align: center; }
.sign { display: flex; gap: 24px; margin-top: 28px; }
.sign div { flex: 1; border: 1px solid #9e9e9e; border-radius: 6px; padding: 10px 14px; background: #fff; }
.sign h3 { margin: 0 0 10px; }
.sign p { margin: 18px 0 0; border-bottom: 1px solid #616161; padding-bottom: 2px; color: #616161; font-size: .85em; }
section.phase { margin-top: 28px; }
section.phase h1 { font-size: 1.3em; }
@media print {
  @page { margin: 12mm 12mm; }
  section.matrix, section.phase { break-before: page; page-break-before: always; }
  .sign, .counts, table.drain tr { break-inside: avoid; page-break-inside: avoid; }
  .matrix thead { display: table-header-group; }
  .matrix td.pass, .matrix td.fail, .matrix td.warn, .matrix td.skip {
    -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  section.phase .job:first-of-type { break-before: auto; }
}
"#;

/// The whole document.
pub fn render(a: &Acceptance) -> Result<String, ReportError> {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Cluster acceptance: {}</title><style>{STYLE}{PRINT}</style></head><body><main>",
        esc(&a.cluster)
    );
    cover(&mut o, a);
    matrix(&mut o, a);
    for p in &a.phases {
        phase(&mut o, p)?;
    }
    o.push_str("</main></body></html>\n");
    Ok(o)
}

fn cover(o: &mut String, a: &Acceptance) {
    let _ = write!(
        o,
        "<section class=\"cover\"><h1>Cluster acceptance: {}</h1>\
         <div class=\"verdict {}\"><span class=\"badge {}\">{}</span> {}</div>",
        esc(&a.cluster),
        a.verdict.class(),
        a.verdict.class(),
        a.verdict.label(),
        esc(&a.summary)
    );
    o.push_str("<table class=\"counts run\">");
    for (label, class, hosts) in [
        ("Accepted", "pass", &a.accepted),
        ("Failed", "fail", &a.failed),
        ("Suspect", "warn", &a.suspect),
    ] {
        let (n, list) = count_line(hosts);
        let _ = write!(
            o,
            "<tr><th><span class=\"badge {class}\">{label}</span></th><td class=\"num\">{n}</td><td><code>{}</code></td></tr>",
            esc(&list)
        );
    }
    let _ = write!(
        o,
        "<tr><th>Nodes</th><td class=\"num\">{}</td><td><code>{}</code></td></tr></table>",
        a.nodes.len(),
        esc(&count_line(&a.nodes).1)
    );
    if !a.findings.is_empty() {
        o.push_str("<h2>Cluster findings</h2><ul>");
        for f in &a.findings {
            let _ = write!(o, "<li>{}</li>", esc(f));
        }
        o.push_str("</ul>");
    }
    o.push_str("<h2>Drain list</h2>");
    if a.drain.is_empty() {
        o.push_str("<p>Nothing to drain.</p>");
    } else {
        o.push_str("<table class=\"drain\"><tr><th>Node</th><th>Reason</th></tr>");
        for d in &a.drain {
            let _ = write!(
                o,
                "<tr><td><code>{}</code></td><td>{}</td></tr>",
                esc(&d.host),
                esc(&d.reason)
            );
        }
        o.push_str("</table>");
    }
    run_facts(o, a);
    inventory(o, a);
    o.push_str(
        "<div class=\"sign\"><div><h3>Handed over by</h3><p>Name</p><p>Organisation</p>\
         <p>Signature</p><p>Date</p></div><div><h3>Accepted by</h3><p>Name</p>\
         <p>Organisation</p><p>Signature</p><p>Date</p></div></div></section>",
    );
}

fn run_facts(o: &mut String, a: &Acceptance) {
    o.push_str("<h2>Run</h2><table class=\"run\">");
    for (label, v) in run_rows(&a.run) {
        let _ = write!(o, "<tr><th>{label}</th><td>{}</td></tr>", esc(&v));
    }
    o.push_str("</table>");
}

fn inventory(o: &mut String, a: &Acceptance) {
    if a.inventory.is_empty() {
        return;
    }
    o.push_str(
        "<h2>Inventory</h2><table><tr><th>Kind</th><th>Item</th><th>Value</th><th>Nodes</th></tr>",
    );
    for i in &a.inventory {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            i.kind,
            esc(&i.item),
            esc(&i.value),
            esc(&i.nodes)
        );
    }
    o.push_str("</table>");
}

fn matrix(o: &mut String, a: &Acceptance) {
    o.push_str("<section class=\"matrix\"><h2>Phases × nodes</h2>\
        <p class=\"legend-note\">Each cell is the node's verdict in that phase, linked to its row in the phase's report; \
        <em>excluded</em>: left out after it failed an earlier phase; <em>cluster</em>: the phase failed as a cluster, no node at fault; blank: the phase never saw it.</p>\
        <table class=\"matrix\"><thead><tr><th>Node</th>");
    for p in &a.phases {
        let _ = write!(
            o,
            "<th class=\"phase\"><a href=\"#phase-{}\">{}</a></th>",
            esc(&p.id),
            esc(&p.name)
        );
    }
    o.push_str("</tr></thead><tbody>");
    for h in &a.nodes {
        let _ = write!(o, "<tr><th><code>{}</code></th>", esc(h));
        for p in &a.phases {
            cell(o, p, h);
        }
        o.push_str("</tr>");
    }
    o.push_str("<tr><th>Phase</th>");
    for p in &a.phases {
        let class = match p.verdict {
            PhaseVerdict::Passed => "pass",
            PhaseVerdict::Failed => "fail",
            PhaseVerdict::NotRun => "skip",
        };
        let _ = write!(o, "<td class=\"cell {class}\">{}</td>", p.verdict.label());
    }
    o.push_str("</tr></tbody></table></section>");
}

fn cell(o: &mut String, p: &Phase, host: &str) {
    let Some(c) = p.cell(host) else {
        o.push_str("<td class=\"cell\"></td>");
        return;
    };
    let label = c.verdict.label();
    let text = match p.link(host) {
        Some(href) => format!("<a href=\"{}\">{label}</a>", esc(&href)),
        None => label.to_string(),
    };
    let _ = write!(
        o,
        "<td class=\"cell {}\" title=\"{}\">{text}</td>",
        c.verdict.class(),
        esc(&c.reason)
    );
}

fn phase(o: &mut String, p: &Phase) -> Result<(), ReportError> {
    let _ = write!(
        o,
        "<section class=\"phase\" id=\"phase-{}\"><h2>{}: {}</h2><p>{}",
        esc(&p.id),
        esc(&p.name),
        p.verdict.label(),
        esc(&p.summary)
    );
    if let Some(d) = p.duration_s {
        let _ = write!(o, " ({})", duration(d));
    }
    if let Some(r) = &p.report {
        let _ = write!(o, " — <a href=\"{}\">its own report</a>", esc(r));
    }
    o.push_str("</p>");
    if let Some(g) = &p.grade {
        o.push_str(&body(g)?);
    }
    o.push_str("</section>");
    Ok(())
}
