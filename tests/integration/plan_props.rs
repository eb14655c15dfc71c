//! Property tests for the plan language: loading never panics whatever the input, sizes print and
//! parse back exactly, split groups partition the ranks by the color rule, and a test expands to
//! the product of its axes.
//!
//! Case counts are modest so the suite stays fast; `scripts/fuzz` explores much further.
//!
//! The generators keep launch counts, sizes and sweep bounds below the triggers of the known
//! crashes in `tests/data/plans/fuzz-crashes/` (u64 overflow near 2^64, rank counts in the
//! hundreds of millions); those are pinned by the ignored test in `tests/integration/shipped_plans.rs`.
//! Widen the pools once they are fixed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;

use baton::collective::Collective;
use baton::plan::parse_bytes;
use baton::split::{Split, SplitOp};
use baton::units::{Size, parse_size};

/// Every plan shipped in `plans/` plus the test plans (not the known crashers), read once.
fn seed_plans() -> &'static [(String, Vec<u8>)] {
    static PLANS: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    PLANS.get_or_init(read_seed_plans)
}

fn read_seed_plans() -> Vec<(String, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["plans", "plans/examples", "tests/data/plans"] {
        for entry in std::fs::read_dir(root.join(dir)).expect("plan folder exists") {
            let p = entry.expect("readable folder entry").path();
            if p.extension().is_some_and(|e| e == "yaml") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(
        files.len() >= 12,
        "expected the shipped plans and full.yaml, found {files:?}"
    );
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("readable plan");
            (p.display().to_string(), bytes)
        })
        .collect()
}

/// Loads `bytes` and checks the loader's contract: an `Err` carries at least one error, an `Ok`
/// none, an accepted plan expands, and every report renders (snippets and short form).
fn assert_loads_or_rejects(bytes: &[u8]) {
    match parse_bytes("prop.yaml", bytes) {
        Ok(loaded) => {
            assert!(
                !loaded.report.has_errors(),
                "accepted with errors: {:?}",
                loaded.report.diagnostics
            );
            let e = baton::expand::expand(&loaded.plan);
            assert_eq!(e.total_jobs, e.jobs.len());
            assert!(e.total_jobs >= loaded.plan.tests.len());
            let _ = loaded.report.render(false);
        }
        Err(report) => {
            assert!(report.has_errors(), "rejected without an error diagnostic");
            let short = report.short();
            assert!(
                short.contains("error"),
                "short form names no error: {short}"
            );
            let _ = report.render(true);
        }
    }
}

// ---- (a) no input panics ----

/// Pieces of plan text: keys, values and YAML punctuation, so generated text gets past the YAML
/// parser often enough to reach the structural and semantic checks.
const KEYS: &[&str] = &[
    "version",
    "name",
    "description",
    "backend",
    "launch",
    "nodes",
    "ranks_per_node",
    "gpus_per_rank",
    "slurm",
    "partition",
    "time",
    "exclusive",
    "mpi",
    "extra",
    "mpirun",
    "hostfile",
    "env",
    "defaults",
    "tests",
    "- name",
    "collective",
    "sizes",
    "from",
    "to",
    "factor",
    "step",
    "root",
    "split",
    "matrix",
    "repeat",
    "expect",
    "- busbw",
    "- algbw",
    "- time",
    "- wrong",
    "- transport",
    "- regression",
    "- variance",
    "- group_spread",
    "at",
    "severity",
    "in_place",
    "dtype",
    "op",
    "iters",
    "warmup",
    "agg_iters",
    "cuda_graph",
    "check",
    "average",
    "timeout",
    "baseline",
    "NCCL_DEBUG",
    "colective",
];

