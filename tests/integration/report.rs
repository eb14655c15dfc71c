//! The handover report (`baton report`, `baton grade --report`) and baselines (`baton baseline`):
//! contents and order, self-containment, the SVG chart, and rendering in headless Chromium.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// The healthy sweep graded by a plan whose alltoall limit it misses, and the NET/Socket run
/// graded against the healthy one.
fn setup(d: &Path) -> (PathBuf, PathBuf) {
    let healthy = healthy(d);
    let strict = read(&plan("h200x2.yaml")).replace(
        "\">= 300 GB/s\"\n        at: 1G..4G",
        "\">= 400 GB/s\"\n        at: 1G..4G",
    );
    let strict = write(d, "strict.yaml", &strict);
    let mixed = d.join("mixed");
    let o = baton(&["report", p(&strict), p(&healthy), "-o", p(&mixed)]);
    assert_eq!(
        code(&o),
        0,
        "report exits 0 whatever the verdict: {}",
        show(&o)
    );
    let socket = d.join("socket");
    grade_socket(d, &["--report", p(&socket)]);
    (mixed, socket)
}

#[test]
fn markdown_puts_the_verdict_and_failures_first() {
    let d = tmp("report_markdown");
    let (mixed, socket) = setup(&d);
    let md = read(&mixed.join("report.md"));
    assert!(md.starts_with("# Acceptance report: h200x2-acceptance\n\n**Verdict: ❌ FAIL** — 1 of 4 job(s) failed, 0 warned, 3 passed."), "{md}");
    let summary = &md[md.find("## Verdict summary").unwrap()..md.find("## Jobs").unwrap()];
    let order: Vec<usize> = ["`alltoall`", "`allreduce`", "`allgather`", "`broadcast`"]
        .iter()
        .map(|id| {
            summary
                .find(id)
                .unwrap_or_else(|| panic!("{id} in {summary}"))
        })
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "failures first, then plan order: {summary}"
    );
    assert!(
        summary.contains("busbw 331.45 GB/s < 400 GB/s at 1G (alltoall float, out-of-place)"),
        "{summary}"
    );
    // Per job, failing jobs first: checks, chart, size table; the environment at the end.
    let jobs = &md[md.find("## Jobs").unwrap()..];
    assert!(
        jobs.find("`alltoall`").unwrap() < jobs.find("`allreduce`").unwrap(),
        "{jobs}"
    );
    assert!(
        md.contains("![busbw vs size for allreduce](charts/01-allreduce.svg)"),
        "{md}"
    );
    assert!(mixed.join("charts/01-allreduce.svg").exists());
    assert!(md.contains("| 8G | 8589934592 | 2147483648 | 24855.10 | 345.60 | 345.60 | 0 | 24831.90 | 345.92 | 345.92 | 0 |"), "{md}");
    assert!(md.contains("| NCCL | 2.28.3 |"), "{md}");
    assert!(
        md.contains("Transports: not captured (use `baton run --capture-transport`, or ingest logs taken with NCCL_DEBUG=INFO)."),
        "{md}"
    );
    let md = read(&socket.join("report.md"));
    assert!(
        md.contains("| 0 → 1 | NET/Socket | NET/Socket/0 | 0-1 (2) | vm |"),
        "{md}"
    );
    assert!(md.contains("baseline busbw | ratio |"), "{md}");
    assert!(md.contains("| 256M | 268435456 | 67108864 | 80589.50 | 3.33 | 3.33 | 0 | 70456.80 | 3.81 | 3.81 | 0 | 300.63 | 0.01 |"), "{md}");
    assert!(
        md.contains("Diagnosis")
            || md.contains("transport changed from P2P (baseline) to NET/Socket"),
        "{md}"
    );
}

