//! nccl-tests' stdout: header, `# Rank` device lines, the table (with or without `-S`
//! timestamps, `-I` per-iteration columns, `N/A` for unchecked cells), footer, error lines, and any
//! NCCL_DEBUG lines mixed in. Lines it does not know are skipped and counted, never fatal.

use super::debug::{self, DebugLine};
use super::log::{
    Device, Header, Log, LogRow, Warning, collective_of_program, nccl_version_from_code,
};
use super::sweep::{Step, Sweep};
use crate::collective::{Dtype, RedOp};
use crate::results::{Cell, ErrorKind, JobError};

/// Most variables one log may state (`… set by environment to …`).
const MAX_ENV: usize = 1000;
/// How many unrecognised lines are quoted in the warning (all are counted).
const QUOTED_UNKNOWN: usize = 3;

/// Parses a text log. Never fails: what it cannot read becomes a warning.
pub fn parse(source: &str, text: &str) -> (Log, Vec<Warning>) {
    let mut log = Log::new(source);
    let mut warnings = Vec::new();
    let mut unknown: Vec<(usize, String)> = Vec::new();
    let mut unknown_count = 0usize;
    let mut last_row_error: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = strip_launcher_tag(raw.trim_end_matches('\r'));
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let known = if let Some(d) = debug::parse_line(line) {
            apply_debug(&mut log, d);
            true
        } else if let Some(c) = t.strip_prefix('#') {
            header_line(&mut log, c.trim(), n, &mut warnings)
        } else if t.starts_with(|c: char| c.is_ascii_digit()) {
            match parse_row(t, n, log.cputime) {
                Ok(row) => {
                    log.rows.push(row);
                    last_row_error = None;
                    true
                }
                Err(e) if e.starts_with("impossible") => {
                    log.impossible.get_or_insert((n, e));
                    true
                }
                Err(e) => {
                    last_row_error = Some((n, e));
                    false
                }
            }
        } else {
            error_line(&mut log, t)
        };
        if !known {
            unknown_count += 1;
            if unknown.len() < QUOTED_UNKNOWN {
                unknown.push((n, shorten(t)));
            }
        }
    }
    if let Some((n, e)) = last_row_error {
        warnings.push(Warning {
            source: source.to_string(),
            line: Some(n),
            message: format!("incomplete table row skipped: {e}"),
        });
    }
    if unknown_count > 0 {
        let quoted: Vec<String> = unknown
            .iter()
            .map(|(n, t)| format!("line {n}: `{t}`"))
            .collect();
        warnings.push(Warning {
            source: source.to_string(),
            line: None,
            message: format!(
                "skipped {unknown_count} unrecognised line(s) ({}{})",
                quoted.join("; "),
                if unknown_count > quoted.len() {
                    "; …"
                } else {
                    ""
                }
            ),
        });
    }
    (log, warnings)
}

fn shorten(t: &str) -> String {
    const MAX: usize = 60;
    if t.chars().count() <= MAX {
        t.to_string()
    } else {
        let s: String = t.chars().take(MAX).collect();
        format!("{s}…")
    }
}

/// Removes the tag a launcher puts before every line: `[1,0]<stdout>:` (`mpirun --tag-output`)
/// or `0: ` (`srun -l`).
fn strip_launcher_tag(line: &str) -> &str {
    // `srun -l`: the task number, right-aligned, then ": ".
    let lead = line.trim_start();
    let digits = lead.len() - lead.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0
        && let Some(r) = lead[digits..].strip_prefix(": ")
    {
        return r;
    }
    // `mpirun --tag-output`: `[job,rank]<stdout>:`.
    let Some(rest) = line.strip_prefix('[') else {
        return line;
    };
    let Some((ids, after)) = rest.split_once(']') else {
        return line;
    };
    if !ids.chars().all(|c| c.is_ascii_digit() || c == ',') {
        return line;
    }
    for tag in ["<stdout>:", "<stderr>:"] {
        if let Some(r) = after.strip_prefix(tag) {
            return r;
        }
    }
    line
}

