//! The history in PostgreSQL, for fleets: many clusters adding nightly from many allocations,
//! where an SQLite file on NFS is not safe. Selected by a URL in place of a path
//! (`--store postgres://…`, `--history postgres://…`, `BATON_HISTORY`); the same runs, jobs and
//! sizes as the SQLite store, the same content keys and queries.
//!
//! The tables live in a schema of baton's own, `baton`, named in every statement: with the
//! default `search_path` an unqualified name lands in whatever schema is named like the role,
//! whoever owns it. A writer takes that schema only when its role owns it; a store an older
//! baton made on the search path is read where it is and moved into `baton` by the next add.
//! The schema is versioned (`baton.baton_schema`) and checked column by column before any row
//! is read: a database that is not baton's is refused, never trusted to hold baton's types.
//! baton applies its migrations itself, under a transaction-scoped advisory lock so that many
//! first adds at once migrate once. A run is added in one transaction, `ON CONFLICT (key) DO
//! NOTHING`: concurrent adds of the same results keep one. Reading (`show`, `trend`) never
//! migrates and runs in read-only transactions.
//!
//! Every wait is bounded on this side too, not only by the server's `statement_timeout` (a
//! server that stops answering applies nothing): one [`Deadline`] for connecting, startup and
//! authentication together, then one for each operation. The client is `tokio-postgres` on a
//! runtime of its own, so that each of those is one `timeout_at` over the whole exchange. The
//! URL's password is shown nowhere: every name and error carries the URL without it.

use std::cell::RefCell;
use std::future::Future;
use std::path::Path;
use std::time::Duration;

use tokio_postgres::{Client, GenericClient, NoTls, Row};

use super::record::RunRecord;
use super::store::{HistoryError, Query, TrendRow};
use crate::deadline::Deadline;

/// baton's schema: created by the first add, owned by its role.
const SCHEMA: &str = "baton";
/// The migrations, in order; the schema's version is how many have been applied.
const MIGRATIONS: &[&str] = &["
CREATE TABLE baton.baton_runs (
    id        BIGSERIAL PRIMARY KEY,
    key       TEXT NOT NULL UNIQUE,
    date      TEXT NOT NULL,
    plan      TEXT NOT NULL,
    plan_hash TEXT,
    source    TEXT NOT NULL,
    added     TEXT NOT NULL
);
CREATE TABLE baton.baton_jobs (
    run      BIGINT NOT NULL REFERENCES baton.baton_runs(id),
    job      TEXT NOT NULL,
    identity TEXT NOT NULL,
    hosts    TEXT NOT NULL,
    status   TEXT NOT NULL,
    PRIMARY KEY (run, job)
);
CREATE INDEX baton_jobs_by_identity ON baton.baton_jobs (identity, hosts);
CREATE TABLE baton.baton_sizes (
    run       BIGINT NOT NULL REFERENCES baton.baton_runs(id),
    job       TEXT NOT NULL,
    requested BIGINT NOT NULL,
    busbw     DOUBLE PRECISION,
    time_us   DOUBLE PRECISION,
    PRIMARY KEY (run, job, requested)
);
"];
/// The tables of a store at the current version, each column with its type as PostgreSQL
/// names it (`format_type`): what is checked before any row is read.
const TABLES: &[(&str, &[(&str, &str)])] = &[
    ("baton_schema", &[("version", "integer")]),
    (
        "baton_runs",
        &[
            ("id", "bigint"),
            ("key", "text"),
            ("date", "text"),
            ("plan", "text"),
            ("plan_hash", "text"),
            ("source", "text"),
            ("added", "text"),
        ],
    ),
    (
        "baton_jobs",
        &[
            ("run", "bigint"),
            ("job", "text"),
            ("identity", "text"),
            ("hosts", "text"),
            ("status", "text"),
        ],
    ),
    (
        "baton_sizes",
        &[
            ("run", "bigint"),
            ("job", "text"),
            ("requested", "bigint"),
            ("busbw", "double precision"),
            ("time_us", "double precision"),
        ],
    ),
];
/// The advisory lock migrations take ("batn").
const MIGRATION_LOCK: i64 = 0x6261_746e;
/// Connecting, startup and authentication together, unless the URL says `connect_timeout`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one statement, or a wait for a lock (another host's migration or add), may take:
/// the server ends it there.
const BOUNDS: &str = "SET statement_timeout = '60s'; SET lock_timeout = '60s'";
/// How long one operation (an add, a query) may take on this side, whatever the server does:
/// the server's 60 s and a margin for the answer to arrive.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(75);

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
    /// The runtime the client and its connection run on; shut down without waiting for a
    /// lookup that never returns.
    rt: Option<tokio::runtime::Runtime>,
    client: RefCell<Client>,
    /// The schema holding the tables, quoted: `baton`, or where an older baton made them.
    schema: String,
    shown: String,
    password: Option<Vec<u8>>,
}

