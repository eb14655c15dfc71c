//! The signable acceptance report (#23) rendered from a fixture of its view model, without the
//! acceptance runner: 8 nodes, node03 dead in phase A, node05 failed in phase B, the 6 others
//! accepted. Cover, matrix with links into each phase's report, the phase sections through the
//! per-run renderers, escaping, and a headless print to PDF.

use baton::report::acceptance::{
    self, Acceptance, Cell, CellVerdict, ClusterVerdict, Drain, InventoryRow, Phase, PhaseVerdict,
    RunFacts,
};

use crate::common::{self, read};

const LOG: &str = include_str!("../data/nccl-tests/h200x2/all_reduce.txt");

fn hosts() -> Vec<String> {
    (1..=8).map(|i| format!("node{i:02}")).collect()
}

/// A phase's grade through the real grading path: the shipped all_reduce log against a plan
/// named for the phase.
fn grade(name: &str) -> baton::grade::Grade {
    let yaml = format!(
        "version: 1\nname: {name}\nbackend: nccl\nlaunch: {{ nodes: 1, ranks_per_node: 2 }}\ntests:\n  - name: allreduce\n    collective: all_reduce\n    sizes: {{ from: 8, to: 8G, factor: 2 }}\n    expect:\n      - busbw: \">= 100 GB/s\"\n        at: 1G\n"
    );
    let plan = match baton::plan::parse_str("p.yaml", &yaml) {
        Ok(l) => l.plan,
        Err(r) => panic!("{}", r.short()),
    };
    let results = baton::ingest::ingest(
        &[baton::ingest::LogInput {
            name: "all_reduce.txt",
            bytes: LOG.as_bytes(),
        }],
        Some("allreduce"),
    )
    .unwrap()
    .results;
    baton::grade::grade(&baton::grade::GradeInput {
        plan: &plan,
        plan_file: Some("p.yaml"),
        results: &[("results.json".to_string(), &results)],
        baseline: &baton::grade::Baseline::None,
        only: None,
        history: &baton::grade::History::None,
        files: None,
    })
}

fn phase(id: &str, name: &str, cells: Vec<Cell>, summary: &str) -> Phase {
    let failed = cells
        .iter()
        .any(|c| matches!(c.verdict, CellVerdict::Failed | CellVerdict::Dead));
    Phase {
        id: id.into(),
        name: name.into(),
        verdict: if failed {
            PhaseVerdict::Failed
        } else {
            PhaseVerdict::Passed
        },
        summary: summary.into(),
        duration_s: Some(125),
        report: Some(format!("phase-{id}/report/report.html")),
        cells,
        grade: Some(grade(&format!("phase-{id}"))),
    }
}

/// Each node's cell in a phase: `odd` gets its own verdict, `excluded` are gated out.
fn cells(odd: Option<(&str, CellVerdict, &str)>, excluded: &[&str]) -> Vec<Cell> {
    hosts()
        .into_iter()
        .map(|h| match odd {
            Some((o, v, why)) if o == h => Cell {
                host: h,
                verdict: v,
                reason: why.into(),
            },
            _ if excluded.contains(&h.as_str()) => Cell {
                host: h,
                verdict: CellVerdict::Excluded,
                reason: "failed an earlier phase".into(),
            },
            _ => Cell {
                host: h,
                verdict: CellVerdict::Passed,
                reason: "passed".into(),
            },
        })
        .collect()
}

