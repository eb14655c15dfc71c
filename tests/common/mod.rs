//! Helpers shared by the integration tests: running the real `baton` binary, scratch
//! directories, the nccl-tests fixtures, and edits that make synthetic variants of a log.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod chromium;
#[cfg(feature = "mpi")]
pub mod cluster;
#[cfg(feature = "mpi")]
pub mod localsets;
pub mod procs;
pub mod render;
pub mod services;
pub mod verdicts;

use baton::collective::{Collective, Dtype};

/// PATH with the built `baton` and `baton-mpi` first. Rendered scripts call them by name (the
/// machine that renders is seldom the one that runs), as a site's module or install would put
/// them on PATH; the helpers that render, submit or run scripts hand them this PATH.
pub fn path_with_baton() -> std::ffi::OsString {
    let dir = Path::new(env!("CARGO_BIN_EXE_baton")).parent().unwrap();
    let mut dirs = vec![dir.to_path_buf()];
    if let Some(p) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(dirs).unwrap()
}

pub fn baton(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(args)
        .env("PATH", path_with_baton())
        .env("NO_COLOR", "1")
        .output()
        .expect("baton runs")
}

/// `baton ARGS`, killed (and the test failed) if it takes more than 30 s: a hang is the defect
/// (opening a FIFO waits for a peer, a read of a device never ends).
pub fn baton_bounded(args: &[&str]) -> std::process::Output {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let mut child = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("baton {args:?} still running after 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// `baton` with extra environment and without an inherited `BATON_FAULT` (a stray one would
/// fake a fault).
pub fn baton_env(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
    c.args(args)
        .env("NO_COLOR", "1")
        .env("PATH", path_with_baton())
        .env_remove("BATON_FAULT");
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output().expect("baton runs")
}

/// The plan `text` as `plan.yaml` in the fresh scratch directory `name`: the directory, the
/// plan, and `out` inside it for results.
pub fn plan_dir(name: &str, text: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = tmp(name);
    let plan = write(&dir, "plan.yaml", text);
    let out = dir.join("out");
    (dir, plan, out)
}

/// One `baton run` of a plan written for the test: where everything went and how it ended.
pub struct PlanRun {
    pub dir: PathBuf,
    pub plan: PathBuf,
    /// The `-o` directory (results.json, junit.xml, report/).
    pub out: PathBuf,
    pub output: Output,
    pub took: std::time::Duration,
}

/// `baton run PLAN -o DIR/out` of the plan `text`, written to the fresh scratch directory
/// `name`, with extra environment.
pub fn run_plan(name: &str, text: &str, envs: &[(&str, &str)]) -> PlanRun {
    let (dir, plan, out) = plan_dir(name, text);
    let t = std::time::Instant::now();
    let output = baton_env(&["run", p(&plan), "-o", p(&out)], envs);
    PlanRun {
        dir,
        plan,
        out,
        output,
        took: t.elapsed(),
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit code, with the output in the panic message when a test asserts on it.
pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

pub fn show(o: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", stdout(o), stderr(o))
}

/// A fresh scratch directory for one test.
pub fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/nccl-tests/h200x2")
        .join(name)
}

pub fn plan(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/plans")
        .join(name)
}

pub fn read(p: &Path) -> String {
    std::fs::read_to_string(p).expect("readable")
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("writable");
    p
}

pub fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// Ingests `logs` into `dir/out`, asserting success.
pub fn ingest(dir: &Path, out: &str, logs: &[&Path], job: Option<&str>) -> PathBuf {
    let o = dir.join(out);
    let mut args = vec!["ingest"];
    args.extend(logs.iter().map(|l| p(l)));
    args.extend(["-o", p(&o)]);
    if let Some(j) = job {
        args.extend(["--job", j]);
    }
    let r = baton(&args);
    assert_eq!(code(&r), 0, "{}", show(&r));
    o
}

pub fn results(path: &Path) -> baton::results::Results {
    baton::results::read(path).expect("results file")
}

/// The four healthy fixtures as `dir/healthy.json`: the passing run several test files grade.
pub fn healthy(dir: &Path) -> PathBuf {
    let logs = [
        "all_reduce.txt",
        "all_gather.txt",
        "alltoall.txt",
        "broadcast.txt",
    ]
    .map(fixture);
    ingest(
        dir,
        "healthy.json",
        &logs.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
        None,
    )
}

/// The healthy and NET/Socket debug runs as `dir/base.json`, `dir/sock.json`: the regression pair.
pub fn base_and_socket(dir: &Path) -> (PathBuf, PathBuf) {
    let base = ingest(dir, "base.json", &[&fixture("debug_healthy.txt")], None);
    let sock = ingest(dir, "sock.json", &[&fixture("debug_socket.txt")], None);
    (base, sock)
}

/// The failing nvlink grade of sock.json vs base.json (+ `extra`) several tests start from.
pub fn grade_socket(dir: &Path, extra: &[&str]) -> String {
    let (base, sock) = base_and_socket(dir);
    let nvlink = plan("h200x2-nvlink.yaml");
    let mut args = vec!["grade", p(&nvlink), p(&sock), "--baseline", p(&base)];
    args.extend(extra);
    let o = baton(&args);
    assert_eq!(code(&o), 1, "{}", show(&o));
    stdout(&o)
}

/// all_reduce.txt with `wrong` in #wrong `field` (8 out-, 12 in-place) at `size`: corrupt data.
pub fn corrupted_all_reduce(dir: &Path, size: u64, field: usize, wrong: &str) -> PathBuf {
    let text = edit_rows(&read(&fixture("all_reduce.txt")), |s, f| {
        if s == size {
            f[field] = wrong.into();
        }
    });
    let log = write(dir, "wrong.txt", &text);
    let out = dir.join("r.json");
    let r = baton(&["ingest", p(&log), "-o", p(&out)]);
    // A log whose rows count wrong elements shows a failed data check: exit 1, results written.
    assert_eq!(code(&r), 1, "{}", show(&r));
    out
}

/// An all_reduce test over every fixture size, shared by criteria tests that append `expect:`.
pub const ALLREDUCE_SWEEP: &str =
    "  - name: allreduce\n    collective: all_reduce\n    sizes: { from: 8, to: 8G, factor: 2 }\n";

/// A plan `name` (file `dir/name`) on the fixtures' 2-rank layout, so tests spell only `tests`.
pub fn two_gpu_plan(dir: &Path, name: &str, tests: &str) -> PathBuf {
    write(
        dir,
        name,
        &format!(
            "version: 1\nname: {name}\nbackend: nccl\nlaunch: {{ nodes: 1, ranks_per_node: 2 }}\ntests:\n{tests}"
        ),
    )
}

/// An mpi plan with one all_reduce test `t`, so tests spell only its `top` and `test` keys.
pub fn mpi_plan(dir: &Path, name: &str, top: &str, test: &str) -> PathBuf {
    write(
        dir,
        "plan.yaml",
        &format!(
            "version: 1\nname: {name}\nbackend: mpi\n{top}tests:\n  - name: t\n    collective: all_reduce\n{test}"
        ),
    )
}

/// An environment map as `(name, value)` pairs in order, to compare against a literal list.
pub fn env_pairs<'a>(
    env: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Vec<(&'a str, &'a str)> {
    env.into_iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// `baton` run from `dir`, no BATON_FAULT: sbatch submits from there, so job output lands there.
pub fn baton_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(args)
        .env("PATH", path_with_baton())
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("BATON_FAULT")
        .output()
        .expect("baton runs")
}

/// Renders one `target` script into `scripts`; its path as render reports it, so none is spelt.
pub fn render_script(dir: &Path, plan: &Path, target: &str, scripts: &Path) -> PathBuf {
    let o = baton_in(dir, &["render", p(plan), "-t", target, "-o", p(scripts)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let tail = format!(" ({target})");
    let line = stdout(&o)
        .lines()
        .find_map(|l| {
            l.strip_prefix("wrote ")?
                .strip_suffix(&tail)
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("no {target} script in {}", show(&o)));
    PathBuf::from(line)
}

/// Runs a rendered script into `out` (timeout 300, no Slurm job or BATON_FAULT), asserting `want`.
pub fn run_script(script: &Path, out: &Path, want: i32) -> Output {
    let r = Command::new("timeout")
        .arg("300")
        .arg(script)
        .arg(out)
        .env("PATH", path_with_baton())
        .env_remove("SLURM_JOB_ID")
        .env_remove("BATON_FAULT")
        .output()
        .expect("the script runs");
    assert_eq!(code(&r), want, "{}", show(&r));
    r
}

/// Rewrites every table row of an nccl-tests text log: `f(size)` returns the slowdown factor
/// (time × f, bandwidths ÷ f), as a degraded fabric would print them.
pub fn slow_rows(text: &str, f: impl Fn(u64) -> f64) -> String {
    // busbw over algbw, the collective's factor, from the row printed with the most digits (the
    // largest algbw): algbw and busbw are recomputed from the size and the slowed time, as
    // nccl-tests computes them, so the log stays consistent at its printed precision.
    let factor = text
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            Some((
                t.get(6)?.parse::<f64>().ok()?,
                t.get(7)?.parse::<f64>().ok()?,
            ))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map_or(1.0, |(alg, bus)| if alg > 0.0 { bus / alg } else { 1.0 });
    edit_rows(text, |size, t| {
        let k = f(size);
        for half in [5, 9] {
            let time: f64 = t[half].parse::<f64>().unwrap() * k;
            let alg = size as f64 / time / 1e3;
            t[half] = format!("{time:.2}");
            t[half + 1] = format!("{alg:.2}");
            t[half + 2] = format!("{:.2}", alg * factor);
        }
    })
}

/// Applies `f` to the whitespace-separated fields of every table row, keeping other lines.
pub fn edit_rows(text: &str, f: impl Fn(u64, &mut Vec<String>)) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with(|c: char| c.is_ascii_digit()) {
            let mut fields: Vec<String> = t.split_whitespace().map(str::to_string).collect();
            let size: u64 = fields[0].parse().unwrap();
            f(size, &mut fields);
            out.push_str(&row(&fields));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// A table row in nccl-tests' column widths.
pub fn row(f: &[String]) -> String {
    let widths = [12, 12, 8, 6, 6, 7, 6, 6, 6, 7, 6, 6, 6];
    f.iter()
        .enumerate()
        .map(|(i, v)| format!("{:>w$}", v, w = widths.get(i).copied().unwrap_or(6)))
        .collect::<Vec<_>>()
        .join("  ")
}

/// A synthetic nccl-tests text log. `groups` holds the split color of each rank (one process
/// per rank); busbw follows a healthy-looking curve scaled by `speed(requested)`.
pub struct Synth {
    pub collective: Collective,
    pub dtype: Dtype,
    pub op: &'static str,
    pub root: i64,
    pub groups: Vec<u64>,
    pub min: u64,
    pub max: u64,
    pub factor: u64,
    pub check: bool,
    pub timestamps: bool,
    pub repeats: usize,
    pub footer: bool,
}

impl Synth {
    pub fn new(collective: Collective, ranks: u64) -> Self {
        Synth {
            collective,
            dtype: Dtype::Float,
            op: if collective.reduces() || collective == Collective::SendRecv {
                "sum"
            } else {
                "none"
            },
            root: if collective.rooted() { 0 } else { -1 },
            groups: vec![0; ranks as usize],
            min: 1 << 20,
            max: 1 << 30,
            factor: 4,
            check: true,
            timestamps: false,
            repeats: 1,
            footer: true,
        }
    }

    pub fn text(&self) -> String {
        let prog = self.collective.nccl_tests_binary();
        let mut o = String::new();
        o.push_str("# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803\n");
        o.push_str(&format!("# Collective test starting: {prog}\n"));
        o.push_str(&format!(
            "# nThread 1 nGpus 1 minBytes {} maxBytes {} step: {}(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: {} graph: 0 unalign: 0\n#\n# Using devices\n",
            self.min, self.max, self.factor, u8::from(self.check)
        ));
        for (r, g) in self.groups.iter().enumerate() {
            o.push_str(&format!(
                "#  Rank {r:2} Group {g:2} Pid {:6} on {:>10} device {:2} [0000:{:02x}:00] NVIDIA H200\n",
                1000 + r,
                format!("node{:02}", r / 8 + 1),
                r % 8,
                0x18 + r
            ));
        }
        o.push_str("#\n#                                                              out-of-place                       in-place          \n");
        o.push_str(&format!(
            "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong {}\n",
            if self.timestamps { "          timestamp" } else { "" }
        ));
        o.push_str("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n");
        let g0 = self.groups[0];
        let n = self.groups.iter().filter(|g| **g == g0).count() as u64;
        for _ in 0..self.repeats {
            let mut s = self.min;
            while s <= self.max {
                let c = self.collective.counts(s, self.dtype, n);
                let size = c.size_bytes(self.dtype);
                let busbw_target = 300.0 * s as f64 / (s as f64 + (64u64 << 20) as f64);
                let factor = self.collective.busbw_factor(n);
                let time = if size == 0 {
                    10.0
                } else {
                    let alg = busbw_target / factor.max(1e-9);
                    (size as f64 / 1e9 / alg * 1e6).max(10.0)
                };
                let (alg, bus) = self.collective.bandwidths(size, time, n);
                let wrong = |checked: bool| {
                    if self.check && checked {
                        "0".to_string()
                    } else {
                        "N/A".to_string()
                    }
                };
                let mut f: Vec<String> = vec![
                    size.to_string(),
                    c.param.to_string(),
                    self.dtype.to_string(),
                    self.op.to_string(),
                    self.root.to_string(),
                    format!("{time:.2}"),
                    format!("{alg:.2}"),
                    format!("{bus:.2}"),
                    wrong(true),
                    format!("{time:.2}"),
                    format!("{alg:.2}"),
                    format!("{bus:.2}"),
                    wrong(self.collective.checks_in_place()),
                ];
                if self.timestamps {
                    f.push("2026-11-30".into());
                    f.push("05:12:09".into());
                }
                o.push_str(&row(&f));
                o.push('\n');
                s *= self.factor;
            }
        }
        if self.footer {
            o.push_str("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 100 \n#\n");
            o.push_str(&format!("# Collective test concluded: {prog}\n#\n"));
        }
        o
    }
}

/// A service a test needs is missing (`what`, and `why`). On a developer's machine the test
/// says so (`SKIPPED: no …`) and returns; in CI, which always has Slurm, the simulated cluster,
/// Open MPI and MPICH, a test that did not run must not count as passed, so it fails there
/// (`CI=true`, or the service's own `BATON_REQUIRE_…=1`).
pub fn missing(what: &str, require: &str, why: &str) {
    let set = |var: &str, value: &str| std::env::var(var).as_deref() == Ok(value);
    if set("CI", "true") || set(require, "1") {
        panic!("no {what}: {why} (CI=true or {require}=1: a missing {what} is a failure)");
    }
    // Straight to the file descriptor: the test harness captures eprintln! of passing tests.
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: no {what}: {why}");
}

/// `baton report PLAN RESULTS -o DIR/rep`, which must succeed: its report.md.
pub fn report_md(dir: &Path, plan: &Path, results: &Path) -> String {
    let rep = dir.join("rep");
    let o = baton(&["report", p(plan), p(results), "-o", p(&rep)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    std::fs::read_to_string(rep.join("report.md")).unwrap()
}
