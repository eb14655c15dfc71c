//! Grading: a plan's `expect` criteria turned into verdicts over results, whether they came from
//! `baton run` or from ingested nccl-tests logs. Everything fails closed: a job without results,
//! a criterion without data, a regression without a baseline are failures that say what is
//! missing, never passes.
//!
//! Data flows one way: results (+ baseline) → [`grade`] → [`Grade`] → report exporters.

mod cite;
mod compare;
mod context;
mod diagnosis;
mod evidence;
mod fleet_straggler;
mod group_spread;
mod hints;
mod integrity;
mod matching;
mod measure;
mod min_bw;
mod nodesets;
mod profile;
mod regression;
mod relative;
mod reruns;
mod run_info;
mod straggler;
mod threshold;
mod transport;
mod trend;
mod variance;
mod verdict;

pub use compare::{Comparison, JobComparison, SizeComparison, compare};
pub use diagnosis::{Diagnosis, Shape};
pub use measure::{measured_sizes, median as median_of, median_busbw, num, size};
pub use nodesets::{SetVerdict, TestNodes, config_mismatches, rerun_fleet};
pub use regression::explain_host_mismatches;
pub use reruns::Superseded;
pub use run_info::RunInfo;
pub use trend::{History, TrendSource};
pub use verdict::{Case, CriterionVerdict, Grade, JobVerdict, Source, Status};

use crate::expand::{Job, expand, table::criterion_text};
use crate::plan::{Check, Plan, PlanFiles};
use crate::results::{Environment, Results};
use context::Ctx;
use matching::{Found, assign};
use measure::describe;
use threshold::Metric;

/// The baseline grading compares against, or why there is none.
#[derive(Debug, Clone)]
pub enum Baseline {
    None,
    Loaded {
        name: String,
        results: Box<Results>,
    },
    /// Named (by the plan) but unreadable: regression criteria fail with this reason.
    Unreadable {
        name: String,
        why: String,
    },
}

/// What `grade` reads.
pub struct GradeInput<'a> {
    pub plan: &'a Plan,
    pub plan_file: Option<&'a str>,
    /// Results files: (name, contents), borrowed: a node-set run's judge grades the run so far
    /// for each decision, which must not copy it.
    pub results: &'a [(String, &'a Results)],
    pub baseline: &'a Baseline,
    /// Grade only these job IDs (what `run --only` / `--env-set` ran); `None` = every job.
    pub only: Option<&'a [String]>,
    /// The history store `trend` criteria read.
    pub history: &'a History<'a>,
    /// Where the plan's own files (profiles, `relative` results) may be read; `None`: only the
    /// current directory's, as for an untrusted plan.
    pub files: Option<&'a PlanFiles>,
}

/// Grades every job of the plan. Several runs of it (a run and its rerun) are graded run by
/// run and combined, the latest measurement of each job and node taking precedence
/// ([`reruns`]).
pub fn grade(input: &GradeInput<'_>) -> Grade {
    let Some(order) = reruns::in_order(input.results) else {
        return grade_together(input);
    };
    let per_run: Vec<Grade> = order
        .iter()
        .map(|&i| {
            grade_together(&GradeInput {
                results: &input.results[i..=i],
                ..*input
            })
        })
        .collect();
    reruns::combine(per_run, grade_together(input))
}

