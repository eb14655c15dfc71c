//! The history store: one SQLite file (bundled SQLite, so no system library is needed), written
//! by `baton history add` and read by `history show` and the `trend` criterion.
//!
//! Several CI jobs may add at once to a store on a shared disk. SQLite serialises writers; what
//! keeps every run is: write-ahead logging (readers never block the writer), a busy timeout long
//! enough to wait out the other writers instead of failing, and one `BEGIN IMMEDIATE` transaction
//! per run, so a run is in the store whole or not at all. A run's key is its content hash: adding
//! the same results twice adds nothing the second time.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::open;
use super::postgres::{Pg, is_url};
use super::record::{RunRecord, record};
use crate::results::Results;

/// Stamped into the file (`PRAGMA application_id`) so another program's database is refused
/// rather than written into: "batn".
pub(super) const APPLICATION_ID: i64 = 0x6261_746e;
/// Schema version (`PRAGMA user_version`).
pub(super) const SCHEMA_VERSION: i64 = 1;
/// How long a writer waits for the others: many CI jobs finishing at once each hold the lock
/// for milliseconds.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);
/// Most runs per job `show --last` asks for: years of nightlies, and far below where the count
/// would wrap.
pub const MAX_LAST: usize = 1_000_000;

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    id        INTEGER PRIMARY KEY,
    key       TEXT NOT NULL UNIQUE,
    date      TEXT NOT NULL,
    plan      TEXT NOT NULL,
    plan_hash TEXT,
    source    TEXT NOT NULL,
    added     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS jobs (
    run      INTEGER NOT NULL REFERENCES runs(id),
    job      TEXT NOT NULL,
    identity TEXT NOT NULL,
    hosts    TEXT NOT NULL,
    status   TEXT NOT NULL,
    PRIMARY KEY (run, job)
);
CREATE INDEX IF NOT EXISTS jobs_by_identity ON jobs (identity, hosts);
CREATE TABLE IF NOT EXISTS sizes (
    run       INTEGER NOT NULL REFERENCES runs(id),
    job       TEXT NOT NULL,
    requested INTEGER NOT NULL,
    busbw     REAL,
    time_us   REAL,
    PRIMARY KEY (run, job, requested)
);
";

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(
        "{path}: no history store here yet; add a run first: baton history add RESULTS --store {path}"
    )]
    Missing { path: String },
    #[error("{path}: is not a baton history store ({why})")]
    NotAStore { path: String, why: String },
    #[error("{path}: cannot be a history store: {why}")]
    BadName { path: String, why: &'static str },
    #[error("--last {0}: at most {MAX_LAST} runs per job")]
    TooMany(usize),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "{path}: store format {found} is newer than this baton reads ({SCHEMA_VERSION}); use a newer baton"
    )]
    Newer { path: String, found: i64 },
    #[error("{path}: {source}")]
    Sql {
        path: String,
        source: rusqlite::Error,
    },
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
    /// A PostgreSQL store's failure; `store` is its URL without the password.
    #[error("{store}: {why}")]
    Postgres { store: String, why: String },
}

/// What `add` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    pub key: String,
    /// False when the store already held these results.
    pub new: bool,
    pub jobs: usize,
}

/// Which rows `show` lists.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Job ID, exact.
    pub job: Option<String>,
    /// Only jobs that ran on this host.
    pub node: Option<String>,
    /// The last N runs of each job (and host set).
    pub last: Option<usize>,
}

/// One job of one run, for the trend table and chart.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendRow {
    pub date: String,
    pub plan: String,
    pub job: String,
    pub hosts: String,
    pub status: String,
    /// The largest size with a busbw, and that busbw (GB/s).
    pub key_size: Option<u64>,
    pub busbw: Option<f64>,
}

/// A history store: the SQLite file, or a PostgreSQL database (`super::postgres`).
pub struct Store {
    backend: Backend,
    path: PathBuf,
}

enum Backend {
    Sqlite(Connection),
    Postgres(Box<Pg>),
}

fn postgres_url(p: &Path) -> Option<&str> {
    is_url(p).then(|| p.to_str()).flatten()
}

/// `BATON_HISTORY`: the store a site names for every command (a path or a `postgres://` URL),
/// after the command line's and before the plan's or the default.
pub fn from_env() -> Option<PathBuf> {
    std::env::var_os("BATON_HISTORY")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The default store: `$XDG_DATA_HOME/baton/history.sqlite`, else under `~/.local/share`.
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local/share"))
        })?;
    Some(base.join("baton").join("history.sqlite"))
}

