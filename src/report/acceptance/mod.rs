//! The signable acceptance report: one document for a whole acceptance — a cover (cluster
//! verdict, nodes accepted / failed / suspect as hostlists with counts, the drain list, run
//! facts, the software and hardware inventory, a signature block), a phases × nodes matrix
//! whose cells link to each node's evidence in its phase's report, then each phase's own
//! report. It renders a view model ([`Acceptance`]) that the acceptance runner fills, so it
//! decides nothing itself and a fixture renders it alike. HTML (printed to the PDF a customer
//! signs) and Markdown; every value from input through the reports' escapers.

mod html;
mod markdown;
mod model;

use std::path::{Path, PathBuf};

pub use model::{
    Acceptance, Cell, CellVerdict, ClusterVerdict, Drain, InventoryRow, Phase, PhaseVerdict,
    RunFacts,
};

use super::ReportError;

/// The file names written into the report directory.
pub const HTML: &str = "acceptance.html";
pub const MARKDOWN: &str = "acceptance.md";

/// The acceptance report as HTML: one self-contained file, print-ready.
pub fn html(a: &Acceptance) -> Result<String, ReportError> {
    html::render(a)
}

/// The acceptance report as Markdown.
pub fn markdown(a: &Acceptance) -> String {
    markdown::render(a)
}

/// Writes `acceptance.html` and `acceptance.md` into `dir` (atomically); returns them.
pub fn write(dir: &Path, a: &Acceptance) -> Result<Vec<PathBuf>, ReportError> {
    let (h, m) = (dir.join(HTML), dir.join(MARKDOWN));
    super::write_file(&h, html(a)?.as_bytes())?;
    super::write_file(&m, markdown(a).as_bytes())?;
    Ok(vec![h, m])
}

/// The run table's rows that have a value: (label, value).
fn run_rows(r: &RunFacts) -> Vec<(&'static str, String)> {
    [
        ("Acceptance", Some(r.file.clone())),
        ("Plan revision", Some(r.revisions.join(", "))),
        ("Started", r.started.as_deref().map(when)),
        ("Finished", r.finished.as_deref().map(when)),
        ("Duration", r.duration_s.map(duration)),
        ("Run by", r.by.clone()),
        ("Run on", r.host.clone()),
        ("Command", r.command.clone()),
        ("Produced by", Some(r.baton.clone())),
    ]
    .into_iter()
    .filter_map(|(label, v)| Some((label, v.filter(|v| !v.is_empty())?)))
    .collect()
}

/// (how many, the hostlist — `none` when empty).
fn count_line(hosts: &[String]) -> (usize, String) {
    let names: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let list = crate::nodeset::compress(&names);
    (
        hosts.len(),
        if list.is_empty() { "none".into() } else { list },
    )
}

/// `1h 02m 05s`, `4m 10s`, `12s`.
fn duration(s: u64) -> String {
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m {sec:02}s"),
        (h, m, sec) => format!("{h}h {m:02}m {sec:02}s"),
    }
}

/// A timestamp as the per-run report shows it.
fn when(s: &str) -> String {
    super::meta::when(s)
}
