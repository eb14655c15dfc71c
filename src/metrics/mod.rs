//! Prometheus metrics of a graded run, in node_exporter's textfile-collector format: what an
//! SRE's dashboards and alerts read instead of the report. `run` and `grade` write them with
//! `--metrics FILE|DIR`; a directory (node_exporter's `--collector.textfile.directory`) gets
//! one file per plan, `baton-PLAN.prom`, replaced whole by each run of that plan (written
//! atomically, so the collector never reads half a file). See `docs/fleet.md`.

mod build;
pub mod text;

use std::path::{Path, PathBuf};

use crate::exit::Exit;
use crate::grade::Grade;
use crate::output::OutputError;

pub use build::families;

/// The metrics text of `g` for a command ending with `exit`, stamped with the current time.
pub fn render(g: &Grade, exit: Exit) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    text::render(&families(g, exit, now))
}

/// Where `--metrics TARGET` writes for plan `plan`: into a directory that exists, a file
/// `baton-PLAN.prom` (the plan name kept to letters, digits, `-` and `_`); else `TARGET`.
pub fn file_for(target: &Path, plan: &str) -> PathBuf {
    if !target.is_dir() {
        return target.to_path_buf();
    }
    let name: String = plan
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    target.join(format!("baton-{name}.prom"))
}

/// Writes the metrics of `g` for `--metrics target`; returns the file written.
pub fn write(target: &Path, g: &Grade, exit: Exit) -> Result<PathBuf, OutputError> {
    let file = file_for(target, &g.plan);
    crate::output::write_atomic(&file, render(g, exit).as_bytes())?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_gets_a_file_per_plan_of_safe_characters() {
        let d = std::env::temp_dir().join(format!("baton-metrics-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        assert_eq!(file_for(&d, "../x y\n"), d.join("baton-___x_y_.prom"));
        assert_eq!(file_for(&d.join("m.prom"), "p"), d.join("m.prom"));
    }
}
