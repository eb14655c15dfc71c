//! What a node-set run tells whoever shows it. The runner never prints (only the CLI's UI does):
//! it hands these events to [`Progress::node_sets`](super::progress::Progress::node_sets).
//! A round is shown as it goes ("round 3 of 7, 2 sets running, ETA 40 s"), a set that failed
//! in full, sets that completed only counted: 499,500 pairs make 999 round lines, not half a
//! million.

use std::path::Path;
use std::time::Duration;

/// Where one round of a test stands.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundStatus<'a> {
    pub test: &'a str,
    pub round: u32,
    /// Rounds of the test's schedule; `None` for `isolate`, which picks each from the last.
    pub of: Option<u32>,
    /// Sets of the round.
    pub sets: usize,
    /// Steps still running.
    pub running: usize,
    /// Steps that ended with every job complete.
    pub completed: usize,
    /// Steps that failed, hung, lost a node or were refused.
    pub failed: usize,
    /// Sets not run because a node of theirs was proven dead earlier.
    pub skipped: usize,
    /// `isolate` only: how many of the round's sets met the test's criteria.
    pub passed: Option<usize>,
    /// Since the round started.
    pub elapsed: Duration,
    /// The rest of the test's schedule at the pace of its rounds so far.
    pub eta: Option<Duration>,
}

/// One event of a node-set run.
#[derive(Debug, Clone, PartialEq)]
pub enum SetEvent<'a> {
    /// The run starts over these nodes.
    Start { hosts: &'a [String] },
    /// The output directory held an earlier run's results, now kept as `kept`.
    KeptAside { results: &'a Path, kept: &'a Path },
    /// A round is under way (sent as it starts and as each of its sets ends).
    Round(RoundStatus<'a>),
    /// A round ended.
    RoundEnd(RoundStatus<'a>),
    /// A set that did not complete: how its step ended, the nodes found dead after it, the
    /// launcher's own words, and where its output is.
    SetFailed {
        test: &'a str,
        round: u32,
        hosts: &'a [String],
        ended: &'a str,
        seconds: f64,
        dead: &'a [String],
        launcher: Option<&'a str>,
        log: &'a str,
    },
    /// The launcher refused a step: the run stops, no node blamed.
    Refused { message: &'a str, fix: &'a str },
}

fn secs(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{:.1} s", d.as_secs_f64()),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

impl RoundStatus<'_> {
    /// "pairs: round 3 of 7, 2 sets running, 2 completed, ETA 40 s".
    pub fn line(&self, ended: bool) -> String {
        let of = self.of.map_or(String::new(), |n| format!(" of {n}"));
        let mut parts = Vec::new();
        if !ended && self.running > 0 {
            parts.push(format!("{} set(s) running", self.running));
        }
        match self.passed {
            Some(p) if ended => parts.push(format!("{p} of {} set(s) passed", self.sets)),
            _ => parts.push(format!("{} set(s) completed", self.completed)),
        }
        if self.failed > 0 {
            parts.push(format!("{} failed", self.failed));
        }
        if self.skipped > 0 {
            parts.push(format!("{} not run (dead node)", self.skipped));
        }
        let mut s = format!(
            "{}: round {}{of}: {} ({})",
            self.test,
            self.round,
            parts.join(", "),
            secs(self.elapsed)
        );
        if let Some(eta) = self.eta.filter(|_| self.of != Some(self.round) || !ended) {
            s.push_str(&format!(", ETA {}", secs(eta)));
        }
        s
    }
}

impl SetEvent<'_> {
    /// The event as one line for a log (without the `baton: ` prefix).
    pub fn line(&self) -> String {
        use crate::nodeset::compress;
        match self {
            SetEvent::Start { hosts } => {
                format!(
                    "node sets over {} node(s): {}",
                    hosts.len(),
                    compress(hosts)
                )
            }
            SetEvent::KeptAside { results, kept } => format!(
                "{} held results of an earlier run; kept them as {} (use --resume to continue a run instead)",
                results.display(),
                kept.display()
            ),
            SetEvent::Round(r) => r.line(false),
            SetEvent::RoundEnd(r) => r.line(true),
            SetEvent::SetFailed {
                test,
                round,
                hosts,
                ended,
                seconds,
                dead,
                launcher,
                log,
            } => {
                let mut s = format!(
                    "{test} round {round} {}: FAILED: {ended} ({seconds:.1} s)",
                    compress(hosts)
                );
                if !dead.is_empty() {
                    s.push_str(&format!("; dead: {}", compress(dead)));
                }
                if let Some(l) = launcher {
                    s.push_str(&format!("; the launcher said: {l}"));
                }
                if !log.is_empty() {
                    s.push_str(&format!("; output: {log}"));
                }
                s
            }
            SetEvent::Refused { message, fix } => format!(
                "the launcher refused a node set's step, so the run stops and no node is \
                 blamed: {message}\nbaton: fix: {fix}"
            ),
        }
    }
}

/// The rest of a schedule of `of` rounds after `done` of them took `spent`.
pub fn eta(spent: Duration, done: u32, of: Option<u32>) -> Option<Duration> {
    let of = of?;
    if done == 0 || of <= done {
        return (of <= done).then_some(Duration::ZERO);
    }
    Some(spent / done * (of - done))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(running: usize, completed: usize, failed: usize) -> RoundStatus<'static> {
        RoundStatus {
            test: "pairs",
            round: 3,
            of: Some(7),
            sets: 4,
            running,
            completed,
            failed,
            skipped: 0,
            passed: None,
            elapsed: Duration::from_secs(12),
            eta: Some(Duration::from_secs(40)),
        }
    }

    #[test]
    fn rounds_read_as_progress_and_passes_are_counted() {
        assert_eq!(
            status(2, 2, 0).line(false),
            "pairs: round 3 of 7: 2 set(s) running, 2 set(s) completed (12.0 s), ETA 40.0 s"
        );
        assert_eq!(
            status(0, 3, 1).line(true),
            "pairs: round 3 of 7: 3 set(s) completed, 1 failed (12.0 s), ETA 40.0 s"
        );
        let iso = RoundStatus {
            of: None,
            passed: Some(1),
            eta: None,
            ..status(0, 4, 0)
        };
        assert_eq!(
            iso.line(true),
            "pairs: round 3: 1 of 4 set(s) passed (12.0 s)"
        );
    }

    #[test]
    fn failures_are_shown_in_full() {
        let hosts = ["node05".to_string(), "node06".to_string()];
        let dead = ["node06".to_string()];
        let e = SetEvent::SetFailed {
            test: "soak",
            round: 1,
            hosts: &hosts,
            ended: "exit 1",
            seconds: 3.0,
            dead: &dead,
            launcher: Some("srun: error: Node failure on node06"),
            log: "sets/00-soak/r001-000.log",
        };
        assert_eq!(
            e.line(),
            "soak round 1 node[05-06]: FAILED: exit 1 (3.0 s); dead: node06; the launcher said: \
             srun: error: Node failure on node06; output: sets/00-soak/r001-000.log"
        );
    }

    #[test]
    fn eta_is_the_pace_of_the_rounds_so_far() {
        let s = Duration::from_secs(30);
        assert_eq!(eta(s, 3, Some(7)), Some(Duration::from_secs(40)));
        assert_eq!(eta(s, 7, Some(7)), Some(Duration::ZERO));
        assert_eq!(eta(s, 0, Some(7)), None);
        assert_eq!(eta(s, 2, None), None);
    }
}
