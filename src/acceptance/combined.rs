//! The combined files in the acceptance's directory, all from its outcome (and each phase's
//! grade for JUnit and the verdict JSON): `acceptance.json`, `nodes.json`, `drain.sh`,
//! `junit.xml`, `verdict.json` — each atomic, never through a link (the signable report,
//! `acceptance.html` and `.md`, is `signable`'s).

use std::path::{Path, PathBuf};

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::outcome::{AcceptanceFile, Overall, phase_word};
use super::record::PhaseStatus;
use crate::grade::Grade;
use crate::nodeset::attribution::Verdict;
use crate::nodeset::export::{NodeEntry, NodesFile, drain_script};
use crate::output::{OutputError, write_atomic, write_atomic_mode};

/// Writes every combined file into `dir`; returns their paths.
pub fn write_all(
    dir: &Path,
    a: &AcceptanceFile,
    grades: &[Option<Grade>],
) -> Result<Vec<PathBuf>, OutputError> {
    let mut written = Vec::new();
    let mut put = |name: &str, bytes: &[u8], mode: Option<u32>| {
        let p = dir.join(name);
        match mode {
            Some(m) => write_atomic_mode(&p, bytes, m),
            None => write_atomic(&p, bytes),
        }?;
        written.push(p);
        Ok::<(), OutputError>(())
    };
    put("acceptance.json", &pretty(a), None)?;
    put("nodes.json", &pretty(&nodes_json(a)), None)?;
    put(
        "drain.sh",
        drain_script(&drain_file(a), &a.acceptance).as_bytes(),
        Some(0o755),
    )?;
    put("junit.xml", &junit(a, grades), None)?;
    put("verdict.json", &pretty(&verdict(a, grades)), None)?;
    Ok(written)
}

fn pretty<T: serde::Serialize>(v: &T) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(v).unwrap_or_default();
    b.push(b'\n');
    b
}

/// `nodes.json`: the overall hostlists, and each node's verdict per phase.
fn nodes_json(a: &AcceptanceFile) -> serde_json::Value {
    serde_json::json!({
        "acceptance": a.acceptance,
        "passed": a.passed,
        "failed": a.failed,
        "suspect": a.suspect,
        "nodes": a.node_verdicts,
    })
}

/// The failed nodes as `drain.sh` wants them, each reason naming its phase and cause.
fn drain_file(a: &AcceptanceFile) -> NodesFile {
    let verdict = |v: Overall| match v {
        Overall::Passed => Verdict::Passed,
        Overall::Failed => Verdict::Failed,
        Overall::Suspect => Verdict::Suspect,
    };
    let nodes = a
        .node_verdicts
        .iter()
        .map(|n| NodeEntry::new(&n.host, verdict(n.verdict), &n.reason))
        .collect();
    NodesFile::of(nodes, Vec::new(), Vec::new())
}

/// A suite per phase (gating and criteria between phases) and, for a phase that ran, a suite
/// per node-set job, named `PHASE: JOB`.
fn junit(a: &AcceptanceFile, grades: &[Option<Grade>]) -> Vec<u8> {
    let mut report = Report::new(format!("baton acceptance {}", a.acceptance));
    for (r, g) in a.phases.iter().zip(grades) {
        let mut s = TestSuite::new(format!("phase {}", r.name));
        let mut case = TestCase::new("phase", TestCaseStatus::success());
        match r.status {
            PhaseStatus::Skipped | PhaseStatus::Blocked | PhaseStatus::Stopped => {
                let mut st = TestCaseStatus::skipped();
                st.set_message(format!(
                    "{}: {}",
                    phase_word(r.status),
                    r.why.as_deref().unwrap_or("")
                ));
                case = TestCase::new("phase", st);
            }
            PhaseStatus::Failed | PhaseStatus::ClusterFailed => {
                let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
                st.set_message(format!(
                    "{}: {}",
                    phase_word(r.status),
                    r.findings.join("; ")
                ));
                case = TestCase::new("phase", st);
            }
            PhaseStatus::Passed => {}
        }
        s.add_test_case(case);
        for c in &r.criteria {
            let st = if c.passed {
                TestCaseStatus::success()
            } else {
                let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
                st.set_message(c.details.join("; "));
                st
            };
            s.add_test_case(TestCase::new(c.text.clone(), st));
        }
        report.add_test_suite(s);
        for mut js in g.iter().flat_map(crate::report::junit_suites) {
            js.name = format!("{}: {}", r.name, js.name.as_str()).into();
            report.add_test_suite(js);
        }
    }
    let mut out = Vec::new();
    if report.serialize(&mut out).is_err() {
        out.clear();
    }
    crate::report::xml_document(out)
}

/// `verdict.json`: the acceptance's status and each phase's verdict JSON.
fn verdict(a: &AcceptanceFile, grades: &[Option<Grade>]) -> serde_json::Value {
    let phases: Vec<serde_json::Value> = a
        .phases
        .iter()
        .zip(grades)
        .map(|(r, g)| {
            let v = g
                .as_ref()
                .and_then(|g| crate::session::verdict_json(g).ok())
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
            serde_json::json!({"phase": r.name, "status": r.status, "verdict": v})
        })
        .collect();
    serde_json::json!({
        "acceptance": a.acceptance,
        "status": a.status,
        "exit": a.exit,
        "phases": phases,
    })
}

fn or_none(s: &str) -> &str {
    if s.is_empty() { "none" } else { s }
}

fn count(a: &AcceptanceFile, v: Overall) -> usize {
    a.node_verdicts.iter().filter(|n| n.verdict == v).count()
}

/// The summary the CLI prints.
pub fn summary(a: &AcceptanceFile) -> String {
    let mut s = String::new();
    for r in &a.phases {
        let took = r.seconds.map_or(String::new(), |t| format!(", {t:.0} s"));
        let on = if r.nodes_in.is_empty() {
            String::new()
        } else {
            format!(" on {}", r.nodes_in)
        };
        s.push_str(&format!(
            "phase {}: {}{on}{took}\n",
            r.name,
            phase_word(r.status)
        ));
        for c in &r.criteria {
            let mark = if c.passed { "✓" } else { "✗" };
            s.push_str(&format!("    {mark} {}\n", c.text));
        }
    }
    s.push_str(&format!(
        "acceptance {}: {} — accepted {} ({}); failed {} ({}); suspect {} ({})\n",
        a.acceptance,
        a.status.to_uppercase(),
        or_none(&a.passed),
        count(a, Overall::Passed),
        or_none(&a.failed),
        count(a, Overall::Failed),
        or_none(&a.suspect),
        count(a, Overall::Suspect),
    ));
    for n in a
        .node_verdicts
        .iter()
        .filter(|n| n.verdict != Overall::Passed)
    {
        s.push_str(&format!("    {}: {}\n", n.host, n.reason));
    }
    for f in &a.findings {
        s.push_str(&format!("    cluster: {f}\n"));
    }
    s
}
