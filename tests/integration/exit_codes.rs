//! Exit codes where `run` meets bad input (issue #20, F15): an `-o` that is a file, a `--resume`
//! onto another node list and plain `baton` started as a rank of a `backend: mpi` plan are the
//! user's input (exit 2), not runtime failures (3).
#![cfg(feature = "mpi")]

use crate::common;

use common::*;

#[test]
fn run_into_a_file_is_invalid_input_and_leaves_it() {
    let d = tmp("exit-out-file");
    let plan = write(
        &d,
        "p.yaml",
        &read(std::path::Path::new("plans/examples/quickstart.yaml")),
    );
    let file = write(&d, "results.txt", "keep");
    let o = baton(&["run", p(&plan), "-o", p(&file)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("not a directory"), "{}", show(&o));
    assert_eq!(read(&file), "keep");
}

#[test]
fn resume_onto_another_node_list_is_invalid_input_and_keeps_the_results() {
    let d = tmp("exit-resume-nodes");
    let agent = common::localsets::agent(&d, &[], None);
    let plan = write(
        &d,
        "p.yaml",
        "version: 1\nname: r\nbackend: mpi\nlaunch: { ranks_per_node: 1 }\nnodes: { hostlist: \"n[1-2]\" }\ndefaults: { iters: 2, warmup: 1, timeout: 20s }\ntests:\n  - name: e\n    over: each-node\n    collective: all_reduce\n    sizes: [8]\n    expect: [ { wrong: 0 } ]\n",
    );
    let out = d.join("out");
    let env = [
        ("OMPI_MCA_plm_rsh_agent", p(&agent)),
        ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
        ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
    ];
    let o = baton_env(&["run", p(&plan), "-o", p(&out)], &env);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let (results, junit) = (
        read(&out.join("results.json")),
        read(&out.join("junit.xml")),
    );
    let o = baton_env(
        &[
            "run",
            p(&plan),
            "-o",
            p(&out),
            "--resume",
            "--nodes",
            "n[1-3]",
        ],
        &env,
    );
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("measured on n[1-2], this run's node list is n[1-3]"),
        "{}",
        show(&o)
    );
    assert_eq!(read(&out.join("results.json")), results);
    assert_eq!(
        read(&out.join("junit.xml")),
        junit,
        "the run's junit.xml is its own"
    );
}

#[test]
fn plain_baton_as_a_rank_of_an_mpi_plan_is_invalid_input_with_junit_from_rank_0() {
    let d = tmp("exit-mpi-rank");
    let plan = write(
        &d,
        "p.yaml",
        &read(std::path::Path::new("plans/examples/quickstart.yaml")),
    );
    for rank in ["1", "0"] {
        let out = d.join(format!("out{rank}"));
        let o = baton_env(
            &["run", p(&plan), "-o", p(&out)],
            &[
                ("BATON_RANK", rank),
                ("BATON_SIZE", "2"),
                ("BATON_RUN_KEY", "k"),
            ],
        );
        assert_eq!(code(&o), 2, "rank {rank}: {}", show(&o));
        assert!(
            stderr(&o).contains("launch `baton-mpi run`"),
            "{}",
            show(&o)
        );
        assert_eq!(out.join("junit.xml").exists(), rank == "0", "rank {rank}");
    }
    let junit = read(&d.join("out0/junit.xml"));
    assert!(
        junit.contains("<error") && junit.contains("baton-mpi run"),
        "{junit}"
    );
}
