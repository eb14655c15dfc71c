//! The fleet consistency check: every node's configuration (a probe snapshot's
//! [`inventory`](crate::probe::inventory)) against the fleet's majority and against what the
//! plan declares. A node that differs would only fail its sets, and blame its partners with
//! it: it gets the verdict `config-mismatch`, naming the field, its value and the fleet's
//! (`eth0 mtu 1400, fleet 1500`), and is left out of the bandwidth rounds.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::probe::inventory::Inventory;

/// One field of one node that differs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Mismatch {
    pub host: String,
    pub field: String,
    pub value: String,
    /// The value it should have: the fleet majority's, or the plan's.
    pub expected: String,
    /// `fleet` or `plan`.
    pub by: String,
}

impl Mismatch {
    /// `eth0 mtu 1400, fleet 1500`, `gpus 4, plan 8`.
    pub fn line(&self) -> String {
        format!(
            "{} {}, {} {}",
            self.field, self.value, self.by, self.expected
        )
    }
}

/// What the plan declares, as (key, value) in the inventory's words: an exact field (`gpus`,
/// `nics`, `peermem`) or the last word of many (`mtu` for every `IFACE mtu`, `rate`, `pcie`).
pub type Declared = Vec<(String, String)>;

fn declared_for<'d>(declared: &'d Declared, field: &str) -> Option<&'d str> {
    declared
        .iter()
        .find(|(k, _)| field == k || field.ends_with(&format!(" {k}")))
        .map(|(_, v)| v.as_str())
}

/// Every node's mismatches: a value the plan declares otherwise, else one that differs from
/// a strict majority of the nodes that have the field (a tie names nobody).
pub fn compare(nodes: &[(String, Inventory)], declared: &Declared) -> Vec<Mismatch> {
    let mut out = Vec::new();
    for (field, values) in by_field(nodes) {
        let have: usize = values.values().map(Vec::len).sum();
        let majority = values
            .iter()
            .find(|(_, hosts)| hosts.len() * 2 > have)
            .map(|(v, _)| v.clone());
        for (host, inv) in nodes {
            let Some(value) = inv.get(&field) else {
                continue;
            };
            let (expected, by) = match (declared_for(declared, &field), &majority) {
                (Some(d), _) => (d.to_string(), "plan"),
                (None, Some(m)) => (m.clone(), "fleet"),
                (None, None) => continue,
            };
            if *value != expected {
                out.push(Mismatch {
                    host: host.clone(),
                    field: field.clone(),
                    value: value.clone(),
                    expected,
                    by: by.into(),
                });
            }
        }
    }
    out.sort_by(|a, b| (&a.host, &a.field).cmp(&(&b.host, &b.field)));
    out
}

/// One row of the inventory table: a field whose value differs somewhere, each value with
/// the nodes that have it (most nodes first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InventoryRow {
    pub field: String,
    pub values: Vec<(String, Vec<String>)>,
}

/// The fields that differ anywhere, for the report.
pub fn differing(nodes: &[(String, Inventory)]) -> Vec<InventoryRow> {
    let mut rows = every_field(nodes);
    rows.retain(|r| r.values.len() > 1);
    rows
}

/// Every field, each value with its nodes, the most common value first: the acceptance
/// cover's inventory.
pub fn every_field(nodes: &[(String, Inventory)]) -> Vec<InventoryRow> {
    by_field(nodes)
        .into_iter()
        .map(|(field, v)| {
            let mut values: Vec<(String, Vec<String>)> = v.into_iter().collect();
            values.sort_by_key(|(_, h)| std::cmp::Reverse(h.len()));
            InventoryRow { field, values }
        })
        .collect()
}

/// Field → value → hosts.
fn by_field(nodes: &[(String, Inventory)]) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let mut m: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for (host, inv) in nodes {
        for (f, v) in inv {
            m.entry(f.clone())
                .or_default()
                .entry(v.clone())
                .or_default()
                .push(host.clone());
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(host: &str, mtu: &str, gpus: &str) -> (String, Inventory) {
        let inv = [("eth0 mtu", mtu), ("gpus", gpus), ("kernel", "6.8")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        (host.to_string(), inv)
    }

    #[test]
    fn a_node_apart_from_the_majority_is_named_with_both_values() {
        let nodes: Vec<_> = (1..=8)
            .map(|i| {
                node(
                    &format!("node{i:02}"),
                    if i == 5 { "1400" } else { "1500" },
                    "8",
                )
            })
            .collect();
        let m = compare(&nodes, &Declared::new());
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!(m[0].host, "node05");
        assert_eq!(m[0].line(), "eth0 mtu 1400, fleet 1500");
        let t = differing(&nodes);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].field, "eth0 mtu");
        assert_eq!(t[0].values[0].1.len(), 7);
        assert_eq!(
            t[0].values[1],
            ("1400".to_string(), vec!["node05".to_string()])
        );
    }

    #[test]
    fn the_plan_outranks_the_majority_and_a_tie_names_nobody() {
        let nodes = vec![
            node("a", "1500", "8"),
            node("b", "1500", "4"),
            node("c", "9000", "8"),
            node("d", "9000", "4"),
        ];
        assert!(compare(&nodes, &Declared::new()).is_empty());
        let declared = vec![("mtu".to_string(), "9000".to_string())];
        let m = compare(&nodes, &declared);
        let lines: Vec<String> = m
            .iter()
            .map(|m| format!("{}: {}", m.host, m.line()))
            .collect();
        assert_eq!(
            lines,
            ["a: eth0 mtu 1500, plan 9000", "b: eth0 mtu 1500, plan 9000"]
        );
    }
}
