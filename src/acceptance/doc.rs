//! The acceptance file checked: phases in order, what each needs, its suspects policy, stop
//! rule and cross-phase criteria, every mistake a diagnostic at its file:line:col (the plan's
//! `Report`, so `baton check` shows both kinds alike).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::raw::{RawAcceptance, RawCriterion, RawPhase, RawPlanRef, Suspects};
use crate::collective::Collective;
use crate::plan::loc::Loc;
use crate::plan::{Diagnostic, Pos, Report};
use crate::units::{Quantity, Threshold, parse_threshold};

/// The template's "within 10% of phase B" (and the default of every `relative`).
pub const DEFAULT_RELATIVE: &str = ">= 90%";
/// The template's "every iteration within ±5% of the median".
pub const DEFAULT_STEADY: &str = "<= 5%";

/// Largest acceptance file read.
const MAX_BYTES: usize = 1024 * 1024;

/// The node-set modes a phase may give the tests of its plan that do not say one.
const OVERS: &[&str] = &["each-node", "pairs", "isolate", "all"];

/// A checked acceptance file.
#[derive(Debug, Clone)]
pub struct Acceptance {
    pub name: String,
    pub description: Option<String>,
    /// The file as named, and its text (its hash is the acceptance's identity on resume).
    pub file: PathBuf,
    pub text: String,
    pub phases: Vec<Phase>,
    /// What `baton check` warns of: criteria that fail every healthy multi-node cluster, each
    /// at its line.
    pub warnings: Vec<Finding>,
}

/// A criterion that can only ever fail (`error`), or that fails every healthy cluster of some
/// shape (a warning), at its place.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub pos: Pos,
    pub message: String,
    pub error: bool,
}

#[derive(Debug, Clone)]
pub struct Phase {
    pub name: String,
    pub plan: PhasePlan,
    pub over: Option<String>,
    /// Indices of earlier phases.
    pub needs: Vec<usize>,
    pub only_if_failed: Option<usize>,
    pub suspects: Suspects,
    pub stop: Option<Stop>,
    pub criteria: Vec<Criterion>,
    /// Where each of `criteria` is written.
    pub criteria_at: Vec<Pos>,
}

/// Where a phase's plan is.
#[derive(Debug, Clone)]
pub enum PhasePlan {
    /// A file, resolved against the acceptance file's directory.
    File(PathBuf),
    /// Written inline (as a JSON value: YAML's superset carries it to the runner as text).
    Inline(serde_json::Value),
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    FailedNodes(u32),
    FailedPercent(f64),
}

/// A criterion between phases.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Criterion {
    Relative {
        /// The earlier phase's index.
        to: usize,
        collective: Option<Collective>,
        of: Option<Collective>,
        busbw: Threshold,
    },
    Steady {
        within: Threshold,
    },
}

/// Whether `text` is an acceptance file (its first key, `acceptance:`), not a plan.
pub fn is_acceptance(text: &str) -> bool {
    text.lines()
        .map(str::trim_start)
        .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("---"))
        .is_some_and(|l| l.starts_with("acceptance:"))
}

/// Whether the file at `path` is an acceptance file (an unreadable one is not: the plan
/// checks then say why).
pub fn is_acceptance_file(path: &Path) -> bool {
    crate::input::read_bounded(path, MAX_BYTES, "acceptance file")
        .is_ok_and(|b| is_acceptance(&String::from_utf8_lossy(&b)))
}

/// Reads (bounded) and checks the acceptance file at `path`.
pub fn load(path: &Path) -> Result<Acceptance, Report> {
    let name = path.display().to_string();
    let bytes = crate::input::read_bounded(path, MAX_BYTES, "acceptance file").map_err(|e| {
        let mut r = Report::new(&name, "");
        r.push(Diagnostic::error(e.to_string(), None));
        r
    })?;
    let text = String::from_utf8(bytes).map_err(|_| {
        let mut r = Report::new(&name, "");
        r.push(Diagnostic::error("the file is not UTF-8 text", None));
        r
    })?;
    parse(path, &text)
}

/// Checks acceptance `text` read from `path`.
pub fn parse(path: &Path, text: &str) -> Result<Acceptance, Report> {
    let mut report = Report::new(path.display().to_string(), text);
    let opts = crate::plan::yaml_options(serde_saphyr::DuplicateKeyPolicy::Error);
    let raw: RawAcceptance = match serde_saphyr::from_str_with_options(text, opts) {
        Ok(r) => r,
        Err(e) => {
            report.push(Diagnostic::error(e.to_string(), Pos::from_error(&e)));
            return Err(report);
        }
    };
    let doc = check(path, text, raw, &mut report);
    if report.has_errors() {
        return Err(report);
    }
    Ok(doc)
}

