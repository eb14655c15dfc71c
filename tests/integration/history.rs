//! `baton history`: runs kept in an SQLite store, shown as a trend, and safe with several CI
//! jobs adding at once.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// `n` distinct runs of the healthy fixtures (their start times differ), as results files.
pub(crate) fn runs(d: &Path, n: usize) -> Vec<PathBuf> {
    let healthy = healthy(d);
    let base = results(&healthy);
    (0..n)
        .map(|i| {
            let mut r = base.clone();
            r.started = Some(format!("2026-01-{:02}T03:00:00Z", i + 1));
            // A slow slide: 1% less busbw each night.
            for j in &mut r.jobs {
                for c in j
                    .repeats
                    .iter_mut()
                    .flat_map(|x| &mut x.rows)
                    .flat_map(|row| row.out_of_place.iter_mut())
                {
                    if let Some(t) = c.time_us.as_mut() {
                        *t *= 1.0 + i as f64 / 100.0;
                    }
                }
            }
            let f = d.join(format!("night-{i}.json"));
            baton::results::write_atomic(&f, &r).unwrap();
            f
        })
        .collect()
}

fn rows(out: &str) -> Vec<&str> {
    out.lines()
        .skip(1)
        .filter(|l| !l.starts_with('('))
        .collect()
}