/// Grades every job of the plan over all of `input.results` at once.
fn grade_together(input: &GradeInput<'_>) -> Grade {
    let mut expansion = expand(input.plan);
    if let Some(only) = input.only {
        expansion.jobs.retain(|j| only.contains(&j.id));
    }
    // A test over node sets is graded set by set: its jobs as each set ran them.
    let plan_jobs = expansion.jobs.clone();
    expansion.jobs = crate::expand::nodesets::jobs_with_sets(
        input.plan,
        expansion.jobs,
        input.results.iter().flat_map(|r| r.1.jobs.iter()),
        input.plan.ranks_per_node(),
    );
    nodesets::keep_unfinished(input.plan, &plan_jobs, &mut expansion.jobs, input.results);
    let (found, unmatched) = assign(&expansion.jobs, input.results, input.plan.backend);
    let here = PlanFiles::in_dir(std::path::Path::new("."), crate::plan::Trust::Data);
    let files = input.files.unwrap_or(&here);
    let others = relative_targets(&expansion.jobs, &found, files);
    let base_found: Vec<Result<Found, String>> = match input.baseline {
        Baseline::Loaded { name, results } => {
            let files = [(name.clone(), &**results)];
            assign(&expansion.jobs, &files, input.plan.backend)
                .0
                .into_iter()
                .map(Ok)
                .collect()
        }
        Baseline::Unreadable { name, why } => expansion
            .jobs
            .iter()
            .map(|_| Err(format!("cannot read the baseline {name}: {why}")))
            .collect(),
        Baseline::None => expansion
            .jobs
            .iter()
            .map(|_| {
                Err("no baseline: set `baseline:` in the plan or pass --baseline FILE".to_string())
            })
            .collect(),
    };
    let env_of = |file: &str| {
        input
            .results
            .iter()
            .find(|r| r.0 == file)
            .map(|r| &r.1.environment)
    };
    let base_env = match input.baseline {
        Baseline::Loaded { results, .. } => Some(&results.environment),
        _ => None,
    };
    let prof = profile::ProfileSource {
        name: input.plan.profile.as_deref(),
        files: Some(files),
    };
    let mut jobs: Vec<JobVerdict> = expansion
        .jobs
        .iter()
        .zip(found)
        .zip(base_found)
        .map(|((job, f), b)| {
            let trend = TrendInput {
                history: input.history,
                results: input.results,
            };
            grade_job(job, f, b, &env_of, base_env, &prof, &others, &trend)
        })
        .collect();
    let fleet = input
        .results
        .iter()
        .find_map(|r| r.1.rerun.as_ref())
        .map_or(&[][..], |r| &r.fleet[..]);
    nodesets::apply_outliers(&expansion.jobs, &mut jobs, fleet);
    let stragglers = fleet_straggler::apply(&expansion.jobs, &mut jobs, fleet);
    nodesets::fail_lone_sets(input.plan, &expansion.jobs, &mut jobs);
    nodesets::explain_unrun(input.plan, &expansion.jobs, &mut jobs, input.results);
    cite::failing(&mut jobs);
    let node_sets = nodesets::attribute_tests(
        input.plan,
        &expansion.jobs,
        &jobs,
        input.results,
        &stragglers,
    );
    let nodes = nodesets::merged(&node_sets).map(|n| nodesets::with_preflight(n, input.results));
    let mut status = worst(jobs.iter().map(|j| j.status));
    // A node left out for its configuration is a failed node, as one that failed a set.
    if !nodesets::config_mismatches(nodes.as_ref()).is_empty() {
        status = Status::Fail;
    }
    Grade {
        plan: input.plan.name.clone(),
        plan_file: input.plan_file.map(str::to_string),
        status,
        jobs,
        unmatched,
        baseline: match input.baseline {
            Baseline::None => None,
            Baseline::Loaded { name, .. } => Some(name.clone()),
            Baseline::Unreadable { name, why } => Some(format!("{name} (unreadable: {why})")),
        },
        environment: merge_environments(input.results.iter().map(|r| &r.1.environment)),
        results_files: input.results.iter().map(|r| r.0.clone()).collect(),
        run: RunInfo::of(input.plan, input.results),
        node_sets,
        nodes,
        superseded: Vec::new(),
        inventory: input
            .results
            .iter()
            .find_map(|r| r.1.preflight.as_ref())
            .map_or_else(Vec::new, |p| p.inventory.clone()),
        facts: preflight_facts(input.results),
    }
}

/// Every fact of the preflight's snapshots, each value with its nodes.
fn preflight_facts(results: &[(String, &Results)]) -> Vec<crate::nodeset::fleet::InventoryRow> {
    let Some(pf) = results.iter().find_map(|r| r.1.preflight.as_ref()) else {
        return Vec::new();
    };
    let facts: Vec<(String, _)> = pf
        .nodes
        .iter()
        .filter_map(|n| {
            Some((
                n.host.clone(),
                crate::probe::inventory::facts(n.snapshot.as_ref()?),
            ))
        })
        .collect();
    crate::nodeset::fleet::every_field(&facts)
}

/// Results of the jobs that `relative` criteria compare with, by job ID (or why there are none).
type Others = std::collections::HashMap<String, Result<relative::Reference, String>>;

fn relative_targets(jobs: &[Job], found: &[Found], files: &PlanFiles) -> Others {
    let mut out = Others::new();
    for c in jobs.iter().flat_map(|j| j.expect.iter()) {
        let Check::Relative(r) = &c.check else {
            continue;
        };
        let key = relative::key(r);
        if out.contains_key(&key) {
            continue;
        }
        if let Some(file) = &r.results {
            out.insert(key, relative::from_file(files, file, &r.to));
            continue;
        }
        let got = match jobs.iter().position(|j| j.id == r.to).map(|i| &found[i]) {
            Some(Found::One(_, res)) => Ok(relative::Reference::Job(Box::new((**res).clone()))),
            Some(Found::None(why)) => Err(why.clone()),
            None => Err("not run (left out by --only?)".to_string()),
        };
        out.insert(key, got);
    }
    out
}

/// Fail beats warn beats pass; a skipped criterion does not colour its job.
fn worst(it: impl Iterator<Item = Status>) -> Status {
    let mut s = Status::Pass;
    for x in it {
        if x == Status::Fail || (x == Status::Warn && s != Status::Fail) {
            s = x;
        }
    }
    s
}

