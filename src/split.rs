//! `NCCL_TESTS_SPLIT` expressions and the color rule that forms split groups.
//!
//! nccl-tests applies the rule per MPI process; baton applies it to the plan rank (the global rank
//! over every process and GPU, numbered node by node), which is the same number whenever each
//! process drives one GPU and stays meaningful when one process drives several.

use std::collections::BTreeMap;
use std::fmt;

/// The operator of a split expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SplitOp {
    And,
    Or,
    Mod,
    Div,
    /// One round of `over: gpu-pairs`: round `value` (1-based) of the `rounds` circle-method
    /// rounds that pair every GPU of a node with every other, each node alike. Written
    /// `PAIRS value/rounds`; a node has `rounds + 1` ranks.
    Pairs {
        rounds: u64,
    },
}

/// A parsed split such as `DIV 8`: ranks with equal `color(rank)` form one group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Split {
    pub op: SplitOp,
    pub value: u64,
}

/// Why a split expression was refused (nccl-tests would silently fall back to one group).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    #[error(
        "split `{0}` has no operator; expected AND, OR, MOD or DIV (or & | % /) and a number, e.g. \"DIV 8\""
    )]
    UnknownOperator(String),
    #[error(
        "split `{0}` has no valid number after its operator (decimal, 0x hex, 0b binary or 0 octal)"
    )]
    BadValue(String),
    #[error("split `{0}` divides by zero")]
    DivideByZero(String),
    #[error(
        "split `{0}` is not a round of GPU pairs: `PAIRS r/R` needs 1 <= r <= R and R odd (R + 1 GPUs per node)"
    )]
    BadPairs(String),
}

impl Split {
    /// Parses `NCCL_TESTS_SPLIT` syntax: operator word or symbol (case-insensitive), optional
    /// blanks, then a number read like C's `strtoul` with base 0 (so a leading `0` means octal,
    /// exactly as nccl-tests reads it), plus `0b` binary.
    pub fn parse(text: &str) -> Result<Split, SplitError> {
        let t = text.trim();
        let lower = t.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix("pairs") {
            let bad = || SplitError::BadPairs(t.to_string());
            let (r, of) = rest.trim().split_once('/').ok_or_else(bad)?;
            let (value, rounds) = (
                r.trim().parse::<u64>().map_err(|_| bad())?,
                of.trim().parse::<u64>().map_err(|_| bad())?,
            );
            if value == 0 || value > rounds || rounds.is_multiple_of(2) {
                return Err(bad());
            }
            return Ok(Split {
                op: SplitOp::Pairs { rounds },
                value,
            });
        }
        let (op, rest) = [
            ("and", SplitOp::And),
            ("&", SplitOp::And),
            ("or", SplitOp::Or),
            ("|", SplitOp::Or),
            ("mod", SplitOp::Mod),
            ("%", SplitOp::Mod),
            ("div", SplitOp::Div),
            ("/", SplitOp::Div),
        ]
        .iter()
        .find_map(|(p, op)| lower.strip_prefix(p).map(|r| (*op, r)))
        .ok_or_else(|| SplitError::UnknownOperator(t.to_string()))?;
        let value =
            parse_c_uint(rest.trim_start()).ok_or_else(|| SplitError::BadValue(t.to_string()))?;
        if value == 0 && matches!(op, SplitOp::Mod | SplitOp::Div) {
            return Err(SplitError::DivideByZero(t.to_string()));
        }
        Ok(Split { op, value })
    }

    pub fn color(&self, rank: u64) -> u64 {
        match self.op {
            SplitOp::And => rank & self.value,
            SplitOp::Or => rank | self.value,
            SplitOp::Mod => rank % self.value,
            SplitOp::Div => rank / self.value,
            SplitOp::Pairs { rounds } => {
                let gpus = rounds + 1;
                let (node, local) = (rank / gpus, rank % gpus);
                node * gpus / 2 + pair_index(gpus, self.value - 1, local)
            }
        }
    }

    /// The `over: gpu-pairs` rounds for `gpus` ranks per node (even, at least 2).
    pub fn gpu_pair_rounds(gpus: u64) -> Vec<Split> {
        let rounds = gpus.saturating_sub(1);
        (1..=rounds)
            .map(|value| Split {
                op: SplitOp::Pairs { rounds },
                value,
            })
            .collect()
    }

    /// Groups of `0..nranks` keyed by color, members ascending (so group rank order = plan rank
    /// order, as `MPI_Comm_split` with key = rank gives).
    pub fn groups(&self, nranks: u64) -> BTreeMap<u64, Vec<u64>> {
        let mut g: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for r in 0..nranks {
            g.entry(self.color(r)).or_default().push(r);
        }
        g
    }
}

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            SplitOp::And => "AND",
            SplitOp::Or => "OR",
            SplitOp::Mod => "MOD",
            SplitOp::Div => "DIV",
            SplitOp::Pairs { rounds } => return write!(f, "PAIRS {}/{rounds}", self.value),
        };
        write!(f, "{op} {}", self.value)
    }
}

