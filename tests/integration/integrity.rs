//! Nothing measured is lost and nothing stale is graded, on real Open MPI: signals as a shell and
//! Slurm deliver them, a killed parent, two runs into one directory, earlier results, a plan
//! edited mid-run or swapped before `--resume`, a launcher with the wrong rank count, a full
//! disk.
#![cfg(feature = "mpi")]

use crate::common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use baton::results::{self, ErrorKind, JobStatus, Results, journal};
use common::procs::{none_survive, rows, signal, wait, wait_mid_run};

/// Four jobs of six rows each; `slow:us=20000` makes every launch take 20 ms, so a job lasts a
/// couple of seconds and a signal lands in the middle of one.
const SLOW: &str = "version: 1
name: integrity
backend: mpi
launch: { nodes: 1, ranks_per_node: 2 }
defaults: { iters: 4, warmup: 1, timeout: 60s }
tests:
  - name: t
    collective: [all_reduce, all_gather, broadcast, reduce]
    sizes: [1K, 2K, 4K, 8K, 16K, 32K]
";

const FAST: &str = "version: 1
name: integrity
backend: mpi
launch: { nodes: 1, ranks_per_node: 2 }
defaults: { iters: 2, warmup: 1 }
tests:
  - name: t
    collective: [all_reduce, all_gather]
    sizes: [1K, 4K]
";

/// `baton run PLAN -o OUT` started as a shell starts a job: in a process group of its own.
fn start(plan: &Path, out: &Path, extra: &[&str]) -> Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
    c.args(["run", common::p(plan), "-o", common::p(out)])
        .args(extra)
        .env("NO_COLOR", "1")
        .env("BATON_FAULT", "slow:us=20000")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    c.spawn().expect("baton starts")
}

fn resume(plan: &Path, out: &Path) -> (i32, String, Results) {
    let (code, err) = wait(start(plan, out, &["--resume"]), Duration::from_secs(90));
    let r = results::read_file(&out.join("results.json")).unwrap();
    (code, err, r)
}

/// After a stop: exit 5, every row seen in the journal is in `results.json`, the running job is
/// marked as cut short by the signal, JUnit is written, and `--resume` finishes the rest
/// without running the finished job again.
fn stopped_then_resumed(out: &Path, plan: &Path, before: usize, code: i32, err: &str, sig: &str) {
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("--resume"), "{err}");
    none_survive(out);
    let r = results::read_file(&out.join("results.json")).unwrap();
    assert!(rows(&r) >= before, "{} rows kept, {before} seen", rows(&r));
    assert!(
        !out.join(journal::FILE).exists(),
        "folded into results.json"
    );
    assert!(r.interrupted.as_deref().is_some_and(|i| i.starts_with(sig)));
    assert_eq!(r.jobs[0].status, JobStatus::Completed);
    assert_eq!(r.jobs[1].status, JobStatus::Partial);
    assert!(
        r.jobs[1]
            .errors
            .iter()
            .any(|e| e.kind == ErrorKind::Interrupted && e.message.contains(sig)),
        "{:?}",
        r.jobs[1].errors
    );
    let junit = common::read(&out.join("junit.xml"));
    assert!(junit.contains("t[collective=all_reduce]"), "{junit}");

    let first = r.jobs[0].repeats[0].started.clone();
    let (code, err, r) = resume(plan, out);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("resuming: 1 job(s) already complete, 3 to run"),
        "{err}"
    );
    assert_eq!(r.jobs.len(), 4);
    assert!(r.jobs.iter().all(|j| j.status == JobStatus::Completed));
    assert_eq!(
        r.jobs[0].repeats[0].started, first,
        "the finished job ran again"
    );
    assert!(r.finished.is_some() && r.interrupted.is_none());
}

#[test]
fn ctrl_c_to_the_process_group_keeps_every_row_and_resume_finishes() {
    let (_, plan, out) = common::plan_dir("integrity-sigint", SLOW);
    let child = start(&plan, &out, &[]);
    let group = child.id() as i32;
    let before = wait_mid_run(&out);
    // What a terminal's Ctrl-C does: SIGINT to the whole foreground group.
    signal(-group, libc::SIGINT);
    let (code, err) = wait(child, Duration::from_secs(20));
    stopped_then_resumed(&out, &plan, before, code, &err, "SIGINT");
}

#[test]
fn sigterm_to_baton_alone_stops_its_workers_too() {
    let (_, plan, out) = common::plan_dir("integrity-sigterm", SLOW);
    let child = start(&plan, &out, &[]);
    let before = wait_mid_run(&out);
    // What Slurm's time limit or scancel sends to the batch step.
    signal(child.id() as i32, libc::SIGTERM);
    let (code, err) = wait(child, Duration::from_secs(20));
    stopped_then_resumed(&out, &plan, before, code, &err, "SIGTERM");
}

