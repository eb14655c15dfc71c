//! Slurm's `topology.conf` (tree plugin) as topology domains: each switch that lists `Nodes=`
//! is a leaf, and its nodes one domain. Read bounded; only those two fields are read.

/// The largest `topology.conf` read; a real one for thousands of nodes is a few hundred KiB.
pub const MAX_TOPOLOGY_BYTES: usize = 4 << 20;

/// One leaf switch: its name and its nodes as a hostlist, with the 1-based line it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    pub switch: String,
    pub nodes: String,
    pub line: u64,
}

/// The leaves of a `topology.conf` text, in file order. Comments (`#`) and lines without
/// `Nodes=` (spine switches) are skipped.
pub fn leaves(text: &str) -> Vec<Leaf> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("");
        let mut switch = None;
        let mut nodes = None;
        for field in line.split_whitespace() {
            let (k, v) = field.split_once('=').unwrap_or((field, ""));
            if k.eq_ignore_ascii_case("SwitchName") {
                switch = Some(v);
            } else if k.eq_ignore_ascii_case("Nodes") {
                nodes = Some(v);
            }
        }
        if let (Some(s), Some(n)) = (switch, nodes.filter(|n| !n.is_empty())) {
            out.push(Leaf {
                switch: s.to_string(),
                nodes: n.to_string(),
                line: i as u64 + 1,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_switches_are_domains_and_spines_are_not() {
        let text = "# fabric\nSwitchName=s0 Nodes=node[01-04] LinkSpeed=400\n\
                    SwitchName=s1 nodes=node[05-08]\nSwitchName=spine Switches=s[0-1]\n";
        let l = leaves(text);
        assert_eq!(
            l.iter()
                .map(|x| (x.switch.as_str(), x.nodes.as_str(), x.line))
                .collect::<Vec<_>>(),
            [("s0", "node[01-04]", 2), ("s1", "node[05-08]", 3)]
        );
    }
}
