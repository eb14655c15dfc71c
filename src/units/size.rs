//! Byte sizes as nccl-tests and Slurm read them: binary suffixes, so `8G` is 8 GiB.

use std::fmt;

use super::UnitError;

const KIB: u64 = 1024;

/// Parses a byte size (`8`, `512K`, `1.5G`, `8GiB`, `1M`).
///
/// Binary multipliers only: a plan written for `all_reduce_perf -e 8G` must sweep the same bytes.
/// Fractions are allowed when they land on a whole byte (`1.5G`), never silently truncated.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(UnitError::new("empty size", "a size such as 8, 1M or 8G"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, rest) = t.split_at(split);
    let suffix = rest.trim();
    if num.is_empty() {
        if t.starts_with('-') {
            return Err(UnitError::new(
                format!("negative size `{t}`"),
                "a positive size such as 8, 1M or 8G",
            ));
        }
        return Err(UnitError::new(
            format!("`{t}` is not a size"),
            "a number with an optional binary suffix K, M, G or T (8, 1M, 8G)",
        ));
    }
    let mult = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => KIB,
        "m" | "mb" | "mib" => KIB.pow(2),
        "g" | "gb" | "gib" => KIB.pow(3),
        "t" | "tb" | "tib" => KIB.pow(4),
        _ => {
            return Err(UnitError::new(
                format!("unknown size suffix `{suffix}` in `{t}`"),
                "K, M, G or T (binary: 1K = 1024 bytes)",
            ));
        }
    };
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(mult).ok_or_else(|| too_large(t));
    }
    let f: f64 = num.parse().map_err(|_| {
        UnitError::new(
            format!("`{t}` is not a size"),
            "a number with an optional binary suffix K, M, G or T (8, 1M, 8G)",
        )
    })?;
    let bytes = f * mult as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(too_large(t));
    }
    if bytes.fract() != 0.0 {
        return Err(UnitError::new(
            format!("`{t}` is not a whole number of bytes ({bytes} B)"),
            "a size that is a whole number of bytes",
        ));
    }
    Ok(bytes as u64)
}

fn too_large(t: &str) -> UnitError {
    UnitError::new(format!("size `{t}` is too large"), "a size below 16 EiB")
}

/// A byte count printed the way users write it in plans (`8G`, `1M`, `1536`), exact or not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Size(pub u64);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (unit, div) in [
            ("T", KIB.pow(4)),
            ("G", KIB.pow(3)),
            ("M", KIB.pow(2)),
            ("K", KIB),
        ] {
            if b >= div && b.is_multiple_of(div) {
                return write!(f, "{}{unit}", b / div);
            }
        }
        write!(f, "{b}")
    }
}

/// Human-readable binary size with one decimal for memory figures (`46.5 GiB`).
pub fn human_bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", units[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_suffixes() {
        assert_eq!(parse_size("8").unwrap(), 8);
        assert_eq!(parse_size("8G").unwrap(), 8 << 30);
        assert_eq!(parse_size("8g").unwrap(), 8 << 30);
        assert_eq!(parse_size("8GiB").unwrap(), 8 << 30);
        assert_eq!(parse_size("128MB").unwrap(), 128 << 20);
        assert_eq!(parse_size("1K").unwrap(), 1024);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_size(" 4 M ").unwrap(), 4 << 20);
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "G", "8X", "-1", "1.1K", "8 GB/s", "abc", "99999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad} should fail");
        }
        assert!(parse_size("8X").unwrap_err().to_string().contains("suffix"));
    }

    #[test]
    fn display_round_trips() {
        for s in ["8", "1K", "8G", "1536", "3M", "2T"] {
            let b = parse_size(s).unwrap();
            assert_eq!(Size(b).to_string(), s);
        }
        assert_eq!(Size(1536 * 1024).to_string(), "1536K");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
        assert_eq!(human_bytes(100), "100 B");
    }
}
