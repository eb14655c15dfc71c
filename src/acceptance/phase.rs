//! One phase through the runner every `baton run` uses (`runner::run`, node-set mode, its
//! lifecycle and resume untouched): the phase's plan opened, run over the nodes gating gave,
//! graded by the one grading path, its own `junit.xml`, `report/`, `nodes.json` and `drain.sh`
//! written in its directory as a `baton run` would.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::doc::{Acceptance, Phase, PhasePlan};
use crate::exit::Exit;
use crate::grade::Grade;
use crate::nodeset::compress;
use crate::plan::{PlanFiles, Trust};
use crate::results::Results;
use crate::runner::events::Events;
use crate::runner::{self, Input, Mode, RunOptions};
use crate::session::{self, Against, Grading, NodeRequest, OpenedPlan};
use crate::site::Layers;

/// Why a phase could not run (its plan, its node list, its run or its outputs).
#[derive(Debug, thiserror::Error)]
pub enum PhaseError {
    #[error("phase {phase}: {why}")]
    Plan { phase: String, why: String },
    #[error("phase {phase}: {source}")]
    Nodes {
        phase: String,
        source: Box<session::NodesError>,
    },
    #[error("phase {phase}: {source}")]
    Run {
        phase: String,
        source: Box<runner::RunError>,
    },
    #[error("phase {phase}: {why}")]
    Output { phase: String, why: String },
}

impl PhaseError {
    pub fn exit(&self) -> Exit {
        match self {
            PhaseError::Run { source, .. } => source.exit(),
            PhaseError::Output { .. } => Exit::Runtime,
            _ => Exit::Invalid,
        }
    }
}

/// A phase plan made by [`phase_plan`].
pub struct MadePlan {
    pub path: PathBuf,
    pub name: String,
    pub bytes: Vec<u8>,
    /// Its diagnostics may be shown as a plan's are (inline, or a file beside the acceptance),
    /// not by place only.
    pub beside: bool,
}

/// The plan a phase runs, as bytes the plan checks read: its file (or its inline text) with
/// the phase's `over:` given to the tests that say none. The one place a phase plan is made:
/// site layering (plan < site < `--set`) plugs in here.
///
/// A phase plan's file is a file the acceptance names beside itself, so it obeys the
/// plan-relative rules (`PlanFiles`): links resolved, inside the acceptance file's directory
/// unless trusted, never under `/proc`, `/sys` or `/dev`.
pub fn phase_plan(doc: &Acceptance, phase: &Phase, trust: Trust) -> Result<MadePlan, String> {
    // Whether the phase plan is the user's own file beside the acceptance: its diagnostics are
    // then shown as a plan's are (through the one printer); a file a trusted acceptance reached
    // elsewhere is named by place only.
    let mut beside = true;
    let (path, name, bytes) = match &phase.plan {
        PhasePlan::File(f) => {
            let files = PlanFiles::beside(&doc.file, trust);
            let rel = f.strip_prefix(files.dir()).unwrap_or(f);
            let real = files
                .resolve("plan", &rel.to_string_lossy())
                .map_err(|e| e.to_string())?;
            beside = is_beside(&files, &real);
            let (_, bytes) = crate::plan::read_file(&real).map_err(|e| match e {
                crate::plan::LoadError::Invalid(r) => shown(beside, &r),
                e => e.to_string(),
            })?;
            (f.clone(), f.display().to_string(), bytes)
        }
        PhasePlan::Inline(v) => {
            let name = format!("{} (phase {}, inline)", doc.file.display(), phase.name);
            (doc.file.clone(), name, json(v))
        }
    };
    let Some(over) = &phase.over else {
        return Ok(MadePlan {
            path,
            name,
            bytes,
            beside,
        });
    };
    // Checked as written first, so its diagnostics point at the file's own lines.
    crate::plan::parse_bytes(&name, &bytes).map_err(|r| shown(beside, &r))?;
    let mut v: serde_json::Value = serde_saphyr::from_slice(&bytes).map_err(|e| e.to_string())?;
    for t in v
        .get_mut("tests")
        .and_then(|t| t.as_array_mut())
        .into_iter()
        .flatten()
    {
        if let Some(t) = t.as_object_mut() {
            t.entry("over").or_insert_with(|| over.clone().into());
        }
    }
    Ok(MadePlan {
        path,
        name,
        bytes: json(&v),
        beside,
    })
}

