//! `transport:` criteria: a class, alternatives, exclusions, scopes and GPUDirect RDMA, and the
//! checks that make sure the captured NCCL lines could ever decide them.

use super::Checker;
use super::criterion::CriterionCtx;
use crate::plan::diag::Diagnostic;
use crate::plan::loc::{Loc, Node, Scalar};
use crate::plan::model::*;
use crate::plan::transport_rule::{
    ALIASES, ClassRule, FEATURES, Scope, TRANSPORTS, canonical_class, class_satisfies,
};

/// How many nodes each job of a test spans, when the plan fixes it: (fewest, most).
fn nodes_per_job(ctx: &CriterionCtx<'_>) -> Option<(u64, u64)> {
    match ctx.over? {
        Over::EachNode => Some((1, 1)),
        Over::Pairs(_) => Some((2, 2)),
        Over::Isolate => None,
        Over::All => match ctx.node_count {
            Some(n) => Some((n as u64, n as u64)),
            None => Some((ctx.launch.nodes as u64, ctx.launch.nodes as u64)),
        },
    }
}

impl Checker<'_> {
    pub(super) fn transport_rule(
        &mut self,
        v: &Loc<Node>,
        ctx: &CriterionCtx<'_>,
    ) -> Option<TransportRule> {
        if ctx.backend == Backend::Mpi {
            self.err(Diagnostic::error(
                "`transport` needs the nccl backend; MPI reports no NCCL transports",
                Some(v.pos),
            ));
            return None;
        }
        let errors_before = self.errors.len();
        let mut rule = TransportRule::default();
        match &v.value {
            Node::Map(entries) => {
                for (k, val) in entries {
                    match k.value.text().as_str() {
                        "is" => rule.all.is = self.class_names(val, "transport.is"),
                        "not" => rule.all.not = self.class_names(val, "transport.not"),
                        "gdr" => rule.all.gdr = self.gdr(val, "transport.gdr"),
                        "intra_node" => rule.intra_node = self.scope_rule(val, "intra_node"),
                        "inter_node" => rule.inter_node = self.scope_rule(val, "inter_node"),
                        other => self.unknown_name(
                            "transport key",
                            other,
                            k.pos,
                            &["is", "not", "gdr", "intra_node", "inter_node"],
                        ),
                    }
                }
            }
            _ => rule.all.is = self.class_names(v, "transport"),
        }
        if self.errors.len() > errors_before {
            return None;
        }
        if rule.parts().is_empty() {
            self.err(
                Diagnostic::error("`transport` asks nothing", Some(v.pos))
                    .help("give a class (P2P), alternatives ([P2P, NVLS]), `not:`, `gdr:` or a scope (`intra_node:`, `inter_node:`)"),
            );
            return None;
        }
        for (scope, part) in rule.parts() {
            self.consistent(part, scope, v, ctx);
        }
        self.decidable(&rule, v, ctx);
        (self.errors.len() == errors_before).then_some(rule)
    }

    fn scope_rule(&mut self, v: &Loc<Node>, key: &str) -> Option<ClassRule> {
        let mut r = ClassRule::default();
        match &v.value {
            Node::Map(entries) => {
                for (k, val) in entries {
                    match k.value.text().as_str() {
                        "is" => r.is = self.class_names(val, &format!("{key}.is")),
                        "not" => r.not = self.class_names(val, &format!("{key}.not")),
                        "gdr" => r.gdr = self.gdr(val, &format!("{key}.gdr")),
                        other => {
                            self.unknown_name(
                                &format!("{key} key"),
                                other,
                                k.pos,
                                &["is", "not", "gdr"],
                            );
                        }
                    }
                }
            }
            _ => r.is = self.class_names(v, key),
        }
        Some(r)
    }

    fn gdr(&mut self, v: &Loc<Node>, key: &str) -> Option<bool> {
        match &v.value {
            Node::Scalar(Scalar::Bool(b)) => Some(*b),
            other => {
                self.err(Diagnostic::error(
                    format!("`{key}` must be true or false, found {}", other.kind()),
                    Some(v.pos),
                ));
                None
            }
        }
    }

    /// Names (one or a list) resolved to their classes; unknown ones reported.
    fn class_names(&mut self, v: &Loc<Node>, key: &str) -> Vec<String> {
        let valid: Vec<&str> = TRANSPORTS
            .iter()
            .copied()
            .chain(ALIASES.iter().map(|a| a.0))
            .collect();
        let mut out: Vec<String> = Vec::new();
        for name in self.string_list(v, key) {
            match canonical_class(&name.value) {
                Some(c) if !out.iter().any(|o| o == c) => out.push(c.to_string()),
                Some(_) => {}
                None => self.unknown_name("transport", &name.value, name.pos, &valid),
            }
        }
        out
    }

    /// A part whose alternatives and exclusions contradict each other, or whose GPUDirect
    /// requirement no allowed class could meet.
    fn consistent(&mut self, r: &ClassRule, scope: Scope, v: &Loc<Node>, ctx: &CriterionCtx<'_>) {
        let key = scope.key();
        if let Some(c) =
            r.is.iter()
                .find(|c| r.not.iter().any(|n| class_satisfies(c, n)))
        {
            self.err(Diagnostic::error(
                format!("test `{}`: `{key}` both allows and refuses {c}", ctx.test),
                Some(v.pos),
            ));
        }
        let peers = r.peer_classes();
        if r.gdr.is_some() && !peers.is_empty() && !peers.iter().any(|c| c.starts_with("NET")) {
            self.err(
                Diagnostic::error(
                    format!(
                        "test `{}`: `{key}` sets `gdr` but allows only {}: GPUDirect RDMA is a property of NET links",
                        ctx.test,
                        peers.join(", ")
                    ),
                    Some(v.pos),
                )
                .label("never decided")
                .help("add NET/IB to the allowed classes, or drop `gdr`"),
            );
        }
        if scope == Scope::IntraNode
            && r.is.iter().any(|c| c == "CollNet")
            && r.peer_classes().is_empty()
        {
            self.err(Diagnostic::error(
                format!(
                    "test `{}`: `intra_node` requires CollNet, which reduces in the network between nodes",
                    ctx.test
                ),
                Some(v.pos),
            ));
        }
    }

    /// A criterion the captured lines could never decide is an error now, not a failure later.
    fn decidable(&mut self, rule: &TransportRule, v: &Loc<Node>, ctx: &CriterionCtx<'_>) {
        let test = ctx.test;
        let debug_file = std::iter::once(ctx.env)
            .chain(ctx.env_axis.iter())
            .find_map(|e| e.get("NCCL_DEBUG_FILE"));
        if let Some(f) = debug_file {
            self.err(
                Diagnostic::error(
                    format!(
                        "test `{test}`: `transport` is never decided: NCCL_DEBUG_FILE={f} sends NCCL's connection lines to a file baton does not read, so capture is off"
                    ),
                    Some(v.pos),
                )
                .label("capture off")
                .help("remove NCCL_DEBUG_FILE from the env, or grade its file with `baton ingest` instead"),
            );
        }
        let Some((fewest, most)) = nodes_per_job(ctx) else {
            return;
        };
        if rule.inter_node.is_some() && most <= 1 {
            self.err(
                Diagnostic::error(
                    format!(
                        "test `{test}`: `inter_node` is never decided: every job of this test runs on one node, so no link crosses nodes"
                    ),
                    Some(v.pos),
                )
                .label("single-node jobs")
                .help("use `intra_node`, or run the test over more nodes (`launch.nodes`, `over: pairs`)"),
            );
        }
        let one_rank_per_node = ctx.launch.ranks_per_node_total() == Some(1);
        if rule.intra_node.is_some() && one_rank_per_node && fewest >= 1 {
            self.err(
                Diagnostic::error(
                    format!(
                        "test `{test}`: `intra_node` is never decided: each node runs one rank, so no link stays inside a node"
                    ),
                    Some(v.pos),
                )
                .label("one rank per node")
                .help("raise `launch.ranks_per_node`, or use `inter_node`"),
            );
        }
        let needs_nvls = rule
            .parts()
            .iter()
            .any(|(_, p)| p.required_features().contains(&FEATURES[0]));
        if needs_nvls && one_rank_per_node && most <= 1 {
            self.err(Diagnostic::error(
                format!("test `{test}`: NVLS needs several GPUs on one NVLink domain; each job runs one rank"),
                Some(v.pos),
            ));
        }
    }
}