const VALUES: &[&str] = &[
    "",
    "1",
    "2",
    "0",
    "-1",
    "8",
    "16",
    "1000",
    "1099511627776",
    "18446744073709551616",
    "1.5",
    "true",
    "null",
    "~",
    "x",
    "t",
    "nccl",
    "mpi",
    "all_reduce",
    "alltoall",
    "broadcast",
    "[all_reduce, reduce]",
    "[]",
    "{}",
    "8G",
    "1M",
    "1.5G",
    "1.1K",
    "16T",
    "[8, 1M, 8]",
    "{ from: 8, to: 8G, factor: 2 }",
    "{ from: 1M, to: 64M, step: 1M }",
    "{ from: 8G, to: 8 }",
    "\"DIV 8\"",
    "\"MOD 0\"",
    "\"OR 1\"",
    "\"XOR 3\"",
    "\">= 340 GB/s\"",
    "\">= 400 Gb/s\"",
    "\"<= 5%\"",
    "\">= 5%\"",
    "\"<= 20 us\"",
    "\">= 1G\"",
    "1G..4G",
    "4G..1G",
    "5m",
    "1h",
    "\"5\"",
    "P2P",
    "NET/IB",
    "warn",
    "max",
    "bf16",
    "f8e4m3",
    "out",
    "{ NCCL_PROTO: Simple }",
    "[{ A: 1 }, { A: 1 }]",
    "&a 8",
    "*a",
    "!!str 1",
    ">-",
    "|",
];

fn yamlish_line() -> impl Strategy<Value = String> {
    (
        0usize..4,
        prop::sample::select(KEYS),
        prop::sample::select(VALUES),
    )
        .prop_map(|(indent, k, v)| format!("{}{k}: {v}", "  ".repeat(indent)))
}

// Whole lines for each level of a plan, in pairs of pools: mostly valid values, sometimes
// invalid ones, so generated plans are well-formed YAML of the right shape that often pass (and
// so get expanded) and otherwise fail in the semantic checks rather than in the YAML reader.

/// Nine times in ten a valid choice, otherwise an invalid one.
fn pick(
    valid: &'static [&'static str],
    invalid: &'static [&'static str],
) -> BoxedStrategy<&'static str> {
    prop_oneof![9 => prop::sample::select(valid), 1 => prop::sample::select(invalid)].boxed()
}