#[test]
fn html_is_self_contained_and_the_chart_has_its_lines() {
    let d = tmp("report_html");
    let (_, socket) = setup(&d);
    let html = read(&socket.join("report.html"));
    for banned in ["<script", "<link", "src=", "url(", "@import", "https://"] {
        assert!(
            !html.contains(banned),
            "{banned} makes the report need something outside it"
        );
    }
    // The only http: string is the SVG namespace, which is never fetched.
    assert_eq!(
        html.matches("http://").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
    assert!(html.contains("<svg"));
    let svg = read(&socket.join("charts/01-nvlink.svg"));
    assert!(
        svg.contains("busbw &gt;= 250 GB/s at 256M") || svg.contains("busbw >= 250 GB/s at 256M"),
        "threshold line"
    );
    assert!(svg.contains("baseline (out-of-place)"), "baseline overlay");
    assert!(
        svg.contains("\n256M\n") && svg.contains("\n1M\n"),
        "binary size labels on a log axis"
    );
    assert!(
        svg.contains("stroke-dasharray") || svg.matches("<line").count() > 10,
        "dashed baseline"
    );
}

/// Renders `html` headless; returns (console lines, DOM) or `None` when Chromium is absent.
fn chromium(html: &Path, shot: Option<&Path>) -> Option<(Vec<String>, String)> {
    let bin = ["chromium", "chromium-browser"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })?;
    let profile = html.with_extension("profile");
    let url = format!("file://{}", html.display());
    let mut args = vec![
        "60".to_string(),
        bin.to_string(),
        "--headless".into(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--no-first-run".into(),
        format!("--user-data-dir={}", profile.display()),
        "--enable-logging=stderr".into(),
        "--v=0".into(),
    ];
    match shot {
        Some(s) => args.extend([
            format!("--screenshot={}", s.display()),
            "--window-size=1280,2000".into(),
        ]),
        None => args.push("--dump-dom".into()),
    }
    args.push(url);
    let o = Command::new("timeout")
        .args(&args)
        .output()
        .expect("timeout runs");
    assert!(
        o.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let console = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect();
    Some((console, String::from_utf8_lossy(&o.stdout).into_owned()))
}

#[test]
fn html_renders_in_chromium_without_console_errors() {
    let d = tmp("report_chromium");
    let (mixed, socket) = setup(&d);
    // The check itself sees console errors: a page that logs one is caught.
    let probe = write(
        &d,
        "probe.html",
        "<!DOCTYPE html><html><body><script>console.error('probe error')</script></body></html>",
    );
    let Some((console, _)) = chromium(&probe, None) else {
        println!(
            "SKIPPED: chromium not found (apt-get install chromium; scripts/ci-deps-issue5.sh)"
        );
        return;
    };
    assert!(
        console.iter().any(|l| l.contains("probe error")),
        "console capture works: {console:?}"
    );
    for dir in [&mixed, &socket] {
        let html = dir.join("report.html");
        let (console, dom) = chromium(&html, None).expect("chromium present");
        assert!(
            console.is_empty(),
            "{}: console output {console:?}",
            html.display()
        );
        assert!(
            dom.contains("Acceptance report: "),
            "rendered: {}",
            &dom[..dom.len().min(500)]
        );
        assert!(dom.contains("<svg"), "charts rendered inline");
        assert!(dom.contains("Verdict summary"));
        let shot = dir.join("report.png");
        let (console, _) = chromium(&html, Some(&shot)).expect("chromium present");
        assert!(console.is_empty(), "{console:?}");
        let png = std::fs::read(&shot).expect("screenshot written");
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 20_000,
            "a real page, not a blank one"
        );
    }
}

#[test]
fn baselines_save_and_compare_side_by_side() {
    let d = tmp("report_baseline");
    let (base, sock) = base_and_socket(&d);
    let extra = ingest(&d, "extra.json", &[&fixture("broadcast.txt")], None);
    let saved = d.join("baselines/last-good.json");
    let o = baton(&["baseline", "save", p(&base), p(&extra), "-o", p(&saved)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(results(&saved).jobs.len(), 2);
    let o = baton(&[
        "baseline",
        "save",
        p(&base),
        p(&base),
        "-o",
        p(&d.join("dup.json")),
    ]);
    assert_eq!(code(&o), 2, "the same job twice is refused: {}", show(&o));
    let o = baton(&["baseline", "compare", p(&saved), p(&sock)]);
    assert_eq!(code(&o), 1, "a regression exits 1: {}", show(&o));
    let r = baton(&["baseline", "compare", p(&saved), p(&sock), "--report-only"]);
    assert_eq!(code(&r), 0, "{}", show(&r));
    assert_eq!(stdout(&r), stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("transports: old P2P, new NET/Socket"), "{out}");
    assert!(
        out.contains("    size  old time (us)  new time (us)  old busbw  new busbw  new/old"),
        "{out}"
    );
    assert!(
        out.contains("      1M          17.07         548.29      61.41       1.91     0.03"),
        "{out}"
    );
    assert!(
        out.contains("      1G        3274.22              -     327.94          -        -"),
        "{out}"
    );
    assert!(
        out.contains("diagnosis: transport changed from P2P (baseline) to NET/Socket"),
        "{out}"
    );
    assert!(
        out.contains("has no counterpart"),
        "the broadcast job of the baseline: {out}"
    );
    let o = baton(&["baseline", "compare", p(&base), p(&base), "--markdown"]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let out = stdout(&o);
    assert!(
        out.contains("| 256M | 892.92 | 892.92 | 300.63 | 300.63 | 1.00 |"),
        "{out}"
    );
    assert!(out.contains("no size is more than 5% slower"), "{out}");
}

/// `(x1, x2, y)` of every polyline drawn in `color` (`#RRGGBB`) with two points: threshold
/// segments, legend samples and dashes.
fn segments(svg: &str, color: &str) -> Vec<(f64, f64, f64)> {
    svg.split("<polyline")
        .skip(1)
        .filter(|l| l.contains(&format!("stroke=\"{color}\"")))
        .filter_map(|l| {
            let pts = l.split("points=\"").nth(1)?.split('"').next()?;
            let xy: Vec<(f64, f64)> = pts
                .split_whitespace()
                .filter_map(|p| {
                    let (x, y) = p.split_once(',')?;
                    Some((x.parse().ok()?, y.parse().ok()?))
                })
                .collect();
            match xy.as_slice() {
                [a, b] => Some((a.0, b.0, a.1)),
                _ => None,
            }
        })
        .collect()
}

/// `cy` of every filled marker drawn in `color`, in drawing (size) order.
fn marker_heights(svg: &str, color: &str) -> Vec<f64> {
    svg.split("<circle")
        .skip(1)
        .filter(|c| c.contains(&format!("fill=\"{color}\"")))
        .filter_map(|c| c.split("cy=\"").nth(1)?.split('"').next()?.parse().ok())
        .collect()
}

#[test]
fn charts_read_across_the_whole_sweep() {
    let d = tmp("report_charts");
    let (mixed, _) = setup(&d);
    let svg = read(&mixed.join("charts/01-allreduce.svg"));
    // 8 B .. 8 GiB at 0.00x .. 345 GB/s: on a log busbw axis the small sizes climb, on a
    // linear one the 16 sizes up to 256K all sit on the zero line.
    let ys = marker_heights(&svg, "#1F77B4");
    assert_eq!(ys.len(), 31, "one marker per size: {ys:?}");
    let small = &ys[..16];
    let spread = small.iter().copied().fold(f64::MIN, f64::max)
        - small.iter().copied().fold(f64::MAX, f64::min);
    assert!(spread > 100.0, "8 B..256K span {spread} px: {small:?}");
    assert!(
        small.windows(2).filter(|w| w[1] < w[0]).count() >= 12,
        "busbw rises with size up to 256K: {small:?}"
    );
    assert!(svg.contains("busbw (GB/s, log scale)"), "axis says so");
    // In-place is dashed (many short segments) with hollow markers, out-of-place solid.
    assert!(
        svg.contains(">in-place<") || svg.contains("\nin-place\n"),
        "legend"
    );
    let dashes = segments(&svg, "#FF7F0E");
    assert!(dashes.len() > 40, "dashed in-place: {}", dashes.len());
    assert!(
        svg.split("<circle")
            .any(|c| c.contains("fill=\"none\"") && c.contains("stroke=\"#FF7F0E\"")),
        "hollow in-place markers"
    );
    assert!(segments(&svg, "#1F77B4").len() < 5, "solid out-of-place");
    // The `time` criterion gets its own chart, with its limit over 8..64K only.
    let md = read(&mixed.join("report.md"));
    assert!(
        md.contains("![time vs size for allreduce](charts/01-allreduce-time.svg)"),
        "{md}"
    );
    let time = read(&mixed.join("charts/01-allreduce-time.svg"));
    assert!(time.contains("time (us, log scale)"));
    let limit = segments(&time, "#D62728")
        .into_iter()
        .max_by(|a, b| (a.1 - a.0).total_cmp(&(b.1 - b.0)))
        .expect("threshold line");
    assert!(
        limit.1 - limit.0 > 100.0 && limit.1 < 560.0,
        "8..64K of 8..8G: {limit:?}"
    );
    assert!(
        !mixed.join("charts/02-allgather-time.svg").exists(),
        "no time criterion, no time chart"
    );
}

#[test]
fn the_report_opens_with_when_what_and_which_plan_version() {
    if Command::new("git").arg("--version").output().is_err() {
        println!("SKIPPED: git not found");
        return;
    }
    let d = tmp("report_meta");
    let healthy = healthy(&d);
    let repo = d.join("repo");
    std::fs::create_dir_all(repo.join("plans")).unwrap();
    std::fs::create_dir_all(repo.join("baselines")).unwrap();
    std::fs::copy(&healthy, repo.join("baselines/good.json")).unwrap();
    let text = read(&plan("h200x2.yaml")).replace(
        "backend: nccl\n",
        "backend: nccl\nbaseline: ../baselines/./good.json\n",
    );
    let planf = write(&repo.join("plans"), "p.yaml", &text);
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {}", show(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "plan"]);
    let head = git(&["rev-parse", "HEAD"]);
    let out = d.join("out");
    // The baseline is outside the plan's directory: only a trusted plan reads it (docs/trust.md).
    let o = baton(&[
        "--trust-plan",
        "report",
        p(&planf),
        p(&healthy),
        "-o",
        p(&out),
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let md = read(&out.join("report.md"));
    let top = &md[..md.find("## Verdict summary").expect("summary")];
    assert!(top.starts_with("# Acceptance report: h200x2-acceptance\n\n**Verdict:"));
    for want in [
        "| Plan | h200x2-acceptance — NVLink acceptance of a two-GPU H200 node |".to_string(),
        format!("| Plan revision | git {} |", &head[..12]),
        "| Versions | NCCL 2.28.3".into(),
        "| Hosts | vm (1 host) |".into(),
        "| Iterations | iters 20, warmup ".into(),
        "| Produced by | baton ".into(),
        // Reached as plans/../baselines/./good.json, shown as the file it is (relative to the
        // current directory, which holds the test's scratch directory).
        "report_meta/repo/baselines/good.json` |".into(),
        "report_meta/repo/plans/p.yaml` |".into(),
    ] {
        assert!(top.contains(&want), "{want} in:\n{top}");
    }
    assert!(top.contains("| Run | "), "{top}");
    for unclean in ["/./", "/../", "//"] {
        assert!(!md.contains(unclean), "{unclean} in a path:\n{top}");
    }
    let html = read(&out.join("report.html"));
    assert!(
        html.contains("<th>Plan revision</th>"),
        "the HTML has it too"
    );
    // An edit after the commit: the report says the plan is not the commit's.
    std::fs::write(&planf, text.replace("two-GPU", "2-GPU")).unwrap();
    let o = baton(&["report", p(&planf), p(&healthy), "-o", p(&out)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let md = read(&out.join("report.md"));
    assert!(
        md.contains(&format!(
            "| Plan revision | git {} (dirty: the plan differs from this commit) |",
            &head[..12]
        )),
        "{md}"
    );
    // Outside git there is no revision line, and no error.
    let o = baton(&[
        "report",
        p(&plan("h200x2.yaml")),
        p(&healthy),
        "-o",
        p(&d.join("plain")),
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
}

#[test]
fn html_shows_code_as_code_never_as_backticks() {
    let d = tmp("report_backticks");
    let (mixed, socket) = setup(&d);
    for dir in [&mixed, &socket] {
        let html = read(&dir.join("report.html"));
        let outside_pre: String = html
            .split("<pre>")
            .enumerate()
            .map(|(i, part)| {
                if i == 0 {
                    part
                } else {
                    part.split_once("</pre>").map_or("", |x| x.1)
                }
            })
            .collect();
        assert!(
            !outside_pre.contains('`'),
            "{}: {}",
            dir.display(),
            &outside_pre[outside_pre.find('`').unwrap().saturating_sub(200)..]
                [..300.min(outside_pre.len())]
        );
    }
    let html = read(&mixed.join("report.html"));
    assert!(
        html.contains("<code>baton run --capture-transport</code>"),
        "hints keep their code spans as code"
    );
}

#[test]
fn html_prints_white_one_test_per_page() {
    let d = tmp("report_print");
    let (mixed, _) = setup(&d);
    let html = read(&mixed.join("report.html"));
    let print = &html[html.find("@media print").expect("print styles")..];
    for rule in [
        "background: #fff",
        "break-before: page",
        "break-inside: avoid",
        ".chart svg { width: 100%",
    ] {
        assert!(print.contains(rule), "{rule}");
    }
    let Some(bin) = crate::common::chromium::find() else {
        println!("SKIPPED: chromium not found");
        return;
    };
    let pdf = mixed.join("report.pdf");
    // The summary page, then a page per job (4 jobs).
    let pages = crate::common::chromium::print_pages(
        bin,
        &mixed.join("report.html"),
        &pdf,
        &mixed.join("profile-pdf"),
    );
    assert!(pages >= 5, "pages: {pages}");
}