impl Store {
    /// Opens the store for adding: an existing baton store, or a new one made when nothing is
    /// at `path` (its directory too). Any other file is refused and left as it was.
    /// A `postgres://` URL in place of the path is a PostgreSQL store, migrated as needed.
    pub fn create(path: &Path) -> Result<Store, HistoryError> {
        if let Some(url) = postgres_url(path) {
            return Ok(Store::of_pg(Pg::connect(url, true)?));
        }
        Store::with(open::read_write(path)?, path)
    }

    /// Opens an existing store read-only (for `show` and `trend`): a missing one is an error
    /// that says how to make it, and a file that is not a baton store is refused, never written.
    pub fn open(path: &Path) -> Result<Store, HistoryError> {
        if let Some(url) = postgres_url(path) {
            return Ok(Store::of_pg(Pg::connect(url, false)?));
        }
        Store::with(open::read_only(path)?, path)
    }

    fn with(conn: Connection, path: &Path) -> Result<Store, HistoryError> {
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open::sql(path))?;
        Ok(Store {
            backend: Backend::Sqlite(conn),
            path: path.to_path_buf(),
        })
    }

    /// Only the URL without its password is kept, so nothing can show the password.
    fn of_pg(pg: Pg) -> Store {
        Store {
            path: PathBuf::from(pg.name()),
            backend: Backend::Postgres(Box::new(pg)),
        }
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> HistoryError + '_ {
        open::sql(&self.path)
    }

    /// Adds one run, whole, in one transaction; the same results again add nothing.
    pub fn add(&mut self, r: &Results, source: &str) -> Result<Added, HistoryError> {
        let added = crate::results::now_rfc3339();
        let rec = record(r, &added);
        let conn = match &mut self.backend {
            Backend::Sqlite(c) => c,
            Backend::Postgres(pg) => {
                let new = pg.add(&rec, source, &added)?;
                return Ok(Added {
                    key: rec.key,
                    new,
                    jobs: rec.jobs.len(),
                });
            }
        };
        let path = self.path.display().to_string();
        let sql = |source| HistoryError::Sql {
            path: path.clone(),
            source,
        };
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let inserted = tx
            .execute(
                "INSERT OR IGNORE INTO runs (key, date, plan, plan_hash, source, added) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![rec.key, rec.date, rec.plan, rec.plan_hash, source, added],
            )
            .map_err(sql)?;
        if inserted == 0 {
            return Ok(Added {
                key: rec.key,
                new: false,
                jobs: rec.jobs.len(),
            });
        }
        let run = tx.last_insert_rowid();
        insert_jobs(&tx, run, &rec).map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(Added {
            key: rec.key,
            new: true,
            jobs: rec.jobs.len(),
        })
    }

    /// Whether the store holds the run with this key.
    pub fn contains(&self, key: &str) -> Result<bool, HistoryError> {
        let conn = match &self.backend {
            Backend::Sqlite(c) => c,
            Backend::Postgres(pg) => return pg.contains(key),
        };
        conn.query_row("SELECT 1 FROM runs WHERE key = ?1", [key], |_| Ok(()))
            .optional()
            .map(|o| o.is_some())
            .map_err(self.err())
    }

    /// The trend table: one row per job and run, newest last.
    pub fn rows(&self, q: &Query) -> Result<Vec<TrendRow>, HistoryError> {
        let last = match q.last {
            None => i64::MAX,
            Some(n) if n <= MAX_LAST => n as i64,
            Some(n) => return Err(HistoryError::TooMany(n)),
        };
        let conn = match &self.backend {
            Backend::Sqlite(c) => c,
            Backend::Postgres(pg) => return pg.rows(q, last),
        };
        let mut st = conn
            .prepare(
                "SELECT date, plan, job, hosts, status, key_size, busbw FROM (
                   SELECT r.date, r.plan, j.job, j.hosts, j.status,
                     (SELECT s.requested FROM sizes s WHERE s.run = j.run AND s.job = j.job
                        AND s.busbw IS NOT NULL ORDER BY s.requested DESC LIMIT 1) AS key_size,
                     (SELECT s.busbw FROM sizes s WHERE s.run = j.run AND s.job = j.job
                        AND s.busbw IS NOT NULL ORDER BY s.requested DESC LIMIT 1) AS busbw,
                     ROW_NUMBER() OVER (PARTITION BY j.identity, j.hosts
                                        ORDER BY r.date DESC, r.id DESC) AS age
                   FROM jobs j JOIN runs r ON r.id = j.run
                   WHERE (?1 IS NULL OR j.job = ?1)
                     AND (?2 IS NULL OR instr(',' || j.hosts || ',', ',' || ?2 || ',') > 0)
                 ) WHERE age <= ?3 ORDER BY date, job",
            )
            .map_err(self.err())?;
        let rows = st
            .query_map(params![q.job, q.node, last], |r| {
                Ok(TrendRow {
                    date: r.get(0)?,
                    plan: r.get(1)?,
                    job: r.get(2)?,
                    hosts: r.get(3)?,
                    status: r.get(4)?,
                    key_size: r.get::<_, Option<i64>>(5)?.map(|v| v as u64),
                    busbw: r.get(6)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.err())
    }

    /// The busbw of the `last` runs of the job with `identity` on `hosts` at `requested`, newest
    /// first, leaving out the run with key `except` (the run being graded, if already added).
    pub fn busbw_history(
        &self,
        identity: &str,
        hosts: &str,
        requested: u64,
        last: u32,
        except: &str,
    ) -> Result<Vec<f64>, HistoryError> {
        let conn = match &self.backend {
            Backend::Sqlite(c) => c,
            Backend::Postgres(pg) => {
                return pg.busbw_history(identity, hosts, requested, last, except);
            }
        };
        let mut st = conn
            .prepare(
                "SELECT s.busbw FROM sizes s
                   JOIN jobs j ON j.run = s.run AND j.job = s.job
                   JOIN runs r ON r.id = s.run
                 WHERE j.identity = ?1 AND j.hosts = ?2 AND s.requested = ?3 AND r.key != ?4
                   AND s.busbw IS NOT NULL AND j.status = 'completed'
                 ORDER BY r.date DESC, r.id DESC LIMIT ?5",
            )
            .map_err(self.err())?;
        let rows = st
            .query_map(
                params![identity, hosts, requested as i64, except, last as i64],
                |r| r.get::<_, f64>(0),
            )
            .map_err(self.err())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.err())
    }

    /// The file, or the database's URL without its password.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn insert_jobs(tx: &rusqlite::Transaction<'_>, run: i64, rec: &RunRecord) -> rusqlite::Result<()> {
    let mut job = tx.prepare(
        "INSERT INTO jobs (run, job, identity, hosts, status) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let mut size = tx.prepare(
        "INSERT INTO sizes (run, job, requested, busbw, time_us) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for j in &rec.jobs {
        job.execute(params![run, j.job, j.identity, j.hosts, j.status])?;
        for s in &j.sizes {
            size.execute(params![
                run,
                j.job,
                s.requested.min(i64::MAX as u64) as i64,
                s.busbw,
                s.time_us
            ])?;
        }
    }
    Ok(())
}

