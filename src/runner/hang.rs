//! NCCL's RAS at a hang: each NCCL process of a run listens on a loopback port of its own
//! (`NCCL_RAS_ADDR`, chosen before any thread starts), so two jobs on one node never read each
//! other's status; when a collective hangs, every rank asks its own process's RAS who is missing
//! or behind before the communicators are aborted, and the record of the rank that keeps it
//! (rank 0, or a rank that waited for it: `keeper`) names them. RAS is
//! evidence beside baton's own: its "all well" never turns a hang into a pass.

use std::net::SocketAddr;
use std::sync::{Mutex, OnceLock};

use crate::ras::{self, Report};

static ADDR: OnceLock<Option<SocketAddr>> = OnceLock::new();
static LAST: Mutex<Option<Result<Report, String>>> = Mutex::new(None);

/// Gives this process's RAS a free loopback port, unless the user set `NCCL_RAS_ADDR` (then
/// that one is asked) or turned RAS off (`NCCL_RAS_ENABLE=0`: nothing is asked).
///
/// # Safety
/// Sets an environment variable: call before any thread starts, as `transport::Capture` does.
pub unsafe fn listen_here() {
    let addr = match std::env::var("NCCL_RAS_ADDR") {
        _ if std::env::var("NCCL_RAS_ENABLE").is_ok_and(|v| v.trim() == "0") => None,
        Ok(set) => set.parse().ok(),
        Err(_) => ras::client::free_loopback_port().map(|port| {
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            // SAFETY: the caller guarantees no other thread runs yet.
            unsafe { std::env::set_var("NCCL_RAS_ADDR", addr.to_string()) };
            addr
        }),
    };
    let _ = ADDR.set(addr);
}

/// Asks this process's RAS now and keeps the answer for the timeout's record; `None` when no
/// RAS was set up here (the host backend, RAS off).
pub fn ask() -> Option<Result<Report, String>> {
    let addr = (*ADDR.get()?)?;
    let answer =
        ras::client::query(addr, ras::client::Limits::default()).map_err(|e| e.to_string());
    *LAST.lock().unwrap_or_else(|p| p.into_inner()) = Some(answer.clone());
    Some(answer)
}

/// What the last [`ask`] got, or a fresh one when none was made yet.
pub fn last_or_ask() -> Option<Result<Report, String>> {
    kept().or_else(ask)
}

/// What the last [`ask`] got, without asking: after the engine aborted its communicators RAS
/// no longer knows them.
pub fn kept() -> Option<Result<Report, String>> {
    LAST.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// A rank's host as the run knows it (`hosts`, `pids` per plan rank) where RAS's pid matches,
/// else RAS's own address.
fn run_host<'a>(hosts: &'a [String], pids: &'a [u64]) -> impl Fn(&ras::Rank) -> String + 'a {
    move |x| {
        x.pid
            .and_then(|p| pids.iter().position(|q| *q == p))
            .and_then(|i| hosts.get(i).cloned())
            .unwrap_or_else(|| x.host.clone())
    }
}

/// The words for a record, ranks named as [`run_host`] names them.
pub fn words(answer: &Result<Report, String>, hosts: &[String], pids: &[u64]) -> String {
    match answer {
        Ok(r) => r.describe(&run_host(hosts, pids)),
        Err(why) if why.starts_with("RAS answer unreadable") => {
            format!("{why}; only baton's own evidence above")
        }
        Err(why) => format!("RAS unavailable ({why}); only baton's own evidence above"),
    }
}

/// The structured record of `answer` for the job's error, ranks named as [`run_host`] does.
pub fn record(answer: &Result<Report, String>, hosts: &[String], pids: &[u64]) -> ras::Record {
    ras::Record::new(answer, &run_host(hosts, pids))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ras_names_ranks_with_the_runs_host_names_and_says_when_it_is_not_there() {
        let j = include_str!("../../tests/data/ras/nccl-2.30.7-rank-stopped.json");
        let r = crate::ras::json::parse(j).unwrap();
        let hosts = vec!["node07".to_string(); 4];
        let said = words(&Ok(r.clone()), &hosts, &[687, 688, 690, 691]);
        assert!(
            said.contains("rank 2 (pid 690 on node07, GPU 0) missing: unresponsive"),
            "{said}"
        );
        let rec = record(&Ok(r.clone()), &hosts, &[687, 688, 690, 691]);
        assert_eq!(rec.named, ["node07"], "{rec:?}");
        let said = words(&Err("no RAS listening at 127.0.0.1:1".into()), &hosts, &[]);
        assert!(
            said.starts_with("RAS unavailable (no RAS listening"),
            "{said}"
        );
    }
}