fn error(report: &mut Report, pos: Pos, message: impl Into<String>) {
    report.push(Diagnostic::error(message, Some(pos)));
}

fn check(path: &Path, text: &str, raw: RawAcceptance, report: &mut Report) -> Acceptance {
    if raw.acceptance.value != 1 {
        let m = format!(
            "acceptance version {} is not known: this baton reads `acceptance: 1`",
            raw.acceptance.value
        );
        error(report, raw.acceptance.pos, m);
    }
    if raw.phases.value.is_empty() {
        error(
            report,
            raw.phases.pos,
            "an acceptance needs at least one phase",
        );
    }
    let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
    let mut names: Vec<String> = Vec::new();
    let mut phases = Vec::new();
    let mut warnings = Vec::new();
    for p in raw.phases.value {
        let phase = check_phase(&dir, &names, p, report);
        warnings.extend(share_warnings(&phase));
        names.push(phase.name.clone());
        phases.push(phase);
    }
    Acceptance {
        name: raw.name.value,
        description: raw.description,
        file: path.to_path_buf(),
        text: text.to_string(),
        phases,
        warnings,
    }
}

/// Above this share of all_reduce, alltoall holds only inside one NVLink domain: across nodes
/// alltoall is bound by each GPU's own NIC (NDR 400: 46-49 GB/s busbw, NVIDIA/nccl-tests#130,
/// #267) while all_reduce reaches 330-480 GB/s (tests/data/real-logs), a share near 10-20%.
const ALLTOALL_OF_ALL_REDUCE_MAX: f64 = 50.0;

/// A `relative` criterion whose share the collectives' bandwidth laws rule out across nodes.
fn share_warnings(phase: &Phase) -> Vec<Finding> {
    let mut out = Vec::new();
    for (c, pos) in phase.criteria.iter().zip(&phase.criteria_at) {
        let Criterion::Relative {
            collective: Some(Collective::AllToAll),
            of: Some(of),
            busbw,
            ..
        } = c
        else {
            continue;
        };
        if *of != Collective::AllToAll && busbw.value > ALLTOALL_OF_ALL_REDUCE_MAX {
            out.push(Finding {
                pos: *pos,
                error: false,
                message: format!(
                    "phase {}: alltoall at {}% of {of} holds only inside one NVLink domain: across nodes alltoall is bound by each GPU's own NIC (~46-49 GB/s on NDR 400) while {of} reaches 330-480 GB/s, so a healthy cluster fails it; compare alltoall with what alltoall reaches (a busbw floor at a share of the NIC line rate, or an earlier phase's alltoall)",
                    phase.name, busbw.value
                ),
            });
        }
    }
    out
}

/// Criteria of `phase` that its own plan makes fail whatever the hardware does: `steady` and
/// `relative` on jobs whose busbw is 0 by definition (one rank: a median of 0 is no reference,
/// and a share of 0 is none), and `steady` over jobs that run once (no two repeats to compare).
/// Errors: they could only ever fail.
pub fn plan_findings(phase: &Phase, plan: &crate::plan::Plan) -> Vec<Finding> {
    use crate::plan::Repeat;
    let once = plan
        .tests
        .iter()
        .all(|t| matches!(t.repeat, Repeat::Times(n) if n <= 1));
    let zero_busbw = plan.launch.total_ranks() == Some(1)
        && plan
            .tests
            .iter()
            .flat_map(|t| &t.axes.collective)
            .all(|c| c.busbw_factor(1) == 0.0);
    let mut out = Vec::new();
    for (c, pos) in phase.criteria.iter().zip(&phase.criteria_at) {
        let what = match c {
            Criterion::Steady { .. } => "steady",
            Criterion::Relative { .. } => "relative",
        };
        let message = if zero_busbw {
            format!(
                "phase {}: `{what}` can only ever fail: plan {} runs each job on one rank, where busbw is 0 by definition; give the jobs 2 ranks or more",
                phase.name, plan.name
            )
        } else if once && matches!(c, Criterion::Steady { .. }) {
            format!(
                "phase {}: `steady` can only ever fail: it compares the repeats of each job, and plan {} runs every job once; give the soak test `repeat:` (a count or a duration)",
                phase.name, plan.name
            )
        } else {
            continue;
        };
        out.push(Finding {
            pos: *pos,
            message,
            error: true,
        });
    }
    out
}

/// The index of the earlier phase `name`, else a diagnostic naming those there are.
fn earlier(names: &[String], name: &Loc<String>, what: &str, report: &mut Report) -> usize {
    match names.iter().position(|n| *n == name.value) {
        Some(i) => i,
        None => {
            let known = if names.is_empty() {
                "none: it is the first phase".to_string()
            } else {
                names.join(", ")
            };
            let m = format!(
                "{what} `{}` is no earlier phase (earlier phases: {known})",
                name.value
            );
            error(report, name.pos, m);
            usize::MAX
        }
    }
}

