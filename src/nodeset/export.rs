//! What node verdicts become for the people who act on them: `nodes.json` (passed / failed /
//! suspect as Slurm hostlists, each node with its reason) and `drain.sh` (one `scontrol update
//! … State=DRAIN` per failed node). Both are pure text here; the caller writes them atomically
//! beside `results.json`. `drain.sh` is written, never run: draining is the engineer's call.

use schemars::JsonSchema;
use serde::Serialize;

use super::attribution::{Attribution, Fault, NodeReport, SetOutcome, Verdict};
use super::hostlist::compress;
use crate::render::quote::shell_quote;

/// Longest drain reason: Slurm keeps the reason in its state files and shows it in `sinfo -R`,
/// where a paragraph helps nobody.
pub const MAX_REASON: usize = 200;

/// The content of `nodes.json` (schema: `schemas/nodes.schema.json`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(title = "baton node verdicts")]
pub struct NodesFile {
    /// Hostlists, ready for `-w`, `--exclude` or `baton run --nodes`.
    pub passed: String,
    pub failed: String,
    pub suspect: String,
    pub nodes: Vec<NodeEntry>,
    pub faults: Vec<FaultEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct NodeEntry {
    pub host: String,
    pub verdict: Verdict,
    pub reason: String,
    /// Rounds of the sets it failed in and passed in, for the report's evidence column.
    pub failed_rounds: Vec<u32>,
    pub passed_rounds: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FaultEntry {
    /// `link`, `set`, `intermittent` or `boundary`.
    pub kind: &'static str,
    /// One side (or the whole set) as a hostlist.
    pub a: String,
    /// The other side; empty for a set fault.
    pub b: String,
    pub reason: String,
}

fn names(hosts: &[String], idx: impl IntoIterator<Item = usize>) -> Vec<&str> {
    idx.into_iter().map(|i| hosts[i].as_str()).collect()
}

fn list(hosts: &[String], idx: impl IntoIterator<Item = usize>) -> String {
    compress(&names(hosts, idx))
}

/// The JSON Schema of `nodes.json` (draft 2020-12), generated from the types above.
pub fn nodes_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(NodesFile)).expect("schema serializes")
}

/// Why a node has its verdict, in one line an engineer can act on.
pub fn reason(hosts: &[String], r: &NodeReport, outcomes: &[SetOutcome]) -> String {
    let round = |k: usize| outcomes[k].round;
    if let Some(k) = r.dead_in {
        return format!(
            "dead: did not answer in round {} (set {}), so no later set ran on it",
            round(k),
            list(hosts, outcomes[k].nodes.iter().copied())
        );
    }
    let partners = |sets: &[usize]| {
        let mut p: Vec<usize> = sets
            .iter()
            .flat_map(|&k| outcomes[k].nodes.iter().copied())
            .filter(|&i| i != r.node)
            .collect();
        p.sort();
        p.dedup();
        p
    };
    match r.verdict {
        Verdict::Failed => {
            let p = partners(&r.isolated_by);
            let rounds: Vec<String> = r
                .isolated_by
                .iter()
                .map(|&k| round(k).to_string())
                .collect();
            if p.is_empty() {
                format!("failed alone in round {}", rounds.join(", "))
            } else {
                format!(
                    "failed with {} (which passed elsewhere) in round {}",
                    list(hosts, p),
                    rounds.join(", ")
                )
            }
        }
        Verdict::Passed => {
            let n = r.passed_in.len();
            let also = if r.failed_in.is_empty() {
                String::new()
            } else {
                format!(
                    "; its {} failing set(s) are explained by others",
                    r.failed_in.len()
                )
            };
            let passed = format!("passed in {n} set{}", if n == 1 { "" } else { "s" });
            match (r.known_good, n) {
                (true, 0) => format!("known good: passed in the earlier run{also}"),
                (true, _) => format!("known good: passed in the earlier run, {passed}{also}"),
                (false, _) => format!("{passed}{also}"),
            }
        }
        Verdict::Suspect if r.failed_in.is_empty() && r.passed_in.is_empty() => {
            "never tested".into()
        }
        Verdict::Suspect if !r.passed_in.is_empty() => format!(
            "failed with {} (which passed elsewhere) yet passed with {}",
            list(hosts, partners(&r.isolated_by)),
            list(hosts, partners(&r.passed_in))
        ),
        Verdict::Suspect => {
            let p = partners(&r.failed_in);
            format!(
                "in {} failing set(s) with {}, never isolated",
                r.failed_in.len(),
                list(hosts, p)
            )
        }
    }
}

