//! gather, scatter, alltoallv and hypercube end to end on real Open MPI (host backend, #27):
//! every cell verified on 2, 3, 4, 6 and 8 ranks and in equal and unequal split groups, sizes and counts as nccl-tests'
//! formulas give them, alltoallv under a spread and a traffic matrix, corruption counted.
#![cfg(feature = "mpi")]

use crate::common;

use baton::collective::{Collective, Dtype, Traffic};
use baton::results::{self, JobStatus, Results};

fn plan(ranks: u32, split: &str, extra: &str) -> String {
    format!(
        "version: 1\nname: new4\nbackend: mpi\nlaunch: {{ nodes: 1, ranks_per_node: {ranks} }}\n\
         defaults: {{ iters: 3, warmup: 1 }}\ntests:\n  - name: t\n    collective: [gather, scatter, alltoallv, hypercube]\n\
         \x20   sizes: {{ from: 8, to: 256K, factor: 8 }}\n    root: 1\n{split}    matrix:\n      dtype: [float, int32]\n\
         \x20   expect:\n      - wrong: 0\n{extra}"
    )
}

/// Every cell verified (in-place alltoallv unchecked, as in nccl-tests), and each row's size and
/// count what nccl-tests' formulas give for the group.
fn all_clean(r: &Results, n: u64, traffic: &Traffic) {
    for j in &r.jobs {
        assert_eq!(j.status, JobStatus::Completed, "{}: {:?}", j.id, j.errors);
        let dtype: Dtype = j.dtype;
        for (_, row, p, c) in j.cells() {
            let unchecked =
                j.collective == Collective::AllToAllv && p == results::Placement::InPlace;
            let want = if unchecked { None } else { Some(0) };
            assert_eq!(c.wrong, want, "{} {} {p:?}", j.id, row.requested);
        }
        for row in &j.repeats[0].rows {
            let counts = j.collective.counts_with(row.requested, dtype, n, traffic);
            assert_eq!(
                (row.size, row.count),
                (counts.size_bytes(dtype), counts.param),
                "{} at {}",
                j.id,
                row.requested
            );
        }
    }
}

fn run_clean(name: &str, ranks: u32, split: &str, n: u64) {
    let ran = common::run_plan(name, &plan(ranks, split, ""), &[]);
    let (stdout, stderr) = (common::stdout(&ran.output), common::stderr(&ran.output));
    assert_eq!(ran.output.status.code(), Some(0), "{stdout}\n{stderr}");
    let r = results::read(&ran.out.join("results.json")).unwrap();
    assert_eq!(r.jobs.len(), 8);
    all_clean(&r, n, &Traffic::default());
    // Graded again from the results file: every job of each new collective passes by name.
    let results = ran.out.join("results.json");
    let o = common::baton(&["grade", common::p(&ran.plan), common::p(&results)]);
    let stdout = common::stdout(&o);
    assert_eq!(common::code(&o), 0, "{stdout}");
    for coll in ["gather", "scatter", "alltoallv", "hypercube"] {
        assert!(
            stdout.contains(&format!("t[collective={coll},dtype=float]")),
            "{stdout}"
        );
    }
}

#[test]
fn four_new_collectives_verify_on_two_four_and_eight_ranks() {
    run_clean("new4-2", 2, "", 2);
    run_clean("new4-4", 4, "", 4);
    run_clean("new4-8", 8, "", 8);
}

/// baton's live table prints hypercube's redop as nccl-tests does (an empty field), and
/// `baton ingest` reads such a table back to the same rows.
#[test]
fn a_hypercube_table_prints_a_blank_redop_and_ingests_back() {
    let ran = common::run_plan(
        "hc-table",
        "version: 1\nname: h\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 4 }\ntests:\n  - name: h\n    collective: hypercube\n    sizes: [64K, 1M]\n",
        &[],
    );
    let stdout = common::stdout(&ran.output);
    assert_eq!(ran.output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("     1048576         65536     float              -1"),
        "{stdout}"
    );
    let log = common::write(&ran.dir, "hypercube.log", &stdout);
    let back = ran.dir.join("back.json");
    let o = common::baton(&["ingest", common::p(&log), "-o", common::p(&back)]);
    assert_eq!(common::code(&o), 0, "{}", common::show(&o));
    let (a, b) = (
        results::read(&ran.out.join("results.json")).unwrap(),
        results::read(&back).unwrap(),
    );
    assert_eq!(b.jobs[0].collective, Collective::HyperCube);
    let sizes = |r: &Results| -> Vec<(u64, u64)> {
        r.jobs[0].repeats[0]
            .rows
            .iter()
            .map(|x| (x.size, x.count))
            .collect()
    };
    assert_eq!(sizes(&a), sizes(&b));
}

#[test]
fn four_new_collectives_verify_in_split_groups() {
    run_clean("new4-split", 8, "    split: \"DIV 4\"\n", 4);
}

