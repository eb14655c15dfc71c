//! The HTML report: the Markdown report's content in one self-contained file — styles and SVG
//! charts inline, no scripts, no fonts or images from anywhere — so it opens from a ticket, a
//! CI artifact or an air-gapped laptop alike.

use std::fmt::Write;

use super::{ChartExporter, Exporter, ReportError, ReportInput, markdown::headline, meta, tables};
use crate::grade::{JobVerdict, Status};

pub struct HtmlExporter;

pub(super) const STYLE: &str = r#"
:root { --fail:#c62828; --warn:#b26a00; --pass:#2e7d32; --skip:#757575; --line:#e0e0e0; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color:#212121;
       margin:0; background:#fafafa; line-height:1.4; }
main { max-width: 1180px; margin: 0 auto; padding: 24px; }
h1 { font-size: 1.6em; margin: 0 0 4px; }
h2 { font-size: 1.25em; margin: 32px 0 8px; border-bottom: 2px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 1.1em; margin: 0 0 6px; word-break: break-all; }
.meta { color:#616161; font-size: .9em; margin: 2px 0; }
.verdict { font-size: 1.15em; margin: 12px 0; padding: 10px 14px; border-radius: 6px; background:#fff;
           border-left: 6px solid var(--skip); }
.verdict.fail { border-left-color: var(--fail); } .verdict.pass { border-left-color: var(--pass); }
.verdict.warn { border-left-color: var(--warn); }
.badge { display:inline-block; min-width: 3.6em; text-align:center; font-weight: 600; font-size: .8em;
         padding: 2px 6px; border-radius: 4px; color:#fff; background: var(--skip); }
.badge.fail { background: var(--fail); } .badge.warn { background: var(--warn); }
.badge.pass { background: var(--pass); }
table { border-collapse: collapse; width: 100%; background:#fff; margin: 6px 0 14px; font-size: .88em; }
th, td { border: 1px solid var(--line); padding: 4px 7px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.bad td { background: #fdecea; }
tr.slow td { background: #fff4e5; }
.job { background:#fff; border:1px solid var(--line); border-radius: 8px; padding: 14px 16px; margin: 16px 0; }
.job.fail { border-left: 6px solid var(--fail); } .job.warn { border-left: 6px solid var(--warn); }
.job.pass { border-left: 6px solid var(--pass); }
.diag { color:#4e342e; background:#fff8e1; border-radius:4px; padding: 2px 6px; display:block; margin-top:4px; }
.chart svg { max-width: 100%; height: auto; }
table.checks td:nth-child(1) { width: 5em; } table.checks td:nth-child(2) { width: 17em; }
h4 { font-size: .95em; margin: 14px 0 2px; color:#424242; }
pre { background:#f5f5f5; padding: 8px; overflow-x: auto; font-size: .85em; }
a { color: #1565c0; text-decoration: none; }
table.run { width: auto; min-width: 60%; }
table.run th { width: 9em; white-space: nowrap; }
code { font-size: .92em; background: #f3f3f3; padding: 0 3px; border-radius: 3px; }
.legend-note { color:#616161; font-size: .82em; margin: 0 0 8px; }
/* Paper: white throughout, charts and tables within the page width, one test per page, rows
   and charts never cut in half, and the verdict colours kept (browsers drop backgrounds). */
@media print {
  @page { size: A4; margin: 14mm 12mm; }
  html, body, main, .job, table, th, .verdict { background: #fff !important; }
  body { font-size: 10pt; color: #000; }
  main { max-width: none; padding: 0; }
  .job { border: 1px solid #bbb; page-break-before: always; break-before: page; margin: 0; }
  .chart, .chart svg, tr, h3, h4 { break-inside: avoid; page-break-inside: avoid; }
  .chart svg { width: 100%; max-height: 95mm; }
  h2 { break-after: avoid; page-break-after: avoid; }
  h2.jobs { break-before: page; page-break-before: always; }
  h2.jobs + .job { break-before: avoid; page-break-before: avoid; }
  table { font-size: 8pt; }
  th, td { padding: 2px 4px; }
  .badge, tr.bad td, tr.slow td, .diag { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  a { color: #000; }
}
"#;

/// `s` as HTML text or attribute value: markup characters as entities, control characters (C0
/// but tab and newline, DEL, C1) as spaces — an ESC or NUL from a log means nothing on a page, and
/// a terminal that shows the raw file must not obey it — and what XML cannot hold as U+FFFD.
pub(super) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' | '\n' => o.push(c),
            c if c.is_control() => o.push(' '),
            c => super::xml::push_escaped(&mut o, c),
        }
    }
    o
}

/// Text written for Markdown (messages, diagnoses, hints) as HTML: escaped, and its `code`
/// spans as `<code>`, so no literal backtick shows. A backtick without a partner stays as text.
fn prose(s: &str) -> String {
    let parts: Vec<&str> = s.split('`').collect();
    let paired = parts.len() % 2 == 1;
    let mut o = String::with_capacity(s.len() + 16);
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 1 && (paired || i + 1 < parts.len()) {
            let _ = write!(o, "<code>{}</code>", esc(part));
        } else {
            if i % 2 == 1 {
                o.push('`');
            }
            o.push_str(&esc(part));
        }
    }
    o
}

fn class(s: Status) -> &'static str {
    match s {
        Status::Pass => "pass",
        Status::Warn => "warn",
        Status::Fail => "fail",
        Status::Skipped => "skip",
    }
}

fn badge(s: Status) -> String {
    format!(r#"<span class="badge {}">{}</span>"#, class(s), s.label())
}

impl Exporter for HtmlExporter {
    fn export(&self, input: &ReportInput<'_>) -> Result<Vec<u8>, ReportError> {
        let g = input.grade;
        let mut o = String::new();
        let _ = write!(
            o,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>Acceptance report: {}</title><style>{STYLE}</style></head><body><main>",
            esc(&g.plan)
        );
        o.push_str(&body(g)?);
        o.push_str("</main></body></html>\n");
        Ok(o.into_bytes())
    }
}

/// The report of one grade without its page around it: the acceptance report holds one per
/// phase.
pub(super) fn body(g: &crate::grade::Grade) -> Result<String, ReportError> {
    let mut o = String::new();
    let _ = write!(o, "<h1>Acceptance report: {}</h1>", esc(&g.plan));
    let _ = write!(
        o,
        "<div class=\"verdict {}\">{} {}</div>",
        class(g.status),
        badge(g.status),
        esc(&headline(g))
    );
    o.push_str("<table class=\"run\">");
    for m in meta::rows(g) {
        let mut v = esc(&m.value);
        let paths: Vec<String> = m
            .paths
            .iter()
            .map(|p| format!("<code>{}</code>", esc(p)))
            .collect();
        if !paths.is_empty() {
            v = if v.is_empty() {
                paths.join(", ")
            } else {
                format!("{} ({v})", paths.join(", "))
            };
        }
        let _ = write!(o, "<tr><th>{}</th><td>{v}</td></tr>", m.label);
    }
    o.push_str("</table>");
    let _ = write!(
        o,
        "<h2>Verdict summary</h2><table><tr><th>Verdict</th><th>Job</th><th>Collective</th><th>Checks</th><th>First problem</th></tr>"
    );
    for r in tables::summary(g) {
        let idx = g.jobs.iter().position(|j| j.id == r.id).unwrap_or(0);
        if !super::nodes::shown(&g.jobs[idx]) {
            continue;
        }
        let _ = write!(
            o,
            "<tr><td>{}</td><td><a href=\"#job-{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            badge(r.status),
            idx + 1,
            esc(&r.id),
            esc(&r.what),
            esc(&r.checks),
            prose(&r.problem)
        );
    }
    o.push_str("</table>");
    for u in &g.unmatched {
        let _ = write!(o, "<p class=\"meta\">Unused results: {}</p>", prose(u));
    }
    o.push_str(&super::nodes::html(g));
    let gpu = super::gpu_pairs::matrices(g);
    if !gpu.is_empty() {
        o.push_str("<h2>GPU pairs</h2>");
        for m in &gpu {
            let _ = write!(
                o,
                "<figure>{}<figcaption>{}</figcaption></figure>",
                m.svg().unwrap_or_default(),
                esc(&super::gpu_pairs::caption(m))
            );
        }
    }
    o.push_str("<h2 class=\"jobs\">Jobs</h2>");
    for (i, j) in g.jobs_by_severity_indexed() {
        if super::nodes::shown(j) {
            job(&mut o, i, j)?;
        }
    }
    o.push_str("<h2>Environment</h2><table>");
    for (k, v) in tables::environment(g) {
        let _ = write!(o, "<tr><th>{}</th><td>{}</td></tr>", esc(&k), esc(&v));
    }
    o.push_str("</table>");
    if let Some(t) = &g.environment.topology {
        let _ = write!(
            o,
            "<h4>Topology (nvidia-smi topo -m)</h4><pre>{}</pre>",
            esc(t)
        );
    }
    Ok(o)
}

fn job(o: &mut String, i: usize, j: &JobVerdict) -> Result<(), ReportError> {
    let _ = write!(
        o,
        "<section class=\"job {}\" id=\"job-{}\"><h3>{} {} — {}</h3><p class=\"meta\">Data: {}",
        class(j.status),
        i + 1,
        badge(j.status),
        esc(&j.id),
        esc(&j.what),
        esc(&tables::provenance(j))
    );
    if let Some(src) = &j.source {
        let l = &src.result.layout;
        let _ = write!(
            o,
            " · {} rank(s) on {} node(s), {} process(es) · {} repeat(s)",
            l.nranks,
            l.nodes,
            l.processes,
            src.result.repeats.len()
        );
    }
    if let Some(m) = tables::measured_with(j) {
        let _ = write!(o, "<br>Measured with: {}", esc(&m));
    }
    o.push_str(
        "</p><table class=\"checks\"><tr><th>Verdict</th><th>Criterion</th><th>Result</th></tr>",
    );
    for c in &j.criteria {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}{}</td></tr>",
            badge(c.status),
            prose(&c.text),
            prose(&c.message),
            c.diagnosis
                .as_ref()
                .map(|d| format!("<span class=\"diag\">Diagnosis: {}</span>", prose(&d.text)))
                .unwrap_or_default()
        );
    }
    o.push_str("</table>");
    if let Some(svg) = ChartExporter::job(j)? {
        let _ = write!(o, "<div class=\"chart\">{svg}</div>");
    }
    if let Some(soak) = super::soak::Soak::of(j) {
        let _ = write!(o, "<p class=\"soak\">{}</p>", esc(&soak.line()));
    }
    if let Some(svg) = ChartExporter::latency(j)? {
        let _ = write!(o, "<div class=\"chart\">{svg}</div>");
    }
    sizes(o, j);
    iterations(o, j);
    groups(o, j);
    transports(o, j);
    o.push_str("</section>");
    Ok(())
}

fn sizes(o: &mut String, j: &JobVerdict) {
    let rows = tables::sizes(j);
    if rows.is_empty() {
        return;
    }
    let base = j.baseline.is_some();
    o.push_str("<h4>Sizes (median over repeats)</h4><table><tr><th class=\"num\">requested</th><th class=\"num\">size (B)</th><th class=\"num\">count</th>\
        <th class=\"num\">time (us)</th><th class=\"num\">algbw</th><th class=\"num\">busbw</th><th class=\"num\">#wrong</th>\
        <th class=\"num\">in-place time</th><th class=\"num\">algbw</th><th class=\"num\">busbw</th><th class=\"num\">#wrong</th>");
    if base {
        o.push_str("<th class=\"num\">baseline busbw</th><th class=\"num\">ratio</th>");
    }
    o.push_str("</tr>");
    for r in rows {
        let (a, b) = (&r.out_of_place, &r.in_place);
        let _ = write!(o, "<tr{}>", if r.bad { " class=\"bad\"" } else { "" });
        for v in [
            &r.requested,
            &r.size,
            &r.count,
            &a.time,
            &a.algbw,
            &a.busbw,
            &a.wrong,
            &b.time,
            &b.algbw,
            &b.busbw,
            &b.wrong,
        ] {
            let _ = write!(o, "<td class=\"num\">{}</td>", esc(v));
        }
        if base {
            let _ = write!(
                o,
                "<td class=\"num\">{}</td><td class=\"num\">{}</td>",
                esc(&r.baseline),
                esc(&r.ratio)
            );
        }
        o.push_str("</tr>");
    }
    o.push_str("</table>");
}

fn groups(o: &mut String, j: &JobVerdict) {
    let (rows, note) = tables::groups(j);
    if rows.is_empty() {
        return;
    }
    let has_in = rows.iter().any(|g| !g.busbw_in.is_empty());
    let _ = write!(
        o,
        "<h4>Split groups — {}</h4><table><tr><th class=\"num\">group</th><th>ranks</th><th>GPUs (host:device)</th><th class=\"num\">busbw (GB/s)</th>{}<th class=\"num\">behind fastest</th></tr>",
        esc(&note.unwrap_or_default()),
        if has_in {
            "<th class=\"num\">in-place busbw</th>"
        } else {
            ""
        }
    );
    for g in rows {
        let _ = write!(
            o,
            "<tr{}><td class=\"num\">{}{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>{}<td class=\"num\">{}</td></tr>",
            if g.slowest { " class=\"slow\"" } else { "" },
            g.color,
            if g.slowest { " (slowest)" } else { "" },
            esc(&g.ranks),
            esc(&g.gpus),
            esc(&g.busbw),
            if has_in {
                format!("<td class=\"num\">{}</td>", esc(&g.busbw_in))
            } else {
                String::new()
            },
            esc(&g.behind)
        );
    }
    o.push_str("</table>");
}

fn transports(o: &mut String, j: &JobVerdict) {
    if j.source.is_none() {
        return;
    }
    let rows = tables::transports(j);
    if rows.is_empty() {
        o.push_str(&format!(
            "<p class=\"meta\">{}</p>",
            prose(tables::no_transports(j))
        ));
        return;
    }
    let comm = rows.iter().any(|t| !t.comm.is_empty());
    o.push_str("<h4>Transports (NCCL_DEBUG=INFO)</h4><table><tr>");
    if comm {
        o.push_str("<th>communicator</th>");
    }
    o.push_str("<th>ranks</th><th>transport</th><th>via</th><th>channels</th><th>host</th></tr>");
    for t in rows {
        o.push_str("<tr>");
        if comm {
            let _ = write!(o, "<td>{}</td>", esc(&t.comm));
        }
        let _ = write!(
            o,
            "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&t.pair),
            esc(&t.transport),
            esc(&t.detail),
            esc(&t.channels),
            esc(&t.host)
        );
    }
    o.push_str("</table>");
}

/// Per-iteration figures (nccl-tests `-I`), where the job recorded them.
fn iterations(o: &mut String, j: &JobVerdict) {
    let rows = super::iterations::rows(j);
    if rows.is_empty() {
        return;
    }
    o.push_str("<h4>Per-iteration times (us, over each iteration's slowest rank)</h4><table><tr><th class=\"num\">requested</th><th>placement</th><th class=\"num\">repeat</th>\
        <th class=\"num\">i_min</th><th class=\"num\">i_p50</th><th class=\"num\">i_p99</th><th class=\"num\">i_max</th><th class=\"num\">i_cv%</th><th>slowest rank</th><th>latest rank (between calls)</th></tr>");
    for r in rows {
        let _ = write!(
            o,
            "<tr><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td>",
            esc(&r.requested),
            esc(r.placement),
            r.repeat
        );
        for v in [&r.min, &r.p50, &r.p99, &r.max, &r.cv] {
            let _ = write!(o, "<td class=\"num\">{}</td>", esc(v));
        }
        let _ = write!(
            o,
            "<td>{}</td><td>{}</td></tr>",
            esc(&r.slowest),
            esc(&r.latest)
        );
    }
    o.push_str("</table>");
}
