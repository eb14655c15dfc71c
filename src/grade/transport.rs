//! `transport:` criteria: NCCL walks down its transport ladder silently (P2P → SHM →
//! NET/Socket), loses GPUDirect RDMA silently, and sets NVLS or CollNet up or not silently; only
//! its INIT lines say so. Each part of the rule (whole job, `intra_node`, `inter_node`) is judged
//! on the links it speaks about; a link whose two ends cannot be placed fails closed rather than
//! counting for either side.

use std::collections::HashMap;

use super::context::Ctx;
use super::verdict::{CriterionVerdict, Status};
use crate::plan::Criterion;
use crate::plan::TransportRule;
use crate::plan::transport_rule::{ClassRule, Scope, class_satisfies, is_feature};
use crate::results::{JobResult, TransportLink};

/// Settings that make NCCL skip transports (P2P, SHM, IB) or pick a network plugin.
pub(super) const FORCING: &[&str] = &[
    "NCCL_P2P_DISABLE",
    "NCCL_SHM_DISABLE",
    "NCCL_IB_DISABLE",
    "NCCL_NET",
    "NCCL_P2P_LEVEL",
    "NCCL_NET_GDR_LEVEL",
    "NCCL_NVLS_ENABLE",
    "NCCL_COLLNET_ENABLE",
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

/// Where each communicator rank runs, from the job's recorded layout: plan ranks for the world
/// communicator, the n-th rank of a split group for `group G` communicators (nccl-tests splits
/// with the world rank as key, so group ranks keep world order).
struct Placement<'a> {
    world: HashMap<u64, &'a str>,
    groups: HashMap<u64, Vec<&'a str>>,
    single_node: bool,
}

impl<'a> Placement<'a> {
    fn of(r: &'a JobResult) -> Self {
        let mut ranks: Vec<_> = r.layout.ranks.iter().collect();
        ranks.sort_by_key(|x| x.rank);
        let mut groups: HashMap<u64, Vec<&str>> = HashMap::new();
        for x in &ranks {
            if let Some(g) = x.group {
                groups.entry(g).or_default().push(x.host.as_str());
            }
        }
        Placement {
            world: ranks.iter().map(|x| (x.rank, x.host.as_str())).collect(),
            groups,
            single_node: r.layout.nodes == 1,
        }
    }

    fn host(&self, comm: Option<&str>, rank: u64) -> Option<&'a str> {
        match comm.and_then(|c| c.strip_prefix("group ")?.parse::<u64>().ok()) {
            Some(g) => self.groups.get(&g)?.get(rank as usize).copied(),
            None => self.world.get(&rank).copied(),
        }
    }

    /// `Some(true)` when both ends share a node, `Some(false)` when not, `None` when unknown.
    fn intra(&self, t: &TransportLink) -> Option<bool> {
        if self.single_node {
            return Some(true);
        }
        let comm = t.comm.as_deref();
        match (self.host(comm, t.from_rank), self.host(comm, t.to_rank)) {
            (Some(a), Some(b)) => Some(a == b),
            // CollNet reduces in the network between nodes.
            _ if t.transport == "CollNet" => Some(false),
            _ => None,
        }
    }
}

/// What one part of the rule found wrong, for the message.
struct Finding {
    bad: Vec<String>,
    first: String,
    count: usize,
}

pub fn evaluate(
    ctx: &Ctx<'_>,
    c: &Criterion,
    rule: &TransportRule,
    text: String,
) -> CriterionVerdict {
    let links = &ctx.result.transports;
    if links.is_empty() {
        return CriterionVerdict::whole(
            c,
            text,
            Status::Fail,
            format!(
                "no transport data for {}: the NCCL_DEBUG=INFO `Channel … via …` lines were not captured — run with NCCL_DEBUG=INFO, or ingest the debug log with the results",
                ctx.what
            ),
        );
    }
    let place = Placement::of(ctx.result);
    let mut problems: Vec<String> = Vec::new();
    for (scope, part) in rule.parts() {
        if let Err(m) = judge_part(ctx, &place, scope, part) {
            problems.push(m);
        }
    }
    if problems.is_empty() {
        let mut details: Vec<&str> = links.iter().map(|t| t.detail.as_str()).collect();
        details.sort_unstable();
        details.dedup();
        return CriterionVerdict::whole(
            c,
            text,
            Status::Pass,
            format!(
                "all {} links use {rule} ({})",
                links.len(),
                details.join(", ")
            ),
        );
    }
    // Variables that force NCCL down the ladder, when the log states them.
    let forced: Vec<String> = ctx
        .result
        .env
        .iter()
        .filter(|(k, v)| FORCING.contains(&k.as_str()) && v.as_str() != "0")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let mut message = problems.join("; ");
    if !forced.is_empty() {
        message.push_str(&format!("; the log sets {}", forced.join(", ")));
    }
    CriterionVerdict::whole(c, text, Status::Fail, message)
}

