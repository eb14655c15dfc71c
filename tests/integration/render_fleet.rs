//! `baton render` carries where the run reports (`--metrics`, `--notify`, `--history`, or the
//! site's `outputs:`) into every script it writes, quoted, and never a secret in clear: a
//! webhook URL with a path comes from BATON_NOTIFY_URL at run time, a database password from
//! PGPASSWORD.

use crate::common;
use crate::notify::{Answer, receiver};

use std::path::Path;
use std::process::Command;

use common::*;

const TOKEN: &str = "T0K3N";
const PASSWORD: &str = "s3cret";

fn shellcheck(file: &Path) {
    let Ok(r) = Command::new("shellcheck")
        .args(["-s", "bash"])
        .arg(file)
        .output()
    else {
        eprintln!("SKIPPED shellcheck: none here (scripts/install-deps installs it)");
        return;
    };
    assert_eq!(code(&r), 0, "{}: {}", file.display(), show(&r));
}

fn no_secret(text: &str) {
    assert!(!text.contains(TOKEN) && !text.contains(PASSWORD), "{text}");
}

#[test]
fn every_script_passes_the_flags_quoted_and_no_secret_in_clear() {
    let d = tmp("render-fleet-flags");
    let metrics = d.join("text files");
    let flags = [
        "--metrics",
        p(&metrics),
        "--notify",
        "http://relay.example:8080/hooks/T0K3N",
        "--notify-within",
        "45",
        "--notify-ca",
        "/etc/ssl/site-ca.pem",
        "--history",
        "postgres://baton:s3cret@db.example/acceptance?sslmode=disable",
    ];
    // A plain plan (steps, then `baton grade`) and a node-set plan (one `baton run`).
    for (plan, targets) in [
        (plan("h200x2.yaml"), "slurm,srun,mpirun"),
        (
            Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/examples/nodesets-cpu.yaml"),
            "slurm",
        ),
    ] {
        let out = d.join(plan.file_stem().unwrap());
        let mut args = vec!["render", p(&plan), "-t", targets, "-o", p(&out)];
        args.extend(flags);
        let o = baton(&args);
        assert_eq!(code(&o), 0, "{}", show(&o));
        no_secret(&show(&o));
        for f in std::fs::read_dir(&out).unwrap() {
            let f = f.unwrap().path();
            let text = read(&f);
            no_secret(&text);
            for want in [
                format!("fleet_args+=(--metrics '{}')", metrics.display()),
                "fleet_args+=(--history 'postgres://baton@db.example/acceptance?sslmode=disable')"
                    .into(),
                "fleet_args+=(--notify \"$BATON_NOTIFY_URL\")".into(),
                "fleet_args+=(--notify-within 45)".into(),
                "fleet_args+=(--notify-ca '/etc/ssl/site-ca.pem')".into(),
                "\"${fleet_args[@]}\"".into(),
            ] {
                assert!(text.contains(&want), "{}: no {want:?}\n{text}", f.display());
            }
            shellcheck(&f);
        }
    }
    // An acceptance's batch job passes them to `baton accept` (which keeps no history).
    let out = d.join("acceptance");
    let mut args = vec![
        "render",
        "acceptance/sim-cpu.yaml",
        "-t",
        "slurm",
        "-o",
        p(&out),
    ];
    args.extend(flags);
    let o = baton(&args);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let script = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = read(&script);
    no_secret(&text);
    assert!(
        text.contains("accept '") && text.contains("\"${fleet_args[@]}\"\n"),
        "{text}"
    );
    assert!(!text.contains("(--history"), "{text}");
    shellcheck(&script);
}

#[test]
fn a_rendered_script_reports_where_the_site_says_with_the_url_from_its_environment() {
    let d = tmp("render-fleet-run");
    let (url, got) = receiver(vec![Answer::Status(204)]);
    std::fs::create_dir_all(d.join("prom")).unwrap();
    let site = write(
        &d,
        "site.yaml",
        &format!("site: 1\noutputs:\n  metrics: prom\n  notify: \"{url}\"\n"),
    );
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/examples/quickstart.yaml");
    let scripts = d.join("scripts");
    let o = baton_env(
        &[
            "render",
            p(&plan),
            "-t",
            "mpirun",
            "-o",
            p(&scripts),
            "--site",
            p(&site),
        ],
        &[("BATON_SITE_DEFAULT", "/nonexistent")],
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    let script = scripts.join("quickstart-mpirun.sh");
    no_secret(&read(&script));
    // Without the URL in its environment the run says so and still passes.
    let out = d.join("out-1");
    let r = run_script(&script, &out, 0);
    assert!(
        stderr(&r).contains("BATON_NOTIFY_URL is not set"),
        "{}",
        show(&r)
    );
    assert_eq!(got.lock().unwrap().len(), 0);
    assert!(d.join("prom/baton-quickstart.prom").is_file());
    // With it, the verdict is sent.
    let out = d.join("out-2");
    let r = Command::new("timeout")
        .arg("300")
        .arg(&script)
        .arg(&out)
        .env("PATH", path_with_baton())
        .env("BATON_NOTIFY_URL", &url)
        .env_remove("SLURM_JOB_ID")
        .env_remove("BATON_FAULT")
        .output()
        .unwrap();
    assert_eq!(code(&r), 0, "{}", show(&r));
    assert_eq!(got.lock().unwrap().len(), 1, "{}", show(&r));
}
