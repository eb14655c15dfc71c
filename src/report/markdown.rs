//! The Markdown report: what a vendor hands over and an operator files in a ticket. Verdict
//! first (failures first), then per job its checks, chart, sizes, groups and transports, then
//! the environment. Charts are the SVG files beside it in `charts/`.

use std::fmt::Write;

use super::escape::{self, code};
use super::{Exporter, ReportError, ReportInput, chart, meta, tables};
use crate::grade::{Grade, JobVerdict, Status};

pub struct MarkdownExporter;

/// Every value from input goes through this or [`code`]: see `escape`.
fn cell(s: &str) -> String {
    escape::text(s)
}

fn badge(s: Status) -> &'static str {
    match s {
        Status::Pass => "✅ PASS",
        Status::Warn => "⚠️ WARN",
        Status::Fail => "❌ FAIL",
        Status::Skipped => "➖ SKIP",
    }
}

/// The sentence under the title: how many jobs failed and what was graded.
pub fn headline(g: &Grade) -> String {
    format!(
        "{} of {} job(s) failed, {} warned, {} passed{}",
        g.count(Status::Fail),
        g.jobs.len(),
        g.count(Status::Warn),
        g.count(Status::Pass) + g.count(Status::Skipped),
        super::evidence::mismatch_summary(g)
    )
}

impl Exporter for MarkdownExporter {
    fn export(&self, input: &ReportInput<'_>) -> Result<Vec<u8>, ReportError> {
        Ok(body(input.grade).into_bytes())
    }
}

/// The report of one grade: the acceptance report holds one per phase.
pub(super) fn body(g: &Grade) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Acceptance report: {}\n", cell(&g.plan));
    let _ = writeln!(o, "**Verdict: {}** — {}.\n", badge(g.status), headline(g));
    let _ = writeln!(o, "## Run\n\n| | |\n|---|---|");
    for m in meta::rows(g) {
        let mut v = cell(&m.value);
        let paths: Vec<String> = m.paths.iter().map(|p| code(p)).collect();
        if !paths.is_empty() {
            v = if v.is_empty() {
                paths.join(", ")
            } else {
                format!("{} ({v})", paths.join(", "))
            };
        }
        let _ = writeln!(o, "| {} | {v} |", m.label);
    }
    o.push('\n');
    let _ = writeln!(o, "## Verdict summary\n");
    let _ = writeln!(o, "| Verdict | Job | Collective | Checks | First problem |");
    let _ = writeln!(o, "|---|---|---|---|---|");
    for r in tables::summary(g) {
        if !g
            .jobs
            .iter()
            .any(|j| j.id == r.id && super::nodes::shown(j))
        {
            continue;
        }
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            badge(r.status),
            code(&r.id),
            cell(&r.what),
            cell(&r.checks),
            cell(&r.problem)
        );
    }
    for u in &g.unmatched {
        let _ = writeln!(o, "\n> Unused results: {}", cell(u));
    }
    o.push('\n');
    o.push_str(&super::nodes::markdown(g));
    let gpu = super::gpu_pairs::matrices(g);
    if !gpu.is_empty() {
        o.push_str("## GPU pairs\n\n");
        for (k, m) in gpu.iter().enumerate() {
            let caption = cell(&super::gpu_pairs::caption(m));
            let _ = writeln!(
                o,
                "![{caption}]({})\n\n{caption}\n",
                super::gpu_pairs::file(k)
            );
        }
    }
    let _ = writeln!(o, "\n## Jobs");
    for (i, j) in g.jobs_by_severity_indexed() {
        if super::nodes::shown(j) {
            job(&mut o, i, j);
        }
    }
    let _ = writeln!(o, "\n## Environment\n");
    let _ = writeln!(o, "| | |\n|---|---|");
    for (k, v) in tables::environment(g) {
        let _ = writeln!(o, "| {} | {} |", cell(&k), cell(&v));
    }
    if let Some(t) = &g.environment.topology {
        let fence = escape::block_fence(t);
        let _ = writeln!(
            o,
            "\nTopology (`nvidia-smi topo -m`):\n\n{fence}\n{t}\n{fence}"
        );
    }
    o
}

