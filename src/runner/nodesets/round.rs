//! One test's rounds: each round's sets started at once, each ended set probed when it failed,
//! its jobs closed and its end journaled, and the round's progress told as it goes.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{
    Ctx, Schedule, StepEnd, close_jobs, job_statuses, probe, refused_step, run_steps, schedule,
    slug,
};
use crate::expand::Job;
use crate::expand::nodesets::set_job;
use crate::nodeset::hostlist::compress;
use crate::nodeset::isolate::named_in;
use crate::nodeset::{Over, SetResult};
use crate::results::journal::{Journal, Record};
use crate::results::{JobStatus, NodeSetRef, SetRun};
use crate::runner::RunError;
use crate::runner::events::RunEvent;
use crate::runner::interrupt;
use crate::runner::outdir::OutDirError;
use crate::runner::refusal::{self, Refusal};
use crate::runner::set_events::{self, RoundStatus};

/// One set of a round to run: its index, its record, its jobs.
type Planned = (usize, SetRun, Vec<Job>);

/// Where a test's schedule stands, for its progress.
struct Pace<'a> {
    test: &'a str,
    of: Option<u32>,
    started: Instant,
}

impl<'a> Pace<'a> {
    /// A round's status `elapsed` into it, `round` of the schedule.
    fn status(&self, round: u32, sets: usize, elapsed: Duration, ended: bool) -> RoundStatus<'a> {
        let before = self.started.elapsed().saturating_sub(elapsed);
        let eta = if ended {
            set_events::eta(self.started.elapsed(), round, self.of)
        } else {
            set_events::eta(before, round - 1, self.of).map(|e| e.saturating_sub(elapsed))
        };
        RoundStatus {
            test: self.test,
            round,
            of: self.of,
            sets,
            running: 0,
            completed: 0,
            failed: 0,
            skipped: 0,
            passed: None,
            elapsed,
            eta,
        }
    }
}

/// Runs one test's rounds; the launcher's refusal when a step was refused (the run stops).
pub(super) fn run_test(
    ctx: &Ctx<'_>,
    t: usize,
    over: Over,
    tjobs: &[&Job],
    dead: &mut [bool],
    journal: &mut Journal,
    done: &HashSet<String>,
) -> Result<Option<Refusal>, RunError> {
    let test = &tjobs[0].test;
    let mut sched = schedule(over, ctx.nodes)?;
    let pace = Pace {
        test,
        of: match &sched {
            Schedule::Fixed(it) => Some(it.len() as u32),
            Schedule::Adaptive(_) => None,
        },
        started: Instant::now(),
    };
    let dir = format!("sets/{t:02}-{}", slug(test));
    crate::output::ensure_dir_within(&ctx.opts.out_dir, &ctx.opts.out_dir.join(&dir))
        .map_err(OutDirError::from)?;
    let mut round = 0u32;
    while let Some(sets) = sched.next() {
        round += 1;
        if interrupt::requested() {
            return Ok(None);
        }
        let t0 = Instant::now();
        // A set with a node proven dead earlier is not run: the node fails it without a step.
        let mut outcomes: Vec<Option<SetResult>> = sets
            .iter()
            .map(|s| {
                let d: Vec<usize> = s.iter().copied().filter(|&i| dead[i]).collect();
                (!d.is_empty()).then_some(SetResult::Dead(d))
            })
            .collect();
        let runs = planned(ctx, tjobs, &dir, round, &sets, &outcomes);
        record_skipped(ctx, test, round, &sets, &outcomes, journal)?;
        // Sets whose jobs a resumed run completed already are judged from those results.
        let todo: Vec<&Planned> = runs
            .iter()
            .filter(|(_, _, sj)| !sj.iter().all(|j| done.contains(&j.id)))
            .collect();
        for (_, run, _) in &todo {
            Journal::create(&ctx.opts.out_dir.join(&run.journal), &ctx.base)?;
            journal.append(&Record::SetStarted {
                set: Box::new(run.clone()),
            })?;
        }
        let mut status = pace.status(round, sets.len(), Duration::ZERO, false);
        status.skipped = outcomes.iter().filter(|o| o.is_some()).count();
        status.completed = runs.len() - todo.len();
        let ends = run_watched(ctx, &todo, &pace, &status, t0);
        status.running = 0;
        let mut refused: Option<Refusal> = None;
        for ((k, run, sjobs), end) in todo.iter().zip(&ends) {
            let closed = close_set(ctx, run, sjobs, end, journal)?;
            for h in &closed.dead {
                if let Some(i) = ctx.nodes.hosts.iter().position(|x| x == h) {
                    dead[i] = true;
                }
            }
            if !closed.dead.is_empty() {
                let idx: Vec<usize> = closed
                    .dead
                    .iter()
                    .filter_map(|h| ctx.nodes.hosts.iter().position(|x| x == h))
                    .collect();
                outcomes[*k] = Some(SetResult::Dead(idx));
            }
            if closed.failed {
                status.failed += 1;
            } else {
                status.completed += 1;
            }
            if refused.is_none() {
                refused = closed.refusal;
            }
        }
        if interrupt::requested() {
            return Ok(None);
        }
        if refused.is_some() {
            return Ok(refused);
        }
        if let Schedule::Adaptive(iso) = &mut sched {
            let (all, named) = judged(ctx, &sets, &outcomes, &runs)?;
            status.passed = Some(all.iter().filter(|o| **o == SetResult::Pass).count());
            iso.record_named(&all, &named)
                .map_err(|e| RunError::Unavailable(format!("isolate: {e}")))?;
        }
        let end = pace.status(round, sets.len(), t0.elapsed(), true);
        ctx.events.event(&RunEvent::RoundEnd(RoundStatus {
            eta: end.eta,
            elapsed: end.elapsed,
            ..status
        }));
    }
    Ok(None)
}

