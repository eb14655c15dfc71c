//! The figures of a test's node sets, passed ones included: per plan job, set shape (node
//! count) and judged size, how many sets measured, their median, spread and lowest sets. A
//! passing set gets no section of its own (a thousand-node sweep stays readable), so this table
//! is where a customer reads the numbers that passed.

use std::collections::{BTreeMap, HashMap};

use crate::grade::{Grade, JobVerdict, TestNodes, measured_sizes, median_busbw};
use crate::results::{JobResult, Placement};

/// How many of the lowest sets a row names.
const LOWEST: usize = 3;
/// Most sizes a row group shows: the largest judged ones (a floor on every size of a sweep
/// would otherwise make a row per size).
const MAX_SIZES: usize = 4;

/// One shape of one plan job at one size.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeRow {
    /// The plan job (the test name, or with its matrix values).
    pub job: String,
    pub nodes: usize,
    pub size: u64,
    /// Sets of this shape, and how many of them have a busbw at the size.
    pub sets: usize,
    pub measured: usize,
    pub median: f64,
    pub min: f64,
    pub p10: f64,
    pub p90: f64,
    pub max: f64,
    /// The lowest sets: hosts (a hostlist) and busbw, lowest first.
    pub lowest: Vec<(String, f64)>,
}

impl ShapeRow {
    pub fn shape(&self) -> String {
        match self.nodes {
            1 => "1 node".into(),
            n => format!("{n} nodes"),
        }
    }

    /// `n[2,4] 0.91 GB/s, n1 1.2 GB/s`.
    pub fn lowest_text(&self) -> String {
        self.lowest
            .iter()
            .map(|(h, v)| format!("{h} {} GB/s", crate::grade::num(*v)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One set's job of a shape: its hosts and result.
struct Measured<'a> {
    hosts: &'a [String],
    result: &'a JobResult,
}

/// The sets of one (plan job, node count), `None` for a set that never ran, and the sizes
/// judged in any of them.
type Group<'a> = (Vec<Option<Measured<'a>>>, Vec<u64>);

/// The rows of one test, in plan-job, shape, size order.
pub fn rows(g: &Grade, t: &TestNodes) -> Vec<ShapeRow> {
    let by_id: HashMap<&str, &JobVerdict> = g.jobs.iter().map(|j| (j.id.as_str(), j)).collect();
    // (plan job, nodes) → the sets' jobs, and the sizes judged in any of them.
    let mut groups: BTreeMap<(String, usize), Group> = BTreeMap::new();
    for s in &t.sets {
        let jobs: Vec<&JobVerdict> = s
            .jobs
            .iter()
            .filter_map(|id| by_id.get(id.as_str()).copied())
            .collect();
        if jobs.is_empty() {
            // Never ran (a dead node): one set of the shape without a number.
            let key = (t.test.clone(), s.hosts.len());
            groups.entry(key).or_default().0.push(None);
            continue;
        }
        for v in jobs {
            let Some(src) = &v.source else { continue };
            let plan_job = src
                .result
                .node_set
                .as_ref()
                .map_or_else(|| t.test.clone(), |n| n.job.clone());
            let entry = groups.entry((plan_job, s.hosts.len())).or_default();
            entry.0.push(Some(Measured {
                hosts: &s.hosts,
                result: &src.result,
            }));
            for size in judged_sizes(v, &src.result) {
                if !entry.1.contains(&size) {
                    entry.1.push(size);
                }
            }
        }
    }
    let mut out = Vec::new();
    for ((job, nodes), (sets, mut sizes)) in groups {
        sizes.sort_unstable();
        let skip = sizes.len().saturating_sub(MAX_SIZES);
        for &size in &sizes[skip..] {
            if let Some(row) = row(&job, nodes, size, &sets) {
                out.push(row);
            }
        }
    }
    out
}

fn row(job: &str, nodes: usize, size: u64, sets: &[Option<Measured>]) -> Option<ShapeRow> {
    let mut values: Vec<(&[String], f64)> = sets
        .iter()
        .flatten()
        .filter_map(|m| Some((m.hosts, busbw(m.result, size)?)))
        .collect();
    values.sort_by(|a, b| a.1.total_cmp(&b.1));
    let sorted: Vec<f64> = values.iter().map(|v| v.1).collect();
    let mut for_median = sorted.clone();
    let median = crate::grade::median_of(&mut for_median)?;
    Some(ShapeRow {
        job: job.to_string(),
        nodes,
        size,
        sets: sets.len(),
        measured: sorted.len(),
        median,
        min: sorted[0],
        p10: percentile(&sorted, 10),
        p90: percentile(&sorted, 90),
        max: sorted[sorted.len() - 1],
        lowest: values
            .iter()
            .take(LOWEST)
            .map(|(h, v)| (crate::nodeset::compress(h), *v))
            .collect(),
    })
}

/// Column heads; `Job` only when the test has several plan jobs.
fn heads(with_job: bool) -> Vec<&'static str> {
    let mut h = vec![
        "Shape",
        "Size",
        "Sets measured",
        "Median GB/s",
        "Min",
        "p10",
        "p90",
        "Max",
        "Lowest",
    ];
    if with_job {
        h.insert(0, "Job");
    }
    h
}

fn cells(r: &ShapeRow, with_job: bool) -> Vec<String> {
    let n = crate::grade::num;
    let mut c = vec![
        r.shape(),
        crate::grade::size(r.size),
        format!("{} of {}", r.measured, r.sets),
        n(r.median),
        n(r.min),
        n(r.p10),
        n(r.p90),
        n(r.max),
        r.lowest_text(),
    ];
    if with_job {
        c.insert(0, r.job.clone());
    }
    c
}

fn several_jobs(rows: &[ShapeRow]) -> bool {
    rows.iter().any(|r| r.job != rows[0].job)
}

/// The Markdown table (empty without rows); `cell` escapes a value for a table cell.
pub fn markdown(rows: &[ShapeRow], cell: impl Fn(&str) -> String) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let with_job = several_jobs(rows);
    let h = heads(with_job);
    let mut o = format!("\n| {} |\n|{}\n", h.join(" | "), "---|".repeat(h.len()));
    for r in rows {
        let c: Vec<String> = cells(r, with_job).iter().map(|x| cell(x)).collect();
        o.push_str(&format!("| {} |\n", c.join(" | ")));
    }
    o
}

