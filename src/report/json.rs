//! The verdict as one JSON document (`grade --format json`): what a CI script reads instead of
//! scraping the terminal summary. Its shape is a contract — `schemas/verdict.schema.json` is
//! generated from the types here and a test validates real output against it — so fields are
//! only ever added, and every name says what it holds without the rest of baton at hand.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Exporter, ReportError, ReportInput};
use crate::exit::Exit;
use crate::grade::{CriterionVerdict, Grade, JobVerdict, Status};

/// Value of the `format` field, so a verdict document is recognisable on its own.
pub const VERDICT_FORMAT: &str = "baton-verdict";
/// Current verdict document version; bumped only when a field changes meaning or goes away.
pub const VERDICT_VERSION: u32 = 1;

/// Renders [`Verdict::new`] with the exit code the grade alone implies.
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn export(&self, input: &ReportInput<'_>) -> Result<Vec<u8>, ReportError> {
        let doc = Verdict::new(input.grade, input.grade.exit());
        let mut out = serde_json::to_vec_pretty(&doc).map_err(ReportError::Json)?;
        out.push(b'\n');
        Ok(out)
    }
}

/// The JSON Schema of the verdict document, generated from the types.
pub fn verdict_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Verdict)).expect("schema serializes")
}

/// Everything `grade` concluded, for scripts.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(title = "baton verdict")]
pub struct Verdict {
    /// Always `baton-verdict`.
    pub format: String,
    /// Document version; this baton writes 1.
    pub version: u32,
    /// The baton that graded.
    pub baton_version: String,
    pub plan: PlanName,
    /// The plan's verdict: `fail` when any job failed, `warn` when only warnings, else `pass`.
    pub status: VerdictStatus,
    /// The exit status the command returns for this verdict (0 passed, 1 a criterion failed,
    /// 4 a job timed out; see `baton --help`).
    pub exit_code: i32,
    /// The results files graded.
    pub results_files: Vec<String>,
    /// The baseline `regression` compared against, or why it could not be read; absent when none.
    pub baseline: Option<String>,
    /// Results no plan job took, with why (a typo in a label shows up here).
    pub unmatched: Vec<String>,
    pub counts: Counts,
    pub jobs: Vec<JobEntry>,
    /// Node-set runs only: one entry per node set measured, test by test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_sets: Option<Vec<NodeSetEntry>>,
    /// Node-set runs only: the verdict per host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<NodesEntry>,
    /// Node-set runs only: the figures of each test's sets, passed ones included, per plan
    /// job, set shape and judged size (the report's table under each test).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_set_figures: Option<Vec<SetFiguresEntry>>,
    /// Several runs of the plan graded together: the earlier verdicts a later run replaced by
    /// measuring their jobs again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub superseded: Vec<crate::grade::Superseded>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PlanName {
    /// The plan's `name:`.
    pub name: String,
    /// The plan file as given on the command line.
    pub file: Option<String>,
}

/// How many jobs ended in each status.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Counts {
    pub jobs: usize,
    pub passed: usize,
    pub warned: usize,
    pub failed: usize,
    pub skipped: usize,
}

/// A verdict: the worst of its parts for a job or plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VerdictStatus {
    Pass,
    /// The check does not apply (e.g. `group_spread` on a job without a split).
    Skipped,
    /// Failed, but its severity is `warn`: never fails the plan.
    Warn,
    Fail,
}

