//! The shipped acceptance floors against real clusters: nccl-tests logs that users published
//! (tests/data/real-logs, each with its source in SOURCES.md) are ingested and graded by the
//! shipped phase plans of acceptance/nccl-8gpu, through `baton ingest` and `baton grade`. Healthy
//! clusters pass; known-bad ones fail, each for its own reason. When a shipped floor changes,
//! this test says whether the real clusters still pass.

use crate::common::*;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One published log and what the shipped plan must say of it.
struct Case {
    log: &'static str,
    collective: &'static str,
    /// Phase plan under acceptance/nccl-8gpu, and the test in it the log measured.
    phase: &'static str,
    test: &'static str,
    /// The node set the acceptance would run the phase on: nodes and ranks per node.
    nodes: u32,
    ranks_per_node: u32,
    /// `None`: passes. `Some(why)`: fails, and the verdict says `why`.
    fails: Option<&'static str>,
}

const A: &str = "phase-a-node.yaml";
const B: &str = "phase-b-pair.yaml";
const C: &str = "phase-c-cluster.yaml";
const D: &str = "phase-d-alltoall.yaml";
const E: &str = "phase-e-soak.yaml";

const CASES: &[Case] = &[
    // Healthy: single node, 8x H100 SXM with NVLS (473.6 GB/s at 4 GiB).
    Case {
        log: "public/nccl-tests-290-h100x8-single-node.txt",
        collective: "all_reduce",
        phase: A,
        test: "allreduce-intra-node",
        nodes: 1,
        ranks_per_node: 1,
        fails: None,
    },
    // Healthy pairs: NDR 400 IB (466.5, 465.8), OCI H200 RoCE (480.6) and GCP GPUDirect-TCPXO
    // (330.6, the slowest).
    Case {
        log: "public/nccl-tests-309-h100x16-two-nodes-ndr.txt",
        collective: "all_reduce",
        phase: B,
        test: "allreduce-1g-4g",
        nodes: 2,
        ranks_per_node: 8,
        fails: None,
    },
    Case {
        log: "public/nccl-tests-309-h100x16-two-of-eight-nodes.txt",
        collective: "all_reduce",
        phase: B,
        test: "allreduce-1g-4g",
        nodes: 2,
        ranks_per_node: 8,
        fails: None,
    },
    Case {
        log: "public/oci-h200x16-two-nodes-roce.txt",
        collective: "all_reduce",
        phase: B,
        test: "allreduce-1g-4g",
        nodes: 2,
        ranks_per_node: 8,
        fails: None,
    },
    Case {
        log: "public/gcp-h100x16-two-nodes-tcpx.txt",
        collective: "all_reduce",
        phase: B,
        test: "allreduce-1g-4g",
        nodes: 2,
        ranks_per_node: 8,
        fails: None,
    },
    // Healthy clusters of 4 nodes (363.5, which a maintainer called "a good number"; 325.0).
    Case {
        log: "public/nccl-tests-309-h100x32-four-nodes.txt",
        collective: "all_reduce",
        phase: C,
        test: "allreduce-1g-4g",
        nodes: 4,
        ranks_per_node: 8,
        fails: None,
    },
    Case {
        log: "public/nccl-tests-309-h100x32-four-of-eight-nodes.txt",
        collective: "all_reduce",
        phase: C,
        test: "allreduce-1g-4g",
        nodes: 4,
        ranks_per_node: 8,
        fails: None,
    },
    Case {
        log: "public/nccl-tests-309-h100x32-four-of-eight-nodes.txt",
        collective: "all_reduce",
        phase: E,
        test: "allreduce-soak",
        nodes: 4,
        ranks_per_node: 8,
        fails: None,
    },
    // Known-bad: a pair at a third of its fabric (154.7 GB/s), validation off.
    Case {
        log: "public/nccl-tests-290-h100x16-two-nodes-slow.txt",
        collective: "all_reduce",
        phase: B,
        test: "allreduce-1g-4g",
        nodes: 2,
        ranks_per_node: 8,
        fails: Some("busbw 154.74 GB/s < 330 GB/s at 4G"),
    },
    // Known-bad: the same pair with NCCL_ALGO=RING: 89.9 GB/s over 8 rails, ~11 GB/s a rail.
    Case {
        log: "public/nccl-tests-290-h100x16-two-nodes-ring-slow-rails.txt",
        collective: "all_reduce",
        phase: B,
        test: "allreduce-1g-4g",
        nodes: 2,
        ranks_per_node: 8,
        fails: Some("busbw 89.9 GB/s < 330 GB/s at 4G"),
    },
    // Known-bad: alltoall collapsing from 16 MiB up (10.1 GB/s at 1 GiB), 2 nodes on RoCE.
    Case {
        log: "public/cx8-rtx6000d-x16-alltoall-collapse.txt",
        collective: "alltoall",
        phase: D,
        test: "alltoall-stress",
        nodes: 2,
        ranks_per_node: 8,
        fails: Some("busbw 10.08 GB/s < 40 GB/s at 1G"),
    },
    // Known-bad: wrong elements on every row (2 nodes, one RTX 3090 each).
    Case {
        log: "../nccl-tests/real/rtx3090-wrong-108-failed.txt",
        collective: "all_reduce",
        phase: B,
        test: "allreduce-1g-4g",
        nodes: 2,
        ranks_per_node: 1,
        fails: Some("wrong == 0: "),
    },
];