#[test]
fn sigkill_of_baton_leaves_no_worker_and_loses_no_row() {
    let (_, plan, out) = common::plan_dir("integrity-sigkill", SLOW);
    let child = start(&plan, &out, &[]);
    let before = wait_mid_run(&out);
    signal(child.id() as i32, libc::SIGKILL);
    let _ = wait(child, Duration::from_secs(5));
    none_survive(&out);
    // Nothing could fold the journal; every reader does.
    let r = results::read(&out.join("results.json")).unwrap();
    assert!(rows(&r) >= before, "{} rows kept, {before} seen", rows(&r));
    let graded = common::baton(&[
        "grade",
        common::p(&plan),
        common::p(&out.join("results.json")),
    ]);
    assert!(
        common::stderr(&graded).contains("did not finish"),
        "{}",
        common::show(&graded)
    );
    let first = r.jobs[0].repeats[0].started.clone();
    let (code, err, r) = resume(&plan, &out);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 job(s) already complete, 3 to run"), "{err}");
    assert!(r.jobs.iter().all(|j| j.status == JobStatus::Completed));
    assert_eq!(r.jobs[0].repeats[0].started, first);
}

#[test]
fn a_second_run_into_the_same_directory_is_refused_and_the_first_is_untouched() {
    let (_, plan, out) = common::plan_dir("integrity-lock", SLOW);
    let first = start(&plan, &out, &[]);
    wait_mid_run(&out);
    let second = common::baton(&["run", common::p(&plan), "-o", common::p(&out)]);
    assert_eq!(common::code(&second), 2, "{}", common::show(&second));
    assert!(
        common::stderr(&second).contains("another baton run is writing here"),
        "{}",
        common::show(&second)
    );
    let resumed = common::baton(&["run", common::p(&plan), "-o", common::p(&out), "--resume"]);
    assert_eq!(common::code(&resumed), 2, "{}", common::show(&resumed));
    let (code, err) = wait(first, Duration::from_secs(90));
    assert_eq!(code, 0, "{err}");
    let r = results::read_file(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs.len(), 4);
    assert!(r.jobs.iter().all(|j| j.status == JobStatus::Completed));
    // The claim ends with the run.
    let again = common::baton(&["run", common::p(&plan), "-o", common::p(&out), "--resume"]);
    assert_eq!(common::code(&again), 0, "{}", common::show(&again));
}

fn run_fast(name: &str, text: &str) -> (PathBuf, PathBuf, PathBuf) {
    let (dir, plan, out) = common::plan_dir(name, text);
    let o = common::baton(&["run", common::p(&plan), "-o", common::p(&out)]);
    assert_eq!(common::code(&o), 0, "{}", common::show(&o));
    (dir, plan, out)
}

#[test]
fn a_new_run_keeps_earlier_results_aside() {
    let (_, plan, out) = run_fast("integrity-aside", FAST);
    let earlier = results::read_file(&out.join("results.json")).unwrap();
    let only = common::baton(&[
        "run",
        common::p(&plan),
        "-o",
        common::p(&out),
        "--only",
        "all_gather",
    ]);
    assert_eq!(common::code(&only), 0, "{}", common::show(&only));
    assert!(common::stderr(&only).contains("kept them as"));
    let aside: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            n.starts_with("results.") && n != "results.json"
        })
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(results::read_file(&aside[0]).unwrap(), earlier);
}

#[test]
fn resume_and_grade_refuse_results_of_another_plan() {
    let (dir, plan, out) = run_fast("integrity-identity", FAST);
    let before = common::read(&out.join("results.json"));
    // Same test name and job IDs, another measurement.
    let other = common::write(&dir, "other.yaml", &FAST.replace("iters: 2", "iters: 3"));
    let o = common::baton(&["run", common::p(&other), "-o", common::p(&out), "--resume"]);
    assert_eq!(common::code(&o), 2, "{}", common::show(&o));
    assert!(
        common::stderr(&o).contains("another plan"),
        "{}",
        common::show(&o)
    );
    assert_eq!(common::read(&out.join("results.json")), before);

    let dtype = common::write(
        &dir,
        "dtype.yaml",
        &FAST.replace("defaults: {", "defaults: { dtype: double,"),
    );
    let g = common::baton(&[
        "grade",
        common::p(&dtype),
        common::p(&out.join("results.json")),
    ]);
    assert_eq!(common::code(&g), 1, "{}", common::show(&g));
    assert!(
        common::stdout(&g).contains("measured with other parameters"),
        "{}",
        common::show(&g)
    );
    assert!(
        common::stdout(&g).contains("dtype float"),
        "{}",
        common::show(&g)
    );
    let g = common::baton(&[
        "grade",
        common::p(&plan),
        common::p(&out.join("results.json")),
    ]);
    assert_eq!(common::code(&g), 0, "{}", common::show(&g));
}