/// One part of the rule over the links it speaks about.
fn judge_part(
    ctx: &Ctx<'_>,
    place: &Placement<'_>,
    scope: Scope,
    part: &ClassRule,
) -> Result<(), String> {
    let links = &ctx.result.transports;
    let scoped = |s: Scope| match s {
        Scope::All => String::new(),
        s => format!(" {}", s.key()),
    };
    let mut unplaced = Vec::new();
    let mut chosen: Vec<&TransportLink> = Vec::new();
    for t in links.iter().filter(|t| !is_feature(&t.transport)) {
        let keep = match scope {
            Scope::All => true,
            Scope::IntraNode | Scope::InterNode => match place.intra(t) {
                Some(intra) => intra == (scope == Scope::IntraNode),
                None => {
                    unplaced.push(t);
                    false
                }
            },
        };
        if keep {
            chosen.push(t);
        }
    }
    if let Some(first) = unplaced.first() {
        return Err(format!(
            "cannot tell whether {} of {} links cross nodes ({}; the results record no host for its ranks), so `{}` is not decided",
            unplaced.len(),
            links.len(),
            link_text(first),
            scope.key()
        ));
    }
    let features: Vec<&TransportLink> = links.iter().filter(|t| is_feature(&t.transport)).collect();
    for f in part.required_features() {
        if !features.iter().any(|t| class_satisfies(&t.transport, f)) {
            return Err(format!(
                "{f} required{} but not set up for {}: the captured NCCL lines have no {} (seen: {})",
                scoped(scope),
                ctx.what,
                if f == "NVLS" {
                    "`NVLS comm … headRank` line"
                } else {
                    "`CollNet … via COLLNET/…` line"
                },
                classes(links).join("+")
            ));
        }
    }
    if scope != Scope::All && chosen.is_empty() && part.required_features().is_empty() {
        return Err(format!(
            "no{} links in the captured lines of {} ({} links in all), so `{}` is not decided",
            scoped(scope),
            ctx.what,
            links.len(),
            scope.key()
        ));
    }
    let refused: Vec<&TransportLink> = chosen
        .iter()
        .copied()
        .chain(features.iter().copied())
        .filter(|t| !part.allows(&t.transport))
        .collect();
    if let Some(f) = finding(&refused) {
        return Err(format!(
            "transport {}{}, expected {part} ({}): {}{}",
            f.bad.join("+"),
            scoped(scope),
            ctx.what,
            f.first,
            more(f.count, chosen.len())
        ));
    }
    if let Some(want) = part.gdr {
        let net: Vec<&TransportLink> = chosen
            .iter()
            .copied()
            .filter(|t| t.transport.starts_with("NET") || t.transport == "CollNet")
            .collect();
        let wrong: Vec<&TransportLink> = net
            .iter()
            .copied()
            .filter(|t| t.detail.contains("GDRDMA") != want)
            .collect();
        if net.is_empty() {
            return Err(format!(
                "no network links{} in the captured lines of {}, so `gdr` is not decided",
                scoped(scope),
                ctx.what
            ));
        }
        if let Some(first) = wrong.first() {
            return Err(format!(
                "{}{} ({}): {}{}",
                if want {
                    "GPUDirect RDMA off"
                } else {
                    "GPUDirect RDMA on, expected off"
                },
                scoped(scope),
                ctx.what,
                link_text(first),
                more(wrong.len(), net.len())
            ));
        }
    }
    Ok(())
}

fn finding(bad: &[&TransportLink]) -> Option<Finding> {
    let first = bad.first()?;
    let mut seen: Vec<String> = bad.iter().map(|t| t.transport.clone()).collect();
    seen.sort_unstable();
    seen.dedup();
    Some(Finding {
        bad: seen,
        first: link_text(first),
        count: bad.len(),
    })
}

fn more(bad: usize, of: usize) -> String {
    if bad > 1 {
        format!(", and {} more of {of} links", bad - 1)
    } else {
        format!(" ({bad} of {of} links)")
    }
}

