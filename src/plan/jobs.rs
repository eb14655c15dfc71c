//! The jobs a plan names, before any is built: each test's axes multiplied out (collective ×
//! dtype × op × split × env) in plan order, each point with its job ID — the test name plus the
//! value of every axis the user listed, in a fixed order, e.g.
//! `intra-node-allreduce[dtype=bfloat16,NCCL_PROTO=LL128]`. Stable across runs so results,
//! baselines and JUnit names line up. The plan's `relative.to` check and `expand` read the same
//! points, so the ID a criterion names is the one the run records.

use std::collections::HashSet;

use indexmap::IndexMap;

use super::model::{SplitSpec, Test};
use crate::collective::{Collective, Dtype, RedOp};
use crate::split::Split;

/// One job of a test, named.
pub struct Point<'p> {
    pub collective: Collective,
    pub dtype: Dtype,
    pub op: RedOp,
    pub split: Option<&'p SplitSpec>,
    pub env: &'p IndexMap<String, String>,
    /// Unique in the plan: a repeated ID gets `#2`, `#3`, …
    pub id: String,
}

/// Every test's points, in plan order (one list per test of `tests`).
pub fn points(tests: &[Test]) -> Vec<Vec<Point<'_>>> {
    let mut seen: HashSet<String> = HashSet::new();
    tests.iter().map(|t| test_points(t, &mut seen)).collect()
}

fn test_points<'p>(t: &'p Test, seen: &mut HashSet<String>) -> Vec<Point<'p>> {
    let a = &t.axes;
    let mut out = Vec::new();
    for &collective in &a.collective {
        for &dtype in &a.dtype {
            for &op in a.ops(collective) {
                for split in &a.split {
                    for env in &a.env {
                        let parsed = split.as_ref().map(|s| s.split);
                        let values = AxisValues {
                            collective,
                            dtype,
                            op,
                            split: parsed.as_ref(),
                            env,
                        };
                        let mut named: Vec<&str> = a.named.clone();
                        if !collective.reduces() {
                            named.retain(|n| *n != "op");
                        }
                        let id = unique(job_id(&t.name, &named, &values), seen);
                        out.push(Point {
                            collective,
                            dtype,
                            op,
                            split: split.as_ref(),
                            env,
                            id,
                        });
                    }
                }
            }
        }
    }
    out
}

/// `id`, or `id#2`, `id#3`, … when an earlier job took it.
fn unique(id: String, seen: &mut HashSet<String>) -> String {
    if seen.insert(id.clone()) {
        return id;
    }
    let mut k = 2;
    while !seen.insert(format!("{id}#{k}")) {
        k += 1;
    }
    format!("{id}#{k}")
}

struct AxisValues<'a> {
    pub collective: Collective,
    pub dtype: Dtype,
    pub op: RedOp,
    /// Named in its canonical form (`DIV 8`), so that an ID does not depend on the spelling.
    pub split: Option<&'a Split>,
    pub env: &'a IndexMap<String, String>,
}

fn job_id(test: &str, named: &[&str], v: &AxisValues<'_>) -> String {
    let mut parts: Vec<String> = Vec::new();
    for axis in named {
        match *axis {
            "collective" => parts.push(format!("collective={}", v.collective)),
            "dtype" => parts.push(format!("dtype={}", v.dtype)),
            "op" => parts.push(format!("op={}", v.op)),
            "split" => parts.push(match v.split {
                Some(s) => format!("split={s}"),
                None => "split=none".to_string(),
            }),
            "env" => parts.extend(v.env.iter().map(|(k, val)| format!("{k}={val}"))),
            _ => {}
        }
    }
    if parts.is_empty() {
        test.to_string()
    } else {
        format!("{test}[{}]", parts.join(","))
    }
}

/// The test name of a job ID (the part before `[`).
pub fn test_of(id: &str) -> &str {
    id.split_once('[').map_or(id, |(t, _)| t)
}