/// The shipped phase plan with the node set the acceptance gives it (`launch.nodes`, ranks per
/// node), criteria untouched.
fn phase_plan(dir: &Path, phase: &str, nodes: u32, ranks_per_node: u32) -> PathBuf {
    let text = read(&root().join("acceptance/nccl-8gpu").join(phase));
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("ranks_per_node:") && phase != A {
            out.push_str(&format!("  ranks_per_node: {ranks_per_node}\n"));
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if line == "launch:" {
            out.push_str(&format!("  nodes: {nodes}\n"));
        }
    }
    write(dir, &format!("{nodes}-{ranks_per_node}-{phase}"), &out)
}

#[test]
fn shipped_floors_pass_healthy_public_clusters_and_fail_the_known_bad_for_their_reason() {
    let d = tmp("real_logs_shipped_floors");
    for (i, c) in CASES.iter().enumerate() {
        let log = root().join("tests/data/real-logs").join(c.log);
        let results = d.join(format!("{i}.json"));
        let o = baton(&[
            "ingest",
            p(&log),
            "-o",
            p(&results),
            "--collective",
            c.collective,
            "--job",
            c.test,
        ]);
        assert!(results.exists(), "{}: {}", c.log, show(&o));
        let plan = phase_plan(&d, c.phase, c.nodes, c.ranks_per_node);
        let o = baton(&["grade", p(&plan), p(&results)]);
        let out = stdout(&o);
        match c.fails {
            None => assert_eq!(code(&o), 0, "{} under {}: {}", c.log, c.phase, show(&o)),
            Some(why) => {
                assert_eq!(code(&o), 1, "{} under {}: {}", c.log, c.phase, show(&o));
                assert!(out.contains(why), "{} fails for `{why}`: {out}", c.log);
            }
        }
    }
}

/// The shipped profile rows against the public single-node logs of their hardware: graded as a
/// plan grades them (`busbw >= 90% of profile`, the fleet's slack), healthy nodes pass.
#[test]
fn shipped_profile_rows_pass_the_public_healthy_nodes_of_their_hardware() {
    let d = tmp("real_logs_profiles");
    for (log, profile, at) in [
        (
            "public/nccl-tests-290-h100x8-single-node.txt",
            "h100-sxm-8",
            "4G",
        ),
        ("public/azure-h200x8-single-node-8g.txt", "h200-sxm-8", "8G"),
    ] {
        let path = root().join("tests/data/real-logs").join(log);
        let results = d.join(format!("{profile}.json"));
        let o = baton(&[
            "ingest",
            p(&path),
            "-o",
            p(&results),
            "--collective",
            "all_reduce",
            "--job",
            "node",
        ]);
        assert!(results.exists(), "{log}: {}", show(&o));
        let plan = write(
            &d,
            &format!("{profile}.yaml"),
            &format!(
                "version: 1\nname: p\nbackend: nccl\nprofile: {profile}\nlaunch: {{ nodes: 1, ranks_per_node: 8 }}\ntests:\n  - name: node\n    collective: all_reduce\n    sizes: [{at}]\n    expect:\n      - busbw: \">= 90% of profile\"\n"
            ),
        );
        let o = baton(&["grade", p(&plan), p(&results)]);
        assert_eq!(code(&o), 0, "{log} against {profile}: {}", show(&o));
    }
}

/// nccl-tests 2.19.6 on one H200 (made by this project, tests/data/real-logs/h200x1-2.19.6):
/// every collective's log grades clean under a plan of the same run, and the one-rank busbw of
/// 0 is what the results hold (no floor can pass on it: `baton check` says so).
#[test]
fn the_one_gpu_logs_of_every_collective_grade() {
    let d = tmp("real_logs_h200x1");
    for c in [
        "all_reduce",
        "all_gather",
        "broadcast",
        "reduce",
        "reduce_scatter",
        "alltoall",
        "sendrecv",
    ] {
        let log = root().join(format!("tests/data/real-logs/h200x1-2.19.6/{c}.txt"));
        let results = ingest(&d, &format!("{c}.json"), &[&log], Some("one-gpu"));
        let plan = write(
            &d,
            &format!("{c}.yaml"),
            &format!(
                "version: 1\nname: one-gpu-{c}\nbackend: nccl\nlaunch:\n  nodes: 1\n  ranks_per_node: 1\ntests:\n  - name: one-gpu\n    collective: {c}\n    sizes: {{ from: 8, to: 1G, factor: 2 }}\n    expect:\n      - wrong: 0\n"
            ),
        );
        let o = baton(&["grade", p(&plan), p(&results)]);
        assert_eq!(code(&o), 0, "{c}: {}", show(&o));
    }
}

/// Every public log of the corpus ingests (with the collective its source names).
#[test]
fn every_public_log_of_the_corpus_ingests() {
    let d = tmp("real_logs_ingest");
    let dir = root().join("tests/data/real-logs/public");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let coll = if name.contains("alltoall") {
            "alltoall"
        } else {
            "all_reduce"
        };
        let out = d.join(format!("{name}.json"));
        let o = baton(&["ingest", p(&path), "-o", p(&out), "--collective", coll]);
        assert!(out.exists(), "{name}: {}", show(&o));
        n += 1;
    }
    assert!(n >= 13, "{n} public logs");
}
