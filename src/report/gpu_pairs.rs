//! The GPU×GPU matrices of `over: gpu-pairs` tests: per node, each GPU pair's busbw at the
//! largest size, from the split groups of the test's rounds (`PAIRS r/R` jobs). The NVLink check
//! nvbandwidth gives, through NCCL: a weak GPU is a red row, a weak link one red cell pair.

use std::collections::BTreeMap;

use super::pair_matrix::{Outcome, PairCell, pair_matrix_svg};
use crate::grade::{Grade, JobVerdict};
use crate::results::{JobResult, Placement};
use crate::split::{Split, SplitOp};

/// One node's matrix of one test.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuMatrix {
    pub test: String,
    pub host: String,
    /// Axis labels: `GPU0`… by CUDA device, `rank 3`… without one (host backend).
    pub gpus: Vec<String>,
    pub cells: Vec<PairCell>,
    /// The size whose busbw the cells hold.
    pub size: u64,
}

impl GpuMatrix {
    pub fn svg(&self) -> Option<String> {
        pair_matrix_svg(&self.gpus, &self.cells, "GB/s")
    }

    /// The slowest pair's labels and busbw, for the caption.
    pub fn slowest(&self) -> Option<(&str, &str, f64)> {
        self.cells
            .iter()
            .filter_map(|c| Some((c, c.value?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(c, v)| (self.gpus[c.a].as_str(), self.gpus[c.b].as_str(), v))
    }
}

/// File name of the `k`-th GPU matrix beside `report.md`.
pub fn file(k: usize) -> String {
    format!("charts/gpu-pairs-{k:02}.svg")
}

fn is_round(j: &JobVerdict) -> Option<&JobResult> {
    let r = &j.source.as_ref()?.result;
    let split = Split::parse(r.split.as_deref()?).ok()?;
    matches!(split.op, SplitOp::Pairs { .. }).then_some(r)
}

/// Every node's matrix of every `gpu-pairs` test, in test then host order.
pub fn matrices(g: &Grade) -> Vec<GpuMatrix> {
    // test → (size, host → node).
    let mut by_test: BTreeMap<&str, (u64, BTreeMap<&str, Node>)> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for r in g.jobs.iter().filter_map(is_round) {
        if !order.contains(&r.test.as_str()) {
            order.push(&r.test);
        }
        let entry = by_test.entry(&r.test).or_default();
        // The largest size any repeat reached; its out-of-place groups, median over repeats.
        let Some(size) = r
            .repeats
            .iter()
            .flat_map(|rep| rep.rows.iter().map(|row| row.requested))
            .max()
        else {
            continue;
        };
        entry.0 = entry.0.max(size);
        let mut per_color: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
        let mut wrong: BTreeMap<u64, bool> = BTreeMap::new();
        for rep in &r.repeats {
            for row in rep.rows.iter().filter(|row| row.requested == size) {
                let Some(cell) = row.cell(Placement::OutOfPlace) else {
                    continue;
                };
                for gc in &cell.groups {
                    per_color.entry(gc.color).or_default().push(gc.busbw);
                    *wrong.entry(gc.color).or_default() |= gc.wrong.unwrap_or(0) > 0;
                }
                // One pair in the round (a 2-GPU node): the split leaves a single group, and
                // results keep no per-group cells for it: the cell is the pair's.
                if let ([only], true) = (&r.groups[..], cell.groups.is_empty()) {
                    per_color.entry(only.color).or_default().extend(cell.busbw);
                    *wrong.entry(only.color).or_default() |= cell.wrong.unwrap_or(0) > 0;
                }
            }
        }
        for grp in &r.groups {
            let [a, b] = grp.members[..] else {
                continue;
            };
            let (Some(ha), Some(hb)) = (rank_info(r, a), rank_info(r, b)) else {
                continue;
            };
            if ha.host != hb.host {
                continue;
            }
            let node = entry.1.entry(ha.host.as_str()).or_default();
            for info in [ha, hb] {
                node.labels
                    .entry(info.rank)
                    .or_insert_with(|| match info.device {
                        Some(d) => format!("GPU{d}"),
                        None => format!("rank {}", info.rank),
                    });
            }
            let value = per_color
                .get_mut(&grp.color)
                .and_then(|v| crate::grade::median_of(v));
            let failed = value.is_none() || wrong.get(&grp.color).copied().unwrap_or(false);
            node.pairs.insert((a.min(b), a.max(b)), (value, failed));
        }
    }
    let mut out = Vec::new();
    for test in order {
        let (size, hosts) = &by_test[test];
        for (host, Node { labels, pairs }) in hosts {
            let ranks: Vec<u64> = labels.keys().copied().collect();
            let at = |r: u64| ranks.iter().position(|&x| x == r).unwrap_or(0);
            out.push(GpuMatrix {
                test: test.to_string(),
                host: host.to_string(),
                gpus: labels.values().cloned().collect(),
                cells: pairs
                    .iter()
                    .map(|(&(a, b), &(value, failed))| PairCell {
                        a: at(a),
                        b: at(b),
                        value,
                        outcome: if failed {
                            Outcome::Failed
                        } else {
                            Outcome::Passed
                        },
                    })
                    .collect(),
                size: *size,
            });
        }
    }
    out
}

/// One node's pairs while they are gathered: axis labels by plan rank, and per pair (lower
/// rank first) its busbw and whether it failed.
#[derive(Default)]
struct Node {
    labels: BTreeMap<u64, String>,
    pairs: BTreeMap<(u64, u64), (Option<f64>, bool)>,
}

fn rank_info(r: &JobResult, rank: u64) -> Option<&crate::results::RankInfo> {
    r.layout.ranks.iter().find(|i| i.rank == rank)
}

/// The caption under a matrix, the same in Markdown and HTML (escaped by the caller).
pub fn caption(m: &GpuMatrix) -> String {
    let size = crate::grade::size(m.size);
    match m.slowest() {
        Some((a, b, v)) => format!(
            "{} on {}: busbw of each GPU pair at {size} (out of place; red: at most half the median pair); slowest {a}–{b} at {} GB/s",
            m.test,
            m.host,
            crate::grade::num(v)
        ),
        None => format!("{} on {}: no pair measured at {size}", m.test, m.host),
    }
}
