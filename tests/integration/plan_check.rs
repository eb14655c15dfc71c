//! One test per class of plan error: each asserts the line (and column where it matters) and the
//! text a user sees.

use crate::common;

use baton::plan::{Diagnostic, Level, Plan, Report, parse_str};
use common::env_pairs;

const HEAD: &str = "version: 1\nname: t\n";

fn report(yaml: &str) -> Report {
    match parse_str("plan.yaml", yaml) {
        Ok(l) => l.report,
        Err(r) => r,
    }
}

fn errors(yaml: &str) -> Vec<Diagnostic> {
    report(yaml)
        .diagnostics
        .into_iter()
        .filter(|d| d.level == Level::Error)
        .collect()
}

/// The single error of `yaml`, asserting its line and that its message contains `text`.
#[track_caller]
fn one_error(yaml: &str, line: u64, text: &str) -> Diagnostic {
    let errs = errors(yaml);
    assert_eq!(errs.len(), 1, "expected one error, got {errs:#?}");
    let e = errs.into_iter().next().unwrap();
    assert!(
        e.message.contains(text),
        "message {:?} lacks {text:?}",
        e.message
    );
    assert_eq!(
        e.pos.map(|p| p.line),
        Some(line),
        "wrong line for {:?}",
        e.message
    );
    e
}

/// The plan of `yaml`, which must be valid: for tests about what a valid plan means.
fn parsed(yaml: &str) -> Plan {
    parse_str("plan.yaml", yaml).unwrap().plan
}

/// The IDs of the jobs `plan` expands to, in order: what the expansion checks compare.
fn job_ids(plan: &Plan) -> Vec<String> {
    baton::expand::expand(plan)
        .jobs
        .into_iter()
        .map(|j| j.id)
        .collect()
}

fn test_body(body: &str) -> String {
    format!(
        "{HEAD}tests:\n  - name: a\n    collective: all_reduce\n    sizes: {{ from: 8, to: 1G, factor: 2 }}\n{body}"
    )
}

#[test]
fn valid_plan_has_no_diagnostics() {
    let r = report(&test_body(
        "    expect:\n      - busbw: \">= 300 GB/s\"\n        at: 1G\n",
    ));
    assert!(r.diagnostics.is_empty(), "{:#?}", r.diagnostics);
}

#[test]
fn yaml_syntax_error_names_its_line() {
    let e = one_error(
        &format!("{HEAD}tests:\n  - name: a\n    sizes: [1G, 4G\n"),
        5,
        "invalid YAML",
    );
    assert!(e.pos.unwrap().col > 0);
}

#[test]
fn unknown_key_suggests_the_nearest() {
    let yaml = format!(
        "{HEAD}tests:\n  - name: a\n    colective: all_reduce\n    collective: all_reduce\n    sizes: [1G]\n"
    );
    let e = one_error(
        &yaml,
        5,
        "unknown key `colective` — did you mean `collective`?",
    );
    assert_eq!(e.pos.unwrap().col, 5);
    assert!(e.help.unwrap().contains("collective"));
}

#[test]
fn unknown_top_level_key_and_missing_key_are_reported_together() {
    let errs = errors("version: 1\nname: t\nbackned: mpi\n");
    let msgs: Vec<&str> = errs.iter().map(|e| e.message.as_str()).collect();
    assert!(
        msgs.iter().any(|m| m.contains("did you mean `backend`")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|m| m.contains("missing required key `tests`")),
        "{msgs:?}"
    );
}

#[test]
fn missing_required_key_points_at_its_mapping() {
    one_error(
        &format!("{HEAD}tests:\n  - name: a\n    collective: all_reduce\n"),
        4,
        "missing required key `sizes`",
    );
}

#[test]
fn collective_is_given_exactly_once() {
    // Neither: the error points at the test.
    let e = one_error(
        &format!("{HEAD}tests:\n  - sizes: [1M]\n    name: a\n"),
        4,
        "missing `collective` (or a `matrix.collective` axis)",
    );
    assert_eq!(e.pos.unwrap().col, 5);
    // Both, whether the field is one name or a list: the error points at the axis.
    let both = "collectives are given both in `collective` and in `matrix.collective`; keep one";
    one_error(
        &test_body("    matrix:\n      collective: [broadcast, reduce]\n"),
        8,
        both,
    );
    one_error(
        &test_body("    matrix:\n      collective: [broadcast]\n")
            .replace("collective: all_reduce", "collective: [all_reduce, reduce]"),
        8,
        both,
    );
    // The axis alone is the test's collectives, and names its jobs.
    let y = format!(
        "{HEAD}tests:\n  - name: a\n    sizes: [1M]\n    matrix:\n      collective: [broadcast, reduce]\n"
    );
    assert_eq!(
        job_ids(&parsed(&y)),
        ["a[collective=broadcast]", "a[collective=reduce]"]
    );
}

#[test]
fn wrong_type_is_named() {
    one_error(
        &test_body("    iters: twenty\n"),
        7,
        "must be an integer, found a string",
    );
    one_error(&test_body("    expect: busbw\n"), 7, "must be a list");
}

