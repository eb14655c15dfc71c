//! `nccl_tests_min_bw: 300`: nccl-tests' `NCCL_TESTS_MIN_BW` check by name, for sites porting
//! scripts that set it. nccl-tests 2.19.6 (`src/common.cu`) adds up the busbw of every cell it
//! times — each size, out-of-place and in-place, every run cycle, zero-byte sizes included —
//! divides by their count, prints that as `# Avg bus bandwidth`, and fails the run when the
//! average is below 0.9 × the variable's value. So this passes when the job's average busbw is
//! at least 0.9 × the figure: `nccl_tests_min_bw: 300` passes at 270 GB/s.

use super::context::Ctx;
use super::measure::{num, placements, sizes};
use super::verdict::{CriterionVerdict, Status};
use crate::plan::{Criterion, NCCL_TESTS_MIN_BW_SHARE as SHARE};

pub fn evaluate(ctx: &Ctx<'_>, c: &Criterion, min_bw: f64, text: String) -> CriterionVerdict {
    let places = placements(ctx.job, Some(c));
    let wanted = sizes(ctx.job, c.at.as_ref());
    for &s in &wanted {
        for &p in &places {
            let measured = ctx
                .result
                .cells()
                .any(|(_, row, at, cell)| row.requested == s && at == p && cell.busbw.is_some());
            if !measured {
                return CriterionVerdict::whole(c, text, Status::Fail, ctx.no_data(s, p));
            }
        }
    }
    let cells: Vec<f64> = ctx
        .result
        .cells()
        .filter(|(_, row, p, _)| places.contains(p) && wanted.contains(&row.requested))
        .filter_map(|(_, _, _, cell)| cell.busbw)
        .collect();
    let floor = SHARE * min_bw;
    let avg = cells.iter().sum::<f64>() / cells.len().max(1) as f64;
    let basis = format!(
        "{} GB/s ({SHARE} × NCCL_TESTS_MIN_BW {} GB/s)",
        num(floor),
        num(min_bw)
    );
    let logged = match ctx.result.reported_avg_busbw {
        Some(v) if c.at.is_none() && c.in_place.is_none() => {
            format!("; the log printed `# Avg bus bandwidth : {}`", num(v))
        }
        _ => String::new(),
    };
    let over = format!("over {} cell(s) of {}", cells.len(), ctx.what);
    if avg >= floor {
        let message = format!("average busbw {} GB/s {over} >= {basis}{logged}", num(avg));
        CriterionVerdict::whole(c, text, Status::Pass, message)
    } else {
        let message = format!(
            "average busbw {} GB/s {over} < {basis}: nccl-tests would print FAILED and exit non-zero{logged}{}",
            num(avg),
            ctx.transport_note()
        );
        CriterionVerdict::whole(c, text, Status::Fail, message)
    }
}
