//! Hostile or broken input ends in a clean error, in bounded time: never a panic, a hang or an
//! unbounded allocation.

use std::time::{Duration, Instant};

use baton::plan::{MAX_PLAN_BYTES, parse_bytes};

#[track_caller]
fn rejected(bytes: &[u8], text: &str) {
    let t = Instant::now();
    let r = parse_bytes("hostile.yaml", bytes);
    let took = t.elapsed();
    let report = r.expect_err("hostile input must be rejected");
    let msgs: Vec<&str> = report
        .diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    assert!(
        msgs.iter().any(|m| m.contains(text)),
        "no message with {text:?} in {msgs:?}"
    );
    // A correctness bound, not a benchmark: unbounded work (the 24 GB alias bomb, a parse of
    // every node of a 7 MiB plan) takes minutes; a debug build on a loaded 2-core CI machine
    // takes seconds, so the bound sits far above that.
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

#[test]
fn alias_bomb() {
    let mut y = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    let mut prev = 'a';
    for c in 'b'..='z' {
        y.push_str(&format!("{c}: &{c} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
        prev = c;
    }
    rejected(y.as_bytes(), "too many alias expansions (YAML alias bomb?)");
}

#[test]
fn file_over_the_limit() {
    let big = vec![b'#'; MAX_PLAN_BYTES + 1];
    rejected(&big, "plans are limited to 8 MiB");
}

#[test]
fn fifty_megabyte_file_on_disk_is_refused_before_reading() {
    let dir = std::env::temp_dir().join(format!("baton-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("huge.yaml");
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(50 << 20).unwrap();
    let err = baton::plan::load_file(&path).unwrap_err();
    assert!(err.to_string().contains("error"), "{err}");
    match err {
        baton::plan::LoadError::Invalid(r) => {
            assert!(r.diagnostics[0].message.contains("limited to 8 MiB"))
        }
        other => panic!("{other}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn large_document_hits_the_node_budget() {
    let mut y = String::from("version: 1\nname: t\ntests:\n");
    while y.len() < 7 << 20 {
        y.push_str("  - 1\n");
    }
    rejected(y.as_bytes(), "the plan has more than 200000 YAML nodes");
}

#[test]
fn deeply_nested_document() {
    let depth = 100_000;
    let y = "[".repeat(depth) + &"]".repeat(depth);
    rejected(y.as_bytes(), "the plan nests deeper than 48 levels");
    let mut y = String::new();
    for i in 0..3_000 {
        y.push_str(&" ".repeat(i));
        y.push_str("k:\n");
    }
    rejected(y.as_bytes(), "the plan nests deeper than 48 levels");
}

#[test]
fn nesting_at_the_limit_does_not_depend_on_the_callers_stack() {
    // Parsing 48 levels takes about 2 MiB of stack in a debug build; a caller on a small thread
    // still gets the diagnostic, not a stack overflow.
    let mut y = String::new();
    for i in 0..60 {
        y.push_str(&format!("{}k{i}:\n", " ".repeat(i)));
    }
    let short = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            parse_bytes("deep.yaml", y.as_bytes())
                .map(|_| ())
                .map_err(|r| r.short())
        })
        .unwrap()
        .join()
        .unwrap()
        .unwrap_err();
    assert!(
        short.contains("the plan nests deeper than 48 levels"),
        "{short}"
    );
}

#[test]
fn binary_garbage() {
    let bytes: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let r = parse_bytes("garbage.bin", &bytes).unwrap_err();
    assert!(!r.diagnostics.is_empty());
    rejected(b"version: 1\x00\x01\x02", "control character");
}

#[test]
fn empty_and_comment_only_files() {
    rejected(b"", "plan is empty");
    rejected(b"   \n\n", "plan is empty");
    rejected(b"# just a comment\n", "plan is empty");
}

#[test]
fn non_utf8() {
    rejected(
        b"version: 1\nname: caf\xe9\n",
        "not valid UTF-8 (byte 0xe9 at line 2, column 10)",
    );
}

#[test]
fn not_a_mapping_and_several_documents() {
    rejected(b"- just\n- a list\n", "the plan must be a mapping");
    rejected(
        b"version: 1\n---\nversion: 1\n",
        "a plan is one YAML document; found a second one (`---`)",
    );
    rejected(b"\"a string\"", "the plan must be a mapping");
}

#[test]
fn fuzzer_findings_end_in_diagnostics() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/plans/fuzz-crashes");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let t = Instant::now();
        let r = parse_bytes(&path.display().to_string(), &bytes);
        assert!(t.elapsed() < Duration::from_secs(60), "{}", path.display());
        let report = r.expect_err(&format!("{} should be rejected", path.display()));
        assert!(report.has_errors());
        n += 1;
    }
    assert!(n >= 4, "reproducers missing from {}", dir.display());
}

/// #36 finding 12: a duration past what any run lasts (`timeout: 18446744073709551615s` passed
/// `check`, then every rank worker panicked adding it to the clock) is refused where it is
/// written, for every duration-typed key.
#[test]
fn durations_past_any_run_are_refused_at_check() {
    let plan = |top: &str, test: &str| {
        format!(
            "version: 1\nname: d\nbackend: mpi\nlaunch: {{ nodes: 1, ranks_per_node: 2 }}\n{top}tests:\n  - name: t\n    collective: all_reduce\n    sizes: [1K]\n{test}"
        )
    };
    for text in [
        plan("defaults:\n  timeout: 18446744073709551615s\n", ""),
        plan("", "    timeout: 18446744073709551615s\n"),
        plan("", "    repeat: 18446744073709551615s\n"),
        plan("defaults: { timeout: 400d }\n", ""),
        plan("", "    repeat: 99999999999h\n"),
    ] {
        rejected(text.as_bytes(), "at most");
    }
    // A long soak and a generous timeout stay valid.
    let long = plan("defaults: { timeout: 2h }\n", "    repeat: 24h\n");
    parse_bytes("ok.yaml", long.as_bytes()).expect("valid");
}