pub(super) fn apply_debug(log: &mut Log, d: DebugLine) {
    log.debug_lines += 1;
    match d {
        DebugLine::Transport(origin, mut link) => {
            // In a split run each group has its own communicator numbered from 0: say which.
            if log.is_split()
                && let Some(device) = origin.device
                && let Some(dev) = log.device_at(&origin.host, device, origin.pid)
            {
                link.comm = Some(format!("group {}", dev.group));
            }
            log.add_transport(link);
        }
        DebugLine::Version { nccl, cuda } => {
            log.nccl_version = Some(nccl);
            if cuda.is_some() {
                log.cuda_version = cuda;
            }
        }
        DebugLine::CudaDriver(v) => {
            log.cuda_version.get_or_insert(v);
        }
        // NCCL has a few hundred variables; a log claiming more is not worth recording.
        DebugLine::EnvSet(k, v) if log.env.len() < MAX_ENV || log.env.contains_key(&k) => {
            let v = crate::secrets::value(&k, &v).to_string();
            log.env.insert(k, v);
        }
        DebugLine::Warn(m) => {
            const MAX_WARNS: usize = 20;
            if log.errors.len() < MAX_WARNS {
                log.errors
                    .push(error(ErrorKind::Nccl, format!("NCCL WARN {m}")));
            }
        }
        DebugLine::EnvSet(..) | DebugLine::Other => {}
    }
}

fn error(kind: ErrorKind, message: String) -> JobError {
    JobError {
        kind,
        message,
        repeat: None,
        requested: None,
        placement: None,
    }
}

/// nccl-tests' own failure lines (`host: Test NCCL failure …`).
fn error_line(log: &mut Log, t: &str) -> bool {
    let kind = if t.contains("Test NCCL failure") {
        ErrorKind::Nccl
    } else if t.contains("Test CUDA failure") {
        ErrorKind::Cuda
    } else if t.contains("Test timeout") {
        ErrorKind::Timeout
    } else if t.starts_with("Invalid number of GPUs") || t.starts_with("Please check the number") {
        ErrorKind::Launcher
    } else if t.contains(": Test failure ") || t.starts_with(".. ") {
        // The per-level trace after a failure: the failure line itself says it all.
        return true;
    } else {
        return false;
    };
    log.errors.push(error(kind, t.to_string()));
    true
}

/// A `#` line, without the `#`. Returns whether it was recognised.
fn header_line(log: &mut Log, c: &str, n: usize, warnings: &mut Vec<Warning>) -> bool {
    if c.is_empty() {
        return true;
    }
    if let Some(rest) = c.strip_prefix("nccl-tests version") {
        if let Some(code) = rest
            .split_whitespace()
            .find_map(|t| t.strip_prefix("nccl-library="))
            .and_then(|v| v.parse().ok())
        {
            log.nccl_version = log.nccl_version.take().or(nccl_version_from_code(code));
        }
        return true;
    }
    if let Some(p) = c.strip_prefix("Collective test starting:") {
        let p = p.trim();
        log.program = Some(p.to_string());
        log.collective = collective_of_program(p);
        return true;
    }
    if c.starts_with("Collective test concluded:") {
        log.complete = true;
        return true;
    }
    if c.starts_with("nThread") {
        match parse_header(c) {
            Some(h) => log.header = Some(h),
            None => warnings.push(Warning {
                source: log.source.clone(),
                line: Some(n),
                message: "cannot read the `# nThread … minBytes … maxBytes …` header; requested sizes fall back to printed sizes".into(),
            }),
        }
        return true;
    }
    if let Some(rest) = c.strip_prefix("Rank") {
        if let Some(d) = parse_device(rest) {
            // A million duplicate lines get ten warnings, not a million.
            let rank = d.rank;
            if !log.add_device(d) {
                log.duplicate_ranks += 1;
                if log.duplicate_ranks <= 10 {
                    warnings.push(Warning {
                        source: log.source.clone(),
                        line: Some(n),
                        message: format!(
                            "rank {rank} is listed twice: a non-MPI build or a broken MPI wire-up runs every process alone"
                        ),
                    });
                }
            }
        }
        return true;
    }
    if let Some(rest) = c.strip_prefix("Reducing maxBytes to") {
        log.clamped_max = rest.split_whitespace().next().and_then(|v| v.parse().ok());
        return true;
    }
    if c.starts_with("size") {
        log.cputime = c.split_whitespace().any(|t| t == "cputime");
        return true;
    }
    if let Some(rest) = c.strip_prefix("error:") {
        let m = rest.trim();
        if !m.is_empty() {
            log.errors.push(error(ErrorKind::Nccl, m.to_string()));
        }
        return true;
    }
    if let Some(rest) = c.strip_prefix("Out of bounds values") {
        if rest.contains("FAILED") {
            log.errors.push(error(
                ErrorKind::Other,
                format!("nccl-tests footer: Out of bounds values{rest}"),
            ));
        }
        return true;
    }
    const KNOWN: &[&str] = &[
        "Using devices",
        "(B)",
        "Avg bus bandwidth",
        "Writing JSON output",
        "skipping json output",
        "Blocking Enabled",
        "Per-Iteration Report",
        "Parallel Init Enabled",
        "GPU memory usage",
    ];
    KNOWN.iter().any(|k| c.starts_with(k)) || (c.contains("out-of-place") && c.contains("in-place"))
}