fn check_phase(dir: &Path, names: &[String], p: RawPhase, report: &mut Report) -> Phase {
    let name = &p.name;
    let sound = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.value.is_empty() || name.value.len() > 64 || !name.value.chars().all(sound) {
        let m = format!(
            "phase name `{}` must be 1 to 64 letters, digits, `-` or `_` (it names the phase's directory)",
            name.value
        );
        error(report, name.pos, m);
    }
    if names.contains(&name.value) {
        error(
            report,
            name.pos,
            format!("a phase `{}` is named twice", name.value),
        );
    }
    let plan = match p.plan.value {
        RawPlanRef::File(f) => plan_file(dir, &f, p.plan.pos, report),
        RawPlanRef::Inline(m) => PhasePlan::Inline(serde_json::Value::Object(m)),
    };
    if let Some(o) = &p.over
        && !OVERS.contains(&o.value.as_str())
    {
        let m = format!("over `{}`: expected one of {}", o.value, OVERS.join(", "));
        error(report, o.pos, m);
    }
    let needs = match &p.needs {
        Some(n) => n
            .value
            .iter()
            .map(|x| earlier(names, x, "needs", report))
            .collect(),
        None => names.len().checked_sub(1).into_iter().collect(),
    };
    let only_if_failed = p
        .only_if_failed
        .as_ref()
        .map(|x| earlier(names, x, "only_if_failed", report));
    let stop = p.stop.as_ref().and_then(|s| stop(s, report));
    let (criteria, criteria_at) = p
        .criteria
        .iter()
        .filter_map(|c| Some((criterion(names, c, report)?, c.pos)))
        .unzip();
    Phase {
        name: name.value.clone(),
        plan,
        over: p.over.map(|o| o.value),
        needs,
        only_if_failed,
        suspects: p.suspects.map_or(Suspects::Exclude, |s| s.value),
        stop,
        criteria,
        criteria_at,
    }
}

/// A plan file named relative to the acceptance file; absolute paths and `..` are refused so
/// an acceptance runs only the plans kept beside it.
fn plan_file(dir: &Path, f: &str, pos: Pos, report: &mut Report) -> PhasePlan {
    let rel = Path::new(f);
    let escapes = rel.is_absolute()
        || rel
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir));
    if f.is_empty() || escapes {
        let m = format!(
            "plan `{f}`: name a plan file beside the acceptance file or below its directory (no absolute path, no `..`)"
        );
        error(report, pos, m);
    }
    PhasePlan::File(dir.join(rel))
}

fn stop(s: &Loc<super::raw::RawStop>, report: &mut Report) -> Option<Stop> {
    match (s.value.failed_nodes, s.value.failed_percent) {
        (Some(k), None) => Some(Stop::FailedNodes(k)),
        (None, Some(x)) if (0.0..=100.0).contains(&x) => Some(Stop::FailedPercent(x)),
        (None, Some(x)) => {
            error(
                report,
                s.pos,
                format!("stop: failed_percent {x} is not 0 to 100"),
            );
            None
        }
        _ => {
            let m = "stop: give one of `failed_nodes: K` or `failed_percent: X`";
            error(report, s.pos, m);
            None
        }
    }
}

fn percent(text: &str, pos: Pos, report: &mut Report) -> Option<Threshold> {
    parse_threshold(text, Quantity::Percent)
        .map_err(|e| error(report, pos, format!("`{text}`: {e}")))
        .ok()
}

fn collective(text: Option<&str>, pos: Pos, report: &mut Report) -> Option<Collective> {
    let t = text?;
    t.parse()
        .map_err(|()| {
            let m = format!(
                "collective `{t}`: expected one of {}",
                Collective::names().join(", ")
            );
            error(report, pos, m)
        })
        .ok()
}

fn criterion(names: &[String], c: &Loc<RawCriterion>, report: &mut Report) -> Option<Criterion> {
    match &c.value {
        RawCriterion::Relative(r) => {
            let to = Loc::new(r.to.clone(), c.pos);
            let to = earlier(names, &to, "relative.to", report);
            let busbw = percent(
                r.busbw.as_deref().unwrap_or(DEFAULT_RELATIVE),
                c.pos,
                report,
            )?;
            Some(Criterion::Relative {
                to,
                collective: collective(r.collective.as_deref(), c.pos, report),
                of: collective(r.of.as_deref(), c.pos, report),
                busbw,
            })
        }
        RawCriterion::Steady(t) => {
            let within = percent(t.as_deref().unwrap_or(DEFAULT_STEADY), c.pos, report)?;
            Some(Criterion::Steady { within })
        }
    }
}