#[test]
fn a_launcher_with_another_rank_count_is_refused() {
    let (_, plan, out) = common::plan_dir(
        "integrity-ranks",
        &FAST.replace("ranks_per_node: 2", "ranks_per_node: 4"),
    );
    let mpi = Path::new(env!("CARGO_BIN_EXE_baton")).with_file_name("baton-mpi");
    let o = Command::new("mpirun")
        .args(["-np", "2", "--oversubscribe", "--allow-run-as-root"])
        .arg(&mpi)
        .args(["run", common::p(&plan), "-o", common::p(&out)])
        .output()
        .unwrap();
    assert_eq!(common::code(&o), 2, "{}", common::show(&o));
    assert!(
        common::stderr(&o).contains("asks for 4 ranks") && common::stderr(&o).contains("started 2"),
        "{}",
        common::show(&o)
    );
    assert!(!out.join("results.json").exists());
}

#[test]
fn a_plan_edited_during_the_run_changes_nothing_in_it() {
    let text = SLOW.replace(
        "    collective: [all_reduce, all_gather, broadcast, reduce]\n",
        "    collective: [all_reduce, all_gather]\n    matrix:\n      env: [{ X: a }, { X: b }]\n",
    );
    let (_, plan, out) = common::plan_dir("integrity-edit", &text);
    let loaded = baton::plan::parse_str("p.yaml", &text).unwrap();
    let want: std::collections::HashMap<String, String> = baton::expand::expand(&loaded.plan)
        .jobs
        .iter()
        .map(|j| {
            (
                j.id.clone(),
                baton::expand::job_identity(j, loaded.plan.backend),
            )
        })
        .collect();
    let child = start(&plan, &out, &[]);
    wait_mid_run(&out);
    // The next environment set's worker starts after this edit.
    std::fs::write(&plan, text.replace("iters: 4", "iters: 1, dtype: int8")).unwrap();
    let (code, err) = wait(child, Duration::from_secs(90));
    assert_eq!(code, 0, "{err}");
    let r = results::read_file(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs.len(), 4);
    for j in &r.jobs {
        assert_eq!(j.identity.as_ref(), want.get(&j.id), "{}", j.id);
        assert_eq!(j.settings.iters, 4, "{}", j.id);
    }
}

#[test]
fn a_newline_in_a_matrix_env_value_runs() {
    let text = FAST.replace(
        "    sizes: [1K, 4K]\n",
        "    sizes: [1K]\n    matrix:\n      env: [{ X: \"a\\nb\" }, { X: c }]\n",
    );
    let (_, _, out) = run_fast("integrity-newline", &text);
    let r = results::read_file(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs.len(), 4);
    assert!(r.jobs.iter().all(|j| j.status == JobStatus::Completed));
}

/// A 2 MiB tmpfs as the output directory, nearly full: the run must end promptly with exit 3,
/// naming the path, with every rank gone — not report "a collective hung" after its timeout.
#[test]
fn a_full_disk_ends_the_run_promptly_and_names_the_path() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: mounting a tmpfs needs root");
        return;
    }
    let dir = common::tmp("integrity-full");
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs", common::p(&mnt)])
        .status()
        .unwrap();
    assert!(ok.success(), "mount tmpfs");
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mnt.clone());
    // Fill it, then leave 16 KiB: room for the start, not for the whole run.
    let filler = mnt.join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
    }
    let len = std::fs::metadata(&filler).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&filler)
        .unwrap()
        .set_len(len.saturating_sub(16 << 10))
        .unwrap();
    let plan = common::write(
        &dir,
        "plan.yaml",
        &SLOW.replace("timeout: 60s", "timeout: 30s").replace(
            "[1K, 2K, 4K, 8K, 16K, 32K]",
            "{ from: 8, to: 64K, factor: 2 }",
        ),
    );
    let out = mnt.join("out");
    let t = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["run", common::p(&plan), "-o", common::p(&out)])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let took = t.elapsed();
    let err = common::stderr(&o);
    assert_eq!(common::code(&o), 3, "{}", common::show(&o));
    assert!(took < Duration::from_secs(25), "took {took:?}: {err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains(common::p(&out)), "{err}");
    assert!(!err.contains("hung"), "{err}");
    none_survive(&out);
}