#[test]
fn duplicate_key_names_the_first_occurrence() {
    let e = one_error(
        &format!("{HEAD}name: u\ntests: []\n"),
        3,
        "duplicate key `name` (first set on line 2)",
    );
    assert!(!e.message.contains("DuplicateKeyPolicy"), "{}", e.message);
    // Every duplicate at once, nested ones too.
    let errs = errors(&test_body("    env: { A: 1, A: 2 }\n    sizes: [1M]\n"));
    let msgs: Vec<(&str, u64)> = errs
        .iter()
        .map(|e| (e.message.as_str(), e.pos.unwrap().line))
        .collect();
    assert_eq!(
        msgs,
        [
            ("duplicate key `A` (first set on line 7)", 7),
            ("duplicate key `sizes` (first set on line 6)", 8)
        ]
    );
}

#[test]
fn a_second_yaml_document() {
    let e = one_error(
        &format!("{}---\nversion: 1\n", test_body("")),
        7,
        "a plan is one YAML document; found a second one (`---`)",
    );
    assert_eq!(
        e.message,
        "a plan is one YAML document; found a second one (`---`)"
    );
}

#[test]
fn yaml_limits_are_plain_sentences() {
    let deep = format!("{HEAD}tests: {}{}\n", "[".repeat(60), "]".repeat(60));
    let e = one_error(&deep, 3, "the plan nests deeper than 48 levels");
    assert!(!e.message.contains("budget"), "{}", e.message);
    let mut block = String::from(HEAD);
    for i in 0..60 {
        block.push_str(&format!("{}k{i}:\n", " ".repeat(i)));
    }
    one_error(&block, 51, "the plan nests deeper than 48 levels");
    let nodes = format!("{HEAD}tests: [{}]\n", vec!["1"; 200_001].join(","));
    one_error(&nodes, 3, "the plan has more than 200000 YAML nodes");
    let mut bomb = format!("{HEAD}a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..8 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [{}]\n",
            vec![format!("*a{p}"); 10].join(", ")
        ));
    }
    one_error(&bomb, 7, "too many alias expansions (YAML alias bomb?)");
    let many = format!("{HEAD}a: &a x\nl: [{}]\n", vec!["*a"; 1_001].join(", "));
    one_error(&many, 4, "too many alias expansions (YAML alias bomb?)");
    one_error(
        &format!("{HEAD}tests: *nowhere\n"),
        3,
        "this alias names no anchor defined before it",
    );
}

#[test]
fn unsupported_version() {
    let e = one_error(
        &test_body("").replace("version: 1", "version: 2"),
        1,
        "unsupported plan version `2`",
    );
    assert_eq!(e.pos.unwrap().col, 10);
}

#[test]
fn bad_plan_and_test_names() {
    one_error(
        &test_body("").replace("name: t", "name: \"a b\""),
        2,
        "plan name `a b`",
    );
    one_error(
        &test_body("").replace("- name: a", "- name: \"x;rm -rf\""),
        4,
        "test name `x;rm -rf`",
    );
}

#[test]
fn unknown_backend() {
    one_error(
        &test_body("").replace("name: t\n", "name: t\nbackend: cuda\n"),
        3,
        "unknown backend `cuda`",
    );
}

#[test]
fn unknown_collective_dtype_op_list_the_valid_ones() {
    let e = one_error(
        &test_body("").replace("all_reduce", "allreduce"),
        5,
        "did you mean `all_reduce`?",
    );
    assert!(e.help.unwrap().contains("reduce_scatter"));
    let e = one_error(
        &test_body("    dtype: flaot\n"),
        7,
        "unknown dtype `flaot` — did you mean `float`?",
    );
    assert!(e.help.unwrap().contains("bfloat16"));
    one_error(
        &test_body("    op: summ\n"),
        7,
        "unknown op `summ` — did you mean `sum`?",
    );
    one_error(
        &test_body("    average: mean\n"),
        7,
        "unknown average mode `mean`",
    );
}

#[test]
fn sizes_from_greater_than_to() {
    let y = format!(
        "{HEAD}tests:\n  - name: a\n    collective: all_reduce\n    sizes: {{ from: 8G, to: 8, factor: 2 }}\n"
    );
    one_error(&y, 6, "`sizes.from` (8G) is larger than `sizes.to` (8)");
}

#[test]
fn factor_at_most_one() {
    let y = format!(
        "{HEAD}tests:\n  - name: a\n    collective: all_reduce\n    sizes: {{ from: 8, to: 8G, factor: 1 }}\n"
    );
    one_error(&y, 6, "`sizes.factor` must be a whole number ≥ 2");
}

#[test]
fn bad_size_text() {
    let y = format!("{HEAD}tests:\n  - name: a\n    collective: all_reduce\n    sizes: [1G, 8X]\n");
    one_error(&y, 6, "unknown size suffix `X`");
    let y = format!("{HEAD}tests:\n  - name: a\n    collective: all_reduce\n    sizes: [0]\n");
    one_error(&y, 6, "must be a positive size");
}

#[test]
fn empty_list_and_empty_matrix_axis() {
    let y = format!("{HEAD}tests:\n  - name: a\n    collective: all_reduce\n    sizes: []\n");
    one_error(&y, 6, "`sizes` is an empty list");
    one_error(
        &test_body("    matrix:\n      dtype: []\n"),
        8,
        "matrix axis `dtype` is empty",
    );
    one_error(&format!("{HEAD}tests: []\n"), 3, "`tests` is empty");
}