const TOP_OK: &[&str] = &[
    "backend: nccl",
    "backend: mpi",
    "description: generated",
    "env: { NCCL_DEBUG: INFO, A: 1.10 }",
    "baseline: base.json",
    "defaults: { dtype: bf16, iters: 5, warmup: 0, timeout: 90s }",
    "defaults: { average: max, in_place: out, check: false }",
];
const TOP_BAD: &[&str] = &[
    "backend: gloo",
    "env: { NCCL_TESTS_SPLIT: \"DIV 8\" }",
    "env: { 1BAD: x }",
    "env: [A]",
    "defaults: { op: mean, cuda_graph: -1 }",
    "baseline: \"a\\nb\"",
];
const LAUNCH_OK: &[&str] = &[
    "nodes: 1",
    "nodes: 2",
    "ranks_per_node: 1",
    "ranks_per_node: 2",
    "ranks_per_node: 8",
    "gpus_per_rank: 1",
    "gpus_per_rank: 4",
    "slurm: { partition: gpu, time: \"00:30:00\", exclusive: true, mpi: pmix, extra: [\"--qos=high\"] }",
    "mpirun: { hostfile: hosts, extra: [\"--bind-to\", numa] }",
];
const LAUNCH_BAD: &[&str] = &[
    "nodes: 0",
    "nodes: 1099511627776",
    "ranks_per_node: -3",
    "slurm: { time: 1h, mpi: \"p x\", extra: [qos] }",
    "slurm: { partiton: gpu }",
];
const NAMES_OK: &[&str] = &["t", "u", "x.y-z"];
const NAMES_BAD: &[&str] = &["bad name", "\"\""];
const COLLECTIVES_OK: &[&str] = &[
    "all_reduce",
    "broadcast",
    "alltoall",
    "[all_reduce, all_gather, reduce]",
    "[reduce_scatter, sendrecv]",
];
const COLLECTIVES_BAD: &[&str] = &["[all_reduce, all_reduce]", "allreduce", "[]", "{}"];
const SIZES_OK: &[&str] = &[
    "[8]",
    "[8, 1M, 8G]",
    "{ from: 8, to: 8G, factor: 2 }",
    "{ from: 1M, to: 64M, step: 1M }",
    "{ from: 1G, to: 1G }",
    "{ from: 1.5G, to: 16T, factor: 4 }",
];
const SIZES_BAD: &[&str] = &[
    "[1G, 1G]",
    "[0]",
    "[]",
    "{ from: 8G, to: 8, factor: 2 }",
    "{ from: 8, to: 1T, step: 1 }",
    "{ from: 8, to: 1G, factor: 1 }",
    "{ from: 8, to: 1G }",
    "8G",
];
const TEST_OK: &[&str] = &[
    "root: 0",
    "root: 1",
    "split: \"DIV 2\"",
    "split: \"MOD 8\"",
    "split: \"OR 1\"",
    "repeat: 3",
    "repeat: 1h",
    "dtype: bf16",
    "dtype: f8e4m3",
    "op: max",
    "warmup: 5",
    "agg_iters: 2",
    "cuda_graph: 3",
    "check: false",
    "average: rank0",
    "in_place: in",
    "timeout: 5m",
    "env: { NCCL_PROTO: LL128 }",
    "matrix: { dtype: [float, bfloat16], env: [ { P: a }, { P: b } ] }",
    "matrix: { op: [sum, max], split: [\"DIV 2\", \"MOD 2\"] }",
    "matrix: { split: [none, \"div 2\"] }",
];
const TEST_BAD: &[&str] = &[
    "matrix: { collective: [broadcast, reduce] }",
    "root: 3",
    "split: \"/ 0\"",
    "split: \"XOR 1\"",
    "repeat: 0",
    "repeat: \"5\"",
    "dtype: float128",
    "iters: 0",
    "timeout: \"0s\"",
    "matrix: { dtype: [] }",
    "matrix: { env: [ {}, { A: 1 }, { A: 1 } ] }",
    "expct: []",
];
const CRITERIA_OK: &[&str] = &[
    "wrong: 0",
    "busbw: \">= 340 GB/s\"",
    "algbw: \"> 900 MB/s\"",
    "time: \"<= 20 us\"",
    "transport: P2P",
    "regression: \"<= 5%\"",
    "variance: \"<= 5%\"",
    "group_spread: \"<= 10%\"",
];
const CRITERIA_BAD: &[&str] = &[
    "wrong: 3",
    "busbw: \">= 400 Gb/s\"",
    "busbw: \"340 GB/s\"",
    "time: \"<= 20\"",
    "transport: nvlink",
    "regression: \">= 5%\"",
    "severity: warn",
];
const MODS_OK: &[&str] = &[
    "at: 8",
    "at: 8G",
    "at: \">= 1G\"",
    "at: 1G..4G",
    "severity: warn",
    "in_place: out",
];
const MODS_BAD: &[&str] = &[
    "at: 4G..1G",
    "at: 3",
    "severity: fatal",
    "in_place: in",
    "busbw: \">= 1 GB/s\"",
];

