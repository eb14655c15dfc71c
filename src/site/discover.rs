//! Which site file a command uses: `--site FILE`, else `BATON_SITE`, else the system-wide
//! default when it exists; `--no-site` uses none.

use std::path::{Path, PathBuf};

/// The system-wide site file, used when it exists and nothing else names one.
pub const DEFAULT_SITE: &str = "/etc/baton/site.yaml";
/// The variable naming a site file.
pub const SITE_VAR: &str = "BATON_SITE";
/// For tests only: where the default site file is looked for instead of [`DEFAULT_SITE`].
pub const DEFAULT_SITE_VAR: &str = "BATON_SITE_DEFAULT";

/// The site file to use, if any. A named file (flag or variable) is used even when it does not
/// exist, so that reading it says so; the default only when it is there.
pub fn discover(flag: Option<&Path>, no_site: bool) -> Option<PathBuf> {
    if no_site {
        return None;
    }
    if let Some(f) = flag {
        return Some(f.to_path_buf());
    }
    let named = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(f) = named(SITE_VAR) {
        return Some(f);
    }
    let default = named(DEFAULT_SITE_VAR).unwrap_or_else(|| PathBuf::from(DEFAULT_SITE));
    default.is_file().then_some(default)
}