#[test]
fn split_that_does_not_parse() {
    one_error(
        &test_body("    split: \"XOR 3\"\n"),
        7,
        "split `XOR 3` has no operator",
    );
    one_error(&test_body("    split: \"DIV 0\"\n"), 7, "divides by zero");
    one_error(
        &test_body("    split: \"MOD eight\"\n"),
        7,
        "no valid number",
    );
}

#[test]
fn duplicate_test_names() {
    let y = format!(
        "{}  - name: a\n    collective: broadcast\n    sizes: [1M]\n",
        test_body("")
    );
    let e = one_error(&y, 7, "duplicate test name `a`");
    assert!(e.label.unwrap().contains("line 4"));
}

#[test]
fn thresholds_without_units_or_with_garbage() {
    one_error(
        &test_body("    expect:\n      - busbw: \">= 340\"\n"),
        8,
        "has no unit",
    );
    one_error(
        &test_body("    expect:\n      - busbw: \"fast\"\n"),
        8,
        "no comparison",
    );
    one_error(
        &test_body("    expect:\n      - busbw: \">= 400 Gb/s\"\n"),
        8,
        "bits per second",
    );
    one_error(
        &test_body("    expect:\n      - time: \"<= 20 GB/s\"\n"),
        8,
        "unknown unit `GB/s`",
    );
    one_error(
        &test_body("    expect:\n      - regression: \">= 5%\"\n"),
        8,
        "use <= or <",
    );
}

#[test]
fn negative_or_zero_counts() {
    one_error(
        &test_body("    iters: 0\n"),
        7,
        "`iters` is 0; it must be at least 1",
    );
    one_error(&test_body("    warmup: -1\n"), 7, "`warmup` is -1");
    one_error(&test_body("    repeat: 0\n"), 7, "`repeat` is 0");
    one_error(
        &test_body("").replace("name: t\n", "name: t\nlaunch: { nodes: 0 }\n"),
        3,
        "`launch.nodes` is 0",
    );
}

#[test]
fn counts_above_their_limit_name_the_limit() {
    let e = one_error(
        &test_body("    repeat: 1000001\n"),
        7,
        "`repeat` is 1000001; it must be at most 1000000",
    );
    assert_eq!(e.label.as_deref(), Some("must be at most 1000000"));
    assert!(errors(&test_body("    repeat: 1000000\n")).is_empty());
    one_error(
        &test_body("    iters: 5000000000\n"),
        7,
        "`iters` is 5000000000; it must be at most 4294967295",
    );
}

#[test]
fn at_that_no_swept_size_reaches() {
    let e = one_error(
        &test_body("    expect:\n      - busbw: \">= 1 GB/s\"\n        at: 16G\n"),
        9,
        "`at: 16G` matches none",
    );
    assert!(e.message.contains("28 sizes from 8 to 1G"));
    one_error(
        &test_body("    expect:\n      - busbw: \">= 1 GB/s\"\n        at: \">= 2G\"\n"),
        9,
        "matches none",
    );
}

#[test]
fn root_out_of_range_when_the_layout_is_known() {
    let y = format!(
        "{HEAD}launch: {{ nodes: 2, ranks_per_node: 8 }}\ntests:\n  - name: b\n    collective: broadcast\n    sizes: [1M]\n    split: \"DIV 8\"\n    root: 8\n"
    );
    one_error(
        &y,
        9,
        "root 8 is out of range: the smallest split group has 8 ranks",
    );
    // Without a layout the check waits for `run`.
    let y = format!(
        "{HEAD}tests:\n  - name: b\n    collective: broadcast\n    sizes: [1M]\n    root: 8\n"
    );
    assert!(errors(&y).is_empty());
}

/// nccl-tests' hypercube_perf skips a group size that is not a power of two; `check` says so
/// before anything runs, when the layout is known.
#[test]
fn hypercube_on_a_group_size_not_a_power_of_two_is_refused() {
    let y = format!(
        "{HEAD}launch: {{ nodes: 1, ranks_per_node: 6 }}\ntests:\n  - name: h\n    collective: [all_gather, hypercube]\n    sizes: [1M]\n"
    );
    one_error(
        &y,
        5,
        "hypercube needs a power-of-two rank count: the communicator has 6 ranks",
    );
    let y = format!(
        "{HEAD}launch: {{ nodes: 1, ranks_per_node: 6 }}\ntests:\n  - name: h\n    collective: hypercube\n    sizes: [1M]\n    split: \"MOD 2\"\n"
    );
    one_error(
        &y,
        8,
        "hypercube needs a power-of-two rank count: a split group has 3 ranks",
    );
    let y = format!(
        "{HEAD}launch: {{ nodes: 1, ranks_per_node: 8 }}\ntests:\n  - name: h\n    collective: hypercube\n    sizes: [1M]\n    split: \"DIV 4\"\n"
    );
    assert!(errors(&y).is_empty());
}

/// alltoallv's spread and scale are numbers in range, said by `check` where the plan writes them
/// (nccl-tests would ignore a word and clamp 1.5 silently).
#[test]
fn alltoallv_spread_and_scale_are_checked_where_written() {
    let t = |env: &str| {
        format!(
            "{HEAD}tests:\n  - name: v\n    collective: alltoallv\n    sizes: [1M]\n    env:\n      {env}\n"
        )
    };
    one_error(
        &t("NCCL_TESTS_ALLTOALLV_SPREAD: lots"),
        8,
        "NCCL_TESTS_ALLTOALLV_SPREAD=\"lots\" is not a number",
    );
    one_error(
        &t("NCCL_TESTS_ALLTOALLV_SPREAD: 1.5"),
        8,
        "NCCL_TESTS_ALLTOALLV_SPREAD=1.5 is outside 0..=1",
    );
    one_error(
        &t("NCCL_TESTS_ALLTOALLV_MATRIX_SCALE: -2"),
        8,
        "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE=-2 is negative",
    );
    assert!(errors(&t("NCCL_TESTS_ALLTOALLV_SPREAD: \"0.25\"")).is_empty());
}

