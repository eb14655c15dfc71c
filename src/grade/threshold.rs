//! `busbw`, `algbw` and `time` against a limit, at each requested size the criterion covers and
//! in each placement, every repeat. A size without a measurement fails ("no data at 8G"): a
//! criterion must never pass on data that is not there.

use super::context::Ctx;
use super::diagnosis;
use super::measure::{self, num, placements, samples, size, sizes};
use super::verdict::{Case, CriterionVerdict, Status};
use crate::plan::Criterion;
use crate::results::{Cell, CellStatus, Placement};
use crate::units::{Cmp, Threshold};

/// Which number of a cell a threshold reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Busbw,
    Algbw,
    Time,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Busbw => "busbw",
            Metric::Algbw => "algbw",
            Metric::Time => "time",
        }
    }

    pub fn read(self, c: &Cell) -> Option<f64> {
        match self {
            Metric::Busbw => c.busbw,
            Metric::Algbw => c.algbw,
            Metric::Time => c.time_us,
        }
    }
}

/// The comparison that a failing value shows: `27.6 GB/s < 300 GB/s` for a `>=` limit.
pub fn violated(cmp: Cmp) -> &'static str {
    match cmp {
        Cmp::Ge => "<",
        Cmp::Gt => "<=",
        Cmp::Le => ">",
        Cmp::Lt => ">=",
    }
}

pub fn evaluate(
    ctx: &Ctx<'_>,
    c: &Criterion,
    metric: Metric,
    t: &Threshold,
    text: String,
) -> CriterionVerdict {
    let places = placements(ctx.job, Some(c));
    let unit = t.unit();
    let mut cases = Vec::new();
    for s in sizes(ctx.job, c.at.as_ref()) {
        let mut fails: Vec<String> = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        for &p in &places {
            match worst(ctx, s, p, metric, t) {
                Err(why) => fails.push(why),
                Ok((v, true)) => seen.push(format!("{} {unit} {}", num(v), p.label())),
                Ok((v, false)) => fails.push(format!(
                    "{} {} {unit} {} {} {unit} at {} ({}, {})",
                    metric.name(),
                    num(v),
                    violated(t.cmp),
                    num(t.value),
                    size(s),
                    ctx.what,
                    p.label()
                )),
            }
        }
        let (status, message) = if fails.is_empty() {
            (
                Status::Pass,
                format!("{} {t} at {}: {}", metric.name(), size(s), seen.join(", ")),
            )
        } else {
            (
                Status::Fail,
                format!("{}{}", fails.join("; "), ctx.transport_note()),
            )
        };
        cases.push(Case::at_size(s, status, message));
    }
    let n = cases.len();
    let mut v = CriterionVerdict::from_cases(
        metric.name(),
        text,
        Some(c.clone()),
        cases,
        format!("{} {t} at {n} size(s)", metric.name()),
    );
    if v.status != Status::Pass && metric == Metric::Busbw {
        v.diagnosis = ctx.shape_against_baseline(&places).or_else(|| {
            let p = *places.first()?;
            let curve: Vec<(u64, f64)> = measure::measured_sizes(ctx.result)
                .into_iter()
                .filter_map(|s| Some((s, measure::median_busbw(ctx.result, s, p)?)))
                .collect();
            diagnosis::falls_at_large(&curve)
        });
    }
    v
}

/// The worst repeat's value at a size and whether it holds; `Err` when there is nothing to read.
pub(super) fn worst(
    ctx: &Ctx<'_>,
    s: u64,
    p: Placement,
    metric: Metric,
    t: &Threshold,
) -> Result<(f64, bool), String> {
    let got = samples(ctx.result, s, p);
    if got.is_empty() {
        return Err(ctx.no_data(s, p));
    }
    let mut worst: Option<f64> = None;
    for smp in got {
        if smp.cell.status != CellStatus::Ok {
            return Err(format!(
                "{} at {} ({}, {}, repeat {}): {:?}{}",
                metric.name(),
                size(s),
                ctx.what,
                p.label(),
                smp.repeat,
                smp.cell.status,
                smp.cell
                    .error
                    .as_ref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            ));
        }
        let Some(v) = metric.read(smp.cell) else {
            return Err(format!(
                "no {} at {} ({}, {}): the results do not record it",
                metric.name(),
                size(s),
                ctx.what,
                p.label()
            ));
        };
        if worst.is_none_or(|w| further(t.cmp, v, w)) {
            worst = Some(v);
        }
    }
    let w = worst.ok_or_else(|| ctx.no_data(s, p))?;
    Ok((w, t.holds(w)))
}

/// Whether `v` is further on the failing side of the comparison than `w`.
fn further(cmp: Cmp, v: f64, w: f64) -> bool {
    match cmp {
        Cmp::Ge | Cmp::Gt => v < w,
        Cmp::Le | Cmp::Lt => v > w,
    }
}