/// Adds a results file to the store at `store`: what `baton history add` does per file.
pub fn add_file(store: &mut Store, results: &Path) -> Result<Added, AddError> {
    let r = crate::results::read(results).map_err(AddError::Results)?;
    store
        .add(&r, &results.display().to_string())
        .map_err(AddError::History)
}

#[derive(Debug, thiserror::Error)]
pub enum AddError {
    #[error(transparent)]
    Results(crate::results::ResultsError),
    #[error(transparent)]
    History(HistoryError),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("baton-hist-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn another_database_or_file_is_refused_not_written() {
        let d = scratch("foreign");
        let other = d.join("other.sqlite");
        {
            let c = Connection::open(&other).unwrap();
            c.execute_batch("CREATE TABLE mine (x INTEGER); INSERT INTO mine VALUES (1);")
                .unwrap();
        }
        let e = Store::create(&other).err().unwrap();
        assert!(
            e.to_string().contains("is not a baton history store"),
            "{e}"
        );
        let text = d.join("notes.txt");
        std::fs::write(&text, "x".repeat(4096)).unwrap();
        let e = Store::create(&text).err().unwrap();
        assert!(
            e.to_string().contains("is not a baton history store"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&text).unwrap(), "x".repeat(4096));
        let e = Store::open(&d.join("none.sqlite")).err().unwrap();
        assert!(matches!(e, HistoryError::Missing { .. }), "{e}");
        assert!(!d.join("none.sqlite").exists(), "a read creates nothing");
        std::os::unix::fs::symlink(&other, d.join("link.sqlite")).unwrap();
        assert!(Store::create(&d.join("link.sqlite")).is_err());
    }
}
