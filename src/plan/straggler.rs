//! What a `straggler` criterion asks: `p99 <= 2x median` — no rank (or split group) whose
//! per-iteration statistic exceeds that many times the median of the others'; or
//! `p99 <= 2x fleet median` — no node whose statistic, over the node sets it ran in, exceeds that
//! many times the median of the fleet's nodes (a slow node that passes every other criterion);
//! or `late p99 <= 2x median` — no rank whose time between calls (its lateness: the host time
//! from one iteration's call returning to the next starting) exceeds that many times the others'
//! median and a typical iteration. Iteration times equalise inside one communicator; lateness
//! names the rank the others waited for.

use serde::Serialize;

/// Which per-iteration statistic is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IterStat {
    P50,
    P95,
    P99,
    Max,
}

impl IterStat {
    pub fn name(self) -> &'static str {
        match self {
            IterStat::P50 => "p50",
            IterStat::P95 => "p95",
            IterStat::P99 => "p99",
            IterStat::Max => "max",
        }
    }
}

/// `p99 <= 2x median`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Straggler {
    pub stat: IterStat,
    /// Largest allowed multiple of the others' median.
    pub factor: f64,
    /// Nodes against the fleet's median across the test's node sets, not ranks within a job.
    pub fleet: bool,
    /// Ranks' time between calls, not their iteration times.
    pub late: bool,
}

impl std::fmt::Display for Straggler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fleet = if self.fleet { "fleet " } else { "" };
        let late = if self.late { "late " } else { "" };
        write!(
            f,
            "{late}{} <= {}x {fleet}median",
            self.stat.name(),
            self.factor
        )
    }
}

/// Parses `p99 <= 2x median`, `p99 <= 2x fleet median` or `late p99 <= 2x median` (also
/// `p95`, `p50`, `max`; `x` or `×`); the error says what was expected.
pub fn parse(text: &str) -> Result<Straggler, String> {
    const EXPECTED: &str = "expected `p99 <= 2x median`, `p99 <= 2x fleet median` or `late p99 <= 2x median` (p50, p95, p99 or max; a factor above 1)";
    let t = text.trim().to_ascii_lowercase();
    let (late, t) = match t.strip_prefix("late ") {
        Some(r) => (true, r.trim_start()),
        None => (false, t.as_str()),
    };
    let (stat, rest) = t.split_once("<=").ok_or(EXPECTED)?;
    let stat = match stat.trim() {
        "p50" => IterStat::P50,
        "p95" => IterStat::P95,
        "p99" => IterStat::P99,
        "max" => IterStat::Max,
        _ => return Err(EXPECTED.into()),
    };
    let rest = rest
        .trim()
        .strip_suffix("median")
        .ok_or(EXPECTED)?
        .trim_end();
    let (rest, fleet) = match rest.strip_suffix("fleet") {
        Some(r) => (r.trim_end(), true),
        None => (rest, false),
    };
    let factor = rest
        .strip_suffix('x')
        .or_else(|| rest.strip_suffix('×'))
        .ok_or(EXPECTED)?
        .trim()
        .parse::<f64>()
        .map_err(|_| EXPECTED.to_string())?;
    if !(factor.is_finite() && factor > 1.0) {
        return Err(format!(
            "factor {factor} would flag ranks as fast as the rest; {EXPECTED}"
        ));
    }
    if late && fleet {
        return Err(format!(
            "`late` compares the ranks of one job (their time between calls); across node sets a node is compared by its sets' iteration times: `{} <= {factor}x fleet median`",
            stat.name()
        ));
    }
    Ok(Straggler {
        stat,
        factor,
        fleet,
        late,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_written_forms() {
        let s = parse("p99 <= 2x median").unwrap();
        assert_eq!((s.stat, s.factor), (IterStat::P99, 2.0));
        assert_eq!(s.to_string(), "p99 <= 2x median");
        assert_eq!(parse(" MAX <= 1.5 × median").unwrap().stat, IterStat::Max);
        let f = parse("p50 <= 3x fleet median").unwrap();
        assert!(f.fleet && !s.fleet);
        assert_eq!(f.to_string(), "p50 <= 3x fleet median");
        let l = parse("Late max <= 4x median").unwrap();
        assert!(l.late && !l.fleet && !s.late);
        assert_eq!(
            (l.stat, l.to_string().as_str()),
            (IterStat::Max, "late max <= 4x median")
        );
        assert!(
            parse("late p99 <= 2x fleet median")
                .unwrap_err()
                .contains("fleet median")
        );
        for bad in [
            "p99 >= 2x median",
            "p98 <= 2x median",
            "p99 <= 2 median",
            "p99 <= 1x median",
            "p99 <= 2x mean",
            "p99 <= 2x fleet",
            "p99 <= fleet median",
            "late <= 2x median",
            "latep99 <= 2x median",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
