//! JUnit XML for CI (Jenkins, GitLab): one testsuite per job, one testcase per criterion — and
//! per size where a criterion covers several, so CI history tracks each size — with failure
//! messages that stand alone on a CI page and the environment as suite properties.
//!
//! Only elements both consumers accept are written: testsuites › testsuite › properties,
//! testcase › failure | skipped, system-out. A `warn` criterion that failed is a passing testcase
//! whose system-out starts with `WARN:`; JUnit has no warning state and a CI must stay green.

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::{Exporter, ReportError, ReportInput, tables};
use crate::grade::{CriterionVerdict, Grade, JobVerdict, Status};

pub struct JunitExporter;

impl Exporter for JunitExporter {
    fn export(&self, input: &ReportInput<'_>) -> Result<Vec<u8>, ReportError> {
        let g = input.grade;
        let mut report = Report::new(format!("baton {}", g.plan));
        for j in &g.jobs {
            report.add_test_suite(suite(g, j));
        }
        let mut out = Vec::new();
        report.serialize(&mut out)?;
        Ok(super::xml::document(out))
    }
}

/// A test suite per job of `g` (per node set of a node-set run): what an acceptance's combined
/// `junit.xml` gathers phase by phase.
pub fn suites(g: &Grade) -> Vec<TestSuite> {
    g.jobs.iter().map(|j| suite(g, j)).collect()
}

fn suite(g: &Grade, j: &JobVerdict) -> TestSuite {
    let mut s = TestSuite::new(j.id.clone());
    s.add_properties(properties(g, j));
    for c in &j.criteria {
        let several = c.cases.len() > 1;
        for case in &c.cases {
            let name = if several {
                format!("{} @ {}", c.text, case.name)
            } else {
                c.text.clone()
            };
            s.add_test_case(test_case(j, c, &name, case));
        }
    }
    s
}

fn test_case(
    j: &JobVerdict,
    c: &CriterionVerdict,
    name: &str,
    case: &crate::grade::Case,
) -> TestCase {
    let diagnosis = c.diagnosis.as_ref().map(|d| d.text.as_str());
    let details = || {
        let mut d = format!("{}\n{}", c.text, case.message);
        if let Some(x) = diagnosis {
            d.push_str(&format!("\ndiagnosis: {x}"));
        }
        d.push_str(&format!(
            "\njob: {} ({})\ndata: {}",
            j.id,
            j.what,
            tables::provenance(j)
        ));
        d
    };
    let (status, out) = match case.status {
        Status::Pass => (TestCaseStatus::success(), case.message.clone()),
        Status::Warn => (TestCaseStatus::success(), format!("WARN: {}", details())),
        Status::Skipped => {
            let mut st = TestCaseStatus::skipped();
            st.set_message(case.message.clone());
            (st, case.message.clone())
        }
        Status::Fail => {
            let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
            let message = match diagnosis {
                Some(d) => format!("{} — {d}", case.message),
                None => case.message.clone(),
            };
            st.set_message(message);
            st.set_type(if case.message.contains("data corruption") {
                "corruption"
            } else {
                c.key
            });
            st.set_description(details());
            (st, case.message.clone())
        }
    };
    let mut t = TestCase::new(name.to_string(), status);
    t.set_classname(j.id.clone());
    t.set_system_out(out);
    t
}

fn properties(g: &Grade, j: &JobVerdict) -> Vec<Property> {
    let mut p = vec![
        Property::new("job", j.what.clone()),
        Property::new("plan", g.plan.clone()),
        Property::new("data", tables::provenance(j)),
        Property::new("gpus", tables::gpus(g)),
    ];
    if let Some(src) = &j.source {
        let r = &src.result;
        p.push(Property::new("ranks", r.layout.nranks.to_string()));
        let mut hosts: Vec<&str> = r.layout.ranks.iter().map(|x| x.host.as_str()).collect();
        hosts.dedup();
        if !hosts.is_empty() {
            p.push(Property::new("hosts", hosts.join(",")));
        }
        let mut classes: Vec<&str> = r.transports.iter().map(|t| t.transport.as_str()).collect();
        classes.sort_unstable();
        classes.dedup();
        if !classes.is_empty() {
            p.push(Property::new("transports", classes.join(",")));
        }
    }
    let e = &g.environment;
    let known = |v: &Option<String>| v.clone().unwrap_or_else(|| "not recorded".into());
    p.push(Property::new("driver", known(&e.driver_version)));
    p.push(Property::new("cuda", known(&e.cuda_version)));
    p.push(Property::new("nccl", known(&e.nccl_version)));
    if let Some(m) = &e.mpi_version {
        p.push(Property::new("mpi", m.clone()));
    }
    // The run's variables, then the job's own (from its plan or its log), which win.
    let mut vars: indexmap::IndexMap<String, String> =
        crate::results::env::shown_run_vars(e).into_iter().collect();
    if let Some(src) = &j.source {
        vars.extend(crate::results::env::shown_vars(&src.result));
    }
    for (k, v) in vars {
        p.push(Property::new(format!("env.{k}"), v));
    }
    if let Some(b) = &g.baseline {
        p.push(Property::new("baseline", b.clone()));
    }
    for f in &g.run.injected_faults {
        p.push(Property::new("injected_fault", f.clone()));
    }
    p
}

/// JUnit for a command that failed before it measured or graded anything (an invalid plan, no
/// GPU, no launcher): one test case in error, named for the step that failed, so CI shows a red
/// test with the reason instead of "no tests found".
pub fn failed_before_measuring(
    plan: &str,
    step: &str,
    message: &str,
) -> Result<Vec<u8>, ReportError> {
    let mut report = Report::new(format!("baton {plan}"));
    let mut suite = TestSuite::new(plan.to_string());
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    let first = message.lines().next().unwrap_or(message);
    status.set_message(first.to_string());
    status.set_type(step.to_string());
    status.set_description(message.to_string());
    let mut case = TestCase::new(step.to_string(), status);
    case.set_classname(plan.to_string());
    suite.add_test_case(case);
    report.add_test_suite(suite);
    let mut out = Vec::new();
    report.serialize(&mut out)?;
    Ok(super::xml::document(out))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_failure_before_measuring_is_one_error_case_with_its_reason() {
        let xml = String::from_utf8(
            super::failed_before_measuring("p", "run", "no GPU found\nsecond line").unwrap(),
        )
        .unwrap();
        assert!(
            xml.contains(r#"tests="1""#) && xml.contains(r#"errors="1""#),
            "{xml}"
        );
        assert!(
            xml.contains(r#"<error message="no GPU found" type="run">"#),
            "{xml}"
        );
        assert!(xml.contains("second line"), "{xml}");
    }
}
