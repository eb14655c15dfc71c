//! The phase runner: phases in order, each gated on the ones it needs, each in its own
//! directory (`phases/NN-NAME/`), a stop rule checked after each. Resumable: a phase whose
//! `phase.json` exists is read back (regraded from its results, never measured again), and the
//! phase in progress resumes through the runner's own resume.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::criteria;
use super::doc::Acceptance;
use super::gate::{Gate, gate, stops};
use super::phase::{self, PhaseError, Where};
use super::raw::Suspects;
use super::record::{CriterionResult, NodeInPhase, NodeVerdict, PhaseRecord, PhaseStatus};
use super::verdicts;
use crate::exit::Exit;
use crate::grade::Grade;
use crate::nodeset::compress;
use crate::plan::Trust;
use crate::results::Results;
use crate::runner::events::Events;
use crate::site::Layers;

/// What the phase runner tells its caller as it goes (the CLI prints it).
pub enum Told<'a> {
    Starting {
        phase: &'a str,
        hosts: &'a [String],
        out: &'a [(String, String)],
    },
    ReadBack(&'a PhaseRecord),
    Ended(&'a PhaseRecord),
    NotRun(&'a PhaseRecord),
}

/// An acceptance to run.
pub struct Request<'a> {
    pub doc: &'a Acceptance,
    pub out: &'a Path,
    /// The node list of the whole acceptance.
    pub hosts: Vec<String>,
    pub trust: Trust,
    /// The site file and `--set`s laid over every phase's plan.
    pub layers: &'a Layers,
    pub events: Arc<dyn Events>,
    pub tell: &'a dyn Fn(Told<'_>),
}

/// Every phase's record and grade (`None` where it did not run), how the acceptance ended.
pub struct Outcome {
    pub records: Vec<PhaseRecord>,
    pub grades: Vec<Option<Grade>>,
    /// Each phase's results, `None` where it did not run (what `--notify` keys each phase by).
    pub results: Vec<Option<Results>>,
    pub exit: Exit,
    /// The signal that stopped it: rerunning the same command resumes.
    pub interrupted: Option<&'static str>,
    pub stopped: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    #[error(transparent)]
    Phase(#[from] PhaseError),
    #[error("{path}: {why}")]
    Record { path: String, why: String },
    /// A finished phase's record that its own results (or the phases before it) do not bear
    /// out: a resume never takes a record's word for what it summarises.
    #[error(
        "{path} says {claim}, but {found}: the record does not match what it summarises; remove the phase's directory to run it again, or run into a new -o"
    )]
    Mismatch {
        path: String,
        claim: String,
        found: String,
    },
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
    #[error(transparent)]
    Identity(#[from] super::identity::IdentityError),
}

impl AcceptError {
    pub fn exit(&self) -> Exit {
        match self {
            AcceptError::Phase(e) => e.exit(),
            AcceptError::Record { .. } => Exit::Runtime,
            AcceptError::Mismatch { .. } => Exit::Invalid,
            AcceptError::Output(e) if e.is_invalid_path() => Exit::Invalid,
            AcceptError::Output(_) => Exit::Runtime,
            AcceptError::Identity(super::identity::IdentityError::Unreadable { .. }) => {
                Exit::Runtime
            }
            AcceptError::Identity(_) => Exit::Invalid,
        }
    }
}

/// `phases/NN-NAME`, relative to the output directory.
pub fn phase_dir(index: usize, name: &str) -> PathBuf {
    PathBuf::from("phases").join(format!("{:02}-{name}", index + 1))
}

const RECORD: &str = "phase.json";

/// Longest `phase.json` read back.
const MAX_RECORD: usize = 16 * 1024 * 1024;

fn read_record(out: &Path, dir: &Path) -> Result<Option<PhaseRecord>, AcceptError> {
    let path = dir.join(RECORD);
    crate::output::refuse_links_within(out, &path)?;
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    let err = |why: String| AcceptError::Record {
        path: path.display().to_string(),
        why,
    };
    let bytes = crate::input::read_bounded(&path, MAX_RECORD, "phase record")
        .map_err(|e| err(e.to_string()))?;
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| err(e.to_string()))
}