impl Drop for Pg {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// A wait that ended at its deadline, or a store failure.
enum Failure {
    Store(HistoryError),
    Sql(tokio_postgres::Error),
    Late(String),
}

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Self {
        Failure::Sql(e)
    }
}

impl From<HistoryError> for Failure {
    fn from(e: HistoryError) -> Self {
        Failure::Store(e)
    }
}

/// Runs `f` on `rt` until it ends or `until` passes; `late` says what did not happen in time.
fn bounded<T>(
    rt: &tokio::runtime::Runtime,
    until: Deadline,
    late: impl FnOnce() -> String,
    f: impl Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    let at = tokio::time::Instant::from_std(until.instant());
    rt.block_on(async { tokio::time::timeout_at(at, f).await })
        .unwrap_or_else(|_| Err(Failure::Late(late())))
}

fn secs(d: Duration) -> String {
    match d.subsec_millis() {
        0 => format!("{}", d.as_secs()),
        _ => format!("{:.1}", d.as_secs_f64()),
    }
}

impl Pg {
    /// Connects; `write` moves an older baton's tables into baton's schema and applies the
    /// migrations this baton knows, else the schema must be there already and sessions are
    /// read-only.
    pub(super) fn connect(url: &str, write: bool) -> Result<Pg, HistoryError> {
        let shown = shown(url);
        let mut config: tokio_postgres::Config =
            url.parse().map_err(|_| HistoryError::BadName {
                path: shown.clone(),
                why: "not a PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE)",
            })?;
        if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
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
        // One bound for the TCP connect, the startup and the authentication together: the
        // driver's own timeout covers only the first, and a server that accepts and says
        // nothing would hold the command for ever.
        let within = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(CONNECT_TIMEOUT);
        config.connect_timeout(within);
        config.application_name("baton");
        let password = config.get_password().map(<[u8]>::to_vec);
        let failed = |e: Failure| match e {
            Failure::Store(e) => e,
            Failure::Sql(e) => scrubbed(&shown, password.as_deref(), &e),
            Failure::Late(why) => HistoryError::Postgres {
                store: shown.clone(),
                why,
            },
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| HistoryError::Postgres {
                store: shown.clone(),
                why: format!("cannot start the client: {e}"),
            })?;
        let connecting = async {
            let (client, connection) = config.connect(NoTls).await?;
            tokio::spawn(async move {
                let _ = connection.await;
            });
            // Every statement bounded by the server too: a lock never released ends the
            // statement there, and the transaction with it.
            client.batch_execute(BOUNDS).await?;
            Ok(client)
        };
        let late = || {
            format!(
                "the server did not finish connecting within {} s (connect, startup and \
                 authentication; `connect_timeout` in the URL changes the bound)",
                secs(within)
            )
        };
        let connected = bounded(&rt, Deadline::after(within), late, connecting);
        let mut client = match connected {
            Ok(c) => c,
            Err(e) => {
                rt.shutdown_background();
                return Err(failed(e));
            }
        };
        let late = || {
            format!(
                "the server did not answer within {} s",
                secs(OPERATION_TIMEOUT)
            )
        };
        let until = Deadline::after(OPERATION_TIMEOUT);
        let schema = bounded(&rt, until, late, async {
            if write {
                prepare(&mut client, &shown).await
            } else {
                client
                    .batch_execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
                    .await?;
                locate(&client, &shown).await
            }
        });
        match schema {
            Ok(schema) => Ok(Pg {
                rt: Some(rt),
                client: RefCell::new(client),
                schema,
                shown,
                password,
            }),
            Err(e) => {
                rt.shutdown_background();
                Err(failed(e))
            }
        }
    }

