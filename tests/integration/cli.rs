//! The real binary: exit codes and output shapes a CI job relies on.

use std::process::Command;

fn baton(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn data(p: &str) -> String {
    format!("{}/tests/data/{p}", env!("CARGO_MANIFEST_DIR"))
}

fn tmp_plan(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("baton-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn check_valid_plan_exits_0() {
    let (code, out, _) = baton(&["check", &data("plans/full.yaml")]);
    assert_eq!(code, 0);
    assert!(out.contains("ok (2 tests, 5 jobs)"), "{out}");
}

#[test]
fn check_invalid_plan_exits_2_with_location() {
    let p = tmp_plan(
        "typo.yaml",
        "version: 1\nname: t\ntests:\n  - name: a\n    colective: all_reduce\n    sizes: [1M]\n",
    );
    let (code, _, err) = baton(&["check", "--color", "never", &p]);
    assert_eq!(code, 2);
    assert!(err.contains("typo.yaml:5:5"), "{err}");
    assert!(err.contains("did you mean `collective`"), "{err}");
    assert!(!err.contains("panicked"));
    let (code, _, err) = baton(&["check", "--format", "short", &p]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with(&format!("{p}:5:5: error: unknown key")),
        "{err}"
    );
}

#[test]
fn check_reports_every_file_and_fails_if_any_fails() {
    let bad = tmp_plan("bad.yaml", "version: 1\n");
    let (code, out, err) = baton(&["check", &data("plans/full.yaml"), &bad]);
    assert_eq!(code, 2);
    assert!(out.contains("full.yaml: ok"));
    assert!(err.contains("missing required key `name`"), "{err}");
}

#[test]
fn missing_file_and_bad_arguments_exit_2() {
    let (code, _, err) = baton(&["check", "/nonexistent/plan.yaml"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot read plan /nonexistent/plan.yaml"),
        "{err}"
    );
    let (code, _, _) = baton(&["check"]);
    assert_eq!(code, 2);
    let (code, _, _) = baton(&["frobnicate"]);
    assert_eq!(code, 2);
    let (code, _, _) = baton(&["expand", &data("plans/full.yaml"), "--format", "xml"]);
    assert_eq!(code, 2);
    let (code, out, _) = baton(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("check") && out.contains("expand"));
}

#[test]
fn expand_json_has_jobs_and_total() {
    let (code, out, _) = baton(&["expand", &data("plans/full.yaml"), "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["total_jobs"], 5);
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 5);
    assert_eq!(
        jobs[0]["id"],
        "intra-node-allreduce[dtype=float,NCCL_PROTO=Simple]"
    );
    assert_eq!(jobs[0]["groups"][1]["ranks"].as_array().unwrap().len(), 8);
    assert_eq!(jobs[0]["groups"][1]["scope"], "intra-node");
    assert_eq!(jobs[0]["memory_per_rank"], 3u64 * (8 << 30));
    assert_eq!(jobs[0]["settings"]["timeout"], "5m");
}

#[test]
fn expand_table_shows_groups_and_memory() {
    let (code, out, _) = baton(&["expand", &data("plans/full.yaml")]);
    assert_eq!(code, 0);
    assert!(out.contains("group 1    ranks 8-15"), "{out}");
    assert!(out.contains("intra-node"));
    assert!(out.contains("mem=24.0 GiB /rank, 384.0 GiB total"), "{out}");
    assert!(out.contains("total_jobs: 5"));
}

#[test]
fn expand_names_host_memory_for_the_mpi_backend() {
    let (code, out, _) = baton(&["expand", &data("plans/full.yaml")]);
    assert_eq!(code, 0);
    assert!(
        out.contains("total_jobs: 5  largest GPU memory per rank: 24.0 GiB"),
        "{out}"
    );
    let quickstart = format!(
        "{}/plans/examples/quickstart.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let (code, out, _) = baton(&["expand", &quickstart]);
    assert_eq!(code, 0);
    let last = out.lines().last().unwrap();
    assert_eq!(
        last,
        "total_jobs: 2  largest memory per rank (host): 3.0 MiB"
    );
}

#[test]
fn expand_of_invalid_plan_exits_2() {
    let p = tmp_plan("inv.yaml", "version: 1\nname: t\ntests: []\n");
    let (code, out, err) = baton(&["expand", &p]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("`tests` is empty"), "{err}");
}

/// Runs baton with its stdout on a pipe whose reader is already gone, as `baton … | head -1` is
/// once `head` has its line: every write fails with EPIPE.
fn baton_into_closed_pipe(args: &[&str]) -> (i32, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(args)
        .stdout(writer)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_stdout_pipe_ends_quietly_with_the_commands_exit_code() {
    let full = data("plans/full.yaml");
    for args in [
        vec!["check", full.as_str()],
        vec!["expand", full.as_str()],
        vec!["expand", full.as_str(), "--format", "json"],
    ] {
        let (code, err) = baton_into_closed_pipe(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert_eq!(err, "", "{args:?}");
    }
    // The exit code is still the command's own: an invalid plan among valid ones is exit 2.
    let bad = tmp_plan("pipe-bad.yaml", "version: 1\n");
    let (code, err) = baton_into_closed_pipe(&["check", &full, &bad, &full]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("missing required key `name`"), "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
}

/// Every command that writes to stdout, into a pipe whose reader has gone (`baton … | head -1`):
/// each ends quietly with its own exit code. `render --dry-run` once wrote the scripts past
/// `baton::stdout` and exited 3 with "Broken pipe".
#[test]
fn every_command_cut_short_by_its_reader_keeps_its_exit_code() {
    use crate::common::{self, p};
    let dir = common::tmp("closed-pipe");
    let healthy = common::healthy(&dir);
    let (base, sock) = common::base_and_socket(&dir);
    let plan = common::plan("h200x2.yaml");
    let nvlink = common::plan("h200x2-nvlink.yaml");
    let mpi = common::write(&dir, "mpi.yaml", common::render::MPI_PLAN);
    let store = dir.join("history.db");
    let added = common::baton(&["history", "add", p(&healthy), "--store", p(&store)]);
    assert_eq!(common::code(&added), 0, "{}", common::show(&added));
    let (scripts, saved, ingested) = (
        dir.join("scripts"),
        dir.join("saved.json"),
        dir.join("i.json"),
    );
    let man = dir.join("man");
    let log = common::fixture("all_reduce.txt");
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (
            vec!["render", p(&mpi), "-t", "slurm,srun,mpirun", "--dry-run"],
            0,
        ),
        (
            vec![
                "render",
                p(&mpi),
                "-t",
                "slurm,srun,mpirun",
                "-o",
                p(&scripts),
            ],
            0,
        ),
        (vec!["grade", p(&plan), p(&healthy)], 0),
        (vec!["grade", p(&plan), p(&healthy), "--format", "json"], 0),
        (
            vec!["grade", p(&nvlink), p(&sock), "--baseline", p(&base)],
            1,
        ),
        (vec!["history", "show", "--store", p(&store)], 0),
        (vec!["history", "add", p(&healthy), "--store", p(&store)], 0),
        (vec!["ingest", p(&log), "-o", p(&ingested)], 0),
        (vec!["baseline", "save", p(&healthy), "-o", p(&saved)], 0),
        (vec!["baseline", "compare", p(&base), p(&sock)], 1),
        (vec!["completions", "bash"], 0),
        (vec!["man", "-o", p(&man)], 0),
        (vec!["--help"], 0),
    ];
    for (args, want) in cases {
        let (code, err) = baton_into_closed_pipe(&args);
        assert_eq!(code, want, "{args:?}: {err}");
        assert!(
            !err.contains("Broken pipe") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn the_readme_plan_is_valid() {
    let readme =
        std::fs::read_to_string(format!("{}/README.md", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let start = readme.find("```yaml\n").expect("README has a plan") + 8;
    let end = start + readme[start..].find("```").unwrap();
    let loaded = baton::plan::parse_str("README.md", &readme[start..end])
        .unwrap_or_else(|r| panic!("{}", r.short()));
    assert_eq!(baton::expand::expand(&loaded.plan).total_jobs, 2);
}
