//! Where a node-set run's rounds stand, as [`RunEvent::Round`](super::events::RunEvent::Round)
//! tells it: sets running, completed and failed, elapsed time and the ETA at the pace so far.

use std::time::Duration;

/// Where one round of a test stands.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundStatus<'a> {
    pub test: &'a str,
    pub round: u32,
    /// Rounds of the test's schedule; `None` for `isolate`, which picks each from the last.
    pub of: Option<u32>,
    /// Sets of the round.
    pub sets: usize,
    /// Steps still running.
    pub running: usize,
    /// Steps that ended with every job complete.
    pub completed: usize,
    /// Steps that failed, hung, lost a node or were refused.
    pub failed: usize,
    /// Sets not run because a node of theirs was proven dead earlier.
    pub skipped: usize,
    /// `isolate` only: how many of the round's sets met the test's criteria.
    pub passed: Option<usize>,
    /// Since the round started.
    pub elapsed: Duration,
    /// The rest of the test's schedule at the pace of its rounds so far.
    pub eta: Option<Duration>,
}

fn secs(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{:.1} s", d.as_secs_f64()),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

impl RoundStatus<'_> {
    /// "pairs: round 3 of 7, 2 sets running, 2 completed, ETA 40 s".
    pub fn line(&self, ended: bool) -> String {
        let of = self.of.map_or(String::new(), |n| format!(" of {n}"));
        let mut parts = Vec::new();
        if !ended && self.running > 0 {
            parts.push(format!("{} set(s) running", self.running));
        }
        match self.passed {
            Some(p) if ended => parts.push(format!("{p} of {} set(s) passed", self.sets)),
            _ => parts.push(format!("{} set(s) completed", self.completed)),
        }
        if self.failed > 0 {
            parts.push(format!("{} failed", self.failed));
        }
        if self.skipped > 0 {
            parts.push(format!("{} not run (dead node)", self.skipped));
        }
        let mut s = format!(
            "{}: round {}{of}: {} ({})",
            self.test,
            self.round,
            parts.join(", "),
            secs(self.elapsed)
        );
        if let Some(eta) = self.eta.filter(|_| self.of != Some(self.round) || !ended) {
            s.push_str(&format!(", ETA {}", secs(eta)));
        }
        s
    }
}

/// The rest of a schedule of `of` rounds after `done` of them took `spent`.
pub fn eta(spent: Duration, done: u32, of: Option<u32>) -> Option<Duration> {
    let of = of?;
    if done == 0 || of <= done {
        return (of <= done).then_some(Duration::ZERO);
    }
    Some(spent / done * (of - done))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(running: usize, completed: usize, failed: usize) -> RoundStatus<'static> {
        RoundStatus {
            test: "pairs",
            round: 3,
            of: Some(7),
            sets: 4,
            running,
            completed,
            failed,
            skipped: 0,
            passed: None,
            elapsed: Duration::from_secs(12),
            eta: Some(Duration::from_secs(40)),
        }
    }

    #[test]
    fn rounds_read_as_progress_and_passes_are_counted() {
        assert_eq!(
            status(2, 2, 0).line(false),
            "pairs: round 3 of 7: 2 set(s) running, 2 set(s) completed (12.0 s), ETA 40.0 s"
        );
        assert_eq!(
            status(0, 3, 1).line(true),
            "pairs: round 3 of 7: 3 set(s) completed, 1 failed (12.0 s), ETA 40.0 s"
        );
        let iso = RoundStatus {
            of: None,
            passed: Some(1),
            eta: None,
            ..status(0, 4, 0)
        };
        assert_eq!(
            iso.line(true),
            "pairs: round 3: 1 of 4 set(s) passed (12.0 s)"
        );
    }

    #[test]
    fn eta_is_the_pace_of_the_rounds_so_far() {
        let s = Duration::from_secs(30);
        assert_eq!(eta(s, 3, Some(7)), Some(Duration::from_secs(40)));
        assert_eq!(eta(s, 7, Some(7)), Some(Duration::ZERO));
        assert_eq!(eta(s, 0, Some(7)), None);
        assert_eq!(eta(s, 2, None), None);
    }
}
