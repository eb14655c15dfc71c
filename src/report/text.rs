//! The terminal summary `grade` prints: the verdict first, failing jobs with every failure and its
//! diagnosis, passing jobs on one line each — and a test's passing node sets counted on one
//! line, not listed (a pairs test over 1,000 nodes is 499,500 set jobs).

use std::collections::HashMap;
use std::fmt::Write;

use super::{Exporter, ReportError, ReportInput, tables};
use crate::grade::{Grade, JobVerdict, Status};

pub struct TextExporter;

impl Exporter for TextExporter {
    fn export(&self, input: &ReportInput<'_>) -> Result<Vec<u8>, ReportError> {
        let g = input.grade;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "plan {}: {} — {} job(s): {} failed, {} warned, {} passed{}",
            g.plan,
            g.status.label(),
            g.jobs.len(),
            g.count(Status::Fail),
            g.count(Status::Warn),
            g.count(Status::Pass) + g.count(Status::Skipped),
            super::evidence::mismatch_summary(g)
        );
        for line in super::reruns::lines(g) {
            let _ = writeln!(o, "{line}");
        }
        let tests = set_tests(g);
        let mut counted = vec![false; g.node_sets.len()];
        for j in g.jobs_by_severity() {
            if let Some(&t) = tests.get(j.id.as_str())
                && passing(j.status)
            {
                if !std::mem::replace(&mut counted[t], true) {
                    count_sets(&mut o, g, t, &tests);
                }
                continue;
            }
            let _ = writeln!(
                o,
                "{}  {}  {}  [{}]",
                j.status.label(),
                j.id,
                j.what,
                tables::provenance(j)
            );
            if let Some(m) = tables::measured_with(j) {
                let _ = writeln!(o, "      measured with {m}");
            }
            let mut passed = 0;
            // Criteria failing for one reason (a job without results fails every one of them
            // alike) are named together and the reason said once.
            let mut lines: Vec<(&str, Vec<&str>, &str, Option<&str>)> = Vec::new();
            for c in &j.criteria {
                let mark = match c.status {
                    Status::Fail => "✗",
                    Status::Warn => "!",
                    Status::Skipped => "-",
                    Status::Pass => {
                        passed += 1;
                        continue;
                    }
                };
                let diagnosis = c.diagnosis.as_ref().map(|d| d.text.as_str());
                match lines.iter_mut().find(|l| {
                    l.0 == mark && l.2 == c.message && l.3.is_none() && diagnosis.is_none()
                }) {
                    Some(l) => l.1.push(&c.text),
                    None => lines.push((mark, vec![&c.text], &c.message, diagnosis)),
                }
            }
            for (mark, texts, message, diagnosis) in lines {
                let _ = writeln!(o, "    {mark} {}: {message}", texts.join("; "));
                if let Some(d) = diagnosis {
                    let _ = writeln!(o, "      diagnosis: {d}");
                }
            }
            if passed > 0 && j.status != Status::Pass {
                let _ = writeln!(o, "    ✓ {passed} other check(s) passed");
            }
        }
        for u in &g.unmatched {
            let _ = writeln!(o, "note: unused results: {u}");
        }
        if let Some(b) = &g.baseline {
            let _ = writeln!(o, "baseline: {b}");
        }
        Ok(o.into_bytes())
    }
}

fn passing(s: Status) -> bool {
    matches!(s, Status::Pass | Status::Skipped)
}

/// Each node-set job's test, as an index into `g.node_sets`; not `over: all`, whose one set is
/// the job itself, told on its own line as a plain run's.
fn set_tests(g: &Grade) -> HashMap<&str, usize> {
    let mut m = HashMap::new();
    for (t, test) in g.node_sets.iter().enumerate() {
        if test.over == crate::plan::Over::All.name() {
            continue;
        }
        for id in test.sets.iter().flat_map(|s| &s.jobs) {
            m.insert(id.as_str(), t);
        }
    }
    m
}

/// `FAIL  pairs: 27 of 28 node sets passed` (a set passes when every job of it does), then each
/// criterion the passing sets skipped, said once.
fn count_sets(o: &mut String, g: &Grade, t: usize, tests: &HashMap<&str, usize>) {
    let test = &g.node_sets[t];
    let by_id: HashMap<&str, &JobVerdict> = g.jobs.iter().map(|j| (j.id.as_str(), j)).collect();
    let verdict = |id: &str| by_id.get(id).copied();
    let passed = test
        .sets
        .iter()
        .filter(|s| {
            !s.jobs.is_empty()
                && s.jobs
                    .iter()
                    .all(|id| verdict(id).is_some_and(|j| passing(j.status)))
        })
        .count();
    // The line is the test's verdict for a reader who stops there: PASS only when every set
    // passed, WARN when the rest only warned, FAIL otherwise (a set that never ran included).
    let statuses: Vec<Status> = test
        .sets
        .iter()
        .flat_map(|s| &s.jobs)
        .filter_map(|id| verdict(id).map(|j| j.status))
        .collect();
    let label = if passed == test.sets.len() {
        Status::Pass
    } else if statuses.iter().all(|s| passing(*s) || *s == Status::Warn)
        && test.sets.iter().all(|s| !s.jobs.is_empty())
    {
        Status::Warn
    } else {
        Status::Fail
    };
    let _ = writeln!(
        o,
        "{}  {}: {passed} of {} node sets passed",
        label.label(),
        test.test,
        test.sets.len()
    );
    let mut skipped: Vec<(&str, &str, usize)> = Vec::new();
    let jobs = g
        .jobs
        .iter()
        .filter(|j| tests.get(j.id.as_str()) == Some(&t) && passing(j.status));
    for c in jobs
        .flat_map(|j| &j.criteria)
        .filter(|c| c.status == Status::Skipped)
    {
        match skipped
            .iter_mut()
            .find(|s| s.0 == c.text && s.1 == c.message)
        {
            Some(s) => s.2 += 1,
            None => skipped.push((&c.text, &c.message, 1)),
        }
    }
    for (text, message, n) in skipped {
        let sets = if n > 1 {
            format!(" ({n} set jobs)")
        } else {
            String::new()
        };
        let _ = writeln!(o, "    - {text}: {message}{sets}");
    }
}
