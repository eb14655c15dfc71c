//! The signable report's view model (`report::acceptance::Acceptance`) filled from the
//! acceptance's outcome and each phase's grade: the report decides nothing, so every verdict
//! it shows is the one `acceptance.json` holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::outcome::{AcceptanceFile, Overall};
use super::record::{NodeVerdict, PhaseRecord, PhaseStatus};
use crate::grade::Grade;
use crate::nodeset::compress;
use crate::report::ReportError;
use crate::report::acceptance::{
    Acceptance, Cell, CellVerdict, ClusterVerdict, Drain, InventoryRow, Phase, PhaseVerdict,
    RunFacts,
};

/// What the outcome does not know: the cluster's name and the command, as the caller says them.
pub struct Context {
    /// The site's name, else the acceptance's.
    pub cluster: String,
    /// The command that reproduces the run (never the raw command line: a `--set` may carry
    /// a secret).
    pub command: String,
}

/// Writes `acceptance.html` and `acceptance.md` into `dir`.
pub fn write_report(
    dir: &Path,
    a: &AcceptanceFile,
    grades: &[Option<Grade>],
    ctx: &Context,
) -> Result<Vec<PathBuf>, ReportError> {
    crate::report::acceptance::write(dir, &view(a, grades, ctx))
}

/// The report's view of the outcome.
pub fn view(a: &AcceptanceFile, grades: &[Option<Grade>], ctx: &Context) -> Acceptance {
    let hosts = |v: Overall| -> Vec<String> {
        a.node_verdicts
            .iter()
            .filter(|n| n.verdict == v)
            .map(|n| n.host.clone())
            .collect()
    };
    let (accepted, failed, suspect) = (
        hosts(Overall::Passed),
        hosts(Overall::Failed),
        hosts(Overall::Suspect),
    );
    let verdict = cluster_verdict(a, &failed, &suspect, accepted.is_empty());
    Acceptance {
        cluster: ctx.cluster.clone(),
        verdict,
        summary: summary(a, verdict, accepted.len()),
        nodes: a.node_verdicts.iter().map(|n| n.host.clone()).collect(),
        drain: a
            .node_verdicts
            .iter()
            .filter(|n| n.verdict == Overall::Failed)
            .map(|n| Drain {
                host: n.host.clone(),
                reason: n.reason.clone(),
            })
            .collect(),
        accepted,
        failed,
        suspect,
        findings: a.findings.clone(),
        inventory: inventory(&a.phases, grades),
        run: facts(a, grades, ctx),
        phases: a
            .phases
            .iter()
            .zip(grades)
            .map(|(r, g)| phase(r, g.as_ref()))
            .collect(),
    }
}

fn cluster_verdict(
    a: &AcceptanceFile,
    failed: &[String],
    suspect: &[String],
    none_accepted: bool,
) -> ClusterVerdict {
    let st = |s: PhaseStatus| a.phases.iter().any(|r| r.status == s);
    if a.status == "interrupted" || st(PhaseStatus::Stopped) || st(PhaseStatus::Blocked) {
        ClusterVerdict::Incomplete
    } else if st(PhaseStatus::ClusterFailed) || !a.findings.is_empty() || none_accepted {
        ClusterVerdict::Rejected
    } else if failed.is_empty() && suspect.is_empty() {
        ClusterVerdict::Accepted
    } else {
        ClusterVerdict::AcceptedWithExclusions
    }
}

fn summary(a: &AcceptanceFile, v: ClusterVerdict, accepted: usize) -> String {
    let total = a.node_verdicts.len();
    let out: Vec<String> = a
        .node_verdicts
        .iter()
        .filter(|n| n.verdict != Overall::Passed)
        .map(|n| {
            let first = n.phases.iter().find(|c| c.verdict.is_fault());
            match first {
                Some(c) => format!("{} ({} in {})", n.host, word(c.verdict), c.phase),
                None => format!("{} (suspect)", n.host),
            }
        })
        .collect();
    let left = if out.is_empty() {
        String::new()
    } else {
        format!("; {} left out", out.join(", "))
    };
    match v {
        ClusterVerdict::Incomplete => format!(
            "not every phase ran{}; {accepted} of {total} nodes passed what ran{left}",
            a.stopped
                .as_ref()
                .map_or(String::new(), |s| format!(" ({s})"))
        ),
        ClusterVerdict::Rejected if !a.findings.is_empty() => format!(
            "{} cluster finding(s); {accepted} of {total} nodes passed{left}",
            a.findings.len()
        ),
        _ => format!("{accepted} of {total} nodes passed every phase that tested them{left}"),
    }
}

fn word(v: NodeVerdict) -> &'static str {
    match v {
        NodeVerdict::Dead => "dead",
        _ => "failed",
    }
}

