//! The run's journal: what a run measured, one JSON record a line, handed to the kernel before the
//! next row starts — so it survives the death of any process at once — and flushed to disk at
//! least once a second and at the end of every job, so a machine crash loses at most a second. Rewriting `results.json` after every row cost time in proportion
//! to everything measured so far (a soak slowed from 177 to 47 rows/s within a minute); an append
//! costs the same for the first row and the millionth. `results.json` is rebuilt from the journal
//! at the end of every environment set, at the end of the run, on a signal, and by `--resume`
//! and `grade` after a crash — whichever process died, every row written here survives.

use std::io::{BufRead, BufReader, Read, Seek, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::io::ResultsError;
use super::model::{
    Environment, JobError, JobResult, JobStatus, Results, Row, TelemetrySample, TransportLink,
};

/// The journal's file name inside a run's output directory.
pub const FILE: &str = "journal.jsonl";

/// A journal is bounded like every other input: far beyond any real run's rows.
const MAX_BYTES: u64 = 4 << 30;
const MAX_LINE: u64 = 512 << 20;

/// One line of the journal.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    /// What the run extends: new results carrying the plan's identity, or those resumed.
    Base { results: Box<Results> },
    /// A job starts; it replaces any earlier result of the same ID.
    Job { job: Box<JobResult> },
    /// A repeat of `job` starts.
    Repeat {
        job: String,
        index: u32,
        started: Option<String>,
    },
    /// A finished row of `job`'s current repeat.
    Row { job: String, row: Box<Row> },
    /// `job` ended: its status, and errors and telemetry added to what it had.
    End {
        job: String,
        status: JobStatus,
        #[serde(default)]
        errors: Vec<JobError>,
        #[serde(default)]
        telemetry: Vec<TelemetrySample>,
    },
    /// Hosts, GPUs and versions a worker saw; merged into the run's.
    Environment { environment: Box<Environment> },
    /// The NCCL and engine flags `job` was measured with.
    MeasuredWith {
        job: String,
        measured_with: Box<super::MeasuredWith>,
    },
    /// NCCL transports captured for `job`.
    Transports {
        job: String,
        links: Vec<TransportLink>,
    },
    /// Node evidence of `job`: snapshots at its start, then with the after and delta at its end
    /// (each node's newer entry replaces its older).
    Evidence {
        job: String,
        nodes: Vec<super::evidence::NodeEvidence>,
    },
    /// What NCCL printed on `host` during `job`, read by the runner from the job's output.
    NcclLines {
        job: String,
        host: String,
        lines: super::evidence::NcclLines,
    },
    /// The fleet consistency preflight of a node-set run.
    Preflight {
        preflight: Box<super::evidence::Preflight>,
    },
    /// A signal stopped the run.
    Interrupted { signal: String, at: String },
    /// The node list of a node-set run.
    NodeList { hosts: Vec<String> },
    /// A node set's step starts; its rows go to its own journal (`set.journal`), which readers
    /// fold in here: concurrent sets on other nodes never append to one shared file.
    SetStarted { set: Box<super::SetRun> },
    /// A node set's step ended.
    SetEnded {
        test: String,
        round: u32,
        index: u32,
        ended: String,
        #[serde(default)]
        dead: Vec<String>,
        seconds: f64,
        /// The launcher refused the step (see [`super::SetRun::refused`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refused: Option<String>,
        /// What the launcher said of a node (see [`super::SetRun::launcher`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        launcher: Option<String>,
    },
}

/// The longest a written record waits for `fdatasync`. Syncing every row would cost a disk
/// round trip per row (milliseconds, against microseconds for a small collective).
const SYNC_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The journal of one run, open for appending.
pub struct Journal {
    file: std::fs::File,
    path: std::path::PathBuf,
    synced: std::time::Instant,
}

impl Journal {
    /// Starts a journal at `path` whose first record is `base`, replacing any journal there
    /// atomically (its content must already be folded into `base`).
    pub fn create(path: &Path, base: &Results) -> Result<Journal, ResultsError> {
        let mut line = line_of(&Record::Base {
            results: Box::new(base.clone()),
        })
        .map_err(|e| write_err(path, e))?;
        line.push(b'\n');
        crate::output::write_atomic(path, &line).map_err(ResultsError::from)?;
        Journal::open(path)
    }

