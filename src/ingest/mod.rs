//! nccl-tests logs → the results contract, so clusters tested before baton existed (or by a
//! vendor's own scripts) are graded by the same rules as `baton run`.
//!
//! Each file is read as nccl-tests JSON (`-J`, version 3) when it starts with `{`, otherwise as
//! nccl-tests text output (one or more runs, behind any launcher tags) with any NCCL_DEBUG=INFO
//! lines mixed in. A file with only NCCL_DEBUG lines adds its transports to the one run it is
//! ingested with. docs/grading.md says what is accepted, inferred and refused.

mod build;
pub mod debug;
mod failure;
mod flags;
mod header;
mod json;
mod log;
mod prefix;
mod program;
mod row;
mod sanity;
mod sweep;
mod text;

use std::collections::HashSet;

use indexmap::IndexMap;

pub use debug::class_satisfies;
pub use log::Warning;

use crate::collective::Collective;
use crate::plan::jobs::test_of;
use crate::results::{
    Environment, Gpu, Host, JobResult, JobStatus, MatchBy, Producer, Results, TransportLink,
};
use log::Log;

/// Largest log accepted; NCCL_DEBUG=INFO captures of big jobs run to hundreds of MiB.
pub const MAX_LOG_BYTES: usize = 1 << 30;

/// One log to ingest: a name for messages and its bytes.
pub struct LogInput<'a> {
    pub name: &'a str,
    pub bytes: &'a [u8],
}

/// The results of an ingest and what it had to tolerate.
#[derive(Debug)]
pub struct Ingested {
    pub results: Results,
    pub warnings: Vec<Warning>,
    /// The worst thing the logs show happened to the runs.
    pub outcome: Outcome,
}

/// What the logs say of the runs they hold, worst first last: the exit code follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Every run printed its whole table and footer, with no failure and no wrong element.
    Clean,
    /// A run completed but its data check failed (`#wrong` > 0, `Out of bounds values : N FAILED`).
    CheckFailed,
    /// A run failed (`Test … failure`, processes running alone) or its table was cut short.
    RunFailed,
    /// A run timed out.
    TimedOut,
}

/// How to ingest: the plan job the logs measured, and the collective of runs that do not say.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    pub label: Option<&'a str>,
    /// `--collective`: for runs with neither a start line nor a program named anywhere.
    pub collective: Option<Collective>,
}

/// Why logs could not become results.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("{path}: not an nccl-tests log: {why}")]
    NotALog { path: String, why: String },
    #[error("{path}: {program} is not one of the collectives baton grades ({})", Collective::names().join(", "))]
    Unsupported { path: String, program: String },
    #[error("{path}: cannot tell which collective ran: {why}")]
    NoCollective { path: String, why: String },
    #[error(
        "{path}: no table rows: the run at line {line} printed its header but no measurements (cut short before its first row?); give its collective with --collective NAME to keep it as a run cut short"
    )]
    NoRows { path: String, line: usize },
    #[error("{path}: {size} bytes is larger than the {} MiB a log may have", MAX_LOG_BYTES >> 20)]
    TooLarge { path: String, size: usize },
    #[error("--job {label}: {why}")]
    Label { label: String, why: String },
    #[error("{path}: holds only NCCL_DEBUG lines and {why}")]
    DebugOnly { path: String, why: String },
    #[error("{path}:{line}: {why}; refusing the log (edited or damaged?)")]
    Impossible {
        path: String,
        line: usize,
        why: String,
    },
}

