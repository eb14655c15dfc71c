//! `trend: "<= 5% below the median of the last 10 runs"`: how far busbw may fall below what the
//! same job on the same hosts measured lately. Written as a sentence because it is read in a
//! plan review by people who do not know the criterion; `"<= 5%"` alone means the last 10 runs.

use std::fmt;

use serde::Serialize;

use super::{Cmp, Quantity, Threshold, UnitError, parse_threshold};

/// Runs compared with when the plan does not say.
pub const DEFAULT_RUNS: u32 = 10;
/// Most runs a trend may look back over: a median over more says nothing new, and the lookup
/// stays small.
pub const MAX_RUNS: u32 = 1000;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    /// Largest allowed drop below the median, in %.
    pub limit: Threshold,
    /// How many of the latest earlier runs the median is taken over.
    pub runs: u32,
}

impl fmt::Display for Trend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} below the median of the last {} runs",
            self.limit, self.runs
        )
    }
}

const EXPECTED: &str = "\"<= 5% below the median of the last 10 runs\" (or \"<= 5%\": the last 10)";

pub fn parse_trend(text: &str) -> Result<Trend, UnitError> {
    let t = text.trim();
    let Some(pct_end) = t.find('%') else {
        return Err(UnitError::new(
            format!("`{t}` gives no percentage"),
            EXPECTED,
        ));
    };
    let limit = parse_threshold(&t[..=pct_end], Quantity::Percent)?;
    if matches!(limit.cmp, Cmp::Ge | Cmp::Gt) {
        return Err(UnitError::new(
            "a trend is a largest allowed drop: use <= or <",
            EXPECTED,
        ));
    }
    let rest: Vec<String> = t[pct_end + 1..]
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let runs = match rest.as_slice() {
        [] => DEFAULT_RUNS,
        [
            "below",
            "the",
            "median",
            "of",
            "the",
            "last",
            n,
            "runs" | "run",
        ] => n
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_RUNS).contains(n))
            .ok_or_else(|| {
                UnitError::new(
                    format!("`{n}` runs: give a whole number from 1 to {MAX_RUNS}"),
                    EXPECTED,
                )
            })?,
        _ => {
            return Err(UnitError::new(
                format!("`{}` does not read as a trend", t),
                EXPECTED,
            ));
        }
    };
    Ok(Trend { limit, runs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_sentence_and_the_short_form() {
        let t = parse_trend("<= 5% below the median of the last 10 runs").unwrap();
        assert_eq!((t.limit.value, t.runs), (5.0, 10));
        assert_eq!(t.to_string(), "<= 5% below the median of the last 10 runs");
        let t = parse_trend("  < 2.5%   Below the median of the LAST 3 runs ").unwrap();
        assert_eq!((t.limit.value, t.limit.cmp, t.runs), (2.5, Cmp::Lt, 3));
        assert_eq!(parse_trend("<= 5%").unwrap().runs, DEFAULT_RUNS);
        for bad in [
            "5",
            ">= 5%",
            "<= 5% below the median of the last 0 runs",
            "<= 5% below the median of the last ten runs",
            "<= 5% above the mean",
            "<= 5 GB/s",
        ] {
            assert!(parse_trend(bad).is_err(), "{bad}");
        }
    }
}
