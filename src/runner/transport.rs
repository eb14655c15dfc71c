//! Transport capture: NCCL tells which transport each channel and peer pair uses only in its
//! INFO log (`Channel 00/0 : 0[0] -> 1[1] via P2P/direct pointer`). When a plan asks (a
//! `transport` criterion, or `run --capture-transport`), workers log NCCL's INIT lines to
//! per-process files, and the run records the links for every job of that environment set
//! (they share its communicators). A user's own NCCL_DEBUG output still reaches them.
//!
//! Two ways in: `baton run` starts each env set's worker with the variables (`plan`); a rank
//! started by mpirun or srun sets them on itself before anything else runs (`for_this_process`)
//! and its links are gathered to rank 0 over MPI.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use crate::ingest::debug::{DebugLine, parse_line};
use crate::results::TransportLink;

/// File name prefix of the per-process NCCL logs in the parts directory.
const PREFIX: &str = "nccl-debug";

/// What capture adds to an env set's environment, and whether the user asked for NCCL output.
pub struct Capture {
    pub env: IndexMap<String, String>,
    /// The user set NCCL_DEBUG themselves: show them the log afterwards.
    pub echo: bool,
    dir: PathBuf,
    /// The start of the log file names this capture reads.
    head: String,
}

/// Variables for set `k` writing into `dir`, given the set's own environment. `None` when the
/// user already directs NCCL's log to a file of their own (their file is left alone).
pub fn plan(dir: &Path, k: usize, set_env: &IndexMap<String, String>) -> Option<Capture> {
    let head = format!("{PREFIX}.set{k}.");
    with_file(dir, format!("{head}%h.%p.log"), head, set_env)
}

/// Capture for the calling process alone (one rank under a launcher): its own log file, named
/// by host and pid, so ranks sharing a directory never write the same file.
pub fn for_this_process(dir: &Path) -> Option<Capture> {
    let name = format!(
        "{PREFIX}.{}.{}.log",
        crate::host::hostname(),
        std::process::id()
    );
    with_file(dir, name.clone(), name, &IndexMap::new())
}

fn with_file(
    dir: &Path,
    file: String,
    head: String,
    set_env: &IndexMap<String, String>,
) -> Option<Capture> {
    let user = |name: &str| {
        set_env
            .get(name)
            .cloned()
            .or_else(|| std::env::var(name).ok())
    };
    if user("NCCL_DEBUG_FILE").is_some() {
        return None;
    }
    let level = user("NCCL_DEBUG");
    let mut env = IndexMap::new();
    let echo = level
        .as_deref()
        .is_some_and(|l| !l.eq_ignore_ascii_case("WARN") && !l.eq_ignore_ascii_case("VERSION"));
    if !echo {
        env.insert("NCCL_DEBUG".to_string(), "INFO".to_string());
        env.insert("NCCL_DEBUG_SUBSYS".to_string(), "INIT".to_string());
    } else if let Some(sub) = user("NCCL_DEBUG_SUBSYS")
        && !sub.to_ascii_uppercase().contains("INIT")
        && !sub.to_ascii_uppercase().contains("ALL")
    {
        env.insert("NCCL_DEBUG_SUBSYS".to_string(), format!("{sub},INIT"));
    }
    env.insert(
        "NCCL_DEBUG_FILE".to_string(),
        dir.join(file).display().to_string(),
    );
    Some(Capture {
        env,
        echo,
        dir: dir.to_path_buf(),
        head,
    })
}

impl Capture {
    /// Puts the capture variables into this process's own environment, where NCCL will read
    /// them at its first call.
    ///
    /// # Safety
    /// No other thread may exist yet (nor start during the call): call it first thing, before
    /// MPI, CUDA or NCCL are initialised. Changing the environment of a process that runs
    /// threads is undefined behaviour on glibc.
    pub unsafe fn apply_to_this_process(&self) {
        for (k, v) in &self.env {
            // SAFETY: the caller guarantees this process is still single-threaded.
            unsafe { std::env::set_var(k, v) };
        }
    }

