//! Every file a graded run or `grade` writes besides results: `junit.xml`, `report/`,
//! `nodes.json` and `drain.sh` — each atomic, never through a link (`crate::output`). The
//! verdicts' text and JSON come back as text for the CLI to print.

use std::path::{Path, PathBuf};

use crate::grade::Grade;
use crate::output::OutputError;
use crate::report::{
    CsvExporter, Exporter, JsonExporter, JunitExporter, ReportError, ReportInput, TextExporter,
};

/// The verdicts as `grade` prints them.
pub fn verdict_text(g: &Grade) -> Result<String, ReportError> {
    let bytes = TextExporter.export(&ReportInput { grade: g })?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The verdict JSON (`schemas/verdict.schema.json`).
pub fn verdict_json(g: &Grade) -> Result<String, ReportError> {
    let bytes = JsonExporter.export(&ReportInput { grade: g })?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `junit` for CI: a test case per job.
pub fn write_junit(g: &Grade, junit: &Path) -> Result<(), ReportError> {
    crate::report::write_file(junit, &JunitExporter.export(&ReportInput { grade: g })?)
}

/// `csv`: every graded cell with what it was measured with (`crate::report::CsvExporter`).
pub fn write_csv(g: &Grade, csv: &Path) -> Result<(), ReportError> {
    crate::report::write_file(csv, &CsvExporter.export(&ReportInput { grade: g })?)
}

/// The report directory (`report.md`, `report.html`, charts); returns the files written.
pub fn write_report(g: &Grade, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    crate::report::write_report(dir, &ReportInput { grade: g })
}

/// What `nodes.json` says, for the run's summary.
pub struct NodesWritten<'g> {
    pub passed: &'g str,
    pub failed: &'g str,
    pub suspect: &'g str,
    pub nodes_json: PathBuf,
    pub drain_sh: PathBuf,
    /// One line per fault (`crate::report::fault_lines`).
    pub faults: Vec<String>,
}

/// `nodes.json` and `drain.sh` in `dir` when tests ran over node sets (`None` otherwise);
/// `plan` names the plan in each drain reason.
pub fn write_nodes<'g>(
    dir: &Path,
    g: &'g Grade,
    plan: &str,
) -> Result<Option<NodesWritten<'g>>, OutputError> {
    let Some(nodes) = &g.nodes else {
        return Ok(None);
    };
    crate::nodeset::export::write_files(dir, nodes, plan)?;
    Ok(Some(NodesWritten {
        passed: &nodes.passed,
        failed: &nodes.failed,
        suspect: &nodes.suspect,
        nodes_json: dir.join("nodes.json"),
        drain_sh: dir.join("drain.sh"),
        faults: crate::report::fault_lines(g),
    }))
}
