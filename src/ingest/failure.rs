//! The lines by which nccl-tests (and rccl-tests) say a run failed: `HOST: Test NCCL failure
//! FILE:LINE 'why'` and its CUDA, timeout and launcher kin, the `Cuda failure` / `NCCL failure`
//! of nccl-tests 1.x, and the ` .. HOST pid N: Test failure FILE:LINE` trace after them. A
//! failure can cut a table row in two (`2097152 32768 float none -1 node0: Test CUDA failure …`);
//! the row's start says which size died.

use crate::results::ErrorKind;

/// What a failure line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure<'a> {
    pub kind: ErrorKind,
    /// From the host (when printed) to the end of the line.
    pub text: &'a str,
    /// The start of the table row the failure cut, when it cut one.
    pub cut_row: Option<&'a str>,
}

/// A failure line, the trace that follows one, or neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line<'a> {
    Failure(Failure<'a>),
    Trace,
}

const MARKERS: &[(&str, ErrorKind)] = &[
    ("Test NCCL failure", ErrorKind::Nccl),
    ("Test CUDA failure", ErrorKind::Cuda),
    ("Test timeout", ErrorKind::Timeout),
];
/// nccl-tests 1.x, at the start of the line: `NCCL failure all_reduce.cu:95 'unhandled cuda error'`.
const OLD_MARKERS: &[(&str, ErrorKind)] = &[
    ("NCCL failure ", ErrorKind::Nccl),
    ("Cuda failure ", ErrorKind::Cuda),
    ("Invalid number of GPUs", ErrorKind::Launcher),
    ("Please check the number", ErrorKind::Launcher),
];

/// Classifies a trimmed line.
pub fn parse(t: &str) -> Option<Line<'_>> {
    for (m, kind) in OLD_MARKERS {
        if t.starts_with(m) {
            return Some(Line::Failure(Failure {
                kind: *kind,
                text: t,
                cut_row: None,
            }));
        }
    }
    for (m, kind) in MARKERS {
        if let Some(at) = t.find(m) {
            let before = t[..at].trim_end();
            // `HOST: ` before the marker belongs to the message; anything before that is a row.
            let host_at = before
                .strip_suffix(':')
                .map_or(at, |h| h.rfind(' ').map_or(0, |s| s + 1));
            let row = t[..host_at].trim();
            return Some(Line::Failure(Failure {
                kind: *kind,
                text: &t[host_at..],
                cut_row: (!row.is_empty()).then_some(row),
            }));
        }
    }
    (t.contains(": Test failure ") || t.starts_with(".. ")).then_some(Line::Trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(t: &str) -> Failure<'_> {
        match parse(t) {
            Some(Line::Failure(f)) => f,
            other => panic!("{t}: {other:?}"),
        }
    }

    #[test]
    fn failures_before_inside_and_after_rows() {
        let f = failure("HCA-128: Test NCCL failure common.cu:1204 'unhandled cuda error'");
        assert_eq!((f.kind, f.cut_row), (ErrorKind::Nccl, None));
        assert!(f.text.starts_with("HCA-128: Test NCCL"));
        let f = failure(
            "2097152         32768     float    none      -1 node0: Test CUDA failure common.cu:389 'an illegal memory access was encountered'",
        );
        assert_eq!(f.kind, ErrorKind::Cuda);
        assert_eq!(
            f.cut_row,
            Some("2097152         32768     float    none      -1")
        );
        assert!(f.text.starts_with("node0: Test CUDA failure"));
        let f = failure("Cuda failure common.cu:510 'an illegal memory access was encountered'");
        assert_eq!(f.kind, ErrorKind::Cuda);
        let f = failure("NCCL failure all_reduce.cu:95 'unhandled cuda error'");
        assert_eq!(f.kind, ErrorKind::Nccl);
        assert_eq!(
            parse(".. node0 pid 62767: Test failure common.cu:519"),
            Some(Line::Trace)
        );
        assert_eq!(
            parse("nvidiatools-29-workload pid 11024: Test failure common.cu:937"),
            Some(Line::Trace)
        );
        assert_eq!(parse("# Out of bounds values : 0 OK"), None);
    }
}
