//! Job IDs: the test name plus the value of every axis the user listed, in a fixed order, e.g.
//! `intra-node-allreduce[dtype=bfloat16,NCCL_PROTO=LL128]`. Stable across runs so results,
//! baselines and JUnit names line up.

use indexmap::IndexMap;

use crate::collective::{Collective, Dtype, RedOp};
use crate::split::Split;

pub struct AxisValues<'a> {
    pub collective: Collective,
    pub dtype: Dtype,
    pub op: RedOp,
    /// Named in its canonical form (`DIV 8`), so that an ID does not depend on the spelling.
    pub split: Option<&'a Split>,
    pub env: &'a IndexMap<String, String>,
}

pub fn job_id(test: &str, named: &[&str], v: &AxisValues<'_>) -> String {
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
