//! The tables a report shows, computed once and rendered by Markdown and HTML alike: the verdict
//! summary, the size table, split groups, transports, and the environment.

use super::paths::shown;
use crate::expand::table::rank_ranges;
use crate::grade::{Grade, JobVerdict, Status, median_busbw, size};
use crate::results::{Cell, CellStatus, JobResult, Placement};

/// One line of the verdict summary.
pub struct SummaryRow {
    pub status: Status,
    pub id: String,
    pub what: String,
    pub checks: String,
    /// First failure (or warning), else empty.
    pub problem: String,
}

pub fn summary(g: &Grade) -> Vec<SummaryRow> {
    g.jobs_by_severity()
        .into_iter()
        .map(|j| {
            let failed = j
                .criteria
                .iter()
                .filter(|c| c.status == Status::Fail)
                .count();
            let warned = j
                .criteria
                .iter()
                .filter(|c| c.status == Status::Warn)
                .count();
            let mut checks = format!("{} checks", j.criteria.len());
            if failed > 0 {
                checks.push_str(&format!(", {failed} failed"));
            }
            if warned > 0 {
                checks.push_str(&format!(", {warned} warned"));
            }
            SummaryRow {
                status: j.status,
                id: j.id.clone(),
                what: j.what.clone(),
                checks,
                problem: j
                    .problems()
                    .next()
                    .map(|c| format!("{}: {}", c.text, c.full_message()))
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// One placement of one size: medians over repeats of what nccl-tests printed.
pub struct Half {
    pub time: String,
    pub algbw: String,
    pub busbw: String,
    pub wrong: String,
}

pub struct SizeRow {
    pub requested: String,
    pub size: String,
    pub count: String,
    pub out_of_place: Half,
    pub in_place: Half,
    /// Baseline busbw (out-of-place median) and today / baseline.
    pub baseline: String,
    pub ratio: String,
    /// Whether any #wrong > 0 or an error is in this row.
    pub bad: bool,
}

/// Two decimals, as nccl-tests prints its columns.
fn fixed(v: f64) -> String {
    format!("{v:.2}")
}

fn median_of(cells: &[&Cell], f: impl Fn(&Cell) -> Option<f64>) -> String {
    let mut v: Vec<f64> = cells.iter().filter_map(|c| f(c)).collect();
    crate::grade::median_of(&mut v).map_or("-".into(), fixed)
}

fn half(cells: &[&Cell]) -> Half {
    if cells.is_empty() {
        return Half {
            time: "-".into(),
            algbw: "-".into(),
            busbw: "-".into(),
            wrong: "-".into(),
        };
    }
    let failed: Vec<&&Cell> = cells
        .iter()
        .filter(|c| c.status != CellStatus::Ok)
        .collect();
    let wrong = if let Some(f) = failed.first() {
        format!("{:?}", f.status).to_lowercase()
    } else if cells.iter().all(|c| c.wrong.is_none()) {
        "N/A".into()
    } else {
        cells
            .iter()
            .filter_map(|c| c.wrong)
            .max()
            .unwrap_or(0)
            .to_string()
    };
    Half {
        time: median_of(cells, |c| c.time_us),
        algbw: median_of(cells, |c| c.algbw),
        busbw: median_of(cells, |c| c.busbw),
        wrong,
    }
}

pub fn sizes(j: &JobVerdict) -> Vec<SizeRow> {
    let Some(src) = &j.source else {
        return Vec::new();
    };
    let r = &src.result;
    let base = j.baseline.as_ref().map(|b| &b.result);
    crate::grade::measured_sizes(r)
        .into_iter()
        .map(|s| {
            let rows: Vec<&crate::results::Row> = r
                .repeats
                .iter()
                .flat_map(|rep| rep.rows.iter().filter(|row| row.requested == s))
                .collect();
            let cells = |p: Placement| -> Vec<&Cell> {
                rows.iter().filter_map(|row| row.cell(p)).collect()
            };
            let (oop, ip) = (cells(Placement::OutOfPlace), cells(Placement::InPlace));
            let bad = oop
                .iter()
                .chain(&ip)
                .any(|c| c.wrong.is_some_and(|w| w > 0) || c.status != CellStatus::Ok);
            let (baseline, ratio) = match base {
                Some(b) => {
                    let old = median_busbw(b, s, Placement::OutOfPlace);
                    let now = median_busbw(r, s, Placement::OutOfPlace);
                    let moves = rows.first().is_some_and(|row| row.size > 0);
                    (
                        median_recorded(b, s),
                        match (old, now) {
                            (Some(o), Some(n)) if o > 0.0 && moves => format!("{:.2}", n / o),
                            _ => "-".into(),
                        },
                    )
                }
                None => (String::new(), String::new()),
            };
            SizeRow {
                requested: size(s),
                size: rows.first().map_or("-".into(), |row| row.size.to_string()),
                count: rows.first().map_or("-".into(), |row| row.count.to_string()),
                out_of_place: half(&oop),
                in_place: half(&ip),
                baseline,
                ratio,
                bad,
            }
        })
        .collect()
}

fn median_recorded(r: &JobResult, s: u64) -> String {
    let cells: Vec<&Cell> = r
        .repeats
        .iter()
        .flat_map(|rep| rep.rows.iter().filter(|row| row.requested == s))
        .filter_map(|row| row.out_of_place.as_ref())
        .collect();
    median_of(&cells, |c| c.busbw)
}

pub struct GroupRow {
    pub color: u64,
    pub ranks: String,
    pub gpus: String,
    /// Median busbw at the table's size, out-of-place.
    pub busbw: String,
    /// Likewise in-place; empty when no group has in-place figures.
    pub busbw_in: String,
    /// How far below the fastest group (%), in the placement where the groups differ most.
    pub behind: String,
    pub slowest: bool,
}

/// Per group, the median busbw over repeats at `s` in placement `p`.
fn group_figures(r: &JobResult, s: Option<u64>, p: Placement) -> Vec<Option<f64>> {
    r.groups
        .iter()
        .map(|g| {
            let s = s?;
            let mut v: Vec<f64> = r
                .repeats
                .iter()
                .flat_map(|x| &x.rows)
                .filter(|row| row.requested == s)
                .filter_map(|row| row.cell(p))
                .flat_map(|c| {
                    c.groups
                        .iter()
                        .filter(|x| x.color == g.color)
                        .map(|x| x.busbw)
                })
                .collect();
            crate::grade::median_of(&mut v)
        })
        .collect()
}

/// (fastest − slowest) / fastest of `figures`, when two or more groups have one.
fn spread(figures: &[Option<f64>]) -> Option<f64> {
    let known: Vec<f64> = figures.iter().flatten().copied().collect();
    let fastest = known.iter().copied().fold(0.0, f64::max);
    let slowest = known.iter().copied().fold(f64::INFINITY, f64::min);
    (known.len() > 1 && fastest > 0.0).then(|| (fastest - slowest) / fastest)
}

/// The split groups of a job with their figures, both placements, at the size the spread was
/// judged at (else the largest size that has them).
pub fn groups(j: &JobVerdict) -> (Vec<GroupRow>, Option<String>) {
    let Some(src) = &j.source else {
        return (Vec::new(), None);
    };
    let r = &src.result;
    if r.groups.is_empty() {
        return (Vec::new(), None);
    }
    let has_figures = |s: u64| {
        r.repeats.iter().flat_map(|x| &x.rows).any(|row| {
            row.requested == s
                && [&row.out_of_place, &row.in_place]
                    .into_iter()
                    .flatten()
                    .any(|c| !c.groups.is_empty())
        })
    };
    let at = judged_size(j).filter(|&s| has_figures(s)).or_else(|| {
        crate::grade::measured_sizes(r)
            .into_iter()
            .rev()
            .find(|&s| has_figures(s))
    });
    let out = group_figures(r, at, Placement::OutOfPlace);
    let inp = group_figures(r, at, Placement::InPlace);
    let has_in = inp.iter().any(Option::is_some);
    // "Behind" and "slowest" in the placement where the groups differ most: the one a failing
    // spread is about.
    let in_worse = has_in && spread(&inp).unwrap_or(0.0) > spread(&out).unwrap_or(0.0);
    let judged = if in_worse { &inp } else { &out };
    let fastest = judged.iter().flatten().copied().fold(0.0, f64::max);
    let slowest = judged
        .iter()
        .flatten()
        .copied()
        .fold(f64::INFINITY, f64::min);
    let rows = r
        .groups
        .iter()
        .enumerate()
        .map(|(k, g)| {
            let gpus: Vec<String> = g
                .members
                .iter()
                .filter_map(|m| r.layout.ranks.iter().find(|x| x.rank == *m))
                .map(|x| match x.device {
                    Some(d) => format!("{}:{d}", x.host),
                    None => x.host.clone(),
                })
                .collect();
            let f = judged[k];
            GroupRow {
                color: g.color,
                ranks: rank_ranges(&g.members),
                gpus: gpus.join(" "),
                busbw: out[k].map_or("-".into(), fixed),
                busbw_in: if has_in {
                    inp[k].map_or("-".into(), fixed)
                } else {
                    String::new()
                },
                behind: match f {
                    Some(v) if fastest > 0.0 => format!("{:.1}%", (fastest - v) / fastest * 100.0),
                    _ => "-".into(),
                },
                slowest: f.is_some_and(|v| v == slowest) && judged.iter().flatten().count() > 1,
            }
        })
        .collect();
    let note = match at {
        Some(s) => format!(
            "busbw at {} (median over repeats); behind fastest: {}",
            size(s),
            if in_worse { "in-place" } else { "out-of-place" }
        ),
        None => "no per-group figures recorded (nccl-tests logs print only rank 0's group)".into(),
    };
    (rows, Some(note))
}

/// The size a `group_spread` criterion judged the spread at: its largest failing size, else its
/// largest graded size, so the table shows the numbers the verdict is about.
/// With several `group_spread` criteria, the one with the worst verdict speaks.
fn judged_size(j: &JobVerdict) -> Option<u64> {
    let c = j
        .criteria
        .iter()
        .filter(|c| c.key == "group_spread" && c.status != Status::Skipped)
        .max_by_key(|c| c.status)?;
    let sizes = |fail: bool| {
        c.cases
            .iter()
            .filter(move |x| !fail || x.status == Status::Fail || x.status == Status::Warn)
            .filter_map(|x| x.requested)
            .max()
    };
    sizes(true).or_else(|| sizes(false))
}

pub struct TransportRow {
    pub comm: String,
    pub pair: String,
    pub transport: String,
    pub detail: String,
    pub channels: String,
    pub host: String,
}

/// Links grouped by communicator, peer pair and transport, channels compressed (`00-23`).
/// What to say when a job has no transport rows: the host backend has none to report; a GPU
/// run or log just did not record them.
pub fn no_transports(j: &JobVerdict) -> &'static str {
    match j.source.as_ref().map(|s| s.result.backend) {
        Some(crate::plan::Backend::Mpi) => {
            "Transports: none (the mpi backend moves data with MPI, not NCCL)."
        }
        _ => {
            "Transports: not captured (use `baton run --capture-transport`, or ingest logs taken with NCCL_DEBUG=INFO)."
        }
    }
}

pub fn transports(j: &JobVerdict) -> Vec<TransportRow> {
    let Some(src) = &j.source else {
        return Vec::new();
    };
    let mut rows: Vec<(TransportRow, Vec<u64>)> = Vec::new();
    for t in &src.result.transports {
        let comm = t.comm.clone().unwrap_or_default();
        let pair = format!("{} → {}", t.from_rank, t.to_rank);
        match rows
            .iter_mut()
            .find(|(r, _)| r.comm == comm && r.pair == pair && r.detail == t.detail)
        {
            Some((_, ch)) => ch.push(t.channel as u64),
            None => rows.push((
                TransportRow {
                    comm,
                    pair,
                    transport: t.transport.clone(),
                    detail: t.detail.clone(),
                    channels: String::new(),
                    host: t.host.clone().unwrap_or_default(),
                },
                vec![t.channel as u64],
            )),
        }
    }
    rows.into_iter()
        .map(|(mut r, mut ch)| {
            ch.sort_unstable();
            ch.dedup();
            r.channels = format!("{} ({})", rank_ranges(&ch), ch.len());
            r
        })
        .collect()
}

/// Environment facts as (label, value), unknowns said so rather than left out.
pub fn environment(g: &Grade) -> Vec<(String, String)> {
    let e = &g.environment;
    let unknown = || "not recorded".to_string();
    let mut v = vec![
        (
            "Hosts".to_string(),
            if e.hosts.is_empty() {
                unknown()
            } else {
                e.hosts
                    .iter()
                    .map(|h| format!("{} ({} GPU)", h.hostname, h.gpus.len()))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        ),
        ("GPUs".to_string(), gpus(g)),
        (
            "Driver".to_string(),
            e.driver_version.clone().unwrap_or_else(unknown),
        ),
        (
            "CUDA".to_string(),
            e.cuda_version.clone().unwrap_or_else(unknown),
        ),
        (
            "NCCL".to_string(),
            e.nccl_version.clone().unwrap_or_else(unknown),
        ),
        (
            "MPI".to_string(),
            e.mpi_version.clone().unwrap_or_else(unknown),
        ),
    ];
    v.extend(crate::results::env::shown_run_vars(e));
    v
}

/// `2× NVIDIA H200 on vm`, per host and model.
pub fn gpus(g: &Grade) -> String {
    let mut parts = Vec::new();
    for h in &g.environment.hosts {
        let mut models: Vec<(String, usize)> = Vec::new();
        for gpu in &h.gpus {
            match models.iter_mut().find(|m| m.0 == gpu.name) {
                Some(m) => m.1 += 1,
                None => models.push((gpu.name.clone(), 1)),
            }
        }
        for (m, n) in models {
            parts.push(format!("{n}× {m} on {}", h.hostname));
        }
    }
    if parts.is_empty() {
        "not recorded".into()
    } else {
        parts.join(", ")
    }
}

/// What a job was measured with (NCCL version, registration, CTA policy, blocking, memory),
/// for a report line; `None` when the results do not say (host backend, older results).
pub fn measured_with(j: &JobVerdict) -> Option<String> {
    j.source
        .as_ref()
        .and_then(|s| s.result.measured_with.as_ref())
        .map(crate::results::MeasuredWith::summary)
}

/// Where a job's data came from, for a report line.
pub fn provenance(j: &JobVerdict) -> String {
    match &j.source {
        None => "no results".into(),
        Some(s) if s.result.sources.is_empty() => shown(&s.file),
        Some(s) => format!(
            "{} (from {})",
            shown(&s.file),
            s.result
                .sources
                .iter()
                .map(|f| shown(f))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grade::{Case, CriterionVerdict, Source};

    /// Two groups over 4K and 16K; group 1 is 40% behind at 4K and level at 16K (out-of-place);
    /// with `in_place`, in-place runs too and group 0 is 75% behind there at 4K.
    fn split_job_with(in_place: bool) -> JobResult {
        let cell = |a: f64, b: f64| {
            format!(
                r#"{{"status":"ok","time_us":10,"algbw":1,"busbw":1,"wrong":0,"error":null,
                "groups":[{{"color":0,"time_us":10,"algbw":1,"busbw":{a},"wrong":0}},
                          {{"color":1,"time_us":10,"algbw":1,"busbw":{b},"wrong":0}}]}}"#
            )
        };
        serde_json::from_str(&format!(
            r#"{{"id":"a","test":"a","backend":"mpi","collective":"all_reduce","dtype":"float",
            "op":"sum","root":null,"split":"DIV 2",
            "settings":{{"iters":1,"warmup":0,"agg_iters":1,"cuda_graph":0,"check":true,"average":"avg","in_place":"out"}},
            "layout":{{"nranks":4,"nodes":1,"processes":4,"gpus_per_process":1,"ranks":[]}},
            "groups":[{{"color":0,"members":[0,1]}},{{"color":1,"members":[2,3]}}],
            "repeats":[{{"index":0,"started":null,"rows":[
              {{"requested":4096,"size":4096,"count":1024,"out_of_place":{},"in_place":{}}},
              {{"requested":16384,"size":16384,"count":4096,"out_of_place":{},"in_place":null}}]}}],
            "status":"completed"}}"#,
            cell(10.0, 6.0),
            if in_place {
                cell(2.0, 8.0)
            } else {
                "null".into()
            },
            cell(20.0, 20.0)
        ))
        .unwrap()
    }

    fn split_job() -> JobResult {
        split_job_with(false)
    }

    fn verdict(cases: Vec<Case>) -> JobVerdict {
        let status = cases.iter().map(|c| c.status).max().unwrap_or(Status::Pass);
        JobVerdict {
            id: "a".into(),
            what: "all_reduce".into(),
            status,
            source: Some(Source {
                file: "r.json".into(),
                result: split_job(),
            }),
            baseline: None,
            criteria: vec![CriterionVerdict {
                key: "group_spread",
                text: "group_spread <= 10%".into(),
                criterion: None,
                status,
                message: String::new(),
                diagnosis: None,
                cases,
            }],
        }
    }

    #[test]
    fn what_a_job_was_measured_with_is_one_line() {
        let mut j = verdict(Vec::new());
        assert_eq!(measured_with(&j), None, "older results say nothing");
        if let Some(src) = j.source.as_mut() {
            src.result.measured_with = Some(crate::results::MeasuredWith {
                nccl_version: Some("2.30.7".into()),
                register: Some(2),
                cta_policy: Some(1),
                blocking: Some(0),
                memory: Some(crate::results::MemoryFigures {
                    init_bytes: 1 << 30,
                    user_bytes: 36 << 20,
                    collective_bytes: 0,
                }),
                device_api: None,
            });
        }
        assert_eq!(
            measured_with(&j).as_deref(),
            Some(
                "NCCL 2.30.7 · register 2 · cta_policy 1 · blocking 0 · memory init 1.0 GiB · user 36.0 MiB · collective 0 B"
            )
        );
    }

    #[test]
    fn split_groups_show_the_size_the_spread_failed_at() {
        let j = verdict(vec![
            Case::at_size(4096, Status::Fail, "40%".into()),
            Case::at_size(16384, Status::Pass, "0%".into()),
        ]);
        let (rows, note) = groups(&j);
        assert!(note.unwrap().contains("busbw at 4K"));
        assert_eq!(rows[1].busbw_in, "", "no in-place figures, no column");
        assert_eq!(rows[1].behind, "40.0%");
        assert!(rows[1].slowest);
        // Nothing failed: the largest size judged, as before.
        let j = verdict(vec![
            Case::at_size(4096, Status::Pass, "".into()),
            Case::at_size(16384, Status::Pass, "".into()),
        ]);
        assert!(groups(&j).1.unwrap().contains("busbw at 16K"));
    }

    #[test]
    fn split_groups_show_both_placements_and_judge_the_one_that_differs_most() {
        let mut j = verdict(vec![Case::at_size(4096, Status::Fail, "75%".into())]);
        j.source.as_mut().unwrap().result = split_job_with(true);
        let (rows, note) = groups(&j);
        let note = note.unwrap();
        assert!(note.contains("behind fastest: in-place"), "{note}");
        assert_eq!(
            (rows[0].busbw.as_str(), rows[0].busbw_in.as_str()),
            ("10.00", "2.00")
        );
        assert_eq!(rows[0].behind, "75.0%");
        assert!(rows[0].slowest && !rows[1].slowest);
    }
}