#[test]
fn alltoallv_spread_and_matrix_follow_nccl_tests_variables() {
    let ran = common::run_plan(
        "a2av-spread",
        "version: 1\nname: v\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 4 }\ntests:\n  - name: v\n    collective: alltoallv\n    sizes: { from: 1K, to: 1M, factor: 32 }\n    env: { NCCL_TESTS_ALLTOALLV_SPREAD: \"0.5\" }\n",
        &[],
    );
    assert_eq!(
        ran.output.status.code(),
        Some(0),
        "{}",
        common::stderr(&ran.output)
    );
    let r = results::read(&ran.out.join("results.json")).unwrap();
    all_clean(&r, 4, &Traffic::Generated { spread: 0.5 });
    // 1 MiB float over 4 ranks at spread 0.5: 1048560 bytes (the per-peer shares rounded to 16).
    let last = r.jobs[0].repeats[0].rows.last().unwrap();
    assert_eq!((last.size, last.count), (1048560, 65536));

    let dir = common::tmp("a2av-matrix");
    let m = common::write(
        &dir,
        "traffic.txt",
        "100 200 150 0\n50 100 75 16\n300 150 200 32\n0 0 4000 48\n",
    );
    let text = format!(
        "version: 1\nname: v\nbackend: mpi\nlaunch: {{ nodes: 1, ranks_per_node: 4 }}\ntests:\n  - name: v\n    collective: alltoallv\n    sizes: [16K]\n    matrix:\n      dtype: [float, int8]\n    env: {{ NCCL_TESTS_ALLTOALLV_MATRIX_FILE: {:?}, NCCL_TESTS_ALLTOALLV_MATRIX_SCALE: \"2\" }}\n",
        m.display().to_string()
    );
    let ran = common::run_plan("a2av-matrix-run", &text, &[]);
    assert_eq!(
        ran.output.status.code(),
        Some(0),
        "{}",
        common::stderr(&ran.output)
    );
    let r = results::read(&ran.out.join("results.json")).unwrap();
    let t = Traffic::parse_matrix(&std::fs::read_to_string(&m).unwrap(), 2.0).unwrap();
    all_clean(&r, 4, &t);
    // Scaled and rounded, rank 2 receives 288 + 144 + 400 + 8000 = 8832 bytes, more than any
    // rank sends (8096): the size column; a matrix's count column is 0.
    let row = &r.jobs[0].repeats[0].rows[0];
    assert_eq!((row.size, row.count), (8832, 0));
}

#[test]
fn a_matrix_over_several_sizes_or_too_small_is_refused_with_why() {
    let dir = common::tmp("a2av-bad");
    let m = common::write(&dir, "traffic.txt", "16 16\n16 16\n");
    let text = format!(
        "version: 1\nname: v\nbackend: mpi\nlaunch: {{ nodes: 1, ranks_per_node: 4 }}\ntests:\n  - name: v\n    collective: alltoallv\n    sizes: [16K]\n    env: {{ NCCL_TESTS_ALLTOALLV_MATRIX_FILE: {:?} }}\n",
        m.display().to_string()
    );
    let ran = common::run_plan("a2av-bad-run", &text, &[]);
    assert_eq!(
        ran.output.status.code(),
        Some(3),
        "{}",
        common::stdout(&ran.output)
    );
    let r = results::read(&ran.out.join("results.json")).unwrap();
    let msg = format!("{:?}", r.jobs[0].errors);
    assert!(
        msg.contains("traffic matrix is 2x2, smaller than the 4 ranks"),
        "{msg}"
    );
}

