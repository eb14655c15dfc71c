//! Fuzz-style robustness: random and mutated logs never panic the ingest parsers; they either
//! yield results or a typed error.

use baton::ingest::{LogInput, ingest};
use proptest::prelude::*;

const FIXTURES: &[&str] = &[
    include_str!("../data/nccl-tests/h200x2/all_reduce.txt"),
    include_str!("../data/nccl-tests/h200x2/all_gather.json"),
    include_str!("../data/nccl-tests/h200x2/alltoall.json"),
    include_str!("../data/nccl-tests/h200x2/debug_socket.txt"),
    include_str!("../data/nccl-tests/h200x2/mpi_np2_a3.txt"),
    include_str!("../data/nccl-tests/h200x2/broadcast.txt"),
];

fn run(bytes: &[u8], label: Option<&str>) {
    let _ = ingest(
        &[LogInput {
            name: "fuzz.txt",
            bytes,
        }],
        label,
    );
}

/// One edit of a log's lines.
#[derive(Debug, Clone)]
enum Edit {
    Delete(usize),
    Duplicate(usize),
    Swap(usize, usize),
    /// Replace one whitespace-separated field of a line.
    Field(usize, usize, String),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    let field = prop_oneof![
        Just("N/A".to_string()),
        Just("-1".to_string()),
        Just("nan".to_string()),
        Just("1e308".to_string()),
        Just("18446744073709551616".to_string()),
        Just("".to_string()),
        Just("0(factor)".to_string()),
        Just("[".to_string()),
        "[ -~]{0,12}",
    ];
    prop_oneof![
        any::<usize>().prop_map(Edit::Delete),
        any::<usize>().prop_map(Edit::Duplicate),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Swap(a, b)),
        (any::<usize>(), any::<usize>(), field).prop_map(|(l, f, v)| Edit::Field(l, f, v)),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for e in edits {
        if lines.is_empty() {
            break;
        }
        let n = lines.len();
        match e {
            Edit::Delete(i) => {
                lines.remove(i % n);
            }
            Edit::Duplicate(i) => {
                let l = lines[i % n].clone();
                lines.insert(i % n, l);
            }
            Edit::Swap(a, b) => lines.swap(a % n, b % n),
            Edit::Field(i, f, v) => {
                let mut fields: Vec<String> = lines[i % n].split(' ').map(str::to_string).collect();
                let k = fields.len();
                fields[f % k] = v.clone();
                lines[i % n] = fields.join(" ");
            }
            Edit::Truncate(at) => {
                let joined = lines.join("\n");
                let mut cut = at % (joined.len() + 1);
                while !joined.is_char_boundary(cut) {
                    cut -= 1;
                }
                lines = joined[..cut].lines().map(str::to_string).collect();
            }
        }
    }
    lines.join("\n")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn mutated_fixtures_never_panic(which in 0..FIXTURES.len(), edits in prop::collection::vec(edit(), 1..12), label in prop::option::of("[a-z]{1,8}")) {
        let text = apply(FIXTURES[which], &edits);
        run(text.as_bytes(), label.as_deref());
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        run(&bytes, None);
    }

    #[test]
    fn random_printable_lines_never_panic(lines in prop::collection::vec("[ -~]{0,120}", 0..40)) {
        let mut text = String::from("# Collective test starting: all_reduce_perf\n");
        text.push_str(&lines.join("\n"));
        run(text.as_bytes(), None);
    }

    #[test]
    fn truncated_json_never_panics(which in 0..FIXTURES.len(), cut in any::<usize>()) {
        let t = FIXTURES[which].as_bytes();
        run(&t[..cut % (t.len() + 1)], None);
    }
}

#[test]
fn hostile_headers_stay_bounded() {
    // A sweep of 2^64 sizes, a step that never advances, absurd ranks: answered, not hung.
    for header in [
        "# nThread 1 nGpus 1 minBytes 1 maxBytes 18446744073709551615 step: 1(bytes) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0",
        "# nThread 1 nGpus 1 minBytes 0 maxBytes 100 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0",
        "# nThread 4294967295 nGpus 4294967295 minBytes 8 maxBytes 8 step: 0(bytes) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0",
    ] {
        let text = format!(
            "# Collective test starting: all_gather_perf\n{header}\n    1048576  131072  float  none  -1  15.57  67.34  33.67  0  19.27  54.41  27.21  0\n"
        );
        run(text.as_bytes(), None);
    }
    let deep = "[".repeat(100_000);
    run(format!("{{\"config\":{deep}").as_bytes(), None);
}
