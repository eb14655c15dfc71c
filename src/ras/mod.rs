//! NCCL's RAS (reliability, availability, serviceability; NCCL ≥ 2.24): every NCCL process runs
//! a thread that knows which ranks of each communicator are missing, dead or behind in their
//! collective counts, and answers a text protocol on `NCCL_RAS_ADDR`. At a hang the runner asks
//! it before aborting (`client`), reads the JSON form where the library has it (≥ 2.28.7,
//! `json`) and the text form otherwise (`text`), and names the ranks in the job's error
//! (`Report::describe`). RAS alone can say "OK" while a job is stuck (NVIDIA/nccl#1730): a
//! report never clears a hang, it only adds who to look at.

pub mod client;
pub mod diag;
pub mod json;
pub mod placed;
mod record;
pub mod text;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use record::Record;

/// Most ranks one answer may name in all (its communicators' ranks and missing ranks): more
/// than any job baton runs; an answer naming more is not believed, and the text parser stops
/// collecting there, so a hostile answer costs bounded memory beside its bounded bytes.
pub const MAX_RANKS: usize = 1 << 16;

/// Most findings one job error names; the rest are counted.
const MAX_SAID: usize = 32;

/// Most bytes of a job error's RAS sentence: host names come from the answer.
const MAX_WORDS: usize = 8192;

/// An answer that is no RAS status: cut short, not JSON where JSON was agreed, binary, or
/// naming ranks its communicators cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("RAS answer unreadable: {0}")]
pub struct Unreadable(pub String);

/// Reads a status body, `json` when the library agreed to that form, and checks it holds
/// together; a report that does not is [`Unreadable`], never "all well".
pub fn read(body: &str, json: bool) -> Result<Report, Unreadable> {
    let r = if json {
        json::parse(body).map_err(|e| Unreadable(format!("not the JSON of a RAS status ({e})")))?
    } else {
        text::parse(body)?
    };
    r.check()?;
    Ok(r)
}

/// One rank as RAS sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Rank {
    /// Rank in its communicator.
    pub rank: u64,
    /// The node's address as RAS knows it (an IP address); in a [`Record`] the host name the
    /// run knows it by, where the rank's pid is one of the run's.
    pub host: String,
    /// RAS's own address of the rank, in a [`Record`] whose `host` is the run's name for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    pub pid: Option<u64>,
    pub cuda_dev: Option<u32>,
    /// Collectives this rank has launched (all kinds); `None` when RAS has no data from it.
    pub collectives: Option<u64>,
    /// `ncclGetAsyncError`'s value on that rank; 0 is none.
    #[serde(default)]
    pub async_error: i64,
    /// `init_state`: 0 initialised, 7 in progress, other values an error.
    #[serde(default)]
    pub init_state: i64,
    #[serde(default)]
    pub aborted: bool,
    /// RAS could not reach it while collecting.
    #[serde(default)]
    pub unresponsive: bool,
    /// Unreachable for 60 s: RAS considers the process dead.
    #[serde(default)]
    pub dead: bool,
}

/// One communicator of the job.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Communicator {
    /// `0xd02144a62bcec42e`, as NCCL's debug output prints it.
    pub hash: String,
    pub size: u64,
    /// Ranks that answered.
    pub ranks: Vec<Rank>,
    /// Ranks RAS has no data from.
    pub missing: Vec<Rank>,
    /// The most collectives any rank launched, when RAS says so without listing that rank
    /// (the text form lists only the outlying ranks of a count mismatch).
    #[serde(default)]
    pub most_collectives: Option<u64>,
}

/// What one RAS query said.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    pub nccl_version: Option<String>,
    /// `json` or `text`: which form the library answered in.
    pub form: String,
    pub communicators: Vec<Communicator>,
    /// The problems RAS itself named (`INCOMPLETE`, `MISMATCH`, `DEAD`, `TIMEOUT`, …).
    pub problems: Vec<String>,
}

impl Report {
    /// Whether the communicators hold the ranks they name: no more than [`MAX_RANKS`] in all,
    /// and where a size is known, no more ranks than it, none outside it, none twice.
    fn check(&self) -> Result<(), Unreadable> {
        let all: usize = self
            .communicators
            .iter()
            .map(|c| c.ranks.len() + c.missing.len())
            .sum();
        if all > MAX_RANKS {
            return Err(Unreadable(format!(
                "it names {all} ranks, more than {MAX_RANKS}"
            )));
        }
        for c in self.communicators.iter().filter(|c| c.size > 0) {
            let listed: Vec<u64> = c.ranks.iter().chain(&c.missing).map(|r| r.rank).collect();
            let bad = |why: String| {
                Unreadable(format!("communicator {} of size {}: {why}", c.hash, c.size))
            };
            if listed.len() as u64 > c.size {
                return Err(bad(format!("{} ranks listed", listed.len())));
            }
            if let Some(r) = listed.iter().find(|&&r| r >= c.size) {
                return Err(bad(format!("rank {r} is outside it")));
            }
            let mut seen = std::collections::BTreeSet::new();
            if let Some(r) = listed.iter().find(|r| !seen.insert(**r)) {
                return Err(bad(format!("rank {r} is listed twice")));
            }
        }
        Ok(())
    }

