//! What node verdicts become for the people who act on them: `nodes.json` (passed / failed /
//! suspect as Slurm hostlists, each node with its reason) and `drain.sh` (one `scontrol update
//! … State=DRAIN` per failed node). Both are pure text here; the caller writes them atomically
//! beside `results.json`. `drain.sh` is written, never run: draining is the engineer's call.

use schemars::JsonSchema;
use serde::Serialize;

use super::attribution::{Attribution, Fault, NodeReport, SetOutcome, Verdict};
use super::hostlist::compress;
use crate::probe::delta::{Change, summed};
use crate::shell::shell_quote;

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
    /// Tests over the whole node list that failed or could not run: findings about the
    /// cluster, which no node's verdict carries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster: Vec<ClusterEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct NodeEntry {
    pub host: String,
    pub verdict: Verdict,
    pub reason: String,
    /// Rounds of the sets it failed in and passed in, for the report's evidence column.
    pub failed_rounds: Vec<u32>,
    pub passed_rounds: Vec<u32>,
    /// Its verdict in each test, from the sets that tested it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<TestEntry>,
    /// What earlier runs said of it, when a later run (a rerun) measured it again: history,
    /// oldest first; the verdict above is the latest measurement's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<EarlierVerdict>,
    /// Node evidence that moved during a set that passed, or that others explain
    /// (`round 2: eth0 carrier_changes +2`): worth a look, no reason to drain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl NodeEntry {
    /// A verdict with its reason and nothing else known yet (rounds, tests, history).
    pub fn new(host: impl Into<String>, verdict: Verdict, reason: impl Into<String>) -> Self {
        NodeEntry {
            host: host.into(),
            verdict,
            reason: reason.into(),
            failed_rounds: Vec::new(),
            passed_rounds: Vec::new(),
            tests: Vec::new(),
            earlier: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

impl NodesFile {
    /// The file for these verdicts: its hostlists are always the nodes' own verdicts.
    pub fn of(nodes: Vec<NodeEntry>, faults: Vec<FaultEntry>, cluster: Vec<ClusterEntry>) -> Self {
        let with = |v: Verdict| {
            compress(
                &nodes
                    .iter()
                    .filter(|n| n.verdict == v)
                    .map(|n| n.host.as_str())
                    .collect::<Vec<_>>(),
            )
        };
        NodesFile {
            passed: with(Verdict::Passed),
            failed: with(Verdict::Failed),
            suspect: with(Verdict::Suspect),
            nodes,
            faults,
            cluster,
        }
    }
}

/// A node's verdict in one test.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TestEntry {
    pub test: String,
    /// The set that decided it (its failing set, else the first it passed in), as a hostlist;
    /// empty when no set of the test held it.
    pub set: String,
    pub verdict: TestVerdict,
    pub reason: String,
}

/// What one test says of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TestVerdict {
    Passed,
    Failed,
    Suspect,
    /// None of the test's sets that ran held it (it was dead before, or left out).
    NotTested,
    /// The test ran over the whole node list and failed as a whole: a cluster finding.
    Cluster,
}

impl TestVerdict {
    /// Whether it says something of the node itself.
    pub fn judged(self) -> bool {
        matches!(self, Self::Passed | Self::Failed | Self::Suspect)
    }
}

/// A verdict of an earlier run of the node.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct EarlierVerdict {
    /// Its results file.
    pub results: String,
    pub verdict: Verdict,
    pub reason: String,
}

/// A test over the whole cluster that failed, or could not run.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ClusterEntry {
    pub test: String,
    /// The nodes it ran on (or would have), as a hostlist.
    pub hosts: String,
    pub reason: String,
}

/// What one set measured and how it ended, beside its outcome: what a reason quotes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SetFacts {
    /// Its busbw (GB/s) at its largest size, median over repeats.
    pub busbw: Option<f64>,
    /// The first criterion it failed: its key (`busbw`, `wrong`, `results`) and its text.
    pub failed: Option<(&'static str, String)>,
    /// How its step ended.
    pub ended: Option<String>,
    /// What the launcher said of a node of it.
    pub launcher: Option<String>,
    /// Not run: a node of it was proven dead before.
    pub skipped: bool,
    /// Per host of the set, the node evidence that moved during its jobs (cited changes).
    pub moved: Vec<(String, Vec<Change>)>,
}

