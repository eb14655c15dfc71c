//! Bounded reads of kernel-made files (sysfs, procfs): a value file is tiny, so anything over
//! [`VALUE_LIMIT`] is refused rather than read; a directory yields at most [`MAX_ENTRIES`] names,
//! so a hostile or recorded tree cannot make the probe walk forever.

use std::path::Path;

/// The most bytes of one sysfs/procfs value file read (sysfs pages are 4 KiB).
pub const VALUE_LIMIT: usize = 64 * 1024;

/// The most entries of one directory looked at.
pub const MAX_ENTRIES: usize = 4096;

/// The trimmed text of a value file, or why it could not be read (missing, refused by the
/// kernel as `EINVAL` for a link that is down, not a regular file, too big).
pub fn text(path: &Path) -> Result<String, String> {
    let bytes = crate::input::read_bounded(path, VALUE_LIMIT, "kernel file")
        .map_err(|e| e.into_io().to_string())?;
    Ok(String::from_utf8_lossy(&bytes).trim().to_string())
}

/// The text of a value file when it can be read.
pub fn opt(path: &Path) -> Option<String> {
    text(path).ok()
}

/// A value file holding one unsigned number (decimal, or hexadecimal with `0x`).
pub fn number(path: &Path) -> Option<u64> {
    parse_number(&text(path).ok()?)
}

/// `123` or `0x7b`.
pub fn parse_number(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The names in a directory, sorted, at most [`MAX_ENTRIES`]; why when it cannot be listed.
pub fn names(dir: &Path) -> Result<Vec<String>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut out: Vec<String> = entries
        .take(MAX_ENTRIES)
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    out.sort();
    Ok(out)
}

/// Every `name → number` of the value files in `dir` (a `counters/` directory), missing
/// directory as empty.
pub fn counters(dir: &Path) -> std::collections::BTreeMap<String, u64> {
    names(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|n| Some((n.clone(), number(&dir.join(&n))?)))
        .collect()
}
