//! Opening a history store. A store's path comes from a plan (`history:`) as well as from the
//! user, so opening never turns a file into a store by accident: `show` and `trend` open
//! read-only and take only a file that already is a baton store (SQLite, our application id,
//! our tables); `add` initialises only a store it creates itself — built in a temporary file
//! beside the target and linked into place only if nothing is there, so an empty `__init__.py`
//! is refused and two first writers never see a half-made store. A store nobody may write (a
//! directory of mode 555, a read-only mount) is still read.

use std::ffi::CString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::store::{APPLICATION_ID, HistoryError, SCHEMA, SCHEMA_VERSION};

/// The first bytes of every SQLite database file.
const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

const FORMS: &str = "a store is a path (an SQLite file) or a postgres://USER@HOST:PORT/DATABASE \
                     URL, its password in PGPASSWORD (./NAME for a file really called so)";

/// How a message names the store `path`: a database's URL without its password, a name that is
/// neither a path nor such a URL without its values, any other path as it is.
pub fn shown(path: &Path) -> String {
    let name = path.display().to_string();
    if super::postgres::is_url(path) {
        super::postgres::shown(&name)
    } else {
        path.to_str()
            .and_then(crate::secrets::store_name_shown)
            .unwrap_or(name)
    }
}

/// Refuses names SQLite gives a meaning of its own (`:memory:` keeps nothing, `file:` is a
/// URI) and names that are neither a path nor a PostgreSQL URL, shown without their secrets.
pub fn check_name(path: &Path) -> Result<(), HistoryError> {
    if let Some(shown) = path.to_str().and_then(crate::secrets::store_name_shown) {
        return Err(HistoryError::BadName {
            path: shown,
            why: FORMS,
        });
    }
    let name = path.as_os_str().as_bytes();
    let why = if name.is_empty() {
        "an empty name"
    } else if name == b":memory:" {
        "SQLite's in-memory database, which keeps nothing"
    } else if name.starts_with(b"file:") {
        "an SQLite URI; name the file as a path (./file:… if it really is called so)"
    } else {
        return Ok(());
    };
    Err(HistoryError::BadName {
        path: path.display().to_string(),
        why,
    })
}

/// Whether something is at `path`; `Err` when it is not a regular file with an SQLite header.
fn existing(path: &Path) -> Result<bool, HistoryError> {
    let not = |why: &str| HistoryError::NotAStore {
        path: path.display().to_string(),
        why: why.to_string(),
    };
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => {
            return Err(HistoryError::Io {
                path: path.display().to_string(),
                source: e,
            });
        }
        Ok(m) => m,
    };
    if let Some(kind) = crate::input::not_regular(meta.file_type()) {
        return Err(not(kind));
    }
    let mut head = Vec::new();
    crate::input::open_regular(path, "history store")
        .map_err(|e| HistoryError::Io {
            path: path.display().to_string(),
            source: e.into_io(),
        })?
        .take(SQLITE_MAGIC.len() as u64)
        .read_to_end(&mut head)
        .map_err(|e| HistoryError::Io {
            path: path.display().to_string(),
            source: e,
        })?;
    match head.as_slice() {
        [] => Err(not("an empty file")),
        h if h == SQLITE_MAGIC => Ok(true),
        _ => Err(not("not an SQLite database")),
    }
}

/// The store at `path`, read-only; a missing file is [`HistoryError::Missing`].
pub fn read_only(path: &Path) -> Result<Connection, HistoryError> {
    check_name(path)?;
    if !existing(path)? {
        return Err(HistoryError::Missing {
            path: path.display().to_string(),
        });
    }
    let abs = absolute(path);
    // Where nobody may write, SQLite cannot make the WAL index beside the file; `immutable`
    // reads the file as it is, without one (and without locks nobody could take anyway).
    let immutable = !abs.parent().is_some_and(writable);
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(uri(&abs, immutable), flags).map_err(sql(path))?;
    verify(&conn, path)?;
    Ok(conn)
}