/// `nThread 1 nGpus 2 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 1 iters: 20
/// agg iters: 1 validation: 1 graph: 0 unalign: 0`.
fn parse_header(c: &str) -> Option<Header> {
    let toks: Vec<&str> = c.split_whitespace().collect();
    let after = |pair: &[&str]| -> Option<&str> {
        toks.windows(pair.len() + 1)
            .find(|w| w[..pair.len()] == *pair)
            .map(|w| w[pair.len()])
    };
    let num = |pair: &[&str]| after(pair).and_then(|v| v.parse::<u64>().ok());
    let small = |pair: &[&str], default: u32| {
        num(pair)
            .and_then(|v| u32::try_from(v).ok())
            .unwrap_or(default)
    };
    let step_tok = after(&["step:"])?;
    let (v, kind) = step_tok.split_once('(')?;
    let v: u64 = v.parse().ok()?;
    let step = if kind.starts_with("factor") {
        Step::Factor(v)
    } else {
        Step::Bytes(v)
    };
    // `iters:` appears after `warmup` and `agg` too; the plain one follows `iters:` of warmup.
    let iters = toks
        .windows(2)
        .enumerate()
        .find(|(i, w)| {
            w[0] == "iters:" && *i > 0 && toks[i - 1] != "warmup" && toks[i - 1] != "agg"
        })
        .and_then(|(_, w)| w[1].parse().ok())
        .unwrap_or(20);
    Some(Header {
        nthreads: small(&["nThread"], 1),
        ngpus: small(&["nGpus"], 1),
        sweep: Sweep {
            min: num(&["minBytes"])?,
            max: num(&["maxBytes"])?,
            step,
        },
        warmup: small(&["warmup", "iters:"], 1),
        iters,
        agg_iters: small(&["agg", "iters:"], 1),
        validation: small(&["validation:"], 1),
        graph: small(&["graph:"], 0),
    })
}

/// ` 0 Group 0 Pid 1476 on vm device 0 [0000:00:06] NVIDIA H200` (Group is absent in older
/// versions; the bus id may read `[0x1b]`).
fn parse_device(rest: &str) -> Option<Device> {
    let toks: Vec<&str> = rest.split_whitespace().collect();
    let rank = toks.first()?.parse().ok()?;
    let val = |key: &str| {
        toks.iter()
            .position(|t| *t == key)
            .and_then(|i| toks.get(i + 1))
    };
    let group = val("Group").and_then(|v| v.parse().ok()).unwrap_or(0);
    let pid = val("Pid").and_then(|v| v.parse().ok());
    let host = val("on")?.to_string();
    let dpos = toks.iter().position(|t| *t == "device")?;
    let device = toks.get(dpos + 1)?.parse().ok()?;
    let mut name_from = dpos + 2;
    let pci = toks.get(dpos + 2).and_then(|t| {
        let inner = t.strip_prefix('[')?.strip_suffix(']')?;
        name_from += 1;
        Some(inner.to_string())
    });
    let name = toks
        .get(name_from..)
        .map(|n| n.join(" "))
        .filter(|n| !n.is_empty());
    Some(Device {
        rank,
        group,
        pid,
        host,
        device,
        pci,
        name,
    })
}