/// Whether `real` (a resolved phase plan) lies in the acceptance file's own directory.
fn is_beside(files: &PlanFiles, real: &std::path::Path) -> bool {
    std::fs::canonicalize(files.dir()).is_ok_and(|dir| real.starts_with(dir))
}

/// A phase plan's diagnostics as they may be shown: an inline plan (the acceptance file's own
/// text) or a plan file beside the acceptance is quoted as a plan is, through the one printer
/// (secrets masked, a file that is not YAML never quoted); a file a trusted acceptance reached
/// outside its directory is named by path, line and column only (as a profile is), since what
/// it holds may be any file on the machine.
fn shown(beside: bool, r: &crate::plan::Report) -> String {
    if beside { r.short() } else { located(r) }
}

/// Each diagnostic of `r` by its place alone.
fn located(r: &crate::plan::Report) -> String {
    let mut out = String::new();
    let mut seen = std::collections::BTreeSet::new();
    for d in r.errors().filter(|d| seen.insert(r.locate(d))) {
        out.push_str(&format!(
            "{}: error: the phase plan does not check here (its text is not shown; `baton check {}` says why)\n",
            r.locate(d),
            r.file
        ));
    }
    out
}

/// JSON text, which the plan loader reads as YAML.
fn json(v: &serde_json::Value) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(v).unwrap_or_default();
    b.push(b'\n');
    b
}

/// A phase's plan, opened.
pub fn open(
    doc: &Acceptance,
    phase: &Phase,
    trust: Trust,
    layers: &Layers,
) -> Result<OpenedPlan, PhaseError> {
    let err = |why: String| PhaseError::Plan {
        phase: phase.name.clone(),
        why,
    };
    let made = phase_plan(doc, phase, trust).map_err(err)?;
    session::open_bytes(&made.path, &made.name, &made.bytes, trust, layers).map_err(|e| match e {
        session::OpenError::Invalid(r) => err(shown(made.beside, &r)),
        e => err(e.to_string()),
    })
}

/// How a phase's run ended.
pub struct Ran {
    pub results: Results,
    pub grade: Grade,
    pub exit: Exit,
    /// The signal that cut it short.
    pub interrupted: Option<&'static str>,
    /// Just before the runner was called, and just after it returned (its last row
    /// measured), before grading: RFC 3339 with milliseconds.
    pub began: String,
    pub ended: String,
}

fn now_millis() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// Where and how a phase runs.
pub struct Where<'a> {
    pub dir: &'a Path,
    pub hosts: &'a [String],
    pub trust: Trust,
    pub events: Arc<dyn Events>,
}

/// Runs (or resumes: the runner skips what its directory holds complete) the opened phase plan
/// over `at.hosts` into `at.dir`, grades it and writes its outputs there.
pub fn run(phase: &str, opened: &OpenedPlan, at: &Where<'_>) -> Result<Ran, PhaseError> {
    let list = compress(at.hosts);
    run_over(phase, opened, at, &list, None)
}