    pub(super) fn name(&self) -> &str {
        &self.shown
    }

    /// Runs one operation within [`OPERATION_TIMEOUT`].
    fn run<T>(&self, f: impl Future<Output = Result<T, Failure>>) -> Result<T, HistoryError> {
        let rt = self
            .rt
            .as_ref()
            .expect("the runtime lives as long as the store");
        let late = || {
            format!(
                "the server did not answer within {} s",
                secs(OPERATION_TIMEOUT)
            )
        };
        bounded(rt, Deadline::after(OPERATION_TIMEOUT), late, f).map_err(|e| match e {
            Failure::Store(e) => e,
            Failure::Sql(e) => scrubbed(&self.shown, self.password.as_deref(), &e),
            Failure::Late(why) => HistoryError::Postgres {
                store: self.shown.clone(),
                why,
            },
        })
    }

    /// Adds one run whole; false when the store already held it.
    pub(super) fn add(
        &self,
        rec: &RunRecord,
        source: &str,
        added: &str,
    ) -> Result<bool, HistoryError> {
        let s = &self.schema;
        let mut c = self.client.borrow_mut();
        self.run(async {
            let tx = c.transaction().await?;
            let run: Option<i64> = match tx
                .query_opt(
                    &format!(
                        "INSERT INTO {s}.baton_runs (key, date, plan, plan_hash, source, added)
                         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (key) DO NOTHING RETURNING id"
                    ),
                    &[
                        &rec.key,
                        &rec.date,
                        &rec.plan,
                        &rec.plan_hash,
                        &source,
                        &added,
                    ],
                )
                .await?
            {
                Some(r) => Some(r.try_get(0)?),
                None => None,
            };
            let Some(run) = run else {
                return Ok(false);
            };
            let job = tx
                .prepare(&format!(
                    "INSERT INTO {s}.baton_jobs (run, job, identity, hosts, status) VALUES ($1, $2, $3, $4, $5)"
                ))
                .await?;
            let size = tx
                .prepare(&format!(
                    "INSERT INTO {s}.baton_sizes (run, job, requested, busbw, time_us) VALUES ($1, $2, $3, $4, $5)"
                ))
                .await?;
            for j in &rec.jobs {
                tx.execute(&job, &[&run, &j.job, &j.identity, &j.hosts, &j.status])
                    .await?;
                for sz in &j.sizes {
                    let requested = sz.requested.min(i64::MAX as u64) as i64;
                    tx.execute(&size, &[&run, &j.job, &requested, &sz.busbw, &sz.time_us])
                        .await?;
                }
            }
            tx.commit().await?;
            Ok(true)
        })
    }

    pub(super) fn contains(&self, key: &str) -> Result<bool, HistoryError> {
        let s = &self.schema;
        let c = self.client.borrow();
        self.run(async {
            let found = c
                .query_opt(
                    &format!("SELECT 1 FROM {s}.baton_runs WHERE key = $1"),
                    &[&key],
                )
                .await?;
            Ok(found.is_some())
        })
    }

