//! `nccl_tests_min_bw`: the value of nccl-tests' `NCCL_TESTS_MIN_BW`, a bandwidth in GB/s.

use super::Checker;
use crate::plan::diag::Diagnostic;
use crate::plan::loc::{Loc, Scalar};
use crate::units::{Cmp, Quantity, parse_threshold};

impl Checker<'_> {
    /// `300` (GB/s, as the variable is written) or `"300 GB/s"`; a positive bandwidth.
    pub(super) fn nccl_tests_min_bw(&mut self, v: &Loc<Scalar>) -> Option<f64> {
        let parsed = match &v.value {
            Scalar::Int(i) => Ok(*i as f64),
            Scalar::Float(f) => Ok(*f),
            Scalar::Str(s) if Cmp::strip(s).is_some() => Err(
                "`nccl_tests_min_bw` is the variable's value, written without a comparison"
                    .to_string(),
            ),
            Scalar::Str(s) => parse_threshold(&format!(">= {s}"), Quantity::Bandwidth)
                .map(|t| t.value)
                .map_err(|e| format!("`nccl_tests_min_bw`: {e}")),
            other => Err(format!(
                "`nccl_tests_min_bw` must be a bandwidth, found {}",
                other.kind()
            )),
        };
        match parsed {
            Ok(x) if x.is_finite() && x > 0.0 => Some(x),
            Ok(_) => self.refuse_min_bw("`nccl_tests_min_bw` must be above 0".into(), v),
            Err(m) => self.refuse_min_bw(m, v),
        }
    }

    fn refuse_min_bw(&mut self, message: String, v: &Loc<Scalar>) -> Option<f64> {
        self.err(
            Diagnostic::error(message, Some(v.pos)).help(
                "e.g. nccl_tests_min_bw: 300 (GB/s, as NCCL_TESTS_MIN_BW=300): passes when the average busbw is at least 0.9 × it",
            ),
        );
        None
    }
}
