//! NCCL's own lines in a job's output become that job's node evidence: a worker's output, which
//! passes through the parent line by line ([`Listener`], every line still passed on to the
//! user), and a node set's step log, read back after the step ([`from_log`]). The lines
//! `ras::diag` keeps are placed on the job and node that printed them (`ras::placed`) and
//! journaled (`Record::NcclLines`); grading cites them like a kernel log line. The runner only
//! records them: nothing here fails a job.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use super::events::{Events, RunEvent};
use super::job_marks;
use crate::ras::diag;
use crate::ras::placed::{self, Heard, Span, Started};
use crate::results::ResultsError;
use crate::results::evidence::NcclLines;
use crate::results::journal::{Journal, Record};

/// Most of NCCL's lines kept from one worker's output or one step log; the rest are counted.
const OUTPUT_LIMIT: usize = 1024;

/// The most bytes of a step log read back: its end, where a failing set's lines are.
const LOG_TAIL_BYTES: u64 = 8 << 20;

/// Passes every event on to `inner` but the worker's job marks, and keeps the NCCL lines among
/// a worker's output lines, each with when it was heard and the job its process had marked on
/// that stream (stdout and stderr are two pipes: only each one's own order holds).
pub struct Listener<'a> {
    inner: &'a dyn Events,
    heard: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    heard: Vec<Heard>,
    dropped: u64,
    marks: Marks<(bool, u32)>,
}

/// The jobs processes marked as they started them, as an output is read in order; `K` names
/// where a process's lines keep their order with its marks (a stream of a process, or a log's
/// process).
struct Marks<K> {
    /// The job each `K` last marked.
    last: HashMap<K, String>,
    /// The heard lines (by index) that came before any mark of their `K`: before its process's
    /// first job if that process marks later, else a process that never marks.
    unmarked: Vec<(usize, K)>,
}

impl<K> Default for Marks<K> {
    fn default() -> Self {
        Marks {
            last: HashMap::new(),
            unmarked: Vec::new(),
        }
    }
}

impl<K: std::hash::Hash + Eq + Copy> Marks<K> {
    fn mark(&mut self, key: K, job: &str) {
        self.last.insert(key, job.to_string());
    }

    /// What the marks say of the `index`th heard line, of `key` (`None`: it names no process).
    fn started(&mut self, index: usize, key: Option<K>) -> Started {
        let Some(key) = key else {
            return Started::Unknown;
        };
        match self.last.get(&key) {
            Some(job) => Started::Job(job.clone()),
            None => {
                self.unmarked.push((index, key));
                Started::Unknown
            }
        }
    }

    /// Once the whole output is read: a line before its process's first mark was printed
    /// before that process's first job.
    fn settle(self, heard: &mut [Heard]) {
        for (i, key) in self.unmarked {
            if self.last.contains_key(&key) {
                heard[i].started = Started::NotYet;
            }
        }
    }
}

impl<'a> Listener<'a> {
    pub fn new(inner: &'a dyn Events) -> Listener<'a> {
        Listener {
            inner,
            heard: Mutex::new(Kept::default()),
        }
    }

    /// What was heard, and how many more lines were not kept.
    pub fn heard(self) -> (Vec<Heard>, u64) {
        let mut k = self.heard.into_inner().unwrap_or_else(|p| p.into_inner());
        k.marks.settle(&mut k.heard);
        (k.heard, k.dropped)
    }
}

impl Events for Listener<'_> {
    fn event(&self, e: &RunEvent<'_>) {
        let RunEvent::WorkerLine { line, stderr } = e else {
            return self.inner.event(e);
        };
        let lock = || self.heard.lock().unwrap_or_else(|p| p.into_inner());
        // Each stream has its own reader thread: a stream's marks and lines keep their order.
        if let Some((pid, job)) = job_marks::parse(line) {
            lock().marks.mark((*stderr, pid), job);
            return;
        }
        self.inner.event(e);
        let now = now_ms();
        let Some(finding) = diag::line(line, now) else {
            return;
        };
        let mut k = lock();
        if k.heard.len() >= OUTPUT_LIMIT {
            k.dropped += 1;
            return;
        }
        let i = k.heard.len();
        let started = k.marks.started(i, finding.pid.map(|pid| (*stderr, pid)));
        k.heard.push(Heard {
            at_unix_ms: Some(now),
            finding,
            started,
        });
    }
}