/// What moved on `host` during the sets `sets`, added up, a line each; only the node's own
/// changes when `local` (not TCP's, which a healthy node's sockets also count).
fn moved_on(host: &str, sets: &[usize], facts: &[SetFacts], local: bool) -> Vec<String> {
    let changes = sets
        .iter()
        .filter_map(|&k| facts.get(k))
        .flat_map(|f| f.moved.iter())
        .filter(|(h, _)| h == host)
        .flat_map(|(_, c)| c.iter())
        .filter(|c| !local || c.local());
    summed(changes).iter().map(Change::line).collect()
}

/// Warnings of a node: its own evidence that moved in a set its verdict does not rest on (a
/// passing set, or a failing one others explain), by round.
fn warnings(
    host: &str,
    r: &NodeReport,
    outcomes: &[SetOutcome],
    facts: &[SetFacts],
) -> Vec<String> {
    let cited: &[usize] = match r.verdict {
        Verdict::Passed => &[],
        _ => &r.failed_in,
    };
    r.passed_in
        .iter()
        .chain(r.failed_in.iter().filter(|k| !cited.contains(k)))
        .filter_map(|&k| {
            let m = moved_on(host, &[k], facts, true);
            (!m.is_empty()).then(|| format!("round {}: {}", outcomes[k].round, m.join(", ")))
        })
        .collect()
}

/// Criteria whose failure is a bandwidth figure: a reason quotes the number.
const BANDWIDTH: &[&str] = &[
    "busbw",
    "algbw",
    "outlier",
    "regression",
    "relative",
    "profile",
    "trend",
];

/// A bandwidth as reasons print it: three significant digits.
fn gbs(v: f64) -> String {
    let digits = if v > 0.0 { v.log10().floor() as i32 } else { 0 };
    let decimals = (2 - digits).clamp(0, 6) as usize;
    format!("{v:.decimals$}")
}

fn median_of(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    crate::stats::median(&mut v)
}

