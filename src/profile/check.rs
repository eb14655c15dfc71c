//! What `baton check` says about profiles: which one applies, and every `… of profile`
//! criterion whose collective and sizes the named profile has no figure for, and every floor above
//! the figure the profile gives the hardware.

use super::named;
use crate::plan::{Check, Plan, PlanFiles};
use crate::units::{Cmp, Size};

/// The line `check` prints about the plan's profile, `None` when no criterion reads one; `Err`
/// with every problem when the named profile is missing or lacks a figure a criterion needs.
pub fn check_plan(plan: &Plan, files: &PlanFiles) -> Result<Option<String>, Vec<String>> {
    let uses: Vec<_> = plan
        .tests
        .iter()
        .flat_map(|t| t.expect.iter().map(move |c| (t, c)))
        .filter(|(_, c)| matches!(c.check, Check::Profile(_)))
        .collect();
    if uses.is_empty() {
        return Ok(None);
    }
    let Some(name) = plan.profile.as_deref() else {
        return Ok(Some(
            "profile: picked at grade time from the recorded GPUs (model × count); set `profile:` to fix one"
                .into(),
        ));
    };
    let profile = named(name, Some(files)).map_err(|e| vec![e.to_string()])?;
    let mut problems = Vec::new();
    for (t, c) in uses {
        let sizes: Vec<u64> = t
            .sizes
            .values()
            .into_iter()
            .filter(|s| c.at.as_ref().is_none_or(|a| a.matches(*s)))
            .collect();
        for coll in &t.axes.collective {
            let missing: Vec<String> = sizes
                .iter()
                .filter(|s| profile.figure(*coll, **s).is_none())
                .map(|s| Size(*s).to_string())
                .collect();
            if !missing.is_empty() {
                problems.push(format!(
                    "test `{}`: `busbw … of profile` has no figure in profile {} for {coll} at {} (it has: {}); narrow it with `at:` or add the figure",
                    t.name,
                    profile.name,
                    shorten(&missing),
                    profile.bands()
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(Some(format!(
            "profile: {} v{} ({}){}",
            profile.name,
            profile.version,
            profile.description,
            keyed(&profile)
        )))
    } else {
        Err(problems)
    }
}

/// Floors the plan's own profile says a healthy machine does not reach: an absolute `busbw >=`
/// above the profile's figure for that collective and size, or `of profile` above 100%. A
/// warning, not an error: the profile is one report, and a faster fleet may pass it; but graded
/// as written, the machines the profile describes fail it.
pub fn floors_above(plan: &Plan, files: &PlanFiles) -> Vec<String> {
    let Some(profile) = plan
        .profile
        .as_deref()
        .and_then(|n| named(n, Some(files)).ok())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in &plan.tests {
        for c in &t.expect {
            let (floor, share) = match &c.check {
                Check::Busbw(th) if matches!(th.cmp, Cmp::Ge | Cmp::Gt) => (th.value, None),
                Check::Profile(th) if matches!(th.cmp, Cmp::Ge | Cmp::Gt) && th.value > 100.0 => {
                    (0.0, Some(th.value))
                }
                _ => continue,
            };
            for coll in &t.axes.collective {
                let above = t
                    .sizes
                    .values()
                    .into_iter()
                    .filter(|s| c.at.as_ref().is_none_or(|a| a.matches(*s)))
                    .find_map(|s| {
                        profile
                            .figure(*coll, s)
                            .filter(|f| share.is_some() || floor > f.busbw)
                            .map(|f| (s, f))
                    });
                if let Some((size, f)) = above {
                    let what = match share {
                        Some(p) => format!("`busbw >= {p}% of profile`"),
                        None => format!("busbw floor {floor} GB/s"),
                    };
                    out.push(format!(
                        "test `{}`: {what} at {} is above profile {}'s figure for {coll}, {} GB/s ({}): the machines it describes fail it",
                        t.name,
                        Size(size),
                        profile.name,
                        f.busbw,
                        f.source
                    ));
                }
            }
        }
    }
    out
}

/// `; rows for NCCL <2.28, >=2.28, <2.29`: the NCCL ranges the profile's rows are keyed by,
/// since which row grades a job is known only from its results.
fn keyed(profile: &super::Profile) -> String {
    let mut ranges: Vec<String> = Vec::new();
    for r in profile.figures.iter().filter_map(|f| f.nccl.as_ref()) {
        let r = r.to_string();
        if !ranges.contains(&r) {
            ranges.push(r);
        }
    }
    if ranges.is_empty() {
        return String::new();
    }
    format!(
        "; rows for NCCL {} (graded by the NCCL the results record)",
        ranges.join("; ")
    )
}

fn shorten(v: &[String]) -> String {
    match v {
        [] => String::new(),
        [one] => one.clone(),
        _ if v.len() <= 3 => v.join(", "),
        _ => format!("{} sizes from {} to {}", v.len(), v[0], v[v.len() - 1]),
    }
}