/// The sets of a round that run (those without a node proven dead), each with its jobs.
fn planned(
    ctx: &Ctx<'_>,
    tjobs: &[&Job],
    dir: &str,
    round: u32,
    sets: &[Vec<usize>],
    outcomes: &[Option<SetResult>],
) -> Vec<Planned> {
    let hosts = &ctx.nodes.hosts;
    let test = &tjobs[0].test;
    let mut runs = Vec::new();
    for (k, s) in sets.iter().enumerate() {
        if outcomes[k].is_some() {
            continue;
        }
        let set_hosts: Vec<String> = s.iter().map(|&i| hosts[i].clone()).collect();
        let sjobs: Vec<Job> = tjobs
            .iter()
            .map(|j| {
                let r = NodeSetRef {
                    job: j.id.clone(),
                    round,
                    index: k as u32,
                    hosts: set_hosts.clone(),
                };
                set_job(j, r, Some(ctx.per_node))
            })
            .collect();
        let mut run = blank_set(test, round, k, set_hosts);
        run.journal = format!("{dir}/r{round:03}-{k:03}.jsonl");
        run.log = format!("{dir}/r{round:03}-{k:03}.log");
        runs.push((k, run, sjobs));
    }
    runs
}

fn blank_set(test: &str, round: u32, k: usize, hosts: Vec<String>) -> SetRun {
    SetRun {
        test: test.to_string(),
        round,
        index: k as u32,
        hosts,
        journal: String::new(),
        log: String::new(),
        ended: None,
        dead: Vec::new(),
        seconds: None,
        refused: None,
        launcher: None,
    }
}

/// Sets not run for a dead node are recorded too, so every round reads whole.
fn record_skipped(
    ctx: &Ctx<'_>,
    test: &str,
    round: u32,
    sets: &[Vec<usize>],
    outcomes: &[Option<SetResult>],
    journal: &mut Journal,
) -> Result<(), RunError> {
    let hosts = &ctx.nodes.hosts;
    for (k, o) in outcomes.iter().enumerate() {
        let Some(SetResult::Dead(d)) = o else {
            continue;
        };
        let names: Vec<String> = d.iter().map(|&i| hosts[i].clone()).collect();
        let set_hosts: Vec<String> = sets[k].iter().map(|&i| hosts[i].clone()).collect();
        journal.append(&Record::SetStarted {
            set: Box::new(blank_set(test, round, k, set_hosts)),
        })?;
        journal.append(&Record::SetEnded {
            test: test.to_string(),
            round,
            index: k as u32,
            ended: format!("not run: {} was proven dead earlier", compress(&names)),
            dead: names,
            seconds: 0.0,
            refused: None,
            launcher: None,
        })?;
    }
    Ok(())
}

/// Runs the steps of `todo`, telling the round's progress as each ends.
fn run_watched(
    ctx: &Ctx<'_>,
    todo: &[&Planned],
    pace: &Pace<'_>,
    status: &RoundStatus<'_>,
    t0: Instant,
) -> Vec<StepEnd> {
    let counts = Mutex::new((0usize, 0usize));
    let tell = |ended_ok: usize, ended_bad: usize| {
        let now = pace.status(status.round, status.sets, t0.elapsed(), false);
        ctx.events.event(&RunEvent::Round(RoundStatus {
            running: todo.len() - ended_ok - ended_bad,
            completed: status.completed + ended_ok,
            failed: ended_bad,
            elapsed: now.elapsed,
            eta: now.eta,
            ..status.clone()
        }));
    };
    tell(0, 0);
    let on_end = |ok: bool| {
        let mut c = counts.lock().unwrap_or_else(|e| e.into_inner());
        if ok {
            c.0 += 1;
        } else {
            c.1 += 1;
        }
        tell(c.0, c.1);
    };
    run_steps(ctx, todo, &on_end)
}

/// How a set's step came out, once its nodes were probed and its jobs closed.
struct Closed {
    failed: bool,
    dead: Vec<String>,
    refusal: Option<Refusal>,
}