    /// The trend table, as the SQLite store gives it (byte order, as SQLite compares text).
    pub(super) fn rows(&self, q: &Query, last: i64) -> Result<Vec<TrendRow>, HistoryError> {
        let s = &self.schema;
        let c = self.client.borrow();
        self.run(async {
            let rows = c
                .query(
                    &format!(
                        r#"SELECT date, plan, job, hosts, status, key_size, busbw FROM (
                   SELECT r.date, r.plan, j.job, j.hosts, j.status,
                     (SELECT s.requested FROM {s}.baton_sizes s WHERE s.run = j.run AND s.job = j.job
                        AND s.busbw IS NOT NULL ORDER BY s.requested DESC LIMIT 1) AS key_size,
                     (SELECT s.busbw FROM {s}.baton_sizes s WHERE s.run = j.run AND s.job = j.job
                        AND s.busbw IS NOT NULL ORDER BY s.requested DESC LIMIT 1) AS busbw,
                     ROW_NUMBER() OVER (PARTITION BY j.identity, j.hosts
                                        ORDER BY r.date COLLATE "C" DESC, r.id DESC) AS age
                   FROM {s}.baton_jobs j JOIN {s}.baton_runs r ON r.id = j.run
                   WHERE ($1::text IS NULL OR j.job = $1)
                     AND ($2::text IS NULL OR strpos(',' || j.hosts || ',', ',' || $2 || ',') > 0)
                 ) t WHERE age <= $3 ORDER BY date COLLATE "C", job COLLATE "C""#
                    ),
                    &[&q.job, &q.node, &last],
                )
                .await?;
            rows.iter().map(trend_row).collect()
        })
    }

    pub(super) fn busbw_history(
        &self,
        identity: &str,
        hosts: &str,
        requested: u64,
        last: u32,
        except: &str,
    ) -> Result<Vec<f64>, HistoryError> {
        let s = &self.schema;
        let c = self.client.borrow();
        let requested = requested.min(i64::MAX as u64) as i64;
        self.run(async {
            let rows = c
                .query(
                    &format!(
                        r#"SELECT s.busbw FROM {s}.baton_sizes s
                   JOIN {s}.baton_jobs j ON j.run = s.run AND j.job = s.job
                   JOIN {s}.baton_runs r ON r.id = s.run
                 WHERE j.identity = $1 AND j.hosts = $2 AND s.requested = $3 AND r.key != $4
                   AND s.busbw IS NOT NULL AND j.status = 'completed'
                 ORDER BY r.date COLLATE "C" DESC, r.id DESC LIMIT $5"#
                    ),
                    &[&identity, &hosts, &requested, &except, &i64::from(last)],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| r.try_get::<_, f64>(0))
                .collect::<Result<_, _>>()?)
        })
    }
}

fn trend_row(r: &Row) -> Result<TrendRow, Failure> {
    Ok(TrendRow {
        date: r.try_get(0)?,
        plan: r.try_get(1)?,
        job: r.try_get(2)?,
        hosts: r.try_get(3)?,
        status: r.try_get(4)?,
        key_size: r.try_get::<_, Option<i64>>(5)?.map(|v| v as u64),
        busbw: r.try_get(6)?,
    })
}

fn not_a_store(shown: &str, why: String) -> Failure {
    Failure::Store(HistoryError::NotAStore {
        path: shown.to_string(),
        why,
    })
}

/// `name` as an SQL identifier.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Where a store an older baton made lies: the schema its unqualified `baton_schema` resolves
/// to on this session's search path, with whether a role of this user owns it. A
/// `baton_runs` there without the version is another program's.
async fn older(c: &impl GenericClient, shown: &str) -> Result<Option<(String, bool)>, Failure> {
    let q = "SELECT n.nspname, pg_has_role(current_user, c.relowner, 'MEMBER')
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)";
    match c.query_opt(q, &[&"baton_schema"]).await? {
        Some(r) => Ok(Some((r.try_get(0)?, r.try_get(1)?))),
        None if c.query_opt(q, &[&"baton_runs"]).await?.is_some() => Err(not_a_store(
            shown,
            "it has a baton_runs table but no baton_schema version".into(),
        )),
        None => Ok(None),
    }
}

