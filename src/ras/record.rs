//! What a hang's record keeps of NCCL's RAS in results (`errors[].ras`): the answer with each
//! rank named by the host the run knows it as, or why RAS could not be asked, and the hosts it
//! named. Isolation reads those hosts back from results — during the run and when `grade`
//! replays it — so both readings reach the same decision.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Rank, Report};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Record {
    /// RAS's answer; every rank's `host` is the run's name for it where its pid is the run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<Report>,
    /// Why RAS could not be asked (old NCCL, disabled, nothing listening, an unreadable answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// The hosts of the ranks RAS named missing, dead, with an asynchronous error or behind, in
    /// the order it names them: where isolation looks first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub named: Vec<String>,
}

impl Record {
    /// The record of `answer`, `host` naming a rank as the run knows it (RAS knows addresses).
    pub fn new(answer: &Result<Report, String>, host: &dyn Fn(&Rank) -> String) -> Record {
        let r = match answer {
            Err(why) => {
                return Record {
                    unavailable: Some(why.clone()),
                    ..Record::default()
                };
            }
            Ok(r) => r,
        };
        let mut report = r.clone();
        let ranks = report
            .communicators
            .iter_mut()
            .flat_map(|c| c.ranks.iter_mut().chain(c.missing.iter_mut()));
        for rank in ranks {
            let name = host(rank);
            if name != rank.host {
                rank.address = Some(std::mem::replace(&mut rank.host, name));
            }
        }
        let named = report.named_hosts(&|r| r.host.clone());
        Record {
            report: Some(report),
            unavailable: None,
            named,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ras::fixture;

    #[test]
    fn a_stopped_ranks_record_names_its_host_pid_and_gpu_with_rass_address_kept() {
        let r = crate::ras::json::parse(&fixture("nccl-2.30.7-rank-stopped.json")).unwrap();
        let rec = Record::new(&Ok(r), &|x| match x.pid {
            Some(690) => "node07".into(),
            _ => x.host.clone(),
        });
        assert_eq!(rec.named, ["node07"]);
        let report = rec.report.as_ref().unwrap();
        let m = &report.communicators[0].missing[0];
        assert_eq!((m.rank, m.pid, m.cuda_dev), (2, Some(690), Some(0)));
        assert_eq!(m.host, "node07");
        assert!(m.address.is_some(), "RAS's address kept: {m:?}");
        let back: Record = serde_json::from_str(&serde_json::to_string(&rec).unwrap()).unwrap();
        assert_eq!(back, rec, "read back from results as written");
    }

    #[test]
    fn an_unavailable_ras_names_nobody_and_says_why() {
        let rec = Record::new(
            &Err("no RAS listening at 127.0.0.1:1".into()),
            &|_| unreachable!(),
        );
        assert!(rec.named.is_empty() && rec.report.is_none());
        assert_eq!(
            rec.unavailable.as_deref(),
            Some("no RAS listening at 127.0.0.1:1")
        );
    }
}
