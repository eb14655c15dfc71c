//! Pairing plan jobs with results. Results from `run` (and `ingest --job`) carry their plan job
//! ID; an unlabelled log only states what it ran, so it pairs with the one plan job whose
//! collective, dtype, op, root, rank count and split agree. Anything ambiguous pairs with nothing
//! and says so: a job graded on another job's numbers would be worse than a red one. An ID is a
//! name, not a guarantee: results whose recorded identity or parameters differ from the plan
//! job's (another dtype, iters, env or rank count under the same ID) pair with nothing.

use crate::expand::Job;
use crate::plan::Backend;
use crate::results::{JobResult, JobSettings, MatchBy, Results};
use crate::split::Split;

use super::measure::{describe, describe_result};

/// What matching found for one plan job.
#[derive(Debug, Clone)]
pub enum Found {
    /// Exactly one result: (results file, job).
    One(String, Box<JobResult>),
    /// Nothing usable; the text says why, for a "fails closed" message.
    None(String),
}

/// Matches every plan job against the jobs in `files`. Returns one [`Found`] per job (in order)
/// and a line per result job that no plan job took.
pub fn assign(
    jobs: &[Job],
    files: &[(String, &Results)],
    backend: Backend,
) -> (Vec<Found>, Vec<String>) {
    let all: Vec<(&str, &JobResult)> = files
        .iter()
        .flat_map(|(f, r)| r.jobs.iter().map(move |j| (f.as_str(), j)))
        .collect();
    // For each result: the plan jobs it can stand for.
    let takers: Vec<Vec<usize>> = all
        .iter()
        .map(|(_, r)| match r.match_by {
            MatchBy::Id => jobs
                .iter()
                .enumerate()
                .filter(|(_, j)| j.id == r.id)
                .map(|(i, _)| i)
                .collect(),
            MatchBy::Attributes => by_attributes(jobs, r),
        })
        .collect();
    let mut found = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.iter().enumerate() {
        let mine: Vec<usize> = (0..all.len()).filter(|&k| takers[k] == [i]).collect();
        let shared: Vec<usize> = (0..all.len())
            .filter(|&k| takers[k].len() > 1 && takers[k].contains(&i))
            .collect();
        found.push(match mine.as_slice() {
            [k] => {
                let (f, r) = all[*k];
                match (r.match_by == MatchBy::Id)
                    .then(|| mismatch(job, r, backend))
                    .flatten()
                {
                    Some(why) => Found::None(format!(
                        "{} in {f} was measured with other parameters than this plan's job: {why}; run it again, or grade it with the plan that made it",
                        source_name(r)
                    )),
                    None => Found::One(f.to_string(), Box::new(r.clone())),
                }
            }
            [] if !shared.is_empty() => {
                let (f, r) = all[shared[0]];
                let others: Vec<&str> = takers[shared[0]]
                    .iter()
                    .map(|&t| jobs[t].id.as_str())
                    .collect();
                Found::None(format!(
                    "{} in {f} matches {} plan jobs ({}); label it with `baton ingest --job {}`",
                    source_name(r),
                    others.len(),
                    others.join(", "),
                    job.id
                ))
            }
            [] => Found::None(not_run(job, files).unwrap_or_else(|| missing(job, &all))),
            many => Found::None(format!(
                "{} results match this job ({}); keep one, or label each log with `baton ingest --job`",
                many.len(),
                many.iter()
                    .map(|&k| format!("{} in {}", source_name(all[k].1), all[k].0))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        });
    }
    let unmatched = all
        .iter()
        .zip(&takers)
        .filter(|(_, t)| t.is_empty())
        .map(|((f, r), _)| match r.match_by {
            MatchBy::Id => format!(
                "{f}: job `{}` is not a job of this plan{}",
                r.id,
                nearest_id(jobs, &r.id)
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default()
            ),
            MatchBy::Attributes => format!(
                "{f}: {} ({} on {} rank(s)) matches no plan job",
                source_name(r),
                describe_result(r),
                r.layout.nranks
            ),
        })
        .collect();
    (found, unmatched)
}

/// How a result labelled with `job`'s ID differs from it, if it does.
fn mismatch(job: &Job, r: &JobResult, backend: Backend) -> Option<String> {
    let mut d = Vec::new();
    let diff = |d: &mut Vec<String>, what: &str, have: String, want: String| {
        if have != want {
            d.push(format!("{what} {have} (plan: {want})"));
        }
    };
    diff(
        &mut d,
        "collective",
        r.collective.to_string(),
        job.collective.to_string(),
    );
    diff(&mut d, "dtype", r.dtype.to_string(), job.dtype.to_string());
    if let Some(op) = job.op {
        diff(
            &mut d,
            "op",
            r.op.map_or("none".into(), |o| o.to_string()),
            op.to_string(),
        );
    }
    if let Some(root) = job.root {
        diff(
            &mut d,
            "root",
            r.root.map_or("none".into(), |x| x.to_string()),
            root.to_string(),
        );
    }
    if let Some(n) = job.ranks {
        diff(&mut d, "ranks", r.layout.nranks.to_string(), n.to_string());
    }
    if !split_fits(job.split.as_ref().map(|s| &s.split), r) {
        d.push(format!(
            "split groups {} (plan: {})",
            r.groups.len(),
            job.split_text().unwrap_or("none")
        ));
    }
    // Results of `baton run` state everything they measured; an ingested log, only the above.
    if let Some(identity) = &r.identity {
        diff(
            &mut d,
            "backend",
            format!("{:?}", r.backend),
            format!("{backend:?}"),
        );
        let (have, want) = (&r.settings, &JobSettings::from(&job.settings));
        for (what, h, w) in [
            ("iters", have.iters, want.iters),
            ("warmup", have.warmup, want.warmup),
            ("agg_iters", have.agg_iters, want.agg_iters),
            ("cuda_graph", have.cuda_graph, want.cuda_graph),
        ] {
            diff(&mut d, what, h.to_string(), w.to_string());
        }
        if have.check != want.check
            || have.average != want.average
            || have.in_place != want.in_place
        {
            d.push("check/average/in_place settings".into());
        }
        // Results hold secrets redacted (`crate::secrets`): compare the plan's env as recorded.
        let mut want_env = job.env.clone();
        crate::secrets::redact(&mut want_env);
        if r.env != want_env {
            d.push("env".into());
        }
        if d.is_empty() && *identity != crate::expand::job_identity(job, backend) {
            d.push("sizes or repeats".into());
        }
    }
    (!d.is_empty()).then(|| d.join(", "))
}

/// The plan job ID closest to a mistyped one, when one is close.
fn nearest_id<'a>(jobs: &'a [Job], id: &str) -> Option<&'a str> {
    jobs.iter()
        .map(|j| (strsim::levenshtein(&j.id, id), j.id.as_str()))
        .filter(|(d, _)| *d <= 3.max(id.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, j)| j)
}

