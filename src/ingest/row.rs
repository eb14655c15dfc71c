//! One table row in any layout nccl-tests has printed: `size count type [redop] [root]`, then per
//! placement `time algbw busbw wrong` (plus four `-I` per-iteration columns), then an optional
//! `-S` timestamp (two tokens). The `wrong` column counts wrong elements (`#wrong`, 2.11 on) or,
//! in older versions, holds the largest error (`error`, `5e-07`), which is no count and is kept
//! as unchecked.

use super::log::{Columns, LogRow, Printed};
use crate::collective::{Dtype, RedOp};
use crate::results::Cell;

/// Why a line that starts like a row is not one. `Impossible` rows hold numbers no run prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowError {
    /// Too few or unexpected fields: a row cut short or something else.
    Shape(String),
    /// The cells are not numbers (`XXXXX` in a template).
    NotNumbers(String),
    Impossible(String),
}

/// Parses a trimmed row line. `columns` is what the table header named, if it was seen.
pub fn parse(
    t: &str,
    line: usize,
    cputime: bool,
    columns: Option<Columns>,
) -> Result<LogRow, RowError> {
    let toks: Vec<&str> = t.split_whitespace().collect();
    if toks.len() < 11 {
        return Err(RowError::Shape(format!(
            "{} fields, expected at least 11",
            toks.len()
        )));
    }
    let shape = |m: String| RowError::Shape(m);
    let size = toks[0]
        .parse()
        .map_err(|_| shape(format!("size `{}` is not a byte count", toks[0])))?;
    let count = toks[1]
        .parse()
        .map_err(|_| shape(format!("count `{}` is not an element count", toks[1])))?;
    let dtype: Dtype = toks[2]
        .parse()
        .map_err(|_| shape(format!("unknown datatype `{}`", toks[2])))?;
    let mut cols = columns.unwrap_or_else(|| guess(&toks));
    // hypercube_perf prints its redop as an empty `%6s`: under a header with the column, the
    // row then has one field fewer and a number where the reduction would be.
    let blank_redop = cols.redop
        && toks[3].parse::<i64>().is_ok()
        && halves(toks.len() - 3 - usize::from(cols.root)).is_some();
    cols.redop &= !blank_redop;
    let mut at = 3;
    let op = if cols.redop {
        at += 1;
        match toks[3] {
            "none" => None,
            o => Some(
                o.parse::<RedOp>()
                    .map_err(|_| shape(format!("unsupported reduction `{o}`")))?,
            ),
        }
    } else {
        None
    };
    let root = if cols.root {
        at += 1;
        toks[at - 1]
            .parse()
            .map_err(|_| shape(format!("root `{}` is not a number", toks[at - 1])))?
    } else {
        -1
    };
    let rest = &toks[at..];
    let (half, timestamp) = halves(rest.len()).ok_or_else(|| {
        shape(format!(
            "{} fields, expected {} ({} with -S)",
            toks.len(),
            at + 8,
            at + 10
        ))
    })?;
    if timestamp && !looks_like_timestamp(rest[2 * half], rest[2 * half + 1]) {
        return Err(shape("trailing fields are not a `-S` timestamp".into()));
    }
    let out_of_place = Some(parse_half(&rest[..half], cputime, cols.wrong_count)?);
    let in_place = Some(parse_half(
        &rest[half..2 * half],
        cputime,
        cols.wrong_count,
    )?);
    let printed = |f: &[&str]| Printed {
        time: Printed::half_unit(f[0]),
        algbw: Printed::half_unit(f[1]),
        busbw: Printed::half_unit(f[2]),
    };
    Ok(LogRow {
        line,
        size,
        count,
        dtype,
        op,
        root,
        out_of_place,
        in_place,
        printed: [printed(&rest[..half]), printed(&rest[half..2 * half])],
    })
}

/// Columns of a row whose table header was not seen, from the row itself.
fn guess(toks: &[&str]) -> Columns {
    let redop = toks[3] == "none" || toks[3].parse::<RedOp>().is_ok();
    let after = 3 + usize::from(redop);
    let root = toks
        .get(after)
        .is_some_and(|t| t.parse::<i64>().is_ok() && halves(toks.len() - after - 1).is_some());
    Columns {
        redop,
        root,
        wrong_count: true,
    }
}

/// Fields per placement and whether a `-S` timestamp follows, for `n` fields after the prefix.
fn halves(n: usize) -> Option<(usize, bool)> {
    match n {
        8 => Some((4, false)),
        10 => Some((4, true)),
        16 => Some((8, false)),
        18 => Some((8, true)),
        _ => None,
    }
}

fn looks_like_timestamp(date: &str, time: &str) -> bool {
    date.len() == 10
        && date.chars().filter(|c| *c == '-').count() == 2
        && time.chars().filter(|c| *c == ':').count() == 2
}

