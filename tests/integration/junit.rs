//! JUnit XML from `baton grade --junit`: structure, messages, properties; validated against the
//! consumer subset in schemas/junit.xsd with xmllint, and parsed by a real consumer (python
//! junitparser). External tools are detected at run time; scripts/ci-deps-issue5.sh installs
//! them in CI.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use quick_junit::{NonSuccessKind, Report, TestCaseStatus};

/// JUnit of the NET/Socket run graded against the healthy one, and of the healthy sweep.
fn reports(d: &Path) -> (PathBuf, PathBuf) {
    let failing = d.join("failing.xml");
    grade_socket(d, &["--junit", p(&failing)]);
    let healthy = healthy(d);
    let passing = d.join("passing.xml");
    let o = baton(&[
        "grade",
        p(&plan("h200x2.yaml")),
        p(&healthy),
        "--junit",
        p(&passing),
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    (failing, passing)
}

fn schema() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/junit.xsd")
}

#[test]
fn one_suite_per_job_one_case_per_criterion_and_size() {
    let d = tmp("junit_structure");
    let (failing, passing) = reports(&d);
    let r = Report::deserialize_from_str(&read(&failing)).expect("well-formed JUnit");
    assert_eq!(r.test_suites.len(), 1);
    let s = &r.test_suites[0];
    assert_eq!(s.name.as_str(), "nvlink");
    let names: Vec<&str> = s.test_cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "results present and complete",
            "no wrong elements (#wrong 0)",
            "transport P2P",
            "busbw >= 250 GB/s at 256M",
            "regression <= 5% @ 1M",
            "regression <= 5% @ 4M",
            "regression <= 5% @ 16M",
            "regression <= 5% @ 64M",
            "regression <= 5% @ 256M",
        ]
    );
    assert_eq!(s.failures, 7);
    let busbw = &s.test_cases[3];
    let TestCaseStatus::NonSuccess {
        kind, message, ty, ..
    } = &busbw.status
    else {
        panic!("busbw must fail");
    };
    assert_eq!(*kind, NonSuccessKind::Failure);
    assert_eq!(ty.as_ref().map(|t| t.as_str()), Some("busbw"));
    let message = message.as_ref().unwrap().as_str();
    assert!(
        message.starts_with("busbw 3.33 GB/s < 250 GB/s at 256M (all_reduce float sum, out-of-place); busbw 3.81 GB/s < 250 GB/s at 256M (all_reduce float sum, in-place); transport NET/Socket, expected P2P"),
        "{message}"
    );
    let props: Vec<(&str, &str)> = s
        .properties
        .iter()
        .map(|p| (p.name.as_str(), p.value.as_str()))
        .collect();
    for want in [
        ("nccl", "2.28.3"),
        ("hosts", "vm"),
        ("gpus", "2× NVIDIA H200 on vm"),
        ("ranks", "2"),
        ("transports", "NET/Socket"),
        ("env.NCCL_P2P_DISABLE", "1"),
        ("driver", "not recorded"),
    ] {
        assert!(props.contains(&want), "{want:?} in {props:?}");
    }
    let r = Report::deserialize_from_str(&read(&passing)).expect("well-formed JUnit");
    assert_eq!(r.test_suites.len(), 4, "one suite per job");
    assert_eq!(r.failures, 0);
    // busbw at >= 1G covers four sizes: four test cases.
    let ar = &r.test_suites[0];
    assert_eq!(
        ar.test_cases
            .iter()
            .filter(|c| c.name.as_str().starts_with("busbw >= 320 GB/s at >= 1G @ "))
            .count(),
        4
    );
}

