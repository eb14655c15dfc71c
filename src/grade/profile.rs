//! `busbw: ">= 90% of profile"`: busbw at each size against the share of what the job's
//! hardware profile says healthy hardware of its kind measures at that size. A size the profile
//! has no figure for fails and says which bands it has: a criterion never passes on a figure
//! that is not there. The row is the one for the NCCL and CTA policy the job was measured with;
//! graded against a row made for another, every message says so ([`crate::profile::Row`]).

use super::context::Ctx;
use super::measure::{num, placements, size, sizes};
use super::threshold::{Metric, violated, worst};
use super::verdict::{Case, CriterionVerdict, Status};
use crate::plan::{Criterion, PlanFiles};
use crate::profile::{Picked, for_job, measured};
use crate::units::{Quantity, Threshold};

/// Where a job's profile comes from: the plan's `profile:` and the plan's files.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProfileSource<'a> {
    pub name: Option<&'a str>,
    pub files: Option<&'a PlanFiles>,
}

impl ProfileSource<'_> {
    pub fn pick(&self, ctx: &Ctx<'_>) -> Picked {
        for_job(self.name, self.files, ctx.env, ctx.result)
    }
}

pub fn evaluate(
    ctx: &Ctx<'_>,
    c: &Criterion,
    share: &Threshold,
    picked: &Picked,
    text: String,
) -> CriterionVerdict {
    let profile = match picked {
        Ok(p) => p,
        Err(why) => {
            return CriterionVerdict::whole(c, text, Status::Fail, format!("{why} ({})", ctx.what));
        }
    };
    let places = placements(ctx.job, Some(c));
    let with = measured(ctx.env, ctx.result);
    let mut cases = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for s in sizes(ctx.job, c.at.as_ref()) {
        let Some(row) = profile.row(ctx.job.collective, s, &with) else {
            cases.push(Case::at_size(
                s,
                Status::Fail,
                format!(
                    "profile {} has no {} figure at {} (it has: {})",
                    profile.name,
                    ctx.job.collective,
                    size(s),
                    profile.bands()
                ),
            ));
            continue;
        };
        let fig = row.figure;
        let note = row.note.map(|n| format!(" — {n}")).unwrap_or_default();
        if !note.is_empty() && !notes.contains(&note) {
            notes.push(note.clone());
        }
        let limit = Threshold {
            cmp: share.cmp,
            value: fig.busbw * share.value / 100.0,
            quantity: Quantity::Bandwidth,
        };
        let basis = format!(
            "{}% of {}'s {} GB/s for {}{note}",
            num(share.value),
            profile.name,
            num(fig.busbw),
            fig.label(),
        );
        let mut fails = Vec::new();
        let mut seen = Vec::new();
        for &p in &places {
            match worst(ctx, s, p, Metric::Busbw, &limit) {
                Err(why) => fails.push(why),
                Ok((v, true)) => seen.push(format!("{} GB/s {}", num(v), p.label())),
                Ok((v, false)) => fails.push(format!(
                    "busbw {} GB/s {} {} GB/s ({basis}) at {} ({}, {})",
                    num(v),
                    violated(limit.cmp),
                    num(limit.value),
                    size(s),
                    ctx.what,
                    p.label()
                )),
            }
        }
        cases.push(if fails.is_empty() {
            Case::at_size(
                s,
                Status::Pass,
                format!(
                    "busbw {} {} GB/s ({basis}) at {}: {}",
                    limit.cmp,
                    num(limit.value),
                    size(s),
                    seen.join(", ")
                ),
            )
        } else {
            Case::at_size(
                s,
                Status::Fail,
                format!("{}{}", fails.join("; "), ctx.transport_note()),
            )
        });
    }
    let n = cases.len();
    CriterionVerdict::from_cases(
        "busbw",
        text,
        Some(c.clone()),
        cases,
        format!(
            "busbw {share} of profile {} at {n} size(s){}",
            profile.name,
            notes.concat()
        ),
    )
}

#[cfg(test)]
mod tests {
    use crate::profile::measured;

    /// What a row is picked by: the run's NCCL version, the CTA policy of the job's variables
    /// before the run's.
    #[test]
    fn the_job_s_variables_come_before_the_run_s() {
        let log = include_str!("../../tests/data/nccl-tests/h200x2/all_reduce.txt");
        let input = [crate::ingest::LogInput {
            name: "ar.txt",
            bytes: log.as_bytes(),
        }];
        let mut results = crate::ingest::ingest(&input, Some("a")).unwrap().results;
        let mut job = results.jobs.remove(0);
        let mut env = results.environment;
        let m = measured(Some(&env), &job);
        assert_eq!(m.nccl_version.as_deref(), Some("2.28.3"));
        assert_eq!(m.cta_policy, None);
        env.variables.insert("NCCL_CTA_POLICY".into(), "2".into());
        assert_eq!(measured(Some(&env), &job).cta_policy, Some(2));
        job.env
            .insert("NCCL_CTA_POLICY".into(), "EFFICIENCY".into());
        assert_eq!(measured(Some(&env), &job).cta_policy, Some(1));
        // The log's header is the job's own record: it holds without the run's environment.
        assert_eq!(measured(None, &job).nccl_version.as_deref(), Some("2.28.3"));
        job.measured_with = None;
        assert_eq!(measured(None, &job).nccl_version, None);
        // What the communicators were made with beats any variable.
        job.measured_with = Some(crate::results::MeasuredWith {
            nccl_version: Some("2.30.7".into()),
            cta_policy: Some(0),
            ..Default::default()
        });
        let m = measured(Some(&env), &job);
        assert_eq!(
            (m.nccl_version.as_deref(), m.cta_policy),
            (Some("2.30.7"), Some(0))
        );
    }
}