/// After a set's step: judged by what its journal recorded, its nodes probed when it failed,
/// the launcher's refusal or words about a node read from its output, its jobs closed, its
/// end journaled and a failure told in full.
fn close_set(
    ctx: &Ctx<'_>,
    run: &SetRun,
    sjobs: &[Job],
    end: &StepEnd,
    journal: &mut Journal,
) -> Result<Closed, RunError> {
    let set_journal = ctx.opts.out_dir.join(&run.journal);
    let (records, _) = crate::results::journal::records(&set_journal, 0)?;
    let heard = super::super::nccl_lines::from_log(&ctx.opts.out_dir.join(&run.log));
    super::super::nccl_lines::record(
        &mut Journal::open(&set_journal)?,
        &records,
        heard,
        &run.hosts,
    )?;
    let statuses = job_statuses(&set_journal)?;
    // A launcher may exit 0 although a node died under it: judge by what was recorded.
    let unfinished = sjobs
        .iter()
        .filter(|j| statuses.get(&j.id) != Some(&JobStatus::Completed))
        .count();
    let mut end = end.clone();
    // Which rank's exit status the launcher passes on is a race (rank 0's watchdog exits 4, a
    // peer killed after it may be first): a job the journal ended by timeout says what hung.
    if !end.ok && !end.timed_out && statuses.values().any(|s| *s == JobStatus::Timeout) {
        end.ended = "a collective timed out".into();
        end.timed_out = true;
    }
    if end.ok && unfinished > 0 {
        end.ended = format!("{}, but {unfinished} job(s) did not finish", end.ended);
    }
    let failed = !(end.ok && unfinished == 0);
    let mut set_dead = Vec::new();
    let mut refusal = None;
    let mut launcher = None;
    if failed && !interrupt::requested() {
        let pending = super::after::pending(ctx, run);
        set_dead = probe(ctx, &run.hosts, pending.as_ref());
        // A signal during the probe stops it too: a probe cut short proves nothing.
        if interrupt::requested() {
            set_dead.clear();
        } else if let Some(p) = pending {
            p.record(&ctx.opts.out_dir, run, &set_dead)?;
        }
        let tail = super::log_tail(ctx, run);
        // Every node answered: the launcher's own refusal, if it printed one.
        if set_dead.is_empty() {
            refusal = refused_step(ctx, &tail);
        }
        if refusal.is_none() {
            launcher = refusal::node_fault(&tail);
        }
    }
    let why = Why {
        dead: &set_dead,
        refused: refusal.as_ref(),
        launcher: launcher.as_deref(),
    };
    close_jobs(ctx, run, sjobs, &end, &why, &statuses)?;
    journal.append(&Record::SetEnded {
        test: run.test.clone(),
        round: run.round,
        index: run.index,
        ended: end.ended.clone(),
        dead: set_dead.clone(),
        seconds: end.seconds,
        refused: refusal.as_ref().map(|r| r.message.clone()),
        launcher: launcher.clone(),
    })?;
    if failed && refusal.is_none() {
        ctx.events.event(&RunEvent::SetFailed {
            test: &run.test,
            round: run.round,
            hosts: &run.hosts,
            ended: &end.ended,
            seconds: end.seconds,
            dead: &set_dead,
            launcher: launcher.as_deref(),
            log: &run.log,
        });
    }
    Ok(Closed {
        failed,
        dead: set_dead,
        refusal,
    })
}

/// Why a set's jobs ended unfinished, beyond how its step ended.
pub(super) struct Why<'a> {
    pub dead: &'a [String],
    pub refused: Option<&'a Refusal>,
    pub launcher: Option<&'a str>,
}

/// `isolate`'s verdict on each set of a round (dead sets as they are, the rest graded), and the
/// nodes the failing sets' records name (NCCL's RAS at a hang). Both are read from the results,
/// as `grade` reads them when it replays the rounds.
fn judged(
    ctx: &Ctx<'_>,
    sets: &[Vec<usize>],
    outcomes: &[Option<SetResult>],
    runs: &[Planned],
) -> Result<(Vec<SetResult>, Vec<usize>), RunError> {
    let results = ctx.out.fold()?.results;
    let mut named = Vec::new();
    let all = outcomes
        .iter()
        .enumerate()
        .map(|(k, o)| match o {
            Some(o) => o.clone(),
            None => {
                let ids: Vec<String> = runs
                    .iter()
                    .filter(|(rk, _, _)| *rk == k)
                    .flat_map(|(_, _, sj)| sj.iter().map(|j| j.id.clone()))
                    .collect();
                if (ctx.judge)(&results, &ids) {
                    return SetResult::Pass;
                }
                let hosts: Vec<&str> = ids
                    .iter()
                    .filter_map(|id| results.job(id))
                    .flat_map(|j| j.ras_named())
                    .collect();
                named.extend(named_in(&ctx.nodes.hosts, &sets[k], &hosts));
                SetResult::Fail
            }
        })
        .collect();
    Ok((all, named))
}
