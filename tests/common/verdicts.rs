//! What a run's own `junit.xml` and report say against what `baton grade` says of the same
//! results afterwards: a run cut short must be graded exactly as it would be later.

use std::path::Path;
use std::process::Command;

use super::{p, read, show};

/// Each test case of a JUnit file: its name and how it ended (`pass`, `failure`, `error`,
/// `skipped`), in file order.
pub fn junit_cases(xml: &str) -> Vec<(String, &'static str)> {
    xml.split("<testcase ")
        .skip(1)
        .map(|case| {
            let name = case
                .split_once("name=\"")
                .and_then(|(_, r)| r.split_once('"'))
                .map_or(String::new(), |(n, _)| n.to_string());
            let body = case.split("</testcase>").next().unwrap_or(case);
            let status = if body.contains("<failure") {
                "failure"
            } else if body.contains("<error") {
                "error"
            } else if body.contains("<skipped") {
                "skipped"
            } else {
                "pass"
            };
            (name, status)
        })
        .collect()
}

/// The verdict line of a Markdown report.
pub fn verdict_line(md: &str) -> String {
    md.lines()
        .find(|l| l.starts_with("**Verdict"))
        .unwrap_or("")
        .to_string()
}

/// Grades `out/results.json` with `baton` from `dir` and asserts the run's `junit.xml` and
/// report verdict say the same; returns the verdict line.
pub fn same_as_grade(baton: &str, dir: &Path, plan: &Path, out: &Path) -> String {
    let again = dir.join("graded-again");
    let o = Command::new(baton)
        .args(["grade", p(plan), p(&out.join("results.json"))])
        .args(["--junit", p(&again.join("junit.xml"))])
        .args(["--report", p(&again.join("report"))])
        .env("NO_COLOR", "1")
        .current_dir(dir)
        .output()
        .expect("baton grade runs");
    assert!(
        again.join("junit.xml").is_file(),
        "grade wrote no junit: {}",
        show(&o)
    );
    let run = junit_cases(&read(&out.join("junit.xml")));
    let graded = junit_cases(&read(&again.join("junit.xml")));
    assert!(!run.is_empty(), "the run's junit has no test case");
    assert_eq!(run, graded, "the run's junit.xml against `baton grade`'s");
    let line = verdict_line(&read(&out.join("report/report.md")));
    assert_eq!(
        line,
        verdict_line(&read(&again.join("report/report.md"))),
        "the run's report verdict against `baton grade`'s"
    );
    line
}