fn write_record(dir: &Path, r: &PhaseRecord) -> Result<(), AcceptError> {
    let path = dir.join(RECORD);
    let mut text = serde_json::to_vec_pretty(r).unwrap_or_default();
    text.push(b'\n');
    crate::output::write_atomic(&path, &text).map_err(|e| AcceptError::Record {
        path: path.display().to_string(),
        why: e.to_string(),
    })
}

/// Runs (or resumes) the acceptance.
pub fn run(req: &Request<'_>) -> Result<Outcome, AcceptError> {
    super::identity::check_or_record(req.out, req.doc, &req.hosts)?;
    let mut o = Outcome {
        records: Vec::new(),
        grades: Vec::new(),
        results: Vec::new(),
        exit: Exit::Ok,
        interrupted: None,
        stopped: None,
    };
    let mut last_end: Option<String> = None;
    for (i, phase) in req.doc.phases.iter().enumerate() {
        let rel = phase_dir(i, &phase.name);
        let dir = req.out.join(&rel);
        let blank = |status, why: String| {
            let r = not_run(req, i, &rel, status, why);
            (req.tell)(Told::NotRun(&r));
            r
        };
        let (record, grade, res) = if let Some(why) = &o.stopped {
            (blank(PhaseStatus::Stopped, why.clone()), None, None)
        } else if let Some(r) = read_record(req.out, &dir)? {
            let (res, g) = read_back(req, i, &dir, &r, &o)?;
            (req.tell)(Told::ReadBack(&r));
            (r, g, res)
        } else {
            match gate(&req.hosts, &req.doc.phases, i, &o.records) {
                Gate::Not(status, why) => (blank(status, why), None, None),
                Gate::Run { hosts, out } => {
                    (req.tell)(Told::Starting {
                        phase: &phase.name,
                        hosts: &hosts,
                        out: &out,
                    });
                    let Some((r, g, res)) = run_phase(req, i, &rel, &hosts, &out, &o.results)?
                    else {
                        o.interrupted = Some("a signal");
                        o.exit = Exit::Interrupted;
                        return Ok(o);
                    };
                    let mut r = r;
                    // Only after a phase this process ran: a resume's gap is not baton's.
                    r.overhead_s = seconds(last_end.as_deref(), r.run_began.as_deref());
                    last_end = r.run_ended.clone();
                    write_record(&dir, &r)?;
                    (req.tell)(Told::Ended(&r));
                    (r, Some(g), Some(res))
                }
            }
        };
        if o.stopped.is_none() && record.status.ran() {
            let so_far = [&o.records[..], std::slice::from_ref(&record)].concat();
            o.stopped = stops(phase.stop, &so_far, req.hosts.len());
        }
        o.exit = worse(o.exit, &record);
        o.records.push(record);
        o.grades.push(grade);
        o.results.push(res);
    }
    Ok(o)
}

/// A phase that did not run: every node `NotRun`, with why.
fn not_run(
    req: &Request<'_>,
    i: usize,
    rel: &Path,
    status: PhaseStatus,
    why: String,
) -> PhaseRecord {
    let phase = &req.doc.phases[i];
    let nodes = req
        .hosts
        .iter()
        .map(|h| NodeInPhase {
            host: h.clone(),
            verdict: NodeVerdict::NotRun,
            reason: format!("phase {} not run: {why}", phase.name),
        })
        .collect();
    PhaseRecord {
        index: i,
        name: phase.name.clone(),
        dir: rel.display().to_string(),
        plan_file: plan_file(phase),
        plan: String::new(),
        status,
        why: Some(why),
        started: None,
        finished: None,
        seconds: None,
        run_began: None,
        run_ended: None,
        overhead_s: None,
        nodes_in: String::new(),
        nodes_out: String::new(),
        nodes,
        findings: Vec::new(),
        criteria: Vec::new(),
        exit: 0,
    }
}

fn plan_file(phase: &super::doc::Phase) -> String {
    match &phase.plan {
        super::doc::PhasePlan::File(f) => f.display().to_string(),
        super::doc::PhasePlan::Inline(_) => "inline".into(),
    }
}