/// What the `trend` criteria of a job read: the store, and the results files (a run's content
/// key leaves it out of its own history).
struct TrendInput<'a> {
    history: &'a History<'a>,
    results: &'a [(String, &'a Results)],
}

// Each argument is a separate input of the verdict (results, baseline, environments, profile,
// the run's other jobs, the history); bundling them would only rename the list.
#[allow(clippy::too_many_arguments)]
fn grade_job<'e>(
    job: &Job,
    found: Found,
    baseline: Result<Found, String>,
    env_of: &dyn Fn(&str) -> Option<&'e crate::results::Environment>,
    base_env: Option<&'e crate::results::Environment>,
    prof: &profile::ProfileSource<'_>,
    others: &Others,
    trend: &TrendInput<'_>,
) -> JobVerdict {
    let what = describe(job);
    let (file, result) = match found {
        Found::One(f, r) => (f, *r),
        Found::None(why) => return unmatched_job(job, what, why),
    };
    let (baseline_src, base) = match baseline {
        Ok(Found::One(f, r)) => (
            Some(Source {
                file: f,
                result: *r,
            }),
            Ok(()),
        ),
        Ok(Found::None(why)) => (
            None,
            Err(format!("the baseline has no results for this job: {why}")),
        ),
        Err(why) => (None, Err(why)),
    };
    let ctx = Ctx {
        job,
        result: &result,
        what: what.clone(),
        baseline: match (&baseline_src, base) {
            (Some(s), _) => Ok(&s.result),
            (None, Err(e)) => Err(e),
            (None, Ok(())) => Err("no baseline".into()),
        },
        env: env_of(&file),
        baseline_env: base_env,
    };
    let mut criteria = vec![integrity::completed(&ctx)];
    let mut picked = None;
    // Corruption anywhere fails the job; an explicit `wrong: 0` that covers every size and
    // placement already says so, a narrower one does not.
    let covered = job
        .expect
        .iter()
        .any(|c| matches!(c.check, Check::Wrong(_)) && c.at.is_none() && c.in_place.is_none());
    if !covered {
        criteria.push(integrity::implicit(&ctx));
    }
    for c in job.expect.iter() {
        let text = criterion_text(c);
        let size_based = !matches!(c.check, Check::Transport(_));
        if size_based && measure::placements(job, Some(c)).is_empty() {
            // The plan checker refuses this; should a results file still get here, fail closed.
            criteria.push(fail_closed(
                c,
                text,
                format!("`in_place` selects a placement {what} does not run"),
            ));
            continue;
        }
        criteria.push(match &c.check {
            Check::Busbw(t) => threshold::evaluate(&ctx, c, Metric::Busbw, t, text),
            Check::Algbw(t) => threshold::evaluate(&ctx, c, Metric::Algbw, t, text),
            Check::Time(t) => threshold::evaluate(&ctx, c, Metric::Time, t, text),
            Check::Wrong(_) => integrity::explicit(&ctx, c, text),
            Check::Transport(t) => transport::evaluate(&ctx, c, t, text),
            Check::Relative(r) => {
                let other = match others.get(&relative::key(r)) {
                    Some(Ok(o)) => Ok(o),
                    Some(Err(why)) => Err(why.clone()),
                    None => Err(format!("{} is not a job of this plan", r.to)),
                };
                relative::evaluate(&ctx, c, r, other, text)
            }
            Check::Profile(t) => {
                let picked = picked.get_or_insert_with(|| prof.pick(&ctx));
                profile::evaluate(&ctx, c, t, picked, text)
            }
            Check::Regression(t) => regression::evaluate(&ctx, c, t, text),
            Check::Variance(t) => variance::evaluate(&ctx, c, t, text),
            Check::GroupSpread(t) => group_spread::evaluate(&ctx, c, t, text),
            Check::Straggler(s) => straggler::evaluate(&ctx, c, s, text),
            Check::NcclTestsMinBw(v) => min_bw::evaluate(&ctx, c, *v, text),
            Check::Trend(t) => {
                let results = trend.results.iter().find(|r| r.0 == file).map(|r| r.1);
                trend::evaluate(&ctx, c, t, text, trend.history, results)
            }
            // Fleet-relative: a job graded on its own ran as one node set, and one set has no
            // fleet to be compared with (a test of several sets is judged across them, in
            // `nodesets`).
            Check::Outlier(_) => CriterionVerdict::whole(
                c,
                text,
                Status::Skipped,
                format!(
                    "{what} ran as a single node set: `outlier` needs at least {} sets of one shape to compare",
                    crate::nodeset::attribution::MIN_PEERS
                ),
            ),
        });
    }
    let status = worst(criteria.iter().map(|c| c.status));
    JobVerdict {
        id: job.id.clone(),
        what,
        status,
        source: Some(Source { file, result }),
        baseline: baseline_src,
        criteria,
    }
}