/// One table row: five prefix columns, then per placement `time algbw busbw #wrong` (plus four
/// `-I` columns), then an optional `-S` timestamp (two tokens).
fn parse_row(t: &str, line: usize, cputime: bool) -> Result<LogRow, String> {
    let toks: Vec<&str> = t.split_whitespace().collect();
    if toks.len() < 5 {
        return Err(format!("{} fields, expected at least 13", toks.len()));
    }
    let size = toks[0]
        .parse()
        .map_err(|_| format!("size `{}` is not a byte count", toks[0]))?;
    let count = toks[1]
        .parse()
        .map_err(|_| format!("count `{}` is not an element count", toks[1]))?;
    let dtype: Dtype = toks[2]
        .parse()
        .map_err(|_| format!("unknown datatype `{}`", toks[2]))?;
    let op = match toks[3] {
        "none" => None,
        o => Some(
            o.parse::<RedOp>()
                .map_err(|_| format!("unsupported reduction `{o}`"))?,
        ),
    };
    let root = toks[4]
        .parse()
        .map_err(|_| format!("root `{}` is not a number", toks[4]))?;
    let rest = &toks[5..];
    let (half, timestamp) = match rest.len() {
        8 => (4, false),
        10 => (4, true),
        16 => (8, false),
        18 => (8, true),
        k => return Err(format!("{} fields, expected 13 (15 with -S)", k + 5)),
    };
    if timestamp && !looks_like_timestamp(rest[2 * half], rest[2 * half + 1]) {
        return Err("trailing fields are not a `-S` timestamp".into());
    }
    let out_of_place = Some(parse_half(&rest[..half], cputime)?);
    let in_place = Some(parse_half(&rest[half..2 * half], cputime)?);
    Ok(LogRow {
        line,
        size,
        count,
        dtype,
        op,
        root,
        out_of_place,
        in_place,
    })
}

fn looks_like_timestamp(date: &str, time: &str) -> bool {
    date.len() == 10
        && date.chars().filter(|c| *c == '-').count() == 2
        && time.chars().filter(|c| *c == ':').count() == 2
}