/// Keeps the first line for each key, so generated mappings have no duplicate keys (the YAML
/// reader refuses those before any check runs, which would hide everything else).
fn first_per_key(lines: Vec<&'static str>) -> Vec<&'static str> {
    let mut seen: Vec<&str> = Vec::new();
    lines
        .into_iter()
        .filter(|l| {
            let key = l.split(':').next().unwrap_or(l);
            let fresh = !seen.contains(&key);
            seen.push(key);
            fresh
        })
        .collect()
}

fn criterion_item() -> impl Strategy<Value = String> {
    (
        pick(CRITERIA_OK, CRITERIA_BAD),
        prop::collection::vec(pick(MODS_OK, MODS_BAD), 0..3),
    )
        .prop_map(|(metric, mods)| {
            let mut item = format!("      - {metric}\n");
            let metric_key = metric.split(':').next().unwrap_or(metric);
            for m in first_per_key(mods)
                .into_iter()
                .filter(|m| !m.starts_with(metric_key))
            {
                item.push_str(&format!("        {m}\n"));
            }
            item
        })
}

fn test_item() -> impl Strategy<Value = String> {
    (
        pick(NAMES_OK, NAMES_BAD),
        pick(COLLECTIVES_OK, COLLECTIVES_BAD),
        pick(SIZES_OK, SIZES_BAD),
        prop::collection::vec(pick(TEST_OK, TEST_BAD), 0..4),
        prop::collection::vec(criterion_item(), 0..4),
    )
        .prop_map(|(name, coll, sizes, lines, expect)| {
            let mut t = format!("  - name: {name}\n    collective: {coll}\n    sizes: {sizes}\n");
            for l in first_per_key(lines) {
                t.push_str(&format!("    {l}\n"));
            }
            if !expect.is_empty() {
                t.push_str("    expect:\n");
                for e in expect {
                    t.push_str(&e);
                }
            }
            t
        })
}

/// A plan with the right overall shape and a random selection of valid and invalid values.
fn plan_text() -> impl Strategy<Value = String> {
    (
        pick(&["1"], &["2", "\"1\""]),
        prop::collection::vec(pick(TOP_OK, TOP_BAD), 0..3),
        prop::option::of(prop::collection::vec(pick(LAUNCH_OK, LAUNCH_BAD), 0..4)),
        prop::collection::vec(test_item(), 1..4),
    )
        .prop_map(|(version, top, launch, tests)| {
            let mut p = format!("version: {version}\nname: gen\n");
            for l in first_per_key(top) {
                p.push_str(l);
                p.push('\n');
            }
            if let Some(launch) = launch {
                p.push_str("launch:\n");
                for l in first_per_key(launch) {
                    p.push_str(&format!("  {l}\n"));
                }
            }
            p.push_str("tests:\n");
            for t in tests {
                p.push_str(&t);
            }
            p
        })
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, len: usize },
    Duplicate { at: usize, len: usize },
    Replace { at: usize, byte: u8 },
}

const REPLACEMENTS: &[u8] = b" -:\n\t[]{}\"'*&!#|>%,.0189GKMaz\x00\xc3\xa9";

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..24).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), 1usize..24).prop_map(|(at, len)| Mutation::Duplicate { at, len }),
        (any::<usize>(), prop::sample::select(REPLACEMENTS))
            .prop_map(|(at, byte)| Mutation::Replace { at, byte }),
    ]
}

fn apply(mut text: Vec<u8>, muts: &[Mutation]) -> Vec<u8> {
    for m in muts {
        if text.is_empty() {
            break;
        }
        match *m {
            Mutation::Delete { at, len } => {
                let at = at % text.len();
                let end = (at + len).min(text.len());
                text.drain(at..end);
            }
            Mutation::Duplicate { at, len } => {
                let at = at % text.len();
                let end = (at + len).min(text.len());
                let copy: Vec<u8> = text[at..end].to_vec();
                text.splice(end..end, copy);
            }
            Mutation::Replace { at, byte } => {
                let at = at % text.len();
                text[at] = byte;
            }
        }
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        assert_loads_or_rejects(&bytes);
    }

    #[test]
    fn generated_plans_never_panic(text in plan_text()) {
        assert_loads_or_rejects(text.as_bytes());
    }

    #[test]
    fn keyword_soup_never_panics(
        lines in prop::collection::vec(yamlish_line(), 0..40),
        header in any::<bool>(),
    ) {
        let mut text = String::new();
        if header {
            text.push_str("version: 1\nname: p\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [8]\n");
        }
        for l in &lines {
            text.push_str(l);
            text.push('\n');
        }
        assert_loads_or_rejects(text.as_bytes());
    }

    #[test]
    fn mutated_shipped_plans_never_panic(
        which in any::<prop::sample::Index>(),
        muts in prop::collection::vec(mutation(), 1..8),
    ) {
        let plans = seed_plans();
        let (_, original) = &plans[which.index(plans.len())];
        let mutated = apply(original.clone(), &muts);
        assert_loads_or_rejects(&mutated);
    }
}

