//! A parsed log becomes jobs: one per (dtype, op, root) block, each pass over the sweep one
//! repeat, every row placed at its requested size. The rank count n comes from the device list,
//! because busbw and the chunked sizes depend on it.

use std::collections::HashMap;
use std::rc::Rc;

use indexmap::IndexMap;

use super::Outcome;
use super::log::{Log, LogRow, Warning};
use super::sweep::{Mapper, Printed};
use crate::collective::{Collective, Dtype, RedOp};
use crate::plan::{Average, Backend, InPlace};
use crate::results::{
    ErrorKind, GroupInfo, JobError, JobResult, JobSettings, JobStatus, Layout, MatchBy, Placement,
    RankInfo, Repeat, Row,
};

/// What the log says happened to its run, for the exit code.
pub fn outcome(log: &Log) -> Outcome {
    let wrong = log.rows.iter().any(|r| first_wrong(r).is_some());
    if log.errors.iter().any(|e| e.kind == ErrorKind::Timeout) {
        Outcome::TimedOut
    } else if log.fatal || log.repeated_headers > 0 || !log.complete {
        Outcome::RunFailed
    } else if log.check_failed || wrong {
        Outcome::CheckFailed
    } else {
        Outcome::Clean
    }
}

/// The errors the log shows beyond its failure lines: processes running alone, a table cut
/// short. They hold for every job of the run.
fn run_errors(log: &Log) -> Vec<JobError> {
    let mut out = Vec::new();
    if log.repeated_headers > 0 {
        out.push(error(
            ErrorKind::Launcher,
            format!(
                "the header is printed {} times before any row: every process ran alone (nccl-tests built without MPI=1, or the launcher did not wire the ranks together), so the table is not one run over all ranks",
                log.repeated_headers + 1
            ),
        ));
    }
    if !log.complete && !log.fatal && log.repeated_headers == 0 {
        out.push(error(
            ErrorKind::Other,
            format!(
                "log ends before the nccl-tests footer (truncated or the run died): keeping the {} row(s) it has",
                log.rows.len()
            ),
        ));
    }
    out
}

/// One error for the rows of a job that count wrong elements, naming the first.
fn wrong_rows(rows: &[&LogRow]) -> Option<JobError> {
    let bad: Vec<(&LogRow, Placement, u64)> = rows
        .iter()
        .filter_map(|r| first_wrong(r).map(|(p, w)| (*r, p, w)))
        .collect();
    let (r, p, w) = bad.first()?;
    let place = match p {
        Placement::OutOfPlace => "out-of-place",
        Placement::InPlace => "in-place",
    };
    let mut e = error(
        ErrorKind::Other,
        format!(
            "{} row(s) count wrong elements (#wrong > 0); first at line {}: {} B {place}, {w} wrong",
            bad.len(),
            r.line,
            r.size
        ),
    );
    e.placement = Some(*p);
    Some(e)
}

fn first_wrong(r: &LogRow) -> Option<(Placement, u64)> {
    [
        (Placement::OutOfPlace, &r.out_of_place),
        (Placement::InPlace, &r.in_place),
    ]
    .into_iter()
    .find_map(|(p, c)| c.as_ref()?.wrong.filter(|w| *w > 0).map(|w| (p, w)))
}

fn error(kind: ErrorKind, message: String) -> JobError {
    JobError {
        kind,
        message,
        repeat: None,
        requested: None,
        placement: None,
        ras: None,
    }
}

/// `# Avg bus bandwidth` is the mean busbw over every cell nccl-tests printed; a different
/// mean says rows are missing or were edited.
fn check_avg(log: &Log, warnings: &mut Vec<Warning>) {
    let Some(avg) = log.avg_busbw else { return };
    let cells: Vec<f64> = log
        .rows
        .iter()
        .flat_map(|r| [&r.out_of_place, &r.in_place])
        .filter_map(|c| c.as_ref()?.busbw)
        .collect();
    if cells.is_empty() {
        return;
    }
    let mean = cells.iter().sum::<f64>() / cells.len() as f64;
    // Cells print with 2 decimals, the average with 6 significant digits.
    if (mean - avg).abs() > 0.01 + 0.001 * avg.abs() {
        warnings.push(Warning {
            source: log.source.clone(),
            line: None,
            message: format!(
                "the log's `# Avg bus bandwidth` is {avg}, but its {} cell(s) average {mean:.4}: rows are missing or were edited",
                cells.len()
            ),
        });
    }
}