/// (kind, item, value) → the nodes that have it.
type Seen = BTreeMap<(&'static str, String, String), Vec<String>>;

/// The versions every phase's results recorded, each with the nodes that ran under it, and
/// each host's GPUs: one item with two rows is a mismatch a reader sees at once.
fn inventory(phases: &[PhaseRecord], grades: &[Option<Grade>]) -> Vec<InventoryRow> {
    let mut seen = Seen::new();
    for (r, g) in phases.iter().zip(grades) {
        let Some(g) = g else { continue };
        let env = &g.environment;
        let ran: Vec<String> = r
            .nodes
            .iter()
            .filter(|n| !matches!(n.verdict, NodeVerdict::Excluded | NodeVerdict::NotRun))
            .map(|n| n.host.clone())
            .collect();
        for (item, v) in [
            ("driver", &env.driver_version),
            ("CUDA", &env.cuda_version),
            ("NCCL", &env.nccl_version),
            ("MPI", &env.mpi_version),
        ] {
            if let Some(v) = v {
                let e = seen
                    .entry(("software", item.into(), v.clone()))
                    .or_default();
                e.extend(ran.iter().cloned());
            }
        }
        add_facts(&mut seen, &g.facts);
        for h in &env.hosts {
            if let Some(gpus) = gpus(h) {
                let e = seen.entry(("hardware", "GPU".into(), gpus)).or_default();
                e.push(h.hostname.clone());
            }
        }
    }
    rows(seen)
}

fn rows(seen: Seen) -> Vec<InventoryRow> {
    seen.into_iter()
        .map(|((kind, item, value), mut nodes)| {
            nodes.sort();
            nodes.dedup();
            InventoryRow {
                kind,
                item,
                value,
                nodes: compress(&nodes),
            }
        })
        .collect()
}

/// Rows of what the preflight's probes found on each node: a field with two values is two rows.
fn add_facts(seen: &mut Seen, facts: &[crate::nodeset::fleet::InventoryRow]) {
    for row in facts {
        let (kind, item) = fact_item(&row.field);
        for (value, hosts) in &row.values {
            let e = seen.entry((kind, item.clone(), value.clone())).or_default();
            e.extend(hosts.iter().cloned());
        }
    }
}

/// A preflight fact's kind and item, named as the results' environment names the same
/// software (`NCCL`), so one version is one row.
fn fact_item(field: &str) -> (&'static str, String) {
    match field {
        "nccl" => ("software", "NCCL".into()),
        "kernel" | "driver" | "peermem" => ("software", field.into()),
        _ => ("hardware", field.into()),
    }
}

/// `8 × NVIDIA H200 (141 GB)`.
fn gpus(h: &crate::results::Host) -> Option<String> {
    let first = h.gpus.first()?;
    let mem = first
        .memory_bytes
        .map_or(String::new(), |b| format!(" ({} GB)", b / 1_000_000_000));
    Some(format!("{} × {}{mem}", h.gpus.len(), first.name))
}

fn facts(a: &AcceptanceFile, grades: &[Option<Grade>], ctx: &Context) -> RunFacts {
    RunFacts {
        file: a.file.clone(),
        revisions: revisions(a, grades),
        started: a.started.clone(),
        finished: a.finished.clone(),
        duration_s: a.seconds.map(|s| s.round() as u64),
        by: a.ran_by.user.clone(),
        host: Some(a.ran_by.host.clone()),
        command: Some(ctx.command.clone()),
        baton: format!("baton {}", a.ran_by.baton),
    }
}

/// The acceptance file's revision and each one the phase plans ran at, with the phases at it;
/// one line when they are all the same.
fn revisions(a: &AcceptanceFile, grades: &[Option<Grade>]) -> Vec<String> {
    let rev = |r: &crate::plan::revision::GitRevision| {
        let short: String = r.commit.chars().take(12).collect();
        format!("git {short}{}", if r.dirty { " (dirty)" } else { "" })
    };
    let mut revisions: Vec<String> = a
        .revision
        .iter()
        .map(|r| format!("acceptance: {}", rev(r)))
        .collect();
    let mut plans: Vec<(String, Vec<&str>)> = Vec::new();
    for (r, g) in a.phases.iter().zip(grades) {
        let Some(git) = g.as_ref().and_then(|g| g.run.git.as_ref()).map(rev) else {
            continue;
        };
        match plans.iter_mut().find(|(v, _)| *v == git) {
            Some((_, names)) => names.push(&r.name),
            None => plans.push((git, vec![&r.name])),
        }
    }
    if let ([acc], [(git, _)]) = (&revisions[..], &plans[..])
        && acc.ends_with(git.as_str())
    {
        return vec![format!("{git}: the acceptance and every phase plan")];
    }
    for (git, names) in plans {
        let word = if names.len() == 1 { "phase" } else { "phases" };
        revisions.push(format!("{word} {}: {git}", names.join(", ")));
    }
    if revisions.is_empty() {
        revisions.push("not in a git repository".into());
    }
    revisions
}

fn phase(r: &PhaseRecord, g: Option<&Grade>) -> Phase {
    let ran = r.status.ran();
    Phase {
        id: anchor(&r.name),
        name: format!("Phase {}", r.name),
        verdict: match r.status {
            PhaseStatus::Passed => PhaseVerdict::Passed,
            PhaseStatus::Failed | PhaseStatus::ClusterFailed => PhaseVerdict::Failed,
            _ => PhaseVerdict::NotRun,
        },
        summary: phase_summary(r),
        duration_s: r.seconds.map(|s| s.round() as u64),
        report: ran.then(|| format!("{}/report/report.html", r.dir)),
        cells: r.nodes.iter().filter_map(cell).collect(),
        grade: g.cloned(),
    }
}

/// A phase name as an HTML id: letters, digits, `-` and `_`, the rest `-`.
fn anchor(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

fn phase_summary(r: &PhaseRecord) -> String {
    if !r.status.ran() {
        return format!(
            "{}: {}",
            super::outcome::phase_word(r.status),
            r.why.as_deref().unwrap_or("")
        );
    }
    let n = r
        .nodes
        .iter()
        .filter(|n| !matches!(n.verdict, NodeVerdict::Excluded | NodeVerdict::NotRun))
        .count();
    let mut s = format!("plan {} on {n} node(s) {}", r.plan, r.nodes_in);
    if !r.nodes_out.is_empty() {
        s.push_str(&format!(", {} left out", r.nodes_out));
    }
    let faulty = r.faulty();
    if !faulty.is_empty() {
        s.push_str(&format!("; failed or dead: {faulty}"));
    }
    for c in &r.criteria {
        let mark = if c.passed { "✓" } else { "✗" };
        s.push_str(&format!("; {mark} {}", c.text));
    }
    s
}

/// A node's cell; none for a phase that never ran (the node was never seen).
fn cell(n: &super::record::NodeInPhase) -> Option<Cell> {
    let verdict = match n.verdict {
        NodeVerdict::Passed => CellVerdict::Passed,
        NodeVerdict::Failed => CellVerdict::Failed,
        NodeVerdict::Dead => CellVerdict::Dead,
        NodeVerdict::Suspect => CellVerdict::Suspect,
        NodeVerdict::Cluster => CellVerdict::Cluster,
        NodeVerdict::Excluded => CellVerdict::Excluded,
        NodeVerdict::NotRun => return None,
    };
    Some(Cell {
        host: n.host.clone(),
        verdict,
        reason: n.reason.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acceptance::outcome::{Cell as Across, NodeAcross, RanBy};
    use crate::acceptance::record::NodeInPhase;

    fn record(name: &str, status: PhaseStatus, nodes: &[(&str, NodeVerdict)]) -> PhaseRecord {
        let json = serde_json::json!({
            "index": 0, "name": name, "dir": format!("phases/01-{name}"), "plan_file": "a.yaml",
            "plan": "a", "status": status, "nodes_in": "n[1-2]", "nodes_out": "",
            "nodes": nodes.iter().map(|(h, v)| NodeInPhase {
                host: (*h).into(), verdict: *v, reason: "why".into()
            }).collect::<Vec<_>>(),
            "exit": 0,
        });
        serde_json::from_value(json).unwrap()
    }

    fn outcome(phases: Vec<PhaseRecord>, verdicts: &[(&str, Overall)]) -> AcceptanceFile {
        AcceptanceFile {
            acceptance: "acc".into(),
            description: None,
            file: "acc.yaml".into(),
            revision: None,
            ran_by: RanBy {
                user: Some("alice".into()),
                host: "login1".into(),
                baton: "0.1.0".into(),
                directory: "/".into(),
            },
            started: None,
            finished: None,
            seconds: Some(61.4),
            status: "failed",
            exit: 1,
            nodes: "n[1-2]".into(),
            passed: String::new(),
            failed: String::new(),
            suspect: String::new(),
            stopped: None,
            node_verdicts: verdicts
                .iter()
                .map(|(h, v)| NodeAcross {
                    host: (*h).into(),
                    verdict: *v,
                    reason: format!("phase A: {h}"),
                    phases: vec![Across {
                        phase: "A".into(),
                        verdict: phases[0].verdict_of(h).unwrap().verdict,
                        reason: String::new(),
                        evidence: None,
                    }],
                })
                .collect(),
            phases,
            findings: Vec::new(),
        }
    }

    fn ctx() -> Context {
        Context {
            cluster: "sim".into(),
            command: "baton accept acc.yaml -o out".into(),
        }
    }

    #[test]
    fn the_preflights_facts_are_rows_of_the_inventory_one_per_value() {
        let row = |field: &str, values: &[(&str, &[&str])]| crate::nodeset::fleet::InventoryRow {
            field: field.into(),
            values: values
                .iter()
                .map(|(v, h)| (v.to_string(), h.iter().map(|h| h.to_string()).collect()))
                .collect(),
        };
        let mut seen = Seen::new();
        add_facts(
            &mut seen,
            &[
                row(
                    "kernel",
                    &[("6.8.0", &["n1", "n2", "n4"]), ("6.5.0", &["n3"])],
                ),
                row("nccl", &[("2.28.3", &["n1", "n2", "n3", "n4"])]),
                row(
                    "mlx5_0 firmware",
                    &[("28.39.1002", &["n1", "n2", "n3", "n4"])],
                ),
            ],
        );
        let got: Vec<String> = rows(seen)
            .iter()
            .map(|r| format!("{} {} {} {}", r.kind, r.item, r.value, r.nodes))
            .collect();
        assert_eq!(
            got,
            [
                "hardware mlx5_0 firmware 28.39.1002 n[1-4]",
                "software NCCL 2.28.3 n[1-4]",
                "software kernel 6.5.0 n3",
                "software kernel 6.8.0 n[1-2,4]",
            ]
        );
    }

    #[test]
    fn the_view_takes_every_verdict_from_the_outcome() {
        let a = record(
            "A",
            PhaseStatus::Failed,
            &[("n1", NodeVerdict::Passed), ("n2", NodeVerdict::Dead)],
        );
        let b = record("B", PhaseStatus::Stopped, &[("n1", NodeVerdict::NotRun)]);
        let o = outcome(
            vec![a.clone()],
            &[("n1", Overall::Passed), ("n2", Overall::Failed)],
        );
        let v = view(&o, &[None], &ctx());
        assert_eq!(v.verdict, ClusterVerdict::AcceptedWithExclusions);
        assert_eq!(
            (v.accepted, v.failed),
            (vec!["n1".into()], vec!["n2".into()])
        );
        assert_eq!(v.drain[0].reason, "phase A: n2");
        assert_eq!(
            v.summary,
            "1 of 2 nodes passed every phase that tested them; n2 (dead in A) left out"
        );
        assert_eq!(
            v.phases[0].report.as_deref(),
            Some("phases/01-A/report/report.html")
        );
        assert_eq!(v.phases[0].cell("n2").unwrap().verdict, CellVerdict::Dead);
        assert_eq!(v.run.duration_s, Some(61));
        assert_eq!(v.run.revisions, ["not in a git repository"]);
        // A phase a stop rule kept from running: incomplete, its nodes never seen.
        let o = outcome(
            vec![a.clone(), b],
            &[("n1", Overall::Passed), ("n2", Overall::Failed)],
        );
        let v = view(&o, &[None, None], &ctx());
        assert_eq!(v.verdict, ClusterVerdict::Incomplete);
        assert!(v.phases[1].cells.is_empty() && v.phases[1].report.is_none());
        // A cluster finding rejects, whatever the nodes.
        let mut o = outcome(vec![a], &[("n1", Overall::Passed), ("n2", Overall::Passed)]);
        o.findings.push("phase A: criterion failed".into());
        assert_eq!(view(&o, &[None], &ctx()).verdict, ClusterVerdict::Rejected);
    }

    /// A phase over one set that failed a criterion gives its nodes `cluster` (a cluster
    /// finding, no node at fault): the matrix shows that, not "suspect", so a node the cover
    /// counts among 0 suspects is never "suspect" in a cell (issue #41, a one-GPU `steady`).
    #[test]
    fn a_cluster_finding_is_no_suspect_in_the_matrix_either() {
        let e = record("E", PhaseStatus::Failed, &[("n1", NodeVerdict::Cluster)]);
        let mut o = outcome(vec![e], &[("n1", Overall::Passed)]);
        o.findings.push("phase E: steady failed".into());
        let v = view(&o, &[None], &ctx());
        assert!(v.suspect.is_empty());
        let cells: Vec<CellVerdict> = v
            .phases
            .iter()
            .flat_map(|p| &p.cells)
            .map(|c| c.verdict)
            .collect();
        assert_eq!(cells, [CellVerdict::Cluster]);
        assert_eq!(CellVerdict::Cluster.label(), "cluster");
    }
}
