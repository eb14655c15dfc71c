//! NCCL version ranges that profile rows are keyed by (`nccl: ">=2.28, <2.29"`): a figure
//! measured with one NCCL is not a figure for another (NCCL 2.28 halved Blackwell's default
//! CTAs), so a row says which releases it holds for, parsed once here.

use std::cmp::Ordering;
use std::fmt;

use crate::units::Cmp;

/// An NCCL release, `2.30.7`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct NcclVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl NcclVersion {
    /// `2.30.7` (a suffix such as `+cuda12.9` or `-1` is ignored); `None` when it is not one.
    pub fn parse(text: &str) -> Option<NcclVersion> {
        let core = text.trim().split(['+', '-']).next().unwrap_or("");
        let parts = version_parts(core)?;
        Some(NcclVersion {
            major: parts[0],
            minor: *parts.get(1)?,
            patch: parts.get(2).copied().unwrap_or(0),
        })
    }
}

impl fmt::Display for NcclVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// One bound of a range: `>= 2.28` (a version written with two parts means `.0` in a
/// comparison, the whole series in `= 2.28` or a bare `2.28`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Bound {
    Cmp(Cmp, NcclVersion),
    /// `2.28` or `= 2.28`: every `2.28.x`; `2.28.3`: that release only.
    Is {
        v: NcclVersion,
        series: bool,
    },
}

impl Bound {
    fn holds(&self, v: NcclVersion) -> bool {
        match *self {
            Bound::Cmp(cmp, b) => {
                let o = v.cmp(&b);
                match cmp {
                    Cmp::Ge => o != Ordering::Less,
                    Cmp::Gt => o == Ordering::Greater,
                    Cmp::Le => o != Ordering::Greater,
                    Cmp::Lt => o == Ordering::Less,
                }
            }
            Bound::Is { v: b, series } => {
                (v.major, v.minor) == (b.major, b.minor) && (series || v.patch == b.patch)
            }
        }
    }
}

/// Every bound of a range holds (`>=2.28, <2.29`).
#[derive(Debug, Clone, PartialEq)]
pub struct NcclRange {
    bounds: Vec<Bound>,
    /// As written, spaces normalised, for messages.
    text: String,
}

/// Why a range does not parse: which comma-separated part (1-based) and what is wrong. The
/// text itself is never quoted (profile files are placed, not quoted).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("part {part} {why} (a range is bounds joined by commas: `>=2.28, <2.29`, `2.28`, `<2.28`)")]
pub struct RangeError {
    pub part: usize,
    pub why: &'static str,
}

impl NcclRange {
    pub fn parse(text: &str) -> Result<NcclRange, RangeError> {
        let mut bounds = Vec::new();
        let mut shown = Vec::new();
        for (i, raw) in text.split(',').enumerate() {
            let part = i + 1;
            let err = |why| RangeError { part, why };
            let s = raw.trim();
            if s.is_empty() {
                return Err(err("is empty"));
            }
            let (op, rest) = split_op(s);
            let rest = rest.trim_start();
            let nums = version_parts(rest).ok_or(err("is not a version like 2.28 or 2.28.3"))?;
            if nums.len() < 2 {
                return Err(err("names a major version only (write 2.28, not 2)"));
            }
            let v = NcclVersion {
                major: nums[0],
                minor: nums[1],
                patch: nums.get(2).copied().unwrap_or(0),
            };
            let series = nums.len() == 2;
            bounds.push(match op {
                None | Some("=") | Some("==") => Bound::Is { v, series },
                Some(op) => Bound::Cmp(cmp_of(op), v),
            });
            shown.push(format!("{}{rest}", op.filter(|o| *o != "==").unwrap_or("")));
        }
        Ok(NcclRange {
            bounds,
            text: shown.join(", "),
        })
    }

    pub fn contains(&self, v: NcclVersion) -> bool {
        self.bounds.iter().all(|b| b.holds(v))
    }
}

impl fmt::Display for NcclRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `2.28.3` → [2, 28, 3]; one to three dot-separated numbers.
fn version_parts(s: &str) -> Option<Vec<u32>> {
    let nums: Option<Vec<u32>> = s
        .split('.')
        .map(|p| {
            (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse().ok())
                .flatten()
        })
        .collect();
    nums.filter(|n| (1..=3).contains(&n.len()))
}

fn split_op(s: &str) -> (Option<&str>, &str) {
    for op in [">=", "<=", "==", ">", "<", "="] {
        if let Some(rest) = s.strip_prefix(op) {
            return (Some(op), rest);
        }
    }
    (None, s)
}

fn cmp_of(op: &str) -> Cmp {
    match op {
        ">=" => Cmp::Ge,
        ">" => Cmp::Gt,
        "<=" => Cmp::Le,
        _ => Cmp::Lt,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> NcclVersion {
        NcclVersion::parse(s).unwrap()
    }

    #[test]
    fn ranges_hold_the_releases_they_name() {
        let r = NcclRange::parse(">=2.28, <2.29").unwrap();
        assert!(r.contains(v("2.28.0")) && r.contains(v("2.28.9")));
        assert!(!r.contains(v("2.27.7")) && !r.contains(v("2.29.0")));
        assert_eq!(r.to_string(), ">=2.28, <2.29");
        let series = NcclRange::parse("2.28").unwrap();
        assert!(series.contains(v("2.28.3")) && !series.contains(v("2.29.1")));
        let exact = NcclRange::parse("= 2.28.3").unwrap();
        assert!(exact.contains(v("2.28.3")) && !exact.contains(v("2.28.4")));
        let below = NcclRange::parse("<2.28").unwrap();
        assert!(below.contains(v("2.27.7")) && !below.contains(v("2.28.0")));
        assert!(NcclRange::parse(">2.27.7").unwrap().contains(v("2.27.8")));
        assert_eq!(v("2.30.7+cuda12.9"), v("2.30.7"));
        assert_eq!(v("2.28"), v("2.28.0"));
        assert_eq!(NcclVersion::parse("two"), None);
    }

    #[test]
    fn a_bad_range_names_the_part_and_why() {
        for (text, part, why) in [
            (">=2.28,", 2, "is empty"),
            ("2", 1, "names a major version only"),
            (">=2.28, <two", 2, "is not a version"),
            ("~2.28", 1, "is not a version"),
            ("2.28.3.1", 1, "is not a version"),
        ] {
            let e = NcclRange::parse(text).unwrap_err();
            assert_eq!(e.part, part, "{text}");
            assert!(e.to_string().contains(why), "{text}: {e}");
        }
    }
}