fn classes(links: &[TransportLink]) -> Vec<String> {
    let mut v: Vec<String> = links.iter().map(|t| t.transport.clone()).collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expand::{Job, expand};
    use crate::ingest::{LogInput, ingest};
    use crate::results::RankInfo;
    use crate::runner::transport::links_in;

    const LOG: &str = include_str!("../../tests/data/nccl-tests/h200x2/all_reduce.txt");

    /// A job with `expect` over `nodes` × 2 ranks, whose results hold the links of `lines`.
    fn graded(expect: &str, nodes: u32, lines: &str) -> (Status, String) {
        let yaml = format!(
            "version: 1\nname: t\nbackend: nccl\nlaunch: {{ nodes: {nodes}, ranks_per_node: 2 }}\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: {{ from: 8, to: 8G, factor: 2 }}\n    expect:\n      - transport: {expect}\n"
        );
        let plan = match crate::plan::parse_str("t.yaml", &yaml) {
            Ok(l) => l.plan,
            Err(r) => panic!("{}", r.short()),
        };
        let job: Job = expand(&plan).jobs.remove(0);
        let input = [LogInput {
            name: "ar.txt",
            bytes: LOG.as_bytes(),
        }];
        let mut result = ingest(&input, Some("a")).unwrap().results.jobs.remove(0);
        result.transports = links_in(lines);
        for l in lines.lines() {
            if let Some(crate::ingest::debug::DebugLine::EnvSet(k, v)) =
                crate::ingest::debug::parse_line(l)
            {
                result.env.insert(k, v);
            }
        }
        result.layout.nodes = nodes;
        result.layout.ranks = (0..nodes as u64 * 2)
            .map(|r| RankInfo {
                rank: r,
                host: format!("node0{}", r / 2 + 1),
                pid: None,
                device: Some((r % 2) as u32),
                gpu_uuid: None,
                pci_bus_id: None,
                group: None,
            })
            .collect();
        let ctx = Ctx {
            job: &job,
            result: &result,
            what: "all_reduce float sum".into(),
            baseline: Err("none".into()),
            env: None,
            baseline_env: None,
        };
        let Check::Transport(rule) = &job.expect[0].check else {
            panic!("not a transport criterion")
        };
        let v = evaluate(&ctx, &job.expect[0], rule, "t".into());
        (v.status, v.message)
    }

    use crate::plan::Check;

    const NVLS_219: &str = include_str!("../../tests/data/nccl-lines/nvls_2.19.3.txt");
    const NVLS_228: &str = include_str!("../../tests/data/nccl-lines/nvls_2.28.9.txt");
    const NO_NVLS: &str = include_str!("../../tests/data/nccl-lines/nvls_unavailable_2.23.4.txt");
    const COLLNET: &str = include_str!("../../tests/data/nccl-lines/collnet_ib_gdr_2.23.4.txt");
    const NO_GDR: &str = include_str!("../../tests/data/nccl-lines/net_ib_no_gdr_2.21.5.txt");
    const SHM: &str = include_str!("../../tests/data/nccl-lines/shm_2.19.3.txt");

    #[test]
    fn nvls_is_detected_in_2_19_and_2_28_and_its_absence_fails() {
        for lines in [NVLS_219, NVLS_228] {
            assert_eq!(graded("NVLS", 1, lines).0, Status::Pass, "{lines}");
            assert_eq!(graded("[P2P, NVLS]", 1, lines).0, Status::Pass);
        }
        let (s, m) = graded("NVLS", 1, NO_NVLS);
        assert_eq!(s, Status::Fail);
        assert!(m.contains("NVLS required but not set up"), "{m}");
        // Alternatives allow NVLS without requiring it.
        assert_eq!(graded("[P2P, NVLS]", 1, NO_NVLS).0, Status::Pass);
    }

    #[test]
    fn exclusions_refuse_a_class_and_name_the_forcing_setting() {
        let (s, m) = graded("{ not: [SHM, Socket] }", 1, SHM);
        assert_eq!(s, Status::Fail);
        assert!(
            m.starts_with("transport SHM, expected not SHM/NET/Socket"),
            "{m}"
        );
        assert!(m.contains("NCCL_P2P_DISABLE=1"), "{m}");
        assert_eq!(
            graded("{ not: [SHM, Socket] }", 1, NVLS_228).0,
            Status::Pass
        );
    }

    #[test]
    fn scopes_judge_links_by_where_their_ranks_run() {
        let rule = "{ intra_node: P2P, inter_node: { is: NET/IB, gdr: true } }";
        assert_eq!(graded(rule, 2, COLLNET).0, Status::Pass);
        let (s, m) = graded(rule, 2, NO_GDR);
        assert_eq!(s, Status::Fail);
        assert!(m.starts_with("GPUDirect RDMA off inter_node"), "{m}");
        assert!(m.contains("NET/IB/0"), "{m}");
        // The whole-job form would refuse the network links a multi-node job needs.
        assert_eq!(graded("P2P", 2, COLLNET).0, Status::Fail);
        assert_eq!(graded("SHARP", 2, COLLNET).0, Status::Pass);
        assert_eq!(graded("CollNet", 2, NO_GDR).0, Status::Fail);
    }

    #[test]
    fn links_between_unplaced_ranks_fail_closed() {
        // Ranks 4.. are not in the layout of a 2-node job of 4 ranks.
        let lines = "n1:1:2 [0] NCCL INFO Channel 00/0 : 4[0] -> 9[1] [send] via NET/IB/0/GDRDMA";
        let (s, m) = graded("{ inter_node: NET/IB }", 2, lines);
        assert_eq!(s, Status::Fail);
        assert!(
            m.starts_with("cannot tell whether 1 of 1 links cross nodes"),
            "{m}"
        );
    }
}
