//! NCCL's own lines in a job's output become that job's node evidence: a worker's output, which
//! passes through the parent line by line ([`Listener`], every line still passed on to the
//! user), and a node set's step log, read back after the step ([`from_log`]). The lines
//! `ras::diag` keeps are placed on the job and node that printed them (`ras::placed`) and
//! journaled (`Record::NcclLines`); grading cites them like a kernel log line. The runner only
//! records them: nothing here fails a job.

use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use super::events::{Events, RunEvent};
use crate::ras::diag;
use crate::ras::placed::{self, Heard, Span};
use crate::results::ResultsError;
use crate::results::evidence::NcclLines;
use crate::results::journal::{Journal, Record};

/// Most of NCCL's lines kept from one worker's output or one step log; the rest are counted.
const OUTPUT_LIMIT: usize = 1024;

/// The most bytes of a step log read back: its end, where a failing set's lines are.
const LOG_TAIL_BYTES: u64 = 8 << 20;

/// Passes every event on to `inner`, and keeps the NCCL lines among a worker's output lines,
/// each with when it was heard.
pub struct Listener<'a> {
    inner: &'a dyn Events,
    heard: Mutex<(Vec<Heard>, u64)>,
}

impl<'a> Listener<'a> {
    pub fn new(inner: &'a dyn Events) -> Listener<'a> {
        Listener {
            inner,
            heard: Mutex::new((Vec::new(), 0)),
        }
    }

    /// What was heard, and how many more lines were not kept.
    pub fn heard(self) -> (Vec<Heard>, u64) {
        self.heard.into_inner().unwrap_or_else(|p| p.into_inner())
    }
}

impl Events for Listener<'_> {
    fn event(&self, e: &RunEvent<'_>) {
        self.inner.event(e);
        if let RunEvent::WorkerLine { line, .. } = e {
            let now = now_ms();
            if let Some(finding) = diag::line(line, now) {
                let mut h = self.heard.lock().unwrap_or_else(|p| p.into_inner());
                if h.0.len() < OUTPUT_LIMIT {
                    h.0.push(Heard {
                        at_unix_ms: Some(now),
                        finding,
                    });
                } else {
                    h.1 += 1;
                }
            }
        }
    }
}

/// The NCCL lines of a step log (its last [`LOG_TAIL_BYTES`]), dated by their own stamps where
/// they have one; an undated line is dated now (when the log was read).
pub fn from_log(path: &Path) -> (Vec<Heard>, u64) {
    let seen_unix_ms = now_ms();
    let text = crate::input::read_tail(path, LOG_TAIL_BYTES, "step log");
    let mut heard = Vec::new();
    let mut dropped = 0;
    for finding in text.lines().filter_map(|l| diag::line(l, seen_unix_ms)) {
        if heard.len() < OUTPUT_LIMIT {
            let at = finding.stamped.then_some(finding.event.at_unix_ms);
            heard.push(Heard {
                at_unix_ms: at,
                finding,
            });
        } else {
            dropped += 1;
        }
    }
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
    let (ids, spans) = spans(records, hosts);
    for n in placed::place(&heard, &spans, dropped) {
        journal.append(&Record::NcclLines {
            job: ids[n.job].clone(),
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
fn spans(records: &[Record], hosts: &[String]) -> (Vec<String>, Vec<Span>) {
    let mut ids: Vec<String> = Vec::new();
    let mut spans: Vec<Span> = Vec::new();
    for r in records {
        match r {
            Record::Job { job } if !ids.contains(&job.id) => {
                ids.push(job.id.clone());
                spans.push(Span {
                    start_unix_ms: None,
                    hosts: hosts.to_vec(),
                });
            }
            Record::Evidence { job, nodes } => {
                let Some(i) = ids.iter().position(|x| x == job) else {
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
                let Some(i) = ids.iter().position(|x| x == job) else {
                    continue;
                };
                if spans[i].start_unix_ms.is_none() {
                    spans[i].start_unix_ms = rfc3339_ms(t);
                }
            }
            _ => {}
        }
    }
    (ids, spans)
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

    fn heard(line: &str, at: u64) -> Heard {
        Heard {
            at_unix_ms: Some(at),
            finding: diag::line(line, at).unwrap(),
        }
    }

    #[test]
    fn lines_heard_join_the_job_then_running_on_the_node_and_survive_its_evidence() {
        let d = std::env::temp_dir().join(format!("baton-nccl-lines-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let path = d.join("journal.jsonl");
        let mut j = Journal::create(&path, &Results::new(Producer::baton("run"))).unwrap();
        let mut records = Vec::new();
        records.extend(started("a", "2026-11-30T21:04:00Z"));
        records.extend(started("b", "2026-11-30T21:04:10Z"));
        for r in &records {
            j.append(r).unwrap();
        }
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
}
