//! `baton run` end to end on real Open MPI (host backend): the live table, results, exit codes,
//! and the failure paths — corruption, a hung rank, a killed rank, failed init, missing tools.
#![cfg(feature = "mpi")]

use crate::common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use baton::results::{self, JobStatus};

fn baton() -> &'static str {
    env!("CARGO_BIN_EXE_baton")
}

fn text(o: &Output) -> (String, String) {
    (common::stdout(o), common::stderr(o))
}

const SEVEN: &str = "version: 1
name: seven
backend: mpi
launch: { nodes: 1, ranks_per_node: 2 }
tests:
  - name: all
    collective: [all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv]
    sizes: { from: 8, to: 256K, factor: 8 }
    matrix:
      dtype: [float, int32, double, uint8]
    expect:
      - wrong: 0
";

#[test]
fn seven_collectives_four_dtypes_verify_clean() {
    // Open MPI 4.1.4's AVX reduction component sums uint8 wrongly (baton's #wrong found it:
    // ~half the elements of a 2-rank MPI_Allreduce); the others are exact. Run without it.
    let ran = common::run_plan("mpi-seven", SEVEN, &[("OMPI_MCA_op", "^avx")]);
    let (o, out) = (&ran.output, &ran.out);
    let (stdout, stderr) = text(o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stdout.matches("# Out of bounds values : 0 OK").count(),
        28,
        "{stdout}"
    );
    assert!(stdout.contains(
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
    ));
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs.len(), 28);
    assert!(r.finished.is_some());
    for j in &r.jobs {
        assert_eq!(j.status, JobStatus::Completed, "{}", j.id);
        assert_eq!(j.layout.nranks, 2);
        assert_eq!(j.repeats[0].rows.len(), 6);
        for (_, row, _, c) in j.cells() {
            assert!(c.time_us.unwrap() > 0.0, "{} {}", j.id, row.requested);
            assert_ne!(c.wrong, Some(1), "{}", j.id);
            assert!(
                c.wrong.is_none_or(|w| w == 0),
                "{} at {}: {:?}",
                j.id,
                row.requested,
                c.wrong
            );
        }
    }
    // all_gather at 8 B over 2 ranks rounds the chunk to 0: size 0, as nccl-tests prints.
    let ag = r
        .jobs
        .iter()
        .find(|j| j.id == "all[collective=all_gather,dtype=float]")
        .unwrap();
    assert_eq!(
        (ag.repeats[0].rows[0].requested, ag.repeats[0].rows[0].size),
        (8, 0)
    );
    // In-place alltoall/sendrecv are not verified, like nccl-tests (N/A).
    let sr = r
        .jobs
        .iter()
        .find(|j| j.id == "all[collective=sendrecv,dtype=float]")
        .unwrap();
    assert!(
        sr.repeats[0]
            .rows
            .iter()
            .all(|row| row.in_place.as_ref().unwrap().wrong.is_none())
    );
}

#[test]
fn injected_corruption_is_counted_and_fails_the_run() {
    let ran = common::run_plan(
        "mpi-corrupt",
        "version: 1\nname: c\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 4 }\ntests:\n  - name: pairs\n    collective: all_reduce\n    sizes: [1K, 64K]\n    split: \"OR 1\"\n",
        &[("BATON_FAULT", "corrupt:rank=3")],
    );
    let (o, out) = (&ran.output, &ran.out);
    let (stdout, _) = text(o);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout.contains("# Out of bounds values : 4 FAILED"),
        "{stdout}"
    );
    let r = results::read(&out.join("results.json")).unwrap();
    let j = &r.jobs[0];
    assert_eq!(j.groups.len(), 2);
    assert_eq!(j.groups[1].members, vec![2, 3]);
    let cell = j.repeats[0].rows[0].out_of_place.as_ref().unwrap();
    assert_eq!(cell.wrong, Some(1));
    let g: Vec<(u64, Option<u64>)> = cell.groups.iter().map(|g| (g.color, g.wrong)).collect();
    assert_eq!(
        g,
        vec![(1, Some(0)), (3, Some(1))],
        "the corrupt rank's group, and only it"
    );
}