/// mpirun's own failure (too few slots) in a rendered script is a runtime failure (exit 3), not
/// a failed criterion, and CI still gets a junit.xml saying what has no results.
#[test]
fn a_launcher_failure_in_a_rendered_script_is_exit_3_with_junit() {
    let d = common::tmp("integrity-launcher");
    let plan = common::write(
        &d,
        "plan.yaml",
        &FAST.replace("ranks_per_node: 2", "ranks_per_node: 512"),
    );
    let script = common::render_script(&d, &plan, "mpirun", &d.join("scripts"));
    let out = d.join("out");
    let r = common::run_script(&script, &out, 3);
    assert!(
        common::stderr(&r).contains("the launcher failed"),
        "{}",
        common::show(&r)
    );
    let junit = common::read(&out.join("junit.xml"));
    assert!(junit.contains("no results for this job"), "{junit}");
}

fn mpirun(plan: &Path, out: &Path, extra: &[&str]) -> Child {
    let mpi = Path::new(env!("CARGO_BIN_EXE_baton")).with_file_name("baton-mpi");
    let mut c = Command::new("mpirun");
    c.args([
        "-np",
        "2",
        "--oversubscribe",
        "--allow-run-as-root",
        "-x",
        "BATON_FAULT",
    ])
    .arg(&mpi)
    .args(["run", common::p(plan), "-o", common::p(out)])
    .args(extra)
    .env("BATON_FAULT", "slow:us=20000")
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .process_group(0);
    c.spawn().expect("mpirun starts")
}

/// Under a launcher (the batch script's steps), SIGTERM from Slurm's time limit reaches every
/// rank: rank 0 folds the journal and writes JUnit before leaving; `--resume` under the same
/// launcher continues from there.
#[test]
fn under_mpirun_sigterm_keeps_every_row_and_resume_continues() {
    let (_, plan, out) = common::plan_dir("integrity-launcher-sigterm", SLOW);
    let child = mpirun(&plan, &out, &[]);
    let group = child.id() as i32;
    let before = wait_mid_run(&out);
    signal(-group, libc::SIGTERM);
    let (code, err) = wait(child, Duration::from_secs(40));
    assert_ne!(code, 0, "{err}");
    none_survive(&out);
    let r = results::read_file(&out.join("results.json")).unwrap();
    assert!(
        rows(&r) >= before,
        "{} rows kept, {before} seen: {err}",
        rows(&r)
    );
    assert!(r.interrupted.is_some(), "{err}");
    assert_eq!(r.jobs[0].status, JobStatus::Completed);
    assert_eq!(r.jobs[1].status, JobStatus::Partial);
    assert!(out.join("junit.xml").is_file(), "{err}");
    let first = r.jobs[0].repeats[0].started.clone();

    let (code, err) = wait(mpirun(&plan, &out, &["--resume"]), Duration::from_secs(90));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 job(s) already complete, 3 to run"), "{err}");
    let r = results::read_file(&out.join("results.json")).unwrap();
    assert!(r.jobs.iter().all(|j| j.status == JobStatus::Completed));
    assert_eq!(r.jobs[0].repeats[0].started, first);
}

/// A second Ctrl-C ends at once (no waiting for workers to wind down), still losing nothing
/// journaled.
#[test]
fn a_second_ctrl_c_ends_at_once_and_keeps_every_row() {
    let (_, plan, out) = common::plan_dir("integrity-sigint-twice", SLOW);
    let child = start(&plan, &out, &[]);
    let group = child.id() as i32;
    let before = wait_mid_run(&out);
    let t = Instant::now();
    signal(-group, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(50));
    signal(child.id() as i32, libc::SIGINT);
    let (code, err) = wait(child, Duration::from_secs(20));
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(code, 5, "{err}");
    none_survive(&out);
    let r = results::read(&out.join("results.json")).unwrap();
    assert!(rows(&r) >= before, "{} rows kept, {before} seen", rows(&r));
}

/// `rm -rf OUT` during a soak (issue #20, F18): the journal is gone, so nothing measured from
/// then on could be kept; the run stops within seconds with exit 3 naming the journal, instead
/// of measuring into an unlinked file until its `repeat: 10h` is over.
#[test]
fn a_deleted_output_directory_stops_the_run() {
    let (_, plan, out) = common::plan_dir(
        "integrity-rm-out",
        &FAST.replace("sizes: [1K, 4K]", "sizes: [1K, 4K]\n    repeat: 10h"),
    );
    let child = start(&plan, &out, &[]);
    let t = Instant::now();
    while common::procs::journaled(&out).is_none_or(|r| rows(&r) < 2) {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the run never got going"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::remove_dir_all(&out).unwrap();
    let t = Instant::now();
    let (code, err) = wait(child, Duration::from_secs(60));
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "took {:?}: {err}",
        t.elapsed()
    );
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains(common::p(&out.join(journal::FILE))) && err.contains("deleted or replaced"),
        "{err}"
    );
    none_survive(&out);
}