#[test]
fn concurrent_adds_keep_every_run_and_repeats_add_nothing() {
    let d = tmp("history_concurrent");
    let files = runs(&d, 8);
    let store = d.join("ci/history.sqlite");
    // Eight CI jobs finishing at once, each adding its own run to a store none of them has
    // created yet (two stores, 16 writers). All are spawned before any is waited for.
    let mut procs: Vec<_> = files
        .iter()
        .map(|f| {
            Command::new(env!("CARGO_BIN_EXE_baton"))
                .args(["history", "add", p(f), "--store", p(&store)])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let fresh = d.join("fresh.sqlite");
    let mut racers: Vec<_> = files
        .iter()
        .map(|f| {
            Command::new(env!("CARGO_BIN_EXE_baton"))
                .args(["history", "add", p(f), "--store", p(&fresh)])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in procs.drain(..).chain(racers.drain(..)) {
        let o = c.wait_with_output().unwrap();
        assert_eq!(code(&o), 0, "{}", show(&o));
    }
    for s in [&store, &fresh] {
        let o = baton(&["history", "show", "--store", p(s)]);
        assert_eq!(code(&o), 0, "{}", show(&o));
        let out = stdout(&o);
        assert_eq!(rows(&out).len(), 8 * 4, "8 runs of 4 jobs:\n{out}");
        for night in 1..=8 {
            assert!(
                out.contains(&format!("2026-01-{night:02} 03:00:00")),
                "night {night}:\n{out}"
            );
        }
    }
    // The same results again (a retried CI job): nothing new.
    let o = baton(&["history", "add", p(&files[0]), "--store", p(&store)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(stdout(&o).contains("already in the store"), "{}", show(&o));
    let o = baton(&["history", "show", "--store", p(&store)]);
    assert_eq!(rows(&stdout(&o)).len(), 32);
}

#[test]
fn show_filters_by_job_node_and_age_and_draws_the_trend() {
    let d = tmp("history_show");
    let files = runs(&d, 4);
    let store = d.join("h.sqlite");
    let mut args = vec!["history", "add"];
    args.extend(files.iter().map(|f| p(f)));
    args.extend(["--store", p(&store)]);
    let o = baton(&args);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let job = results(&files[0]).jobs[0].id.clone();
    let o = baton(&[
        "history",
        "show",
        "--store",
        p(&store),
        "--job",
        &job,
        "--last",
        "2",
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let out = stdout(&o);
    let lines = rows(&out);
    assert_eq!(lines.len(), 2, "{out}");
    assert!(out.lines().next().unwrap().starts_with("run date"), "{out}");
    assert!(lines[0].contains("2026-01-03") && lines[1].contains("2026-01-04"));
    // Oldest first, key size 8G, busbw sliding down.
    let busbw = |l: &str| -> f64 { l.split_whitespace().rev().nth(1).unwrap().parse().unwrap() };
    assert!(lines[0].contains(" 8G "), "{out}");
    assert!(busbw(lines[0]) > busbw(lines[1]), "{out}");
    let o = baton(&["history", "show", "--store", p(&store), "--node", "other"]);
    assert_eq!(rows(&stdout(&o)).len(), 0);
    let chart = d.join("trend.svg");
    let o = baton(&[
        "history",
        "show",
        "--store",
        p(&store),
        "--node",
        "vm",
        "--chart",
        p(&chart),
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(
        rows(&stdout(&o)).len(),
        16 + 1,
        "16 rows and the chart line"
    );
    let svg = read(&chart);
    assert!(
        svg.starts_with("<svg") && svg.contains("at 8G on vm"),
        "{svg}"
    );
    assert_eq!(
        svg.matches("<circle").count(),
        16,
        "a marker per job and run"
    );
}

#[test]
fn a_store_that_is_not_one_is_refused() {
    let d = tmp("history_bad");
    let files = runs(&d, 1);
    let o = baton(&["history", "show", "--store", p(&d.join("missing.sqlite"))]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("baton history add"), "{}", show(&o));
    assert!(!d.join("missing.sqlite").exists());
    let notes = write(&d, "notes.txt", "not a database\n");
    let o = baton(&["history", "add", p(&files[0]), "--store", p(&notes)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("not a baton history store"),
        "{}",
        show(&o)
    );
    assert_eq!(read(&notes), "not a database\n", "left as it was");
    let o = baton(&["history", "add", p(&files[0]), "--store", p(&files[0])]);
    assert_eq!(
        code(&o),
        2,
        "the store would replace its input: {}",
        show(&o)
    );
    let bad = write(&d, "bad.json", "{\"format\": \"nope\"}");
    let o = baton(&["history", "add", p(&bad), "--store", p(&d.join("h.sqlite"))]);
    assert_eq!(code(&o), 2, "{}", show(&o));
}

/// The test plan with a `trend` criterion on all_reduce, and `top` (e.g. `history:`) added.
pub(crate) fn trend_plan(d: &Path, name: &str, top: &str) -> PathBuf {
    let text = read(&plan("h200x2.yaml"))
        .replace(
            "      - wrong: 0\n        at: 8G\n",
            "      - wrong: 0\n        at: 8G\n      - trend: \"<= 5% below the median of the last 3 runs\"\n",
        )
        .replace("backend: nccl\n", &format!("backend: nccl\n{top}"));
    assert!(text.contains("trend:"), "{text}");
    write(d, name, &text)
}

#[test]
fn trend_fails_a_run_below_the_median_of_its_last_runs() {
    let d = tmp("history_trend");
    // Nights 0..8 slide by 1% each; the store holds nights 0-3.
    let nights = runs(&d, 9);
    let store = d.join("h.sqlite");
    let mut args = vec!["history", "add"];
    args.extend(nights[..4].iter().map(|f| p(f)));
    args.extend(["--store", p(&store)]);
    assert_eq!(code(&baton(&args)), 0);
    let plan = trend_plan(&d, "trend.yaml", "");
    let grade = |night: &Path, extra: &[&str]| {
        let mut a = vec!["grade", p(&plan), p(night)];
        a.extend(extra);
        baton(&a)
    };
    // Night 4 is 2% below the median of nights 1-3: within 5%.
    let o = grade(&nights[4], &["--history", p(&store)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    // Night 8 is 6% below it: the slow slide fails.
    let o = grade(
        &nights[8],
        &["--history", p(&store), "--report", p(&d.join("r"))],
    );
    assert_eq!(code(&o), 1, "{}", show(&o));
    let out = stdout(&o);
    assert!(
        out.contains("vs median") && out.contains("of the last 3 run(s)"),
        "{out}"
    );
    assert!(out.contains("allowed <= 5%"), "{out}");
    assert!(
        read(&d.join("r/report.md")).contains("trend <= 5% below the median of the last 3 runs")
    );
    // A run already added is not its own history: night 3 against nights 0-2.
    let o = grade(&nights[3], &["--history", p(&store)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    // The plan's own `history:` key, relative to the plan file.
    let planned = trend_plan(&d, "planned.yaml", "history: h.sqlite\n");
    let o = baton(&["grade", p(&planned), p(&nights[8])]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(stdout(&o).contains("vs median"), "{}", show(&o));
    // No store: fails closed, saying what is missing.
    let o = grade(&nights[4], &[]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(stdout(&o).contains("no history store"), "{}", show(&o));
    let o = grade(&nights[4], &["--history", p(&d.join("none.sqlite"))]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stdout(&o).contains("no history store here yet"),
        "{}",
        show(&o)
    );
    // Another host's history is not this host's.
    let mut elsewhere = results(&nights[4]);
    for h in &mut elsewhere.environment.hosts {
        h.hostname = "node07".into();
    }
    for j in &mut elsewhere.jobs {
        for r in &mut j.layout.ranks {
            r.host = "node07".into();
        }
    }
    let f = d.join("elsewhere.json");
    baton::results::write_atomic(&f, &elsewhere).unwrap();
    let o = grade(&f, &["--history", p(&store)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stdout(&o).contains("no earlier completed run") && stdout(&o).contains("node07"),
        "{}",
        show(&o)
    );
}

/// Issue #20 F7: grading and `show` read a store, never make one. An empty file the plan's
/// `history:` names (an `__init__.py`, a `.gitkeep`) is refused, not turned into SQLite; `add`
/// initialises only a file it created itself.
#[test]
fn reading_never_writes_a_store_into_a_file_that_is_not_one() {
    let d = tmp("history_f7");
    let nights = runs(&d, 1);
    let keep = write(&d, "__init__.py", "");
    let planned = trend_plan(&d, "p.yaml", "history: __init__.py\n");
    let o = baton(&["grade", p(&planned), p(&nights[0])]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stdout(&o).contains("is not a baton history store"),
        "{}",
        show(&o)
    );
    assert_eq!(std::fs::metadata(&keep).unwrap().len(), 0, "left empty");
    let o = baton(&["history", "show", "--store", p(&keep)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("is not a baton history store"),
        "{}",
        show(&o)
    );
    let o = baton(&["history", "add", p(&nights[0]), "--store", p(&keep)]);
    assert_eq!(
        code(&o),
        2,
        "an empty file baton did not create: {}",
        show(&o)
    );
    assert_eq!(std::fs::metadata(&keep).unwrap().len(), 0, "left empty");
    // An SQLite database of another program, even one with our tables but no application id.
    let other = d.join("other.sqlite");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE runs (id INTEGER); PRAGMA user_version = 1;")
        .unwrap();
    let before = std::fs::read(&other).unwrap();
    for args in [
        vec!["history", "show", "--store", p(&other)],
        vec!["history", "add", p(&nights[0]), "--store", p(&other)],
    ] {
        let o = baton(&args);
        assert_eq!(code(&o), 2, "{}", show(&o));
        assert!(
            stderr(&o).contains("not a baton history store"),
            "{}",
            show(&o)
        );
    }
    assert_eq!(std::fs::read(&other).unwrap(), before, "not written");
}

/// Issue #20 F15/F20: a store name that is not a file to keep runs in is invalid input (exit 2),
/// said plainly, never an SQLite error (exit 3) or an "added" that kept nothing.
#[test]
fn store_names_that_are_not_files_are_invalid_input() {
    let d = tmp("history_f15");
    let nights = runs(&d, 1);
    let fifo = d.join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let dir = d.join("dir");
    std::fs::create_dir(&dir).unwrap();
    for store in [p(&dir), p(&fifo), "/dev/null", ":memory:", "file:h.sqlite"] {
        for args in [
            vec!["history", "add", p(&nights[0]), "--store", store],
            vec!["history", "show", "--store", store],
        ] {
            let o = baton(&args);
            assert_eq!(code(&o), 2, "{args:?}: {}", show(&o));
            let err = stderr(&o);
            assert!(
                !err.contains("disk I/O error") && !err.contains("unable to open"),
                "{err}"
            );
            assert!(!stdout(&o).contains("added"), "{}", show(&o));
        }
    }
    assert!(!d.join("file:h.sqlite").exists() && !Path::new("file:h.sqlite").exists());
    let store = d.join("h.sqlite");
    assert_eq!(
        code(&baton(&[
            "history",
            "add",
            p(&nights[0]),
            "--store",
            p(&store)
        ])),
        0
    );
    for last in ["9223372036854775808", "18446744073709551615", "0"] {
        let o = baton(&["history", "show", "--store", p(&store), "--last", last]);
        assert_eq!(code(&o), 2, "--last {last}: {}", show(&o));
        assert!(stderr(&o).contains("--last"), "{}", show(&o));
    }
    let o = baton(&["history", "show", "--store", p(&store), "--last", "1000"]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(rows(&stdout(&o)).len(), 4, "{}", show(&o));
}

/// Issue #20 F10: `show` and `trend` read a store they cannot write — a directory of mode 555
/// as a user who does not own it (run as `nobody` through setpriv), and a read-only mount (a
/// read-only bind mount in a mount namespace of its own, through `unshare -m`, as root).
#[test]
fn a_store_that_cannot_be_written_can_still_be_read() {
    let d = tmp("history_f10");
    let nights = runs(&d, 2);
    let ro = d.join("ro");
    let store = ro.join("h.sqlite");
    let o = baton(&["history", "add", p(&nights[0]), "--store", p(&store)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let plan = trend_plan(&d, "p.yaml", "");
    let is_root = unsafe { libc::geteuid() } == 0;
    let baton_bin = env!("CARGO_BIN_EXE_baton");
    let show_args = ["history", "show", "--store", p(&store)];
    let grade_args = ["grade", p(&plan), p(&nights[1]), "--history", p(&store)];
    let ok = |o: &std::process::Output, what: &str| {
        assert!(
            !stderr(o).contains("readonly") && !stderr(o).contains("unable to open"),
            "{what}: {}",
            show(o)
        );
    };
    // As a non-root user that does not own the directory.
    if is_root && Path::new("/usr/bin/setpriv").exists() {
        // The scratch tree must be traversable by nobody.
        let mut up = ro.clone();
        while let Some(parent) = up.parent() {
            if parent.as_os_str().is_empty() || parent == Path::new("/") {
                break;
            }
            let _ = Command::new("chmod").arg("o+rx").arg(parent).status();
            up = parent.to_path_buf();
        }
        std::fs::set_permissions(&store, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .unwrap();
        std::fs::set_permissions(&ro, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
        std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        for f in [&nights[1], &plan] {
            std::fs::set_permissions(f, std::os::unix::fs::PermissionsExt::from_mode(0o644))
                .unwrap();
        }
        let as_nobody = |args: &[&str]| {
            Command::new("setpriv")
                .args([
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    baton_bin,
                ])
                .args(args)
                .env("NO_COLOR", "1")
                .output()
                .unwrap()
        };
        let o = as_nobody(&show_args);
        assert_eq!(code(&o), 0, "as nobody: {}", show(&o));
        assert_eq!(rows(&stdout(&o)).len(), 4, "{}", show(&o));
        let o = as_nobody(&grade_args);
        ok(&o, "trend as nobody");
        assert_eq!(code(&o), 0, "the trend read the store: {}", show(&o));
        assert!(!ro.join("h.sqlite-wal").exists() && !ro.join("h.sqlite-shm").exists());
        std::fs::set_permissions(&ro, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    // On a read-only mount, even as root.
    let on_ro_mount = |args: &[&str]| {
        Command::new("unshare")
            .args([
                "-m",
                "sh",
                "-c",
                "mount --bind -o ro \"$1\" \"$1\" && shift && exec \"$@\"",
            ])
            .arg("sh")
            .arg(&ro)
            .arg(baton_bin)
            .args(args)
            .env("NO_COLOR", "1")
            .output()
    };
    match on_ro_mount(&show_args) {
        Ok(o) if !stderr(&o).contains("mount:") && !stderr(&o).contains("unshare:") => {
            assert_eq!(code(&o), 0, "read-only mount: {}", show(&o));
            assert_eq!(rows(&stdout(&o)).len(), 4, "{}", show(&o));
            let o = on_ro_mount(&grade_args).unwrap();
            ok(&o, "trend on a read-only mount");
            assert_eq!(code(&o), 0, "the trend read the store: {}", show(&o));
        }
        other => eprintln!("skipped the read-only mount (no mount namespace here): {other:?}"),
    }
}
