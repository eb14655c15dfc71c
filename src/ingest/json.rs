//! nccl-tests' JSON output (`-J file.json`, format version 3, with 2.19's per-iteration records). A run that died mid-sweep leaves
//! a document nccl-tests closed early (no `end_time`) or, after a hard crash, one cut mid-value;
//! both yield the rows they hold.

use std::collections::HashSet;

use serde_json::Value;

use super::log::{
    Device, Header, Log, LogRow, Warning, collective_of_program, nccl_version_from_code,
};
use super::sweep::{Step, Sweep};
use crate::collective::{Dtype, RedOp};
use crate::results::{
    Cell, ErrorKind, IterationStats, Iterations, JobError, RankIterations, iterations,
};

/// The JSON format version this reader was written against.
const FORMAT_VERSION: u64 = 3;

/// Why a JSON file could not be read as an nccl-tests document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError(pub String);

/// Parses an nccl-tests JSON document.
pub fn parse(source: &str, text: &str) -> Result<(Log, Vec<Warning>), JsonError> {
    let mut warnings = Vec::new();
    let warn = |w: &mut Vec<Warning>, m: String| {
        w.push(Warning {
            source: source.to_string(),
            line: None,
            message: m,
        })
    };
    let (doc, cut) = match serde_json::from_str::<Value>(text) {
        Ok(v) => (v, false),
        Err(e) if e.is_eof() => match close_truncated(text) {
            Some(v) => (v, true),
            None => {
                return Err(JsonError(format!(
                    "JSON ends early and cannot be repaired ({e})"
                )));
            }
        },
        Err(e) => return Err(JsonError(format!("not valid JSON: {e}"))),
    };
    let Some(obj) = doc.as_object() else {
        return Err(JsonError("the JSON document is not an object".into()));
    };
    if !obj.contains_key("results") || !obj.contains_key("config") {
        return Err(JsonError(
            "JSON without `config` and `results`: not nccl-tests `-J` output".into(),
        ));
    }
    match obj.get("version").and_then(Value::as_u64) {
        Some(FORMAT_VERSION) => {}
        Some(v) => warn(
            &mut warnings,
            format!(
                "nccl-tests JSON version {v}; this reader knows version {FORMAT_VERSION}, fields may be missed"
            ),
        ),
        None => warn(&mut warnings, "nccl-tests JSON without a version".into()),
    }
    let mut log = Log::new(source);
    if let Some(p) = obj
        .get("args")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
    {
        log.program = Some(p.to_string());
        log.collective = collective_of_program(p);
    }
    if let Some(env) = obj.get("env").and_then(Value::as_array) {
        for kv in env.iter().filter_map(Value::as_str) {
            if let Some((k, v)) = kv.split_once('=')
                && crate::secrets::recorded(k)
            {
                log.env
                    .insert(k.to_string(), crate::secrets::value(k, v).to_string());
            }
        }
    }
    let code = obj.get("nccl_version").and_then(Value::as_u64);
    if let Some(code) = code {
        log.nccl_version = nccl_version_from_code(code);
    }
    if let Some(args) = obj.get("args").and_then(Value::as_array) {
        let args: Vec<&str> = args.iter().filter_map(Value::as_str).collect();
        log.flags = super::flags::from_args(&args, code);
    }
    if let Some(v) = log.env.get("CUDA_VERSION") {
        log.cuda_version = Some(v.clone());
    }
    let config = obj.get("config").and_then(Value::as_object);
    if let Some(c) = config {
        let u = |k: &str| c.get(k).and_then(Value::as_u64);
        let small = |k: &str, d: u32| u(k).and_then(|v| u32::try_from(v).ok()).unwrap_or(d);
        let step = match (u("step_factor"), u("step_bytes")) {
            (Some(f), _) => Some(Step::Factor(f)),
            (None, Some(b)) => Some(Step::Bytes(b)),
            _ => None,
        };
        if let (Some(min), Some(max), Some(step)) = (u("minimum_bytes"), u("maximum_bytes"), step) {
            log.header = Some(Header {
                nthreads: small("nthreads", 1),
                ngpus: small("ngpus", 1),
                sweep: Sweep { min, max, step },
                warmup: small("warmup_iters", 1),
                iters: small("iterations", 20),
                agg_iters: small("aggregated_iterations", 1),
                validation: small("validation", 1),
                graph: small("graph", 0),
            });
        } else {
            warn(
                &mut warnings,
                "config lacks minimum_bytes/maximum_bytes/step; requested sizes fall back to printed sizes".into(),
            );
        }
        if let Some(devs) = c.get("devices").and_then(Value::as_array) {
            for d in devices(devs, log.header.as_ref()) {
                log.add_device(d);
            }
        }
    }
    let results = obj.get("results").and_then(Value::as_array);
    for (i, r) in results.into_iter().flatten().enumerate() {
        match row(r, i + 1) {
            Ok(row) => log.rows.push(row),
            Err(m) if m.starts_with("impossible") => {
                log.impossible
                    .get_or_insert((i + 1, format!("results[{i}]: {m}")));
            }
            Err(m) => warn(&mut warnings, format!("results[{i}] skipped: {m}")),
        }
    }
    for e in obj
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|e| !e.trim().is_empty())
    {
        log.errors.push(JobError {
            kind: ErrorKind::Nccl,
            message: e.trim().to_string(),
            repeat: None,
            requested: None,
            placement: None,
            ras: None,
        });
    }
    if let Some(oob) = obj.get("out_of_bounds").and_then(Value::as_object)
        && oob.get("count").and_then(Value::as_u64).unwrap_or(0) > 0
    {
        log.errors.push(JobError {
            kind: ErrorKind::Other,
            message: format!(
                "nccl-tests out_of_bounds count {}",
                oob.get("count").and_then(Value::as_u64).unwrap_or(0)
            ),
            repeat: None,
            requested: None,
            placement: None,
            ras: None,
        });
    }
    log.complete = !cut && obj.contains_key("end_time");
    Ok((log, warnings))
}

