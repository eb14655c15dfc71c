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
                let _ = writeln!(o, "    {mark} {}: {}", c.text, c.message);
                if let Some(d) = &c.diagnosis {
                    let _ = writeln!(o, "      diagnosis: {}", d.text);
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