/// What a set of `n` nodes is called in a reason: (one, many).
fn noun(n: usize) -> (&'static str, &'static str) {
    match n {
        1 => ("node", "sets alone"),
        2 => ("pair", "pairs"),
        _ => ("set", "sets"),
    }
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

/// Why a node has its verdict, in one line an engineer can act on: for a failed node the
/// figure first (its busbw against the median set of its shape, or the criterion it failed),
/// then where, then who confirmed it. `facts` is indexed like `outcomes` (may be shorter).
pub fn reason(
    hosts: &[String],
    r: &NodeReport,
    outcomes: &[SetOutcome],
    facts: &[SetFacts],
) -> String {
    let round = |k: usize| outcomes[k].round;
    let fact = |k: usize| facts.get(k).cloned().unwrap_or_default();
    if let Some(k) = r.dead_in {
        let f = fact(k);
        if f.skipped {
            return "dead before this test: none of its sets ran".into();
        }
        let said = f
            .launcher
            .map_or(String::new(), |l| format!("; the launcher said: {l}"));
        return format!(
            "dead: did not answer after its set's step in round {} (set {}){said}; no later set ran on it",
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
    let moved = moved_on(&hosts[r.node], &r.failed_in, facts, false);
    let cite = |s: String| match moved.is_empty() {
        true => s,
        false => format!("{s}; {}", moved.join(", ")),
    };
    match r.verdict {
        Verdict::Failed if r.isolated_by.is_empty() && !r.evidence_in.is_empty() => {
            let sets = &r.evidence_in;
            let figure = figure(sets, outcomes, facts).unwrap_or_else(|| "failed".into());
            let all = r.failed_in.len() + r.passed_in.len();
            format!(
                "{figure}; {}; in {} of {all} {}, with {}, whose counters did not move",
                moved.join(", "),
                sets.len(),
                noun(outcomes[sets[0]].nodes.len()).1,
                list(hosts, partners(sets))
            )
        }
        Verdict::Failed => {
            let p = partners(&r.isolated_by);
            let figure = match (figure(&r.isolated_by, outcomes, facts), moved.is_empty()) {
                (Some(f), true) => f + ",",
                (None, true) => "failed".into(),
                (f, false) => {
                    let f = f.unwrap_or_else(|| "failed".into());
                    format!("{f}; {};", moved.join(", "))
                }
            };
            if p.is_empty() {
                let rounds: Vec<String> = r
                    .isolated_by
                    .iter()
                    .map(|&k| round(k).to_string())
                    .collect();
                format!("{figure} alone in round {}", rounds.join(", "))
            } else {
                let shape = outcomes[r.isolated_by[0]].nodes.len();
                let all = r.failed_in.len() + r.passed_in.len();
                format!(
                    "{figure} in {} of {all} {}; confirmed with {} (which passed elsewhere)",
                    r.isolated_by.len(),
                    noun(shape).1,
                    list(hosts, p)
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
        Verdict::Suspect if !r.passed_in.is_empty() => cite(format!(
            "failed with {} (which passed elsewhere) yet passed with {}",
            list(hosts, partners(&r.failed_in)),
            list(hosts, partners(&r.passed_in))
        )),
        Verdict::Suspect => {
            let p = partners(&r.failed_in);
            cite(format!(
                "in {} failing set(s) with {}, never isolated",
                r.failed_in.len(),
                list(hosts, p)
            ))
        }
        // Given by the preflight, never by attribution.
        Verdict::ConfigMismatch => "config-mismatch".into(),
    }
}

/// The evidence of a failed node's isolating sets as a figure: its busbw against the median
/// set of the same shape when a bandwidth criterion failed, else the criterion, else how the
/// step ended; `None` when nothing is known but that it failed.
fn figure(sets: &[usize], outcomes: &[SetOutcome], facts: &[SetFacts]) -> Option<String> {
    let fact = |k: usize| facts.get(k).cloned().unwrap_or_default();
    let failed = sets.iter().find_map(|&k| fact(k).failed);
    let shape = outcomes[sets[0]].nodes.len();
    if failed
        .as_ref()
        .is_some_and(|(key, _)| BANDWIDTH.contains(key))
    {
        let mine = median_of(sets.iter().filter_map(|&k| fact(k).busbw).collect());
        let fleet: Vec<f64> = (0..outcomes.len())
            .filter(|&k| outcomes[k].nodes.len() == shape)
            .filter_map(|k| fact(k).busbw)
            .collect();
        let peers = fleet.len();
        if let (Some(v), Some(m)) = (mine, median_of(fleet))
            && peers >= crate::nodeset::attribution::MIN_PEERS
            && m > 0.0
            && v < m
        {
            return Some(format!(
                "busbw {} GB/s, {:.0}% below the median {} ({} GB/s)",
                gbs(v),
                (m - v) / m * 100.0,
                noun(shape).0,
                gbs(m)
            ));
        }
    }
    let ended = sets
        .iter()
        .filter_map(|&k| fact(k).ended)
        .find(|e| e != "exit 0");
    match (failed, ended) {
        // Incomplete results say no more than how the step ended.
        (Some(("results", _)) | None, Some(e)) => Some(format!("its step ended: {e}")),
        (Some((_, text)), Some(e)) => Some(format!("failed `{text}` (step: {e})")),
        (Some((_, text)), None) => Some(format!("failed `{text}`")),
        (None, None) => None,
    }
}

/// `nodes.json` for the nodes named `hosts` (by index, as in the outcomes).
pub fn nodes_file(
    hosts: &[String],
    a: &Attribution,
    outcomes: &[SetOutcome],
    facts: &[SetFacts],
) -> NodesFile {
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
            failed_rounds: rounds(&[&r.failed_in[..], r.dead_in.as_slice()].concat()),
            passed_rounds: rounds(&r.passed_in),
            warnings: warnings(&hosts[r.node], r, outcomes, facts),
            ..NodeEntry::new(&hosts[r.node], r.verdict, reason(hosts, r, outcomes, facts))
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
    NodesFile::of(nodes, faults, Vec::new())
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
        .filter(|n| matches!(n.verdict, Verdict::Failed | Verdict::ConfigMismatch))
        .collect();
    if failed.is_empty() {
        out.push_str("# No node failed: nothing to drain.\n");
    }
    for n in failed {
        let why = drain_reason(&format!("baton: {context}: {}", n.reason));
        out.push_str(&format!(
            "scontrol update NodeName={} State=DRAIN Reason={}\n",
            shell_quote(&n.host),
            shell_quote(&why)
        ));
    }
    out
}

/// A reason as Slurm keeps it: one line, at most [`MAX_REASON`] characters, cut after the last
/// whole part (`; `) that fits, so the strongest evidence, which comes first, stays whole.
fn drain_reason(reason: &str) -> String {
    let why: String = reason
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if why.chars().count() <= MAX_REASON {
        return why;
    }
    let head: String = why.chars().take(MAX_REASON - 1).collect();
    match head.rfind("; ") {
        Some(cut) if cut > head.len() / 2 => format!("{}…", &head[..cut]),
        _ => head + "…",
    }
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
        let f = nodes_file(&h, &a, &out, &[]);
        assert_eq!(f.passed, "node[01-03]");
        assert_eq!(f.failed, "node[04,06]");
        assert_eq!(f.suspect, "node[05,07-08]");
        let by = |host: &str| f.nodes.iter().find(|n| n.host == host).unwrap();
        assert_eq!(
            by("node04").reason,
            "failed in 2 of 2 pairs; confirmed with node[02-03] (which passed elsewhere)"
        );
        assert_eq!(
            by("node06").reason,
            "dead: did not answer after its set's step in round 1 (set node[05-06]); no later set ran on it"
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
        let f = nodes_file(&h, &attribute(8, &out), &out, &[]);
        let s = drain_script(&f, "accept/pairs");
        let lines: Vec<&str> = s.lines().filter(|l| l.starts_with("scontrol")).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0],
            "scontrol update NodeName='node04' State=DRAIN Reason='baton: accept/pairs: failed in 2 of 2 pairs; confirmed with node[02-03] (which passed elsewhere)'"
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

    /// #21 item 10: a failed node's reason leads with the figure, then where, then who
    /// confirmed it; a hung set says so; a dead node names what the launcher said.
    #[test]
    fn reasons_lead_with_the_figure() {
        use crate::nodeset::schedule::{Over, Pairing, rounds};
        let h = hosts(8);
        let out: Vec<SetOutcome> = rounds(&Over::Pairs(Pairing::All), 8)
            .unwrap()
            .iter()
            .enumerate()
            .flat_map(|(r, round)| round.sets.iter().map(move |s| (r as u32 + 1, s.clone())))
            .map(|(r, s)| {
                let bad = s.contains(&2);
                o(
                    r,
                    &s,
                    if bad {
                        SetResult::Fail
                    } else {
                        SetResult::Pass
                    },
                )
            })
            .collect();
        let facts: Vec<SetFacts> = out
            .iter()
            .map(|o| SetFacts {
                busbw: Some(if o.nodes.contains(&2) { 0.0018 } else { 0.061 }),
                failed: (o.result == SetResult::Fail)
                    .then(|| ("outlier", "outlier <= 10% at 4G".to_string())),
                ended: Some("exit 0".into()),
                ..SetFacts::default()
            })
            .collect();
        let f = nodes_file(&h, &attribute(8, &out), &out, &facts);
        assert_eq!(
            f.nodes[2].reason,
            "busbw 0.00180 GB/s, 97% below the median pair (0.0610 GB/s), in 7 of 7 pairs; \
             confirmed with node[01-02,04-08] (which passed elsewhere)"
        );
        // Hung alone; dead, in the launcher's words; dead before the test.
        let out = vec![
            o(1, &[0], SetResult::Fail),
            o(1, &[1], SetResult::Dead(vec![1])),
            o(1, &[2], SetResult::Dead(vec![2])),
            o(1, &[3], SetResult::Pass),
        ];
        let facts = vec![
            SetFacts {
                failed: Some(("results", "results present and complete".into())),
                ended: Some("no new row for 40 s: stopped as hung".into()),
                ..SetFacts::default()
            },
            SetFacts {
                launcher: Some("srun: error: Node failure on node02".into()),
                ..SetFacts::default()
            },
            SetFacts {
                skipped: true,
                ..SetFacts::default()
            },
        ];
        let f = nodes_file(&h[..4], &attribute(4, &out), &out, &facts);
        assert_eq!(
            f.nodes[0].reason,
            "its step ended: no new row for 40 s: stopped as hung, alone in round 1"
        );
        assert_eq!(
            f.nodes[1].reason,
            "dead: did not answer after its set's step in round 1 (set node02); the launcher \
             said: srun: error: Node failure on node02; no later set ran on it"
        );
        assert_eq!(
            f.nodes[2].reason,
            "dead before this test: none of its sets ran"
        );
    }

    /// #24: what moved on a node during its failing sets is cited in its reason and drain
    /// line; its partners, whose counters did not move, are not blamed by it; what moved
    /// during a passing set is a warning.
    #[test]
    fn reasons_cite_what_moved_on_the_node_and_only_there() {
        use crate::nodeset::schedule::{Over, Pairing, rounds};
        let h = hosts(6);
        let out: Vec<SetOutcome> = rounds(&Over::Pairs(Pairing::All), 6)
            .unwrap()
            .iter()
            .enumerate()
            .flat_map(|(r, round)| round.sets.iter().map(move |s| (r as u32 + 1, s.clone())))
            .map(|(r, s)| {
                let bad = s.contains(&2);
                o(
                    r,
                    &s,
                    if bad {
                        SetResult::Fail
                    } else {
                        SetResult::Pass
                    },
                )
            })
            .collect();
        let facts: Vec<SetFacts> = out
            .iter()
            .map(|o| SetFacts {
                failed: (o.result == SetResult::Fail).then(|| ("wrong", "wrong == 0".to_string())),
                moved: if o.nodes.contains(&2) {
                    vec![("node03".into(), vec![up("eth0", "carrier_changes", 4)])]
                } else if o.nodes.contains(&5) && o.round == 1 {
                    vec![(
                        "node06".into(),
                        vec![up("tcp", "RetransSegs", 3), up("eth0", "link_downed", 1)],
                    )]
                } else {
                    vec![]
                },
                ..SetFacts::default()
            })
            .collect();
        let f = nodes_file(&h, &attribute(6, &out), &out, &facts);
        let bad = &f.nodes[2];
        assert_eq!(bad.verdict, Verdict::Failed);
        assert!(
            bad.reason
                .starts_with("failed `wrong == 0`; eth0 carrier_changes +20; in 5 of 5 pairs"),
            "{}",
            bad.reason
        );
        assert!(bad.warnings.is_empty());
        for n in [0, 1, 3, 4] {
            assert!(!f.nodes[n].reason.contains("carrier"), "{:?}", f.nodes[n]);
            assert!(f.nodes[n].warnings.is_empty(), "{:?}", f.nodes[n]);
        }
        assert_eq!(f.nodes[5].verdict, Verdict::Passed);
        assert_eq!(f.nodes[5].warnings, ["round 1: eth0 link_downed +1"]);
        let drain = drain_script(&f, "p/pairs");
        assert!(drain.contains("eth0 carrier_changes +20"), "{drain}");
    }

    fn up(subject: &str, what: &str, by: u64) -> Change {
        Change {
            subject: subject.into(),
            what: what.into(),
            kind: crate::probe::delta::ChangeKind::Increased {
                before: 10,
                after: 10 + by,
            },
        }
    }

    #[test]
    fn drain_reasons_keep_whole_parts() {
        let long = format!("baton: p: a: {}; b: {}", "x".repeat(120), "y".repeat(120));
        let r = drain_reason(&long);
        assert!(r.chars().count() <= MAX_REASON, "{r}");
        assert!(r.ends_with("x…") && !r.contains('y'), "{r}");
    }
}