/// A finished phase's results and grade, read back, and its record checked against them: the
/// record is a claim. Gating the phases before it must give the same nodes (or the same reason
/// not to run), and grading its own results again (with its criteria against the phases before
/// it, and its rerun's results where it reran suspects) must give the same status and the same
/// verdict for every node it ran on. Anything else is refused, naming both.
fn read_back(
    req: &Request<'_>,
    i: usize,
    dir: &Path,
    r: &PhaseRecord,
    so_far: &Outcome,
) -> Result<(Option<Results>, Option<Grade>), AcceptError> {
    let mismatch = |claim: String, found: String| AcceptError::Mismatch {
        path: dir.join(RECORD).display().to_string(),
        claim,
        found,
    };
    let said = |s: PhaseStatus| {
        serde_json::to_value(s)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    if r.index != i || r.name != req.doc.phases[i].name {
        return Err(mismatch(
            format!("it is phase {} ({})", r.name, r.index + 1),
            format!("it lies in phase {}'s directory", req.doc.phases[i].name),
        ));
    }
    let hosts = match gate(&req.hosts, &req.doc.phases, i, &so_far.records) {
        Gate::Not(status, _) if status == r.status => return Ok((None, None)),
        Gate::Not(status, why) => {
            return Err(mismatch(
                format!("the phase {}", said(r.status)),
                format!("the phases before it leave it {} ({why})", said(status)),
            ));
        }
        Gate::Run { .. } if !r.status.ran() => {
            return Err(mismatch(
                format!("the phase {}", said(r.status)),
                "the phases before it let it run".into(),
            ));
        }
        Gate::Run { hosts, .. } => hosts,
    };
    if r.nodes_in != compress(&hosts) {
        return Err(mismatch(
            format!("it ran on {}", r.nodes_in),
            format!("the phases before it give {}", compress(&hosts)),
        ));
    }
    let phase = &req.doc.phases[i];
    let opened = phase::open(req.doc, phase, req.trust, req.layers)?;
    let (res, g) = phase::regrade(&phase.name, &opened, dir)?;
    let crit_ok = phase.criteria.iter().all(|c| {
        let of = |k: usize| {
            let name = req.doc.phases.get(k)?.name.clone();
            Some((name, so_far.results.get(k)?.clone()?))
        };
        criteria::judge(c, &res, &of).passed
    });
    let failed = g.status == crate::grade::Status::Fail || !crit_ok;
    let mut nodes = verdicts::of_phase(&g, &hosts, failed);
    let again = dir.join("rerun");
    if phase.suspects == Suspects::Rerun
        && nodes.iter().any(|n| n.verdict == NodeVerdict::Suspect)
        && std::fs::symlink_metadata(again.join("results.json")).is_ok()
    {
        let (_, rg) = phase::regrade(&phase.name, &opened, &again)?;
        settle(&mut nodes, &rg);
    }
    let status = verdicts::status(&g, &nodes, crit_ok);
    if status != r.status {
        return Err(mismatch(
            format!("the phase {}", said(r.status)),
            format!("its results grade it {}", said(status)),
        ));
    }
    for n in &nodes {
        let claimed = r.verdict_of(&n.host).map(|c| c.verdict);
        if claimed != Some(n.verdict) {
            let word = |v: Option<NodeVerdict>| {
                v.and_then(|v| serde_json::to_value(v).ok())
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_else(|| "nothing".into())
            };
            return Err(mismatch(
                format!("{} {}", n.host, word(claimed)),
                format!("its results say {} {}", n.host, word(Some(n.verdict))),
            ));
        }
    }
    Ok((Some(res), Some(g)))
}

type PhaseDone = (PhaseRecord, Grade, Results);

/// Runs phase `i` over `hosts`; `None` when a signal cut it short.
fn run_phase(
    req: &Request<'_>,
    i: usize,
    rel: &Path,
    hosts: &[String],
    out: &[(String, String)],
    earlier: &[Option<Results>],
) -> Result<Option<PhaseDone>, AcceptError> {
    let phase = &req.doc.phases[i];
    let opened = phase::open(req.doc, phase, req.trust, req.layers)?;
    let dir = req.out.join(rel);
    crate::output::ensure_dir_within(req.out, &dir)?;
    let at = Where {
        dir: &dir,
        hosts,
        trust: req.trust,
        events: req.events.clone(),
    };
    let ran = phase::run(&phase.name, &opened, &at)?;
    if ran.interrupted.is_some() {
        return Ok(None);
    }
    let crit: Vec<CriterionResult> = phase
        .criteria
        .iter()
        .map(|c| {
            let of = |k: usize| {
                let name = req.doc.phases.get(k)?.name.clone();
                Some((name, earlier.get(k)?.clone()?))
            };
            criteria::judge(c, &ran.results, &of)
        })
        .collect();
    let crit_ok = crit.iter().all(|c| c.passed);
    let failed = ran.grade.status == crate::grade::Status::Fail || !crit_ok;
    let mut nodes = verdicts::of_phase(&ran.grade, hosts, failed);
    let suspects = nodes.iter().any(|n| n.verdict == NodeVerdict::Suspect);
    if phase.suspects == Suspects::Rerun
        && suspects
        && let Some(again) = phase::rerun(&phase.name, &opened, &at)?
    {
        if again.interrupted.is_some() {
            return Ok(None);
        }
        settle(&mut nodes, &again.grade);
    }
    let status = verdicts::status(&ran.grade, &nodes, crit_ok);
    let mut findings = verdicts::findings(&ran.grade, &nodes);
    findings.extend(
        crit.iter()
            .filter(|c| !c.passed)
            .map(|c| format!("criterion failed: {}", c.text)),
    );
    nodes.extend(out.iter().map(|(h, why)| NodeInPhase {
        host: h.clone(),
        verdict: NodeVerdict::Excluded,
        reason: why.clone(),
    }));
    nodes.sort_by(|a, b| a.host.cmp(&b.host));
    let out_hosts: Vec<&String> = out.iter().map(|(h, _)| h).collect();
    let record = PhaseRecord {
        index: i,
        name: phase.name.clone(),
        dir: rel.display().to_string(),
        plan_file: plan_file(phase),
        plan: opened.loaded.plan.name.clone(),
        status,
        why: None,
        started: ran.results.started.clone(),
        finished: ran.results.finished.clone(),
        seconds: seconds(
            ran.results.started.as_deref(),
            ran.results.finished.as_deref(),
        ),
        run_began: Some(ran.began.clone()),
        run_ended: Some(ran.ended.clone()),
        overhead_s: None,
        nodes_in: compress(hosts),
        nodes_out: compress(&out_hosts),
        nodes,
        findings,
        criteria: crit,
        exit: ran.exit.code(),
    };
    Ok(Some((record, ran.grade, ran.results)))
}

/// A rerun's verdicts for the nodes the first run left suspect.
fn settle(nodes: &mut [NodeInPhase], again: &Grade) {
    let Some(file) = &again.nodes else {
        return;
    };
    for n in nodes
        .iter_mut()
        .filter(|n| n.verdict == NodeVerdict::Suspect)
    {
        if let Some(e) = file.nodes.iter().find(|e| e.host == n.host) {
            use crate::nodeset::attribution::Verdict;
            n.verdict = match e.verdict {
                Verdict::Passed => NodeVerdict::Passed,
                Verdict::Failed => NodeVerdict::Failed,
                Verdict::Suspect => NodeVerdict::Suspect,
                // Left out of the rounds for a configuration that differs: drained.
                Verdict::ConfigMismatch => NodeVerdict::Failed,
            };
            n.reason = format!("rerun: {}", e.reason);
        }
    }
}

/// Seconds between two RFC 3339 times.
pub fn seconds(from: Option<&str>, to: Option<&str>) -> Option<f64> {
    let a = humantime::parse_rfc3339_weak(from?).ok()?;
    let b = humantime::parse_rfc3339_weak(to?).ok()?;
    b.duration_since(a).ok().map(|d| d.as_secs_f64())
}

/// The acceptance's exit so far, with phase `r`: a timeout or runtime failure outranks a
/// failed phase; a phase not run because of the others is a failure of the acceptance.
fn worse(so_far: Exit, r: &PhaseRecord) -> Exit {
    let this = match r.status {
        PhaseStatus::Passed | PhaseStatus::Skipped => Exit::Ok,
        _ if r.exit == Exit::Timeout.code() => Exit::Timeout,
        _ if r.exit == Exit::Runtime.code() => Exit::Runtime,
        _ => Exit::Failed,
    };
    let rank = |e: Exit| match e {
        Exit::Ok => 0,
        Exit::Failed => 1,
        Exit::Runtime => 2,
        Exit::Timeout => 3,
        _ => 4,
    };
    if rank(this) > rank(so_far) {
        this
    } else {
        so_far
    }
}
