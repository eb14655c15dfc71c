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

/// `baton ARGS` with `envs`, killed (and the test failed) after 60 s: its output and how long
/// it took.
fn timed(args: &[&str], envs: &[(&str, &str)]) -> (Output, std::time::Duration) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
    c.args(args)
        .env("NO_COLOR", "1")
        .env_remove("BATON_HISTORY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        c.env(k, v);
    }
    let start = std::time::Instant::now();
    let mut child = c.spawn().unwrap();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("baton {args:?} still running after 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    (child.wait_with_output().unwrap(), start.elapsed())
}

/// A "server" on loopback that accepts every connection and then says nothing (`dribble`
/// false), or answers the start of a 1 MiB message a byte every 200 ms, for ever: its port.
fn hostile_server(dribble: bool) -> u16 {
    use std::io::Write;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                if !dribble {
                    // Held open, never answered, until the test process ends.
                    std::thread::sleep(std::time::Duration::from_secs(3600));
                    return;
                }
                let mut bytes = b"E\x00\x10\x00\x00".iter().chain(std::iter::repeat(&b'S'));
                while s.write_all(&[*bytes.next().unwrap()]).is_ok() {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
            });
        }
    });
    port
}

#[test]
fn a_silent_or_dribbling_server_ends_each_command_by_the_connect_bound() {
    let d = tmp("history_postgres_silent");
    let nights = runs(&d, 2);
    let plan = trend_plan(&d, "trend.yaml", "");
    for dribble in [false, true] {
        let port = hostile_server(dribble);
        let url = format!("postgres://baton:S3cr3tPW@127.0.0.1:{port}/h");
        let quick = format!("{url}?connect_timeout=2");
        let said = |o: &Output| {
            let all = format!("{}{}", stdout(o), stderr(o));
            assert!(!all.contains("S3cr3tPW"), "the password was printed: {all}");
            assert!(!all.contains("panicked"), "{all}");
            all
        };
        // The documented 10 s for connect, startup and authentication together.
        if !dribble {
            let (o, took) = timed(&["history", "add", p(&nights[0]), "--store", &url], &[]);
            assert_eq!(code(&o), 3, "{}", show(&o));
            assert!(took < std::time::Duration::from_secs(13), "{took:?}");
            assert!(said(&o).contains("within 10 s"), "{}", show(&o));
        }
        let (o, took) = timed(&["history", "add", p(&nights[0]), "--store", &quick], &[]);
        assert_eq!(code(&o), 3, "dribble {dribble}: {}", show(&o));
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
        assert!(said(&o).contains("within 2 s"), "{}", show(&o));
        let (o, took) = timed(&["history", "show", "--store", &quick], &[]);
        assert_eq!(code(&o), 3, "dribble {dribble}: {}", show(&o));
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
        said(&o);
        // The trend criterion fails closed, saying why, in the same time.
        let (o, took) = timed(
            &["grade", p(&plan), p(&nights[1])],
            &[("BATON_HISTORY", &quick)],
        );
        assert_eq!(code(&o), 1, "dribble {dribble}: {}", show(&o));
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
        assert!(said(&o).contains("within 2 s"), "{}", show(&o));
    }
}