/// Where `check` cannot know the rank count (ranks an outside mpirun started), the job ends
/// saying why instead of exchanging with a rank that does not exist.
#[test]
fn hypercube_on_three_ranks_says_it_needs_a_power_of_two() {
    let (_, p, out) = common::plan_dir(
        "hc3",
        "version: 1\nname: h\nbackend: mpi\ntests:\n  - name: h\n    collective: hypercube\n    sizes: [1K]\n",
    );
    let o = std::process::Command::new("mpirun")
        .args(["-np", "3", "--oversubscribe", "--allow-run-as-root"])
        .arg(env!("CARGO_BIN_EXE_baton-mpi"))
        .args(["run", p.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .env_remove("BATON_FAULT")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", common::stderr(&o));
    let r = results::read(&out.join("results.json")).unwrap();
    let msg = format!("{:?}", r.jobs[0].errors);
    assert!(
        msg.contains("hypercube needs a power-of-two rank count; this group has 3"),
        "{msg}"
    );
}

#[test]
fn a_corrupted_element_of_each_new_collective_is_counted() {
    for coll in ["gather", "scatter", "alltoallv", "hypercube"] {
        let text = format!(
            "version: 1\nname: c\nbackend: mpi\nlaunch: {{ nodes: 1, ranks_per_node: 4 }}\ntests:\n  - name: c\n    collective: {coll}\n    sizes: [4K]\n    expect:\n      - wrong: 0\n"
        );
        let ran = common::run_plan(
            &format!("corrupt-{coll}"),
            &text,
            &[("BATON_FAULT", "corrupt:rank=2")],
        );
        assert_eq!(
            ran.output.status.code(),
            Some(1),
            "{coll}: {}",
            common::stderr(&ran.output)
        );
        let r = results::read(&ran.out.join("results.json")).unwrap();
        let cell = r.jobs[0].repeats[0].rows[0].out_of_place.as_ref().unwrap();
        assert_eq!(cell.wrong, Some(1), "{coll}");
    }
}

/// Runs plan `text` (as `name`), which must pass, and reads its results.
fn run_ok(name: &str, text: &str) -> Results {
    let ran = common::run_plan(name, text, &[]);
    let (stdout, stderr) = (common::stdout(&ran.output), common::stderr(&ran.output));
    assert_eq!(ran.output.status.code(), Some(0), "{stdout}\n{stderr}");
    results::read(&ran.out.join("results.json")).unwrap()
}

/// gather, scatter and alltoallv (hypercube needs a power of two) on `ranks` ranks, `split`
/// included, rows checked against the formulas for rank 0's group of `n`.
fn run_odd(name: &str, ranks: u32, split: &str, n: u64) {
    let text = format!(
        "version: 1\nname: odd\nbackend: mpi\nlaunch: {{ nodes: 1, ranks_per_node: {ranks} }}\n\
         defaults: {{ iters: 2, warmup: 1 }}\ntests:\n  - name: t\n    collective: [gather, scatter, alltoallv]\n\
         \x20   sizes: [8, 100, 1000, 12345, 256K]\n    root: 1\n{split}    matrix:\n      dtype: [int8, int32, double]\n\
         \x20   expect:\n      - wrong: 0\n"
    );
    let r = run_ok(name, &text);
    assert_eq!(r.jobs.len(), 9);
    all_clean(&r, n, &Traffic::default());
}

/// Rank counts that are not powers of two (16-byte rounding of n-way chunks at sizes that do
/// not divide), and split groups of unequal size (`MOD 3` of 8: 3, 3 and 2 ranks; rank 0's
/// group of 3 is the one printed, as nccl-tests prints rank 0's).
#[test]
fn gather_scatter_alltoallv_verify_on_three_and_six_ranks_and_in_unequal_groups() {
    run_odd("odd-3", 3, "", 3);
    run_odd("odd-6", 6, "", 6);
    run_odd("odd-mod3", 8, "    split: \"MOD 3\"\n", 3);
}

/// Alltoallv's variables inside split groups: the matrix indexed by group rank (each group of
/// `DIV 4` on 8 ranks uses the 4x4 matrix), and spread 0 (uniform shares).
#[test]
fn alltoallv_matrix_and_uniform_spread_hold_in_split_groups() {
    let dir = common::tmp("a2av-split-matrix");
    let m = common::write(
        &dir,
        "traffic.txt",
        "0 64 128 16\n32 0 48 4096\n512 16 0 80\n96 112 1024 0\n",
    );
    let text = format!(
        "version: 1\nname: v\nbackend: mpi\nlaunch: {{ nodes: 1, ranks_per_node: 8 }}\ntests:\n  - name: v\n    collective: alltoallv\n    sizes: [8K]\n    split: \"DIV 4\"\n    matrix:\n      dtype: [float, int8]\n    env: {{ NCCL_TESTS_ALLTOALLV_MATRIX_FILE: {:?} }}\n    expect:\n      - wrong: 0\n",
        m.display().to_string()
    );
    let r = run_ok("a2av-split-matrix-run", &text);
    let t = Traffic::parse_matrix(&std::fs::read_to_string(&m).unwrap(), 1.0).unwrap();
    all_clean(&r, 4, &t);
    // Group rank 3 receives 16 + 4096 + 80 = 4192 bytes, more than any sends (4176, rank 1):
    // the size column; a matrix's count column is 0.
    let row = &r.jobs[0].repeats[0].rows[0];
    assert_eq!((row.size, row.count), (4192, 0));

    let r = run_ok(
        "a2av-split-uniform",
        "version: 1\nname: u\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 6 }\ntests:\n  - name: u\n    collective: alltoallv\n    sizes: [1000, 1M]\n    split: \"MOD 2\"\n    env: { NCCL_TESTS_ALLTOALLV_SPREAD: \"0\" }\n    expect:\n      - wrong: 0\n",
    );
    all_clean(&r, 3, &Traffic::Generated { spread: 0.0 });
    // 1 MiB float in groups of 3 at spread 0: the per-peer chunk 262144 / 3 rounded down to 16
    // bytes, 87380 elements; each peer gets a third of 3 × 87380 × 4 B, 349520 B.
    let last = r.jobs[0].repeats[0].rows.last().unwrap();
    assert_eq!((last.size, last.count), (1048560, 87380));
}
