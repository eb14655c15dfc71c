//! `relative.to`: a job ID, or a test that expands to exactly one job. Checked once every test
//! is read, since the target may come after the criterion.

use super::Checker;
use crate::plan::diag::Diagnostic;
use crate::plan::model::*;
use crate::plan::structure::suggest;

impl Checker<'_> {
    pub(super) fn resolve_relative(&mut self, plan: &mut Plan) {
        if self.relative_targets.is_empty() {
            return;
        }
        struct Named {
            test: String,
            id: String,
        }
        let jobs: Vec<Named> = plan
            .tests
            .iter()
            .zip(crate::plan::jobs::points(&plan.tests))
            .flat_map(|(t, points)| {
                points.into_iter().map(|p| Named {
                    test: t.name.clone(),
                    id: p.id,
                })
            })
            .collect();
        let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
        let tests: Vec<&str> = plan.tests.iter().map(|t| t.name.as_str()).collect();
        let mut resolved: Vec<(String, String, String)> = Vec::new();
        for (test, to) in std::mem::take(&mut self.relative_targets) {
            let of_test: Vec<&str> = jobs
                .iter()
                .filter(|j| j.test == to.value)
                .map(|j| j.id.as_str())
                .collect();
            let id = if ids.contains(&to.value.as_str()) {
                to.value.clone()
            } else if of_test.len() == 1 {
                of_test[0].to_string()
            } else if of_test.len() > 1 {
                self.err(
                    Diagnostic::error(
                        format!(
                            "test `{test}`: `relative.to: {}` names a test of {} jobs; name one job",
                            to.value,
                            of_test.len()
                        ),
                        Some(to.pos),
                    )
                    .help(format!("its jobs: {}", of_test.join(", "))),
                );
                continue;
            } else {
                let known: Vec<&str> = tests.iter().chain(ids.iter()).copied().collect();
                let msg = match suggest(&to.value, &known) {
                    Some(s) => format!(
                        "test `{test}`: `relative.to: {}` is no test or job of this plan — did you mean `{s}`?",
                        to.value
                    ),
                    None => format!(
                        "test `{test}`: `relative.to: {}` is no test or job of this plan",
                        to.value
                    ),
                };
                self.err(
                    Diagnostic::error(msg, Some(to.pos))
                        .help(format!("tests: {}", tests.join(", "))),
                );
                continue;
            };
            let own: Vec<&str> = jobs
                .iter()
                .filter(|j| j.test == test)
                .map(|j| j.id.as_str())
                .collect();
            if own == [id.as_str()] {
                self.err(Diagnostic::error(
                    format!(
                        "test `{test}`: `relative.to: {}` compares the test with its own job",
                        to.value
                    ),
                    Some(to.pos),
                ));
                continue;
            }
            resolved.push((test, to.value, id));
        }
        for t in &mut plan.tests {
            for c in &mut t.expect {
                if let Check::Relative(r) = &mut c.check
                    && let Some((_, _, id)) = resolved
                        .iter()
                        .find(|(test, to, _)| *test == t.name && *to == r.to)
                {
                    r.to = id.clone();
                }
            }
        }
    }
}