#[test]
fn a_hung_rank_times_out_keeps_earlier_results_and_the_run_goes_on() {
    let ran = common::run_plan(
        "mpi-stall",
        "version: 1\nname: s\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\ndefaults: { timeout: 3s }\ntests:\n  - name: first\n    collective: all_reduce\n    sizes: [1K]\n  - name: second\n    collective: all_gather\n    sizes: [1K, 2K]\n  - name: third\n    collective: broadcast\n    sizes: [1K]\n",
        &[("BATON_FAULT", "stall:rank=1:job=second")],
    );
    let (o, out) = (&ran.output, &ran.out);
    let took = ran.took;
    let (_, stderr) = text(o);
    assert_eq!(o.status.code(), Some(4), "{stderr}");
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs[0].status, JobStatus::Completed);
    assert_eq!(
        r.jobs[0].repeats[0].rows.len(),
        1,
        "the first job's measurements survive"
    );
    assert_eq!(r.jobs[1].status, JobStatus::Timeout);
    assert!(
        r.jobs[1].errors[0]
            .message
            .contains("second at 1K did not finish within 3s"),
        "{:?}",
        r.jobs[1].errors
    );
    // The watchdog ended that worker; a fresh one ran the job it had not reached.
    assert_eq!(
        r.jobs[2].status,
        JobStatus::Completed,
        "{:?}",
        r.jobs[2].errors
    );
    assert!(
        stderr.contains("starting a fresh worker for the 1 job(s)"),
        "{stderr}"
    );

    // --resume skips the finished jobs and completes the rest.
    let o = &common::baton_env(
        &[
            "run",
            common::p(&ran.plan),
            "-o",
            common::p(out),
            "--resume",
        ],
        &[],
    );
    let (stdout, stderr) = text(o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("2 job(s) already complete, 1 to run"),
        "{stderr}"
    );
    assert!(!stdout.contains("job=first"), "first must not run again");
    let r = results::read(&out.join("results.json")).unwrap();
    assert!(r.jobs.iter().all(|j| j.status == JobStatus::Completed));
}

#[test]
fn a_killed_rank_errors_its_job_and_a_fresh_worker_runs_the_rest() {
    let ran = common::run_plan(
        "mpi-crash",
        "version: 1\nname: k\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\ndefaults: { timeout: 20s }\ntests:\n  - name: ok\n    collective: all_reduce\n    sizes: [1K]\n  - name: dies\n    collective: all_gather\n    sizes: [1K]\n  - name: after\n    collective: broadcast\n    sizes: [1K]\n",
        &[("BATON_FAULT", "crash:rank=1:job=dies")],
    );
    let (o, out) = (&ran.output, &ran.out);
    let took = ran.took;
    let (_, stderr) = text(o);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert!(took < Duration::from_secs(25), "took {took:?}");
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs[0].status, JobStatus::Completed);
    assert_eq!(r.jobs[1].status, JobStatus::Error);
    // The survivors name the rank that died (issue #37), not only the worker's status.
    assert!(
        r.jobs[1].errors[0]
            .message
            .contains("a rank died during the job: rank 1 (pid "),
        "{:?}",
        r.jobs[1].errors
    );
    assert_eq!(
        r.jobs[2].status,
        JobStatus::Completed,
        "{:?}",
        r.jobs[2].errors
    );
}

#[test]
fn failed_communicator_init_errors_that_job_only() {
    let ran = common::run_plan(
        "mpi-init",
        "version: 1\nname: i\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\ntests:\n  - name: broken\n    collective: all_reduce\n    sizes: [1K]\n  - name: fine\n    collective: all_reduce\n    sizes: [1K]\n",
        &[("BATON_FAULT", "init-fail:rank=0:job=broken")],
    );
    let (o, out) = (&ran.output, &ran.out);
    assert_eq!(o.status.code(), Some(3));
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs[0].status, JobStatus::Error);
    assert!(
        r.jobs[0].errors[0]
            .message
            .contains("communicator initialisation failed")
    );
    assert_eq!(r.jobs[1].status, JobStatus::Completed);
}

#[test]
fn missing_mpirun_or_worker_is_a_clear_runtime_error() {
    let ran = common::run_plan(
        "mpi-missing",
        "version: 1\nname: m\nbackend: mpi\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [1K]\n",
        &[("PATH", "/nonexistent")],
    );
    let (o, out) = (&ran.output, &ran.out);
    let (_, stderr) = text(o);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr.contains("`mpirun` was not found on PATH"),
        "{stderr}"
    );
    // A lone `baton` without `baton-mpi` beside it (or on PATH) says how to get one.
    let lone = ran.dir.join("bin");
    std::fs::create_dir_all(&lone).unwrap();
    std::fs::copy(baton(), lone.join("baton")).unwrap();
    let o = Command::new(lone.join("baton"))
        .args(["run", common::p(&ran.plan), "-o", common::p(out)])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr.contains("--features mpi"), "{stderr}");
}