/// The HTML table (empty without rows).
pub fn html(rows: &[ShapeRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let e = super::html::esc;
    let with_job = several_jobs(rows);
    let mut o = String::from("<table><tr>");
    for h in heads(with_job) {
        o.push_str(&format!("<th>{h}</th>"));
    }
    o.push_str("</tr>");
    for r in rows {
        o.push_str("<tr>");
        for c in cells(r, with_job) {
            o.push_str(&format!("<td>{}</td>", e(&c)));
        }
        o.push_str("</tr>");
    }
    o.push_str("</table>");
    o
}

/// Nearest-rank percentile of ascending, non-empty `sorted`.
fn percentile(sorted: &[f64], p: usize) -> f64 {
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank.min(sorted.len()) - 1]
}

/// Out-of-place busbw (median over repeats) at `size`, in-place when only that ran.
fn busbw(r: &JobResult, size: u64) -> Option<f64> {
    median_busbw(r, size, Placement::OutOfPlace)
        .or_else(|| median_busbw(r, size, Placement::InPlace))
}

/// Keys of the criteria that judge bandwidth at sizes.
const BANDWIDTH: [&str; 6] = [
    "busbw",
    "algbw",
    "relative",
    "regression",
    "trend",
    "outlier",
];

/// The sizes a bandwidth criterion of the job judged (an `outlier` judges the largest size its
/// `at` selects); without such a criterion, the largest size measured.
fn judged_sizes(v: &JobVerdict, r: &JobResult) -> Vec<u64> {
    let measured = measured_sizes(r);
    let judging: Vec<_> = v
        .criteria
        .iter()
        .filter(|c| BANDWIDTH.contains(&c.key))
        .collect();
    if judging.is_empty() {
        return measured.last().copied().into_iter().collect();
    }
    let mut out: Vec<u64> = Vec::new();
    for c in judging {
        if c.key == "outlier" {
            let at = c.criterion.as_ref().and_then(|k| k.at.as_ref());
            out.extend(measured.iter().rfind(|&&s| at.is_none_or(|a| a.matches(s))));
        } else {
            out.extend(c.cases.iter().filter_map(|k| k.requested));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&v, 10), 1.0);
        assert_eq!(percentile(&v, 90), 9.0);
        assert_eq!(percentile(&[5.0], 10), 5.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 90), 6.0);
    }
}
