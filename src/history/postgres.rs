//! The history in PostgreSQL, for fleets: many clusters adding nightly from many allocations,
//! where an SQLite file on NFS is not safe. Selected by a URL in place of a path
//! (`--store postgres://…`, `--history postgres://…`, `BATON_HISTORY`); the same runs, jobs and
//! sizes as the SQLite store, the same content keys and queries.
//!
//! The schema is versioned (`baton_schema`) and baton applies its migrations itself, under a
//! transaction-scoped advisory lock so that many first adds at once migrate once. A run is
//! added in one transaction, `ON CONFLICT (key) DO NOTHING`: concurrent adds of the same results
//! keep one. Reading (`show`, `trend`) never migrates and runs in read-only transactions. The
//! URL's password is shown nowhere: every name and error carries the URL without it.

use std::cell::RefCell;
use std::path::Path;
use std::time::Duration;

use postgres::{Client, NoTls};

use super::record::RunRecord;
use super::store::{HistoryError, Query, TrendRow};

/// The migrations, in order; the schema's version is how many have been applied.
const MIGRATIONS: &[&str] = &["
CREATE TABLE baton_runs (
    id        BIGSERIAL PRIMARY KEY,
    key       TEXT NOT NULL UNIQUE,
    date      TEXT NOT NULL,
    plan      TEXT NOT NULL,
    plan_hash TEXT,
    source    TEXT NOT NULL,
    added     TEXT NOT NULL
);
CREATE TABLE baton_jobs (
    run      BIGINT NOT NULL REFERENCES baton_runs(id),
    job      TEXT NOT NULL,
    identity TEXT NOT NULL,
    hosts    TEXT NOT NULL,
    status   TEXT NOT NULL,
    PRIMARY KEY (run, job)
);
CREATE INDEX baton_jobs_by_identity ON baton_jobs (identity, hosts);
CREATE TABLE baton_sizes (
    run       BIGINT NOT NULL REFERENCES baton_runs(id),
    job       TEXT NOT NULL,
    requested BIGINT NOT NULL,
    busbw     DOUBLE PRECISION,
    time_us   DOUBLE PRECISION,
    PRIMARY KEY (run, job, requested)
);
"];
/// The advisory lock migrations take ("batn").
const MIGRATION_LOCK: i64 = 0x6261_746e;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one statement, or a wait for a lock (another host's migration or add), may take.
const BOUNDS: &str = "SET statement_timeout = '60s'; SET lock_timeout = '60s'";

/// Whether `--store`/`--history` names a PostgreSQL database rather than a file.
pub fn is_url(p: &Path) -> bool {
    p.to_str()
        .is_some_and(|s| s.starts_with("postgres://") || s.starts_with("postgresql://"))
}

/// `url` without its password (in the user part or a `password=` parameter): how every
/// message names the store.
pub fn shown(url: &str) -> String {
    crate::secrets::url_redacted(url)
}

/// Why `sslmode=require` is refused before connecting: this build links no TLS stack, and a
/// store that insists on TLS would otherwise fail only at the handshake, after the run.
const NO_TLS: &str = "sslmode=require: this baton has no TLS to PostgreSQL; reach the server \
                      over a trusted network or a local socket, or through a tunnel (stunnel, ssh -L), \
                      with sslmode=disable or prefer";

pub(super) struct Pg {
    client: RefCell<Client>,
    shown: String,
    password: Option<Vec<u8>>,
}

impl Pg {
    /// Connects; `write` applies the migrations this baton knows, else the schema must be
    /// there already and sessions are read-only.
    pub(super) fn connect(url: &str, write: bool) -> Result<Pg, HistoryError> {
        let shown = shown(url);
        let mut config: postgres::Config = url.parse().map_err(|_| HistoryError::BadName {
            path: shown.clone(),
            why: "not a PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE)",
        })?;
        if config.get_ssl_mode() == postgres::config::SslMode::Require {
            return Err(HistoryError::BadName {
                path: shown,
                why: NO_TLS,
            });
        }
        if config.get_password().is_none()
            && let Some(pw) = std::env::var_os("PGPASSWORD")
        {
            config.password(pw.as_encoded_bytes());
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.application_name("baton");
        let password = config.get_password().map(<[u8]>::to_vec);
        let failed = |e: postgres::Error| scrubbed(&shown, password.as_deref(), &e);
        let mut client = config.connect(NoTls).map_err(failed)?;
        // Every statement bounded: a server that stops answering, or a lock never released,
        // ends the command instead of hanging a nightly.
        client.batch_execute(BOUNDS).map_err(failed)?;
        if write {
            migrate(&mut client, &shown).map_err(|e| e.or_sql(failed))?;
        } else {
            client
                .batch_execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
                .map_err(failed)?;
            check_version(&mut client, &shown).map_err(|e| e.or_sql(failed))?;
        }
        Ok(Pg {
            client: RefCell::new(client),
            shown,
            password,
        })
    }

    pub(super) fn name(&self) -> &str {
        &self.shown
    }

    fn err(&self) -> impl Fn(postgres::Error) -> HistoryError + '_ {
        |e| scrubbed(&self.shown, self.password.as_deref(), &e)
    }

    /// Adds one run whole; false when the store already held it.
    pub(super) fn add(
        &self,
        rec: &RunRecord,
        source: &str,
        added: &str,
    ) -> Result<bool, HistoryError> {
        let mut c = self.client.borrow_mut();
        let mut tx = c.transaction().map_err(self.err())?;
        let run: Option<i64> = tx
            .query_opt(
                "INSERT INTO baton_runs (key, date, plan, plan_hash, source, added)
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (key) DO NOTHING RETURNING id",
                &[
                    &rec.key,
                    &rec.date,
                    &rec.plan,
                    &rec.plan_hash,
                    &source,
                    &added,
                ],
            )
            .map_err(self.err())?
            .map(|r| r.get(0));
        let Some(run) = run else {
            return Ok(false);
        };
        let job = tx
            .prepare("INSERT INTO baton_jobs (run, job, identity, hosts, status) VALUES ($1, $2, $3, $4, $5)")
            .map_err(self.err())?;
        let size = tx
            .prepare("INSERT INTO baton_sizes (run, job, requested, busbw, time_us) VALUES ($1, $2, $3, $4, $5)")
            .map_err(self.err())?;
        for j in &rec.jobs {
            tx.execute(&job, &[&run, &j.job, &j.identity, &j.hosts, &j.status])
                .map_err(self.err())?;
            for s in &j.sizes {
                let requested = s.requested.min(i64::MAX as u64) as i64;
                tx.execute(&size, &[&run, &j.job, &requested, &s.busbw, &s.time_us])
                    .map_err(self.err())?;
            }
        }
        tx.commit().map_err(self.err())?;
        Ok(true)
    }

    pub(super) fn contains(&self, key: &str) -> Result<bool, HistoryError> {
        let mut c = self.client.borrow_mut();
        c.query_opt("SELECT 1 FROM baton_runs WHERE key = $1", &[&key])
            .map(|r| r.is_some())
            .map_err(self.err())
    }

    /// The trend table, as the SQLite store gives it (byte order, as SQLite compares text).
    pub(super) fn rows(&self, q: &Query, last: i64) -> Result<Vec<TrendRow>, HistoryError> {
        let mut c = self.client.borrow_mut();
        let rows = c
            .query(
                r#"SELECT date, plan, job, hosts, status, key_size, busbw FROM (
                   SELECT r.date, r.plan, j.job, j.hosts, j.status,
                     (SELECT s.requested FROM baton_sizes s WHERE s.run = j.run AND s.job = j.job
                        AND s.busbw IS NOT NULL ORDER BY s.requested DESC LIMIT 1) AS key_size,
                     (SELECT s.busbw FROM baton_sizes s WHERE s.run = j.run AND s.job = j.job
                        AND s.busbw IS NOT NULL ORDER BY s.requested DESC LIMIT 1) AS busbw,
                     ROW_NUMBER() OVER (PARTITION BY j.identity, j.hosts
                                        ORDER BY r.date COLLATE "C" DESC, r.id DESC) AS age
                   FROM baton_jobs j JOIN baton_runs r ON r.id = j.run
                   WHERE ($1::text IS NULL OR j.job = $1)
                     AND ($2::text IS NULL OR strpos(',' || j.hosts || ',', ',' || $2 || ',') > 0)
                 ) t WHERE age <= $3 ORDER BY date COLLATE "C", job COLLATE "C""#,
                &[&q.job, &q.node, &last],
            )
            .map_err(self.err())?;
        Ok(rows
            .iter()
            .map(|r| TrendRow {
                date: r.get(0),
                plan: r.get(1),
                job: r.get(2),
                hosts: r.get(3),
                status: r.get(4),
                key_size: r.get::<_, Option<i64>>(5).map(|v| v as u64),
                busbw: r.get(6),
            })
            .collect())
    }

    pub(super) fn busbw_history(
        &self,
        identity: &str,
        hosts: &str,
        requested: u64,
        last: u32,
        except: &str,
    ) -> Result<Vec<f64>, HistoryError> {
        let mut c = self.client.borrow_mut();
        let requested = requested.min(i64::MAX as u64) as i64;
        let rows = c
            .query(
                r#"SELECT s.busbw FROM baton_sizes s
                   JOIN baton_jobs j ON j.run = s.run AND j.job = s.job
                   JOIN baton_runs r ON r.id = s.run
                 WHERE j.identity = $1 AND j.hosts = $2 AND s.requested = $3 AND r.key != $4
                   AND s.busbw IS NOT NULL AND j.status = 'completed'
                 ORDER BY r.date COLLATE "C" DESC, r.id DESC LIMIT $5"#,
                &[&identity, &hosts, &requested, &except, &i64::from(last)],
            )
            .map_err(self.err())?;
        Ok(rows.iter().map(|r| r.get::<_, f64>(0)).collect())
    }
}

/// A migration's or check's failure: a store problem already said, or a database error.
enum Failure {
    Store(HistoryError),
    Sql(postgres::Error),
}

impl Failure {
    fn or_sql(self, f: impl Fn(postgres::Error) -> HistoryError) -> HistoryError {
        match self {
            Failure::Store(e) => e,
            Failure::Sql(e) => f(e),
        }
    }
}

impl From<postgres::Error> for Failure {
    fn from(e: postgres::Error) -> Self {
        Failure::Sql(e)
    }
}

/// The schema version, 0 when there is none; a database holding baton's tables without the
/// version (another program's) is refused.
fn version(c: &mut impl postgres::GenericClient, shown: &str) -> Result<usize, Failure> {
    if !exists(c, "baton_schema")? {
        if exists(c, "baton_runs")? {
            return Err(Failure::Store(HistoryError::NotAStore {
                path: shown.to_string(),
                why: "it has a baton_runs table but no baton_schema version".into(),
            }));
        }
        return Ok(0);
    }
    let v: i32 = c
        .query_opt("SELECT version FROM baton_schema", &[])?
        .map_or(0, |r| r.get(0));
    if v as usize > MIGRATIONS.len() {
        return Err(Failure::Store(HistoryError::Newer {
            path: shown.to_string(),
            found: i64::from(v),
        }));
    }
    Ok(v as usize)
}

fn exists(c: &mut impl postgres::GenericClient, table: &str) -> Result<bool, postgres::Error> {
    Ok(
        c.query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])?
            .get(0),
    )
}