async fn has_table(c: &impl GenericClient, schema: &str, table: &str) -> Result<bool, Failure> {
    let r = c
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND c.relname = $2)",
            &[&schema, &table],
        )
        .await?;
    Ok(r.try_get(0)?)
}

/// For reading: the schema that holds the store, checked to be baton's at a version this
/// baton reads.
async fn locate(c: &impl GenericClient, shown: &str) -> Result<String, Failure> {
    let schema = if has_table(c, SCHEMA, "baton_schema").await? {
        SCHEMA.to_string()
    } else {
        match older(c, shown).await? {
            None => {
                return Err(Failure::Store(HistoryError::Missing {
                    path: shown.to_string(),
                }));
            }
            Some((schema, true)) => schema,
            Some((schema, false)) => {
                return Err(not_a_store(
                    shown,
                    format!(
                        "its tables in schema {schema:?}, where an older baton kept them, are not \
                         this user's; run `baton history add` once as the role that made them, \
                         which moves them into schema {SCHEMA:?}"
                    ),
                ));
            }
        }
    };
    match version(c, &schema, shown).await? {
        0 => Err(Failure::Store(HistoryError::Missing {
            path: shown.to_string(),
        })),
        _ => Ok(quoted(&schema)),
    }
}

/// For adding: baton's schema made (or found owned by this user), an older baton's tables
/// moved into it, the migrations applied; one writer at a time.
async fn prepare(c: &mut Client, shown: &str) -> Result<String, Failure> {
    let tx = c.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    let owner = tx
        .query_opt(
            "SELECT nspowner::regrole::text, pg_has_role(current_user, nspowner, 'MEMBER'),
                    current_user::text
             FROM pg_namespace WHERE nspname = $1",
            &[&SCHEMA],
        )
        .await?;
    match owner {
        None => tx.batch_execute("CREATE SCHEMA baton").await?,
        Some(r) if !r.try_get::<_, bool>(1)? => {
            let (owner, me): (String, String) = (r.try_get(0)?, r.try_get(2)?);
            return Err(not_a_store(
                shown,
                format!(
                    "its schema {SCHEMA:?} is owned by {owner}, not by {me}: baton adds only to a \
                     schema its role owns (ALTER SCHEMA {SCHEMA} OWNER TO {me}, or a database \
                     of its own)"
                ),
            ));
        }
        Some(_) => {}
    }
    if !has_table(&tx, SCHEMA, "baton_schema").await?
        && let Some((from, mine)) = older(&tx, shown).await?
    {
        if !mine {
            return Err(not_a_store(
                shown,
                format!(
                    "its tables in schema {from:?}, where an older baton kept them, are not this user's"
                ),
            ));
        }
        // Checked before it is moved: another program's tables stay where they are.
        version(&tx, &from, shown).await?;
        for (table, _) in TABLES {
            if has_table(&tx, &from, table).await? {
                tx.batch_execute(&format!(
                    "ALTER TABLE {}.{table} SET SCHEMA baton",
                    quoted(&from)
                ))
                .await?;
            }
        }
    }
    let from = match has_table(&tx, SCHEMA, "baton_schema").await? {
        true => version(&tx, SCHEMA, shown).await?,
        false => 0,
    };
    if from < MIGRATIONS.len() {
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS baton.baton_schema (version INTEGER NOT NULL)",
        )
        .await?;
        for m in &MIGRATIONS[from..] {
            tx.batch_execute(m).await?;
        }
        let to = MIGRATIONS.len() as i32;
        tx.execute("DELETE FROM baton.baton_schema", &[]).await?;
        tx.execute(
            "INSERT INTO baton.baton_schema (version) VALUES ($1)",
            &[&to],
        )
        .await?;
        shape(&tx, SCHEMA, shown).await?;
    }
    tx.commit().await?;
    Ok(quoted(SCHEMA))
}