/// Ranks of the communicator whose numbers rank 0 prints: the size of rank 0's split group.
pub fn comm_size(log: &Log) -> u64 {
    match log.devices.iter().find(|d| d.rank == 0) {
        Some(r0) => log.devices.iter().filter(|d| d.group == r0.group).count() as u64,
        None => log
            .header
            .as_ref()
            .map_or(1, |h| (h.nthreads as u64).saturating_mul(h.ngpus as u64))
            .max(1),
    }
}

/// The jobs of one log that ran a table. `collective` must be known.
pub fn jobs(log: &Log, collective: Collective, warnings: &mut Vec<Warning>) -> Vec<JobResult> {
    let n = comm_size(log);
    if log.devices.is_empty() {
        warnings.push(Warning {
            source: log.source.clone(),
            line: None,
            message: format!(
                "no `# Rank` device lines: assuming {n} rank(s) from nThread × nGpus (one process)"
            ),
        });
    }
    check_ratio(log, collective, n, warnings);
    check_avg(log, warnings);
    let sweep = log.sweep();
    if sweep.is_none() && !log.rows.is_empty() {
        warnings.push(Warning {
            source: log.source.clone(),
            line: None,
            message: "no sweep header: requested sizes are taken as printed".into(),
        });
    }
    let layout = layout(log);
    let groups = groups(log);
    let mut blocks: IndexMap<(Dtype, Option<RedOp>, i64), Vec<&LogRow>> = IndexMap::new();
    for r in &log.rows {
        blocks.entry((r.dtype, r.op, r.root)).or_default().push(r);
    }
    let mut off_sweep = 0usize;
    let mut out = Vec::new();
    let mut printed: HashMap<Dtype, Rc<Printed>> = HashMap::new();
    for ((dtype, op, root), rows) in blocks {
        let rows_of_block = rows.clone();
        let p = printed
            .entry(dtype)
            .or_insert_with(|| Rc::new(Printed::new(sweep.as_ref(), collective, dtype, n)));
        let mut mapper = Mapper::new(Rc::clone(p));
        let mut repeats: Vec<Repeat> = Vec::new();
        for r in rows {
            let placed = mapper.place(r.size, r.count);
            if !placed.in_sweep && sweep.is_some() {
                off_sweep += 1;
            }
            if placed.new_repeat || repeats.is_empty() {
                repeats.push(Repeat {
                    index: repeats.len() as u32,
                    started: None,
                    rows: Vec::new(),
                });
            }
            if let Some(rep) = repeats.last_mut() {
                rep.rows.push(Row {
                    requested: placed.requested,
                    size: r.size,
                    count: r.count,
                    out_of_place: r.out_of_place.clone(),
                    in_place: r.in_place.clone(),
                });
            }
        }
        let mut j = job(log, collective, dtype, op, root, repeats, &layout, &groups);
        j.errors.extend(wrong_rows(&rows_of_block));
        out.push(j);
    }
    if off_sweep > 0 {
        warnings.push(Warning {
            source: log.source.clone(),
            line: None,
            message: format!(
                "{off_sweep} row(s) do not follow the header's sweep for {n} rank(s); their printed size is used as the requested size"
            ),
        });
    }
    if out.is_empty() {
        out.push(job(
            log,
            collective,
            Dtype::Float,
            None,
            -1,
            Vec::new(),
            &layout,
            &groups,
        ));
    }
    let extra = run_errors(log);
    for j in &mut out {
        j.errors.extend(extra.iter().cloned());
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn job(
    log: &Log,
    collective: Collective,
    dtype: Dtype,
    op: Option<RedOp>,
    root: i64,
    repeats: Vec<Repeat>,
    layout: &Layout,
    groups: &[GroupInfo],
) -> JobResult {
    let h = log.header.as_ref();
    let op = if collective.reduces() { op } else { None };
    let root = if collective.rooted() {
        u32::try_from(root).ok()
    } else {
        None
    };
    let mut attrs = vec![collective.to_string(), dtype.to_string()];
    attrs.extend(op.map(|o| o.to_string()));
    attrs.extend(root.map(|r| format!("root={r}")));
    let has_rows = repeats.iter().any(|r| !r.rows.is_empty());
    let status = if log.errors.iter().any(|e| e.kind == ErrorKind::Timeout) {
        JobStatus::Timeout
    } else if log.fatal || log.repeated_headers > 0 || (!has_rows && !log.errors.is_empty()) {
        JobStatus::Error
    } else if !log.complete {
        JobStatus::Partial
    } else {
        JobStatus::Completed
    };
    JobResult {
        id: format!("{}[{}]", log.source, attrs.join(",")),
        test: log.source.clone(),
        identity: None,
        backend: Backend::Nccl,
        collective,
        dtype,
        op,
        root,
        split: split_of(log),
        env: log.env.clone(),
        settings: JobSettings {
            iters: h.map_or(20, |h| h.iters),
            warmup: h.map_or(1, |h| h.warmup),
            agg_iters: h.map_or(1, |h| h.agg_iters),
            cuda_graph: h.map_or(0, |h| h.graph),
            check: h.is_none_or(|h| h.validation != 0),
            // Neither the text nor the JSON output states -a; nccl-tests' default is the mean.
            average: Average::Avg,
            in_place: InPlace::Both,
            iterations: false,
            knobs: Default::default(),
        },
        layout: layout.clone(),
        groups: groups.to_vec(),
        repeats,
        transports: log.transports.clone(),
        telemetry: Vec::new(),
        status,
        reported_avg_busbw: log.avg_busbw,
        errors: log.errors.clone(),
        match_by: MatchBy::Attributes,
        sources: vec![log.source.clone()],
        node_set: None,
        evidence: Vec::new(),
        // What an nccl-tests log states of it: the NCCL its header printed and the flags it
        // reveals (`ingest::flags`).
        measured_with: log.flags.measured_with(log.nccl_version.clone()),
    }
}

/// The split as the environment states it (JSON `env`); text logs only show the groups.
fn split_of(log: &Log) -> Option<String> {
    if let Some(mask) = log.env.get("NCCL_TESTS_SPLIT_MASK") {
        // nccl-tests always reads the mask as hexadecimal.
        let hex = mask
            .trim()
            .trim_start_matches("0x")
            .trim_start_matches("0X");
        return Some(format!("AND 0x{hex}"));
    }
    log.env.get("NCCL_TESTS_SPLIT").cloned()
}

fn layout(log: &Log) -> Layout {
    let h = log.header.as_ref();
    let per_proc = h.map_or(1, |h| h.nthreads.saturating_mul(h.ngpus).max(1));
    if log.devices.is_empty() {
        return Layout {
            nranks: per_proc as u64,
            nodes: 1,
            processes: 1,
            gpus_per_process: per_proc,
            ranks: Vec::new(),
        };
    }
    let mut hosts: Vec<&str> = log.devices.iter().map(|d| d.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let mut procs: Vec<(&str, Option<u32>)> = log
        .devices
        .iter()
        .map(|d| (d.host.as_str(), d.pid))
        .collect();
    procs.sort_unstable();
    procs.dedup();
    let split = log.devices.iter().any(|d| d.group != log.devices[0].group);
    Layout {
        nranks: log.devices.len() as u64,
        nodes: hosts.len() as u32,
        processes: procs.len() as u32,
        gpus_per_process: per_proc,
        ranks: log
            .devices
            .iter()
            .map(|d| RankInfo {
                rank: d.rank,
                host: d.host.clone(),
                pid: d.pid,
                device: Some(d.device),
                gpu_uuid: None,
                pci_bus_id: d.pci.clone(),
                group: split.then_some(d.group),
            })
            .collect(),
    }
}

fn groups(log: &Log) -> Vec<GroupInfo> {
    let mut g: std::collections::BTreeMap<u64, Vec<u64>> = std::collections::BTreeMap::new();
    for d in &log.devices {
        g.entry(d.group).or_default().push(d.rank);
    }
    if g.len() <= 1 {
        return Vec::new();
    }
    g.into_iter()
        .map(|(color, mut members)| {
            members.sort_unstable();
            GroupInfo { color, members }
        })
        .collect()
}

/// busbw/algbw must equal the collective's factor for n ranks; a mismatch means the device list
/// does not describe the communicator that printed the table.
fn check_ratio(log: &Log, collective: Collective, n: u64, warnings: &mut Vec<Warning>) {
    let factor = collective.busbw_factor(n);
    let bad = log.rows.iter().find_map(|r| {
        let c = r.out_of_place.as_ref()?;
        let (alg, bus) = (c.algbw?, c.busbw?);
        // Two printed decimals: only rows with enough digits say anything.
        (alg >= 10.0 && (bus - alg * factor).abs() > 0.01 * bus.max(alg) + 0.02)
            .then_some((r.line, bus / alg))
    });
    if let Some((line, ratio)) = bad {
        warnings.push(Warning {
            source: log.source.clone(),
            line: Some(line),
            message: format!(
                "busbw/algbw = {ratio:.3}, but {collective} on {n} rank(s) has factor {factor:.3}: the device list may not match the run"
            ),
        });
    }
}