#[test]
fn corruption_fails_with_its_own_type_and_warnings_stay_green() {
    let d = tmp("junit_corruption");
    let r = corrupted_all_reduce(&d, 8 << 30, 8, "12");
    let pl = two_gpu_plan(
        &d,
        "p.yaml",
        &format!(
            "{ALLREDUCE_SWEEP}    expect:\n      - algbw: \">= 1 TB/s\"\n        at: 8G\n        severity: warn\n"
        ),
    );
    let x = d.join("j.xml");
    let o = baton(&["grade", p(&pl), p(&r), "--junit", p(&x)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    let rep = Report::deserialize_from_str(&read(&x)).unwrap();
    let cases = &rep.test_suites[0].test_cases;
    let integrity = cases
        .iter()
        .find(|c| c.name.as_str() == "no wrong elements (#wrong 0)")
        .unwrap();
    let TestCaseStatus::NonSuccess { ty, message, .. } = &integrity.status else {
        panic!("corruption must fail");
    };
    assert_eq!(ty.as_ref().map(|t| t.as_str()), Some("corruption"));
    assert!(message.as_ref().unwrap().as_str().starts_with(
        "#wrong 12 at 8G (all_reduce float sum, out-of-place, repeat 0): data corruption"
    ));
    let warn = cases
        .iter()
        .find(|c| c.name.as_str().starts_with("algbw"))
        .unwrap();
    assert!(
        matches!(warn.status, TestCaseStatus::Success { .. }),
        "warn is not a failure"
    );
    assert!(
        warn.system_out
            .as_ref()
            .unwrap()
            .as_str()
            .starts_with("WARN: ")
    );
}

fn have(tool: &str, probe: &[&str]) -> bool {
    Command::new(tool)
        .args(probe)
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn validates_against_the_consumer_schema_with_xmllint() {
    if !have("xmllint", &["--version"]) {
        println!(
            "SKIPPED: xmllint not found (apt-get install libxml2-utils; scripts/ci-deps-issue5.sh)"
        );
        return;
    }
    let d = tmp("junit_xmllint");
    let (failing, passing) = reports(&d);
    for f in [&failing, &passing] {
        let o = Command::new("xmllint")
            .args(["--noout", "--schema", p(&schema()), p(f)])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}: {}",
            f.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // The schema is strict enough to catch what a consumer would reject.
    let bad = read(&failing).replacen(
        "<system-out>",
        "<flakyFailure message=\"x\"/><system-out>",
        1,
    );
    let bad = write(&d, "bad.xml", &bad);
    let o = Command::new("xmllint")
        .args(["--noout", "--schema", p(&schema()), p(&bad)])
        .output()
        .unwrap();
    assert!(
        !o.status.success(),
        "an element outside the subset must be rejected"
    );
}

#[test]
fn a_real_consumer_parses_it() {
    if !have("python3", &["-c", "import junitparser"]) {
        println!(
            "SKIPPED: python3 with junitparser not found (pip install junitparser; scripts/ci-deps-issue5.sh)"
        );
        return;
    }
    let d = tmp("junit_junitparser");
    let (failing, _) = reports(&d);
    let script = r#"
import sys
from junitparser import JUnitXml, Failure, Skipped
xml = JUnitXml.fromfile(sys.argv[1])
for suite in xml:
    props = {p.name: p.value for p in suite.properties()}
    print("SUITE", suite.name, suite.tests, suite.failures, props.get("nccl"))
    for case in suite:
        kinds = [type(r).__name__ + ":" + (r.message or "") for r in case.result]
        print("CASE", case.classname, "|", case.name, "|", ";".join(kinds) or "pass")
"#;
    let o = Command::new("python3")
        .args(["-c", script, p(&failing)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("SUITE nvlink 9 7 2.28.3"), "{out}");
    assert!(
        out.contains("CASE nvlink | results present and complete | pass"),
        "{out}"
    );
    assert!(
        out.contains("CASE nvlink | transport P2P | Failure:transport NET/Socket, expected P2P (all_reduce float sum): channel 00 rank 0 -> 1 via NET/Socket/0 on vm"),
        "{out}"
    );
    assert!(out.contains("CASE nvlink | regression <= 5% @ 256M | Failure:busbw 3.33 GB/s vs baseline 300.63 GB/s at 256M"), "{out}");
}

/// A variable one ingested log states stays on that log's job: never on another job's suite,
/// never in the report's run-wide environment.
#[test]
fn a_logs_variables_stay_on_its_own_job() {
    let d = tmp("junit_env_attribution");
    let r = ingest(
        &d,
        "r.json",
        &[
            &fixture("all_reduce_p2p_disabled_debug.txt"),
            &fixture("all_gather.txt"),
        ],
        None,
    );
    let xml = d.join("junit.xml");
    let rep = d.join("report");
    let pl = plan("h200x2.yaml");
    let o = baton(&[
        "grade",
        p(&pl),
        p(&r),
        "--junit",
        p(&xml),
        "--report",
        p(&rep),
    ]);
    assert!(code(&o) <= 1, "{}", show(&o));
    let text = std::fs::read_to_string(&xml).unwrap();
    let suite = |name: &str| {
        let start = text
            .find(&format!("<testsuite name=\"{name}\""))
            .unwrap_or_else(|| panic!("no suite {name}: {text}"));
        let end = text[start..].find("</testsuite>").unwrap() + start;
        text[start..end].to_string()
    };
    assert!(
        suite("allreduce").contains("name=\"env.NCCL_P2P_DISABLE\" value=\"1\""),
        "{text}"
    );
    assert!(!suite("allgather").contains("NCCL_P2P_DISABLE"), "{text}");
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    let env_section = &md[md.find("Environment").expect("an environment section")..];
    assert!(!env_section.contains("| NCCL_P2P_DISABLE"), "{env_section}");
    // results.json keeps what the log said.
    assert!(read(&r).contains("NCCL_P2P_DISABLE"));
}

/// The one test case of a junit.xml written for a command that failed before measuring.
fn error_case(path: &Path) -> (String, String, String) {
    let r = Report::deserialize_from_str(&read(path)).expect("well-formed JUnit");
    assert_eq!(r.test_suites.len(), 1, "{}", read(path));
    let s = &r.test_suites[0];
    assert_eq!(s.test_cases.len(), 1, "{}", read(path));
    let c = &s.test_cases[0];
    let TestCaseStatus::NonSuccess {
        kind: NonSuccessKind::Error,
        message,
        description,
        ..
    } = &c.status
    else {
        panic!("not an error case: {}", read(path));
    };
    (
        c.name.to_string(),
        message.as_ref().map(|m| m.to_string()).unwrap_or_default(),
        description
            .as_ref()
            .map(|m| m.to_string())
            .unwrap_or_default(),
    )
}

#[test]
fn a_run_of_an_invalid_plan_still_writes_a_red_junit_xml() {
    let d = tmp("junit_run_invalid_plan");
    let plan = write(
        &d,
        "bad.yaml",
        "version: 1\nname: bad\nbackend: mpi\ntests:\n  - name: t\n    collective: all_reduse\n    sizes: [8]\n",
    );
    let out = d.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let o = baton(&["run", p(&plan), "-o", p(&out)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let (name, message, _) = error_case(&out.join("junit.xml"));
    assert_eq!(name, "plan");
    assert!(
        message.contains("bad.yaml:6:17") && message.contains("all_reduse"),
        "{message}"
    );
    schema_valid(&out.join("junit.xml"));
}

#[test]
fn a_run_that_cannot_start_still_writes_a_red_junit_xml() {
    let d = tmp("junit_run_cannot_start");
    // Two nodes without a launcher: refused before anything runs, on any machine.
    let plan = write(
        &d,
        "two.yaml",
        "version: 1\nname: two-nodes\nbackend: mpi\nlaunch: { nodes: 2, ranks_per_node: 1 }\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [8]\n",
    );
    let out = d.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let o = baton(&["run", p(&plan), "-o", p(&out)]);
    assert_eq!(code(&o), 3, "{}", show(&o));
    let (name, message, _) = error_case(&out.join("junit.xml"));
    assert_eq!(name, "run");
    assert!(message.contains("spans 2 nodes"), "{message}");
    let xml = read(&out.join("junit.xml"));
    assert!(xml.contains(r#"<testsuite name="two-nodes""#), "{xml}");
}

#[test]
fn a_grade_whose_plan_is_invalid_still_writes_its_junit_xml() {
    let d = tmp("junit_grade_invalid_plan");
    let r = healthy(&d);
    let plan = write(&d, "bad.yaml", "version: 1\nname: bad\ntests: 3\n");
    let junit = d.join("junit.xml");
    let _ = std::fs::remove_file(&junit);
    let o = baton(&["grade", p(&plan), p(&r), "--junit", p(&junit)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let (name, message, _) = error_case(&junit);
    assert_eq!(name, "grade");
    assert!(message.contains("bad.yaml:3"), "{message}");
}

/// xmllint against the consumer subset, where xmllint is installed.
fn schema_valid(path: &Path) {
    let Ok(o) = Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(schema())
        .arg(path)
        .output()
    else {
        return;
    };
    assert!(o.status.success(), "{}", show(&o));
}
