//! A run that ends on a runtime failure (3), a timeout (4) or a signal (5) still reports: its
//! metrics say the exit code and status, and its verdict is POSTed, as a graded run's are.

use crate::common;
use crate::notify::{Answer, receiver};

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::procs::{signal, wait, wait_mid_run};
use common::*;

fn metric(file: &Path, name: &str) -> Vec<String> {
    read(file)
        .lines()
        .filter(|l| l.starts_with(name))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_run_whose_launcher_cannot_start_still_writes_metrics_and_notifies() {
    let d = tmp("fleet-failed-start");
    // Two nodes without a launcher: refused before anything runs, on any machine.
    let plan = write(
        &d,
        "two.yaml",
        "version: 1\nname: two-nodes\nbackend: mpi\nlaunch: { nodes: 2, ranks_per_node: 1 }\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [8]\n",
    );
    let (url, got) = receiver(vec![Answer::Status(204)]);
    let prom = d.join("m.prom");
    let out = d.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let args = [
        "run",
        p(&plan),
        "-o",
        p(&out),
        "--metrics",
        p(&prom),
        "--notify",
        &url,
    ];
    let o = baton(&args);
    assert_eq!(code(&o), 3, "{}", show(&o));
    assert_eq!(
        metric(&prom, "baton_run_exit_code"),
        ["baton_run_exit_code{plan=\"two-nodes\"} 3"],
        "{}",
        show(&o)
    );
    assert!(
        metric(&prom, "baton_run_status")
            .contains(&"baton_run_status{plan=\"two-nodes\",status=\"fail\"} 1".to_string()),
        "{}",
        read(&prom)
    );
    {
        let got = got.lock().unwrap();
        assert_eq!(got.len(), 1, "{}", show(&o));
        let v: serde_json::Value = serde_json::from_str(&got[0].body).unwrap();
        assert_eq!(
            (v["exit_code"].as_i64(), v["status"].as_str()),
            (Some(3), Some("fail"))
        );
    }
    assert!(
        stdout(&o).contains("notify: http://127.0.0.1:"),
        "{}",
        show(&o)
    );
    // Another attempt is another run: the receiver must not take it for a retry of the first.
    let o = baton(&args);
    assert_eq!(code(&o), 3, "{}", show(&o));
    let got = got.lock().unwrap();
    assert_eq!(got.len(), 2, "{}", show(&o));
    assert_ne!(
        got[0].header("x-baton-run-id"),
        got[1].header("x-baton-run-id")
    );
}

#[test]
fn a_run_stopped_by_sigterm_reports_exit_5_with_what_it_measured() {
    let d = tmp("fleet-failed-sigterm");
    let (_, plan, out) = plan_dir(
        "fleet-failed-sigterm-plan",
        "version: 1\nname: stopped\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\ndefaults: { iters: 4, warmup: 1, timeout: 60s }\ntests:\n  - name: t\n    collective: [all_reduce, all_gather, broadcast, reduce]\n    sizes: [1K, 2K, 4K, 8K, 16K, 32K]\n",
    );
    let (url, got) = receiver(vec![Answer::Status(200)]);
    let prom = d.join("m.prom");
    let child = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["run", p(&plan), "-o", p(&out), "--metrics", p(&prom)])
        .args(["--notify", &url])
        .env("NO_COLOR", "1")
        .env("BATON_FAULT", "slow:us=20000")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    wait_mid_run(&out);
    signal(child.id() as i32, libc::SIGTERM);
    let (code, err) = wait(child, Duration::from_secs(30));
    assert_eq!(code, 5, "{err}");
    assert_eq!(
        metric(&prom, "baton_run_exit_code"),
        ["baton_run_exit_code{plan=\"stopped\"} 5"]
    );
    // The job that finished before the signal is measured.
    assert!(
        read(&prom).contains("baton_busbw_bytes_per_second{plan=\"stopped\""),
        "{}",
        read(&prom)
    );
    let got = got.lock().unwrap();
    assert_eq!(got.len(), 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(v["exit_code"].as_i64(), Some(5));
}
