//! `trend: "<= 5% below the median of the last 10 runs"`: busbw may fall at most that far below
//! the median of the same job's latest earlier runs on the same hosts, read from the history
//! store. A baseline is one run chosen by hand; a trend follows the job's own recent past, so a
//! slow slide that no single night shows still fails once it adds up.
//!
//! Like a regression without a baseline, a trend without history fails closed and says what is
//! missing: no store, an unreadable one, or no earlier run of this job on these hosts.

use super::context::Ctx;
use super::measure::{median, median_busbw, num, pct, size, sizes};
use super::verdict::{Case, CriterionVerdict, Status};
use crate::plan::Criterion;
use crate::results::{Placement, Results};
use crate::units::Trend;

/// Earlier runs' busbw of one job at one size: what the store answers.
pub trait TrendSource {
    /// The busbw of the `last` latest earlier runs of the job with `identity` on `hosts` at
    /// `requested`, newest first, leaving out the run whose content key is `except`.
    fn busbw(
        &self,
        identity: &str,
        hosts: &str,
        requested: u64,
        last: u32,
        except: &str,
    ) -> Result<Vec<f64>, String>;
    /// How messages name the store.
    fn name(&self) -> String;
}

/// The history `trend` criteria are graded against, or why there is none.
pub enum History<'a> {
    None,
    Store(&'a dyn TrendSource),
    Unreadable { name: String, why: String },
}

impl TrendSource for crate::history::Store {
    fn busbw(
        &self,
        identity: &str,
        hosts: &str,
        requested: u64,
        last: u32,
        except: &str,
    ) -> Result<Vec<f64>, String> {
        self.busbw_history(identity, hosts, requested, last, except)
            .map_err(|e| e.to_string())
    }

    fn name(&self) -> String {
        self.path().display().to_string()
    }
}

impl<T: TrendSource> TrendSource for std::sync::Mutex<T> {
    fn busbw(
        &self,
        identity: &str,
        hosts: &str,
        requested: u64,
        last: u32,
        except: &str,
    ) -> Result<Vec<f64>, String> {
        // A poisoned lock only means another grading thread panicked; the store is still whole.
        let s = self.lock().unwrap_or_else(|p| p.into_inner());
        s.busbw(identity, hosts, requested, last, except)
    }

    fn name(&self) -> String {
        let s = self.lock().unwrap_or_else(|p| p.into_inner());
        s.name()
    }
}

/// The placement the history records: out-of-place unless only in-place ran.
fn placement(ctx: &Ctx<'_>) -> Placement {
    if ctx.result.cells().any(|c| c.2 == Placement::OutOfPlace) {
        Placement::OutOfPlace
    } else {
        Placement::InPlace
    }
}

pub fn evaluate(
    ctx: &Ctx<'_>,
    c: &Criterion,
    t: &Trend,
    text: String,
    history: &History<'_>,
    results: Option<&Results>,
) -> CriterionVerdict {
    let fail = |message: String| CriterionVerdict::whole(c, text.clone(), Status::Fail, message);
    let store = match history {
        History::Store(s) => *s,
        History::None => {
            return fail(format!(
                "no history store: pass --history STORE, or set `history:` in the plan ({})",
                ctx.what
            ));
        }
        History::Unreadable { name, why } => {
            return fail(format!("cannot read the history store {name}: {why}"));
        }
    };
    let Some(results) = results else {
        return fail(format!("no results file for {}", ctx.what));
    };
    let except = crate::history::key_of(results);
    let hosts = crate::history::hosts_of(ctx.result, results);
    let identity = crate::history::identity_of(ctx.result);
    let p = placement(ctx);
    // Without `at`, the largest size: what `history show` tracks, and where bandwidth is the
    // fabric's rather than latency's.
    let judged: Vec<u64> = match &c.at {
        Some(_) => sizes(ctx.job, c.at.as_ref()),
        None => crate::grade::measured_sizes(ctx.result)
            .into_iter()
            .rev()
            .find(|&s| median_busbw(ctx.result, s, p).is_some())
            .into_iter()
            .collect(),
    };
    if judged.is_empty() {
        return fail(format!("no busbw measured for {}", ctx.what));
    }
    let mut cases = Vec::new();
    for s in judged {
        let Some(cur) = median_busbw(ctx.result, s, p) else {
            cases.push(Case::at_size(s, Status::Fail, ctx.no_data(s, p)));
            continue;
        };
        let mut past = match store.busbw(&identity, &hosts, s, t.runs, &except) {
            Ok(v) => v,
            Err(why) => return fail(format!("cannot read the history store: {why}")),
        };
        let n = past.len();
        let Some(med) = median(&mut past).filter(|m| *m > 0.0) else {
            cases.push(Case::at_size(
                s,
                Status::Fail,
                format!(
                    "no earlier completed run of {} on {} at {} in {}: add good runs first (baton history add)",
                    ctx.what,
                    if hosts.is_empty() { "these hosts" } else { &hosts },
                    size(s),
                    store.name()
                ),
            ));
            continue;
        };
        let drop = (1.0 - cur / med) * 100.0;
        let line = format!(
            "busbw {} GB/s at {} ({}, {}) vs median {} GB/s of the last {n} run(s): {}",
            num(cur),
            size(s),
            ctx.what,
            p.label(),
            num(med),
            if drop >= 0.0 {
                format!("{} below", pct(drop))
            } else {
                format!("{} above", pct(-drop))
            }
        );
        if t.limit.holds(drop) {
            cases.push(Case::at_size(s, Status::Pass, line));
        } else {
            cases.push(Case::at_size(
                s,
                Status::Fail,
                format!("{line} (allowed {})", t.limit),
            ));
        }
    }
    let n = cases.len();
    CriterionVerdict::from_cases(
        "trend",
        text,
        Some(c.clone()),
        cases,
        format!(
            "busbw within {} of the median of the last {} runs at {n} size(s)",
            t.limit, t.runs
        ),
    )
}
