//! The terminal summary `grade` prints: the verdict first, failing jobs with every failure and its
//! diagnosis, passing jobs on one line each.

use std::fmt::Write;

use super::{Exporter, ReportError, ReportInput, tables};
use crate::grade::Status;

pub struct TextExporter;

impl Exporter for TextExporter {
    fn export(&self, input: &ReportInput<'_>) -> Result<Vec<u8>, ReportError> {
        let g = input.grade;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "plan {}: {} — {} job(s): {} failed, {} warned, {} passed",
            g.plan,
            g.status.label(),
            g.jobs.len(),
            g.count(Status::Fail),
            g.count(Status::Warn),
            g.count(Status::Pass) + g.count(Status::Skipped)
        );
        for j in g.jobs_by_severity() {
            let _ = writeln!(
                o,
                "{}  {}  {}  [{}]",
                j.status.label(),
                j.id,
                j.what,
                tables::provenance(j)
            );
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