#[test]
fn under_mpirun_baton_mpi_is_the_rank_and_plain_baton_refuses() {
    let (_, p, out) = common::plan_dir(
        "mpi-launcher",
        "version: 1\nname: l\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 4 }\ntests:\n  - name: t\n    collective: [all_reduce, alltoall]\n    sizes: [4K]\n    split: \"DIV 2\"\n",
    );
    let worker = env!("CARGO_BIN_EXE_baton-mpi");
    let o = Command::new("mpirun")
        .args([
            "-np",
            "4",
            "--oversubscribe",
            "--allow-run-as-root",
            worker,
            "run",
            p.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .env_remove("BATON_FAULT")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs.len(), 2);
    assert_eq!(r.jobs[0].layout.nranks, 4);
    assert_eq!(r.jobs[0].groups.len(), 2);
    let o = Command::new("mpirun")
        .args([
            "-np",
            "2",
            "--oversubscribe",
            "--allow-run-as-root",
            baton(),
            "run",
            p.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "invalid input: {stderr}");
    assert!(stderr.contains("launch `baton-mpi run`"), "{stderr}");
    let junit = common::read(&out.join("junit.xml"));
    assert!(
        junit.contains("<error") && junit.contains("type=\"launch\""),
        "{junit}"
    );
}

/// One rank of many keeps an earlier run's results aside with the same words as a local run,
/// `--resume` hint included (#22: the rank driver's copy had drifted and lacked it).
#[test]
fn a_rank_run_keeps_earlier_results_aside_and_says_how_to_resume() {
    let (_, p, out) = common::plan_dir(
        "mpi-rank-kept",
        "version: 1\nname: k\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [4K]\n",
    );
    let run = || {
        Command::new("mpirun")
            .args(["-np", "2", "--oversubscribe", "--allow-run-as-root"])
            .arg(env!("CARGO_BIN_EXE_baton-mpi"))
            .args(["run", p.to_str().unwrap(), "-o", out.to_str().unwrap()])
            .env_remove("BATON_FAULT")
            .output()
            .unwrap()
    };
    let first = run();
    assert_eq!(first.status.code(), Some(0), "{:?}", text(&first));
    let again = run();
    let (_, stderr) = text(&again);
    assert_eq!(again.status.code(), Some(0), "{stderr}");
    let kept: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("kept them as"))
        .collect();
    assert_eq!(kept.len(), 1, "{stderr}");
    assert!(
        kept[0].ends_with("(use --resume to continue a run instead)"),
        "{stderr}"
    );
}

/// `baton run PLAN | head`: the reader leaving early ends the printing, not mpirun or the ranks
/// (mpirun writing into the closed pipe itself aborts every rank: "SIGPIPE detected").
#[test]
fn a_reader_that_leaves_early_does_not_end_the_run() {
    let (_, p, out) = common::plan_dir(
        "mpi-head",
        "version: 1\nname: h\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\ntests:\n  - name: t\n    collective: [all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv]\n    sizes: { from: 8, to: 64K, factor: 2 }\n",
    );
    let script = format!(
        "'{}' run '{}' -o '{}' | head -n 0; exit ${{PIPESTATUS[0]}}",
        baton(),
        p.display(),
        out.display()
    );
    let o = Command::new("bash")
        .args(["-c", &script])
        .env_remove("BATON_FAULT")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs.len(), 7);
    for j in &r.jobs {
        assert_eq!(j.status, JobStatus::Completed, "{}: {:?}", j.id, j.errors);
        assert_eq!(j.repeats[0].rows.len(), 14, "{}", j.id);
    }
}

