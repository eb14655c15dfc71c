//! Durations (`5m`, `90s`, `1h30m`) for timeouts and timed repeats.

use std::time::Duration;

use super::UnitError;

/// The longest duration any key takes: 30 days, longer than any timeout or soak. Past it a
/// value is a mistake, and near `u64::MAX` seconds adding it to the clock overflows.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 24 * 3600);

/// Parses a duration that carries its unit; a bare number is refused because `5` could mean
/// seconds or minutes and a timeout off by 60× either hangs CI or kills healthy runs. Every
/// duration of a plan (`timeout`, a timed `repeat`) is read here, so each is bounded by
/// [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let t = text.trim();
    let expected = "a duration with a unit, such as 90s, 5m or 1h30m";
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(UnitError::new(
            format!("duration `{t}` has no unit"),
            expected,
        ));
    }
    let d = humantime::parse_duration(t)
        .map_err(|e| UnitError::new(format!("`{t}` is not a duration ({e})"), expected))?;
    if d.is_zero() {
        return Err(UnitError::new(format!("duration `{t}` is zero"), expected));
    }
    if d > MAX_DURATION {
        return Err(UnitError::new(
            format!("duration `{t}` is longer than any run: at most 30 days (720h)"),
            expected,
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(
            parse_duration("5")
                .unwrap_err()
                .to_string()
                .contains("no unit")
        );
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("0s").is_err());
        assert_eq!(parse_duration("720h").unwrap(), MAX_DURATION);
        for huge in ["721h", "18446744073709551615s", "99999999999h"] {
            let e = parse_duration(huge).unwrap_err().to_string();
            assert!(e.contains("at most 30 days"), "{huge}: {e}");
        }
    }
}
