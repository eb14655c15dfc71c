//! The pair matrix of an `over: pairs` test as an SVG heat map: one row and one column per
//! node, each cell the pair's busbw against the median pair. A bad node is a red row (and
//! column) across the matrix; a bad link is one red cell pair. Written by hand rather than with
//! plotters: it is a grid of rectangles, and every cell carries a tooltip naming both hosts.

use std::fmt::Write;

use super::xml::escape as esc;

/// Most nodes drawn: a 1024 × 1024 matrix is already a million cells; beyond that the per-node
/// table and `nodes.json` say more than a picture can.
pub const MAX_NODES: usize = 1024;

/// How a pair ended, as the matrix draws it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// Its verdict failed (a criterion, a hang, a crash): red.
    Failed,
    /// Never started (the run stopped first): grey, like a pair not scheduled.
    NotRun,
    /// Never started because a node of it was proven dead earlier: grey with a cross, so a dead
    /// node's row reads as "not measured", not as a row of bad links.
    NodeDead,
}

/// One pair's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct PairCell {
    pub a: usize,
    pub b: usize,
    /// The graded busbw, when the pair ran far enough to have one.
    pub value: Option<f64>,
    pub outcome: Outcome,
}

const FAILED: &str = "rgb(170,20,20)";
const NOT_RUN: &str = "#ddd";
const DEAD: &str = "#aaa";

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

/// The caption under the grid, with a swatch per kind of cell, so the colours read alike on
/// screen and on paper.
fn legend(s: &mut String, y: usize, median: f64, unit: &str) {
    let _ = write!(
        s,
        "<text x=\"8\" y=\"{y}\">pairs: busbw against the median pair ({} {}):</text>",
        crate::grade::num(median),
        esc(unit)
    );
    let top = y - 9;
    let mut x = 300;
    for (fill, dead, text) in [
        (FAILED, false, "failed"),
        (NOT_RUN, false, "not run"),
        (DEAD, true, "not run: node dead"),
    ] {
        let _ = write!(
            s,
            "<rect x=\"{x}\" y=\"{top}\" width=\"10\" height=\"10\" fill=\"{fill}\" stroke=\"#555\" stroke-width=\"0.5\"/>"
        );
        if dead {
            cross(s, x, top, 10);
        }
        let _ = write!(s, "<text x=\"{}\" y=\"{y}\">{text}</text>", x + 13);
        x += 13 + 7 * text.len() + 12;
    }
    s.push('\n');
}

