//! Fuzz-style robustness: random and mutated logs never panic the ingest parsers; they either
//! yield results or a typed error.

use baton::ingest::{LogInput, Outcome, ingest};
use proptest::prelude::*;

const FIXTURES: &[&str] = &[
    include_str!("../data/nccl-tests/h200x2/all_reduce.txt"),
    include_str!("../data/nccl-tests/h200x2/all_gather.json"),
    include_str!("../data/nccl-tests/h200x2/alltoall.json"),
    include_str!("../data/nccl-tests/h200x2/debug_socket.txt"),
    include_str!("../data/nccl-tests/h200x2/mpi_np2_a3.txt"),
    include_str!("../data/nccl-tests/h200x2/broadcast.txt"),
];

/// Real logs that ingest cleanly, with and without a start line.
const CLEAN: &[&str] = &[
    include_str!("../data/nccl-tests/h200x2/all_reduce.txt"),
    include_str!("../data/nccl-tests/h200x2/broadcast.txt"),
    include_str!("../data/nccl-tests/real/cscs-gh200-srun-2.18.txt"),
    include_str!("../data/nccl-tests/real/gb10-all-gather-two-runs.txt"),
    include_str!("../data/nccl-tests/real/l40s-reducing-maxbytes.txt"),
];

/// A launcher's tag for every line: what `mpirun --tag-output`, `srun -l`, pdsh, SkyPilot or a
/// wrapper script print.
fn launcher() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..64).prop_map(|r| format!("[1,{r}]<stdout>:")),
        (0u32..64).prop_map(|r| format!("{r:>2}: ")),
        "[a-z][a-z0-9-]{0,12}".prop_map(|h| format!("{h}: ")),
        (0u32..8).prop_map(|r| format!("(head, rank={r}, pid=4242) ")),
        "[a-z]{1,6}[0-9]{0,3}".prop_map(|w| format!("{w}| ")),
    ]
}

fn rows_of(text: &str) -> Option<(String, Outcome)> {
    let i = ingest(
        &[LogInput {
            name: "p.txt",
            bytes: text.as_bytes(),
        }],
        None,
    )
    .ok()?;
    let rows: Vec<_> = i
        .results
        .jobs
        .iter()
        .map(|j| (&j.collective, &j.repeats))
        .collect();
    Some((format!("{rows:?}"), i.outcome))
}

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

    /// A launcher tag on every line changes nothing the log says.
    #[test]
    fn prefixed_logs_read_like_plain_ones(which in 0..CLEAN.len(), tag in launcher()) {
        let plain = CLEAN[which];
        let tagged: String = plain.lines().map(|l| format!("{tag}{l}\n")).collect();
        let want = rows_of(plain).expect("the plain log ingests");
        prop_assert_eq!(Some(want), rows_of(&tagged));
    }

    /// Other output between the lines (NCCL INFO from other ranks, launcher chatter) and a cut
    /// anywhere: never a panic, and a log cut before its footer never reads as a clean run.
    #[test]
    fn interleaved_and_truncated_logs(
        which in 0..CLEAN.len(),
        tag in prop::option::of(launcher()),
        noise in prop::collection::vec((any::<usize>(), prop_oneof![
            Just("node9:77:88 [3] NCCL INFO Channel 00/0 : 3[3] -> 0[0] via P2P/IPC".to_string()),
            Just("Warning: Permanently added 'node9' (ED25519) to the list of known hosts.".to_string()),
            Just("#".to_string()),
            "[ -~]{0,60}",
        ]), 0..8),
        cut in any::<usize>(),
    ) {
        let mut lines: Vec<String> = CLEAN[which].lines().map(str::to_string).collect();
        for (at, l) in noise {
            lines.insert(at % (lines.len() + 1), l);
        }
        let keep = cut % (lines.len() + 1);
        lines.truncate(keep);
        let text: String = lines
            .iter()
            .map(|l| format!("{}{l}\n", tag.as_deref().unwrap_or("")))
            .collect();
        run(text.as_bytes(), None);
        let footer = ["Out of bounds values", "Avg bus bandwidth", "Collective test concluded"];
        let last_run = text.rfind("# nThread").map_or(text.as_str(), |at| &text[at..]);
        if !footer.iter().any(|f| last_run.contains(f))
            && let Some((_, outcome)) = rows_of(&text)
        {
            prop_assert!(outcome >= Outcome::RunFailed, "a cut log read as {:?}", outcome);
        }
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
