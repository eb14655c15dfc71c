//! Verdicts that cite node evidence: what moved on a node while a failing set ran (a flapped
//! link's `carrier_changes`, an Xid, ECC errors) is added to that set's failing criterion, so
//! the line that says a set failed also says what the kernel saw. Only nodes whose counters
//! moved are named: evidence never blames a node that shows none.

use super::verdict::{JobVerdict, Status};
use crate::probe::delta::Change;
use crate::results::JobResult;

/// Per host of the job, the changes a verdict cites (NCCL's own lines among them), in the job's
/// host order; hosts where nothing citable moved are left out.
pub fn moved(result: &JobResult) -> Vec<(String, Vec<Change>)> {
    result
        .evidence
        .iter()
        .filter_map(|e| {
            let lines: Vec<Change> = e.changes().into_iter().filter(Change::cited).collect();
            (!lines.is_empty()).then(|| (e.host.clone(), lines))
        })
        .collect()
}

/// `node03 eth0 carrier_changes +4, tcp RetransSegs +12; node05 Xid 79 at 12:03:11`
pub fn text(moved: &[(String, Vec<Change>)]) -> String {
    moved
        .iter()
        .map(|(h, changes)| {
            let lines: Vec<String> = changes.iter().map(Change::line).collect();
            format!("{h} {}", lines.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Adds what moved on the set's nodes to the first failing criterion of every failing job.
pub fn failing(verdicts: &mut [JobVerdict]) {
    for v in verdicts.iter_mut().filter(|v| v.status == Status::Fail) {
        let Some(m) = v.source.as_ref().map(|s| moved(&s.result)) else {
            continue;
        };
        if m.is_empty() {
            continue;
        }
        let said = format!("; moved during the job: {}", text(&m));
        if let Some(c) = v.criteria.iter_mut().find(|c| c.status == Status::Fail) {
            c.message.push_str(&said);
            if let Some(case) = c.cases.iter_mut().find(|k| k.status == Status::Fail) {
                case.message.push_str(&said);
            }
        }
    }
}
