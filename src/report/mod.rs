//! Reports of a grade: one exporter per format behind one trait, so adding a format never
//! touches grading. Exporters only render what the [`Grade`] already concluded.

pub mod acceptance;
pub(crate) mod chart;
mod compare;
mod csv;
mod escape;
mod evidence;
mod faults;
pub mod gpu_pairs;
mod html;
mod iterations;
mod json;
mod junit;
mod markdown;
mod meta;
mod nodes;
pub mod pair_matrix;
mod paths;
mod reruns;
mod set_summary;
mod soak;
mod tables;
mod text;
mod timeline;
pub mod trend_chart;
pub(crate) mod xml;

use std::path::{Path, PathBuf};

pub use chart::ChartExporter;
pub use compare::render_comparison;
pub use csv::CsvExporter;
pub use escape::text as md_escape;
pub use faults::fault_lines;
pub use html::HtmlExporter;
pub use json::{JsonExporter, Verdict, verdict_schema};
pub use junit::{JunitExporter, failed_before_measuring, suites as junit_suites};
pub use markdown::MarkdownExporter;
pub use text::TextExporter;
pub use xml::document as xml_document;

use crate::grade::Grade;

/// What every exporter renders.
pub struct ReportInput<'a> {
    pub grade: &'a Grade,
}

/// Why a report could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot draw the chart of job {job}: {message}")]
    Chart { job: String, message: String },
    #[error("cannot write the verdict JSON: {0}")]
    Json(serde_json::Error),
    #[error("cannot write JUnit XML: {0}")]
    Junit(#[from] quick_junit::SerializeError),
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
}

/// One output format.
pub trait Exporter {
    fn export(&self, input: &ReportInput<'_>) -> Result<Vec<u8>, ReportError>;
}

/// Writes `bytes` to `path`, creating its directory; atomic, and never through a link.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    crate::output::write_atomic(path, bytes).map_err(ReportError::from)
}

/// Writes the report directory: `report.md` with `charts/*.svg` beside it (busbw per job, and
/// time where the plan judges it), and `report.html`,
/// which holds everything inline so it opens anywhere without a network. Returns the files.
pub fn write_report(dir: &Path, input: &ReportInput<'_>) -> Result<Vec<PathBuf>, ReportError> {
    // The directory first: a link there is refused before `charts/` could be made through it.
    crate::output::ensure_dir(dir)?;
    let mut written = Vec::new();
    for (index, job) in input.grade.jobs.iter().enumerate() {
        if !nodes::shown(job) {
            continue;
        }
        let svg = ChartExporter { index }.export(input)?;
        if !svg.is_empty() {
            let p = dir.join(chart::file_name(index, &job.id));
            write_file(&p, &svg)?;
            written.push(p);
        }
        if let Some(svg) = ChartExporter::latency(job)? {
            let p = dir.join(chart::time_file_name(index, &job.id));
            write_file(&p, svg.as_bytes())?;
            written.push(p);
        }
    }
    for (k, t) in input.grade.node_sets.iter().enumerate() {
        if let Some(svg) = nodes::matrix(t) {
            let p = dir.join(nodes::matrix_file(k));
            write_file(&p, svg.as_bytes())?;
            written.push(p);
        }
    }
    for (k, m) in gpu_pairs::matrices(input.grade).iter().enumerate() {
        if let Some(svg) = m.svg() {
            let p = dir.join(gpu_pairs::file(k));
            write_file(&p, svg.as_bytes())?;
            written.push(p);
        }
    }
    for (name, exporter) in [
        ("report.md", &MarkdownExporter as &dyn Exporter),
        ("report.html", &HtmlExporter),
    ] {
        let p = dir.join(name);
        write_file(&p, &exporter.export(input)?)?;
        written.push(p);
    }
    Ok(written)
}