/// The view model of the fixture acceptance.
pub fn fixture() -> Acceptance {
    let dead = "dead: did not answer after its set's step in round 1 <b>&</b>";
    let slow = "busbw 1.80 GB/s, 97% below the median pair (20.1 GB/s)";
    let phases = vec![
        phase(
            "a",
            "Phase A — every node",
            cells(Some(("node03", CellVerdict::Dead, dead)), &[]),
            "8 nodes alone; node03 did not answer",
        ),
        phase(
            "b",
            "Phase B — pairs",
            cells(Some(("node05", CellVerdict::Failed, slow)), &["node03"]),
            "21 pairs of the 7 nodes left; node05 slow in every pair",
        ),
        phase(
            "c",
            "Phase C — all_reduce",
            cells(None, &["node03", "node05"]),
            "the 6 nodes left, within 10% of phase B",
        ),
        phase(
            "d",
            "Phase D — alltoall",
            cells(None, &["node03", "node05"]),
            "within 15% of phase C's all_reduce",
        ),
        phase(
            "e",
            "Phase E — soak",
            cells(None, &["node03", "node05"]),
            "every repeat within ±5% of the median",
        ),
    ];
    let h = hosts();
    let pick = |names: &[&str]| -> Vec<String> {
        h.iter()
            .filter(|x| names.contains(&x.as_str()))
            .cloned()
            .collect()
    };
    let accepted: Vec<String> = h
        .iter()
        .filter(|x| !["node03", "node05"].contains(&x.as_str()))
        .cloned()
        .collect();
    Acceptance {
        cluster: "sim8 <lab>".into(),
        verdict: ClusterVerdict::AcceptedWithExclusions,
        summary: "6 of 8 nodes passed every phase; node03 (dead in A) and node05 (failed in B) are drained".into(),
        nodes: h.clone(),
        accepted,
        failed: pick(&["node03", "node05"]),
        suspect: Vec::new(),
        drain: vec![
            Drain {
                host: "node03".into(),
                reason: format!("phase A: {dead}"),
            },
            Drain {
                host: "node05".into(),
                reason: format!("phase B: {slow}"),
            },
        ],
        findings: Vec::new(),
        inventory: vec![
            InventoryRow {
                kind: "software",
                item: "NCCL".into(),
                value: "2.21.5".into(),
                nodes: "node[01-08]".into(),
            },
            InventoryRow {
                kind: "software",
                item: "driver".into(),
                value: "550.54.15".into(),
                nodes: "node[01-08]".into(),
            },
            InventoryRow {
                kind: "hardware",
                item: "GPU".into(),
                value: "8 × NVIDIA H200 (141 GB)".into(),
                nodes: "node[01-08]".into(),
            },
        ],
        run: RunFacts {
            file: "acceptance/cpu.yaml".into(),
            revisions: vec!["git 0151a8ed929d".into()],
            started: Some("2026-12-01T10:00:00Z".into()),
            finished: Some("2026-12-01T10:42:05Z".into()),
            duration_s: Some(2525),
            by: Some("alice".into()),
            host: Some("login01".into()),
            command: Some("baton accept acceptance/cpu.yaml -o out".into()),
            baton: "baton 0.1.0".into(),
        },
        phases,
    }
}

#[test]
fn the_cover_matrix_and_phases_render_with_links_and_escaping() {
    let a = fixture();
    let html = acceptance::html(&a).unwrap();
    for want in [
        "<h1>Cluster acceptance: sim8 &lt;lab&gt;</h1>",
        "ACCEPTED WITH EXCLUSIONS",
        "<td class=\"num\">6</td><td><code>node[01-02,04,06-08]</code>",
        "<td class=\"num\">2</td><td><code>node[03,05]</code>",
        "round 1 &lt;b&gt;&amp;&lt;/b&gt;",
        "<h3>Accepted by</h3>",
        "git 0151a8ed929d",
        "8 × NVIDIA H200 (141 GB)",
        "<a href=\"phase-a/report/report.html#node-node03\">dead</a>",
        "<a href=\"phase-b/report/report.html#node-node05\">failed</a>",
        "<a href=\"phase-c/report/report.html#node-node05\">excluded</a>",
        "<section class=\"phase\" id=\"phase-e\">",
        // The phase's section is the per-run report's.
        "<h1>Acceptance report: phase-c</h1>",
        "@media print",
        "break-before: page",
    ] {
        assert!(html.contains(want), "no `{want}` in the HTML");
    }
    assert!(!html.contains("<b>&"), "a reason is text, never markup");
    let md = acceptance::markdown(&a);
    for want in [
        "# Cluster acceptance: sim8 &lt;lab>",
        "| Accepted | 6 | `node[01-02,04,06-08]` |",
        "| Failed | 2 | `node[03,05]` |",
        "[dead](phase-a/report/report.html#node-node03)",
        "| Handed over by | Accepted by |",
        "### Run",
        "](phase-c/report/charts/",
    ] {
        assert!(md.contains(want), "no `{want}` in the Markdown:\n{md}");
    }
}

/// The page prints: headless Chromium writes a PDF with the cover, the matrix and a page (or
/// more) per phase.
#[test]
fn the_acceptance_report_prints_to_pdf() {
    let d = common::tmp("acceptance-print");
    let files = acceptance::write(&d, &fixture()).unwrap();
    assert_eq!(files.len(), 2);
    let Some(bin) = common::chromium::find() else {
        println!("SKIPPED: chromium not found (scripts/install-deps installs it)");
        return;
    };
    let html = d.join(acceptance::HTML);
    let pdf = d.join("acceptance.pdf");
    let pages = common::chromium::print_pages(bin, &html, &pdf, &d.join("profile"));
    assert!(pages >= 7, "cover, matrix and 5 phases: {pages} page(s)");
    // The cover, signature block included, is one page.
    let page = read(&html);
    let cut = page.find("<section class=\"matrix\">").expect("a matrix");
    let cover = common::write(
        &d,
        "cover.html",
        &format!("{}</main></body></html>", &page[..cut]),
    );
    let one = common::chromium::print_pages(bin, &cover, &d.join("cover.pdf"), &d.join("profile"));
    assert_eq!(one, 1, "the cover prints on one page");
    assert!(read(&d.join(acceptance::MARKDOWN)).starts_with("# Cluster acceptance"));
}