    /// Ranks behind the furthest rank of their communicator, with by how many collectives.
    pub fn behind(&self) -> Vec<(&Communicator, &Rank, u64)> {
        let mut out = Vec::new();
        for c in &self.communicators {
            let most = c
                .ranks
                .iter()
                .filter_map(|r| r.collectives)
                .chain(c.most_collectives)
                .max();
            for r in &c.ranks {
                if let (Some(m), Some(n)) = (most, r.collectives)
                    && n < m
                {
                    out.push((c, r, m - n));
                }
            }
        }
        out
    }

    /// The hosts of the ranks RAS named — missing, dead, with an async error, or behind — in
    /// the order it names them, each once; `host` as in [`Report::describe`]. Where isolation
    /// looks first: the hung set's named nodes go straight to confirmation.
    pub fn named_hosts(&self, host: &dyn Fn(&Rank) -> String) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let ranks = self.communicators.iter().flat_map(|c| {
            c.missing
                .iter()
                .chain(c.ranks.iter().filter(|r| r.async_error != 0))
        });
        for r in ranks.chain(self.behind().into_iter().map(|(_, r, _)| r)) {
            let h = host(r);
            if !out.contains(&h) {
                out.push(h);
            }
        }
        out
    }

    /// Whether RAS named anything wrong at all.
    pub fn all_well(&self) -> bool {
        self.behind().is_empty()
            && self
                .communicators
                .iter()
                .all(|c| c.missing.is_empty() && c.ranks.iter().all(|r| r.async_error == 0))
    }

    /// The sentence for the job's error, `host` naming a rank's host as the run knows it
    /// (RAS knows addresses): `RAS (NCCL 2.30.7): rank 2 (pid 690 on node07, GPU 0) missing:
    /// unresponsive; rank 3 (…) 1 collective(s) behind`.
    pub fn describe(&self, host: &dyn Fn(&Rank) -> String) -> String {
        let who = |r: &Rank| {
            // A dead process RAS named without its ranks has no rank number.
            let mut s = match r.rank {
                u64::MAX => "a process (".to_string(),
                n => format!("rank {n} ("),
            };
            if let Some(p) = r.pid {
                s.push_str(&format!("pid {p} on "));
            }
            s.push_str(&host(r));
            if let Some(d) = r.cuda_dev {
                s.push_str(&format!(", GPU {d}"));
            }
            s.push(')');
            s
        };
        let mut said: Vec<String> = Vec::new();
        for c in &self.communicators {
            for r in &c.missing {
                let why = match (r.dead, r.unresponsive) {
                    (true, _) => "dead (unreachable for 60 s)",
                    (false, true) => "unresponsive",
                    _ => "not a member any more",
                };
                said.push(format!("{} missing: {why}", who(r)));
            }
            for r in c.ranks.iter().filter(|r| r.async_error != 0) {
                said.push(format!(
                    "{} has asynchronous error {}",
                    who(r),
                    r.async_error
                ));
            }
        }
        for (_, r, n) in self.behind() {
            said.push(format!("{} {n} collective(s) behind", who(r)));
        }
        let version = self
            .nccl_version
            .as_deref()
            .map(|v| format!(" (NCCL {v})"))
            .unwrap_or_default();
        if said.is_empty() {
            return format!(
                "RAS{version}: every rank answered and none is behind — RAS alone does not see this hang"
            );
        }
        said.dedup();
        let more = said.len().saturating_sub(MAX_SAID);
        said.truncate(MAX_SAID);
        if more > 0 {
            said.push(format!("and {more} more"));
        }
        let mut out = format!("RAS{version}: {}", said.join("; "));
        if out.len() > MAX_WORDS {
            let cut = (0..=MAX_WORDS)
                .rev()
                .find(|&i| out.is_char_boundary(i))
                .unwrap_or(0);
            out.truncate(cut);
            out.push_str(" …");
        }
        out
    }
}

/// A recorded RAS answer of `tests/data/ras/`.
#[cfg(test)]
fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/ras")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

#[cfg(test)]
mod tests;