/// The NCCL lines of a step log (its last [`LOG_TAIL_BYTES`]), dated by their own stamps where
/// they have one (an undated line is dated now, when the log was read), each with the job its
/// process had marked before it in the log. The log holds both streams of every rank as the
/// launcher wrote them: NCCL writes to stdout, where its lines keep their order with the marks.
/// A process that marks nothing in the log (a transport capture's file) has its lines placed
/// by their stamps.
pub fn from_log(path: &Path) -> (Vec<Heard>, u64) {
    let seen_unix_ms = now_ms();
    let text = crate::input::read_tail(path, LOG_TAIL_BYTES, "step log");
    let mut marks = Marks::default();
    let mut heard = Vec::new();
    let mut dropped = 0;
    for l in text.lines() {
        if let Some((pid, job)) = job_marks::parse(l) {
            marks.mark(pid, job);
            continue;
        }
        let Some(finding) = diag::line(l, seen_unix_ms) else {
            continue;
        };
        if heard.len() >= OUTPUT_LIMIT {
            dropped += 1;
            continue;
        }
        let started = marks.started(heard.len(), finding.pid);
        let at = finding.stamped.then_some(finding.event.at_unix_ms);
        heard.push(Heard {
            at_unix_ms: at,
            finding,
            started,
        });
    }
    marks.settle(&mut heard);
    (heard, dropped)
}

/// The NCCL lines of several logs (the per-process files of a transport capture, where NCCL
/// writes its WARN lines instead of its output), as [`from_log`] reads each.
pub fn from_logs(paths: &[std::path::PathBuf]) -> (Vec<Heard>, u64) {
    let mut all = (Vec::new(), 0);
    for p in paths {
        let (h, dropped) = from_log(p);
        all.0.extend(h);
        all.1 += dropped;
    }
    all
}

/// Journals `heard` on the jobs `records` started (a worker's or a step's records, in order),
/// which ran on `hosts` (the names the run gives its nodes: this machine's, or the set's).
pub fn record(
    journal: &mut Journal,
    records: &[Record],
    (heard, dropped): (Vec<Heard>, u64),
    hosts: &[String],
) -> Result<(), ResultsError> {
    if heard.is_empty() && dropped == 0 {
        return Ok(());
    }
    let spans = spans(records, hosts);
    for n in placed::place(&heard, &spans, dropped) {
        journal.append(&Record::NcclLines {
            job: spans[n.job].job.clone(),
            host: n.host,
            lines: NcclLines {
                events: n.events,
                left_out: n.left_out,
            },
        })?;
    }
    Ok(())
}

/// The jobs `records` started, in order, each with its start (its earliest before-snapshot,
/// else its first repeat's start) and `hosts`.
fn spans(records: &[Record], hosts: &[String]) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    let at = |spans: &[Span], id: &str| spans.iter().position(|s| s.job == id);
    for r in records {
        match r {
            Record::Job { job } if at(&spans, &job.id).is_none() => {
                spans.push(Span {
                    job: job.id.clone(),
                    start_unix_ms: None,
                    hosts: hosts.to_vec(),
                });
            }
            Record::Evidence { job, nodes } => {
                let Some(i) = at(&spans, job) else {
                    continue;
                };
                for e in nodes {
                    if let Some(b) = &e.before {
                        let s = spans[i].start_unix_ms.get_or_insert(b.taken_unix_ms);
                        *s = (*s).min(b.taken_unix_ms);
                    }
                }
            }
            Record::Repeat {
                job,
                started: Some(t),
                ..
            } => {
                let Some(i) = at(&spans, job) else {
                    continue;
                };
                if spans[i].start_unix_ms.is_none() {
                    spans[i].start_unix_ms = rfc3339_ms(t);
                }
            }
            _ => {}
        }
    }
    spans
}

