//! Results history: runs kept in an embedded SQLite store so a nightly can be compared with
//! its own past — a trend table and chart (`baton history show`), and the `trend` criterion that
//! fails a run falling below the median of its last runs. A baseline is one good run chosen by
//! hand; the history is every run, and catches the slow slide a fixed baseline misses.
//!
//! Runs are looked up by what was measured (the job's identity) and where (its host set), never
//! by job name alone: a nightly on node X is not judged against node Y's numbers.

mod open;
pub mod postgres;
pub mod record;
pub mod store;

pub use open::shown;
pub use record::{hosts_of, identity_of, key_of};
pub use store::{
    AddError, Added, HistoryError, MAX_LAST, Query, Store, TrendRow, add_file, default_path,
    from_env,
};