/// A criterion that cannot be evaluated: one failing case saying why.
fn fail_closed(c: &crate::plan::Criterion, text: String, message: String) -> CriterionVerdict {
    CriterionVerdict::whole(c, text, Status::Fail, message)
}

/// A plan job nothing matched: every check fails, each saying why.
fn unmatched_job(job: &Job, what: String, why: String) -> JobVerdict {
    let fail = |key: &'static str, text: String, criterion| {
        let message = format!("{why} ({what})");
        CriterionVerdict {
            key,
            text,
            criterion,
            status: Status::Fail,
            message: message.clone(),
            diagnosis: None,
            cases: vec![Case::whole(Status::Fail, message)],
        }
    };
    let mut criteria = vec![fail("results", "results present and complete".into(), None)];
    for c in job.expect.iter() {
        criteria.push(fail(c.check.key(), criterion_text(c), Some(c.clone())));
    }
    JobVerdict {
        id: job.id.clone(),
        what,
        status: Status::Fail,
        source: None,
        baseline: None,
        criteria,
    }
}

/// One environment for several results files: hosts and versions from all, variables only
/// where every file agrees (one file's settings are not the run's).
fn merge_environments<'a>(envs: impl Iterator<Item = &'a Environment> + Clone) -> Environment {
    let mut out = Environment {
        variables: crate::results::env::common(envs.clone().map(|e| &e.variables)),
        ..Environment::default()
    };
    for e in envs {
        for h in &e.hosts {
            match out.hosts.iter_mut().find(|x| x.hostname == h.hostname) {
                Some(x) => {
                    for g in &h.gpus {
                        if !x.gpus.iter().any(|y| y.index == g.index) {
                            x.gpus.push(g.clone());
                        }
                    }
                }
                None => out.hosts.push(h.clone()),
            }
        }
        out.driver_version = out.driver_version.take().or(e.driver_version.clone());
        out.cuda_version = out.cuda_version.take().or(e.cuda_version.clone());
        out.nccl_version = out.nccl_version.take().or(e.nccl_version.clone());
        out.mpi_version = out.mpi_version.take().or(e.mpi_version.clone());
        out.topology = out.topology.take().or(e.topology.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::{LogInput, ingest};
    use crate::plan::InPlace;
    use crate::results::JobResult;

    const LOG: &str = include_str!("../../tests/data/nccl-tests/h200x2/all_reduce.txt");

    fn setup(expect: &str) -> (Job, JobResult) {
        let yaml = format!(
            "version: 1\nname: t\nbackend: nccl\nlaunch: {{ nodes: 1, ranks_per_node: 2 }}\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: {{ from: 8, to: 8G, factor: 2 }}\n    expect:\n{expect}"
        );
        let plan = match crate::plan::parse_str("t.yaml", &yaml) {
            Ok(l) => l.plan,
            Err(r) => panic!("{}", r.short()),
        };
        let job = expand(&plan).jobs.remove(0);
        let input = [LogInput {
            name: "ar.txt",
            bytes: LOG.as_bytes(),
        }];
        let result = ingest(&input, Some("a")).unwrap().results.jobs.remove(0);
        (job, result)
    }

    #[test]
    fn a_placement_the_job_did_not_run_fails_closed() {
        let (mut job, result) =
            setup("      - busbw: \">= 1 GB/s\"\n        at: 1G\n        in_place: in\n");
        job.settings.in_place = InPlace::Out;
        let v = grade_job(
            &job,
            Found::One("r.json".into(), Box::new(result)),
            Err("none".into()),
            &|_| None,
            None,
            &profile::ProfileSource::default(),
            &Others::new(),
            &TrendInput {
                history: &History::None,
                results: &[],
            },
        );
        let c = v.criteria.last().unwrap();
        assert_eq!(c.status, Status::Fail, "{c:?}");
        assert!(c.message.contains("does not run"), "{}", c.message);
    }

    #[test]
    fn every_criterion_of_an_unmatched_job_fails() {
        let (job, _) =
            setup("      - busbw: \">= 1 GB/s\"\n        at: 1G\n      - transport: P2P\n");
        let v = grade_job(
            &job,
            Found::None("nothing here".into()),
            Err("none".into()),
            &|_| None,
            None,
            &profile::ProfileSource::default(),
            &Others::new(),
            &TrendInput {
                history: &History::None,
                results: &[],
            },
        );
        assert_eq!(v.status, Status::Fail);
        assert_eq!(v.criteria.len(), 3);
        assert!(
            v.criteria
                .iter()
                .all(|c| c.status == Status::Fail && c.message.starts_with("nothing here"))
        );
    }
}