#[test]
fn every_seed_plan_loads_unmutated() {
    // The mutation property only means something if its seeds are valid to begin with.
    for (name, bytes) in seed_plans() {
        let loaded = parse_bytes(name, bytes)
            .unwrap_or_else(|r| panic!("{name} is invalid:\n{}", r.short()));
        assert!(!loaded.plan.tests.is_empty(), "{name}");
    }
}

// ---- (b) sizes print and parse back exactly ----

fn size_value() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        // Exact multiples of K, M, G and T, which print with a suffix.
        (
            1u64..(1 << 24),
            prop::sample::select(&[0u32, 10, 20, 30, 40][..])
        )
            .prop_map(|(k, shift)| k << shift),
        // Near multiples, which must print as plain bytes.
        (
            1u64..(1 << 20),
            prop::sample::select(&[10u32, 20, 30][..]),
            1u64..1024
        )
            .prop_map(|(k, shift, off)| (k << shift) + off),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn size_display_round_trips(n in size_value()) {
        let text = Size(n).to_string();
        prop_assert_eq!(parse_size(&text), Ok(n), "{} printed as {}", n, text);
    }
}

// ---- (c) split groups partition the ranks by the color rule ----

/// A split with operator `op` and a value from `values`: one arm of [`split`].
fn split_of(op: SplitOp, values: std::ops::Range<u64>) -> impl Strategy<Value = Split> {
    values.prop_map(move |value| Split { op, value })
}

