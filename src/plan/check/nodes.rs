//! Node sets: the plan's `nodes:` (node list, exclusions, topology domains), each test's `over:`
//! and its `outlier` criterion.

use std::collections::HashMap;

use super::Checker;
use crate::nodeset::schedule::{MAX_RANDOM_ROUNDS, rounds};
use crate::nodeset::{Isolator, Over, Pairing, hostlist};
use crate::plan::diag::Diagnostic;
use crate::plan::loc::{Loc, Node, Scalar};
use crate::plan::model::*;
use crate::plan::raw::RawNodes;

const OVER_NAMES: &[&str] = &["all", "each-node", "pairs", "isolate", GPU_PAIRS];
/// Not a node set: `check/test.rs` turns it into a split axis before [`Checker::over`] is asked.
pub(super) const GPU_PAIRS: &str = "gpu-pairs";

impl Checker<'_> {
    /// A hostlist value, expanded; an error names the column inside it.
    fn hosts(&mut self, v: &Loc<String>, key: &str) -> Option<Vec<String>> {
        match hostlist::expand(&v.value) {
            Ok(h) => Some(h),
            Err(e) => {
                self.err(
                    Diagnostic::error(format!("`{key}`: {e}"), Some(v.pos))
                        .label("not a Slurm hostlist")
                        .help("e.g. node[01-32,40] or rack[1-2]-gpu[1-8]; names are letters, digits, `.`, `_`, `-`"),
                );
                None
            }
        }
    }

    pub(super) fn nodes(&mut self, raw: Option<RawNodes>) -> Nodes {
        let Some(raw) = raw else {
            return Nodes::default();
        };
        let source = match (&raw.hostlist, &raw.hostfile) {
            (Some(_), Some(f)) => {
                self.err(Diagnostic::error(
                    "`nodes` gives both `hostlist` and `hostfile`; keep one",
                    Some(f.pos),
                ));
                NodeSource::Allocation
            }
            (Some(h), None) => match self.hosts(h, "nodes.hostlist") {
                Some(list) => NodeSource::Hostlist(list),
                None => NodeSource::Allocation,
            },
            (None, Some(f)) => {
                if f.value.is_empty() || !self.no_control(f, "nodes.hostfile") {
                    if f.value.is_empty() {
                        self.err(Diagnostic::error("`nodes.hostfile` is empty", Some(f.pos)));
                    }
                    NodeSource::Allocation
                } else {
                    NodeSource::Hostfile(f.value.clone())
                }
            }
            (None, None) => NodeSource::Allocation,
        };
        let exclude = raw
            .exclude
            .as_ref()
            .and_then(|e| self.hosts(e, "nodes.exclude"))
            .unwrap_or_default();
        if let (NodeSource::Hostlist(list), Some(e)) = (&source, &raw.exclude) {
            let missing: Vec<&String> = exclude.iter().filter(|h| !list.contains(h)).collect();
            if !missing.is_empty() {
                self.warn(Diagnostic::warning(
                    format!(
                        "`nodes.exclude` names {} not in `nodes.hostlist`",
                        hostlist::compress(&missing)
                    ),
                    Some(e.pos),
                ));
            }
            if list.iter().all(|h| exclude.contains(h)) {
                self.err(Diagnostic::error(
                    "`nodes.exclude` leaves no node of `nodes.hostlist`",
                    Some(e.pos),
                ));
            }
        }
        let mut domains = Vec::new();
        let mut owner: HashMap<String, usize> = HashMap::new();
        for (k, d) in raw.domains.iter().flat_map(|d| d.value.iter()).enumerate() {
            let Some(hosts) = self.hosts(d, "nodes.domains") else {
                continue;
            };
            for h in &hosts {
                if let Some(first) = owner.insert(h.clone(), k) {
                    self.err(Diagnostic::error(
                        format!("`{h}` is in domain {} and in domain {}", first + 1, k + 1),
                        Some(d.pos),
                    ));
                }
                if let NodeSource::Hostlist(list) = &source
                    && !list.contains(h)
                {
                    self.err(Diagnostic::error(
                        format!("domain host `{h}` is not in `nodes.hostlist`"),
                        Some(d.pos),
                    ));
                }
            }
            domains.push(hosts);
        }
        Nodes {
            source,
            exclude,
            domains,
        }
    }

    /// A test's `over:`; `nodes` is the node count when the plan fixes it.
    pub(super) fn over(&mut self, v: &Loc<Node>, nodes: Option<usize>) -> Option<Over> {
        let over = match &v.value {
            Node::Scalar(Scalar::Str(s)) => match s.as_str() {
                "all" => Over::All,
                "each-node" => Over::EachNode,
                "pairs" => Over::Pairs(Pairing::All),
                "isolate" => Over::Isolate,
                other => {
                    self.unknown_name("`over` value", other, v.pos, OVER_NAMES);
                    return None;
                }
            },
            Node::Map(entries) => {
                let [(k, p)] = entries.as_slice() else {
                    self.err(
                        Diagnostic::error(
                            "`over` as a mapping takes one key, `pairs`",
                            Some(v.pos),
                        )
                        .help(
                            "e.g. over: { pairs: { rounds: 3, seed: 7 } } or over: { pairs: ring }",
                        ),
                    );
                    return None;
                };
                if k.value.text() != "pairs" {
                    self.unknown_name("`over` key", &k.value.text(), k.pos, &["pairs"]);
                    return None;
                }
                Over::Pairs(self.pairing(p)?)
            }
            other => {
                self.err(Diagnostic::error(
                    format!(
                        "`over` must be one of {} or {{pairs: …}}, found {}",
                        OVER_NAMES.join(", "),
                        other.kind()
                    ),
                    Some(v.pos),
                ));
                return None;
            }
        };
        if let Some(n) = nodes {
            let problem = match over {
                Over::Isolate => Isolator::new(n, &[]).err().map(|e| e.to_string()),
                _ => rounds(&over, n).err().map(|e| e.to_string()),
            };
            if let Some(p) = problem {
                self.err(Diagnostic::error(p, Some(v.pos)).label("on the plan's node list"));
                return None;
            }
        }
        Some(over)
    }

    fn pairing(&mut self, p: &Loc<Node>) -> Option<Pairing> {
        match &p.value {
            Node::Scalar(Scalar::Str(s)) if s == "ring" => Some(Pairing::Ring),
            Node::Scalar(Scalar::Str(s)) if s == "all" => Some(Pairing::All),
            Node::Map(entries) => {
                let mut rounds = None;
                let mut seed = 0u64;
                for (k, v) in entries {
                    match (k.value.text().as_str(), &v.value) {
                        ("rounds", Node::Scalar(Scalar::Int(i))) => {
                            rounds = self
                                .in_range(
                                    *i,
                                    v.pos,
                                    "pairs.rounds",
                                    "at least 1",
                                    1,
                                    MAX_RANDOM_ROUNDS.into(),
                                )
                                .map(|r| r as u32);
                            rounds?;
                        }
                        ("seed", Node::Scalar(Scalar::Int(i))) => {
                            seed = self.in_range(
                                *i,
                                v.pos,
                                "pairs.seed",
                                "zero or more",
                                0,
                                u64::MAX.into(),
                            )? as u64;
                        }
                        (key @ ("rounds" | "seed"), other) => {
                            self.err(Diagnostic::error(
                                format!(
                                    "`pairs.{key}` must be a whole number, found {}",
                                    other.kind()
                                ),
                                Some(v.pos),
                            ));
                            return None;
                        }
                        (other, _) => {
                            self.unknown_name("`pairs` key", other, k.pos, &["rounds", "seed"]);
                            return None;
                        }
                    }
                }
                match rounds {
                    Some(rounds) => Some(Pairing::Random { rounds, seed }),
                    None => {
                        self.err(
                            Diagnostic::error(
                                "`pairs` needs `rounds` for random pairings",
                                Some(p.pos),
                            )
                            .help("e.g. pairs: { rounds: 3, seed: 7 }"),
                        );
                        None
                    }
                }
            }
            other => {
                self.err(
                    Diagnostic::error(
                        format!(
                            "`pairs` must be `all`, `ring` or {{rounds, seed}}, found {}",
                            match other {
                                Node::Scalar(s) => format!("`{s}`"),
                                o => o.kind().to_string(),
                            }
                        ),
                        Some(p.pos),
                    )
                    .help("e.g. over: { pairs: ring } or over: { pairs: { rounds: 3 } }"),
                );
                None
            }
        }
    }
}