/// `over: gpu-pairs` on one node of four ranks: three rounds in the same processes, every pair
/// once; with rank 2 corrupting its output, exactly its three pairs fail, so the report's
/// matrix shows rank 2 as a failed row (and no other cell failed).
#[test]
fn gpu_pairs_runs_every_pair_of_a_node_and_the_matrix_shows_a_bad_rank() {
    let ran = common::run_plan(
        "mpi-gpu-pairs",
        "version: 1\nname: gp\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 4 }\ndefaults: { iters: 5, warmup: 1 }\ntests:\n  - name: pairs\n    collective: all_reduce\n    sizes: [1K, 64K]\n    over: gpu-pairs\n    expect: [ { wrong: 0 } ]\n",
        &[("BATON_FAULT", "corrupt:rank=2")],
    );
    let (o, out) = (&ran.output, &ran.out);
    let (stdout, stderr) = text(o);
    assert_eq!(o.status.code(), Some(1), "{stdout}{stderr}");
    let r = results::read(&out.join("results.json")).unwrap();
    let ids: Vec<&str> = r.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "pairs[split=PAIRS 1/3]",
            "pairs[split=PAIRS 2/3]",
            "pairs[split=PAIRS 3/3]"
        ]
    );
    let pids: std::collections::BTreeSet<Option<u32>> = r
        .jobs
        .iter()
        .flat_map(|j| j.layout.ranks.iter().map(|k| k.pid))
        .collect();
    assert_eq!(pids.len(), 4, "no relaunch between rounds: {pids:?}");
    let svg = std::fs::read_to_string(out.join("report/charts/gpu-pairs-00.svg")).unwrap();
    let failed: Vec<&str> = svg
        .split("<title>")
        .skip(1)
        .filter_map(|t| t.split("</title>").next())
        .filter(|t| t.contains("(FAIL)"))
        .collect();
    assert_eq!(failed.len(), 6, "three pairs, both halves: {failed:?}");
    assert!(failed.iter().all(|t| t.contains("rank 2")), "{failed:?}");
    let md = std::fs::read_to_string(out.join("report/report.md")).unwrap();
    assert!(md.contains("## GPU pairs"), "{md}");
    assert!(md.contains("charts/gpu-pairs-00.svg"), "{md}");
}

/// Two ranks per node: one round of one pair, whose split leaves a single group (results keep
/// no per-group cells for it); the matrix must still show the pair's number, not "no value".
#[test]
fn gpu_pairs_of_a_two_rank_node_has_its_one_pair_in_the_matrix() {
    let ran = common::run_plan(
        "mpi-gpu-pairs-2",
        "version: 1\nname: gp\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\ndefaults: { iters: 5, warmup: 1 }\ntests:\n  - name: pairs\n    collective: all_reduce\n    sizes: [1K, 64K]\n    over: gpu-pairs\n",
        &[],
    );
    assert_eq!(
        ran.output.status.code(),
        Some(0),
        "{}",
        common::show(&ran.output)
    );
    let svg = std::fs::read_to_string(ran.out.join("report/charts/gpu-pairs-00.svg")).unwrap();
    assert!(svg.contains("rank 0 × rank 1: "), "{svg}");
    assert!(!svg.contains("no value") && svg.contains("(pass)"), "{svg}");
}

/// `baton run PLAN -o OUT` started in the background, with `fault` as `BATON_FAULT` (none
/// when `None`), stdout dropped and stderr piped for `procs::wait`.
fn spawn_run(plan: &Path, out: &Path, fault: Option<&str>) -> std::process::Child {
    let mut c = Command::new(baton());
    c.args(["run", common::p(plan), "-o", common::p(out)])
        .env("NO_COLOR", "1")
        .env_remove("BATON_FAULT")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    if let Some(f) = fault {
        c.env("BATON_FAULT", f);
    }
    c.spawn().unwrap()
}