fn job(o: &mut String, i: usize, j: &JobVerdict) {
    let _ = writeln!(
        o,
        "\n### {} {} — {}\n",
        badge(j.status),
        code(&j.id),
        cell(&j.what)
    );
    let _ = writeln!(o, "Data: {}", cell(&tables::provenance(j)));
    if let Some(src) = &j.source {
        let l = &src.result.layout;
        let _ = writeln!(
            o,
            "; {} rank(s) on {} node(s), {} process(es); {} repeat(s).",
            l.nranks,
            l.nodes,
            l.processes,
            src.result.repeats.len()
        );
    }
    if let Some(m) = tables::measured_with(j) {
        let _ = writeln!(o, "\nMeasured with: {}", cell(&m));
    }
    let _ = writeln!(o, "\n| Verdict | Criterion | Result |\n|---|---|---|");
    for c in &j.criteria {
        let _ = writeln!(
            o,
            "| {} | {} | {} |",
            badge(c.status),
            cell(&c.text),
            cell(&c.full_message())
        );
    }
    if j.source.is_none() {
        return;
    }
    let soak = super::soak::Soak::of(j);
    let _ = writeln!(
        o,
        "\n![busbw {} for {}]({})\n",
        if soak.is_some() {
            "per repeat over time"
        } else {
            "vs size"
        },
        cell(&j.id),
        chart::file_name(i, &j.id)
    );
    if let Some(s) = soak {
        let _ = writeln!(o, "{}\n", cell(&s.line()));
    }
    if matches!(chart::ChartExporter::latency(j), Ok(Some(_))) {
        let _ = writeln!(
            o,
            "![time vs size for {}]({})\n",
            cell(&j.id),
            chart::time_file_name(i, &j.id)
        );
    }
    let rows = tables::sizes(j);
    let has_base = j.baseline.is_some();
    let _ = write!(
        o,
        "| requested | size (B) | count | time (us) | algbw | busbw | #wrong | in-place time | algbw | busbw | #wrong |"
    );
    let _ = writeln!(
        o,
        "{}",
        if has_base {
            " baseline busbw | ratio |"
        } else {
            ""
        }
    );
    let _ = writeln!(
        o,
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|{}",
        if has_base { "---:|---:|" } else { "" }
    );
    for r in rows {
        let (a, b) = (&r.out_of_place, &r.in_place);
        let _ = write!(
            o,
            "| {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.requested,
            if r.bad { " ❌" } else { "" },
            r.size,
            r.count,
            a.time,
            a.algbw,
            a.busbw,
            a.wrong,
            b.time,
            b.algbw,
            b.busbw,
            b.wrong
        );
        let _ = writeln!(
            o,
            "{}",
            if has_base {
                format!(" {} | {} |", r.baseline, r.ratio)
            } else {
                String::new()
            }
        );
    }
    iterations(o, j);
    let (groups, note) = tables::groups(j);
    if !groups.is_empty() {
        let has_in = groups.iter().any(|g| !g.busbw_in.is_empty());
        let _ = writeln!(o, "\nSplit groups — {}:\n", note.unwrap_or_default());
        let _ = writeln!(
            o,
            "| Group | Ranks | GPUs (host:device) | busbw (GB/s) |{} behind fastest |\n|---:|---|---|---:|{}---:|",
            if has_in { " in-place busbw |" } else { "" },
            if has_in { "---:|" } else { "" }
        );
        for g in groups {
            let _ = writeln!(
                o,
                "| {}{} | {} | {} | {} |{} {} |",
                g.color,
                if g.slowest { " (slowest)" } else { "" },
                cell(&g.ranks),
                cell(&g.gpus),
                g.busbw,
                if has_in {
                    format!(" {} |", g.busbw_in)
                } else {
                    String::new()
                },
                g.behind
            );
        }
    }
    let links = tables::transports(j);
    if links.is_empty() {
        let _ = writeln!(o, "\n{}", tables::no_transports(j));
    } else {
        let _ = writeln!(
            o,
            "\n| Communicator | Ranks | Transport | via | Channels | Host |\n|---|---|---|---|---|---|"
        );
        for t in links {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} |",
                cell(&t.comm),
                cell(&t.pair),
                cell(&t.transport),
                cell(&t.detail),
                cell(&t.channels),
                cell(&t.host)
            );
        }
    }
    job_env(o, j);
}

/// The variables this job's plan or log set (`results::env::shown_vars`): they belong to it,
/// not to the run-wide environment.
fn job_env(o: &mut String, j: &JobVerdict) {
    let Some(src) = &j.source else { return };
    let vars = crate::results::env::shown_vars(&src.result);
    if !vars.is_empty() {
        let shown: Vec<String> = vars
            .iter()
            .map(|(k, v)| code(&format!("{k}={v}")))
            .collect();
        let _ = writeln!(
            o,
            "
Set for this job: {}",
            shown.join(", ")
        );
    }
}

/// Per-iteration figures (nccl-tests `-I`), where the job recorded them.
fn iterations(o: &mut String, j: &JobVerdict) {
    let rows = super::iterations::rows(j);
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\nPer-iteration times (us, over each iteration's slowest rank):\n\n| requested | placement | repeat | i_min | i_p50 | i_p99 | i_max | i_cv% | slowest rank | latest rank (between calls) |\n|---:|---|---:|---:|---:|---:|---:|---:|---|---|"
    );
    for r in rows {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.requested,
            r.placement,
            r.repeat,
            r.min,
            r.p50,
            r.p99,
            r.max,
            r.cv,
            cell(&r.slowest),
            cell(&r.latest)
        );
    }
}
