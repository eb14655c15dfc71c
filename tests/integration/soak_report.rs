//! A soak in the report (#23): one size over many repeats is drawn as busbw per repeat over
//! time, with the median, the band of its `variance` criterion and the worst repeat marked —
//! not one dot on a size axis; Markdown gets the same figures in words. A real `baton run` on
//! the host MPI backend.

use crate::common;
use common::{code, read, show};

const SOAK: &str = "version: 1
name: soak
backend: mpi
launch: { nodes: 1, ranks_per_node: 2 }
tests:
  - name: soak
    collective: all_reduce
    sizes: [64K]
    iters: 5
    warmup: 1
    repeat: 4
    expect:
      - wrong: 0
      - variance: \"<= 5%\"
";

#[test]
fn a_soak_is_drawn_per_repeat_over_time_with_its_band_median_and_worst() {
    let run = common::run_plan("soak-chart", SOAK, &[]);
    assert!([0, 1].contains(&code(&run.output)), "{}", show(&run.output));
    let report = run.out.join("report");
    let svg = read(&report.join("charts/01-soak.svg"));
    for want in [
        "seconds since the first repeat",
        "median ",
        "±5% of the median (variance criterion)",
        "worst: repeat ",
        "busbw at 64K (GB/s)",
    ] {
        assert!(svg.contains(want), "no `{want}` in the soak chart: {svg}");
    }
    assert!(
        !svg.contains("requested size (log scale)"),
        "not the size chart"
    );
    let md = read(&report.join("report.md"));
    let line = md
        .lines()
        .find(|l| l.starts_with("Soak at 64K: 4 repeats"))
        .unwrap_or_else(|| panic!("no soak figures in the Markdown: {md}"));
    assert!(
        line.contains("median ") && line.contains("band ±5% (") && line.contains("worst repeat "),
        "{line}"
    );
    assert!(
        md.contains("![busbw per repeat over time for soak]"),
        "{md}"
    );
    let html = read(&report.join("report.html"));
    assert!(
        html.contains("<p class=\"soak\">Soak at 64K: 4 repeats"),
        "{html}"
    );
}
