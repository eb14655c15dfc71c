//! Split groups over the plan's rank layout, and whether each stays inside a node.

use std::sync::Arc;

use serde::Serialize;

use crate::split::Split;

/// Whether a group's traffic can stay on NVLink (one node) or must cross the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    IntraNode,
    CrossNode,
}

/// One split group: the plan ranks that share a color, and the nodes they sit on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Group {
    pub color: u64,
    pub ranks: Vec<u64>,
    pub nodes: Vec<u64>,
    pub scope: Scope,
}

/// Groups of `split` over `n` ranks with `per_node` ranks per node (ranks numbered node by node).
pub fn groups(split: Option<&Split>, n: u64, per_node: u64) -> Arc<Vec<Group>> {
    let per_node = per_node.max(1);
    let map = match split {
        Some(s) => s.groups(n),
        None => std::iter::once((0, (0..n).collect())).collect(),
    };
    Arc::new(
        map.into_iter()
            .map(|(color, ranks)| {
                let mut nodes: Vec<u64> = ranks.iter().map(|r| r / per_node).collect();
                nodes.dedup();
                let scope = if nodes.len() <= 1 {
                    Scope::IntraNode
                } else {
                    Scope::CrossNode
                };
                Group {
                    color,
                    ranks,
                    nodes,
                    scope,
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn div_mod_or_scopes_on_two_nodes_of_eight() {
        let div = groups(Some(&Split::parse("DIV 8").unwrap()), 16, 8);
        assert_eq!(div.len(), 2);
        assert!(div.iter().all(|g| g.scope == Scope::IntraNode));
        assert_eq!(div[1].nodes, vec![1]);
        let m = groups(Some(&Split::parse("MOD 8").unwrap()), 16, 8);
        assert_eq!(m.len(), 8);
        assert!(
            m.iter()
                .all(|g| g.scope == Scope::CrossNode && g.nodes == vec![0, 1])
        );
        assert_eq!(m[3].ranks, vec![3, 11]);
        let pairs = groups(Some(&Split::parse("OR 1").unwrap()), 16, 8);
        assert_eq!(pairs.len(), 8);
        assert_eq!(pairs[5].ranks, vec![10, 11]);
        let all = groups(None, 16, 8);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].scope, Scope::CrossNode);
    }
}