/// `devices` holds each process's first GPU; its other GPUs follow it (rank + i, device + i).
fn devices(devs: &[Value], header: Option<&Header>) -> Vec<Device> {
    let per_proc = header.map_or(1, |h| (h.nthreads as u64 * h.ngpus as u64).max(1));
    let mut out: Vec<Device> = Vec::new();
    let mut seen: HashSet<u64> = HashSet::new();
    for d in devs.iter().filter_map(Value::as_object) {
        let u = |k: &str| d.get(k).and_then(Value::as_u64);
        let (Some(rank), Some(device)) =
            (u("rank"), u("device").and_then(|v| u32::try_from(v).ok()))
        else {
            continue;
        };
        for i in 0..per_proc.min(1024) {
            let Some(r) = rank.checked_add(i) else {
                break;
            };
            // No run has more ranks than a plan may (a hostile `per_proc` × `devices` would
            // otherwise allocate without bound).
            if out.len() >= crate::plan::MAX_RANKS as usize {
                break;
            }
            if !seen.insert(r) {
                continue;
            }
            out.push(Device {
                rank: r,
                group: u("group").unwrap_or(0),
                pid: u("pid").and_then(|p| u32::try_from(p).ok()),
                host: d
                    .get("hostname")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown")
                    .to_string(),
                device: device.saturating_add(i as u32),
                pci: (i == 0)
                    .then(|| {
                        d.get("device_hex")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                    .flatten(),
                name: d
                    .get("device_info")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            });
        }
    }
    out.sort_by_key(|d| d.rank);
    out
}

fn row(r: &Value, index: usize) -> Result<LogRow, String> {
    let o = r.as_object().ok_or("not an object")?;
    let u = |k: &str| {
        o.get(k)
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("`{k}` missing or not a count"))
    };
    let s = |k: &str| {
        o.get(k)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("`{k}` missing or not a string"))
    };
    let ty = s("type")?;
    let dtype: Dtype = ty.parse().map_err(|_| format!("unknown datatype `{ty}`"))?;
    let op = match s("redop")? {
        "none" | "" => None,
        other => Some(
            other
                .parse::<RedOp>()
                .map_err(|_| format!("unsupported reduction `{other}`"))?,
        ),
    };
    let root = match o.get("root") {
        Some(Value::String(t)) => t.trim().parse().map_err(|_| format!("root `{t}`"))?,
        Some(Value::Number(n)) => n.as_i64().ok_or("root is not an integer")?,
        _ => -1,
    };
    Ok(LogRow {
        line: index,
        size: u("size")?,
        count: u("count")?,
        dtype,
        op,
        root,
        out_of_place: timed(o, "out_of_place")?,
        in_place: timed(o, "in_place")?,
        printed: Default::default(),
    })
}