/// `nodes.json` for the nodes named `hosts` (by index, as in the outcomes).
pub fn nodes_file(hosts: &[String], a: &Attribution, outcomes: &[SetOutcome]) -> NodesFile {
    let rounds = |sets: &[usize]| {
        let mut r: Vec<u32> = sets.iter().map(|&k| outcomes[k].round).collect();
        r.sort_unstable();
        r.dedup();
        r
    };
    let nodes = a
        .nodes
        .iter()
        .map(|r| NodeEntry {
            host: hosts[r.node].clone(),
            verdict: r.verdict,
            reason: reason(hosts, r, outcomes),
            failed_rounds: rounds(&[&r.failed_in[..], r.dead_in.as_slice()].concat()),
            passed_rounds: rounds(&r.passed_in),
        })
        .collect();
    let faults = a
        .faults
        .iter()
        .map(|f| match f {
            Fault::Link { a, b, set } => FaultEntry {
                kind: "link",
                a: hosts[*a].clone(),
                b: hosts[*b].clone(),
                reason: format!(
                    "failed together in round {}, each passed with others",
                    outcomes[*set].round
                ),
            },
            Fault::Set { nodes, set } => FaultEntry {
                kind: "set",
                a: list(hosts, nodes.iter().copied()),
                b: String::new(),
                reason: format!(
                    "failed in round {} although every node passed elsewhere",
                    outcomes[*set].round
                ),
            },
            Fault::Intermittent { nodes, sets } => FaultEntry {
                kind: "intermittent",
                a: list(hosts, nodes.iter().copied()),
                b: String::new(),
                reason: format!(
                    "the same set failed and passed (rounds {})",
                    sets.iter()
                        .map(|&k| outcomes[k].round.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
            Fault::Boundary { a, b, sets } => FaultEntry {
                kind: "boundary",
                a: list(hosts, a.iter().copied()),
                b: list(hosts, b.iter().copied()),
                reason: format!(
                    "each side passed alone; together they failed {} time(s)",
                    sets.len()
                ),
            },
        })
        .collect();
    NodesFile {
        passed: list(hosts, a.with(Verdict::Passed)),
        failed: list(hosts, a.with(Verdict::Failed)),
        suspect: list(hosts, a.with(Verdict::Suspect)),
        nodes,
        faults,
    }
}

/// `drain.sh`: one `scontrol update` per failed node, every value shell-quoted. `context`
/// (e.g. `plan/test`) goes into each reason so `sinfo -R` says where the verdict came from.
pub fn drain_script(file: &NodesFile, context: &str) -> String {
    let mut out = String::from(
        "#!/bin/sh\n# Written by baton; never run by it. Review, then run to drain the failed nodes.\nset -eu\n",
    );
    let failed: Vec<&NodeEntry> = file
        .nodes
        .iter()
        .filter(|n| n.verdict == Verdict::Failed)
        .collect();
    if failed.is_empty() {
        out.push_str("# No node failed: nothing to drain.\n");
    }
    for n in failed {
        let mut why: String = format!("baton: {context}: {}", n.reason)
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        if why.chars().count() > MAX_REASON {
            why = why.chars().take(MAX_REASON - 1).collect::<String>() + "…";
        }
        out.push_str(&format!(
            "scontrol update NodeName={} State=DRAIN Reason={}\n",
            shell_quote(&n.host),
            shell_quote(&why)
        ));
    }
    out
}

/// Writes `nodes.json` and `drain.sh` (mode 0755, never run) into `dir`, atomically and never
/// through a link. `context` goes into each drain reason. Returns the paths written.
pub fn write_files(
    dir: &std::path::Path,
    file: &NodesFile,
    context: &str,
) -> Result<Vec<std::path::PathBuf>, crate::output::OutputError> {
    let json = dir.join("nodes.json");
    let mut text = serde_json::to_vec_pretty(file).map_err(|e| crate::output::OutputError::Io {
        path: json.display().to_string(),
        source: std::io::Error::other(e),
    })?;
    text.push(b'\n');
    crate::output::write_atomic(&json, &text)?;
    let drain = dir.join("drain.sh");
    crate::output::write_atomic_mode(&drain, drain_script(file, context).as_bytes(), 0o755)?;
    Ok(vec![json, drain])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodeset::attribution::{SetResult, attribute};

    fn hosts(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("node{i:02}")).collect()
    }

    fn o(round: u32, nodes: &[usize], result: SetResult) -> SetOutcome {
        SetOutcome {
            round,
            nodes: nodes.to_vec(),
            result,
        }
    }

    fn sample() -> (Vec<String>, Vec<SetOutcome>) {
        use SetResult::*;
        let out = vec![
            o(1, &[0, 1], Pass),
            o(1, &[2, 3], Fail),
            o(1, &[4, 5], Dead(vec![5])),
            o(2, &[0, 2], Pass),
            o(2, &[1, 3], Fail),
            o(2, &[4, 6], Fail),
        ];
        (hosts(8), out)
    }

    #[test]
    fn nodes_file_lists_verdicts_as_hostlists_with_reasons() {
        let (h, out) = sample();
        let a = attribute(8, &out);
        let f = nodes_file(&h, &a, &out);
        assert_eq!(f.passed, "node[01-03]");
        assert_eq!(f.failed, "node[04,06]");
        assert_eq!(f.suspect, "node[05,07-08]");
        let by = |host: &str| f.nodes.iter().find(|n| n.host == host).unwrap();
        assert_eq!(
            by("node04").reason,
            "failed with node[02-03] (which passed elsewhere) in round 1, 2"
        );
        assert_eq!(
            by("node06").reason,
            "dead: did not answer in round 1 (set node[05-06]), so no later set ran on it"
        );
        assert_eq!(
            by("node05").reason,
            "in 1 failing set(s) with node07, never isolated"
        );
        assert_eq!(by("node08").reason, "never tested");
        assert_eq!(by("node04").failed_rounds, [1, 2]);
        let json = serde_json::to_value(&f).unwrap();
        assert_eq!(json["nodes"][3]["verdict"], "failed");
    }

    #[test]
    fn drain_lines_are_quoted_and_only_for_failed_nodes() {
        let (h, out) = sample();
        let f = nodes_file(&h, &attribute(8, &out), &out);
        let s = drain_script(&f, "accept/pairs");
        let lines: Vec<&str> = s.lines().filter(|l| l.starts_with("scontrol")).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0],
            "scontrol update NodeName='node04' State=DRAIN Reason='baton: accept/pairs: failed with node[02-03] (which passed elsewhere) in round 1, 2'"
        );
        // Nothing from a plan escapes its quotes, and a reason stays on one line.
        let s = drain_script(&f, "it's\n$(reboot)");
        assert!(s.contains("Reason='baton: it'\\''s $(reboot): "));
        assert_eq!(s.lines().filter(|l| l.starts_with("scontrol")).count(), 2);
        let long = drain_script(&f, &"x".repeat(500));
        assert!(long.lines().all(|l| l.chars().count() < MAX_REASON + 60));
        let none = NodesFile {
            nodes: vec![],
            faults: vec![],
            ..f
        };
        assert!(drain_script(&none, "p").contains("nothing to drain"));
    }
}