fn source_name(r: &JobResult) -> String {
    if r.sources.is_empty() {
        format!("job `{}`", r.id)
    } else {
        r.sources.join(", ")
    }
}

/// Why a job of a test over node sets has no results when none of its sets ran: the runner
/// records such a set with why (`not run: node02 was proven dead earlier`), and that is the
/// reason, not a missing log.
fn not_run(job: &Job, files: &[(String, &Results)]) -> Option<String> {
    let sets: Vec<String> = files
        .iter()
        .flat_map(|(_, r)| &r.node_sets)
        .filter(|s| s.test == job.test)
        .filter_map(|s| {
            let why = s.ended.as_deref().filter(|e| e.starts_with("not run"))?;
            Some(format!(
                "{why} (set {}, round {})",
                crate::nodeset::compress(&s.hosts),
                s.round
            ))
        })
        .collect();
    match sets.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        [first, rest @ ..] => Some(format!("{first}, and {} more set(s) not run", rest.len())),
    }
}

/// Why nothing matched: what was looked for, and the nearest result by collective.
fn missing(job: &Job, all: &[(&str, &JobResult)]) -> String {
    let ranks = job
        .ranks
        .map_or(String::new(), |n| format!(" on {n} rank(s)"));
    let mut m = format!(
        "no results for this job (looked for ID `{}`, or an unlabelled {}{ranks} log)",
        job.id,
        describe(job)
    );
    if let Some((f, r)) = all
        .iter()
        .find(|(_, r)| r.collective == job.collective && r.match_by == MatchBy::Attributes)
    {
        m.push_str(&format!(
            "; nearest: {} in {f} is {} on {} rank(s)",
            source_name(r),
            describe_result(r),
            r.layout.nranks
        ));
    }
    m
}

