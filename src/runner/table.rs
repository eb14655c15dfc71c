//! The live nccl-tests table, character for character, so grep/awk habits built on
//! `all_reduce_perf` output keep working on baton's (nccl-tests-semantics.md §6).

use std::fmt::Write;

use crate::plan::knobs::Reports;
use crate::results::{Cell, CellStatus, Row};

pub const HEADER: [&str; 3] = [
    "#                                                              out-of-place                       in-place          ",
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         ",
];

/// The header of nccl-tests `-I 1`: each half gains i_min, i_max, i_p99 and i_cv%.
pub const HEADER_ITERATIONS: [&str; 3] = [
    "#                                                                 out-of-place (+ per-iteration)                                in-place (+ per-iteration)",
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv% ",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%) ",
];

/// The three column-head lines as nccl-tests prints them for these reports: `cpu_time` (`-C 1`)
/// relabels both time columns `cputime`; `timestamps` (`-S 1`) adds a `timestamp` column after
/// the in-place half, headed by the strftime format its values follow.
pub fn header(iterations: bool, reports: Reports) -> String {
    let lines = if iterations {
        HEADER_ITERATIONS
    } else {
        HEADER
    };
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        match i {
            1 if reports.cpu_time => out.push_str(&line.replace("   time", "cputime")),
            _ => out.push_str(line),
        }
        if reports.timestamps {
            match i {
                1 => out.push_str(&format!("{:>19}", "timestamp")),
                2 => out.push_str(&format!("{:>19}", TIMESTAMP_FORMAT)),
                _ => {}
            }
        }
        out.push('\n');
    }
    out
}

/// The strftime format of nccl-tests' timestamp column.
const TIMESTAMP_FORMAT: &str = "%Y-%m-%d %H:%M:%S";

/// A cell's RFC 3339 timestamp (UTC, as results record it) in the column's format; nccl-tests
/// prints the node's local time, which on a UTC node is the same text.
fn timestamp_text(rfc3339: &str) -> String {
    match rfc3339.get(..19) {
        Some(t) => t.replacen('T', " ", 1),
        None => String::new(),
    }
}

/// nccl-tests' `getFloatStr`: 2 decimals if they fit `width`, else 1, else 0, else exponent form.
pub fn float_str(v: f64, width: usize) -> String {
    for decimals in [2, 1, 0] {
        let s = format!("{v:.decimals$}");
        if s.len() <= width {
            return format!("{s:>width$}");
        }
    }
    let prec = if width >= 7 { 1 } else { 0 };
    format!("{:>width$}", c_exp(v, prec))
}

