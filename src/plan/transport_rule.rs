//! What a `transport:` criterion asks of NCCL's connections: which classes are allowed
//! (alternatives), which are refused (exclusions), per scope (links inside a node, links between
//! nodes), and whether network links must use GPUDirect RDMA.
//!
//! NVLS and CollNet are not peer transports: NCCL sets them up beside its rings and trees (NVLink
//! SHARP multicast, in-network reduction), whose links still go over P2P or NET. So a rule that
//! names only them asks that they be set up; one that names them beside peer classes only allows
//! them.

use std::fmt;

use serde::Serialize;

/// Transport classes NCCL reports in its connection lines.
pub const TRANSPORTS: &[&str] = &[
    "P2P",
    "SHM",
    "NET",
    "NET/IB",
    "NET/Socket",
    "NVLS",
    "CollNet",
];

/// Short names users write for classes: `Socket`, `IB`, `SHARP`.
pub const ALIASES: &[(&str, &str)] = &[
    ("Socket", "NET/Socket"),
    ("IB", "NET/IB"),
    ("SHARP", "CollNet"),
];

/// Classes that are NCCL features set up beside the peer links rather than peer links.
pub const FEATURES: &[&str] = &["NVLS", "CollNet"];

/// The canonical class for a name as written (case-insensitive, aliases resolved).
pub fn canonical_class(name: &str) -> Option<&'static str> {
    TRANSPORTS
        .iter()
        .find(|t| t.eq_ignore_ascii_case(name))
        .copied()
        .or_else(|| {
            ALIASES
                .iter()
                .find(|(a, _)| a.eq_ignore_ascii_case(name))
                .map(|(_, c)| *c)
        })
}

pub fn is_feature(class: &str) -> bool {
    FEATURES.iter().any(|f| f.eq_ignore_ascii_case(class))
}

/// Whether a seen class satisfies the expected one; `NET` accepts every network plugin.
pub fn class_satisfies(seen: &str, expected: &str) -> bool {
    seen.eq_ignore_ascii_case(expected)
        || (expected.eq_ignore_ascii_case("NET")
            && seen.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("NET")))
}

/// Which links a part of the rule speaks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Every link of the job.
    All,
    /// Links whose two ranks run on the same node.
    IntraNode,
    /// Links whose two ranks run on different nodes.
    InterNode,
}

impl Scope {
    pub fn key(self) -> &'static str {
        match self {
            Scope::All => "transport",
            Scope::IntraNode => "intra_node",
            Scope::InterNode => "inter_node",
        }
    }
}

/// The classes allowed and refused in one scope.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClassRule {
    /// Alternatives: every peer link must use one of these (empty = any).
    pub is: Vec<String>,
    /// Exclusions: no link may use one of these.
    pub not: Vec<String>,
    /// `Some(true)`: network links must use GPUDirect RDMA (`…/GDRDMA`); `Some(false)`: must
    /// not; `None`: either.
    pub gdr: Option<bool>,
}

impl ClassRule {
    /// The peer classes among the alternatives (NVLS and CollNet left out).
    pub fn peer_classes(&self) -> Vec<&str> {
        self.is
            .iter()
            .map(String::as_str)
            .filter(|c| !is_feature(c))
            .collect()
    }

    /// Features this rule requires: named as the only alternatives.
    pub fn required_features(&self) -> Vec<&str> {
        if self.peer_classes().is_empty() {
            self.is.iter().map(String::as_str).collect()
        } else {
            Vec::new()
        }
    }

    /// Whether a link of class `seen` is acceptable here (GPUDirect aside).
    pub fn allows(&self, seen: &str) -> bool {
        if self.not.iter().any(|n| class_satisfies(seen, n)) {
            return false;
        }
        if is_feature(seen) {
            return true;
        }
        let peers = self.peer_classes();
        peers.is_empty() || peers.iter().any(|e| class_satisfies(seen, e))
    }

    fn is_empty(&self) -> bool {
        self.is.is_empty() && self.not.is_empty() && self.gdr.is_none()
    }
}

impl fmt::Display for ClassRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if !self.is.is_empty() {
            parts.push(self.is.join(" or "));
        }
        if !self.not.is_empty() {
            parts.push(format!("not {}", self.not.join("/")));
        }
        match self.gdr {
            Some(true) => parts.push("with GDRDMA".into()),
            Some(false) => parts.push("without GDRDMA".into()),
            None => {}
        }
        f.write_str(&parts.join(", "))
    }
}

/// A whole `transport:` criterion.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TransportRule {
    pub all: ClassRule,
    pub intra_node: Option<ClassRule>,
    pub inter_node: Option<ClassRule>,
}

impl TransportRule {
    /// `transport: P2P` as it always was.
    pub fn one(class: &str) -> Self {
        TransportRule {
            all: ClassRule {
                is: vec![class.to_string()],
                ..ClassRule::default()
            },
            ..TransportRule::default()
        }
    }

    /// The parts of the rule with the links they speak about.
    pub fn parts(&self) -> Vec<(Scope, &ClassRule)> {
        let mut v = Vec::new();
        if !self.all.is_empty() {
            v.push((Scope::All, &self.all));
        }
        if let Some(r) = &self.intra_node {
            v.push((Scope::IntraNode, r));
        }
        if let Some(r) = &self.inter_node {
            v.push((Scope::InterNode, r));
        }
        v
    }

    /// Whether a class is acceptable in at least one scope: what evidence uses to call a seen
    /// transport unexpected without knowing where each link runs.
    pub fn allows_somewhere(&self, seen: &str) -> bool {
        self.all.allows(seen)
            && (self.intra_node.is_none() && self.inter_node.is_none()
                || self.intra_node.as_ref().is_some_and(|r| r.allows(seen))
                || self.inter_node.as_ref().is_some_and(|r| r.allows(seen)))
    }
}

impl fmt::Display for TransportRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .parts()
            .into_iter()
            .map(|(s, r)| match s {
                Scope::All => r.to_string(),
                _ => format!("{} {r}", s.key()),
            })
            .collect();
        f.write_str(&parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternatives_exclusions_and_features() {
        let r = ClassRule {
            is: vec!["P2P".into(), "NVLS".into()],
            ..ClassRule::default()
        };
        assert!(r.allows("P2P") && r.allows("NVLS") && !r.allows("SHM"));
        assert!(r.required_features().is_empty());
        let nvls = ClassRule {
            is: vec!["NVLS".into()],
            ..ClassRule::default()
        };
        assert_eq!(nvls.required_features(), ["NVLS"]);
        assert!(nvls.allows("P2P"), "NVLS alone does not restrict the rings");
        let not = ClassRule {
            not: vec!["SHM".into(), "NET/Socket".into()],
            ..ClassRule::default()
        };
        assert!(not.allows("P2P") && not.allows("NET/IB") && !not.allows("NET/Socket"));
        assert_eq!(canonical_class("socket"), Some("NET/Socket"));
        assert_eq!(canonical_class("sharp"), Some("CollNet"));
        assert_eq!(canonical_class("p2p"), Some("P2P"));
        assert_eq!(canonical_class("PCI"), None);
    }
}