fn parse_half(f: &[&str], cputime: bool) -> Result<Cell, String> {
    let num = |s: &str, what: &str| -> Result<Option<f64>, String> {
        let v: f64 = s
            .parse()
            .map_err(|_| format!("{what} `{s}` is not a number"))?;
        Ok(v.is_finite().then_some(v))
    };
    let time = num(f[0], "time")?;
    let algbw = num(f[1], "algbw")?;
    let busbw = num(f[2], "busbw")?;
    let wrong = match f[3] {
        "N/A" => None,
        w => {
            let v = num(w, "#wrong")?.ok_or_else(|| format!("#wrong `{w}` is not a count"))?;
            Some(super::sanity::wrong_count(v, w)?)
        }
    };
    let mut cell = Cell::measured(0.0, 0.0, 0.0, wrong);
    // With -C 1 the column is CPU enqueue time: not the time bandwidths mean, so not recorded.
    cell.time_us = if cputime { None } else { time };
    cell.algbw = algbw;
    cell.busbw = busbw;
    Ok(cell)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_in_every_layout() {
        let r = parse_row(
            "1048576 262144 float sum -1 17.07 61.41 61.41 0 62.12 16.88 16.88 0",
            1,
            false,
        )
        .unwrap();
        assert_eq!(
            (r.size, r.count, r.dtype, r.op),
            (1048576, 262144, Dtype::Float, Some(RedOp::Sum))
        );
        let oop = r.out_of_place.unwrap();
        assert_eq!(
            (oop.time_us, oop.busbw, oop.wrong),
            (Some(17.07), Some(61.41), Some(0))
        );
        // alltoall: unchecked in-place prints N/A.
        let r = parse_row(
            "1048576 131072 float none -1 16.53 63.44 31.72 0 16.09 65.16 32.58 N/A",
            1,
            false,
        )
        .unwrap();
        assert_eq!(r.op, None);
        assert_eq!(r.in_place.unwrap().wrong, None);
        // -S timestamp.
        let r = parse_row(
            "8 2 float sum -1 12.91 0.00 0.00 0 13.36 0.00 0.00 0 2026-11-30 05:12:09",
            1,
            false,
        )
        .unwrap();
        assert_eq!(r.in_place.unwrap().time_us, Some(13.36));
        // -I per-iteration columns, big #wrong in %g form.
        let r = parse_row(
            "8 2 float sum -1 12.91 0.00 0.00 1.23457e+06 1 2 3 4 13.36 0.00 0.00 0 1 2 3 4",
            1,
            false,
        )
        .unwrap();
        assert_eq!(r.out_of_place.unwrap().wrong, Some(1234570));
        // -C 1: CPU time is not kept.
        let r = parse_row(
            "8 2 float sum -1 12.91 0.00 0.00 0 13.36 0.00 0.00 0",
            1,
            true,
        )
        .unwrap();
        assert_eq!(r.out_of_place.unwrap().time_us, None);
        for bad in [
            "8 2 float sum -1 12.91 0.00",
            "8 2 floaty sum -1 12.91 0.00 0.00 0 13.36 0.00 0.00 0",
            "8 2 float mulsum -1 12.91 0.00 0.00 0 13.36 0.00 0.00 0",
            "8 2 float sum -1 x 0.00 0.00 0 13.36 0.00 0.00 0",
            "8 2 float sum -1 1 0.00 0.00 -3 13.36 0.00 0.00 0",
        ] {
            assert!(parse_row(bad, 1, false).is_err(), "{bad}");
        }
    }

    #[test]
    fn header_and_devices() {
        let h = parse_header("nThread 1 nGpus 2 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 0 graph: 3 unalign: 0").unwrap();
        assert_eq!(
            (
                h.nthreads,
                h.ngpus,
                h.iters,
                h.warmup,
                h.validation,
                h.graph
            ),
            (1, 2, 20, 1, 0, 3)
        );
        assert_eq!(h.sweep.step, Step::Factor(2));
        let h = parse_header("nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 1048576(bytes) warmup iters: 5 iters: 50 agg iters: 2 validation: 1 graph: 0").unwrap();
        assert_eq!((h.iters, h.warmup, h.agg_iters), (50, 5, 2));
        assert_eq!(h.sweep.step, Step::Bytes(1048576));
        let d = parse_device(
            "  1 Group  3 Pid   1476 on         vm device  1 [0000:00:07] NVIDIA H200",
        )
        .unwrap();
        assert_eq!(
            (d.rank, d.group, d.pid, d.host.as_str(), d.device),
            (1, 3, Some(1476), "vm", 1)
        );
        assert_eq!(d.pci.as_deref(), Some("0000:00:07"));
        assert_eq!(d.name.as_deref(), Some("NVIDIA H200"));
        let d = parse_device("  1 Pid  12346 on   nodeA device  1 [0x43] NVIDIA H100 80GB HBM3")
            .unwrap();
        assert_eq!(
            (d.group, d.name.as_deref()),
            (0, Some("NVIDIA H100 80GB HBM3"))
        );
    }

    #[test]
    fn split_runs_name_the_communicator_of_each_link() {
        let text = "# Collective test starting: all_reduce_perf\n\
            #  Rank  0 Group  0 Pid   10 on n1 device  0 [0000:01:00] GPU\n\
            #  Rank  1 Group  0 Pid   11 on n1 device  1 [0000:02:00] GPU\n\
            #  Rank  2 Group  1 Pid   12 on n1 device  2 [0000:03:00] GPU\n\
            #  Rank  3 Group  1 Pid   13 on n1 device  3 [0000:04:00] GPU\n\
            n1:12:99 [2] NCCL INFO Channel 00/0 : 0[2] -> 1[3] via P2P/IPC\n\
            n1:10:98 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n";
        let (log, w) = parse("s.txt", text);
        assert!(w.is_empty(), "{w:?}");
        let comms: Vec<Option<&str>> = log.transports.iter().map(|t| t.comm.as_deref()).collect();
        assert_eq!(comms, vec![Some("group 1"), Some("group 0")]);
    }

    #[test]
    fn an_srun_labelled_log_reads_like_the_plain_one() {
        let plain = include_str!("../../tests/data/nccl-tests/h200x2/all_reduce.txt");
        let labelled: String = plain.lines().map(|l| format!("0: {l}\n")).collect();
        let (a, wa) = parse("plain.txt", plain);
        let (b, wb) = parse("srun.txt", &labelled);
        assert_eq!(wa.len(), wb.len(), "{wb:?}");
        assert!(!a.rows.is_empty());
        assert_eq!(format!("{:?}", a.rows), format!("{:?}", b.rows));
        assert_eq!(a.devices.len(), b.devices.len());
    }

    #[test]
    fn launcher_tags_and_unknown_lines() {
        assert_eq!(
            strip_launcher_tag("[1,0]<stdout>:# Using devices"),
            "# Using devices"
        );
        assert_eq!(strip_launcher_tag("[0000:00:06] x"), "[0000:00:06] x");
        assert_eq!(strip_launcher_tag(" 3: # Using devices"), "# Using devices");
        assert_eq!(
            strip_launcher_tag("12:        8   2  float"),
            "       8   2  float"
        );
        // NCCL's own `host:pid:tid` prefix is not a task number.
        let debug = "10:1869:1956 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC";
        assert_eq!(strip_launcher_tag(debug), debug);
        let (log, w) = parse(
            "x.txt",
            "hello\n# Collective test starting: all_reduce_perf\nbanana split\n",
        );
        assert_eq!(log.program.as_deref(), Some("all_reduce_perf"));
        assert_eq!(w.len(), 1);
        assert!(
            w[0].message.contains("skipped 2 unrecognised"),
            "{}",
            w[0].message
        );
    }
}