/// A row's `out_of_place` or `in_place` cell, with the iterations nccl-tests 2.19's `-I 1`
/// recorded beside it (`out_of_place_per_iter`).
fn timed(o: &serde_json::Map<String, Value>, key: &str) -> Result<Option<Cell>, String> {
    let Some(mut c) = o.get(key).map(cell).transpose()?.flatten() else {
        return Ok(None);
    };
    if let Some(v) = o.get(&format!("{key}_per_iter")) {
        c.iterations = Some(iterations(v).map_err(|e| format!("`{key}_per_iter`: {e}"))?);
    }
    Ok(Some(c))
}

/// nccl-tests' per-iteration record: its summary as it printed it (over each iteration's
/// slowest process), the times, and — with several processes — each process's own times
/// (`per_process_max_times_us`, the max over that process's GPUs), summarised with nccl-tests'
/// formulas. `ranks` are processes here: a process driving several GPUs is one entry.
fn iterations(v: &Value) -> Result<Iterations, String> {
    let o = v.as_object().ok_or("not an object")?;
    let times_us = series(o.get("times_us")).ok_or("`times_us` missing or not a list of times")?;
    let f = |k: &str| o.get(k).and_then(Value::as_f64).filter(|x| x.is_finite());
    let summary = match (
        f("min_us"),
        f("max_us"),
        f("avg_us"),
        f("p50_us"),
        f("p95_us"),
        f("p99_us"),
        f("stdev_us"),
        f("cv_pct"),
    ) {
        (
            Some(min_us),
            Some(max_us),
            Some(avg_us),
            Some(p50_us),
            Some(p95_us),
            Some(p99_us),
            Some(stdev_us),
            Some(cv_pct),
        ) => IterationStats {
            min_us,
            max_us,
            avg_us,
            p50_us,
            p95_us,
            p99_us,
            stdev_us,
            cv_pct,
        },
        _ => iterations::stats(&times_us),
    };
    let per_process = match o.get("per_process_max_times_us") {
        None | Some(Value::Null) => vec![times_us.clone()],
        Some(Value::Array(rows)) => rows
            .iter()
            .map(|r| series(Some(r)).filter(|t| t.len() == times_us.len()))
            .collect::<Option<Vec<_>>>()
            .ok_or("`per_process_max_times_us` is not one list of times per process")?,
        Some(_) => return Err("`per_process_max_times_us` is not a list".into()),
    };
    Ok(Iterations {
        summary,
        ranks: per_process
            .iter()
            .enumerate()
            .map(|(p, t)| RankIterations {
                rank: p as u64,
                stats: iterations::stats(t),
                between_calls: None,
            })
            .collect(),
        times_us,
    })
}

/// A list of finite, non-negative times.
fn series(v: Option<&Value>) -> Option<Vec<f64>> {
    v?.as_array()?
        .iter()
        .map(|x| x.as_f64().filter(|t| t.is_finite() && *t >= 0.0))
        .collect()
}

