//! Alltoallv's traffic for one job, read as nccl-tests' alltoallv_perf reads it: from this
//! process's `NCCL_TESTS_ALLTOALLV_*` variables (a plan sets them under `env:`), so a site's
//! scripts and matrix files carry over unchanged.

use std::path::Path;

use crate::collective::traffic::{MATRIX_FILE_VAR, MATRIX_SCALE_VAR, SPREAD_VAR};
use crate::collective::{Collective, Dtype, Traffic};
use crate::results::ErrorKind;

use super::engine::EngineError;

/// A traffic matrix is a few numbers per rank pair; more than this is not one.
const MATRIX_LIMIT: usize = 16 << 20;

fn invalid(message: String) -> EngineError {
    EngineError::new(ErrorKind::Other, message)
}

/// The job's traffic (the default for every collective but alltoallv), refused with what is
/// wrong: an unreadable or malformed matrix, one smaller than the group, or — as nccl-tests
/// refuses — a matrix run over several sizes or a size below the largest rank's total.
pub fn for_job(
    collective: Collective,
    sizes: &[u64],
    dtype: Dtype,
    n: u64,
) -> Result<Traffic, EngineError> {
    if collective != Collective::AllToAllv {
        return Ok(Traffic::default());
    }
    let var = |k| std::env::var(k).ok();
    let text = match var(MATRIX_FILE_VAR) {
        Some(path) => Some(read_matrix(Path::new(&path))?),
        None => None,
    };
    let t = Traffic::from_vars(
        var(SPREAD_VAR).as_deref(),
        var(MATRIX_SCALE_VAR).as_deref(),
        text.as_deref(),
    )
    .map_err(|e| invalid(e.to_string()))?;
    t.fits(n).map_err(|e| invalid(e.to_string()))?;
    if !t.generated() {
        let (lo, hi) = (sizes.iter().min(), sizes.iter().max());
        if lo != hi {
            return Err(invalid(format!(
                "{MATRIX_FILE_VAR}: a traffic matrix runs at one size (nccl-tests: -b and -e must be equal)"
            )));
        }
        let (s, r) = t.max_counts(0, 1, n);
        let need = s.max(r);
        if let Some(&size) = hi.filter(|h| **h < need) {
            return Err(invalid(format!(
                "{MATRIX_FILE_VAR}: the size must be at least {need} bytes, the matrix's largest rank total (got {size}, {dtype})"
            )));
        }
    }
    Ok(t)
}

fn read_matrix(path: &Path) -> Result<String, EngineError> {
    let bytes = crate::input::read_bounded(path, MATRIX_LIMIT, "traffic matrix")
        .map_err(|e| invalid(format!("{MATRIX_FILE_VAR}={}: {e}", path.display())))?;
    String::from_utf8(bytes).map_err(|_| {
        invalid(format!(
            "{MATRIX_FILE_VAR}={}: not UTF-8 text",
            path.display()
        ))
    })
}
