//! What every criterion of one job reads: the plan job, its matched results, the baseline (or why
//! there is none), and the wording shared by their messages.

use super::diagnosis::{self, Diagnosis};
use super::evidence;
use super::measure::{measured_range, measured_sizes, median_busbw, printed_size, size};
use crate::expand::Job;
use crate::plan::{Check, TransportRule};
use crate::results::{Environment, JobResult, Placement};

/// Drop (%) below which sizes count as unchanged for shape diagnosis when the plan sets no
/// regression limit.
const DEFAULT_TOLERANCE: f64 = 5.0;

pub struct Ctx<'a> {
    pub job: &'a Job,
    pub result: &'a JobResult,
    /// `all_reduce float sum`: how messages name the job.
    pub what: String,
    /// The baseline's results for this job, or why there are none.
    pub baseline: Result<&'a JobResult, String>,
    /// The environments of the runs the results and the baseline came from.
    pub env: Option<&'a Environment>,
    pub baseline_env: Option<&'a Environment>,
}

impl Ctx<'_> {
    /// "no data at 8G (…)": the fail-closed message, with what the results do hold.
    pub fn no_data(&self, s: u64, p: Placement) -> String {
        format!(
            "no data at {} ({}, {}): the results hold {}",
            size(s),
            self.what,
            p.label(),
            measured_range(self.result)
        )
    }

    /// The transport this job's plan expects, if it has a transport criterion.
    pub fn expected_transport(&self) -> Option<&TransportRule> {
        self.job.expect.iter().find_map(|c| match &c.check {
            Check::Transport(t) => Some(t),
            _ => None,
        })
    }

    /// Transport classes seen, most links first.
    pub fn transports_seen(r: &JobResult) -> Vec<String> {
        evidence::classes(r)
    }

    /// `; transport SHM, expected P2P`: appended to bandwidth failures when the log says how
    /// NCCL connected, since a wrong transport explains most bandwidth failures.
    pub fn transport_note(&self) -> String {
        let seen = Self::transports_seen(self.result);
        if seen.is_empty() {
            return String::new();
        }
        let mut s = format!("; transport {}", seen.join("+"));
        if let Some(exp) = self.expected_transport()
            && seen.iter().any(|c| !exp.allows_somewhere(c))
        {
            s.push_str(&format!(", expected {exp}"));
        }
        s
    }

    /// The drop limit that counts as real: the job's regression limit, else 5%.
    fn tolerance(&self) -> f64 {
        self.job
            .expect
            .iter()
            .find_map(|c| match &c.check {
                Check::Regression(t) => Some(t.value),
                _ => None,
            })
            .unwrap_or(DEFAULT_TOLERANCE)
    }

    /// Drop (%) against the baseline at every size both hold, ascending; sizes that move no
    /// bytes are left out (no bandwidth to compare).
    pub fn drops(&self, base: &JobResult, p: Placement) -> Vec<(u64, f64)> {
        measured_sizes(self.result)
            .into_iter()
            .filter(|&s| printed_size(self.result, s).is_some_and(|b| b > 0))
            .filter_map(|s| {
                let cur = median_busbw(self.result, s, p)?;
                let old = median_busbw(base, s, p).filter(|b| *b > 0.0)?;
                Some((s, (1.0 - cur / old) * 100.0))
            })
            .collect()
    }

    /// The shape of the drop against the baseline across all sizes, with a transport change
    /// named when the baseline connected differently.
    pub fn shape_against_baseline(&self, places: &[Placement]) -> Option<Diagnosis> {
        let base = self.baseline.as_ref().ok()?;
        let p = *places.first()?;
        let d = super::hints::drop_shape(
            self.result.backend,
            diagnosis::classify(&self.drops(base, p), self.tolerance())?,
        );
        let then = evidence::Side {
            job: base,
            env: self.baseline_env,
        };
        let now = evidence::Side {
            job: self.result,
            env: self.env,
        };
        Some(evidence::explain(
            d,
            evidence::facts(then, now, self.expected_transport()),
        ))
    }
}