fn parse_half(f: &[&str], cputime: bool, wrong_count: bool) -> Result<Cell, RowError> {
    let num = |s: &str, what: &str| -> Result<Option<f64>, RowError> {
        let v: f64 = s
            .parse()
            .map_err(|_| RowError::NotNumbers(format!("{what} `{s}` is not a number")))?;
        Ok(v.is_finite().then_some(v))
    };
    let time = num(f[0], "time")?;
    let algbw = num(f[1], "algbw")?;
    let busbw = num(f[2], "busbw")?;
    let wrong = match f[3] {
        "N/A" => None,
        // `%e` below a million is the old error column (`0e+00`, `5e-07`): #wrong prints whole
        // numbers there, and `%g` only from 1e6 up.
        w if !wrong_count || (w.contains('e') && num(w, "error")?.is_some_and(|v| v < 1e6)) => {
            num(w, "error")?;
            None
        }
        w => {
            let v = num(w, "#wrong")?
                .ok_or_else(|| RowError::Impossible(format!("#wrong `{w}` is not a count")))?;
            Some(super::sanity::wrong_count(v, w).map_err(RowError::Impossible)?)
        }
    };
    let mut cell = Cell::measured(0.0, 0.0, 0.0, wrong);
    // With -C 1 the column is CPU enqueue time: not the time bandwidths mean, so not recorded.
    cell.time_us = if cputime { None } else { time };
    cell.algbw = algbw;
    cell.busbw = busbw;
    Ok(cell)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: &str) -> LogRow {
        parse(t, 1, false, None).unwrap()
    }

    #[test]
    fn rows_in_every_layout() {
        let r = row("1048576 262144 float sum -1 17.07 61.41 61.41 0 62.12 16.88 16.88 0");
        assert_eq!(
            (r.size, r.count, r.dtype, r.op),
            (1048576, 262144, Dtype::Float, Some(RedOp::Sum))
        );
        let oop = r.out_of_place.unwrap();
        assert_eq!(
            (oop.time_us, oop.busbw, oop.wrong),
            (Some(17.07), Some(61.41), Some(0))
        );
        // alltoall: unchecked in-place prints N/A.
        let r = row("1048576 131072 float none -1 16.53 63.44 31.72 0 16.09 65.16 32.58 N/A");
        assert_eq!(r.op, None);
        assert_eq!(r.in_place.unwrap().wrong, None);
        // -S timestamp.
        let r = row("8 2 float sum -1 12.91 0.00 0.00 0 13.36 0.00 0.00 0 2026-11-30 05:12:09");
        assert_eq!(r.in_place.unwrap().time_us, Some(13.36));
        // -I per-iteration columns, big #wrong in %g form.
        let r =
            row("8 2 float sum -1 12.91 0.00 0.00 1.23457e+06 1 2 3 4 13.36 0.00 0.00 0 1 2 3 4");
        assert_eq!(r.out_of_place.unwrap().wrong, Some(1234570));
        // -C 1: CPU time is not kept.
        let r = parse(
            "8 2 float sum -1 12.91 0.00 0.00 0 13.36 0.00 0.00 0",
            1,
            true,
            None,
        )
        .unwrap();
        assert_eq!(r.out_of_place.unwrap().time_us, None);
        // No root (before 2.11), no redop either (NCCL 2.6 era), broadcast without redop.
        let r = row("33554432 8388608 float sum 1464.2 22.92 45.65 N/A 1458.1 23.01 45.84 N/A");
        assert_eq!((r.op, r.root), (Some(RedOp::Sum), -1));
        let r = row("65536 8192 float 16.57 1.98 1.98 0 13.83 2.37 2.37 0");
        assert_eq!((r.op, r.out_of_place.unwrap().time_us), (None, Some(16.57)));
        let r = row("8 2 float 0 45.82 0.00 0.00 N/A 38.17 0.00 0.00 N/A");
        assert_eq!((r.root, r.out_of_place.unwrap().time_us), (0, Some(45.82)));
        // The old `error` column is an error size, not a count.
        let old = Columns {
            redop: true,
            root: false,
            wrong_count: false,
        };
        let r = parse(
            "8 2 float sum 167.5 0.00 0.00 2e-07 167.1 0.00 0.00 1e-07",
            1,
            false,
            Some(old),
        )
        .unwrap();
        assert_eq!(r.out_of_place.unwrap().wrong, None);
        assert_eq!(
            row("65536 8192 float 16.57 1.98 1.98 0e+00 13.83 2.37 2.37 0e+00")
                .in_place
                .unwrap()
                .wrong,
            None
        );
        for bad in [
            "8 2 float sum -1 12.91 0.00",
            "8 2 floaty sum -1 12.91 0.00 0.00 0 13.36 0.00 0.00 0",
            "8 2 float mulsum -1 12.91 0.00 0.00 0 13.36 0.00 0.00 0",
        ] {
            assert!(
                matches!(parse(bad, 1, false, None), Err(RowError::Shape(_))),
                "{bad}"
            );
        }
        let e = parse(
            "8 2 float none -1 XXXXX XXX.XX XXX.XX N/A XXXXXX XXX.XX XXX.XX N/A",
            1,
            false,
            None,
        );
        assert!(matches!(e, Err(RowError::NotNumbers(_))), "{e:?}");
        let e = parse(
            "8 2 float sum -1 1 0.00 0.00 -3 13.36 0.00 0.00 0",
            1,
            false,
            None,
        );
        assert!(matches!(e, Err(RowError::Impossible(_))), "{e:?}");
    }
}
