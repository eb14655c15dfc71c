//! `baton grade` on the shared fixtures and synthetic variants of them, through the real binary:
//! verdicts, fail-closed rules, shape diagnosis, exit codes.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;

fn grade(args: &[&str]) -> std::process::Output {
    let mut a = vec!["grade"];
    a.extend_from_slice(args);
    baton(&a)
}

/// Grades `args` by the all_reduce sweep + `keys`, asserting `want`: what criteria tests vary.
fn grade_sweep(dir: &Path, file: &str, keys: &str, args: &[&str], want: i32) -> String {
    let pl = two_gpu_plan(dir, file, &format!("{ALLREDUCE_SWEEP}{keys}"));
    let mut a = vec![p(&pl)];
    a.extend_from_slice(args);
    let o = grade(&a);
    assert_eq!(code(&o), want, "{}", show(&o));
    stdout(&o)
}

#[test]
fn healthy_logs_pass_a_sensible_plan() {
    let d = tmp("grade_healthy");
    let r = healthy(&d);
    let o = grade(&[p(&plan("h200x2.yaml")), p(&r)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("plan h200x2-acceptance: PASS — 4 job(s): 0 failed"),
        "{out}"
    );
    for id in ["allreduce", "allgather", "alltoall", "broadcast"] {
        assert!(out.contains(&format!("PASS  {id}  ")), "{out}");
    }
}

#[test]
fn socket_log_fails_transport_and_regression_against_the_healthy_log() {
    let d = tmp("grade_socket");
    let out = grade_socket(&d, &[]);
    // The healthy run passes against itself.
    let base = d.join("base.json");
    let o = grade(&[
        p(&plan("h200x2-nvlink.yaml")),
        p(&base),
        "--baseline",
        p(&base),
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(
        out.contains("✗ transport P2P: transport NET/Socket, expected P2P (all_reduce float sum): channel 00 rank 0 -> 1 via NET/Socket/0 on vm, and 3 more of 4 links; the log sets NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1"),
        "{out}"
    );
    assert!(
        out.contains("✗ busbw >= 250 GB/s at 256M: busbw 3.33 GB/s < 250 GB/s at 256M (all_reduce float sum, out-of-place)"),
        "{out}"
    );
    assert!(
        out.contains("transport NET/Socket, expected P2P\n"),
        "{out}"
    );
    assert!(
        out.contains("✗ regression <= 5%: busbw 1.91 GB/s vs baseline 61.41 GB/s at 1M (all_reduce float sum, out-of-place): 96.9% below (allowed <= 5%)"),
        "{out}"
    );
    assert!(
        out.contains("diagnosis: transport changed from P2P (baseline) to NET/Socket"),
        "{out}"
    );
}

#[test]
fn regression_without_a_baseline_fails_with_a_clear_message() {
    let d = tmp("grade_no_baseline");
    let r = ingest(&d, "r.json", &[&fixture("debug_healthy.txt")], None);
    let o = grade(&[p(&plan("h200x2-nvlink.yaml")), p(&r)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stdout(&o).contains(
            "✗ regression <= 5%: no baseline: set `baseline:` in the plan or pass --baseline FILE"
        ),
        "{}",
        show(&o)
    );
    // A baseline the plan names is read relative to the plan; a missing one fails the criterion.
    let pl = two_gpu_plan(
        &d,
        "p.yaml",
        "  - name: nvlink\n    collective: all_reduce\n    sizes: { from: 1M, to: 256M, factor: 4 }\n    expect:\n      - regression: \"<= 5%\"\nbaseline: base.json\n",
    );
    let o = grade(&[p(&pl), p(&r)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stdout(&o).contains("cannot read the baseline"),
        "{}",
        show(&o)
    );
    std::fs::copy(&r, d.join("base.json")).unwrap();
    let o = grade(&[p(&pl), p(&r)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    // An explicit --baseline that cannot be read is invalid input.
    let o = grade(&[p(&pl), p(&r), "--baseline", "/nonexistent.json"]);
    assert_eq!(code(&o), 2, "{}", show(&o));
}

/// Grades a slowed copy of the healthy all_reduce sweep against the healthy one.
fn shape_of(name: &str, slow: impl Fn(u64) -> f64) -> String {
    let d = tmp(name);
    let base = ingest(&d, "base.json", &[&fixture("all_reduce.txt")], None);
    let log = write(
        &d,
        "slow.txt",
        &slow_rows(&read(&fixture("all_reduce.txt")), slow),
    );
    let now = ingest(&d, "now.json", &[&log], None);
    grade_sweep(
        &d,
        "p.yaml",
        "    expect:\n      - regression: \"<= 5%\"\n",
        &[p(&now), "--baseline", p(&base)],
        1,
    )
}

#[test]
fn large_size_slowdown_is_diagnosed_as_a_route_change() {
    let out = shape_of(
        "grade_shape_large",
        |s| if s >= 64 << 20 { 1.5 } else { 1.0 },
    );
    assert!(
        out.contains("diagnosis: hint from the shape of the drop alone (the results record no transport, setting, telemetry or version difference): drop only at large sizes (from 64M up), small sizes unchanged: a route or transport change — check the NCCL_DEBUG=INFO transport lines"),
        "{out}"
    );
    assert!(out.contains("33.3% below (allowed <= 5%)"), "{out}");
    assert!(out.contains("at 64M"), "{out}");
    assert!(!out.contains("at 32M"), "32M did not slow down: {out}");
}

#[test]
fn uniform_slowdown_is_diagnosed_as_clocks_or_contention() {
    let out = shape_of("grade_shape_all", |_| 1.3);
    assert!(
        out.contains("alone (the results record no transport, setting, telemetry or version difference): uniform drop at all sizes: the GPUs or the node, not the route — check clocks and throttle reasons"),
        "{out}"
    );
    assert!(!out.contains("large sizes"), "{out}");
}

#[test]
fn small_size_slowdown_is_diagnosed_as_latency() {
    let out = shape_of(
        "grade_shape_small",
        |s| if s <= 64 << 10 { 2.0 } else { 1.0 },
    );
    assert!(
        out.contains(
            "alone (the results record no transport, setting, telemetry or version difference): drop only at small sizes (up to 64K), large sizes unchanged: latency"
        ),
        "{out}"
    );
}

#[test]
fn wrong_elements_fail_as_corruption_even_without_a_criterion() {
    let d = tmp("grade_corruption");
    let r = corrupted_all_reduce(&d, 1 << 30, 12, "3");
    // The plan checks busbw only; the corruption still fails the job.
    let out = grade_sweep(
        &d,
        "p.yaml",
        "    expect:\n      - busbw: \">= 300 GB/s\"\n        at: 1G\n",
        &[p(&r)],
        1,
    );
    assert!(
        out.contains("✗ no wrong elements (#wrong 0): #wrong 3 at 1G (all_reduce float sum, in-place, repeat 0): data corruption"),
        "{out}"
    );
    assert!(
        out.contains("✓ 2 other check(s) passed"),
        "busbw itself passed: {out}"
    );
    // With `wrong: 0` at the corrupted size, the criterion says it.
    let out = grade_sweep(
        &d,
        "q.yaml",
        "    expect:\n      - wrong: 0\n        at: \">= 1G\"\n",
        &[p(&r)],
        1,
    );
    // The implicit corruption check fails for the same reason: said once, both named.
    assert!(
        out.contains("✗ no wrong elements (#wrong 0); wrong == 0 at >= 1G: #wrong 3 at 1G"),
        "{out}"
    );
}

#[test]
fn a_criterion_at_a_missing_size_fails_closed() {
    let d = tmp("grade_missing_size");
    // debug_healthy.txt sweeps 1M..1G; the plan asks for 8G.
    let r = ingest(&d, "r.json", &[&fixture("debug_healthy.txt")], None);
    let out = grade_sweep(
        &d,
        "p.yaml",
        "    expect:\n      - busbw: \">= 1 GB/s\"\n        at: 8G\n",
        &[p(&r)],
        1,
    );
    assert!(
        out.contains("✗ busbw >= 1 GB/s at 8G: no data at 8G (all_reduce float sum, out-of-place): the results hold 1M..1G"),
        "{out}"
    );
}

#[test]
fn plan_jobs_without_results_fail_closed() {
    let d = tmp("grade_unmatched");
    let r = ingest(&d, "r.json", &[&fixture("all_gather.txt")], None);
    let o = grade(&[p(&plan("h200x2.yaml")), p(&r)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    let out = stdout(&o);
    assert!(out.contains("FAIL  allreduce"), "{out}");
    assert!(
        out.contains("no results for this job (looked for ID `allreduce`, or an unlabelled all_reduce float sum on 2 rank(s) log)"),
        "{out}"
    );
    assert!(out.contains("PASS  allgather"), "{out}");
    // Two unlabelled all_reduce logs are ambiguous: neither is graded as the job.
    let r = ingest(
        &d,
        "two.json",
        &[&fixture("all_reduce.txt"), &fixture("debug_healthy.txt")],
        None,
    );
    let o = grade(&[p(&plan("h200x2.yaml")), p(&r)]);
    assert!(
        stdout(&o).contains("2 results match this job"),
        "{}",
        show(&o)
    );
    // Labelled, the log pairs with its job by ID even when another all_reduce log is present.
    let a = ingest(
        &d,
        "a.json",
        &[&fixture("all_reduce.txt")],
        Some("allreduce"),
    );
    let b = ingest(
        &d,
        "b.json",
        &[&fixture("debug_healthy.txt")],
        Some("other-job"),
    );
    let o = grade(&[p(&plan("h200x2.yaml")), p(&a), p(&b)]);
    let out = stdout(&o);
    assert!(out.contains("PASS  allreduce"), "{out}");
    assert!(
        out.contains("note: unused results:")
            && out.contains("job `other-job` is not a job of this plan"),
        "{out}"
    );
}

#[test]
fn placements_thresholds_time_and_warnings() {
    let d = tmp("grade_criteria");
    let r = ingest(&d, "r.json", &[&fixture("all_reduce.txt")], None);
    // At 1G out-of-place is 330.82, in-place 329.63: `in_place: out` narrows to the first.
    let rs = [p(&r)];
    let out = grade_sweep(
        &d,
        "both.yaml",
        "    expect:\n      - busbw: \">= 330 GB/s\"\n        at: 1G\n",
        &rs,
        1,
    );
    assert!(
        out.contains("busbw 329.63 GB/s < 330 GB/s at 1G (all_reduce float sum, in-place)"),
        "{out}"
    );
    grade_sweep(
        &d,
        "out.yaml",
        "    expect:\n      - busbw: \">= 330 GB/s\"\n        at: 1G\n        in_place: out\n",
        &rs,
        0,
    );
    // time and algbw; a `warn` criterion reports without failing.
    let s = grade_sweep(
        &d,
        "t.yaml",
        "    expect:\n      - time: \"<= 13 us\"\n        at: 8..32\n      - algbw: \">= 1 TB/s\"\n        at: 8G\n        severity: warn\n",
        &rs,
        1,
    );
    assert!(
        s.contains("time 13.36 us > 13 us at 8 (all_reduce float sum, in-place)"),
        "{s}"
    );
    assert!(
        s.contains("! algbw >= 1000 GB/s at 8G (warn): algbw 345.6 GB/s < 1000 GB/s at 8G"),
        "{s}"
    );
    // Warnings never fail: exit 0.
    let out = grade_sweep(
        &d,
        "w.yaml",
        "    expect:\n      - algbw: \">= 1 TB/s\"\n        at: 8G\n        severity: warn\n",
        &rs,
        0,
    );
    assert!(out.contains("WARN  allreduce"), "{out}");
}

#[test]
fn variance_across_repeats() {
    let d = tmp("grade_variance");
    let a = fixture("all_reduce.txt");
    let slow = write(
        &d,
        "slow.txt",
        &slow_rows(&read(&a), |s| if s == 1 << 30 { 1.25 } else { 1.0 }),
    );
    let steady = ingest(&d, "steady.json", &[&a, &a, &a], Some("allreduce"));
    let noisy = ingest(&d, "noisy.json", &[&a, &a, &slow], Some("allreduce"));
    let pl = two_gpu_plan(
        &d,
        "p.yaml",
        &format!(
            "{ALLREDUCE_SWEEP}    repeat: 3\n    expect:\n      - variance: \"<= 5%\"\n        at: \">= 256M\"\n"
        ),
    );
    let o = grade(&[p(&pl), p(&steady)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let o = grade(&[p(&pl), p(&noisy)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stdout(&o).contains("busbw varies 20.0% across 3 repeats at 1G"),
        "{}",
        show(&o)
    );
    let one = ingest(&d, "one.json", &[&a], Some("allreduce"));
    let o = grade(&[p(&pl), p(&one)]);
    assert!(
        stdout(&o).contains("variance needs at least 2 repeats"),
        "{}",
        show(&o)
    );
}

#[test]
fn timeouts_exit_4() {
    let d = tmp("grade_timeout");
    let text = read(&fixture("all_reduce.txt"));
    let cut = &text[..text.find("  1073741824").unwrap()];
    let log = write(
        &d,
        "hang.txt",
        &format!("{cut}vm: Test timeout (300s) common.cu:1234\n"),
    );
    let r = ingest(&d, "r.json", &[&log], None);
    let out = grade_sweep(
        &d,
        "p.yaml",
        "    expect:\n      - busbw: \">= 300 GB/s\"\n        at: 8G\n",
        &[p(&r)],
        4,
    );
    assert!(out.contains("the job timed out"), "{out}");
}

#[test]
fn bad_inputs_exit_2() {
    let d = tmp("grade_bad_inputs");
    let r = ingest(&d, "r.json", &[&fixture("all_reduce.txt")], None);
    let notjson = write(&d, "x.json", "not json");
    let o = grade(&[p(&plan("h200x2.yaml")), p(&notjson)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("x.json"), "{}", show(&o));
    let badplan = write(&d, "bad.yaml", "version: 1\nname: x\n");
    let o = grade(&[p(&badplan), p(&r)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let o = grade(&[p(&plan("h200x2.yaml"))]);
    assert_eq!(code(&o), 2, "results are required: {}", show(&o));
}

/// An all_reduce nccl-tests log of `nodes × per_node` ranks in split groups `colors`, ingested,
/// and a plan for it asking `group_spread <= 10%` (plus `extra` criterion keys).
fn split_run(
    d: &Path,
    (nodes, per_node): (u32, u32),
    colors: &[u64],
    split: &str,
    extra: &str,
) -> (PathBuf, PathBuf) {
    let mut s = Synth::new(
        baton::collective::Collective::AllReduce,
        colors.len() as u64,
    );
    s.groups = colors.to_vec();
    let log = write(d, "split.txt", &s.text());
    let raw = ingest(d, "raw.json", &[&log], None);
    let pl = write(
        d,
        "p.yaml",
        &format!(
            "version: 1\nname: split\nbackend: nccl\nlaunch: {{ nodes: {nodes}, ranks_per_node: {per_node} }}\ntests:\n  - name: pairs\n    collective: all_reduce\n    split: \"{split}\"\n    sizes: {{ from: 1M, to: 1G, factor: 4 }}\n    expect:\n      - group_spread: \"<= 10%\"{extra}\n"
        ),
    );
    (pl, raw)
}

#[test]
fn group_spread_names_the_slowest_group_and_its_gpus() {
    let d = tmp("grade_groups");
    let (pl, raw) = split_run(
        &d,
        (2, 2),
        &[0, 0, 1, 1],
        "DIV 2",
        "\n        at: \">= 256M\"",
    );
    // nccl-tests prints only rank 0's group: no per-group figures, so the criterion fails closed.
    let o = grade(&[p(&pl), p(&raw)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stdout(&o).contains("no per-group figures at 256M"),
        "{}",
        show(&o)
    );
    // With per-group figures (as `baton run` records them), group 1 running 30% slow is named.
    let mut r = results(&raw);
    for rep in &mut r.jobs[0].repeats {
        for row in &mut rep.rows {
            for cell in [&mut row.out_of_place, &mut row.in_place]
                .into_iter()
                .flatten()
            {
                let (t, a, b) = (
                    cell.time_us.unwrap(),
                    cell.algbw.unwrap(),
                    cell.busbw.unwrap(),
                );
                cell.groups = vec![
                    baton::results::GroupCell {
                        color: 0,
                        time_us: t,
                        algbw: a,
                        busbw: b,
                        wrong: Some(0),
                    },
                    baton::results::GroupCell {
                        color: 1,
                        time_us: t / 0.7,
                        algbw: a * 0.7,
                        busbw: b * 0.7,
                        wrong: Some(0),
                    },
                ];
            }
        }
    }
    let grouped = d.join("grouped.json");
    baton::results::write_atomic(&grouped, &r).unwrap();
    let o = grade(&[p(&pl), p(&grouped)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    let out = stdout(&o);
    assert!(
        out.contains("group spread 30.0% at 256M (all_reduce float sum split DIV 2, out-of-place): slowest group 1 (ranks 2-3: node01 GPU 2, node01 GPU 3)"),
        "{out}"
    );
    assert!(
        out.contains("diagnosis: one slow split group: group 1 (ranks 2-3: node01 GPU 2, node01 GPU 3) — an intra-node group: check that node's NVLink/NVSwitch"),
        "{out}"
    );
    // The report charts each group and tables their figures, the slowest marked.
    let rep = d.join("rep");
    let o = baton(&["report", p(&pl), p(&grouped), "-o", p(&rep)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let svg = read(&rep.join("charts/01-pairs.svg"));
    assert!(
        svg.contains("group 0") && svg.contains("group 1"),
        "group lines in the chart"
    );
    let md = read(&rep.join("report.md"));
    assert!(
        md.contains("| 1 (slowest) | 2-3 | node01:2 node01:3 | 197.65 | 197.65 | 30.0% |"),
        "{md}"
    );
}

#[test]
fn group_spread_with_a_single_group_is_skipped_not_failed() {
    // `OR 1` on two ranks makes one pair: there is no other group to compare it with.
    let d = tmp("grade_one_group");
    let (pl, raw) = split_run(&d, (1, 2), &[1, 1], "OR 1", "");
    let o = grade(&[p(&pl), p(&raw)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(
        stdout(&o).contains("the split makes one group here (2 rank(s)): nothing to compare"),
        "{}",
        show(&o)
    );
}

/// A job without results fails every criterion for the same reason: the summary names them
/// together and says the reason once.
#[test]
fn a_reason_shared_by_criteria_is_said_once() {
    let d = tmp("grade_said_once");
    let r = ingest(&d, "r.json", &[&fixture("all_reduce.txt")], None);
    let o = grade(&[p(&plan("h200x2.yaml")), p(&r)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    let out = stdout(&o);
    assert_eq!(
        out.matches("no results for this job (looked for ID `allgather`")
            .count(),
        1,
        "{out}"
    );
    assert!(
        out.contains(
            "✗ results present and complete; busbw >= 280 GB/s at 4G: no results for this job"
        ),
        "{out}"
    );
}
/// `grade --format json` on stdout, validated against the committed schema (not the types: a
/// script reads the file in `schemas/`).
fn verdict_json(args: &[&str], want: i32) -> serde_json::Value {
    let mut a = vec!["grade", "--format", "json"];
    a.extend_from_slice(args);
    let o = baton(&a);
    assert_eq!(code(&o), want, "{}", show(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document: {e}\n{}", show(&o)));
    let schema: serde_json::Value = serde_json::from_str(&read(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/verdict.schema.json"),
    ))
    .unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}\n{doc:#}");
    // The terminal summary still reaches a human, on stderr.
    assert!(
        stderr(&o).contains("\nplan ") || stderr(&o).starts_with("plan "),
        "{}",
        show(&o)
    );
    doc
}

#[test]
fn grade_json_is_one_schema_valid_verdict_document() {
    let d = tmp("grade_json_pass");
    let r = healthy(&d);
    let doc = verdict_json(&[p(&plan("h200x2.yaml")), p(&r)], 0);
    assert_eq!(doc["format"], "baton-verdict");
    assert_eq!(doc["status"], "pass");
    assert_eq!(doc["exit_code"], 0);
    assert_eq!(doc["plan"]["name"], "h200x2-acceptance");
    assert_eq!(doc["counts"]["jobs"], 4);
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs[0]["id"], "allreduce");
    assert_eq!(jobs[0]["run_status"], "completed");
    assert!(doc.get("node_sets").is_none() && doc.get("nodes").is_none());
    for j in jobs {
        for c in j["criteria"].as_array().unwrap() {
            assert!(!c["cases"].as_array().unwrap().is_empty(), "{c:#}");
        }
    }
}

#[test]
fn grade_json_failure_carries_each_criterion_with_its_evidence() {
    let d = tmp("grade_json_fail");
    let (base, sock) = base_and_socket(&d);
    let nvlink = plan("h200x2-nvlink.yaml");
    let doc = verdict_json(&[p(&nvlink), p(&sock), "--baseline", p(&base)], 1);
    assert_eq!(
        (doc["status"].as_str(), doc["exit_code"].as_i64()),
        (Some("fail"), Some(1))
    );
    let criteria: Vec<&serde_json::Value> = doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|j| j["criteria"].as_array().unwrap())
        .collect();
    let transport = criteria
        .iter()
        .find(|c| c["key"] == "transport")
        .expect("the transport criterion");
    assert_eq!(transport["status"], "fail");
    assert!(
        transport["message"]
            .as_str()
            .unwrap()
            .contains("transport NET/Socket, expected P2P"),
        "{transport:#}"
    );
    let busbw = criteria.iter().find(|c| c["key"] == "busbw").unwrap();
    assert_eq!(busbw["severity"], "fail");
    let case = &busbw["cases"][0];
    assert_eq!(case["size_bytes"], 256 << 20, "{busbw:#}");
    assert!(
        criteria
            .iter()
            .any(|c| c["evidence"]["cause"] == "transport_changed"
                || c["evidence"]["cause"] == "transport_not_expected"),
        "{criteria:#?}"
    );
}

/// The healthy NCCL_DEBUG run as measured on `host` instead of `vm`: the same numbers, other
/// hosts.
fn healthy_on(d: &Path, host: &str) -> PathBuf {
    let text = read(&fixture("debug_healthy.txt"));
    let log = write(
        d,
        &format!("{host}.txt"),
        &text.replace(" vm ", &format!(" {host} ")),
    );
    ingest(d, &format!("{host}.json"), &[&log], None)
}

#[test]
fn a_baseline_from_other_hosts_is_not_compared_and_says_so() {
    let d = tmp("grade_baseline_hosts");
    let on_node02 = healthy_on(&d, "node02");
    let on_node01 = healthy_on(&d, "node01");
    let nvlink = plan("h200x2-nvlink.yaml");
    let o = grade(&[p(&nvlink), p(&on_node01), "--baseline", p(&on_node02)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    let want = format!(
        "✗ regression <= 5%: job `nvlink` ran on node01, but the baseline {} has it only from node02: a baseline is compared only with runs on the same hosts",
        on_node02.display()
    );
    assert!(stdout(&o).contains(&want), "{}", show(&o));
    // One baseline file may keep the job once per host set: each run meets its own hosts'.
    let both = d.join("both.json");
    let o = baton(&[
        "baseline",
        "save",
        p(&on_node02),
        p(&on_node01),
        "-o",
        p(&both),
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    for run in [&on_node01, &on_node02] {
        let o = grade(&[p(&nvlink), p(run), "--baseline", p(&both)]);
        assert_eq!(code(&o), 0, "{}", show(&o));
    }
    // The same hosts twice is still one job measured twice: refused.
    let o = baton(&[
        "baseline",
        "save",
        p(&on_node01),
        p(&on_node01),
        "-o",
        p(&d.join("x.json")),
    ]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("measured on the same hosts (node01)"),
        "{}",
        show(&o)
    );
}

#[test]
fn baseline_compare_refuses_runs_of_other_hosts_unless_asked() {
    let d = tmp("compare_baseline_hosts");
    let on_node02 = healthy_on(&d, "node02");
    let on_node01 = healthy_on(&d, "node01");
    let o = baton(&["baseline", "compare", p(&on_node02), p(&on_node01)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("ran on node01, but the baseline")
            && stderr(&o).contains("--any-hosts"),
        "{}",
        show(&o)
    );
    let o = baton(&[
        "baseline",
        "compare",
        p(&on_node02),
        p(&on_node01),
        "--any-hosts",
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let both = d.join("both.json");
    let o = baton(&[
        "baseline",
        "save",
        p(&on_node02),
        p(&on_node01),
        "-o",
        p(&both),
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let o = baton(&["baseline", "compare", p(&both), p(&on_node01)]);
    assert_eq!(code(&o), 0, "the entry of node01 is compared: {}", show(&o));
}