/// The version of the store in `schema`, after checking that its tables are baton's, column
/// by column: a version that is not one integer, or a table of other columns, is another
/// program's store, refused before any of its rows is read.
async fn version(c: &impl GenericClient, schema: &str, shown: &str) -> Result<usize, Failure> {
    let not = |why: String| not_a_store(shown, why);
    check_columns(c, schema, &TABLES[..1], shown).await?;
    let rows = c
        .query(
            &format!("SELECT version FROM {}.baton_schema", quoted(schema)),
            &[],
        )
        .await?;
    let v = match rows.as_slice() {
        [r] => r.try_get::<_, Option<i32>>(0)?,
        rows => {
            return Err(not(format!(
                "baton_schema holds {} version rows, not one",
                rows.len()
            )));
        }
    };
    let v = match v {
        Some(v) if v >= 1 => v as usize,
        v => {
            return Err(not(format!(
                "baton_schema's version is {v:?}, not a version"
            )));
        }
    };
    if v > MIGRATIONS.len() {
        return Err(Failure::Store(HistoryError::Newer {
            path: shown.to_string(),
            found: v as i64,
        }));
    }
    shape(c, schema, shown).await?;
    Ok(v)
}

/// Every table of the current version, with baton's columns of baton's types.
async fn shape(c: &impl GenericClient, schema: &str, shown: &str) -> Result<(), Failure> {
    check_columns(c, schema, TABLES, shown).await
}

async fn check_columns(
    c: &impl GenericClient,
    schema: &str,
    tables: &[(&str, &[(&str, &str)])],
    shown: &str,
) -> Result<(), Failure> {
    let names: Vec<&str> = tables.iter().map(|(t, _)| *t).collect();
    let rows = c
        .query(
            "SELECT c.relname::text, c.relkind::text, a.attname::text, format_type(a.atttypid, a.atttypmod)
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
             WHERE n.nspname = $1 AND c.relname = ANY($2)",
            &[&schema, &names],
        )
        .await?;
    let mut found = Vec::new();
    for r in &rows {
        let (table, kind): (String, String) = (r.try_get(0)?, r.try_get(1)?);
        let (column, ty): (Option<String>, Option<String>) = (r.try_get(2)?, r.try_get(3)?);
        found.push((table, kind, column, ty));
    }
    for (table, columns) in tables {
        let of: Vec<_> = found.iter().filter(|f| f.0 == *table).collect();
        let why = match of.first() {
            None => format!("it has no {table} table"),
            Some(f) if f.1 != "r" => format!("its {table} is not a table"),
            Some(_) => match columns.iter().find(|(col, ty)| {
                !of.iter()
                    .any(|f| f.2.as_deref() == Some(*col) && f.3.as_deref() == Some(*ty))
            }) {
                None => continue,
                Some((col, ty)) => match of.iter().find(|f| f.2.as_deref() == Some(*col)) {
                    Some(f) => format!(
                        "its {table}.{col} is of type {}, not {ty}",
                        f.3.as_deref().unwrap_or("?")
                    ),
                    None => format!("its {table} table has no column {col}"),
                },
            },
        };
        return Err(not_a_store(shown, why));
    }
    Ok(())
}

/// A database error as a store error, with the password cut out of whatever the server or the
/// driver said (neither should say it; this makes sure).
fn scrubbed(shown: &str, password: Option<&[u8]>, e: &tokio_postgres::Error) -> HistoryError {
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
    fn an_exchange_that_never_ends_is_cut_at_its_deadline() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let start = std::time::Instant::now();
        let never = std::future::pending::<Result<(), Failure>>();
        let until = Deadline::after(Duration::from_millis(200));
        let r = bounded(&rt, until, || "late".to_string(), never);
        assert!(matches!(r, Err(Failure::Late(ref w)) if w == "late"));
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        let fresh = Deadline::after(Duration::from_secs(5));
        assert!(matches!(
            bounded(&rt, fresh, String::new, async { Ok(7) }),
            Ok(7)
        ));
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
