//! Expansion: job counts, stable IDs, split groups and memory estimates.

use crate::common;

use baton::expand::{Scope, expand};
use baton::plan::parse_str;
use common::env_pairs;

fn plan(yaml: &str) -> baton::plan::Plan {
    match parse_str("p.yaml", yaml) {
        Ok(l) => l.plan,
        Err(r) => panic!("{}", r.short()),
    }
}

const FULL: &str = include_str!("../data/plans/full.yaml");

#[test]
fn full_example_expands_to_matrix_product() {
    let e = expand(&plan(FULL));
    assert_eq!(e.total_jobs, 5);
    let ids: Vec<&str> = e.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "intra-node-allreduce[dtype=float,NCCL_PROTO=Simple]",
            "intra-node-allreduce[dtype=float,NCCL_PROTO=LL128]",
            "intra-node-allreduce[dtype=bfloat16,NCCL_PROTO=Simple]",
            "intra-node-allreduce[dtype=bfloat16,NCCL_PROTO=LL128]",
            "bcast",
        ]
    );
    let j = &e.jobs[3];
    // plan env, then test env, then the matrix entry.
    assert_eq!(
        env_pairs(&j.env),
        [
            ("NCCL_DEBUG", "INFO"),
            ("NCCL_ALGO", "Ring"),
            ("NCCL_PROTO", "LL128")
        ]
    );
    assert_eq!(j.sizes.len(), 31);
    assert_eq!(j.ranks, Some(16));
    assert_eq!(j.expect.len(), 6);
    // bfloat16 at 8 GiB: send + recv + expected.
    assert_eq!(j.memory_per_rank, 3 * (8u64 << 30));
    assert_eq!(e.jobs[4].root, Some(0));
    assert_eq!(e.jobs[4].op, None, "broadcast does not reduce");
}

#[test]
fn split_groups_and_scopes_follow_the_layout() {
    let e = expand(&plan(FULL));
    let g = e.jobs[0].groups.as_ref().unwrap();
    assert_eq!(g.len(), 2);
    assert_eq!(g[1].ranks, (8..16).collect::<Vec<u64>>());
    assert_eq!(g[1].scope, Scope::IntraNode);
    let y = FULL.replace("split: \"DIV 8\"", "split: \"MOD 8\"");
    let e = expand(&plan(&y));
    let g = e.jobs[0].groups.as_ref().unwrap();
    assert_eq!(g.len(), 8);
    assert_eq!(g[3].ranks, vec![3, 11]);
    assert!(g.iter().all(|g| g.scope == Scope::CrossNode));
}

#[test]
fn matrix_axes_multiply_and_name_jobs() {
    let y = "version: 1\nname: m\ntests:\n  - name: t\n    collective: [all_reduce, all_gather]\n    sizes: [1M]\n    matrix:\n      dtype: [float, half, int32]\n      op: [sum, max]\n      split: [\"DIV 2\", \"MOD 2\"]\n";
    let e = expand(&plan(y));
    // all_reduce: 3 dtypes × 2 ops × 2 splits; all_gather does not reduce: 3 × 2.
    assert_eq!(e.total_jobs, 12 + 6);
    assert_eq!(
        e.jobs[0].id,
        "t[collective=all_reduce,dtype=float,op=sum,split=DIV 2]"
    );
    assert_eq!(
        e.jobs[12].id,
        "t[collective=all_gather,dtype=float,split=DIV 2]"
    );
    let mut ids: Vec<&str> = e.jobs.iter().map(|j| j.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), e.total_jobs, "job IDs are unique");
    assert!(
        e.jobs
            .iter()
            .all(|j| j.ranks.is_none() && j.groups.is_none()),
        "layout unknown → auto"
    );
}

#[test]
fn ids_are_stable_across_expansions() {
    let a: Vec<String> = expand(&plan(FULL)).jobs.into_iter().map(|j| j.id).collect();
    let b: Vec<String> = expand(&plan(FULL)).jobs.into_iter().map(|j| j.id).collect();
    assert_eq!(a, b);
}