    /// Opens an existing journal for appending. A line cut short by a crash is closed first, so
    /// the next record starts on its own line.
    pub fn open(path: &Path) -> Result<Journal, ResultsError> {
        let mut file = crate::output::open_append(path).map_err(ResultsError::from)?;
        let len = file.metadata().map_err(|e| write_err(path, e))?.len();
        if len > 0 {
            let mut last = [0u8; 1];
            let mut r = std::fs::File::open(path).map_err(|e| write_err(path, e))?;
            r.seek(std::io::SeekFrom::Start(len - 1))
                .and_then(|_| r.read_exact(&mut last))
                .map_err(|e| write_err(path, e))?;
            if last[0] != b'\n' {
                file.write_all(b"\n").map_err(|e| write_err(path, e))?;
            }
        }
        Ok(Journal {
            file,
            path: path.to_path_buf(),
            synced: std::time::Instant::now(),
        })
    }

    /// Appends `record` in one write; flushes to disk when the last flush is a second old, and
    /// always for records that end something (a job, a run).
    pub fn append(&mut self, record: &Record) -> Result<(), ResultsError> {
        let mut line = line_of(record).map_err(|e| write_err(&self.path, e))?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .map_err(|e| write_err(&self.path, e))?;
        let ends = !matches!(record, Record::Row { .. } | Record::Repeat { .. });
        if ends || self.synced.elapsed() >= SYNC_EVERY {
            self.file
                .sync_data()
                .map_err(|e| write_err(&self.path, e))?;
            self.synced = std::time::Instant::now();
            self.still_in_place()?;
        }
        Ok(())
    }

    /// Refuses to go on once the journal is no longer the file at its path: unlinked (`rm -rf`
    /// of the output directory) or replaced. Appends would still succeed, into a file no one
    /// can read: a `repeat: 10h` soak would measure for ten hours and keep nothing.
    fn still_in_place(&self) -> Result<(), ResultsError> {
        use std::os::unix::fs::MetadataExt;
        let open = self.file.metadata().map_err(|e| write_err(&self.path, e))?;
        let here = std::fs::symlink_metadata(&self.path).ok();
        let same = here.is_some_and(|h| h.dev() == open.dev() && h.ino() == open.ino());
        if open.nlink() > 0 && same {
            return Ok(());
        }
        Err(write_err(
            &self.path,
            std::io::Error::other(
                "the journal was deleted or replaced during the run (was its output directory \
                 removed?); what is measured now could not be kept, so the run stops",
            ),
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes written so far: where the records of whatever runs next begin.
    pub fn len(&self) -> Result<u64, ResultsError> {
        Ok(self
            .file
            .metadata()
            .map_err(|e| write_err(&self.path, e))?
            .len())
    }

    pub fn is_empty(&self) -> Result<bool, ResultsError> {
        Ok(self.len()? == 0)
    }
}

fn line_of(record: &Record) -> std::io::Result<Vec<u8>> {
    serde_json::to_vec(record).map_err(std::io::Error::other)
}

fn write_err(path: &Path, source: std::io::Error) -> ResultsError {
    ResultsError::Write {
        path: path.display().to_string(),
        source,
    }
}

/// The records of the journal at `path` from byte `from` on. A last line cut short by a crash is
/// skipped; a damaged line elsewhere is skipped and counted, never fatal: the rows around it are
/// still measurements.
pub fn records(path: &Path, from: u64) -> Result<(Vec<Record>, usize), ResultsError> {
    let name = path.display().to_string();
    let rerr = |source| ResultsError::Read {
        path: name.clone(),
        source,
    };
    let mut f = crate::input::open_regular(path, "journal").map_err(|e| rerr(e.into_io()))?;
    f.seek(std::io::SeekFrom::Start(from)).map_err(rerr)?;
    let mut reader = BufReader::new(f.take(MAX_BYTES));
    let mut out = Vec::new();
    let mut damaged = 0;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = (&mut reader)
            .take(MAX_LINE)
            .read_until(b'\n', &mut buf)
            .map_err(rerr)?;
        if n == 0 {
            break;
        }
        let complete = buf.last() == Some(&b'\n');
        match serde_json::from_slice::<Record>(&buf) {
            Ok(r) if complete => out.push(r),
            _ if !complete => {
                // The last line of a journal whose writer died mid-line, or a line over the
                // bound: either way not a record.
                damaged += usize::from(n as u64 >= MAX_LINE);
                if n as u64 >= MAX_LINE {
                    skip_line(&mut reader).map_err(rerr)?;
                }
            }
            _ => damaged += 1,
        }
    }
    Ok((out, damaged))
}

fn skip_line(r: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let (done, used) = {
            let buf = r.fill_buf()?;
            if buf.is_empty() {
                return Ok(());
            }
            match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (true, i + 1),
                None => (false, buf.len()),
            }
        };
        r.consume(used);
        if done {
            return Ok(());
        }
    }
}