#[test]
fn a_store_that_is_not_batons_is_refused_with_exit_2_never_a_panic() {
    let Some(pg) = Postgres::start("hostile") else {
        return;
    };
    let d = tmp("history_postgres_hostile");
    let nights = runs(&d, 2);
    let plan = trend_plan(&d, "trend.yaml", "");
    // Each in a database of its own, where this baton would look: its own schema `baton`, or
    // the default search path, where an older baton made its tables.
    let hostile = [
        ("text_version", "CREATE TABLE {s}baton_schema (version TEXT); INSERT INTO {s}baton_schema VALUES ('one')"),
        ("two_versions", "CREATE TABLE {s}baton_schema (version INTEGER); INSERT INTO {s}baton_schema VALUES (1), (1)"),
        ("no_version", "CREATE TABLE {s}baton_schema (version INTEGER)"),
        ("null_version", "CREATE TABLE {s}baton_schema (version INTEGER); INSERT INTO {s}baton_schema VALUES (NULL)"),
        (
            "wrong_columns",
            "CREATE TABLE {s}baton_schema (version INTEGER); INSERT INTO {s}baton_schema VALUES (1);
             CREATE TABLE {s}baton_runs (id INTEGER, key TEXT, date INTEGER, plan INTEGER, plan_hash TEXT, source TEXT, added TEXT);
             CREATE TABLE {s}baton_jobs (run BIGINT, job INTEGER, identity TEXT, hosts TEXT, status TEXT);
             CREATE TABLE {s}baton_sizes (run BIGINT, job TEXT, requested TEXT, busbw TEXT, time_us TEXT);
             INSERT INTO {s}baton_runs VALUES (1, 'k', 7, 8, NULL, 's', 'a');
             INSERT INTO {s}baton_jobs VALUES (1, 9, 'i', 'h', 'completed')",
        ),
    ];
    for (schema, prefix) in [("public", ""), ("baton", "baton.")] {
        for (name, sql) in hostile {
            let db = format!("{name}_{schema}");
            pg.sql("postgres", &format!("CREATE DATABASE {db}"));
            if schema == "baton" {
                pg.sql(&db, "CREATE SCHEMA baton");
            }
            pg.sql(&db, &sql.replace("{s}", prefix));
            let url = pg.url_of("baton", &pg.password, &db);
            for args in [
                vec!["history", "show", "--store", &url],
                vec!["history", "add", p(&nights[0]), "--store", &url],
            ] {
                let o = baton(&args);
                let all = clean(&o, &pg) + &stderr(&o);
                assert_eq!(code(&o), 2, "{db} {args:?}: {}", show(&o));
                assert!(!all.contains("panicked"), "{db}: {all}");
                assert!(all.contains("is not a baton history store"), "{db}: {all}");
            }
            let o = baton(&["grade", p(&plan), p(&nights[1]), "--history", &url]);
            assert_eq!(code(&o), 1, "{db}: {}", show(&o));
            let all = clean(&o, &pg) + &stderr(&o);
            assert!(!all.contains("panicked"), "{db}: {all}");
            assert!(all.contains("is not a baton history store"), "{db}: {all}");
        }
    }
}