/// The mark of a pair not run for a dead node: a cross over the cell.
fn cross(s: &mut String, x: usize, y: usize, cell: usize) {
    let (x1, y1) = (x + cell, y + cell);
    let _ = writeln!(
        s,
        "<path d=\"M{x} {y}L{x1} {y1}M{x1} {y}L{x} {y1}\" stroke=\"#555\" stroke-width=\"1\"/>"
    );
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
    let width = size.max(600);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"11\">",
        size + 20
    );
    legend(&mut s, size + 14, median, unit);
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
        "<rect x=\"{margin}\" y=\"{margin}\" width=\"{}\" height=\"{}\" fill=\"{NOT_RUN}\"/>",
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
        let fill = match (c.outcome, c.value) {
            (Outcome::Failed, _) => FAILED.to_string(),
            (Outcome::NotRun, _) => NOT_RUN.to_string(),
            (Outcome::NodeDead, _) => DEAD.to_string(),
            (Outcome::Passed, Some(v)) if median > 0.0 => colour(v / median),
            (Outcome::Passed, _) => "rgb(120,200,120)".to_string(),
        };
        let what = match c.value {
            // Two decimals, or two significant digits: a host-memory pair's 0.005 is not 0.0.
            Some(v) => format!("{} {}", crate::grade::num(v), esc(unit)),
            None => "no value".into(),
        };
        let verdict = match c.outcome {
            Outcome::Passed => "pass",
            Outcome::Failed => "FAIL",
            Outcome::NotRun => "not run",
            Outcome::NodeDead => "not run: node dead",
        };
        let title = format!(
            "{} × {}: {what} ({verdict})",
            esc(&hosts[c.a]),
            esc(&hosts[c.b])
        );
        for (r, col) in [(c.a, c.b), (c.b, c.a)] {
            let (x, y) = (margin + col * cell, margin + r * cell);
            let _ = writeln!(
                s,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{cell}\" height=\"{cell}\" fill=\"{fill}\"><title>{title}</title></rect>",
            );
            if c.outcome == Outcome::NodeDead {
                cross(&mut s, x, y, cell);
            }
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
                    outcome: if failed {
                        Outcome::Failed
                    } else {
                        Outcome::Passed
                    },
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
            svg.matches("rgb(170,20,20)\"><title>").count(),
            10,
            "5 pairs, both halves"
        );
        assert!(svg.contains("<title>n3 × n4: 20 GB/s (FAIL)</title>"));
        assert!(svg.contains("median pair (45 GB/s)"));
    }

    /// Pairs that never ran are grey, those of a dead node grey with a cross, never red; the
    /// legend names all three.
    #[test]
    fn pairs_not_run_are_grey_and_a_dead_nodes_are_crossed() {
        let hosts: Vec<String> = (1..=4).map(|i| format!("n{i}")).collect();
        let cell = |a, b, outcome| PairCell {
            a,
            b,
            value: None,
            outcome,
        };
        let svg = pair_matrix_svg(
            &hosts,
            &[
                cell(0, 1, Outcome::Failed),
                cell(2, 3, Outcome::NodeDead),
                cell(0, 2, Outcome::NotRun),
            ],
            "GB/s",
        )
        .unwrap();
        assert_eq!(svg.matches("rgb(170,20,20)\"><title>").count(), 2);
        assert!(
            svg.contains("fill=\"#aaa\"><title>n3 × n4: no value (not run: node dead)</title>")
        );
        assert!(svg.contains("fill=\"#ddd\"><title>n1 × n3: no value (not run)</title>"));
        // Two crosses over the dead pair's cells, one on its swatch.
        assert_eq!(svg.matches("<path d=").count(), 3, "{svg}");
        for word in [">failed<", ">not run<", ">not run: node dead<"] {
            assert!(svg.contains(word), "legend lacks {word}: {svg}");
        }
        assert!(!svg.contains("grey did not run"));
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

    /// The heat map sits inside the HTML report: a label escapes as the report's own text does,
    /// `'` included (it was left as is here while `html::esc` wrote `&#39;`).
    #[test]
    fn a_label_escapes_as_the_html_report_does() {
        let host = "o'hare<&>\"x".to_string();
        let svg = pair_matrix_svg(std::slice::from_ref(&host), &[], "GB/s").unwrap();
        assert!(svg.contains(&super::super::html::esc(&host)), "{svg}");
        assert!(!svg.contains("o'hare"), "{svg}");
    }

    #[test]
    fn small_values_keep_their_digits() {
        let hosts: Vec<String> = (1..=2).map(|i| format!("n{i}")).collect();
        let c = PairCell {
            a: 0,
            b: 1,
            value: Some(0.0052),
            outcome: Outcome::Passed,
        };
        let svg = pair_matrix_svg(&hosts, &[c], "GB/s").unwrap();
        assert!(
            svg.contains("median pair (0.0052 GB/s)")
                && svg.contains("n1 × n2: 0.0052 GB/s (pass)"),
            "{svg}"
        );
    }

    #[test]
    fn colours_run_from_red_to_green() {
        assert_eq!(colour(0.4), "rgb(220,60,70)");
        assert_eq!(colour(1.2), "rgb(50,230,70)");
        assert_eq!(colour(0.75), "rgb(220,230,70)");
    }
}
