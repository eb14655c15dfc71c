//! Progress of `baton run` as its workers report it, and the route of their output. Workers are separate processes (one set
//! per environment set, maybe under mpirun), so rank 0 of each appends a line per finished row
//! to a feed file; the parent tails it. Drawing is the CLI's business: it implements
//! [`Progress`]. The workers' own output is always routed through it: with a bar, so table rows
//! and bar never overwrite each other; without one ([`Passthrough`]), so a closed stdout ends only
//! the printing.

use crate::expand::Job;

/// What the run tells whoever draws its progress.
pub trait Progress: Sync {
    /// The run is about to produce about `rows` rows (a `repeat: { for: … }` job may add more).
    fn begin(&self, rows: u64);
    /// `rows` rows are finished in all, the last one of `job`.
    fn update(&self, rows: u64, job: &str);
    /// One line a worker wrote (`stderr`: on its standard error).
    fn line(&self, line: &str, stderr: bool);
    fn end(&self);
    /// How a node-set run goes: rounds, failed sets, the launcher's refusal. Shown by the CLI;
    /// those that draw nothing for it (a plain run's bar) take the default.
    fn node_sets(&self, _event: &super::set_events::SetEvent<'_>) {}
}

/// No bar: workers' lines are passed on as they come. A closed stdout (`| head`) drops the rest
/// quietly; the workers and their launcher never see it.
pub struct Passthrough;

impl Progress for Passthrough {
    fn begin(&self, _: u64) {}
    fn update(&self, _: u64, _: &str) {}
    fn line(&self, line: &str, stderr: bool) {
        if stderr {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "{line}");
        } else {
            let _ = crate::stdout::print(&format!("{line}\n"));
        }
    }
    fn end(&self) {}
}

/// Rows `jobs` produce: sizes × repeats (the least count of a time-bounded repeat).
pub fn rows<'a>(jobs: impl IntoIterator<Item = &'a Job>) -> u64 {
    jobs.into_iter()
        .map(|j| j.sizes.len() as u64 * u64::from(j.repeat.min_count().max(1)))
        .sum()
}