    /// The per-process NCCL logs of this capture, by name.
    pub fn files(&self) -> Vec<PathBuf> {
        let head = &self.head;
        let mut v: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with(head.as_str()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Every distinct link in the set's logs; the logs go to `events` when the user asked for
    /// NCCL output.
    pub fn collect(&self, events: &dyn crate::runner::events::Events) -> Vec<TransportLink> {
        let mut links: Vec<TransportLink> = Vec::new();
        for f in self.files() {
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            if self.echo {
                events.event(&crate::runner::events::RunEvent::NcclLog(&text));
            }
            links.extend(links_in(&text));
        }
        dedupe(links)
    }
}

/// Whether NCCL's connection log is wanted for `jobs`: the user asked, or a job has a
/// `transport` criterion.
pub fn wanted<'a>(asked: bool, mut jobs: impl Iterator<Item = &'a crate::expand::Job>) -> bool {
    asked
        || jobs.any(|j| {
            j.expect
                .iter()
                .any(|c| matches!(c.check, crate::plan::Check::Transport(_)))
        })
}

/// Gives `links` to every job that recorded none of its own (the jobs of one worker share its
/// communicators, so they share its links).
pub fn attach(jobs: &mut [crate::results::JobResult], links: &[TransportLink]) {
    for j in jobs.iter_mut().filter(|j| j.transports.is_empty()) {
        j.transports = links.to_vec();
    }
}

/// Transport links in NCCL_DEBUG text.
pub fn links_in(text: &str) -> Vec<TransportLink> {
    text.lines()
        .filter_map(|l| match parse_line(l) {
            Some(DebugLine::Transport(origin, mut link)) => {
                link.host.get_or_insert(origin.host);
                Some(link)
            }
            _ => None,
        })
        .collect()
}

pub fn dedupe(mut v: Vec<TransportLink>) -> Vec<TransportLink> {
    v.sort_by(|a, b| {
        (a.channel, a.from_rank, a.to_rank, &a.detail).cmp(&(
            b.channel,
            b.from_rank,
            b.to_rank,
            &b.detail,
        ))
    });
    v.dedup_by(|a, b| {
        a.channel == b.channel
            && a.from_rank == b.from_rank
            && a.to_rank == b.to_rank
            && a.detail == b.detail
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_from_the_healthy_fixture() {
        let text = include_str!("../../tests/data/nccl-tests/h200x2/debug_healthy.txt");
        let links = links_in(text);
        assert!(!links.is_empty());
        assert!(links.iter().all(|l| l.transport == "P2P"), "{links:?}");
        let socket = links_in(include_str!(
            "../../tests/data/nccl-tests/h200x2/debug_socket.txt"
        ));
        assert!(
            socket.iter().any(|l| l.transport.starts_with("NET")),
            "{socket:?}"
        );
    }

    #[test]
    fn capture_env_respects_the_users_settings() {
        let dir = Path::new("/tmp/x");
        let quiet = plan(dir, 0, &IndexMap::new()).unwrap();
        assert_eq!(quiet.env["NCCL_DEBUG"], "INFO");
        assert!(!quiet.echo);
        assert!(quiet.env["NCCL_DEBUG_FILE"].ends_with("nccl-debug.set0.%h.%p.log"));
        let mut user = IndexMap::new();
        user.insert("NCCL_DEBUG".to_string(), "INFO".to_string());
        user.insert("NCCL_DEBUG_SUBSYS".to_string(), "NET".to_string());
        let loud = plan(dir, 1, &user).unwrap();
        assert!(loud.echo && !loud.env.contains_key("NCCL_DEBUG"));
        assert_eq!(loud.env["NCCL_DEBUG_SUBSYS"], "NET,INIT");
        user.insert("NCCL_DEBUG_FILE".to_string(), "/var/log/n.%p".to_string());
        assert!(plan(dir, 2, &user).is_none());
    }
}