#[test]
fn one_rank_groups_warn() {
    let y = format!(
        "{HEAD}launch: {{ nodes: 1, ranks_per_node: 2 }}\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1M]\n    split: \"MOD 2\"\n"
    );
    let r = report(&y);
    assert!(!r.has_errors());
    let w: Vec<_> = r.warnings().collect();
    assert_eq!(w.len(), 1);
    assert!(w[0].message.contains("groups of 1 rank"));
    assert_eq!(w[0].pos.unwrap().line, 8);
}

#[test]
fn regression_without_baseline_is_a_warning() {
    let r = report(&test_body("    expect:\n      - regression: \"<= 5%\"\n"));
    assert!(!r.has_errors());
    let w: Vec<_> = r.warnings().collect();
    assert!(w[0].message.contains("no baseline"));
    assert_eq!(w[0].pos.unwrap().line, 8);
}

#[test]
fn criteria_that_could_never_be_graded() {
    one_error(
        &test_body("    expect:\n      - variance: \"<= 5%\"\n"),
        8,
        "`variance` needs repeats",
    );
    one_error(
        &test_body("    expect:\n      - group_spread: \"<= 5%\"\n"),
        8,
        "needs a split",
    );
    let mpi = test_body("    expect:\n      - transport: P2P\n")
        .replace("name: t\n", "name: t\nbackend: mpi\n");
    one_error(&mpi, 9, "`transport` needs the nccl backend");
    one_error(
        &test_body("    expect:\n      - transport: PCIe\n"),
        8,
        "unknown transport `PCIe`",
    );
    one_error(
        &test_body("    expect:\n      - wrong: 3\n"),
        8,
        "would accept corrupted data",
    );
}

#[test]
fn wrong_without_data_validation() {
    one_error(
        &test_body("    check: false\n    expect:\n      - wrong: 0\n"),
        9,
        "`wrong` needs data validation, but this test sets `check: false`",
    );
    // Inherited from `defaults` too, and a test may turn validation back on.
    let y = test_body("    expect:\n      - wrong: 0\n")
        .replace("name: t\n", "name: t\ndefaults: { check: false }\n");
    one_error(&y, 9, "`wrong` needs data validation");
    let y = test_body("    check: true\n    expect:\n      - wrong: 0\n")
        .replace("name: t\n", "name: t\ndefaults: { check: false }\n");
    assert!(errors(&y).is_empty());
}

#[test]
fn cuda_graphs_need_the_nccl_backend() {
    let mpi = |body: &str| test_body(body).replace("name: t\n", "name: t\nbackend: mpi\n");
    one_error(
        &mpi("    cuda_graph: 2\n"),
        8,
        "`cuda_graph: 2`: CUDA graphs need the nccl backend",
    );
    // Once where it is written, not once per test that inherits it.
    let y = format!(
        "{}  - name: b\n    collective: broadcast\n    sizes: [1M]\n",
        mpi("")
    )
    .replace(
        "backend: mpi\n",
        "backend: mpi\ndefaults: { cuda_graph: 1 }\n",
    );
    one_error(&y, 4, "CUDA graphs need the nccl backend");
    assert!(errors(&mpi("    cuda_graph: 0\n")).is_empty());
}

#[test]
fn criterion_needs_exactly_one_metric() {
    one_error(
        &test_body("    expect:\n      - at: 1G\n"),
        8,
        "criterion has no metric",
    );
    one_error(
        &test_body("    expect:\n      - busbw: \">= 1 GB/s\"\n        wrong: 0\n"),
        9,
        "criterion has 2 metrics (busbw, wrong)",
    );
}

#[test]
fn env_names_and_values() {
    one_error(
        &format!("{HEAD}env: {{ 1BAD: x }}\ntests: []\n")
            .replace("tests: []", &test_body("")[HEAD.len()..]),
        3,
        "`1BAD` is not an environment variable name",
    );
    one_error(
        &test_body("    env: { NCCL_ALGO: [Ring] }\n"),
        7,
        "must be a string",
    );
}

#[test]
fn durations_need_units() {
    one_error(&test_body("    timeout: 300\n"), 7, "must be a string");
    one_error(
        &test_body("    timeout: \"300\"\n"),
        7,
        "duration `300` has no unit",
    );
    one_error(&test_body("    repeat: soon\n"), 7, "`repeat`");
}

#[test]
fn slurm_values_cannot_break_sbatch_lines() {
    let y = test_body("").replace(
        "name: t\n",
        "name: t\nlaunch:\n  slurm: { partition: \"gpu\\n#SBATCH --uid=0\" }\n",
    );
    one_error(&y, 4, "`launch.slurm.partition` contains a newline");
    let y = test_body("").replace(
        "name: t\n",
        "name: t\nlaunch:\n  slurm: { time: \"soon\" }\n",
    );
    one_error(&y, 4, "is not a Slurm time");
}