fn split() -> impl Strategy<Value = Split> {
    prop_oneof![
        split_of(SplitOp::And, 0..256),
        split_of(SplitOp::Or, 0..256),
        split_of(SplitOp::Mod, 1..64),
        split_of(SplitOp::Div, 1..64),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn split_groups_partition_ranks(s in split(), n in 0u64..600) {
        let groups = s.groups(n);
        let mut seen = vec![false; n as usize];
        for (color, members) in &groups {
            prop_assert!(!members.is_empty(), "empty group {}", color);
            prop_assert!(members.windows(2).all(|w| w[0] < w[1]), "group {} not ascending", color);
            for &r in members {
                prop_assert!(r < n, "rank {} outside 0..{}", r, n);
                prop_assert!(!seen[r as usize], "rank {} in two groups", r);
                seen[r as usize] = true;
                prop_assert_eq!(s.color(r), *color);
            }
        }
        prop_assert!(seen.iter().all(|s| *s), "some rank is in no group");
        // The expression prints in a form that parses back to the same split.
        prop_assert_eq!(Split::parse(&s.to_string()), Ok(s));
    }
}

// ---- (d) a test expands to the product of its axes ----

const DTYPES: &[&str] = &["float", "bfloat16", "half", "int8", "double"];
const OPS: &[&str] = &["sum", "max", "min", "prod"];
const SPLITS: &[&str] = &["DIV 2", "MOD 2", "OR 1", "AND 3", "DIV 4", "none"];

/// A small random matrix: the collectives and how many values of each other axis (0 = absent).
#[derive(Debug, Clone)]
struct Matrix {
    collectives: Vec<Collective>,
    in_matrix: bool,
    dtype: usize,
    op: usize,
    split: usize,
    env: usize,
}

fn matrix() -> impl Strategy<Value = Matrix> {
    (
        prop::sample::subsequence(Collective::ALL.to_vec(), 1..=4),
        any::<bool>(),
        0..=DTYPES.len(),
        0..=OPS.len(),
        0..=SPLITS.len(),
        0usize..=3,
    )
        .prop_map(|(collectives, in_matrix, dtype, op, split, env)| Matrix {
            collectives,
            in_matrix,
            dtype,
            op,
            split,
            env,
        })
}

fn names<T: ToString>(items: &[T]) -> String {
    items
        .iter()
        .map(|s| format!("\"{}\"", s.to_string()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn matrix_plan(m: &Matrix) -> String {
    let colls = names(&m.collectives);
    let mut axes: Vec<String> = Vec::new();
    // The collectives go either in the matrix or on the test, never both.
    let collective_line = if m.in_matrix {
        axes.push(format!("collective: [{colls}]"));
        String::new()
    } else {
        format!("    collective: [{colls}]\n")
    };
    if m.dtype > 0 {
        axes.push(format!("dtype: [{}]", names(&DTYPES[..m.dtype])));
    }
    if m.op > 0 {
        axes.push(format!("op: [{}]", names(&OPS[..m.op])));
    }
    if m.split > 0 {
        axes.push(format!("split: [{}]", names(&SPLITS[..m.split])));
    }
    if m.env > 0 {
        let entries: Vec<String> = (0..m.env).map(|i| format!("{{ V: \"{i}\" }}")).collect();
        axes.push(format!("env: [{}]", entries.join(", ")));
    }
    let mut text =
        format!("version: 1\nname: m\ntests:\n  - name: t\n{collective_line}    sizes: [8, 1M]\n");
    if !axes.is_empty() {
        text.push_str("    matrix:\n");
        for a in axes {
            text.push_str(&format!("      {a}\n"));
        }
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn expansion_is_the_product_of_the_axes(m in matrix()) {
        let text = matrix_plan(&m);
        let loaded = parse_bytes("matrix.yaml", text.as_bytes())
            .unwrap_or_else(|r| panic!("generated plan rejected:\n{text}\n{}", r.short()));
        let e = baton::expand::expand(&loaded.plan);
        let per = |k: usize| k.max(1);
        // Collectives that do not reduce take only the first op: the op axis does not multiply them.
        let expected: usize = m
            .collectives
            .iter()
            .map(|c| {
                per(m.dtype) * (if c.reduces() { per(m.op) } else { 1 }) * per(m.split) * per(m.env)
            })
            .sum();
        prop_assert_eq!(e.total_jobs, expected, "plan:\n{}", text);
        // The job limit is checked on the count, which must be the expansion's.
        prop_assert_eq!(loaded.plan.tests[0].axes.job_count(), expected as u64);
        prop_assert_eq!(e.jobs.len(), expected);
        if m.collectives.iter().all(|c| c.reduces()) {
            let product = m.collectives.len() * per(m.dtype) * per(m.op) * per(m.split) * per(m.env);
            prop_assert_eq!(e.total_jobs, product);
        }
        // Every job has its own ID, and the ID names exactly the axes that vary.
        let ids: BTreeSet<&str> = e.jobs.iter().map(|j| j.id.as_str()).collect();
        prop_assert_eq!(ids.len(), e.jobs.len(), "duplicate job IDs");
        // The op axis names only jobs of reducing collectives (it does not apply to the others).
        let listed_without_op = m.in_matrix || m.collectives.len() > 1 || m.dtype + m.split + m.env > 0;
        for j in &e.jobs {
            let listed = listed_without_op || (m.op > 0 && j.collective.reduces());
            prop_assert_eq!(j.id.contains('['), listed, "ID {}", &j.id);
            prop_assert_eq!(baton::plan::jobs::test_of(&j.id), "t");
            if m.dtype > 0 {
                let dtype_part = format!("dtype={}", j.dtype);
                prop_assert!(j.id.contains(&dtype_part), "{} lacks {}", &j.id, dtype_part);
            }
            if m.env > 0 {
                let v = j.env.get("V").expect("matrix env var set");
                let env_part = format!("V={v}");
                prop_assert!(j.id.contains(&env_part), "{} lacks {}", &j.id, env_part);
            }
            prop_assert_eq!(j.op.is_some(), j.collective.reduces());
        }
    }
}
