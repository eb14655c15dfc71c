//! The history in a real PostgreSQL server (started here: `common::services::Postgres`): many
//! hosts adding at once keep every run once, a retried add adds nothing, `show` and `trend`
//! answer as the SQLite store does on the same runs, and the password is in no output.

use crate::common;
use crate::history::{runs, trend_plan};

use std::process::{Command, Output, Stdio};

use common::services::Postgres;
use common::*;

/// Every byte `o` printed, checked for the password, then its stdout.
fn clean(o: &Output, pg: &Postgres) -> String {
    let all = format!("{}{}", stdout(o), stderr(o));
    assert!(
        !all.contains(&pg.password),
        "the password was printed: {all}"
    );
    stdout(o)
}

fn add_all(files: &[&str], store: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
    c.args(["history", "add"])
        .args(files)
        .args(["--store", store]);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

#[test]
fn concurrent_adds_retries_show_and_trend_match_sqlite_and_hide_the_password() {
    let Some(pg) = Postgres::start("history") else {
        return;
    };
    let d = tmp("history_postgres");
    let nights = runs(&d, 16);
    let names: Vec<&str> = nights[..8].iter().map(|f| p(f)).collect();
    let url = pg.url();
    // 16 hosts at once, each adding the same 8 runs to a database none has migrated yet.
    let procs: Vec<_> = (0..16)
        .map(|_| add_all(&names, &url).spawn().unwrap())
        .collect();
    let mut added = 0;
    for c in procs {
        let o = c.wait_with_output().unwrap();
        assert_eq!(code(&o), 0, "{}", show(&o));
        added += clean(&o, &pg)
            .lines()
            .filter(|l| l.starts_with("added "))
            .count();
    }
    assert_eq!(added, 8, "each run added by exactly one process");
    // A retried add adds nothing.
    let o = add_all(&names[..1], &url).output().unwrap();
    assert!(
        clean(&o, &pg).starts_with("already in the store"),
        "{}",
        show(&o)
    );
    // show: the same table as an SQLite store of the same runs.
    let sqlite = d.join("h.sqlite");
    assert_eq!(code(&add_all(&names, p(&sqlite)).output().unwrap()), 0);
    let show_of = |store: &str| baton(&["history", "show", "--store", store]);
    let (from_pg, from_file) = (show_of(&url), show_of(p(&sqlite)));
    assert_eq!(code(&from_pg), 0, "{}", show(&from_pg));
    assert_eq!(clean(&from_pg, &pg), stdout(&from_file));
    assert_eq!(
        stdout(&from_file).lines().count(),
        1 + 8 * 4,
        "{}",
        stdout(&from_file)
    );
    // trend: the same verdicts against either store, by --history and by BATON_HISTORY.
    let plan = trend_plan(&d, "trend.yaml", "");
    // Night 3 is in the store (not its own history); night 15 is 8% below the last three.
    for night in [&nights[3], &nights[15]] {
        let grade = |store: &str| baton(&["grade", p(&plan), p(night), "--history", store]);
        let (a, b) = (grade(&url), grade(p(&sqlite)));
        assert_eq!(code(&a), code(&b), "{}\n{}", show(&a), show(&b));
        let strip = |s: String, store: &str| s.replace(store, "STORE");
        let shown = url.replace(&format!(":{}@", pg.password), ":<redacted>@");
        assert_eq!(strip(clean(&a, &pg), &shown), strip(stdout(&b), p(&sqlite)));
        let e = baton_env(&["grade", p(&plan), p(night)], &[("BATON_HISTORY", &url)]);
        assert_eq!(code(&e), code(&a), "{}", show(&e));
        clean(&e, &pg);
    }
    let o = baton(&["grade", p(&plan), p(&nights[15]), "--history", &url]);
    assert_eq!(code(&o), 1, "the slide fails the trend: {}", show(&o));
    // A wrong password and a database that is not there: runtime failures, the password unsaid.
    let wrong = url.replace(&pg.password, &format!("{}x", pg.password));
    let o = baton(&["history", "show", "--store", &wrong]);
    assert_eq!(code(&o), 3, "{}", show(&o));
    assert!(
        stderr(&o).contains("postgres://baton:<redacted>@127.0.0.1"),
        "{}",
        show(&o)
    );
    clean(&o, &pg);
    // trend against a store it cannot open fails closed, naming it without the password.
    let o = baton(&["grade", p(&plan), p(&nights[3]), "--history", &wrong]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        clean(&o, &pg).contains("postgres://baton:<redacted>@127.0.0.1"),
        "{}",
        show(&o)
    );
    let o = baton(&[
        "history",
        "show",
        "--store",
        &url.replace("/postgres", "/none"),
    ]);
    assert_eq!(code(&o), 3, "{}", show(&o));
    clean(&o, &pg);
    // The verdict JSON, report and JUnit name the store without the URL's password.
    let r = d.join("r");
    let o = baton(&[
        "grade",
        p(&plan),
        p(&nights[15]),
        "--history",
        &url,
        "--report",
        p(&r),
        "--junit",
        p(&d.join("junit.xml")),
        "--format",
        "json",
    ]);
    assert!(
        clean(&o, &pg).contains("\"format\": \"baton-verdict\""),
        "{}",
        show(&o)
    );
    for f in [
        r.join("report.md"),
        r.join("report.html"),
        d.join("junit.xml"),
    ] {
        assert!(!read(&f).contains(&pg.password), "{}", f.display());
    }
}
