//! Every graded cell as one CSV line (RFC 4180: CRLF line ends, a field quoted when it holds a
//! comma, quote or line break, a quote doubled), for spreadsheets and the scripts sites already
//! feed nccl-tests tables to. Each line carries what its number was measured with, so lines from
//! runs on different NCCL releases or CTA policies can sit in one sheet without being mixed up.

use super::{Exporter, ReportError, ReportInput};
use crate::results::{Cell, JobResult, Placement};

/// The columns, in order.
pub const COLUMNS: [&str; 20] = [
    "job",
    "repeat",
    "collective",
    "requested",
    "size",
    "count",
    "dtype",
    "redop",
    "root",
    "placement",
    "status",
    "time_us",
    "algbw",
    "busbw",
    "wrong",
    "nccl_version",
    "register",
    "cta_policy",
    "blocking",
    "results_file",
];

pub struct CsvExporter;

impl Exporter for CsvExporter {
    fn export(&self, input: &ReportInput<'_>) -> Result<Vec<u8>, ReportError> {
        let mut out = line(COLUMNS.iter().map(|c| c.to_string()));
        for job in &input.grade.jobs {
            if let Some(s) = &job.source {
                for fields in cells(&s.result) {
                    let mut fields = fields;
                    fields.push(s.file.clone());
                    out.push_str(&line(fields.into_iter()));
                }
            }
        }
        Ok(out.into_bytes())
    }
}

/// The fields of every cell of `job` but its results file.
fn cells(job: &JobResult) -> Vec<Vec<String>> {
    let with = job.measured_with.clone().unwrap_or_default();
    let opt = |v: Option<String>| v.unwrap_or_default();
    let mut out = Vec::new();
    for rep in &job.repeats {
        for row in &rep.rows {
            for (placement, cell) in [
                (Placement::OutOfPlace, &row.out_of_place),
                (Placement::InPlace, &row.in_place),
            ] {
                let Some(c) = cell else { continue };
                let mut f = vec![
                    job.id.clone(),
                    rep.index.to_string(),
                    job.collective.name().to_string(),
                    row.requested.to_string(),
                    row.size.to_string(),
                    row.count.to_string(),
                    job.dtype.name().to_string(),
                    job.op.map_or(String::new(), |o| o.name().to_string()),
                    opt(job.root.map(|r| r.to_string())),
                    placement.label().to_string(),
                ];
                f.extend(figures(c));
                f.extend([
                    opt(with.nccl_version.clone()),
                    opt(with.register.map(|r| r.to_string())),
                    opt(with.cta_policy.map(|r| r.to_string())),
                    opt(with.blocking.map(|r| r.to_string())),
                ]);
                out.push(f);
            }
        }
    }
    out
}

/// status, time, algbw, busbw, #wrong; a figure not measured is an empty field.
fn figures(c: &Cell) -> [String; 5] {
    let num = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    [
        serde_json::to_value(c.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        num(c.time_us),
        num(c.algbw),
        num(c.busbw),
        c.wrong.map_or(String::new(), |w| w.to_string()),
    ]
}

fn line(fields: impl Iterator<Item = String>) -> String {
    let mut s = fields.map(|f| quote(&f)).collect::<Vec<_>>().join(",");
    s.push_str("\r\n");
    s
}

/// RFC 4180 §2.6–2.7, after OWASP's rule against CSV injection: a field a spreadsheet would
/// read as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) gets a
/// leading `'`, which spreadsheets show as text; a number (`-1.5`) is left a number.
fn quote(f: &str) -> String {
    let formula = f.starts_with(['=', '+', '-', '@', '\t', '\r']) && f.parse::<f64>().is_err();
    let f = if formula {
        std::borrow::Cow::Owned(format!("'{f}"))
    } else {
        std::borrow::Cow::Borrowed(f)
    };
    if f.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_as_rfc_4180_says() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote("two\nlines"), "\"two\nlines\"");
        assert_eq!(
            line(["x".to_string(), "y,z".into(), String::new()].into_iter()),
            "x,\"y,z\",\r\n"
        );
    }

    /// #36 finding 20: OWASP's CSV injection rule: a cell starting with `=`, `+`, `-`, `@`, a
    /// tab or a carriage return gets a leading `'`, except a number (`-1.5` stays `-1.5`).
    #[test]
    fn cells_that_a_spreadsheet_would_run_are_neutralised() {
        assert_eq!(quote("=1+2"), "'=1+2");
        assert_eq!(quote("+cmd|' /C calc'!A0"), "'+cmd|' /C calc'!A0");
        assert_eq!(quote("-2+3"), "'-2+3");
        assert_eq!(quote("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(quote("\t=1"), "'\t=1");
        assert_eq!(quote("\r=1"), "\"'\r=1\"");
        assert_eq!(quote("=a,b"), "\"'=a,b\"");
        assert_eq!(quote("-1.5"), "-1.5");
        assert_eq!(quote("+3"), "+3");
        assert_eq!(quote("-1e-3"), "-1e-3");
        assert_eq!(quote("all_reduce"), "all_reduce");
    }
}
