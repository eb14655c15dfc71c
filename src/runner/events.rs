//! What a run tells whoever shows it: one [`RunEvent`] type for every way of running (local,
//! node sets, one rank, and the worker processes they start), handed to one sink, [`Events`].
//! The runner never prints; the CLI's UI module draws these (a bar, lines, the live table).
//!
//! A node-set run's rounds go as they go ("round 3 of 7, 2 sets running, ETA 40 s"), a set that
//! failed in full, sets that completed only counted: 499,500 pairs make 999 round lines, not
//! half a million.

use std::path::Path;

use super::set_events::RoundStatus;

/// One thing a run has to say.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent<'a> {
    /// The run is about to produce about `rows` rows (a `repeat: { for: … }` job may add more).
    Begin { rows: u64 },
    /// `rows` rows are finished in all, the last one of `job`.
    Rows { rows: u64, job: &'a str },
    /// The run's jobs are done: whatever showed their progress goes.
    End,
    /// One line a worker wrote (`stderr`: on its standard error), passed on by the parent.
    WorkerLine { line: &'a str, stderr: bool },
    /// Part of the live nccl-tests table (a job's header, a row, a footer), with its newlines.
    Table(&'a str),
    /// NCCL's own connection log, echoed because the user asked NCCL to speak.
    NcclLog(&'a str),
    /// The output directory held an earlier run's results, now kept as `kept`.
    KeptAside { results: &'a Path, kept: &'a Path },
    /// `--resume`: jobs complete already and jobs left.
    Resuming { complete: usize, todo: usize },
    /// A job recorded as never run, and why.
    NotRun { job: &'a str, why: &'a str },
    /// An environment set's worker ended badly; `retry`: the jobs a fresh worker now runs.
    SetEnded {
        set: usize,
        why: &'a str,
        retry: Option<usize>,
    },
    /// A job's own error, as its rank 0 met it.
    JobFailed { job: &'a str, message: &'a str },
    /// `rank` of this process starts `job` (a worker marks its output: [`super::job_marks`]).
    JobStarts { rank: usize, job: &'a str },
    /// A job skipped before it ran (its `root` is out of range).
    JobSkipped { job: &'a str, why: &'a str },
    /// A rank's watchdog ended a hung collective.
    RankTimeout { rank: usize, what: &'a str },
    /// A rank's world broke (a rank lost or late): the process ends.
    WorldBroken { rank: usize, why: &'a str },
    /// `BATON_FAULT=crash`: this rank dies now.
    InjectedCrash,
    /// A run cut short by a signal or a broken world: what ran, and where its results are.
    CutShort {
        why: &'a str,
        ran: usize,
        of: usize,
        results: &'a Path,
    },
    /// How the results were read (a journal beside them, damaged lines skipped).
    Notice(&'a crate::results::Notice),
    /// The run's results are complete in this file.
    ResultsIn(&'a Path),
    /// A line of its own: a warning about how the run was launched, or what failed while a
    /// run cut short was being ended.
    Note(&'a str),
    /// A node-set run starts over these nodes.
    NodeSets { hosts: &'a [String] },
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

/// Whoever shows a run. Shared with the threads of workers and watchdogs, hence `Send + Sync`.
pub trait Events: Send + Sync {
    fn event(&self, e: &RunEvent<'_>);
}

/// Shows nothing (tests, and ranks whose output nobody reads).
pub struct Quiet;

impl Events for Quiet {
    fn event(&self, _: &RunEvent<'_>) {}
}

/// Rows `jobs` produce: sizes × repeats (the least count of a time-bounded repeat).
pub fn rows<'a>(jobs: impl IntoIterator<Item = &'a crate::expand::Job>) -> u64 {
    jobs.into_iter()
        .map(|j| j.sizes.len() as u64 * u64::from(j.repeat.min_count().max(1)))
        .sum()
}

impl RunEvent<'_> {
    /// The event as one line of a log, without the `baton: ` prefix; `None` for what is not a
    /// line of its own (progress, passed-on output, the table, a round still going).
    pub fn line(&self) -> Option<String> {
        use crate::nodeset::compress;
        Some(match self {
            RunEvent::Begin { .. }
            | RunEvent::Rows { .. }
            | RunEvent::End
            | RunEvent::WorkerLine { .. }
            | RunEvent::JobStarts { .. }
            | RunEvent::Table(_)
            | RunEvent::NcclLog(_)
            | RunEvent::Round(_) => return None,
            RunEvent::KeptAside { results, kept } => format!(
                "{} held results of an earlier run; kept them as {} (use --resume to continue a run instead)",
                results.display(),
                kept.display()
            ),
            RunEvent::Resuming { complete, todo } => {
                format!("resuming: {complete} job(s) already complete, {todo} to run")
            }
            RunEvent::NotRun { job, why } => format!("{job}: not run ({why})"),
            RunEvent::SetEnded { set, why, retry } => match retry {
                None => format!("environment set {set}: {why}"),
                Some(n) => format!(
                    "environment set {set}: {why}; starting a fresh worker for the {n} job(s) it did not reach"
                ),
            },
            RunEvent::JobFailed { job, message } => format!("{job}: {message}"),
            RunEvent::JobSkipped { job, why } => format!("{job}: {why}; job skipped"),
            RunEvent::RankTimeout { rank, what } => format!("rank {rank}: timeout: {what}"),
            RunEvent::WorldBroken { rank, why } => format!("rank {rank}: {why}"),
            RunEvent::InjectedCrash => "injected fault: this rank dies now".into(),
            RunEvent::CutShort {
                why,
                ran,
                of,
                results,
            } => format!(
                "{why}: {ran} of {of} job(s) ran; results in {} (`--resume` continues)",
                results.display()
            ),
            RunEvent::Notice(n) => n.to_string(),
            RunEvent::ResultsIn(p) => format!("results in {}", p.display()),
            RunEvent::Note(what) => what.to_string(),
            RunEvent::NodeSets { hosts } => {
                format!(
                    "node sets over {} node(s): {}",
                    hosts.len(),
                    compress(hosts)
                )
            }
            RunEvent::RoundEnd(r) => r.line(true),
            RunEvent::SetFailed {
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
            RunEvent::Refused { message, fix } => format!(
                "the launcher refused a node set's step, so the run stops and no node is \
                 blamed: {message}\nbaton: fix: {fix}"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_shown_in_full() {
        let hosts = ["node05".to_string(), "node06".to_string()];
        let dead = ["node06".to_string()];
        let e = RunEvent::SetFailed {
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
            e.line().unwrap(),
            "soak round 1 node[05-06]: FAILED: exit 1 (3.0 s); dead: node06; the launcher said: \
             srun: error: Node failure on node06; output: sets/00-soak/r001-000.log"
        );
    }

    #[test]
    fn every_way_of_running_keeps_earlier_results_with_one_message() {
        let e = RunEvent::KeptAside {
            results: Path::new("out/results.json"),
            kept: Path::new("out/results.X.json"),
        };
        assert!(
            e.line()
                .unwrap()
                .ends_with("(use --resume to continue a run instead)")
        );
    }
}
