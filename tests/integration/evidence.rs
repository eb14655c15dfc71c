//! Evidence is not overwritten, redirected or made up: outputs never replace inputs or write
//! through planted links, ingest refuses numbers no run prints, a cut-short run fails its
//! grade, and a bad run is not saved as a baseline.

use crate::common;

use common::{baton, code, fixture, ingest, p, read, show, stderr, tmp, write};

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let d = tmp("evidence-inputs");
    let log = write(&d, "log.txt", &read(&fixture("all_reduce.txt")));
    let before = read(&log);
    let o = baton(&["ingest", p(&log), "-o", p(&log)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("is also an input"), "{}", show(&o));
    assert_eq!(read(&log), before);

    let r = ingest(&d, "r.json", &[&log], Some("a"));
    let plan = write(
        &d,
        "p.yaml",
        "version: 1\nname: p\nbackend: nccl\nlaunch: { nodes: 1, ranks_per_node: 2 }\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1G]\n",
    );
    let kept = read(&r);
    for out in [&r, &plan] {
        let o = baton(&["grade", p(&plan), p(&r), "--junit", p(out)]);
        assert_eq!(code(&o), 2, "{}", show(&o));
    }
    assert_eq!(read(&r), kept);
    let o = baton(&["baseline", "save", p(&r), "-o", p(&r)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
}

#[test]
fn outputs_never_go_through_a_planted_link() {
    let d = tmp("evidence-links");
    let victim = write(&d, "victim", "precious");
    let log = fixture("all_reduce.txt");
    std::os::unix::fs::symlink(&victim, d.join("r.json")).unwrap();
    let o = baton(&["ingest", p(&log), "-o", p(&d.join("r.json"))]);
    assert_ne!(code(&o), 0, "{}", show(&o));
    assert!(stderr(&o).contains("symbolic link"), "{}", show(&o));
    let r = ingest(&d, "real.json", &[&log], Some("a"));
    let plan = write(
        &d,
        "p.yaml",
        "version: 1\nname: p\nbackend: nccl\nlaunch: { nodes: 1, ranks_per_node: 2 }\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1G]\n",
    );
    std::os::unix::fs::symlink(&victim, d.join("junit.xml")).unwrap();
    let o = baton(&["grade", p(&plan), p(&r), "--junit", p(&d.join("junit.xml"))]);
    assert_ne!(code(&o), 0, "{}", show(&o));
    std::fs::create_dir_all(d.join("report")).unwrap();
    std::os::unix::fs::symlink(&victim, d.join("report/report.html")).unwrap();
    let o = baton(&["report", p(&plan), p(&r), "-o", p(&d.join("report"))]);
    assert_ne!(code(&o), 0, "{}", show(&o));
    // `-o` itself a link to a directory.
    std::os::unix::fs::symlink(&d, d.join("out")).unwrap();
    let o = baton(&["run", p(&plan), "-o", p(&d.join("out"))]);
    assert_ne!(code(&o), 0, "{}", show(&o));
    assert_eq!(read(&victim), "precious");
}

/// A log with one row edited so that it cannot have been printed by nccl-tests.
fn edited(name: &str, edit: impl Fn(&mut Vec<String>)) -> std::process::Output {
    let d = tmp(name);
    let text = common::edit_rows(&read(&fixture("all_reduce.txt")), |size, f| {
        if size == 1048576 {
            edit(f)
        }
    });
    let log = write(&d, "log.txt", &text);
    baton(&["ingest", p(&log), "-o", p(&d.join("r.json"))])
}

#[test]
fn ingest_refuses_numbers_no_run_prints_and_names_the_line() {
    // Fields after the five prefix columns: time algbw busbw #wrong, out-of-place then in-place.
    for (name, field, value, says) in [
        ("fraction", 8, "0.4", "not a whole count"),
        ("negative-wrong", 8, "-1", "negative"),
        ("negative-time", 5, "-17.07", "negative"),
        ("algbw", 6, "500.00", "does not follow"),
        ("busbw", 7, "500.00", "more than twice"),
    ] {
        let o = edited(&format!("evidence-{name}"), |f| {
            f[field] = value.to_string()
        });
        assert_eq!(code(&o), 2, "{name}: {}", show(&o));
        assert!(stderr(&o).contains(says), "{name}: {}", show(&o));
        assert!(stderr(&o).contains("log.txt:"), "{name}: {}", show(&o));
    }
    let d = tmp("evidence-json");
    // The first nwrong of a real -J document, turned into a string.
    let json = read(&fixture("all_gather.json")).replacen("\"nwrong\":0.0", "\"nwrong\":\"5\"", 1);
    assert!(
        json.contains("\"5\""),
        "the fixture's nwrong spelling changed"
    );
    let log = write(&d, "log.json", &json);
    let o = baton(&["ingest", p(&log), "-o", p(&d.join("r.json"))]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("nwrong \"5\""), "{}", show(&o));
}

#[test]
fn a_bad_run_is_not_saved_as_a_baseline_without_force() {
    let d = tmp("evidence-baseline");
    let r = common::corrupted_all_reduce(&d, 1048576, 8, "3");
    let o = baton(&["baseline", "save", p(&r), "-o", p(&d.join("b.json"))]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("#wrong > 0"), "{}", show(&o));
    assert!(!d.join("b.json").exists());
    let o = baton(&[
        "baseline",
        "save",
        p(&r),
        "-o",
        p(&d.join("b.json")),
        "--force",
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let good = ingest(&d, "good.json", &[&fixture("all_reduce.txt")], None);
    let o = baton(&["baseline", "save", p(&good), "-o", p(&d.join("g.json"))]);
    assert_eq!(code(&o), 0, "{}", show(&o));
}

#[test]
fn a_run_cut_short_fails_its_grade() {
    let d = tmp("evidence-partial");
    let r = ingest(&d, "r.json", &[&fixture("all_reduce.txt")], Some("soak"));
    // What a time limit leaves: the job partial, stopped by a signal.
    let mut results = common::results(&r);
    results.producer.command = "run".into();
    results.jobs[0].sources.clear();
    results.jobs[0].status = baton::results::JobStatus::Partial;
    let cut = d.join("cut.json");
    baton::results::write_atomic(&cut, &results).unwrap();
    let plan = write(
        &d,
        "p.yaml",
        "version: 1\nname: p\nbackend: nccl\nlaunch: { nodes: 1, ranks_per_node: 2 }\ntests:\n  - name: soak\n    collective: all_reduce\n    sizes: [1G]\n    repeat: 10m\n",
    );
    let o = baton(&["grade", p(&plan), p(&cut)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(common::stdout(&o).contains("cut short"), "{}", show(&o));
}

#[test]
fn grading_a_raw_log_says_to_ingest_it_and_a_mistyped_job_gets_a_suggestion() {
    let d = tmp("evidence-hints");
    let plan = write(
        &d,
        "p.yaml",
        "version: 1\nname: p\nbackend: nccl\nlaunch: { nodes: 1, ranks_per_node: 2 }\ntests:\n  - name: allreduce\n    collective: all_reduce\n    sizes: [1G]\n",
    );
    let o = baton(&["grade", p(&plan), p(&fixture("all_reduce.txt"))]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("baton ingest"), "{}", show(&o));
    let r = ingest(
        &d,
        "r.json",
        &[&fixture("all_reduce.txt")],
        Some("allredcue"),
    );
    let o = baton(&["grade", p(&plan), p(&r)]);
    assert!(
        common::stdout(&o).contains("did you mean `allreduce`?"),
        "{}",
        show(&o)
    );
}

/// The seed incident end to end: a log run with NCCL_P2P_DISABLE=1 and NCCL_DEBUG=INFO, graded
/// against a healthy baseline without debug lines, blames the transport and the setting — in
/// the regression verdict too — never the clocks.
#[test]
fn the_p2p_downgrade_incident_names_its_cause_in_every_verdict() {
    let d = tmp("evidence-incident");
    let base = ingest(
        &d,
        "base.json",
        &[&fixture("all_reduce.txt")],
        Some("allreduce"),
    );
    // Made on 2xH200 (NCCL 2.28.3): NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO all_reduce_perf -g 2.
    let incident = common::fixture("all_reduce_p2p_disabled_debug.txt");
    let now = ingest(&d, "now.json", &[&incident], Some("allreduce"));
    let plan = write(
        &d,
        "p.yaml",
        "version: 1\nname: p\nbackend: nccl\nlaunch: { nodes: 1, ranks_per_node: 2 }\ntests:\n  - name: allreduce\n    collective: all_reduce\n    sizes: { from: 1M, to: 1G, factor: 4 }\n    expect:\n      - transport: P2P\n      - regression: \"<= 10%\"\n",
    );
    let o = baton(&["grade", p(&plan), p(&now), "--baseline", p(&base)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    let out = common::stdout(&o);
    assert!(!out.contains("clocks"), "{out}");
    assert!(
        out.contains("settings differ from the baseline: NCCL_P2P_DISABLE=1"),
        "{out}"
    );
    assert!(out.contains("the plan expects P2P"), "{out}");
}

/// A run whose criteria failed is not a good run either: `baseline save` grades it against the
/// plan `baton run` kept beside it (or `--plan`), refuses it without `--force` naming the
/// criterion, and with `--force` saves it saying so. Criteria that compare with a baseline or
/// the history are left out: the first baseline is what they are waiting for.
#[cfg(feature = "mpi")]
#[test]
fn a_run_whose_criteria_failed_is_not_saved_as_a_baseline_without_force() {
    let plan = "version: 1\nname: floor\nbackend: mpi\nlaunch: { ranks_per_node: 2 }\ndefaults: { iters: 2, warmup: 1 }\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [1K]\n    expect:\n      - wrong: 0\n      - regression: \"<= 5%\"\n      - busbw: \">= 5000 GB/s\"\n";
    let run = common::run_plan("evidence-baseline-criteria", plan, &[]);
    assert_eq!(code(&run.output), 1, "{}", show(&run.output));
    let results = run.out.join("results.json");
    let save = |name: &str, extra: &[&str]| {
        let out = run.dir.join(name);
        let mut args = vec!["baseline", "save", p(&results), "-o", p(&out)];
        args.extend_from_slice(extra);
        (baton(&args), out)
    };
    let (o, b) = save("b.json", &[]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = stderr(&o);
    assert!(
        err.contains("error:") && err.contains("job `t`") && err.contains("busbw >= 5000 GB/s"),
        "{err}"
    );
    assert!(
        !err.contains("regression"),
        "a baseline's own regression is not held against it: {err}"
    );
    assert!(!b.exists());
    let (o, b) = save("b.json", &["--force"]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let err = stderr(&o);
    assert!(
        err.contains("warning:") && err.contains("busbw >= 5000 GB/s"),
        "{err}"
    );
    assert!(b.exists());
    // The same results against a plan they meet, named with --plan: saved.
    let met = write(&run.dir, "met.yaml", &plan.replace("5000 GB/s", "0 GB/s"));
    std::fs::remove_file(run.out.join("parts/plan.yaml")).unwrap();
    let (o, _) = save("c.json", &["--plan", p(&met)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    // Without a plan to judge by, it says the criteria were not checked.
    let (o, _) = save("d.json", &[]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(
        stderr(&o).contains("not checked against the plan's criteria"),
        "{}",
        show(&o)
    );
}