fn rfc3339_ms(t: &str) -> Option<u64> {
    let t = humantime::parse_rfc3339_weak(t).ok()?;
    Some(t.duration_since(UNIX_EPOCH).ok()?.as_millis() as u64)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::evidence::NodeEvidence;
    use crate::results::{JobResult, Producer, Results};

    const SKELETON: &str = r#"{"id":"x","test":"x","backend":"mpi","collective":"all_reduce",
        "dtype":"float","op":"sum","root":null,"split":null,
        "settings":{"iters":1,"warmup":0,"agg_iters":1,"cuda_graph":0,"check":true,"average":"avg","in_place":"both"},
        "layout":{"nranks":2,"nodes":1,"processes":2,"gpus_per_process":1},"status":"partial"}"#;

    fn started(id: &str, at: &str) -> [Record; 2] {
        let mut job: JobResult = serde_json::from_str(SKELETON).unwrap();
        job.id = id.into();
        [
            Record::Job { job: Box::new(job) },
            Record::Repeat {
                job: id.into(),
                index: 0,
                started: Some(at.into()),
            },
        ]
    }

    /// A journal in a fresh directory named `name` holding two started jobs, `a` and `b`, at
    /// `at` (RFC 3339), and the records appended.
    fn two_jobs(name: &str, at: [&str; 2]) -> (std::path::PathBuf, Journal, Vec<Record>) {
        let d = std::env::temp_dir().join(format!("baton-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let mut j = Journal::create(
            &d.join("journal.jsonl"),
            &Results::new(Producer::baton("run")),
        )
        .unwrap();
        let mut records = Vec::new();
        records.extend(started("a", at[0]));
        records.extend(started("b", at[1]));
        for r in &records {
            j.append(r).unwrap();
        }
        (d, j, records)
    }

    fn heard(line: &str, at: u64) -> Heard {
        Heard {
            at_unix_ms: Some(at),
            finding: diag::line(line, at).unwrap(),
            started: Started::Unknown,
        }
    }

    /// The worker lines an `Events` was handed.
    #[derive(Default)]
    struct Passed(Mutex<Vec<String>>);

    impl Events for Passed {
        fn event(&self, e: &RunEvent<'_>) {
            if let RunEvent::WorkerLine { line, .. } = e {
                self.0.lock().unwrap().push(line.to_string());
            }
        }
    }

    fn mark(pid: u32, job: &str) -> String {
        job_marks::line(0, job).replace(&std::process::id().to_string(), &pid.to_string())
    }

    #[test]
    fn a_line_heard_late_goes_to_the_job_its_process_marked_on_its_stream() {
        let passed = Passed::default();
        let listener = Listener::new(&passed);
        let said = |line: &str, stderr| listener.event(&RunEvent::WorkerLine { line, stderr });
        said("me:7:7 [0] NCCL WARN at init", false);
        said(&mark(7, "a"), false);
        said(&mark(7, "a"), true);
        said("me:7:7 [0] NCCL WARN in a", true);
        said(&mark(7, "b"), false);
        said("me:7:7 [0] NCCL WARN in b", false);
        said("me:8:8 [0] NCCL WARN a process that never marks", false);
        said("[0] NCCL WARN no process named", false);
        said("me:9:9 [0] NCCL WARN before its first mark", true);
        said(&mark(9, "b"), true);
        let (heard, _) = listener.heard();
        let marked: Vec<&Started> = heard.iter().map(|h| &h.started).collect();
        assert_eq!(
            marked,
            [
                &Started::NotYet,
                &Started::Job("a".into()),
                &Started::Job("b".into()),
                &Started::Unknown,
                &Started::Unknown,
                &Started::NotYet,
            ]
        );
        let passed = passed.0.into_inner().unwrap();
        assert_eq!(passed.len(), 6, "the marks are not passed on: {passed:?}");
        assert!(passed.iter().all(|l| job_marks::parse(l).is_none()));

        // Both jobs had started when every line was heard: the marks place them.
        let (d, mut j, records) = two_jobs(
            "nccl-marks",
            ["2026-11-30T21:04:00Z", "2026-11-30T21:04:01Z"],
        );
        let path = d.join("journal.jsonl");
        let late: Vec<Heard> = heard.into_iter().take(3).collect();
        record(&mut j, &records, (late, 0), &["me".to_string()]).unwrap();
        let r = crate::results::journal::rebuild(&path).unwrap();
        let count = |k: usize| r.jobs[k].evidence.iter().flat_map(|e| e.moved()).count();
        assert_eq!((count(0), count(1)), (2, 1));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn lines_heard_join_the_job_then_running_on_the_node_and_survive_its_evidence() {
        let (d, mut j, records) = two_jobs(
            "nccl-lines",
            ["2026-11-30T21:04:00Z", "2026-11-30T21:04:10Z"],
        );
        let path = d.join("journal.jsonl");
        // 2026-11-30 21:04:05 and 21:04:12 UTC.
        let (t5, t12) = (1_796_072_645_000, 1_796_072_652_000);
        let lines = vec![
            heard("me:1:1 [0] NCCL WARN NET/Socket : peer closed", t5),
            heard(
                "[2026-11-30 21:04:12] me:1:1 [0] enqueue.cc:9 NCCL WARN bad",
                t12,
            ),
        ];
        record(&mut j, &records, (lines, 2), &["me".to_string()]).unwrap();
        // The job's end evidence arrives after its lines: they stay.
        j.append(&Record::Evidence {
            job: "b".into(),
            nodes: vec![NodeEvidence::empty("me")],
        })
        .unwrap();
        let r = crate::results::journal::rebuild(&path).unwrap();
        let whats = |k: usize| -> Vec<String> {
            r.jobs[k].evidence[0]
                .changes()
                .iter()
                .map(|c| c.line())
                .collect()
        };
        assert_eq!(whats(0), ["NCCL WARN NET/Socket : peer closed at 21:04:05"]);
        assert_eq!(whats(1), ["NCCL WARN bad at 21:04:12"]);
        let b = r.jobs[1].evidence[0].nccl.as_ref().unwrap();
        assert_eq!(b.left_out, 2, "the lines past the bound, on the last job");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_step_log_keeps_its_stamps_and_nothing_but_ncclls_lines() {
        let d = std::env::temp_dir().join(format!("baton-nccl-log-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let log = d.join("step.log");
        std::fs::write(
            &log,
            "# nccl-tests table\n[2026-11-30 21:04:05] n1:1:1 [0] NCCL WARN x\nn2:2:2 [0] NCCL WARN y\n\
             n2:2:2 [0] NCCL INFO z\n",
        )
        .unwrap();
        let (h, dropped) = from_log(&log);
        assert_eq!(dropped, 0);
        let at: Vec<Option<u64>> = h.iter().map(|h| h.at_unix_ms).collect();
        assert_eq!(at, [Some(1_796_072_645_000), None]);
        assert_eq!(from_log(&d.join("absent")).0, []);
        let both = from_logs(&[log.clone(), d.join("absent"), log]);
        assert_eq!(both.0.len(), 4);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_step_logs_marks_place_their_processs_lines_and_no_other() {
        let d = std::env::temp_dir().join(format!("baton-nccl-log-marks-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let log = d.join("step.log");
        let text = [
            "n1:7:7 [0] NCCL WARN at init".to_string(),
            mark(7, "a"),
            "n1:7:7 [0] NCCL WARN in a".into(),
            mark(7, "b"),
            "n1:7:7 [0] NCCL WARN in b".into(),
            "n2:9:9 [0] NCCL WARN a process that marks nothing".into(),
        ]
        .join("\n");
        std::fs::write(&log, text).unwrap();
        let started: Vec<Started> = from_log(&log).0.into_iter().map(|h| h.started).collect();
        assert_eq!(
            started,
            [
                Started::NotYet,
                Started::Job("a".into()),
                Started::Job("b".into()),
                Started::Unknown
            ]
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
