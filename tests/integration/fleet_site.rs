//! A site file's `outputs:` section: where every `run`, `grade` and `accept` at a site sends
//! its metrics, its verdict and its history without a flag; a flag wins, `--no-site` drops
//! them, `baton config` shows their origin with any secret in a URL redacted.

use crate::common;
use crate::notify::{Answer, receiver};

use std::path::{Path, PathBuf};

use common::*;

/// `baton ARGS` with no system-wide site file and no inherited BATON_SITE/BATON_HISTORY.
fn baton_site(args: &[&str], envs: &[(&str, &str)]) -> std::process::Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_baton"));
    c.args(args)
        .env("NO_COLOR", "1")
        .env("PATH", path_with_baton())
        .env("BATON_SITE_DEFAULT", "/nonexistent/baton/site.yaml")
        .env_remove("BATON_SITE")
        .env_remove("BATON_HISTORY")
        .env_remove("BATON_FAULT");
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output().expect("baton runs")
}

fn site_with(d: &Path, outputs: &str) -> PathBuf {
    write(
        d,
        "site.yaml",
        &format!("site: 1\nname: fleet\noutputs:\n{outputs}"),
    )
}

fn proms(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "prom"))
        .collect()
}

#[test]
fn a_site_sends_the_verdict_and_writes_metrics_without_flags_and_a_flag_wins() {
    let d = tmp("fleet-site-defaults");
    let (url, got) = receiver(vec![Answer::Status(204)]);
    std::fs::create_dir_all(d.join("textfiles")).unwrap();
    // A relative metrics directory is the site file's neighbour, wherever baton runs.
    let site = site_with(
        &d,
        &format!("  metrics: textfiles\n  notify: \"{url}\"\n  notify_within: 5\n"),
    );
    let (r, plan) = (healthy(&d), plan("h200x2.yaml"));
    let o = baton_site(&["grade", p(&plan), p(&r), "--site", p(&site)], &[]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(got.lock().unwrap().len(), 1, "{}", show(&o));
    assert_eq!(proms(&d.join("textfiles")).len(), 1, "{}", show(&o));
    assert!(!stdout(&o).contains("T0K3N"), "{}", show(&o));
    // BATON_SITE is the same site.
    let o = baton_site(&["grade", p(&plan), p(&r)], &[("BATON_SITE", p(&site))]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(got.lock().unwrap().len(), 2, "{}", show(&o));
    // --no-site drops them.
    std::fs::remove_dir_all(d.join("textfiles")).unwrap();
    std::fs::create_dir_all(d.join("textfiles")).unwrap();
    let o = baton_site(
        &["grade", p(&plan), p(&r), "--no-site"],
        &[("BATON_SITE", p(&site))],
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(got.lock().unwrap().len(), 2, "{}", show(&o));
    assert!(proms(&d.join("textfiles")).is_empty());
    // A flag wins over the site's value, each on its own.
    let (mine, mine_got) = receiver(vec![Answer::Status(200)]);
    let file = d.join("mine.prom");
    let o = baton_site(
        &[
            "grade",
            p(&plan),
            p(&r),
            "--site",
            p(&site),
            "--notify",
            &mine,
            "--metrics",
            p(&file),
        ],
        &[],
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(
        (got.lock().unwrap().len(), mine_got.lock().unwrap().len()),
        (2, 1),
        "{}",
        show(&o)
    );
    assert!(file.is_file() && proms(&d.join("textfiles")).is_empty());
}

#[test]
fn config_shows_the_site_outputs_with_their_origin_and_secrets_redacted() {
    let d = tmp("fleet-site-config");
    let site = site_with(
        &d,
        "  metrics: /var/lib/node_exporter/textfile\n  notify: \"http://127.0.0.1:9/hooks/T0K3N?k=v\"\n  \
         history: \"postgres://baton:s3cret@127.0.0.1:5/acceptance?sslmode=disable\"\n",
    );
    let plan = plan("h200x2.yaml");
    let o = baton_site(&["config", p(&plan), "--site", p(&site)], &[]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let out = stdout(&o);
    let s = site.display();
    for line in [
        format!("site:{s}:4\toutputs.metrics=\"/var/lib/node_exporter/textfile\""),
        format!("site:{s}:5\toutputs.notify=\"http://127.0.0.1:9/<redacted>\""),
        format!(
            "site:{s}:6\toutputs.history=\"postgres://baton:<redacted>@127.0.0.1:5/acceptance?sslmode=disable\""
        ),
    ] {
        assert!(out.contains(&line), "no {line:?} in\n{out}");
    }
    let o = baton_site(
        &["config", p(&plan), "--site", p(&site), "--format", "json"],
        &[],
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    let all = format!("{}{}", stdout(&o), show(&o));
    assert!(!all.contains("T0K3N") && !all.contains("s3cret"), "{all}");
    assert!(stdout(&o).contains("\"outputs.history\""), "{all}");
}

#[test]
fn a_bad_site_output_is_exit_2_at_its_file_and_line() {
    let d = tmp("fleet-site-bad");
    let plan = plan("h200x2.yaml");
    for (outputs, said) in [
        ("  notify: \"ftp://hooks.example/x\"\n", "site.yaml:4:11"),
        (
            "  notify: \"http://hooks.example/a b\"\n",
            "percent-encoded",
        ),
        ("  notify: \"http://u:pw@hooks.example/x\"\n", "credentials"),
        ("  notify_within: 0\n", "notify_within"),
        ("  metrcs: /tmp\n", "did you mean `metrics`?"),
        ("  history: 7\n", "history"),
    ] {
        let site = site_with(&d, outputs);
        let o = baton_site(&["check", p(&plan), "--site", p(&site)], &[]);
        assert_eq!(code(&o), 2, "{outputs}: {}", show(&o));
        assert!(stderr(&o).contains(said), "{outputs}: {}", show(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", show(&o));
        assert!(!stderr(&o).contains("pw@"), "{}", show(&o));
    }
}

#[test]
fn a_site_history_is_what_trend_and_history_read_unless_named() {
    let d = tmp("fleet-site-history");
    let nights = crate::history::runs(&d, 9);
    std::fs::create_dir_all(d.join("site")).unwrap();
    let site = write(
        &d.join("site"),
        "site.yaml",
        "site: 1\noutputs:\n  history: h.sqlite\n",
    );
    let env = [("BATON_SITE", p(&site))];
    // `history add` with no --store adds to the site's store, beside the site file.
    let mut args = vec!["history", "add"];
    args.extend(nights[..4].iter().map(|f| p(f)));
    let o = baton_site(&args, &env);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(d.join("site/h.sqlite").is_file(), "{}", show(&o));
    let plan = crate::history::trend_plan(&d, "trend.yaml", "");
    let o = baton_site(&["grade", p(&plan), p(&nights[8])], &env);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(stdout(&o).contains("vs median"), "{}", show(&o));
    // --history and BATON_HISTORY name another store (here an empty one): theirs is read.
    let none = d.join("none.sqlite");
    let o = baton_site(
        &["grade", p(&plan), p(&nights[8]), "--history", p(&none)],
        &env,
    );
    assert!(
        stdout(&o).contains("no history store here yet"),
        "{}",
        show(&o)
    );
    let both = [env[0], ("BATON_HISTORY", p(&none))];
    let o = baton_site(&["grade", p(&plan), p(&nights[8])], &both);
    assert!(
        stdout(&o).contains("no history store here yet"),
        "{}",
        show(&o)
    );
}