/// Plan jobs an unlabelled result can stand for; the job environment breaks ties where the log
/// states variables (JSON `env`, NCCL's "set by environment" lines).
fn by_attributes(jobs: &[Job], r: &JobResult) -> Vec<usize> {
    let fits: Vec<usize> = jobs
        .iter()
        .enumerate()
        .filter(|(_, j)| attributes_fit(j, r))
        .map(|(i, _)| i)
        .collect();
    let fits = by_sizes(jobs, r, fits);
    if fits.len() <= 1 || r.env.is_empty() {
        return fits;
    }
    let agree: Vec<usize> = fits
        .iter()
        .copied()
        .filter(|&i| {
            jobs[i]
                .env
                .iter()
                // A results file holds a secret's value redacted: compare it redacted.
                .all(|(k, v)| {
                    r.env
                        .get(k)
                        .is_none_or(|rv| rv == crate::secrets::value(k, v))
                })
        })
        .collect();
    if agree.is_empty() { fits } else { agree }
}

/// Of several fitting jobs, those whose requested sizes the log measured: every one of them if
/// any job is covered so, else any of them. Two tests of one collective (a latency sweep of
/// small sizes, a bandwidth sweep of large ones) then each take their own log. When sizes tell
/// nothing apart, the jobs stay as they were (and the ambiguity is reported).
fn by_sizes(jobs: &[Job], r: &JobResult, fits: Vec<usize>) -> Vec<usize> {
    if fits.len() <= 1 {
        return fits;
    }
    let measured: std::collections::HashSet<u64> =
        super::measure::measured_sizes(r).into_iter().collect();
    let narrowed = |pred: &dyn Fn(&Job) -> bool| -> Vec<usize> {
        fits.iter().copied().filter(|&i| pred(&jobs[i])).collect()
    };
    let covered =
        narrowed(&|j| !j.sizes.is_empty() && j.sizes.iter().all(|s| measured.contains(s)));
    if !covered.is_empty() {
        return covered;
    }
    let overlap = narrowed(&|j| j.sizes.iter().any(|s| measured.contains(s)));
    if overlap.is_empty() { fits } else { overlap }
}

fn attributes_fit(j: &Job, r: &JobResult) -> bool {
    j.collective == r.collective
        && j.dtype == r.dtype
        && (j.op.is_none() || j.op == r.op)
        && (j.root.is_none() || j.root == r.root)
        && j.ranks.is_none_or(|n| n == r.layout.nranks)
        && split_fits(j.split.as_ref().map(|s| &s.split), r)
}