fn check_version(c: &mut Client, shown: &str) -> Result<(), Failure> {
    match version(c, shown)? {
        0 => Err(Failure::Store(HistoryError::Missing {
            path: shown.to_string(),
        })),
        _ => Ok(()),
    }
}

/// Applies the migrations not yet applied, one writer at a time.
fn migrate(c: &mut Client, shown: &str) -> Result<(), Failure> {
    let mut tx = c.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    let from = version(&mut tx, shown)?;
    if from == MIGRATIONS.len() {
        return Ok(());
    }
    tx.batch_execute("CREATE TABLE IF NOT EXISTS baton_schema (version INTEGER NOT NULL)")?;
    for m in &MIGRATIONS[from..] {
        tx.batch_execute(m)?;
    }
    let to = MIGRATIONS.len() as i32;
    tx.execute("DELETE FROM baton_schema", &[])?;
    tx.execute("INSERT INTO baton_schema (version) VALUES ($1)", &[&to])?;
    tx.commit()?;
    Ok(())
}

/// A database error as a store error, with the password cut out of whatever the server or the
/// driver said (neither should say it; this makes sure).
fn scrubbed(shown: &str, password: Option<&[u8]>, e: &postgres::Error) -> HistoryError {
    let mut why = e.to_string();
    if let Some(source) = std::error::Error::source(e) {
        why = format!("{why}: {source}");
    }
    if let Some(pw) = password
        .map(String::from_utf8_lossy)
        .filter(|p| !p.is_empty())
    {
        why = why.replace(&*pw, "***");
    }
    HistoryError::Postgres {
        store: shown.to_string(),
        why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_never_shown() {
        assert_eq!(
            shown("postgres://baton:s3cr%40t@db.example:5432/history?sslmode=disable&password=x"),
            "postgres://baton:<redacted>@db.example:5432/history?sslmode=disable&password=<redacted>"
        );
        assert_eq!(shown("postgresql://db/h"), "postgresql://db/h");
        assert!(is_url(Path::new("postgres://h/d")));
        assert!(!is_url(Path::new("./postgres:/x")));
    }

    #[test]
    fn tls_required_is_refused_before_connecting() {
        // Port 1 on loopback: were it tried, the error would be a refused connection.
        let e = Pg::connect("postgres://baton:pw@127.0.0.1:1/h?sslmode=require", false)
            .err()
            .unwrap();
        assert!(e.to_string().contains("no TLS to PostgreSQL"), "{e}");
        assert!(!e.to_string().contains("pw@"), "{e}");
    }
}