#[test]
fn matrix_conflicts() {
    one_error(
        &test_body("    dtype: half\n    matrix:\n      dtype: [float]\n"),
        7,
        "`dtype` is set on the test and as a matrix axis",
    );
    one_error(
        &test_body("    matrix:\n      dtype: [float, float]\n"),
        8,
        "lists `float` twice",
    );
}

#[test]
fn one_split_spelled_twice_in_a_matrix_is_a_duplicate() {
    let e = one_error(
        &test_body("    matrix:\n      split: [\"DIV 8\", \"div 8\"]\n"),
        8,
        "matrix axis `split` lists `div 8` twice (same as `DIV 8`)",
    );
    assert_eq!(
        e.message,
        "matrix axis `split` lists `div 8` twice (same as `DIV 8`)"
    );
    one_error(
        &test_body("    matrix:\n      split: [\"DIV 8\", \"/8\"]\n"),
        8,
        "lists `/8` twice (same as `DIV 8`)",
    );
    one_error(
        &test_body("    matrix:\n      split: [\"MOD 8\", \"MOD 010\"]\n"),
        8,
        "lists `MOD 010` twice (same as `MOD 8`)",
    );
    // Other axes name the first spelling too.
    one_error(
        &test_body("    matrix:\n      dtype: [float, fp32]\n"),
        8,
        "matrix axis `dtype` lists `fp32` twice (same as `float`)",
    );
    // Different expressions that happen to form the same groups stay two jobs.
    assert!(
        errors(&test_body(
            "    matrix:\n      split: [\"MOD 8\", \"AND 7\"]\n"
        ))
        .is_empty()
    );
}

#[test]
fn job_ids_name_splits_in_canonical_form() {
    let y = test_body("    matrix:\n      split: [\"div 8\", \"% 0x4\", \"or 1\"]\n");
    let jobs = baton::expand::expand(&parsed(&y)).jobs;
    let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["a[split=DIV 8]", "a[split=MOD 4]", "a[split=OR 1]"]);
    // Elsewhere the split keeps the text as written.
    assert_eq!(jobs[1].split_text(), Some("% 0x4"));
}

#[test]
fn none_in_a_split_axis_compares_unsplit_and_split_jobs() {
    let y = format!(
        "{HEAD}launch: {{ nodes: 2, ranks_per_node: 8 }}\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1G]\n    matrix:\n      split: [none, \"DIV 8\"]\n    expect:\n      - group_spread: \"<= 10%\"\n"
    );
    let loaded = parse_str("plan.yaml", &y).unwrap();
    let w: Vec<&Diagnostic> = loaded.report.warnings().collect();
    assert_eq!(w.len(), 1, "{w:#?}");
    assert_eq!(
        w[0].message,
        "`group_spread` only applies to the jobs of this test that split"
    );
    assert_eq!(w[0].pos.unwrap().line, 11);
    let e = baton::expand::expand(&loaded.plan);
    let ids: Vec<&str> = e.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["a[split=none]", "a[split=DIV 8]"]);
    assert_eq!(e.jobs[0].split, None);
    assert_eq!(e.jobs[0].groups.as_ref().unwrap().len(), 1);
    assert_eq!(e.jobs[1].groups.as_ref().unwrap().len(), 2);
    // `none` alone is no split at all, so `group_spread` could never be graded.
    one_error(
        &y.replace("[none, \"DIV 8\"]", "[none]"),
        11,
        "`group_spread` needs a split",
    );
    one_error(
        &test_body("    matrix:\n      split: [none, NONE]\n"),
        8,
        "matrix axis `split` lists `NONE` twice (same as `none`)",
    );
    // On the test itself `none` is the same as leaving `split` out.
    assert!(errors(&test_body("    split: none\n")).is_empty());
}

#[test]
fn job_limit_counts_ops_only_for_collectives_that_reduce() {
    // 12 dtypes × 5 ops × 500 splits × 100 env entries: 3,000,000 jobs of a reducing collective,
    // but 600,000 of one that does not reduce, which takes only the first op.
    let splits: Vec<String> = (1..=500).map(|i| format!("\"DIV {i}\"")).collect();
    let envs: Vec<String> = (0..100).map(|i| format!("{{ X: \"{i}\" }}")).collect();
    let plan = |collective: &str| {
        format!(
            "{HEAD}tests:\n  - name: a\n    collective: {collective}\n    sizes: [1M]\n    matrix:\n      dtype: [int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, f8e4m3, f8e5m2]\n      op: [sum, prod, min, max, avg]\n      split: [{}]\n      env: [{}]\n",
            splits.join(", "),
            envs.join(", ")
        )
    };
    let loaded = parse_str("plan.yaml", &plan("all_gather")).unwrap();
    assert_eq!(loaded.plan.tests[0].axes.job_count(), 600_000);
    one_error(
        &plan("all_reduce"),
        2,
        "plan expands to 3000000 jobs; at most 2000000 are allowed",
    );
}

#[test]
fn every_error_is_reported_in_one_pass() {
    let y = "version: 1\nname: t\ntests:\n  - name: a\n    collective: allreduce\n    dtype: flaot\n    sizes: { from: 8, to: 8G, factor: 1 }\n    split: XOR\n    expect:\n      - busbw: \">= 340\"\n";
    let errs = errors(y);
    let lines: Vec<u64> = errs.iter().map(|e| e.pos.unwrap().line).collect();
    assert_eq!(errs.len(), 5, "{errs:#?}");
    for l in [5, 6, 7, 8, 10] {
        assert!(lines.contains(&l), "no error on line {l}: {lines:?}");
    }
}

