//! The JSON form of a RAS status (`SET FORMAT json`, NCCL ≥ 2.28.7): a dump of every
//! communicator's ranks and missing ranks. Unknown fields are ignored, so later versions read.

use serde::Deserialize;

use super::{Communicator, Rank, Report};

#[derive(Deserialize)]
struct Doc {
    nccl_version: Option<String>,
    #[serde(default)]
    communicators: Vec<Comm>,
    #[serde(default)]
    ras: Option<Ras>,
}

#[derive(Deserialize)]
struct Ras {
    #[serde(default)]
    timeouts_count: u64,
}

#[derive(Deserialize)]
struct Comm {
    #[serde(default)]
    hash: String,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    ranks: Vec<JRank>,
    #[serde(default)]
    missing_ranks: Vec<JRank>,
}

#[derive(Deserialize)]
struct JRank {
    rank: u64,
    #[serde(default)]
    host: String,
    pid: Option<u64>,
    cuda_dev: Option<u32>,
    #[serde(default)]
    status: Status,
    collective_counts: Option<std::collections::BTreeMap<String, u64>>,
}

#[derive(Deserialize, Default)]
struct Status {
    #[serde(default)]
    init_state: i64,
    #[serde(default)]
    async_error: i64,
    #[serde(default)]
    abort_flag: bool,
    #[serde(default)]
    unresponsive: bool,
    #[serde(default)]
    considered_dead: bool,
}

impl From<JRank> for Rank {
    fn from(r: JRank) -> Rank {
        Rank {
            rank: r.rank,
            host: r.host,
            address: None,
            pid: r.pid,
            cuda_dev: r.cuda_dev,
            collectives: r
                .collective_counts
                .map(|c| c.values().fold(0u64, |a, n| a.saturating_add(*n))),
            async_error: r.status.async_error,
            init_state: r.status.init_state,
            aborted: r.status.abort_flag,
            unresponsive: r.status.unresponsive,
            dead: r.status.considered_dead,
        }
    }
}

pub fn parse(text: &str) -> Result<Report, serde_json::Error> {
    let doc: Doc = serde_json::from_str(text)?;
    let communicators: Vec<Communicator> = doc
        .communicators
        .into_iter()
        .map(|c| Communicator {
            hash: c.hash,
            size: c.size,
            ranks: c.ranks.into_iter().map(Rank::from).collect(),
            missing: c.missing_ranks.into_iter().map(Rank::from).collect(),
            most_collectives: None,
        })
        .collect();
    let mut problems = Vec::new();
    if communicators.iter().any(|c| !c.missing.is_empty()) {
        problems.push("INCOMPLETE".to_string());
    }
    if communicators
        .iter()
        .flat_map(|c| &c.missing)
        .any(|r| r.dead)
    {
        problems.push("DEAD".to_string());
    }
    if doc.ras.is_some_and(|r| r.timeouts_count > 0) {
        problems.push("TIMEOUT".to_string());
    }
    Ok(Report {
        nccl_version: doc.nccl_version,
        form: "json".into(),
        communicators,
        problems,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ras::fixture;

    #[test]
    fn a_healthy_job_of_nccl_2_30_7() {
        let r = parse(&fixture("nccl-2.30.7-ok.json")).unwrap();
        assert_eq!(r.nccl_version.as_deref(), Some("2.30.7"));
        let c = &r.communicators[0];
        assert_eq!((c.size, c.ranks.len(), c.missing.len()), (4, 4, 0));
        assert_eq!(c.ranks[0].pid, Some(687));
        assert!(r.all_well(), "{r:?}");
        assert!(r.problems.is_empty());
    }

    #[test]
    fn a_stopped_rank_is_missing_and_unresponsive() {
        let r = parse(&fixture("nccl-2.30.7-rank-stopped.json")).unwrap();
        let m = &r.communicators[0].missing;
        assert_eq!(m.len(), 1);
        assert_eq!(
            (m[0].rank, m[0].pid, m[0].unresponsive, m[0].dead),
            (2, Some(690), true, false)
        );
        assert!(!r.all_well());
        let said = r.describe(&|_| "vm".into());
        assert!(
            said.contains("rank 2 (pid 690 on vm, GPU 0) missing: unresponsive"),
            "{said}"
        );
    }

    #[test]
    fn the_documentations_dead_process_and_a_rank_behind() {
        // NCCL's docs/userguide troubleshooting/ras.rst sample, with the missing rank dead and the
        // answering rank behind a peer of a second communicator.
        let r = parse(&fixture("nccl-docs-dead.json")).unwrap();
        let said = r.describe(&|x| x.host.clone());
        assert!(
            said.contains("rank 1 (pid 1524345 on 172.16.64.245, GPU 1) missing: dead"),
            "{said}"
        );
        assert!(
            said.contains("rank 0 (pid 1524344 on 172.16.64.245, GPU 0) 1 collective(s) behind"),
            "{said}"
        );
        assert_eq!(r.problems, ["INCOMPLETE", "DEAD"]);
    }

    #[test]
    fn ok_during_a_hang_still_says_nothing_is_cleared() {
        let r = parse(&fixture("nccl-2.30.7-ok.json")).unwrap();
        assert!(
            r.describe(&|_| "vm".into())
                .contains("RAS alone does not see this hang")
        );
    }
}