impl From<Status> for VerdictStatus {
    fn from(s: Status) -> Self {
        match s {
            Status::Pass => VerdictStatus::Pass,
            Status::Skipped => VerdictStatus::Skipped,
            Status::Warn => VerdictStatus::Warn,
            Status::Fail => VerdictStatus::Fail,
        }
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct JobEntry {
    /// The plan job ID (stable across runs: baselines and JUnit use it too).
    pub id: String,
    /// `all_reduce float sum`, with the split when there is one.
    pub what: String,
    pub status: VerdictStatus,
    /// The results file its measurements came from; absent when none matched.
    pub results_file: Option<String>,
    /// How the measurement ended (`completed`, `error`, `timeout`, …); absent without results.
    pub run_status: Option<crate::results::JobStatus>,
    /// The hosts its ranks ran on, in rank order without repeats.
    pub hosts: Vec<String>,
    pub criteria: Vec<CriterionEntry>,
    /// The NCCL and engine flags it was measured with (results' `measured_with`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_with: Option<crate::results::MeasuredWith>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CriterionEntry {
    /// The metric key (`busbw`, `wrong`, …), or `results` / `integrity` for the checks baton
    /// always makes.
    pub key: String,
    /// The criterion as the plan reads (`busbw >= 300 GB/s at 1G`).
    pub text: String,
    /// `fail` or `warn`: what a failure of it does to the plan; absent for implicit checks.
    pub severity: Option<String>,
    pub status: VerdictStatus,
    /// One line: the first failure, or what passed.
    pub message: String,
    /// Why it failed, from what the results record (a transport change, settings, throttling)
    /// or the shape of the drop; absent when there is nothing to explain.
    pub evidence: Option<Evidence>,
    /// One entry per requested size, or one `all` for whole-job checks.
    pub cases: Vec<CaseEntry>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Evidence {
    /// The kind of cause (`transport_changed`, `settings_changed`, `large_sizes_only`, …).
    pub cause: String,
    /// What it means and what to check, in words.
    pub text: String,
    /// The cause's particulars (sizes in bytes, transports, variable names).
    pub details: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CaseEntry {
    /// The size (`1G`) or `all`: stable for CI history.
    pub name: String,
    /// The requested size in bytes; absent for whole-job checks.
    pub size_bytes: Option<u64>,
    pub status: VerdictStatus,
    /// What was measured, against what, where.
    pub message: String,
}

/// One node set of a node-set run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct NodeSetEntry {
    /// The plan test whose node set it is.
    pub test: String,
    /// How the test chose its sets: `each-node`, `pairs`, `isolate`, `all`.
    pub over: String,
    /// The round it ran in (adaptive isolation runs several).
    pub round: u32,
    pub hosts: Vec<String>,
    /// IDs of the jobs it ran (entries of `jobs`).
    pub jobs: Vec<String>,
    pub status: VerdictStatus,
}

/// The busbw of one test's sets of one shape at one size, across the sets that measured it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SetFiguresEntry {
    pub test: String,
    /// The plan job (entries of `jobs` are its sets' jobs).
    pub job: String,
    /// Nodes in each set of this shape.
    pub nodes: usize,
    /// The requested size judged (a bandwidth criterion's, else the largest measured).
    pub size_bytes: u64,
    /// Sets of this shape, and how many of them have a busbw at the size.
    pub sets: usize,
    pub measured: usize,
    /// Out-of-place busbw in GB/s (decimal), median over repeats per set, then across sets.
    pub median_busbw_gbps: f64,
    pub min_busbw_gbps: f64,
    /// Nearest-rank 10th and 90th percentiles across sets.
    pub p10_busbw_gbps: f64,
    pub p90_busbw_gbps: f64,
    pub max_busbw_gbps: f64,
    /// The lowest sets, lowest first.
    pub lowest: Vec<LowSetEntry>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LowSetEntry {
    /// The set's hosts as a Slurm hostlist.
    pub hosts: String,
    pub busbw_gbps: f64,
}

/// The verdict per host of a node-set run: what a drain list is made from.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct NodesEntry {
    pub passed: Vec<String>,
    pub failed: Vec<String>,
    /// Failed only together with others: not proven bad on its own.
    pub suspect: Vec<String>,
}

impl Verdict {
    /// The document of `g`, whose command exits with `exit`.
    pub fn new(g: &Grade, exit: Exit) -> Self {
        Verdict {
            format: VERDICT_FORMAT.into(),
            version: VERDICT_VERSION,
            baton_version: env!("CARGO_PKG_VERSION").into(),
            plan: PlanName {
                name: g.plan.clone(),
                file: g.plan_file.clone(),
            },
            status: g.status.into(),
            exit_code: exit.code(),
            results_files: g.results_files.clone(),
            baseline: g.baseline.clone(),
            unmatched: g.unmatched.clone(),
            counts: Counts {
                jobs: g.jobs.len(),
                passed: g.count(Status::Pass),
                warned: g.count(Status::Warn),
                failed: g.count(Status::Fail),
                skipped: g.count(Status::Skipped),
            },
            jobs: g.jobs.iter().map(job).collect(),
            node_sets: (!g.node_sets.is_empty()).then(|| node_sets(g)),
            nodes: g.nodes.as_ref().map(nodes),
            node_set_figures: (!g.node_sets.is_empty()).then(|| figures(g)),
            superseded: g.superseded.clone(),
        }
    }
}

fn figures(g: &Grade) -> Vec<SetFiguresEntry> {
    g.node_sets
        .iter()
        .flat_map(|t| {
            super::set_summary::rows(g, t)
                .into_iter()
                .map(|r| SetFiguresEntry {
                    test: t.test.clone(),
                    job: r.job,
                    nodes: r.nodes,
                    size_bytes: r.size,
                    sets: r.sets,
                    measured: r.measured,
                    median_busbw_gbps: r.median,
                    min_busbw_gbps: r.min,
                    p10_busbw_gbps: r.p10,
                    p90_busbw_gbps: r.p90,
                    max_busbw_gbps: r.max,
                    lowest: r
                        .lowest
                        .into_iter()
                        .map(|(hosts, busbw_gbps)| LowSetEntry { hosts, busbw_gbps })
                        .collect(),
                })
        })
        .collect()
}

fn node_sets(g: &Grade) -> Vec<NodeSetEntry> {
    g.node_sets
        .iter()
        .flat_map(|t| {
            t.sets.iter().map(|s| NodeSetEntry {
                test: t.test.clone(),
                over: t.over.to_string(),
                round: s.round,
                hosts: s.hosts.clone(),
                jobs: s.jobs.clone(),
                status: s.status.into(),
            })
        })
        .collect()
}

fn nodes(f: &crate::nodeset::export::NodesFile) -> NodesEntry {
    use crate::nodeset::attribution::Verdict as Node;
    let with = |v: Node| {
        f.nodes
            .iter()
            .filter(|n| n.verdict == v)
            .map(|n| n.host.clone())
            .collect()
    };
    NodesEntry {
        passed: with(Node::Passed),
        failed: with(Node::Failed),
        suspect: with(Node::Suspect),
    }
}

fn job(j: &JobVerdict) -> JobEntry {
    let mut hosts: Vec<String> = Vec::new();
    if let Some(src) = &j.source {
        for r in &src.result.layout.ranks {
            if !hosts.contains(&r.host) {
                hosts.push(r.host.clone());
            }
        }
    }
    JobEntry {
        id: j.id.clone(),
        what: j.what.clone(),
        status: j.status.into(),
        results_file: j.source.as_ref().map(|s| s.file.clone()),
        run_status: j.source.as_ref().map(|s| s.result.status),
        hosts,
        criteria: j.criteria.iter().map(criterion).collect(),
        measured_with: j
            .source
            .as_ref()
            .and_then(|s| s.result.measured_with.clone()),
    }
}

fn criterion(c: &CriterionVerdict) -> CriterionEntry {
    CriterionEntry {
        key: c.key.to_string(),
        text: c.text.clone(),
        severity: c.criterion.as_ref().map(|k| {
            match k.severity {
                crate::plan::Severity::Fail => "fail",
                crate::plan::Severity::Warn => "warn",
            }
            .to_string()
        }),
        status: c.status.into(),
        message: c.message.clone(),
        evidence: c.diagnosis.as_ref().map(|d| {
            let mut details = match serde_json::to_value(&d.shape) {
                Ok(serde_json::Value::Object(m)) => m,
                _ => serde_json::Map::new(),
            };
            let cause = match details.remove("shape") {
                Some(serde_json::Value::String(s)) => s,
                _ => String::new(),
            };
            Evidence {
                cause,
                text: d.text.clone(),
                details,
            }
        }),
        cases: c
            .cases
            .iter()
            .map(|k| CaseEntry {
                name: k.name.clone(),
                size_bytes: k.requested,
                status: k.status.into(),
                message: k.message.clone(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grade::{Baseline, GradeInput, SetVerdict, TestNodes};
    use crate::nodeset::attribution::Verdict as Node;
    use crate::nodeset::export::{NodeEntry, NodesFile};

    fn node(host: &str, verdict: Node) -> NodeEntry {
        NodeEntry {
            host: host.into(),
            verdict,
            reason: String::new(),
            failed_rounds: vec![],
            passed_rounds: vec![],
            tests: vec![],
            earlier: vec![],
            warnings: Vec::new(),
        }
    }

    /// A node-set grade fills `node_sets` and `nodes`, and the document still meets the
    /// committed schema.
    #[test]
    fn node_set_runs_carry_their_sets_and_node_verdicts() {
        let yaml = "version: 1\nname: t\nbackend: mpi\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [8]\n";
        let plan = match crate::plan::parse_str("t.yaml", yaml) {
            Ok(l) => l.plan,
            Err(r) => panic!("{}", r.short()),
        };
        let mut g = crate::grade::grade(&GradeInput {
            plan: &plan,
            plan_file: None,
            results: &[],
            baseline: &Baseline::None,
            only: None,
            history: &crate::grade::History::None,
            files: None,
        });
        let file = NodesFile {
            passed: "n1".into(),
            failed: "n2".into(),
            suspect: String::new(),
            nodes: vec![node("n1", Node::Passed), node("n2", Node::Failed)],
            faults: vec![],
            cluster: vec![],
        };
        g.node_sets = vec![TestNodes {
            test: "a".into(),
            over: "each-node",
            hosts: vec!["n1".into(), "n2".into()],
            rounds: 1,
            sets: vec![SetVerdict {
                round: 1,
                index: 0,
                hosts: vec!["n2".into()],
                status: Status::Fail,
                jobs: vec!["a@n2".into()],
                ended: None,
                dead: vec![],
                busbw: None,
                seconds: None,
            }],
            nodes: file.clone(),
            finding: None,
        }];
        g.nodes = Some(file);
        let doc = serde_json::to_value(Verdict::new(&g, Exit::Failed)).unwrap();
        assert_eq!(
            doc["node_sets"],
            serde_json::json!([{ "test": "a", "over": "each-node", "round": 1, "hosts": ["n2"], "jobs": ["a@n2"], "status": "fail" }])
        );
        assert_eq!(
            doc["nodes"],
            serde_json::json!({ "passed": ["n1"], "failed": ["n2"], "suspect": [] })
        );
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../schemas/verdict.schema.json")).unwrap();
        let v = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
    }
}