/// A rank stopped with SIGSTOP mid-job (issue #20, F17): the collective hangs, rank 0's watchdog
/// records the timeout (exit 4), and the record names the rank, its pid and host.
#[test]
fn a_stopped_rank_is_named_in_the_timeout_record() {
    use common::procs::{journaled, none_survive, rows, signal, wait};
    let (_, plan, out) = common::plan_dir(
        "mpi-sigstop",
        "version: 1\nname: s\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 3 }\ndefaults: { timeout: 3s, iters: 5, warmup: 1 }\ntests:\n  - name: soak\n    collective: all_reduce\n    sizes: [1K]\n    repeat: 5m\n",
    );
    let child = spawn_run(&plan, &out, None);
    let t = std::time::Instant::now();
    let r = loop {
        if let Some(r) = journaled(&out).filter(|r| rows(r) > 3) {
            break r;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the run never got going"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let stopped = &r.jobs[0].layout.ranks[2];
    let pid = stopped.pid.unwrap();
    signal(pid as i32, libc::SIGSTOP);
    let (code, err) = wait(child, Duration::from_secs(60));
    assert_eq!(code, 4, "{err}");
    let r = results::read(&out.join("results.json")).unwrap();
    let named = format!(
        "rank 2 (pid {pid} on {}) is stopped (SIGSTOP)",
        stopped.host
    );
    let job = &r.jobs[0];
    assert_eq!(job.status, JobStatus::Timeout);
    // The stop lands wherever the repeating job is: in a measurement, in a repeat's warm-up or
    // in the ranks' vote on another repeat (MPI's allgather lets some ranks through that one).
    let hung = |m: &str| {
        ["soak at 1K", "soak warm-up", "soak repeat vote"]
            .iter()
            .any(|at| m.contains(at))
    };
    assert!(
        job.errors.iter().any(|e| hung(&e.message)
            && e.message.contains("did not finish within 3s")
            && e.message.contains(&named)),
        "{:?}\n{err}",
        job.errors
    );
    // mpirun ends the stopped rank with the rest.
    none_survive(&out);
}

/// A rank that never reaches the ranks' start-up meetings (`stall-start`, as one stuck in its own
/// set-up): its peer's start-up watchdog ends the worker at the first job's timeout and the
/// margin, where Open MPI alone would wait forever, and the job is recorded as timed out,
/// saying why.
#[test]
fn a_rank_that_never_starts_times_the_worker_out_at_start_up() {
    use common::procs::{none_survive, wait};
    let (_d, plan, out) = common::plan_dir(
        "mpi-stall-start",
        "version: 1\nname: s\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\ndefaults: { timeout: 1s }\ntests:\n  - name: first\n    collective: all_reduce\n    sizes: [1K]\n",
    );
    let child = spawn_run(&plan, &out, Some("stall-start:rank=1"));
    let (code, err) = wait(child, Duration::from_secs(120));
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains(
            "rank 0: timeout: the ranks' start-up (before the first job) did not finish within 31s"
        ),
        "{err}"
    );
    let r = results::read(&out.join("results.json")).unwrap();
    let job = &r.jobs[0];
    assert_eq!(job.status, JobStatus::Timeout, "{:?}", job.errors);
    assert!(
        job.errors[0]
            .message
            .contains("timed out at start-up, before its first job"),
        "{:?}",
        job.errors
    );
    none_survive(&out);
}

/// One rank per process under mpirun (`mpirun -np 2 baton-mpi run …`), a rank stalled in the
/// second job: rank 0's watchdog ends the run with 4, and `results.json` holds every measured
/// row — the first job's, the timeout's record — not the empty results the claim started with.
#[test]
fn a_rank_mode_timeout_keeps_every_measured_row_in_results() {
    let (_d, plan, out) = common::plan_dir(
        "mpi-rank-timeout",
        "version: 1\nname: s\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\ndefaults: { timeout: 3s }\ntests:\n  - name: first\n    collective: all_reduce\n    sizes: [1K]\n  - name: second\n    collective: all_gather\n    sizes: [1K, 2K]\n  - name: third\n    collective: broadcast\n    sizes: [1K]\n",
    );
    let o = Command::new("mpirun")
        .args(["--oversubscribe", "--allow-run-as-root", "-np", "2"])
        .args(["-x", "BATON_FAULT=stall:rank=1:job=second"])
        .arg(env!("CARGO_BIN_EXE_baton-mpi"))
        .args(["run", common::p(&plan), "-o", common::p(&out)])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(4), "{stdout}{stderr}");
    let r = results::read(&out.join("results.json")).unwrap();
    let ids: Vec<&str> = r.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids[..2], ["first", "second"], "{ids:?}");
    assert_eq!(r.jobs[0].status, JobStatus::Completed);
    assert_eq!(r.jobs[0].repeats[0].rows.len(), 1, "the first job's row");
    assert_eq!(r.jobs[1].status, JobStatus::Timeout);
    assert!(
        r.jobs[1].errors[0]
            .message
            .contains("did not finish within 3s"),
        "{:?}",
        r.jobs[1].errors
    );
    assert!(out.join("junit.xml").is_file(), "the run's JUnit");
    assert!(!out.join("journal.jsonl").exists(), "folded");
}
