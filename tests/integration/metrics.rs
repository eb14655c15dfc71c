//! `--metrics`: node_exporter's textfile format, checked by a real `promtool check metrics`
//! (hostile host and job names included), read by a real node_exporter and scraped by a real
//! Prometheus on localhost, whose HTTP API then answers the run's per-node verdicts.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::services::{http_get, prometheus, until};
use common::*;

/// `promtool check metrics` of `file`: `Some(problems)` when promtool is there.
fn promtool(file: &Path) -> Option<String> {
    let Ok(mut c) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(file).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        common::missing(
            "promtool",
            "BATON_REQUIRE_PROMETHEUS",
            "not installed (scripts/install-deps installs prometheus)",
        );
        return None;
    };
    let o = c.wait().unwrap();
    let mut out = String::new();
    use std::io::Read;
    c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    c.stderr.take().unwrap().read_to_string(&mut out).unwrap();
    assert!(
        o.success(),
        "promtool check metrics {}: {out}",
        file.display()
    );
    Some(out)
}

/// A node-set run over n[1-4] with n3 unreachable, its metrics into `dir`.
#[cfg(feature = "mpi")]
fn node_set_run(d: &Path, dir: &Path) -> PathBuf {
    let agent = common::localsets::agent(d, &["n3"], None);
    let plan = write(
        d,
        "p.yaml",
        "version: 1\nname: nightly\nbackend: mpi\nlaunch: { ranks_per_node: 1 }\nnodes: { hostlist: \"n[1-4]\" }\ndefaults: { iters: 2, warmup: 1, timeout: 20s }\ntests:\n  - name: e\n    over: each-node\n    collective: all_reduce\n    sizes: [8, 64K]\n    expect: [ { wrong: 0 } ]\n",
    );
    let out = d.join("out");
    let o = common::localsets::baton_over(
        &agent,
        &["run", p(&plan), "-o", p(&out), "--metrics", p(dir)],
    );
    // n3 failed its set: a runtime failure of the run, and a failed criterion.
    assert_eq!(code(&o), 3, "n3 fails: {}", show(&o));
    assert!(stdout(&o).contains("metrics: "), "{}", show(&o));
    out.join("results.json")
}

#[cfg(feature = "mpi")]
#[test]
fn promtool_passes_and_prometheus_answers_the_node_verdicts() {
    let d = tmp("metrics-prometheus");
    let dir = d.join("textfile");
    std::fs::create_dir_all(&dir).unwrap();
    let results = node_set_run(&d, &dir);
    let file = dir.join("baton-nightly.prom");
    let text = read(&file);
    for want in [
        "baton_node_verdict{plan=\"nightly\",host=\"n3\",verdict=\"failed\"} 1",
        "baton_node_verdict{plan=\"nightly\",host=\"n1\",verdict=\"passed\"} 1",
        "baton_busbw_bytes_per_second{plan=\"nightly\",job_id=\"e@r1:n1\",size_bytes=\"65536\"}",
        "baton_time_seconds{plan=\"nightly\",job_id=\"e@r1:n1\",size_bytes=\"8\"}",
        "baton_run_info{plan=\"nightly\",revision=\"\",baton_version=\"",
        "baton_run_exit_code{plan=\"nightly\"} 3",
        "baton_run_status{plan=\"nightly\",status=\"fail\"} 1",
    ] {
        assert!(text.contains(want), "{want} in {text}");
    }
    if promtool(&file).is_none() {
        return;
    }
    // Hostile names: the results' host n4 and its set's job renamed to break any naive writer.
    let hostile = "n4\\\"} 99\\nbaton_evil{x=\\\"1\\\"} 1\\r\\n# TYPE baton_evil counter\\\\";
    let renamed = read(&results)
        .replace("\"n4\"", &format!("\"{hostile}\""))
        .replace(":n4\"", &format!(":{hostile}\""));
    let evil = write(&d, "evil.json", &renamed);
    let evil_prom = d.join("evil.prom");
    let o = baton(&[
        "grade",
        p(&d.join("p.yaml")),
        p(&evil),
        "--metrics",
        p(&evil_prom),
    ]);
    assert!([0, 1].contains(&code(&o)), "{}", show(&o));
    let text = read(&evil_prom);
    assert!(!text.lines().any(|l| l.starts_with("baton_evil")), "{text}");
    promtool(&evil_prom);
    // node_exporter reads the directory; Prometheus scrapes it; its API answers per node.
    let Some((_ne, _prom, port)) = prometheus(&d, &dir) else {
        return;
    };
    let query = "/api/v1/query?query=baton_node_verdict%3D%3D1";
    let answer = until(Duration::from_secs(60), || {
        http_get(port, query).filter(|b| b.contains("\"n3\"") && b.contains("\"n1\""))
    })
    .unwrap_or_else(|| {
        panic!(
            "no verdicts from Prometheus: {}",
            read(&d.join("prometheus.log"))
        )
    });
    let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
    let mut verdicts: Vec<(String, String)> = v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let m = &r["metric"];
            (
                m["host"].as_str().unwrap().into(),
                m["verdict"].as_str().unwrap().into(),
            )
        })
        .collect();
    verdicts.sort();
    let want: Vec<(String, String)> = [
        ("n1", "passed"),
        ("n2", "passed"),
        ("n3", "failed"),
        ("n4", "passed"),
    ]
    .iter()
    .map(|(h, v)| (h.to_string(), v.to_string()))
    .collect();
    assert_eq!(verdicts, want);
}