#[test]
fn rendering_names_file_line_col_with_a_caret_and_caps_the_list() {
    let r = report(&test_body("    dtype: flaot\n"));
    let text = r.render(false);
    assert!(text.contains("plan.yaml:7:12"), "{text}");
    assert!(text.contains("dtype: flaot"), "snippet missing: {text}");
    assert!(text.contains("did you mean `float`"), "{text}");
    // 60 bad dtypes: 50 shown, the rest counted.
    let mut y = format!("{HEAD}tests:\n");
    for i in 0..60 {
        y.push_str(&format!(
            "  - name: t{i}\n    collective: all_reduce\n    dtype: nope\n    sizes: [1M]\n"
        ));
    }
    let text = report(&y).render(false);
    assert!(
        text.contains("and 10 more diagnostics not shown"),
        "{}",
        &text[text.len().saturating_sub(300)..]
    );
    assert!(text.contains("60 errors"));
}

#[test]
fn env_values_keep_yaml_1_1_boolean_words_as_text() {
    let y = test_body("    env: { NCCL_IB_DISABLE: no, A: y, B: on, C: 1, D: true }\n");
    let plan = parsed(&y);
    let env = env_pairs(&plan.tests[0].env);
    assert_eq!(
        env,
        [
            ("NCCL_IB_DISABLE", "no"),
            ("A", "y"),
            ("B", "on"),
            ("C", "1"),
            ("D", "true")
        ]
    );
}

#[test]
fn env_values_keep_numbers_and_booleans_as_written() {
    let y = format!(
        "{HEAD}env:\n  P: &p 1.50\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1M]\n    env: {{ A: 1.10, B: 0x10, C: 007, D: 1e3, E: true, F: \"1.10\", G: 'x''y', H: *p, I: !!int \"5\" }}\n    matrix:\n      env: [ {{ M: 2.0 }}, {{ M: 0o17 }} ]\n"
    );
    let plan = parsed(&y);
    let env = env_pairs(&plan.tests[0].env);
    assert_eq!(
        env,
        [
            ("P", "1.50"),
            ("A", "1.10"),
            ("B", "0x10"),
            ("C", "007"),
            ("D", "1e3"),
            ("E", "true"),
            // Quoted strings keep their parsed content.
            ("F", "1.10"),
            ("G", "x'y"),
            // Through an alias: the anchored value's text.
            ("H", "1.50"),
            // A tag on a quoted value: printed from the type it names.
            ("I", "5"),
        ]
    );
    assert_eq!(job_ids(&plan), ["a[M=2.0]", "a[M=0o17]"]);
}

#[test]
fn mpi_backend_refuses_types_and_ops_mpi_lacks() {
    let mpi = |body: &str| test_body(body).replace("name: t\n", "name: t\nbackend: mpi\n");
    one_error(
        &mpi("    dtype: bfloat16\n"),
        8,
        "the mpi backend has no `bfloat16` type",
    );
    one_error(
        &mpi("    op: avg\n"),
        8,
        "the mpi backend has no `avg` reduction",
    );
    assert!(errors(&mpi("    dtype: double\n    op: max\n")).is_empty());
}

#[test]
fn cuda_graph_timing_is_accepted_on_the_nccl_backend() {
    assert!(errors(&test_body("    cuda_graph: 2\n")).is_empty());
    assert!(errors(&test_body("    cuda_graph: 0\n")).is_empty());
}

