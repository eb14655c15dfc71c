//! `transport: P2P`: every channel between the job's ranks uses the expected class. NCCL walks
//! down its transport ladder silently (P2P → SHM → NET/Socket); only its connection lines say so.

use super::context::Ctx;
use super::verdict::{CriterionVerdict, Status};
use crate::ingest::class_satisfies;
use crate::plan::Criterion;
use crate::results::TransportLink;

/// Settings that make NCCL skip transports (P2P, SHM, IB) or pick a network plugin.
pub(super) const FORCING: &[&str] = &[
    "NCCL_P2P_DISABLE",
    "NCCL_SHM_DISABLE",
    "NCCL_IB_DISABLE",
    "NCCL_NET",
    "NCCL_P2P_LEVEL",
    "NCCL_NET_GDR_LEVEL",
];

fn link_text(t: &TransportLink) -> String {
    format!(
        "channel {:02} rank {} -> {} via {}{}{}",
        t.channel,
        t.from_rank,
        t.to_rank,
        t.detail,
        t.host
            .as_ref()
            .map(|h| format!(" on {h}"))
            .unwrap_or_default(),
        t.comm
            .as_ref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default()
    )
}

pub fn evaluate(ctx: &Ctx<'_>, c: &Criterion, expected: &str, text: String) -> CriterionVerdict {
    let links = &ctx.result.transports;
    let (status, message) = if links.is_empty() {
        (
            Status::Fail,
            format!(
                "no transport data for {}: the NCCL_DEBUG=INFO `Channel … via …` lines were not captured — run with NCCL_DEBUG=INFO, or ingest the debug log with the results",
                ctx.what
            ),
        )
    } else {
        let bad: Vec<&TransportLink> = links
            .iter()
            .filter(|t| !class_satisfies(&t.transport, expected))
            .collect();
        match bad.first() {
            None => {
                let mut details: Vec<&str> = links.iter().map(|t| t.detail.as_str()).collect();
                details.sort_unstable();
                details.dedup();
                (
                    Status::Pass,
                    format!(
                        "all {} links use {expected} ({})",
                        links.len(),
                        details.join(", ")
                    ),
                )
            }
            Some(first) => {
                // Variables that force NCCL down the ladder, when the log states them.
                let forced: Vec<String> = ctx
                    .result
                    .env
                    .iter()
                    .filter(|(k, v)| FORCING.contains(&k.as_str()) && v.as_str() != "0")
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                let mut seen: Vec<&str> = bad.iter().map(|t| t.transport.as_str()).collect();
                seen.sort_unstable();
                seen.dedup();
                (
                    Status::Fail,
                    format!(
                        "transport {}, expected {expected} ({}): {}{}{}",
                        seen.join("+"),
                        ctx.what,
                        link_text(first),
                        if bad.len() > 1 {
                            format!(", and {} more of {} links", bad.len() - 1, links.len())
                        } else {
                            format!(" ({} of {} links)", bad.len(), links.len())
                        },
                        if forced.is_empty() {
                            String::new()
                        } else {
                            format!("; the log sets {}", forced.join(", "))
                        }
                    ),
                )
            }
        }
    };
    CriterionVerdict::whole(c, text, status, message)
}