#[test]
fn grade_writes_metrics_atomically_and_never_over_an_input() {
    let d = tmp("metrics-grade");
    let r = healthy(&d);
    let plan = plan("h200x2.yaml");
    let m = d.join("m.prom");
    let o = baton(&["grade", p(&plan), p(&r), "--metrics", p(&m)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let text = read(&m);
    assert!(
        text.contains("baton_busbw_bytes_per_second{plan=\""),
        "{text}"
    );
    assert!(text.contains("baton_job_status{"), "{text}");
    assert!(
        !text.contains("baton_node_verdict"),
        "no node sets, no node verdicts: {text}"
    );
    promtool(&m);
    let before = read(&r);
    let o = baton(&["grade", p(&plan), p(&r), "--metrics", p(&r)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert_eq!(read(&r), before);
    let leftovers: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp."))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn run_refuses_metrics_over_its_plan_before_running() {
    let (dir, plan, out) = plan_dir(
        "metrics-run-input",
        &read(Path::new("plans/examples/quickstart.yaml")),
    );
    let before = read(&plan);
    let o = baton(&["run", p(&plan), "-o", p(&out), "--metrics", p(&plan)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("--metrics"), "{}", show(&o));
    assert_eq!(read(&plan), before, "the plan is left as it was");
    assert!(!out.join("results.json").exists(), "nothing ran");
    let _ = std::fs::remove_dir_all(dir);
}

/// Iteration p99 where iterations were timed, and what node evidence says moved, per host,
/// device and counter (issue #28's "iteration p99 where recorded, per node evidence deltas").
#[test]
fn iteration_p99_and_evidence_increases_are_metrics() {
    let (dir, plan, out) = plan_dir(
        "metrics-iterations",
        "version: 1\nname: it\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\ndefaults: { iters: 5, warmup: 1 }\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [1K, 64K]\n    iterations: true\n",
    );
    let m = dir.join("m.prom");
    let o = baton(&["run", p(&plan), "-o", p(&out), "--metrics", p(&m)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let text = read(&m);
    for size in ["1024", "65536"] {
        let line = format!(
            "baton_iteration_p99_seconds{{plan=\"it\",job_id=\"t\",size_bytes=\"{size}\"}} "
        );
        assert!(text.contains(&line), "{line}: {text}");
    }
    // The family is there exactly when the results say a counter climbed.
    let r = results(&out.join("results.json"));
    let climbed = r.jobs.iter().flat_map(|j| &j.evidence).any(|e| {
        e.delta
            .iter()
            .flat_map(|d| &d.changes)
            .any(|c| matches!(c.kind, baton::probe::delta::ChangeKind::Increased { .. }))
    });
    assert_eq!(
        text.contains("baton_node_evidence_increase{plan=\"it\",host=\""),
        climbed,
        "{text}"
    );
    promtool(&m);
}