/// The store at `path` for adding: an existing baton store, or one made here when nothing is
/// at `path`.
pub fn read_write(path: &Path) -> Result<Connection, HistoryError> {
    check_name(path)?;
    if let Some(dir) = path.parent() {
        crate::output::ensure_dir(dir)?;
    }
    crate::output::refuse_symlink(path)?;
    if !existing(path)? {
        create(path)?;
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(path, flags).map_err(sql(path))?;
    verify(&conn, path)?;
    Ok(conn)
}

/// Makes a store at `path` if nothing is there: built whole in a temporary file, then linked
/// into place. Another writer that got there first wins; its store is as good as ours.
fn create(path: &Path) -> Result<(), HistoryError> {
    let tmp = Scratch(temporary_beside(path));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o644)
        .open(&tmp.0)
        .map_err(|e| HistoryError::Io {
            path: tmp.0.display().to_string(),
            source: e,
        })?;
    {
        let conn = Connection::open_with_flags(
            &tmp.0,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .map_err(sql(path))?;
        // WAL is a property of the file, set once; closing the last connection folds the
        // log back into the file, so the file linked below is the whole store.
        let _: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(sql(path))?;
        conn.execute_batch(&format!(
            "BEGIN; {SCHEMA} PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        ))
        .map_err(sql(path))?;
        conn.close().map_err(|(_, e)| sql(path)(e))?;
    }
    match std::fs::hard_link(&tmp.0, path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(HistoryError::Io {
            path: path.display().to_string(),
            source: e,
        }),
    }
}

/// Checks the connection is to a baton store of a version this baton reads.
fn verify(conn: &Connection, path: &Path) -> Result<(), HistoryError> {
    let not = |why: String| HistoryError::NotAStore {
        path: path.display().to_string(),
        why,
    };
    let app: i64 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(sql(path))?;
    if app != APPLICATION_ID {
        return Err(not(match app {
            0 => "an SQLite database without baton's application id".into(),
            a => format!("application id {a:#x}"),
        }));
    }
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sql(path))?;
    if version > SCHEMA_VERSION {
        return Err(HistoryError::Newer {
            path: path.display().to_string(),
            found: version,
        });
    }
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('runs', 'jobs', 'sizes')",
            [],
            |r| r.get(0),
        )
        .map_err(sql(path))?;
    if version < SCHEMA_VERSION || tables != 3 {
        return Err(not("baton's application id, but not its tables".into()));
    }
    Ok(())
}

/// An SQLite error on the store at `path`; "not a database" is the user's file, not a failure.
pub fn sql(path: &Path) -> impl Fn(rusqlite::Error) -> HistoryError + '_ {
    move |source| match source {
        rusqlite::Error::SqliteFailure(e, _) if e.code == rusqlite::ErrorCode::NotADatabase => {
            HistoryError::NotAStore {
                path: path.display().to_string(),
                why: "not an SQLite database".into(),
            }
        }
        source => HistoryError::Sql {
            path: path.display().to_string(),
            source,
        },
    }
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    }
}

/// Whether this process may create files in `dir` (false on a read-only mount, even for root).
fn writable(dir: &Path) -> bool {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    CString::new(dir.as_os_str().as_bytes())
        .is_ok_and(|c| unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0)
}

/// The SQLite URI of a read-only open of `abs`, every byte outside the unreserved set
/// percent-encoded (a `?` or `#` in a directory name stays part of the path).
fn uri(abs: &Path, immutable: bool) -> String {
    let mut s = String::from("file:");
    for &b in abs.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'.' | b'_' | b'~') {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s.push_str("?mode=ro");
    if immutable {
        s.push_str("&immutable=1");
    }
    s
}

/// A fresh name beside `path` for the store being made.
fn temporary_beside(path: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = path
        .file_name()
        .map_or_else(|| "history".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(
        ".{name}.{}.{nanos}.{}.new",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A temporary file removed when it goes out of scope, whether or not it was linked.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        for suffix in ["-wal", "-shm", "-journal"] {
            let mut p = self.0.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown_name(s: &str) -> String {
        shown(Path::new(s))
    }

    #[test]
    fn uris_keep_odd_directory_names_part_of_the_path() {
        assert_eq!(
            uri(Path::new("/a b/x?y#z%/h.sqlite"), true),
            "file:/a%20b/x%3Fy%23z%25/h.sqlite?mode=ro&immutable=1"
        );
        assert_eq!(
            uri(Path::new("/s/h.sqlite"), false),
            "file:/s/h.sqlite?mode=ro"
        );
    }

    #[test]
    fn names_sqlite_reads_its_own_way_are_refused() {
        for bad in [
            ":memory:",
            "file:h.sqlite",
            "file::memory:?cache=shared",
            "",
        ] {
            assert!(
                matches!(
                    check_name(Path::new(bad)),
                    Err(HistoryError::BadName { .. })
                ),
                "{bad}"
            );
        }
        assert!(check_name(Path::new("./file:h.sqlite")).is_ok());
        // Neither a path nor a postgres:// URL: refused, shown without a value.
        for (bad, shown) in [
            (
                "host=db user=baton password=pw dbname=h",
                "`host=… user=… password=… dbname=…` (a libpq connection string)",
            ),
            ("dbname=h", "`dbname=…` (a libpq connection string)"),
            (
                "mysql://u:pw@db:3306/h?password=pw",
                "mysql://u:<redacted>@db:3306/… (a mysql:// URL)",
            ),
        ] {
            let e = check_name(Path::new(bad)).unwrap_err().to_string();
            assert!(e.starts_with(shown), "{e}");
            assert!(
                e.contains("postgres://USER@HOST") && !e.contains("pw"),
                "{e}"
            );
            assert_eq!(shown_name(bad), shown);
        }
        assert!(check_name(Path::new("./dbname=h")).is_ok());
        assert!(check_name(Path::new("runs/h.sqlite")).is_ok());
        assert!(check_name(Path::new("h.sqlite")).is_ok());
    }
}