/// The results the journal at `path` holds: its base with every later record applied.
pub fn rebuild(path: &Path) -> Result<Results, ResultsError> {
    rebuild_counted(path).map(|r| r.results)
}

/// What a journal folds into, and how many of its lines were damaged and skipped (a line cut
/// short by a crash): the reader says so, the journal does not.
pub struct Rebuilt {
    pub results: Results,
    pub damaged: usize,
}

/// [`rebuild`], counting the damaged lines it skipped.
pub fn rebuild_counted(path: &Path) -> Result<Rebuilt, ResultsError> {
    let (recs, damaged) = records(path, 0)?;
    let mut it = recs.into_iter();
    let mut results = match it.next() {
        Some(Record::Base { results }) => *results,
        _ => {
            return Err(ResultsError::Parse {
                path: path.display().to_string(),
                line: 1,
                column: 1,
                message: "a baton journal starts with its base record".into(),
            });
        }
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut damaged = damaged;
    for r in it {
        let set_journal = match &r {
            Record::SetStarted { set } => Some(set.journal.clone()),
            _ => None,
        };
        apply(&mut results, r);
        if let Some(rel) = set_journal {
            damaged += fold_set(&mut results, dir, &rel)?;
        }
    }
    Ok(Rebuilt { results, damaged })
}

/// Applies the records of a node set's journal (`rel`, under `dir`): everything but its base
/// (which only names the plan) and any set records (a set's journal has none of its own). A set
/// whose step never started its journal has nothing to add.
fn fold_set(results: &mut Results, dir: &Path, rel: &str) -> Result<usize, ResultsError> {
    if rel.is_empty() {
        return Ok(0);
    }
    let inside = Path::new(rel)
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !inside {
        return Err(ResultsError::Parse {
            path: dir.display().to_string(),
            line: 1,
            column: 1,
            message: format!("a node set's journal must lie inside the run's directory: {rel}"),
        });
    }
    let path = dir.join(rel);
    if !path.exists() {
        return Ok(0);
    }
    let (recs, damaged) = records(&path, 0)?;
    for r in recs {
        match r {
            Record::Base { .. }
            | Record::NodeList { .. }
            | Record::SetStarted { .. }
            | Record::SetEnded { .. } => {}
            other => apply(results, other),
        }
    }
    Ok(damaged)
}

/// How each job the records start stands after them: its status at its last `Job` or `End`
/// record. What a runner reads back after a worker or a node set's step ended.
pub fn statuses(records: Vec<Record>) -> std::collections::HashMap<String, JobStatus> {
    let mut out = std::collections::HashMap::new();
    for r in records {
        match r {
            Record::Job { job } => {
                out.insert(job.id, job.status);
            }
            Record::End { job, status, .. } => {
                out.insert(job, status);
            }
            _ => {}
        }
    }
    out
}

/// Applies one record to `results`, as the writer applied it to its own copy.
pub fn apply(results: &mut Results, record: Record) {
    let job = |results: &mut Results, id: &str| results.jobs.iter().rposition(|j| j.id == id);
    match record {
        Record::Base { results: base } => *results = *base,
        Record::Job { job } => {
            results.jobs.retain(|j| j.id != job.id);
            results.jobs.push(*job);
        }
        Record::Repeat {
            job: id,
            index,
            started,
        } => {
            if let Some(i) = job(results, &id) {
                results.jobs[i].repeats.push(super::Repeat {
                    index,
                    started,
                    rows: Vec::new(),
                });
            }
        }
        Record::Row { job: id, row } => {
            if let Some(i) = job(results, &id)
                && let Some(rep) = results.jobs[i].repeats.last_mut()
            {
                rep.rows.push(*row);
            }
        }
        Record::End {
            job: id,
            status,
            errors,
            telemetry,
        } => {
            if let Some(i) = job(results, &id) {
                let j = &mut results.jobs[i];
                j.status = status;
                j.errors.extend(errors);
                j.telemetry.extend(telemetry);
            }
        }
        Record::Environment { environment } => {
            super::merge_environment(&mut results.environment, *environment)
        }
        Record::MeasuredWith {
            job: id,
            measured_with,
        } => {
            if let Some(i) = job(results, &id) {
                results.jobs[i].measured_with = Some(*measured_with);
            }
        }
        Record::Transports { job: id, links } => {
            if let Some(i) = job(results, &id) {
                results.jobs[i].transports = links;
            }
        }
        Record::Evidence { job: id, nodes } => {
            if let Some(i) = job(results, &id) {
                super::evidence::merge(&mut results.jobs[i].evidence, nodes);
            }
        }
        Record::NcclLines {
            job: id,
            host,
            lines,
        } => {
            if let Some(i) = job(results, &id) {
                super::evidence::add_nccl(&mut results.jobs[i].evidence, &host, lines);
            }
        }
        Record::Interrupted { signal, at } => {
            results.interrupted = Some(format!("{signal} at {at}"));
        }
        Record::NodeList { hosts } => results.node_list = hosts,
        Record::Preflight { preflight } => results.preflight = Some(*preflight),
        Record::SetStarted { set } => {
            results
                .node_sets
                .retain(|s| (&s.test, s.round, s.index) != (&set.test, set.round, set.index));
            results.node_sets.push(*set);
        }
        Record::SetEnded {
            test,
            round,
            index,
            ended,
            dead,
            seconds,
            refused,
            launcher,
        } => {
            if let Some(s) = results
                .node_sets
                .iter_mut()
                .find(|s| s.test == test && s.round == round && s.index == index)
            {
                s.ended = Some(ended);
                s.dead = dead;
                s.seconds = Some(seconds);
                s.refused = refused;
                s.launcher = launcher;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Producer, Results};

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("baton-journal-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d.join(FILE)
    }

    const SKELETON: &str = r#"{"id":"x","test":"x","backend":"mpi","collective":"all_reduce",
        "dtype":"float","op":"sum","root":null,"split":null,
        "settings":{"iters":1,"warmup":0,"agg_iters":1,"cuda_graph":0,"check":true,"average":"avg","in_place":"both"},
        "layout":{"nranks":2,"nodes":1,"processes":2,"gpus_per_process":1},"status":"partial"}"#;

    fn row(n: u64) -> Row {
        Row {
            requested: n,
            size: n,
            count: n / 4,
            out_of_place: None,
            in_place: None,
        }
    }

    #[test]
    fn a_journal_deleted_or_replaced_under_the_run_stops_it() {
        for replace in [false, true] {
            let p = scratch(&format!("gone-{replace}"));
            let mut j = Journal::create(&p, &Results::new(Producer::baton("run"))).unwrap();
            let end = || Record::Interrupted {
                signal: "x".into(),
                at: "now".into(),
            };
            j.append(&end()).unwrap();
            std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
            if replace {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, "").unwrap();
            }
            let e = j.append(&end()).unwrap_err().to_string();
            assert!(e.contains(FILE) && e.contains("deleted or replaced"), "{e}");
        }
    }

    #[test]
    fn a_line_cut_short_is_skipped_and_the_next_record_starts_clean() {
        let p = scratch("cut");
        let mut j = Journal::create(&p, &Results::new(Producer::baton("run"))).unwrap();
        let mut job: JobResult = serde_json::from_str(SKELETON).unwrap();
        job.id = "a".into();
        j.append(&Record::Job { job: Box::new(job) }).unwrap();
        j.append(&Record::Repeat {
            job: "a".into(),
            index: 0,
            started: None,
        })
        .unwrap();
        j.append(&Record::Row {
            job: "a".into(),
            row: Box::new(row(8)),
        })
        .unwrap();
        drop(j);
        // A writer killed in the middle of its next line.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"{\"record\":\"row\",\"job\":\"a\",\"ro")
            .unwrap();
        let r = rebuild(&p).unwrap();
        assert_eq!(r.jobs[0].repeats[0].rows.len(), 1);
        let mut j = Journal::open(&p).unwrap();
        j.append(&Record::Row {
            job: "a".into(),
            row: Box::new(row(16)),
        })
        .unwrap();
        let r = rebuild(&p).unwrap();
        let rows: Vec<u64> = r.jobs[0].repeats[0].rows.iter().map(|r| r.size).collect();
        assert_eq!(rows, [8, 16]);
    }

    #[test]
    fn a_journal_without_its_base_is_not_results() {
        let p = scratch("nobase");
        std::fs::write(&p, "{\"record\":\"row\",\"job\":\"a\",\"row\":{}}\n").unwrap();
        assert!(rebuild(&p).is_err());
    }
}
