//! Numbers no nccl-tests run can print. A log is evidence a customer signs; a value that cannot
//! have been measured (a negative time, a fraction of a wrong element, a bandwidth the size and
//! time deny) means the file was edited or damaged, so the whole log is refused with the line —
//! graded, such a row would pass `time <=` or hide corruption.

use super::log::{Log, LogRow, Printed, collective_of_program};
use crate::collective::Collective;
use crate::results::Cell;

/// Below this nccl-tests prints `#wrong` as a plain integer; above, `%g` may round it.
const EXACT_WRONG: f64 = 1e6;

/// Checks one printed `#wrong` value: a whole, non-negative count (or a large `%g` one).
pub fn wrong_count(v: f64, text: &str) -> Result<u64, String> {
    if !v.is_finite() || v < 0.0 {
        return Err(format!(
            "impossible: #wrong `{text}` is negative or not a number"
        ));
    }
    if v < EXACT_WRONG && v.fract() != 0.0 {
        return Err(format!(
            "impossible: #wrong `{text}` is not a whole count of elements"
        ));
    }
    Ok(v.round() as u64)
}

/// The first impossible row of `log`: its line and why.
pub fn first_impossible(log: &Log) -> Option<(usize, String)> {
    let program = || log.program.as_deref().and_then(collective_of_program);
    let hypercube = log.collective.or_else(program) == Some(Collective::HyperCube);
    log.rows
        .iter()
        .find_map(|r| impossible(r, log.cputime, hypercube).map(|why| (r.line, why)))
}

fn impossible(row: &LogRow, cputime: bool, hypercube: bool) -> Option<String> {
    for (name, cell, printed) in [
        ("out-of-place", &row.out_of_place, row.printed[0]),
        ("in-place", &row.in_place, row.printed[1]),
    ] {
        let Some(c) = cell else { continue };
        // Versions before 2.0 printed the bytes of all GPUs as size, yet derived algbw from one
        // GPU's count: either explains a printed algbw.
        // Hypercube's algbw counts the n − 1 blocks a rank receives: size less one block.
        let per_gpu = row.count.saturating_mul(row.dtype.size());
        let size = if hypercube {
            row.size.saturating_sub(per_gpu)
        } else {
            row.size
        };
        let why = cell_impossible(c, printed, size, cputime)
            .and_then(|why| cell_impossible(c, printed, per_gpu, cputime).map(|_| why));
        if let Some(why) = why {
            return Some(format!("{name} {why}"));
        }
    }
    None
}

/// Whether `c` holds numbers no run prints: a negative value, or an algbw (busbw) that no
/// values within the printed precision (`p`) of the time and algbw can make follow from `size`.
/// nccl-tests derives time and algbw from one measured time, so only rounding parts them; the
/// 3% beyond it is what earlier versions' averaging left (kept from before precision counted).
fn cell_impossible(c: &Cell, p: Printed, size: u64, cputime: bool) -> Option<String> {
    for (what, v) in [("time", c.time_us), ("algbw", c.algbw), ("busbw", c.busbw)] {
        if v.is_some_and(|v| v < 0.0) {
            return Some(format!("{what} {} is negative", v.unwrap_or_default()));
        }
    }
    let (Some(t), Some(alg)) = (c.time_us, c.algbw) else {
        return None;
    };
    // With -C 1 the time column is CPU enqueue time; the bandwidths come from another clock.
    if !cputime && t > 0.0 && size > 0 {
        let want = size as f64 / (t * 1e3);
        // The algbw every time the printed one may stand for gives, widened by 3%.
        let lowest = size as f64 / ((t + p.time) * 1e3) * 0.97;
        let highest = if t > p.time {
            size as f64 / ((t - p.time) * 1e3) * 1.03
        } else {
            f64::INFINITY
        };
        if alg + p.algbw < lowest || alg - p.algbw > highest {
            return Some(format!(
                "algbw {alg} GB/s does not follow from {size} B in {t} us ({want:.2} GB/s), at the precision they are printed with"
            ));
        }
    }
    if let Some(bus) = c.busbw
        && bus - p.busbw > 2.0 * (alg + p.algbw) * 1.03
    {
        return Some(format!(
            "busbw {bus} GB/s is more than twice algbw {alg} GB/s (no collective's factor is)"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(t: f64, alg: f64, bus: f64) -> Cell {
        Cell::measured(t, alg, bus, Some(0))
    }

    fn cell_impossible(c: &Cell, size: u64, cputime: bool) -> Option<String> {
        super::cell_impossible(c, Printed::default(), size, cputime)
    }

    #[test]
    fn printed_precision_is_half_the_last_digit() {
        for (text, half) in [
            ("0.17", 0.005),
            ("2e+06", 5e5),
            ("1.2e+07", 5e5),
            ("13837", 0.5),
            ("1130.0", 0.05),
        ] {
            assert!(
                (Printed::half_unit(text) - half).abs() < half * 1e-9,
                "{text}"
            );
        }
        // One rank, 1 GiB in place in 0.48 us, printed `2e+06` (nccl-tests 2.19.6 on an H200).
        let p = Printed {
            time: 0.005,
            algbw: 5e5,
            busbw: 0.005,
        };
        let c = cell(0.48, 2e6, 0.0);
        assert!(super::cell_impossible(&c, p, 1073741824, false).is_none());
        let c = cell(0.42, 1e6, 0.0);
        assert!(super::cell_impossible(&c, p, 536870912, false).is_none());
        // 3e+06 stands for at least 2.5e6: more than 1 GiB in 0.475 us makes (2.26e6).
        let c = cell(0.48, 3e6, 0.0);
        assert!(super::cell_impossible(&c, p, 1073741824, false).is_some());
    }

    #[test]
    fn printed_numbers_pass_and_edited_ones_do_not() {
        // all_reduce 1 GiB over 2 ranks on H200, as printed.
        assert!(cell_impossible(&cell(3218.2, 333.64, 333.64), 1073741824, false).is_none());
        assert!(cell_impossible(&cell(17.07, 61.41, 61.41), 1048576, false).is_none());
        assert!(cell_impossible(&cell(1.17, 0.0, 0.0), 0, false).is_none());
        assert!(cell_impossible(&cell(-1.0, 0.0, 0.0), 8, false).is_some());
        assert!(cell_impossible(&cell(17.07, 99.0, 99.0), 1048576, false).is_some());
        assert!(cell_impossible(&cell(17.07, 99.0, 99.0), 1048576, true).is_none());
        assert!(cell_impossible(&cell(17.07, 61.41, 130.0), 1048576, false).is_some());
        assert_eq!(wrong_count(3.0, "3"), Ok(3));
        assert_eq!(wrong_count(1234570.0, "1.23457e+06"), Ok(1234570));
        assert!(wrong_count(0.4, "0.4").is_err());
        assert!(wrong_count(-1.0, "-1").is_err());
    }
}