#[test]
fn another_users_schema_named_like_the_role_gets_no_history() {
    let Some(pg) = Postgres::start("schema") else {
        return;
    };
    let d = tmp("history_postgres_schema");
    let nights = runs(&d, 2);
    // alice adds; mallory owns a schema named like her, first on the default search path, and
    // lets her create in it.
    pg.sql(
        "postgres",
        "CREATE ROLE alice LOGIN PASSWORD 'alicePW'; CREATE ROLE mallory;
         GRANT CREATE ON DATABASE postgres TO alice;
         CREATE SCHEMA alice AUTHORIZATION mallory; GRANT USAGE, CREATE ON SCHEMA alice TO alice",
    );
    let url = pg.url_of("alice", "alicePW", "postgres");
    let o = baton(&["history", "add", p(&nights[0]), "--store", &url]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let in_schema = |db: &str, schema: &str| {
        pg.sql(
            db,
            &format!(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = '{schema}' AND c.relkind = 'r'"
            ),
        )
    };
    assert_eq!(
        in_schema("postgres", "alice"),
        "0",
        "mallory's schema got a table"
    );
    assert_eq!(in_schema("postgres", "baton"), "4");
    assert_eq!(
        pg.sql(
            "postgres",
            "SELECT nspowner::regrole FROM pg_namespace WHERE nspname = 'baton'"
        ),
        "alice"
    );
    let o = baton(&["history", "show", "--store", &url]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(stdout(&o).lines().count(), 1 + 4, "{}", show(&o));
    // A schema `baton` that someone else owns is refused, and gets nothing.
    pg.sql("postgres", "CREATE DATABASE other");
    pg.sql("postgres", "GRANT CREATE ON DATABASE other TO alice");
    pg.sql(
        "other",
        "CREATE SCHEMA baton AUTHORIZATION mallory; GRANT USAGE, CREATE ON SCHEMA baton TO alice",
    );
    let url = pg.url_of("alice", "alicePW", "other");
    let o = baton(&["history", "add", p(&nights[0]), "--store", &url]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("owned by mallory"), "{}", show(&o));
    assert_eq!(in_schema("other", "baton"), "0");
}

#[test]
fn a_store_an_older_baton_made_in_public_is_read_there_then_moved_by_the_next_add() {
    let Some(pg) = Postgres::start("legacy") else {
        return;
    };
    let d = tmp("history_postgres_legacy");
    let nights = runs(&d, 3);
    let url = pg.url();
    let o = baton(&[
        "history",
        "add",
        p(&nights[0]),
        p(&nights[1]),
        "--store",
        &url,
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let before = baton(&["history", "show", "--store", &url]);
    assert_eq!(code(&before), 0, "{}", show(&before));
    // Where baton 0.x kept them: in public, unqualified.
    pg.sql(
        "postgres",
        "ALTER TABLE baton.baton_schema SET SCHEMA public; ALTER TABLE baton.baton_runs SET SCHEMA public;
         ALTER TABLE baton.baton_jobs SET SCHEMA public; ALTER TABLE baton.baton_sizes SET SCHEMA public;
         DROP SCHEMA baton",
    );
    let o = baton(&["history", "show", "--store", &url]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(stdout(&o), stdout(&before), "read where it is");
    assert_eq!(
        pg.sql(
            "postgres",
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'baton'"
        ),
        "0",
        "reading moved nothing"
    );
    let o = baton(&["history", "add", p(&nights[2]), "--store", &url]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(
        pg.sql(
            "postgres",
            "SELECT string_agg(schemaname || '.' || tablename, ' ' ORDER BY tablename) FROM pg_tables
             WHERE tablename LIKE 'baton_%'"
        ),
        "baton.baton_jobs baton.baton_runs baton.baton_schema baton.baton_sizes"
    );
    let o = baton(&["history", "show", "--store", &url]);
    assert_eq!(stdout(&o).lines().count(), 1 + 3 * 4, "{}", show(&o));
    // Its ids go on from the moved sequence.
    assert_eq!(
        pg.sql("postgres", "SELECT max(id) FROM baton.baton_runs"),
        "3"
    );
}

#[test]
fn a_store_named_neither_a_path_nor_a_postgres_url_is_refused_naming_the_forms() {
    let d = tmp("history_store_forms");
    let nights = runs(&d, 1);
    for store in [
        "host=db.example user=baton password=S3cr3tPW dbname=history",
        "dbname=history password=S3cr3tPW",
        "mysql://baton:S3cr3tPW@db.example/history",
    ] {
        let o = baton_in(&d, &["history", "add", p(&nights[0]), "--store", store]);
        assert_eq!(code(&o), 2, "{store}: {}", show(&o));
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert!(!all.contains("S3cr3tPW"), "the password was printed: {all}");
        assert!(all.contains("postgres://"), "{all}");
        let o = baton_in(&d, &["history", "show", "--store", store]);
        assert_eq!(code(&o), 2, "{store}: {}", show(&o));
        assert!(!stderr(&o).contains("S3cr3tPW"), "{}", show(&o));
        // The scripts would carry it: refused by render too, before a script is written.
        let plan = trend_plan(&d, "trend.yaml", "");
        let scripts = d.join("scripts");
        let o = baton_in(
            &d,
            &[
                "render",
                p(&plan),
                "--target",
                "slurm",
                "-o",
                p(&scripts),
                "--history",
                store,
            ],
        );
        assert_eq!(code(&o), 2, "{store}: {}", show(&o));
        assert!(!stderr(&o).contains("S3cr3tPW"), "{}", show(&o));
        assert!(!scripts.exists(), "{}", show(&o));
        std::fs::remove_file(&plan).unwrap();
    }
    // Named by a site file: kept as written (not made a file beside it), refused, unshown.
    let site = write(
        &d,
        "site.yaml",
        "site: 1\noutputs:\n  history: \"host=db password=S3cr3tPW dbname=h\"\n",
    );
    let env = [("BATON_SITE", p(&site)), ("HOME", p(&d))];
    let o = baton_env(&["history", "add", p(&nights[0])], &env);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(!stderr(&o).contains("S3cr3tPW"), "{}", show(&o));
    let plan = trend_plan(&d, "trend.yaml", "");
    let o = baton_env(&["config", p(&plan)], &env);
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(!all.contains("S3cr3tPW"), "{all}");
    std::fs::remove_file(&plan).unwrap();
    std::fs::remove_file(&site).unwrap();
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("night-") && n != "healthy.json")
        .collect();
    assert!(left.is_empty(), "files made: {left:?}");
}
