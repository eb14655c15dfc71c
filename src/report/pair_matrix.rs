//! The pair matrix of an `over: pairs` test as an SVG heat map: one row and one column per
//! node, each cell the pair's busbw against the median pair. A bad node is a red row (and
//! column) across the matrix; a bad link is one red cell pair. Written by hand rather than with
//! plotters: it is a grid of rectangles, and every cell carries a tooltip naming both hosts.

use std::fmt::Write;

use super::xml::escape as esc;

/// Most nodes drawn: a 1024 × 1024 matrix is already a million cells; beyond that the per-node
/// table and `nodes.json` say more than a picture can.
pub const MAX_NODES: usize = 1024;

/// One pair's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct PairCell {
    pub a: usize,
    pub b: usize,
    /// The graded busbw, when the pair ran far enough to have one.
    pub value: Option<f64>,
    /// The pair's verdict failed (a criterion, a hang, a crash).
    pub failed: bool,
}

/// Red (≤ half the median) through yellow to green (≥ the median).
fn colour(ratio: f64) -> String {
    let t = ((ratio - 0.5) / 0.5).clamp(0.0, 1.0);
    let (r, g) = if t < 0.5 {
        (220.0, 60.0 + 340.0 * t)
    } else {
        (220.0 - 340.0 * (t - 0.5), 230.0)
    };
    format!("rgb({},{},70)", r.round() as u8, g.round() as u8)
}

/// The heat map of `cells` over `hosts` (indices into `hosts`), `unit` naming the value (e.g.
/// `GB/s`). `None` above [`MAX_NODES`].
pub fn pair_matrix_svg(hosts: &[String], cells: &[PairCell], unit: &str) -> Option<String> {
    let n = hosts.len();
    if n > MAX_NODES {
        return None;
    }
    let mut values: Vec<f64> = cells
        .iter()
        .filter_map(|c| c.value)
        .filter(|v| v.is_finite())
        .collect();
    values.sort_by(f64::total_cmp);
    let median = values.get(values.len() / 2).copied().unwrap_or(0.0);
    let cell = (2400 / n.max(1)).clamp(3, 32);
    let labels = cell >= 10;
    let margin = if labels {
        8 * hosts.iter().map(|h| h.len()).max().unwrap_or(0).min(24) + 8
    } else {
        8
    };
    let size = margin + cell * n + 8;
    // Wide enough for the caption below the grid.
    let width = size.max(520);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"11\">",
        size + 20
    );
    let _ = writeln!(
        s,
        "<text x=\"8\" y=\"{}\">pairs: busbw against the median pair ({:.1} {}); red cells failed; grey did not run</text>",
        size + 14,
        median,
        esc(unit)
    );
    if labels {
        for (i, h) in hosts.iter().enumerate() {
            let y = margin + i * cell + cell * 3 / 4;
            let x = margin + i * cell + cell * 3 / 4;
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{y}\" text-anchor=\"end\">{}</text>",
                margin - 4,
                esc(h)
            );
            let _ = writeln!(
                s,
                "<text x=\"{x}\" y=\"{}\" text-anchor=\"start\" transform=\"rotate(-90 {x} {})\">{}</text>",
                margin - 4,
                margin - 4,
                esc(h)
            );
        }
    }
    // Every cell starts grey (not run); the diagonal is a node with itself.
    let _ = writeln!(
        s,
        "<rect x=\"{margin}\" y=\"{margin}\" width=\"{}\" height=\"{}\" fill=\"#ddd\"/>",
        cell * n,
        cell * n
    );
    for i in 0..n {
        let _ = writeln!(
            s,
            "<rect x=\"{}\" y=\"{}\" width=\"{cell}\" height=\"{cell}\" fill=\"#555\"/>",
            margin + i * cell,
            margin + i * cell
        );
    }
    for c in cells.iter().filter(|c| c.a < n && c.b < n && c.a != c.b) {
        let fill = match (c.failed, c.value) {
            (true, _) => "rgb(170,20,20)".to_string(),
            (false, Some(v)) if median > 0.0 => colour(v / median),
            (false, _) => "rgb(120,200,120)".to_string(),
        };
        let what = match c.value {
            Some(v) => format!("{v:.1} {}", esc(unit)),
            None => "no value".into(),
        };
        let verdict = if c.failed { "FAIL" } else { "pass" };
        let title = format!(
            "{} × {}: {what} ({verdict})",
            esc(&hosts[c.a]),
            esc(&hosts[c.b])
        );
        for (r, col) in [(c.a, c.b), (c.b, c.a)] {
            let _ = writeln!(
                s,
                "<rect x=\"{}\" y=\"{}\" width=\"{cell}\" height=\"{cell}\" fill=\"{fill}\"><title>{title}</title></rect>",
                margin + col * cell,
                margin + r * cell
            );
        }
    }
    s.push_str("</svg>\n");
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(n: usize, bad: usize) -> Vec<PairCell> {
        let mut v = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                let failed = a == bad || b == bad;
                v.push(PairCell {
                    a,
                    b,
                    value: Some(if failed { 20.0 } else { 45.0 }),
                    failed,
                });
            }
        }
        v
    }

    #[test]
    fn a_bad_node_is_a_red_row() {
        let hosts: Vec<String> = (1..=6).map(|i| format!("n{i}")).collect();
        let svg = pair_matrix_svg(&hosts, &cells(6, 2), "GB/s").unwrap();
        // Row of n3: every cell but the diagonal is failed.
        let red_in_row = svg
            .lines()
            .filter(|l| {
                l.contains("rgb(170,20,20)") && l.contains(&format!("y=\"{}\"", 8 * 2 + 8 + 32 * 2))
            })
            .count();
        assert_eq!(red_in_row, 5, "{svg}");
        assert_eq!(
            svg.matches("rgb(170,20,20)").count(),
            10,
            "5 pairs, both halves"
        );
        assert!(svg.contains("<title>n3 × n4: 20.0 GB/s (FAIL)</title>"));
        assert!(svg.contains("median pair (45.0 GB/s)"));
    }

    #[test]
    fn labels_are_escaped_and_size_is_bounded() {
        let hosts = vec!["a<b".to_string(), "c&d\u{FFFE}\u{1}".to_string()];
        let svg = pair_matrix_svg(&hosts, &[], "GB/s").unwrap();
        assert!(svg.contains("a&lt;b") && svg.contains("c&amp;d") && !svg.contains("a<b"));
        assert!(
            svg.contains("c&amp;d\u{FFFD}\u{FFFD}"),
            "XML holds no U+FFFE, no C0"
        );
        let many: Vec<String> = (0..MAX_NODES + 1).map(|i| format!("n{i}")).collect();
        assert!(pair_matrix_svg(&many, &[], "GB/s").is_none());
        let big: Vec<String> = (0..1000).map(|i| format!("n{i}")).collect();
        let svg = pair_matrix_svg(&big, &[], "GB/s").unwrap();
        assert!(!svg.contains("<text x=\"4\""), "no labels at 3 px a cell");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
    }

    #[test]
    fn colours_run_from_red_to_green() {
        assert_eq!(colour(0.4), "rgb(220,60,70)");
        assert_eq!(colour(1.2), "rgb(50,230,70)");
        assert_eq!(colour(0.75), "rgb(220,230,70)");
    }
}