/// Whether the result's groups are the plan job's split groups.
fn split_fits(split: Option<&Split>, r: &JobResult) -> bool {
    let n = r.layout.nranks;
    let Some(want) = split else {
        return r.groups.len() <= 1;
    };
    let want = want.groups(n);
    if let Some(Ok(have)) = r.split.as_deref().map(Split::parse) {
        return have.groups(n) == want;
    }
    if r.groups.is_empty() {
        return want.len() <= 1;
    }
    r.groups.len() == want.len()
        && r.groups
            .iter()
            .all(|g| want.values().any(|members| *members == g.members))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expand::expand;
    use crate::ingest::{LogInput, ingest};

    const LOG: &str = include_str!("../../tests/data/nccl-tests/h200x2/all_reduce.txt");

    fn jobs(tests: &str) -> Vec<Job> {
        let yaml = format!(
            "version: 1\nname: t\nbackend: nccl\nlaunch: {{ nodes: 1, ranks_per_node: 2 }}\ntests:\n{tests}"
        );
        let loaded = match crate::plan::parse_str("t.yaml", &yaml) {
            Ok(l) => l,
            Err(r) => panic!("{}", r.short()),
        };
        expand(&loaded.plan).jobs
    }

    /// The fixture log as one results file, named; leaked, as grading borrows what it reads.
    fn results(label: Option<&str>) -> Vec<(String, &'static Results)> {
        let r = ingest(
            &[LogInput {
                name: "ar.txt",
                bytes: LOG.as_bytes(),
            }],
            label,
        )
        .unwrap()
        .results;
        vec![("r.json".into(), Box::leak(Box::new(r)))]
    }

    const AR: &str = "  - name: a\n    collective: all_reduce\n    sizes: [1G]\n";

    #[test]
    fn attributes_pick_the_one_fitting_job() {
        let js = jobs(&format!(
            "{AR}  - name: b\n    collective: all_reduce\n    dtype: half\n    sizes: [1G]\n  - name: c\n    collective: all_gather\n    sizes: [1G]\n"
        ));
        let (found, unused) = assign(&js, &results(None), Backend::Nccl);
        assert!(matches!(&found[0], Found::One(..)));
        assert!(matches!(&found[1], Found::None(m) if m.contains("no results for this job")));
        assert!(matches!(&found[2], Found::None(_)));
        assert!(unused.is_empty());
    }

    #[test]
    fn ambiguity_matches_nothing_and_says_so() {
        let js = jobs(&format!(
            "{AR}  - name: b\n    collective: all_reduce\n    sizes: [1G]\n"
        ));
        let (found, _) = assign(&js, &results(None), Backend::Nccl);
        for f in &found {
            assert!(
                matches!(f, Found::None(m) if m.contains("matches 2 plan jobs (a, b)") && m.contains("--job")),
                "{f:?}"
            );
        }
        // A label settles it.
        let (found, _) = assign(&js, &results(Some("b")), Backend::Nccl);
        assert!(matches!(&found[0], Found::None(_)));
        assert!(matches!(&found[1], Found::One(..)));
    }

    #[test]
    fn sizes_tell_two_tests_of_one_collective_apart() {
        // The log sweeps 8 B..8 GiB: a test asking for 16 GiB cannot be its job.
        let js = jobs(&format!(
            "{AR}  - name: big\n    collective: all_reduce\n    sizes: [16G]\n"
        ));
        let (found, unused) = assign(&js, &results(None), Backend::Nccl);
        assert!(matches!(&found[0], Found::One(..)), "{:?}", found[0]);
        assert!(matches!(&found[1], Found::None(m) if m.contains("no results")));
        assert!(unused.is_empty());
        // Another dtype never takes it, whatever its sizes.
        let js = jobs(&format!(
            "{AR}  - name: h\n    collective: all_reduce\n    dtype: half\n    sizes: [1G]\n"
        ));
        let (found, _) = assign(&js, &results(None), Backend::Nccl);
        assert!(matches!(&found[0], Found::One(..)));
        assert!(matches!(&found[1], Found::None(_)));
    }

    #[test]
    fn rank_count_and_split_must_agree() {
        let four = jobs(AR)
            .into_iter()
            .map(|mut j| {
                j.ranks = Some(4);
                j
            })
            .collect::<Vec<_>>();
        let (found, unused) = assign(&four, &results(None), Backend::Nccl);
        assert!(matches!(&found[0], Found::None(m) if m.contains("nearest: ar.txt")));
        assert_eq!(unused.len(), 1);
        let split = jobs(
            "  - name: s\n    collective: all_reduce\n    split: \"DIV 1\"\n    sizes: [1G]\n",
        );
        let (found, _) = assign(&split, &results(None), Backend::Nccl);
        assert!(
            matches!(&found[0], Found::None(_)),
            "a log with one group is not a DIV 1 split into two"
        );
    }
}