/// Which pair of round `round` (0-based) local rank `local` is in, among `gpus` (even) ranks,
/// by the circle method: `gpus − 1` stays put, the others turn; pair 0 is the fixed one's, pair
/// k ≥ 1 joins the two ranks k steps either side of the round's own.
fn pair_index(gpus: u64, round: u64, local: u64) -> u64 {
    let turning = gpus - 1;
    if local == turning || local == round {
        return 0;
    }
    let d = (local + turning - round) % turning;
    d.min(turning - d)
}

fn parse_c_uint(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let lower = s.to_ascii_lowercase();
    let (digits, radix) = if let Some(r) = lower.strip_prefix("0x") {
        (r, 16)
    } else if let Some(r) = lower.strip_prefix("0b") {
        (r, 2)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (&lower[1..], 8)
    } else {
        (lower.as_str(), 10)
    };
    u64::from_str_radix(digits.trim_end(), radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_worked_example_rank_11() {
        assert_eq!(Split::parse("DIV 8").unwrap().color(11), 1);
        assert_eq!(Split::parse("MOD 8").unwrap().color(11), 3);
        assert_eq!(Split::parse("OR 1").unwrap().color(11), 11);
        assert_eq!(Split::parse("AND 7").unwrap().color(11), 3);
    }

    #[test]
    fn syntax_like_nccl_tests() {
        assert_eq!(
            Split::parse("div 8").unwrap(),
            Split {
                op: SplitOp::Div,
                value: 8
            }
        );
        assert_eq!(
            Split::parse("/8").unwrap(),
            Split {
                op: SplitOp::Div,
                value: 8
            }
        );
        assert_eq!(Split::parse("%8").unwrap().op, SplitOp::Mod);
        assert_eq!(
            Split::parse("&0x7").unwrap(),
            Split {
                op: SplitOp::And,
                value: 7
            }
        );
        assert_eq!(Split::parse("| 1").unwrap().op, SplitOp::Or);
        assert_eq!(Split::parse("AND 0b111").unwrap().value, 7);
        assert_eq!(
            Split::parse("MOD 010").unwrap().value,
            8,
            "leading zero is octal, like strtoul"
        );
        assert_eq!(
            Split::parse("DIV 0").unwrap_err(),
            SplitError::DivideByZero("DIV 0".into())
        );
        assert!(matches!(
            Split::parse("XOR 1"),
            Err(SplitError::UnknownOperator(_))
        ));
        assert!(matches!(Split::parse("DIV"), Err(SplitError::BadValue(_))));
        assert!(matches!(
            Split::parse("DIV 8x"),
            Err(SplitError::BadValue(_))
        ));
        assert!(matches!(
            Split::parse("MOD 09"),
            Err(SplitError::BadValue(_))
        ));
    }

    #[test]
    fn gpu_pairs_rounds_meet_every_pair_once_on_every_node() {
        for gpus in [2u64, 4, 8, 16] {
            let rounds = Split::gpu_pair_rounds(gpus);
            assert_eq!(rounds.len() as u64, gpus - 1);
            let mut met = std::collections::BTreeSet::new();
            for split in &rounds {
                assert_eq!(Split::parse(&split.to_string()).unwrap(), *split);
                let g = split.groups(gpus * 3);
                assert_eq!(g.len() as u64, gpus * 3 / 2, "{split}");
                for members in g.values() {
                    assert_eq!(members.len(), 2, "{split}: {members:?}");
                    assert_eq!(
                        members[0] / gpus,
                        members[1] / gpus,
                        "a pair stays in its node"
                    );
                    assert!(met.insert((members[0], members[1])), "{split}: met twice");
                }
            }
            assert_eq!(met.len() as u64, 3 * gpus * (gpus - 1) / 2);
        }
        assert_eq!(Split::gpu_pair_rounds(8)[2].to_string(), "PAIRS 3/7");
        for bad in [
            "PAIRS 0/7",
            "PAIRS 8/7",
            "PAIRS 1/6",
            "PAIRS 1",
            "PAIRS a/7",
        ] {
            assert!(
                matches!(Split::parse(bad), Err(SplitError::BadPairs(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn groups_for_16_ranks() {
        let g = Split::parse("DIV 8").unwrap().groups(16);
        assert_eq!(g.len(), 2);
        assert_eq!(g[&1], (8..16).collect::<Vec<_>>());
        let g = Split::parse("MOD 8").unwrap().groups(16);
        assert_eq!(g.len(), 8);
        assert_eq!(g[&3], vec![3, 11]);
        let g = Split::parse("OR 1").unwrap().groups(8);
        assert_eq!(g.keys().copied().collect::<Vec<_>>(), vec![1, 3, 5, 7]);
        assert_eq!(g[&7], vec![6, 7]);
    }
}