fn cell(v: &Value) -> Result<Option<Cell>, String> {
    let Some(o) = v.as_object() else {
        return Ok(None);
    };
    let f = |k: &str| o.get(k).and_then(Value::as_f64).filter(|x| x.is_finite());
    let wrong = match o.get("nwrong") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(super::sanity::wrong_count(
            n.as_f64().unwrap_or(f64::NAN),
            &n.to_string(),
        )?),
        Some(other) => {
            return Err(format!(
                "impossible: nwrong {other} is not a number (nccl-tests writes a number or null)"
            ));
        }
    };
    let mut c = Cell::measured(0.0, 0.0, 0.0, wrong);
    // `cpu_time` replaces `time` with -C 1; it is not the time bandwidths derive from.
    c.time_us = f("time");
    c.algbw = f("alg_bw");
    c.busbw = f("bus_bw");
    if c.time_us.is_none() && c.algbw.is_none() && c.busbw.is_none() {
        return Ok(None);
    }
    Ok(Some(c))
}

/// Closes a JSON document cut mid-write: back up to the end of the last complete object or list
/// and close what is still open.
fn close_truncated(text: &str) -> Option<Value> {
    const TRIES: usize = 8;
    let mut ends: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    brackets(text, |i, b| {
        if b == b'}' || b == b']' {
            if ends.len() == TRIES {
                ends.pop_front();
            }
            ends.push_back(i + 1);
        }
    });
    for &end in ends.iter().rev() {
        let mut open: Vec<u8> = Vec::new();
        brackets(&text[..end], |_, b| match b {
            b'{' | b'[' => open.push(b),
            _ => {
                open.pop();
            }
        });
        let mut s = text[..end].to_string();
        for b in open.iter().rev() {
            s.push(if *b == b'{' { '}' } else { ']' });
        }
        if let Ok(v) = serde_json::from_str(&s) {
            return Some(v);
        }
    }
    None
}

