//! `nccl_tests_min_bw`: nccl-tests' `NCCL_TESTS_MIN_BW` check by name, through the real binary:
//! the average busbw over every cell against 0.9 × the figure, in `check`, `grade` and the
//! report, on an ingested nccl-tests log.

use crate::common;

use common::*;

fn min_bw_plan(d: &std::path::Path, name: &str, value: &str) -> std::path::PathBuf {
    two_gpu_plan(
        d,
        name,
        &format!("{ALLREDUCE_SWEEP}    expect:\n      - nccl_tests_min_bw: {value}\n"),
    )
}

#[test]
fn the_average_busbw_is_held_to_nine_tenths_of_the_figure() {
    let d = tmp("min_bw_grade");
    let r = ingest(
        &d,
        "r.json",
        &[&fixture("all_reduce.txt")],
        Some("allreduce"),
    );
    // The log's `# Avg bus bandwidth` is 111.447: below 123 but above 0.9 × 123 = 110.7, so
    // nccl-tests would print OK, and so does baton.
    let pl = min_bw_plan(&d, "ok.yaml", "123");
    let o = baton(&["grade", p(&pl), p(&r), "--format", "json"]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let out = stdout(&o);
    assert!(
        out.contains("average busbw 111.45 GB/s over 62 cell(s) of all_reduce float sum >= 110.7 GB/s (0.9 × NCCL_TESTS_MIN_BW 123 GB/s); the log printed `# Avg bus bandwidth : 111.45`"),
        "{out}"
    );
    // 0.9 × 124 = 111.6: nccl-tests would print FAILED.
    let pl = min_bw_plan(&d, "low.yaml", "\"124 GB/s\"");
    let o = baton(&["grade", p(&pl), p(&r)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stdout(&o).contains(
            "< 111.6 GB/s (0.9 × NCCL_TESTS_MIN_BW 124 GB/s): nccl-tests would print FAILED"
        ),
        "{}",
        show(&o)
    );
    let md = report_md(&d, &pl, &r);
    assert!(md.contains("nccl_tests_min_bw 124 GB/s"), "{md}");
}

#[test]
fn check_reads_the_figure_and_refuses_a_comparison_or_nothing() {
    let d = tmp("min_bw_check");
    let o = baton(&["check", p(&min_bw_plan(&d, "a.yaml", "300"))]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let o = baton(&["expand", p(&min_bw_plan(&d, "a.yaml", "300"))]);
    assert!(
        stdout(&o).contains("nccl_tests_min_bw 300 GB/s (average busbw >= 270 GB/s)"),
        "{}",
        show(&o)
    );
    for (value, why) in [
        ("\">= 300 GB/s\"", "written without a comparison"),
        ("0", "must be above 0"),
        ("\"300 apples\"", "`nccl_tests_min_bw`:"),
        ("true", "must be a bandwidth, found a boolean"),
    ] {
        let o = baton(&["check", p(&min_bw_plan(&d, "b.yaml", value))]);
        assert_eq!(code(&o), 2, "{value}: {}", show(&o));
        assert!(stderr(&o).contains(why), "{value}: {}", show(&o));
        assert!(stderr(&o).contains("b.yaml:10:"), "{value}: {}", show(&o));
    }
}

/// With `NCCL_TESTS_MIN_BW` set nccl-tests appends OK or FAILED to its average: the average is
/// still read.
#[test]
fn a_log_that_ran_with_the_variable_keeps_its_average() {
    let d = tmp("min_bw_ingest");
    let text = std::fs::read_to_string(fixture("all_reduce.txt"))
        .unwrap()
        .replace(
            "# Avg bus bandwidth    : 111.447 ",
            "# Avg bus bandwidth    : 111.447 FAILED",
        );
    let log = write(&d, "ar.txt", &text);
    let r = ingest(&d, "r.json", &[&log], Some("allreduce"));
    let results = baton::results::read(&r).unwrap();
    assert_eq!(results.jobs[0].reported_avg_busbw, Some(111.447));
}
