//! Comparisons against a value with a unit: `>= 340 GB/s`, `<= 20 us`, `<= 5%`.
//!
//! Bandwidths are decimal (1 GB/s = 1e9 B/s), exactly as nccl-tests prints them; they never share a
//! parser with sizes, which are binary.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::UnitError;

/// The comparison a threshold applies to a measured value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Cmp {
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = "<")]
    Lt,
}

impl Cmp {
    pub fn holds(self, measured: f64, limit: f64) -> bool {
        match self {
            Cmp::Ge => measured >= limit,
            Cmp::Gt => measured > limit,
            Cmp::Le => measured <= limit,
            Cmp::Lt => measured < limit,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Ge => ">=",
            Cmp::Gt => ">",
            Cmp::Le => "<=",
            Cmp::Lt => "<",
        }
    }

    /// Splits a leading comparator off `text`; `≥`/`≤` are accepted because people paste them.
    pub fn strip(text: &str) -> Option<(Cmp, &str)> {
        let t = text.trim_start();
        for (p, c) in [
            (">=", Cmp::Ge),
            ("≥", Cmp::Ge),
            ("<=", Cmp::Le),
            ("≤", Cmp::Le),
            (">", Cmp::Gt),
            ("<", Cmp::Lt),
        ] {
            if let Some(rest) = t.strip_prefix(p) {
                return Some((c, rest.trim_start()));
            }
        }
        None
    }
}

impl fmt::Display for Cmp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// What a threshold's number measures, fixing its canonical unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// GB/s, decimal.
    Bandwidth,
    /// Microseconds.
    Time,
    /// Percent.
    Percent,
}

/// A comparator and a limit in the quantity's canonical unit (GB/s, µs or %).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Threshold {
    pub cmp: Cmp,
    pub value: f64,
    pub quantity: Quantity,
}

impl Threshold {
    pub fn holds(&self, measured: f64) -> bool {
        self.cmp.holds(measured, self.value)
    }

    pub fn unit(&self) -> &'static str {
        match self.quantity {
            Quantity::Bandwidth => "GB/s",
            Quantity::Time => "us",
            Quantity::Percent => "%",
        }
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.quantity {
            Quantity::Percent => write!(f, "{} {}%", self.cmp, self.value),
            _ => write!(f, "{} {} {}", self.cmp, self.value, self.unit()),
        }
    }
}

fn split_number(t: &str) -> Option<(f64, &str)> {
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(t.len());
    // `e` may only be part of a number when followed by digits; back off otherwise.
    let mut end = end;
    while end > 0 && t[..end].parse::<f64>().is_err() {
        end -= 1;
    }
    if end == 0 {
        return None;
    }
    let v: f64 = t[..end].parse().ok()?;
    Some((v, t[end..].trim()))
}

/// Parses a threshold for `quantity`. The comparator and the unit are both required: a bare
/// `340` could mean GB/s or MB/s and a silent guess would pass or fail the wrong clusters.
pub fn parse_threshold(text: &str, quantity: Quantity) -> Result<Threshold, UnitError> {
    let expected = match quantity {
        Quantity::Bandwidth => "a comparison with a unit, such as `>= 340 GB/s` or `> 900 MB/s`",
        Quantity::Time => "a comparison with a unit, such as `<= 20 us` or `< 1.5 ms`",
        Quantity::Percent => "a comparison with a percent, such as `<= 5%`",
    };
    let Some((cmp, rest)) = Cmp::strip(text) else {
        return Err(UnitError::new(
            format!("`{}` has no comparison (>=, >, <=, <)", text.trim()),
            expected,
        ));
    };
    let Some((num, unit)) = split_number(rest) else {
        return Err(UnitError::new(
            format!("`{}` has no number", text.trim()),
            expected,
        ));
    };
    if !num.is_finite() || num < 0.0 {
        return Err(UnitError::new(
            format!("`{}` must be a finite, non-negative number", text.trim()),
            expected,
        ));
    }
    let scale = match (quantity, unit) {
        (Quantity::Bandwidth, "GB/s") => 1.0,
        (Quantity::Bandwidth, "MB/s") => 1e-3,
        (Quantity::Bandwidth, "TB/s") => 1e3,
        (Quantity::Bandwidth, "KB/s" | "kB/s") => 1e-6,
        (Quantity::Bandwidth, "Gb/s" | "Mb/s" | "Gbit/s" | "Gbps") => {
            return Err(UnitError::new(
                format!("`{unit}` is bits per second"),
                "bytes per second as nccl-tests prints them: GB/s or MB/s (400 Gb/s = 50 GB/s)",
            ));
        }
        (Quantity::Time, "us" | "µs" | "usec") => 1.0,
        (Quantity::Time, "ms") => 1e3,
        (Quantity::Time, "s") => 1e6,
        (Quantity::Time, "ns") => 1e-3,
        (Quantity::Percent, "%") => 1.0,
        (_, "") => {
            return Err(UnitError::new(
                format!("`{}` has no unit", text.trim()),
                expected,
            ));
        }
        (_, u) => {
            return Err(UnitError::new(
                format!("unknown unit `{u}` in `{}`", text.trim()),
                expected,
            ));
        }
    };
    Ok(Threshold {
        cmp,
        value: num * scale,
        quantity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_is_decimal() {
        let t = parse_threshold(">= 340 GB/s", Quantity::Bandwidth).unwrap();
        assert_eq!((t.cmp, t.value), (Cmp::Ge, 340.0));
        let t = parse_threshold("> 900 MB/s", Quantity::Bandwidth).unwrap();
        assert!((t.value - 0.9).abs() < 1e-12);
        let t = parse_threshold("≥ 1.5 TB/s", Quantity::Bandwidth).unwrap();
        assert_eq!(t.value, 1500.0);
        assert!(t.holds(1500.0) && !t.holds(1499.9));
    }

    #[test]
    fn time_and_percent() {
        assert_eq!(
            parse_threshold("<= 20 us", Quantity::Time).unwrap().value,
            20.0
        );
        assert_eq!(
            parse_threshold("< 1.5 ms", Quantity::Time).unwrap().value,
            1500.0
        );
        let p = parse_threshold("<= 5%", Quantity::Percent).unwrap();
        assert_eq!((p.cmp, p.value), (Cmp::Le, 5.0));
        assert!(p.holds(5.0) && !p.holds(5.01));
    }

    #[test]
    fn rejects_missing_units_and_garbage() {
        let e = parse_threshold(">= 340", Quantity::Bandwidth).unwrap_err();
        assert!(e.to_string().contains("no unit"), "{e}");
        let e = parse_threshold("340 GB/s", Quantity::Bandwidth).unwrap_err();
        assert!(e.to_string().contains("no comparison"), "{e}");
        let e = parse_threshold(">= 400 Gb/s", Quantity::Bandwidth).unwrap_err();
        assert!(e.to_string().contains("bits"), "{e}");
        assert!(parse_threshold(">= lots GB/s", Quantity::Bandwidth).is_err());
        assert!(parse_threshold(">= 5 GB/s", Quantity::Time).is_err());
        assert!(parse_threshold("<= 5", Quantity::Percent).is_err());
        assert!(parse_threshold(">= -3 GB/s", Quantity::Bandwidth).is_err());
    }
}