#[test]
fn reduce_scatter_memory_divides_expected_by_ranks() {
    let y = "version: 1\nname: m\nlaunch: { nodes: 1, ranks_per_node: 8 }\ntests:\n  - name: rs\n    collective: reduce_scatter\n    sizes: [8G]\n";
    let e = expand(&plan(y));
    assert_eq!(e.jobs[0].memory_per_rank, 2 * (8u64 << 30) + (1u64 << 30));
    let y = y.replace("sizes: [8G]", "sizes: [8G]\n    check: false");
    assert_eq!(expand(&plan(&y)).jobs[0].memory_per_rank, 2 * (8u64 << 30));
}

#[test]
fn sweeps_stop_at_the_last_size_not_above_to() {
    let y = "version: 1\nname: m\ntests:\n  - name: s\n    collective: all_reduce\n    sizes: { from: 3, to: 100, factor: 4 }\n  - name: st\n    collective: all_reduce\n    sizes: { from: 1M, to: 4M, step: 1M }\n";
    let e = expand(&plan(y));
    assert_eq!(*e.jobs[0].sizes, vec![3, 12, 48]);
    assert_eq!(*e.jobs[1].sizes, vec![1 << 20, 2 << 20, 3 << 20, 4 << 20]);
}

#[test]
fn hundred_thousand_jobs_expand() {
    // 10 tests × 5 collectives... built as 4 axes of 10 values × 10 tests × 10 env entries.
    let mut y = String::from("version: 1\nname: big\ntests:\n");
    for t in 0..10 {
        y.push_str(&format!(
            "  - name: t{t}\n    collective: all_reduce\n    sizes: {{ from: 8, to: 1G, factor: 2 }}\n    matrix:\n      dtype: [int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16]\n      op: [sum, prod, min, max, avg]\n      split: [\"DIV 1\", \"DIV 2\", \"DIV 4\", \"DIV 8\", \"MOD 2\", \"MOD 4\", \"MOD 8\", \"OR 1\", \"OR 3\", \"AND 7\"]\n      env:\n"
        ));
        for v in 0..20 {
            y.push_str(&format!("        - {{ X: \"{v}\" }}\n"));
        }
    }
    let e = expand(&plan(&y));
    assert_eq!(e.total_jobs, 10 * 10 * 5 * 10 * 20);
}

/// `over: gpu-pairs` on two nodes of 8 GPUs: seven rounds, one job each, every GPU pair of a
/// node met once, pairs never leave their node; the job IDs name the round.
#[test]
fn gpu_pairs_expands_to_circle_rounds_inside_each_node() {
    let e = expand(&plan(
        "version: 1
name: p
launch: { nodes: 2, ranks_per_node: 8 }
tests:
  - name: nvlink
    collective: all_reduce
    sizes: [1G]
    over: gpu-pairs
",
    ));
    assert_eq!(e.total_jobs, 7);
    assert_eq!(e.jobs[0].id, "nvlink[split=PAIRS 1/7]");
    let mut met = std::collections::BTreeSet::new();
    for j in &e.jobs {
        let g = j.groups.as_ref().unwrap();
        assert_eq!(g.len(), 8, "{}", j.id);
        for grp in g.iter() {
            assert_eq!(grp.ranks.len(), 2);
            assert_eq!(grp.scope, Scope::IntraNode, "{}", j.id);
            assert!(met.insert(grp.ranks.clone()));
        }
    }
    assert_eq!(met.len(), 2 * 28);
}

#[test]
fn gpu_pairs_needs_an_even_known_gpu_count_and_no_split() {
    let bad = |launch: &str, extra: &str| {
        let y = format!(
            "version: 1\nname: p\nlaunch: {launch}\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [1M]\n    over: gpu-pairs\n{extra}"
        );
        match parse_str("p.yaml", &y) {
            Ok(_) => panic!("accepted: {y}"),
            Err(r) => r.short(),
        }
    };
    let e = bad("{ nodes: 1, ranks_per_node: 3 }", "");
    assert!(e.contains("even number of ranks per node, not 3"), "{e}");
    let e = bad("{ nodes: 1, ranks_per_node: 4 }", "    split: DIV 2\n");
    assert!(e.contains("drop `split`"), "{e}");
}
