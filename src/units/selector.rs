//! `at:` size selectors: which **requested** sizes of a sweep a criterion looks at.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{Cmp, Size, UnitError, parse_size};

/// One size, a comparison (`>= 1G`) or an inclusive range (`1G..4G`), always over requested sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SizeSelector {
    Exactly(u64),
    Compare(Cmp, u64),
    Range(u64, u64),
}

impl SizeSelector {
    pub fn matches(&self, requested: u64) -> bool {
        match *self {
            SizeSelector::Exactly(s) => requested == s,
            SizeSelector::Compare(c, s) => c.holds(requested as f64, s as f64),
            SizeSelector::Range(lo, hi) => (lo..=hi).contains(&requested),
        }
    }
}

impl fmt::Display for SizeSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SizeSelector::Exactly(s) => write!(f, "{}", Size(s)),
            SizeSelector::Compare(c, s) => write!(f, "{c} {}", Size(s)),
            SizeSelector::Range(lo, hi) => write!(f, "{}..{}", Size(lo), Size(hi)),
        }
    }
}

pub fn parse_selector(text: &str) -> Result<SizeSelector, UnitError> {
    if let Some((cmp, rest)) = Cmp::strip(text) {
        return Ok(SizeSelector::Compare(cmp, parse_size(rest)?));
    }
    if let Some((lo, hi)) = text.split_once("..") {
        let (lo, hi) = (parse_size(lo)?, parse_size(hi)?);
        if lo > hi {
            return Err(UnitError::new(
                format!("range `{}` runs backwards", text.trim()),
                "a range low..high such as 1G..4G",
            ));
        }
        return Ok(SizeSelector::Range(lo, hi));
    }
    parse_size(text).map(SizeSelector::Exactly)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(
            parse_selector("8G").unwrap(),
            SizeSelector::Exactly(8 << 30)
        );
        let s = parse_selector(">= 1G").unwrap();
        assert!(s.matches(1 << 30) && s.matches(2 << 30) && !s.matches(1 << 29));
        let r = parse_selector("1G..4G").unwrap();
        assert!(r.matches(1 << 30) && r.matches(4 << 30) && !r.matches(8 << 30));
        assert!(parse_selector("4G..1G").is_err());
        assert!(parse_selector(">= x").is_err());
        assert_eq!(parse_selector("1G..4G").unwrap().to_string(), "1G..4G");
    }
}