/// Calls `f` with the index and byte of every bracket outside strings.
fn brackets(text: &str, mut f: impl FnMut(usize, u8)) {
    let (mut in_str, mut esc) = (false, false);
    for (i, b) in text.bytes().enumerate() {
        if in_str {
            match (esc, b) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
        } else if b == b'"' {
            in_str = true;
        } else if matches!(b, b'{' | b'[' | b'}' | b']') {
            f(i, b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{"version":3,"args":["./build/all_gather_perf","-g","2"],"env":["NCCL_PROTO=Simple","HOME=/root"],"nccl_version":22803,
      "config":{"nthreads":1,"ngpus":2,"minimum_bytes":8,"maximum_bytes":128,"step_factor":4,"warmup_iters":1,"iterations":20,"aggregated_iterations":1,"validation":1,"graph":0,
        "devices":[{"rank":0,"group":0,"pid":1,"hostname":"vm","device":0,"device_hex":"0000:00:06","device_info":"NVIDIA H200"}]},
      "results":[{"size":0,"count":0,"type":"float","redop":"none","root":"    -1","out_of_place":{"time":1.17,"alg_bw":0.0,"bus_bw":0.0,"nwrong":0.0},"in_place":{"time":0.57,"alg_bw":0.0,"bus_bw":0.0,"nwrong":null}},
                 {"size":32,"count":4,"type":"float","redop":"none","root":"    -1","out_of_place":{"time":17.6,"alg_bw":0.0018,"bus_bw":0.0009,"nwrong":0.0},"in_place":{"time":17.3,"alg_bw":0.0018,"bus_bw":0.0009,"nwrong":0.0}}],
      "errors":[""],"end_time":"x"}"#;

    /// nccl-tests 2.19.6 `-I 1 -J` on one H200: every cell carries its iterations, and
    /// baton's formulas give the figures nccl-tests printed from the same times.
    #[test]
    fn reads_the_per_iteration_records_of_nccl_tests_2_19() {
        const REAL: &str = include_str!("../../tests/data/nccl-tests/h200x1/all_reduce-I1.json");
        let (log, _) = parse("all_reduce-I1.json", REAL).unwrap();
        assert_eq!(log.rows.len(), 8);
        for r in &log.rows {
            for c in [&r.out_of_place, &r.in_place] {
                let it = c.as_ref().unwrap().iterations.as_ref().expect("iterations");
                assert_eq!(it.times_us.len(), 50);
                assert_eq!(it.ranks.len(), 1);
                let ours = iterations::stats(&it.times_us);
                let theirs = it.summary;
                for (a, b) in [
                    (ours.min_us, theirs.min_us),
                    (ours.max_us, theirs.max_us),
                    (ours.avg_us, theirs.avg_us),
                    (ours.p50_us, theirs.p50_us),
                    (ours.p95_us, theirs.p95_us),
                    (ours.p99_us, theirs.p99_us),
                    (ours.stdev_us, theirs.stdev_us),
                    (ours.cv_pct, theirs.cv_pct),
                ] {
                    assert!(
                        (a - b).abs() <= 1e-3 * b.abs().max(1.0),
                        "{ours:?} vs {theirs:?}"
                    );
                }
            }
        }
        let first = log.rows[0].out_of_place.as_ref().unwrap();
        let it = first.iterations.as_ref().unwrap();
        assert_eq!((it.summary.min_us, it.summary.p99_us), (6.496, 18.528));
    }

    #[test]
    fn per_process_times_become_ranks_and_bad_records_are_named() {
        let with = |per_iter: &str| {
            DOC.replacen(
                r#""in_place":{"time":17.3"#,
                &format!(r#""in_place_per_iter":{per_iter},"in_place":{{"time":17.3"#),
                1,
            )
        };
        let two =
            with(r#"{"times_us":[2.0,4.0],"per_process_max_times_us":[[1.0,4.0],[2.0,3.0]]}"#);
        let (log, _) = parse("a.json", &two).unwrap();
        let it = log.rows[1]
            .in_place
            .as_ref()
            .unwrap()
            .iterations
            .clone()
            .unwrap();
        assert_eq!(it.ranks.len(), 2);
        assert_eq!(
            (it.ranks[0].stats.max_us, it.ranks[1].stats.max_us),
            (4.0, 3.0)
        );
        // No printed summary: computed from the times, as nccl-tests would have.
        assert_eq!(
            (it.summary.min_us, it.summary.max_us, it.summary.avg_us),
            (2.0, 4.0, 3.0)
        );
        for bad in [
            r#"{"times_us":"x"}"#,
            r#"{"times_us":[1.0,-2.0]}"#,
            r#"{"times_us":[1.0,2.0],"per_process_max_times_us":[[1.0]]}"#,
        ] {
            let (log, w) = parse("a.json", &with(bad)).unwrap();
            assert_eq!(log.rows.len(), 1, "{bad}: the row is skipped");
            assert!(
                w.iter().any(|w| w
                    .message
                    .contains("results[1] skipped: `in_place_per_iter`")),
                "{bad}: {w:?}"
            );
        }
    }

    #[test]
    fn reads_v3() {
        let (log, w) = parse("a.json", DOC).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(
            log.collective,
            Some(crate::collective::Collective::AllGather)
        );
        assert_eq!(log.nccl_version.as_deref(), Some("2.28.3"));
        assert_eq!(
            log.env.get("NCCL_PROTO").map(String::as_str),
            Some("Simple")
        );
        assert!(!log.env.contains_key("HOME"));
        // One process, two GPUs: two ranks.
        assert_eq!(log.devices.len(), 2);
        assert_eq!(log.devices[1].device, 1);
        assert_eq!(log.rows.len(), 2);
        assert_eq!(log.rows[0].in_place.as_ref().unwrap().wrong, None);
        assert!(log.complete);
    }

    #[test]
    fn truncated_documents_keep_their_rows() {
        let cut = &DOC[..DOC.find(r#"{"size":32"#).unwrap() + 30];
        let (log, _) = parse("a.json", cut).unwrap();
        assert_eq!(log.rows.len(), 1);
        assert!(!log.complete);
        assert!(parse("a.json", "{\"a\": [1, 2").is_err());
        assert!(parse("a.json", "[1, 2]").is_err());
        assert!(parse("a.json", "{\"version\": 3}").is_err());
        let huge = DOC.replace("\"rank\":0", "\"rank\":18446744073709551615");
        let (log, _) = parse("a.json", &huge).unwrap();
        assert_eq!(log.devices.len(), 1);
    }
}