/// C's `%.{prec}e`: mantissa, `e`, sign and at least two exponent digits.
fn c_exp(v: f64, prec: usize) -> String {
    let s = format!("{v:.prec$e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

/// C's `%6g` for a non-negative count.
pub fn g6(v: u64) -> String {
    if v < 1_000_000 {
        return format!("{v:>6}");
    }
    let mut e = (v as f64).log10().floor() as i32;
    let mut m = v as f64 / 10f64.powi(e);
    m = (m * 1e5).round() / 1e5;
    if m >= 10.0 {
        m /= 10.0;
        e += 1;
    }
    let ms = format!("{m:.5}");
    let ms = ms.trim_end_matches('0').trim_end_matches('.');
    format!("{ms}e+{e:02}")
}

fn half(out: &mut String, cell: Option<&Cell>, cpu_time: bool) {
    match cell {
        Some(c) if c.status == CellStatus::Ok => {
            // -C swaps the time column for the host's enqueue time; bandwidths stay derived
            // from the measured time.
            let t = if cpu_time { c.cpu_time_us } else { c.time_us };
            let t = t.unwrap_or(0.0);
            let _ = write!(
                out,
                "  {}  {}  {}",
                float_str(t, 7),
                float_str(c.algbw.unwrap_or(0.0), 6),
                float_str(c.busbw.unwrap_or(0.0), 6)
            );
            match c.wrong {
                Some(w) => {
                    let _ = write!(out, "  {}", g6(w));
                }
                _ => out.push_str("    N/A"),
            }
            if let Some(it) = &c.iterations {
                let i = &it.summary;
                for v in [i.min_us, i.max_us, i.p99_us, i.cv_pct] {
                    let _ = write!(out, "  {}", float_str(v, 7));
                }
            }
        }
        Some(c) => {
            let word = match c.status {
                CellStatus::Timeout => "timeout",
                CellStatus::Skipped => "skipped",
                _ => "error",
            };
            let _ = write!(out, "  {word:>7}  {:>6}  {:>6}    N/A", "-", "-");
        }
        None => {
            let _ = write!(out, "  {:>7}  {:>6}  {:>6}    N/A", "-", "-", "-");
        }
    }
}

/// One data row: the prefix then both halves (`type`, `redop`, `root` as nccl-tests prints them:
/// `none` for non-reducing collectives — empty for hypercube —, `-1` for rootless ones), and
/// with `timestamps` when the row's last half finished, as nccl-tests `-S 1` ends the line.
pub fn row(r: &Row, dtype: &str, redop: &str, root: i64, reports: Reports) -> String {
    let mut s = format!(
        "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}",
        r.size, r.count, dtype, redop, root
    );
    half(&mut s, r.out_of_place.as_ref(), reports.cpu_time);
    half(&mut s, r.in_place.as_ref(), reports.cpu_time);
    if reports.timestamps {
        let at = [&r.in_place, &r.out_of_place]
            .into_iter()
            .flatten()
            .find_map(|c| c.timestamp.as_deref())
            .map(timestamp_text)
            .unwrap_or_default();
        s.push_str(&format!("{at:>21}"));
    }
    s
}

/// The two footer lines with values: out-of-bounds cell count and the average bus bandwidth.
pub fn footer(failing_cells: u64, avg_busbw: f64, program: &str) -> String {
    format!(
        "# Out of bounds values : {failing_cells} {}\n# Avg bus bandwidth    : {} \n#\n# Collective test concluded: {program}\n#\n",
        if failing_cells == 0 { "OK" } else { "FAILED" },
        g_general(avg_busbw)
    )
}

/// C's `%g` for a general float (6 significant digits, trailing zeros removed).
pub fn g_general(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if !v.is_finite() {
        return "nan".into();
    }
    let e = v.abs().log10().floor() as i32;
    if (-4..6).contains(&e) {
        let decimals = (5 - e).max(0) as usize;
        let s = format!("{v:.decimals$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    } else {
        let s = c_exp(v, 5);
        match s.split_once('e') {
            Some((m, rest)) => {
                let m = if m.contains('.') {
                    m.trim_end_matches('0').trim_end_matches('.')
                } else {
                    m
                };
                format!("{m}e{rest}")
            }
            None => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_widths_like_get_float_str() {
        assert_eq!(float_str(12.91, 7), "  12.91");
        assert_eq!(float_str(12506.3, 7), "12506.3");
        assert_eq!(float_str(1234567.9, 7), "1234568");
        assert_eq!(float_str(99999.9, 6), "100000");
        assert_eq!(float_str(1e7, 7), "1.0e+07");
        assert_eq!(float_str(343.42, 6), "343.42");
        assert_eq!(float_str(0.0, 6), "  0.00");
    }

    #[test]
    fn g_formats() {
        assert_eq!(g6(0), "     0");
        assert_eq!(g6(1234567), "1.23457e+06");
        assert_eq!(g6(1000000), "1e+06");
        assert_eq!(g_general(111.447), "111.447");
        assert_eq!(g_general(54.43164), "54.4316");
        assert_eq!(g_general(0.000905), "0.000905");
        assert_eq!(g_general(1234567.0), "1.23457e+06");
    }

    #[test]
    fn rows_match_the_fixture_byte_for_byte() {
        let fixture = include_str!("../../tests/data/nccl-tests/h200x2/all_reduce.txt");
        let line = fixture
            .lines()
            .find(|l| l.trim_start().starts_with("4294967296"))
            .unwrap();
        let r = Row {
            requested: 4294967296,
            size: 4294967296,
            count: 1073741824,
            out_of_place: Some(Cell::measured(12506.3, 343.42, 343.42, Some(0))),
            in_place: Some(Cell::measured(12415.3, 345.94, 345.94, Some(0))),
        };
        assert_eq!(row(&r, "float", "sum", -1, Reports::default()), line);
        for (i, h) in HEADER.iter().enumerate() {
            assert!(fixture.lines().any(|l| l == *h), "header line {i} differs");
        }
        let f = footer(0, 111.447, "all_reduce_perf");
        assert!(fixture.contains(&f), "footer differs:\n{f}");
        let a2a = include_str!("../../tests/data/nccl-tests/h200x2/alltoall.txt");
        let line = a2a
            .lines()
            .find(|l| l.trim_start().starts_with("1048576 "))
            .unwrap();
        let r = Row {
            requested: 1048576,
            size: 1048576,
            count: 131072,
            out_of_place: Some(Cell::measured(16.53, 63.44, 31.72, Some(0))),
            in_place: Some(Cell::measured(16.09, 65.16, 32.58, None)),
        };
        assert_eq!(row(&r, "float", "none", -1, Reports::default()), line);
    }

    /// Expected lines are nccl-tests' `writeResultHeader`/`writeBenchmarkLineBody` format strings
    /// filled in by hand (printf), not baton's own output.
    #[test]
    fn cpu_time_relabels_and_timestamps_add_a_column_like_c_and_s() {
        let both = Reports {
            cpu_time: true,
            timestamps: true,
            memory: false,
        };
        let h = header(false, both);
        let lines: Vec<&str> = h.lines().collect();
        assert_eq!(lines[0], HEADER[0]);
        assert_eq!(
            lines[1],
            "#       size         count      type   redop    root  cputime   algbw   busbw  #wrong  cputime   algbw   busbw  #wrong           timestamp"
        );
        assert_eq!(
            lines[2],
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)           %Y-%m-%d %H:%M:%S"
        );
        assert_eq!(header(false, Reports::default()), HEADER.join("\n") + "\n");
        let it = header(true, both);
        assert_eq!(it.lines().nth(1).unwrap().matches("cputime").count(), 2);
        assert!(
            it.lines()
                .nth(2)
                .unwrap()
                .ends_with("(%)   %Y-%m-%d %H:%M:%S")
        );

        let cell = |t: f64, cpu: f64, a: f64, b: f64| {
            let mut c = Cell::measured(t, a, b, Some(0));
            c.cpu_time_us = Some(cpu);
            c.timestamp = Some("2026-12-02T06:05:00Z".into());
            c
        };
        let r = Row {
            requested: 1024,
            size: 1024,
            count: 256,
            out_of_place: Some(cell(9.0, 3.5, 20.0, 30.0)),
            in_place: Some(cell(9.5, 4.25, 21.0, 31.0)),
        };
        assert_eq!(
            row(&r, "float", "sum", -1, both),
            "        1024           256     float     sum      -1     3.50   20.00   30.00       0     4.25   21.00   31.00       0  2026-12-02 06:05:00"
        );
        let plain = row(&r, "float", "sum", -1, Reports::default());
        assert!(
            plain.contains("   9.00   20.00") && !plain.contains("2026"),
            "{plain}"
        );
    }
}