fn run_over(
    phase: &str,
    opened: &OpenedPlan,
    at: &Where<'_>,
    list: &str,
    rerun: Option<session::RerunList>,
) -> Result<Ran, PhaseError> {
    let plan = &opened.loaded.plan;
    let req = NodeRequest {
        only: None,
        hostlist: (rerun.is_none()).then_some(list),
        hostfile: None,
        rerun,
    };
    let nodes = session::nodes_for_run(plan, &opened.path, req, at.trust)
        .map_err(|source| PhaseError::Nodes {
            phase: phase.into(),
            source: Box::new(source),
        })?
        .ok_or_else(|| PhaseError::Plan {
            phase: phase.into(),
            why: "the plan runs no node sets over the node list".into(),
        })?;
    let grading = grading(phase, opened)?;
    let opts = RunOptions {
        plan_path: opened.path.clone(),
        plan_text: opened.text.clone(),
        plan_hash: opened.identity.clone(),
        out_dir: at.dir.to_path_buf(),
        resume: true,
        print_table: false,
        capture_transport: false,
        site: opened.site.clone(),
        // The plan's `evidence: false` still turns it off (the runner asks both).
        evidence: true,
    };
    let input = Input {
        plan,
        jobs: &opened.jobs,
        opts: &opts,
    };
    let judge = |r: &Results, ids: &[String]| grading.judge(r, ids);
    let mode = Mode::NodeSets {
        nodes: &nodes,
        judge: &judge,
    };
    let began = now_millis();
    let out = runner::run(&input, mode, at.events.clone()).map_err(|source| PhaseError::Run {
        phase: phase.into(),
        source: Box::new(source),
    })?;
    let ended = now_millis();
    let grade = graded(&grading, opened, &out.results_path, &out.results);
    write_outputs(phase, &grade, at.dir, &plan.name)?;
    Ok(Ran {
        exit: session::run_exit(out.exit, &grade),
        results: out.results,
        grade,
        interrupted: out.interrupted,
        began,
        ended,
    })
}

/// The phase run again over its failed and suspect nodes, each paired with nodes that passed
/// (`--rerun-failed`), into `dir/rerun/`; `None` when its `nodes.json` names none.
pub fn rerun(phase: &str, opened: &OpenedPlan, at: &Where<'_>) -> Result<Option<Ran>, PhaseError> {
    let plan = &opened.loaded.plan;
    let tests: Vec<&crate::plan::Test> = plan.tests.iter().collect();
    let list = match session::rerun_of(plan, &tests, &at.dir.join("nodes.json")) {
        Ok(l) => l,
        Err(session::RerunError::Nothing(_)) => return Ok(None),
        Err(e) => {
            return Err(PhaseError::Plan {
                phase: phase.into(),
                why: e.to_string(),
            });
        }
    };
    let dir = at.dir.join("rerun");
    let again = Where {
        dir: &dir,
        hosts: at.hosts,
        trust: at.trust,
        events: at.events.clone(),
    };
    run_over(phase, opened, &again, "", Some(list)).map(Some)
}

fn grading<'p>(phase: &str, opened: &'p OpenedPlan) -> Result<Grading<'p>, PhaseError> {
    let none = Against {
        baseline: None,
        history: None,
    };
    Grading::new(&opened.loaded.plan, &opened.path, opened.trust, none).map_err(|e| {
        PhaseError::Plan {
            phase: phase.into(),
            why: e.to_string(),
        }
    })
}

/// Every plan job graded, as a node-set run is: a set a signal cut or never reached fails it.
fn graded(grading: &Grading<'_>, opened: &OpenedPlan, path: &Path, r: &Results) -> Grade {
    let ran: Vec<String> = opened.jobs.iter().map(|j| j.id.clone()).collect();
    grading.grade(&[(path.display().to_string(), r)], Some(&ran))
}

/// A finished phase graded again from its results (on resume and for the combined outputs).
pub fn regrade(
    phase: &str,
    opened: &OpenedPlan,
    dir: &Path,
) -> Result<(Results, Grade), PhaseError> {
    let path = dir.join("results.json");
    let results = crate::results::read_file(&path).map_err(|e| PhaseError::Output {
        phase: phase.into(),
        why: e.to_string(),
    })?;
    let grading = grading(phase, opened)?;
    let grade = graded(&grading, opened, &path, &results);
    Ok((results, grade))
}

fn write_outputs(phase: &str, g: &Grade, dir: &Path, plan: &str) -> Result<(), PhaseError> {
    let err = |why: String| PhaseError::Output {
        phase: phase.into(),
        why,
    };
    session::write_junit(g, &dir.join("junit.xml")).map_err(|e| err(e.to_string()))?;
    session::write_report(g, &dir.join("report")).map_err(|e| err(e.to_string()))?;
    session::write_nodes(dir, g, plan).map_err(|e| err(e.to_string()))?;
    Ok(())
}