/// Reads `logs` into one results file. With `label`, every job must be the same (collective,
/// dtype, op, root, ranks): they become repeats of the plan job `label`.
pub fn ingest(logs: &[LogInput<'_>], label: Option<&str>) -> Result<Ingested, IngestError> {
    ingest_with(
        logs,
        &Options {
            label,
            collective: None,
        },
    )
}

/// [`ingest`] with every option.
pub fn ingest_with(logs: &[LogInput<'_>], opts: &Options<'_>) -> Result<Ingested, IngestError> {
    let label = opts.label;
    let mut warnings = Vec::new();
    let mut runs: Vec<Log> = Vec::new();
    let mut debug_only: Vec<Log> = Vec::new();
    for input in logs {
        for log in parse_one(input, &mut warnings)? {
            if log.has_run() {
                runs.push(log);
            } else {
                debug_only.push(log);
            }
        }
    }
    if runs.is_empty() {
        if let Some(d) = debug_only.first() {
            return Err(IngestError::DebugOnly {
                path: d.source.clone(),
                why: "no nccl-tests table: ingest it together with the nccl-tests log of the same run".into(),
            });
        }
        return Err(IngestError::NotALog {
            path: "(no input)".into(),
            why: "no log given".into(),
        });
    }
    let mut per_log: Vec<Vec<JobResult>> = Vec::new();
    let mut outcome = Outcome::Clean;
    let several = runs.len() > 1;
    for log in &runs {
        let collective = match collective_of(log, opts.collective, several, &mut warnings) {
            // A header with nothing under it and no failure: what it lacks is rows, whatever ran.
            Err(IngestError::NoCollective { path, .. })
                if log.rows.is_empty() && !log.fatal && log.header.is_some() =>
            {
                return Err(IngestError::NoRows {
                    path,
                    line: log.first_line,
                });
            }
            c => c?,
        };
        outcome = outcome.max(build::outcome(log));
        per_log.push(build::jobs(log, collective, &mut warnings));
    }
    let mut jobs: Vec<JobResult> = match label {
        Some(l) => vec![merge_labelled(l, per_log.into_iter().flatten().collect())?],
        None => {
            let n_runs = per_log.len();
            let jobs: Vec<JobResult> = per_log.into_iter().flatten().collect();
            if !debug_only.is_empty() && n_runs > 1 {
                return Err(IngestError::DebugOnly {
                    path: debug_only[0].source.clone(),
                    why: format!(
                        "{n_runs} nccl-tests logs are ingested with it: it cannot say which run it belongs to; ingest it with its own log"
                    ),
                });
            }
            jobs
        }
    };
    for d in &debug_only {
        for j in &mut jobs {
            add_links(&mut j.transports, d.transports.iter().cloned());
            for (k, v) in &d.env {
                j.env.entry(k.clone()).or_insert_with(|| v.clone());
            }
            j.errors.extend(d.errors.iter().cloned());
            j.sources.push(d.source.clone());
        }
    }
    unique_ids(&mut jobs);
    let mut producer = Producer::baton("ingest");
    producer.sources = logs.iter().map(|l| l.name.to_string()).collect();
    let mut results = Results::new(producer);
    // An ingest is not a run: when the logs were taken is not known.
    results.started = None;
    results.environment = environment(runs.iter().chain(&debug_only));
    results.jobs = jobs;
    Ok(Ingested {
        results,
        warnings,
        outcome,
    })
}

/// The collective a run measured: its start line, else the program a line of it names, else
/// `--collective`; a refusal that says how to give it otherwise.
fn collective_of(
    log: &Log,
    hint: Option<Collective>,
    several: bool,
    warnings: &mut Vec<Warning>,
) -> Result<Collective, IngestError> {
    let path = || log.source.clone();
    let run = || {
        if several {
            format!("the run at line {}", log.first_line)
        } else {
            "the log".to_string()
        }
    };
    let named = match (&log.program, &log.named, &log.named_conflict) {
        (Some(p), ..) => Some(p),
        (None, Some((a, la)), Some((b, lb))) => {
            return hint.ok_or_else(|| IngestError::NoCollective {
                path: path(),
                why: format!(
                    "{} names both `{a}` (line {la}) and `{b}` (line {lb}); give the one that ran with --collective NAME",
                    run()
                ),
            });
        }
        (None, Some((p, _)), None) => Some(p),
        (None, None, _) => None,
    };
    let Some(p) = named else {
        return hint.ok_or_else(|| IngestError::NoCollective {
            path: path(),
            why: format!(
                "{} has no `# Collective test starting:` line and names no nccl-tests program (`all_reduce_perf`, …) in a command line or elsewhere; give it with --collective NAME ({})",
                run(),
                Collective::names().join(", ")
            ),
        });
    };
    let c = log::collective_of_program(p).ok_or_else(|| IngestError::Unsupported {
        path: path(),
        program: p.clone(),
    })?;
    if let Some(h) = hint.filter(|h| *h != c) {
        warnings.push(Warning {
            source: path(),
            line: Some(log.first_line),
            message: format!("--collective {h} ignored for {}: it names `{p}`", run()),
        });
    }
    Ok(c)
}

fn parse_one(input: &LogInput<'_>, warnings: &mut Vec<Warning>) -> Result<Vec<Log>, IngestError> {
    let path = input.name.to_string();
    if input.bytes.len() > MAX_LOG_BYTES {
        return Err(IngestError::TooLarge {
            path,
            size: input.bytes.len(),
        });
    }
    let text = String::from_utf8_lossy(input.bytes);
    if text.chars().take(4096).filter(|c| *c == '\u{0}').count() > 0 {
        return Err(IngestError::NotALog {
            path,
            why: "it is binary".into(),
        });
    }
    let (logs, w) = if text.trim_start().starts_with('{') {
        let (log, w) = json::parse(&path, &text).map_err(|e| IngestError::NotALog {
            path: path.clone(),
            why: e.0,
        })?;
        (vec![log], w)
    } else {
        text::parse(&path, &text)
    };
    for log in &logs {
        if let Some((line, why)) = log
            .impossible
            .clone()
            .or_else(|| sanity::first_impossible(log))
        {
            return Err(IngestError::Impossible { path, line, why });
        }
        if let Some((line, why)) = &log.first_unreadable
            && log.rows.is_empty()
            && !log.fatal
        {
            return Err(IngestError::NotALog {
                path,
                why: format!(
                    "its {} table row(s) hold no numbers (line {line}: {why}): a template or an edited log, not measurements",
                    log.unreadable_rows
                ),
            });
        }
    }
    if logs.iter().all(|l| !l.has_run() && l.debug_lines == 0) {
        return Err(IngestError::NotALog {
            path,
            why: "no nccl-tests header, table rows or NCCL_DEBUG lines found".into(),
        });
    }
    warnings.extend(w);
    Ok(logs)
}

/// Appends the links of `more` that `links` does not hold yet, in time linear in both.
fn add_links(links: &mut Vec<TransportLink>, more: impl IntoIterator<Item = TransportLink>) {
    let key = |t: &TransportLink| {
        (
            t.channel,
            t.from_rank,
            t.to_rank,
            t.transport.clone(),
            t.detail.clone(),
            t.host.clone(),
            t.comm.clone(),
        )
    };
    let mut seen: HashSet<_> = links.iter().map(key).collect();
    for t in more {
        if seen.insert(key(&t)) {
            links.push(t);
        }
    }
}

/// Joins the jobs of labelled logs into one job whose repeats are every log's repeats in order.
fn merge_labelled(label: &str, jobs: Vec<JobResult>) -> Result<JobResult, IngestError> {
    let err = |why: String| IngestError::Label {
        label: label.to_string(),
        why,
    };
    if label.trim().is_empty() {
        return Err(err("the job ID is empty".into()));
    }
    let mut iter = jobs.into_iter();
    let Some(mut first) = iter.next() else {
        return Err(err("no jobs in the logs".into()));
    };
    let describe = |j: &JobResult| {
        format!(
            "{} {}{}{} on {} rank(s) in {}",
            j.collective,
            j.dtype,
            j.op.map(|o| format!(" {o}")).unwrap_or_default(),
            j.root.map(|r| format!(" root {r}")).unwrap_or_default(),
            j.layout.nranks,
            j.sources.join(", ")
        )
    };
    for j in iter {
        let same = j.collective == first.collective
            && j.dtype == first.dtype
            && j.op == first.op
            && j.root == first.root
            && j.layout.nranks == first.layout.nranks
            && j.groups == first.groups;
        if !same {
            return Err(err(format!(
                "the logs hold different jobs ({} and {}); ingest each with its own --job",
                describe(&first),
                describe(&j)
            )));
        }
        for mut r in j.repeats {
            r.index = first.repeats.len() as u32;
            first.repeats.push(r);
        }
        add_links(&mut first.transports, j.transports);
        for (k, v) in j.env {
            first.env.entry(k).or_insert(v);
        }
        first.errors.extend(j.errors);
        first.sources.extend(j.sources);
        first.status = worse(first.status, j.status);
    }
    first.id = label.to_string();
    first.test = test_of(label).to_string();
    first.match_by = MatchBy::Id;
    Ok(first)
}

fn worse(a: JobStatus, b: JobStatus) -> JobStatus {
    let rank = |s: JobStatus| match s {
        JobStatus::Completed => 0,
        JobStatus::Partial => 1,
        JobStatus::Error => 2,
        JobStatus::Timeout => 3,
    };
    if rank(b) > rank(a) { b } else { a }
}

fn unique_ids(jobs: &mut [JobResult]) {
    let mut seen: HashSet<String> = HashSet::new();
    // The next suffix to try per ID, so that N equal IDs cost N steps, not N².
    let mut next: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    for j in jobs {
        if !seen.insert(j.id.clone()) {
            let k = next.entry(j.id.clone()).or_insert(2);
            while !seen.insert(format!("{}#{k}", j.id)) {
                *k += 1;
            }
            j.id = format!("{}#{k}", j.id);
            *k += 1;
        }
    }
}

/// The run-wide environment of logs ingested together. A variable counts as run-wide only when
/// every log with a run states it alike; one log's settings stay on its own jobs (`JobResult::env`)
/// and never reach another job's suite or the report's environment.
fn environment<'a>(logs: impl Iterator<Item = &'a Log> + Clone) -> Environment {
    let mut env = Environment::default();
    let mut hosts: IndexMap<String, Vec<Gpu>> = IndexMap::new();
    env.variables =
        crate::results::env::common(logs.clone().filter(|l| l.has_run()).map(|l| &l.env));
    for log in logs {
        env.nccl_version = env.nccl_version.take().or(log.nccl_version.clone());
        env.cuda_version = env.cuda_version.take().or(log.cuda_version.clone());
        for d in &log.devices {
            let gpus = hosts.entry(d.host.clone()).or_default();
            if !gpus.iter().any(|g| g.index == d.device) {
                gpus.push(Gpu {
                    index: d.device,
                    name: d.name.clone().unwrap_or_else(|| "unknown".into()),
                    uuid: None,
                    pci_bus_id: d.pci.clone(),
                    memory_bytes: None,
                });
            }
        }
    }
    env.hosts = hosts
        .into_iter()
        .map(|(hostname, mut gpus)| {
            gpus.sort_by_key(|g| g.index);
            Host { hostname, gpus }
        })
        .collect();
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(name: &str, text: &str) -> Result<Ingested, IngestError> {
        ingest(
            &[LogInput {
                name,
                bytes: text.as_bytes(),
            }],
            None,
        )
    }

    #[test]
    fn json_env_states_the_split() {
        let doc = include_str!("../../tests/data/nccl-tests/h200x2/all_gather.json");
        let split = doc.replace("\"NCCL_NVLS_ENABLE=0\"", "\"NCCL_TESTS_SPLIT_MASK=10\"");
        let r = one("s.json", &split).unwrap().results;
        assert_eq!(r.jobs[0].split.as_deref(), Some("AND 0x10"));
        assert_eq!(
            r.environment
                .variables
                .get("NCCL_TESTS_SPLIT_MASK")
                .map(String::as_str),
            Some("10")
        );
    }

    /// gather_perf, scatter_perf, alltoallv_perf and hypercube_perf tables as nccl-tests 2.19
    /// prints them (2 ranks, 1 MiB float, 20 us): gather, scatter and alltoallv at (n-1)/n,
    /// hypercube's algbw B·e·(n-1)/t at factor 1, so no busbw/algbw warning.
    #[test]
    fn the_new_collectives_tables_are_accepted_with_their_factors() {
        let head = "# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803\n\
# nThread 1 nGpus 2 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0\n\
#\n# Using devices\n\
#  Rank  0 Group  0 Pid   1476 on         vm device  0 [0000:00:06] NVIDIA H200\n\
#  Rank  1 Group  0 Pid   1476 on         vm device  1 [0000:00:07] NVIDIA H200\n#\n\
#                                                              out-of-place                       in-place\n\
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n\
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)\n";
        // hypercube_perf prints an empty redop (`%6s` of ""): one whitespace field fewer.
        for (prog, coll, redop, root, alg, bus) in [
            ("gather", Collective::Gather, "none", 0, "52.43", "26.21"),
            ("scatter", Collective::Scatter, "none", 0, "52.43", "26.21"),
            (
                "alltoallv",
                Collective::AllToAllv,
                "none",
                -1,
                "52.43",
                "26.21",
            ),
            ("hypercube", Collective::HyperCube, "", -1, "26.21", "26.21"),
        ] {
            let cell = format!("  {:>7}  {alg:>6}  {bus:>6}  {:>6}", "20.00", 0);
            let text = format!(
                "# Collective test starting: {prog}_perf\n{head}\
{:>12}  {:>12}  {:>8}  {redop:>6}  {root:>6}{cell}{cell}\n\
# Out of bounds values : 0 OK\n# Avg bus bandwidth    : {bus}\n#\n# Collective test concluded: {prog}_perf\n",
                1048576, 131072, "float"
            );
            let got = one("t.txt", &text).unwrap_or_else(|e| panic!("{prog}: {e}"));
            assert!(got.warnings.is_empty(), "{prog}: {:?}", got.warnings);
            let job = &got.results.jobs[0];
            assert_eq!(job.collective, coll);
            let row = &job.repeats[0].rows[0];
            assert_eq!((row.size, row.count), (1048576, 131072));
            let (a, b) = coll.bandwidths(row.size, 20.0, 2);
            assert_eq!(
                (format!("{a:.2}"), format!("{b:.2}")),
                (alg.into(), bus.into()),
                "{prog}"
            );
        }
    }

    #[test]
    fn rejects_what_is_not_a_log() {
        let e = one("notes.txt", "shopping list\neggs\n").unwrap_err();
        assert!(matches!(e, IngestError::NotALog { .. }), "{e}");
        assert!(e.to_string().contains("notes.txt"));
        let e = one("x.bin", "\u{0}\u{1}\u{2}").unwrap_err();
        assert!(e.to_string().contains("binary"), "{e}");
        let e = one(
            "d.txt",
            "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n",
        )
        .unwrap_err();
        assert!(matches!(e, IngestError::DebugOnly { .. }), "{e}");
    }
}