#[test]
fn transport_takes_alternatives_exclusions_and_scopes() {
    let p = parsed(&test_body(
        "    expect:\n      - transport: [P2P, NVLS]\n      - transport: { not: [SHM, Socket] }\n",
    ));
    let texts: Vec<String> = p.tests[0]
        .expect
        .iter()
        .map(|c| match &c.check {
            baton::plan::Check::Transport(t) => t.to_string(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(texts, ["P2P or NVLS", "not SHM/NET/Socket"]);
    let two_nodes = test_body(
        "    expect:\n      - transport: { intra_node: P2P, inter_node: { is: NET/IB, gdr: true } }\n",
    )
    .replace("name: t\n", "name: t\nlaunch: { nodes: 2, ranks_per_node: 8 }\n");
    let p = parsed(&two_nodes);
    match &p.tests[0].expect[0].check {
        baton::plan::Check::Transport(t) => {
            assert_eq!(
                t.to_string(),
                "intra_node P2P; inter_node NET/IB, with GDRDMA"
            )
        }
        other => panic!("{other:?}"),
    }
    one_error(
        &test_body("    expect:\n      - transport: [P2P, Sockt]\n"),
        8,
        "unknown transport `Sockt` — did you mean `Socket`?",
    );
}

#[test]
fn a_transport_criterion_never_decided_is_an_error_naming_test_and_key() {
    // One node by default: no link crosses nodes.
    one_error(
        &test_body("    expect:\n      - transport: { inter_node: NET/IB }\n"),
        8,
        "test `a`: `inter_node` is never decided",
    );
    // Each node alone: the same.
    one_error(
        &test_body(
            "    over: each-node\n    expect:\n      - transport: { inter_node: { gdr: true } }\n",
        )
        .replace("name: t\n", "name: t\nnodes: { hostlist: \"n[1-4]\" }\n"),
        10,
        "`inter_node` is never decided",
    );
    // The user's own NCCL_DEBUG_FILE turns capture off.
    one_error(
        &test_body(
            "    env: { NCCL_DEBUG_FILE: /tmp/nccl.%h.log }\n    expect:\n      - transport: { is: NET/IB, gdr: true }\n",
        ),
        9,
        "capture is off",
    );
    one_error(
        &test_body("    expect:\n      - transport: { is: P2P, gdr: true }\n"),
        8,
        "GPUDirect RDMA is a property of NET links",
    );
    one_error(
        &test_body("    expect:\n      - transport: { is: P2P, not: P2P }\n"),
        8,
        "both allows and refuses P2P",
    );
}

#[test]
fn an_unquoted_comparison_says_to_quote_it_at_its_line() {
    for (value, quoted) in [
        (">= 340 GB/s", "busbw: \">= 340 GB/s\""),
        (">= 340 GB/s   # at 1G", "busbw: \">= 340 GB/s\""),
        ("> 340 GB/s", "busbw: \"> 340 GB/s\""),
    ] {
        let yaml = test_body(&format!("    expect:\n      - busbw: {value}\n"));
        let e = one_error(&yaml, 8, &format!("quote it: {quoted}"));
        assert_eq!(e.pos.map(|p| p.col), Some(16), "{e:?}");
    }
}

#[test]
fn a_bare_number_threshold_shows_the_accepted_form() {
    let yaml = test_body("    expect:\n      - busbw: 340\n      - time: 20\n");
    let errs = errors(&yaml);
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert!(
        errs[0]
            .message
            .ends_with("found an integer; write it as busbw: \">= 340 GB/s\""),
        "{:?}",
        errs[0].message
    );
    assert!(
        errs[1].message.ends_with("write it as time: \"<= 20 us\""),
        "{:?}",
        errs[1].message
    );
}

/// Three tests, three independent errors — an unknown key (structural), an unknown collective
/// and a bad size (semantic): one `check` shows all three, each at its line.
#[test]
fn independent_errors_of_different_tests_are_reported_in_one_pass() {
    let yaml = format!(
        "{HEAD}tests:
  - name: a
    collective: all_reduce
    sizes: [8]
    rpeat: 3
  - name: b
    collective: all_reduse
    sizes: [8]
  - name: c
    collective: all_reduce
    sizes: [1Q]
"
    );
    let errs = errors(&yaml);
    let lines: Vec<u64> = errs.iter().map(|e| e.pos.unwrap().line).collect();
    assert_eq!(lines, [7, 9, 13], "{errs:#?}");
    assert!(errs[0].message.contains("unknown key `rpeat`"), "{errs:#?}");
    assert!(errs[1].message.contains("all_reduse"), "{errs:#?}");
    assert!(errs[2].message.contains("1Q"), "{errs:#?}");
}

#[test]
fn an_error_at_the_top_level_still_stops_before_the_semantic_pass() {
    let yaml = format!(
        "{HEAD}lanch: {{ nodes: 1 }}\ntests:\n  - name: b\n    collective: all_reduse\n    sizes: [8]\n"
    );
    let errs = errors(&yaml);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(errs[0].message.contains("unknown key `lanch`"), "{errs:#?}");
}

/// The launch keys of issue #12 are checked where they are written, each with its own message.
#[test]
fn launch_step_binding_and_forward_keys_are_checked() {
    let plan = |launch: &str| {
        format!(
            "{HEAD}backend: mpi\nlaunch:\n  {launch}\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [8]\n"
        )
    };
    for (launch, why) in [
        (
            "slurm: { cpus_per_task: 0 }",
            "is not `auto`, `off` or a count from 1",
        ),
        (
            "slurm: { cpus_per_task: many }",
            "is not `auto`, `off` or a count from 1",
        ),
        (
            "slurm: { cpu_bind: \"a b\" }",
            "`launch.slurm.cpu_bind` `a b` has characters outside",
        ),
        (
            "slurm: { gpu_bind: \"$(id)\" }",
            "`launch.slurm.gpu_bind` `$(id)` has characters outside",
        ),
        (
            "slurm: { step: [\"--network sn_all\"] }",
            "is not `--name` or `--name=value`",
        ),
        (
            "slurm: { step: [\"-N2\"] }",
            "is not `--name` or `--name=value`",
        ),
        (
            "mpirun: { forward: [\"1A\"] }",
            "`launch.mpirun.forward` item `1A` is not a variable name or prefix",
        ),
        (
            "mpirun: { forward: [\"A*B\"] }",
            "is not a variable name or prefix",
        ),
        (
            "baton: relative/baton",
            "is not `path`, an absolute path, `image` or `image:/path`",
        ),
    ] {
        // A malformed step option is also not a vetted one (docs/trust.md): both say so.
        let errs = errors(&plan(launch));
        assert!(
            errs.iter()
                .any(|e| e.message.contains(why) && e.pos.map(|p| p.line) == Some(5)),
            "{launch}: no {why:?} in {errs:#?}"
        );
    }
    let ok = parse_str(
        "plan.yaml",
        &plan("slurm: { step: [\"--network=sn_all\"], cpus_per_task: 8, cpu_bind: \"map_cpu:0,1\", gpu_bind: closest }\n  mpirun: { forward: [MY_FLAG, \"FI_*\"] }"),
    )
    .unwrap_or_else(|r| panic!("{r:?}"))
    .plan;
    assert_eq!(
        ok.launch.slurm.cpus_per_task,
        baton::plan::CpusPerTask::Fixed(8)
    );
    assert_eq!(ok.launch.slurm.cpu_bind.as_deref(), Some("map_cpu:0,1"));
    assert_eq!(ok.launch.mpirun.forward, ["MY_FLAG", "FI_*"]);
    assert_eq!(ok.launch.baton, baton::plan::BatonFrom::Path);
}

/// #24: the plan's `fleet:` section: a rate or PCIe link not in its form is an error at its
/// line; a sound one becomes the fields the preflight compares.
#[test]
fn a_fleet_section_is_checked_where_it_is_written() {
    let tests = "tests:\n  - name: a\n    collective: all_reduce\n    sizes: [1M]\n";
    one_error(
        &format!("{HEAD}fleet:\n  nics: {{ count: 8, rate: fast }}\n{tests}"),
        4,
        "`fleet.nics.rate` `fast` is not a rate",
    );
    one_error(
        &format!("{HEAD}fleet:\n  gpus: 8\n  pcie: Gen5\n{tests}"),
        5,
        "`fleet.pcie` `Gen5` is not a PCIe link",
    );
    let plan = parsed(&format!(
        "{HEAD}evidence: false\nfleet: {{ gpus: 8, mtu: 4096, pcie: Gen5 x16, peermem: true, nics: {{ rate: 400 Gb/s }} }}\n{tests}"
    ));
    assert!(!plan.evidence);
    let fields: Vec<String> = plan.fleet.iter().map(|(k, v)| format!("{k}={v}")).collect();
    assert_eq!(
        fields,
        [
            "gpus=8",
            "mtu=4096",
            "peermem=loaded",
            "rate=400 Gb/s",
            "pcie=Gen5 x16"
        ]
    );
}

/// busbw is 0 by definition on a one-rank communicator ((n-1)/n = 0): a floor on it, and a
/// spread around a median of 0, can only ever fail (errors at the criteria); a ceiling can never
/// fail (a warning there). A collective whose busbw is its algbw on one rank (broadcast) is left
/// alone.
#[test]
fn busbw_criteria_on_a_one_rank_job_are_refused_or_warned_where_written() {
    let y = format!(
        "{HEAD}launch: {{ nodes: 1, ranks_per_node: 1 }}\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1M]\n    repeat: 3\n    expect:\n      - busbw: \">= 300 GB/s\"\n      - variance: \"<= 5%\"\n      - busbw: \"<= 900 GB/s\"\n      - wrong: 0\n"
    );
    let errs = errors(&y);
    let at: Vec<(u64, &str)> = errs
        .iter()
        .map(|e| (e.pos.unwrap().line, e.message.as_str()))
        .collect();
    assert_eq!(at.len(), 2, "{errs:#?}");
    assert!(
        at[0].0 == 10
            && at[0]
                .1
                .contains("`busbw` can only ever fail: this test runs on 1 rank"),
        "{at:?}"
    );
    assert!(
        at[1].0 == 11 && at[1].1.contains("`variance` can only ever fail"),
        "{at:?}"
    );
    let w: Vec<_> = report(&y).warnings().cloned().collect();
    assert!(
        w.iter().any(|d| d
            .message
            .contains("`busbw` compares busbw that is always 0 and can never fail")
            && d.pos.unwrap().line == 12),
        "{w:#?}"
    );
    // Split into one-rank groups: the same, located at the floor.
    let y = format!(
        "{HEAD}launch: {{ nodes: 1, ranks_per_node: 2 }}\ntests:\n  - name: a\n    collective: alltoall\n    sizes: [1M]\n    split: \"MOD 2\"\n    expect:\n      - busbw: \">= 1 GB/s\"\n"
    );
    one_error(
        &y,
        10,
        "every split group of this test's 2 ranks has 1 rank",
    );
    // broadcast's busbw on one rank is its algbw: a floor can pass.
    let y = format!(
        "{HEAD}launch: {{ nodes: 1, ranks_per_node: 1 }}\ntests:\n  - name: a\n    collective: broadcast\n    sizes: [1M]\n    expect:\n      - busbw: \">= 1 GB/s\"\n"
    );
    assert!(errors(&y).is_empty(), "{:#?}", errors(&y));
}

/// The one-rank rule counts the ranks of one job from its node set: a pair of one-rank nodes has
/// 2 ranks (no error), each node alone has 1 (the floor is refused).
#[test]
fn the_one_rank_rule_counts_the_ranks_of_one_node_set() {
    let y = |over: &str| {
        format!(
            "{HEAD}launch: {{ ranks_per_node: 1 }}\nnodes: {{ hostlist: \"n[1-3]\" }}\ntests:\n  - name: a\n    over: {over}\n    collective: all_reduce\n    sizes: [1M]\n    expect:\n      - busbw: \">= 1 GB/s\"\n"
        )
    };
    assert!(errors(&y("pairs")).is_empty(), "{:#?}", errors(&y("pairs")));
    one_error(
        &y("each-node"),
        11,
        "`busbw` can only ever fail: this test runs on 1 rank",
    );
}
