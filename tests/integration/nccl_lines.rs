//! NCCL's own lines in a job's output become that job's node evidence, through the real
//! launcher paths: `baton run`'s mpirun workers (a wrapper rank program prints recorded NCCL
//! lines, then execs the real `baton-mpi`), and node sets over named hosts whose step output
//! carries them (`common::localsets`). The lines reach the user as before, land on the job
//! and node that printed them, are cited by a failing job and warned of on a passing one, and
//! never fail anything by themselves.
#![cfg(feature = "mpi")]

use crate::common;

use std::path::Path;

use common::{code, p, show, write};

/// A directory holding `baton` (the built binary, hard-linked: it finds its worker beside
/// itself) and, as `baton-mpi`, a wrapper that prints `lines` on rank 1 of a worker whose
/// environment has `TEST_NCCL_LINES`, then execs the real `baton-mpi`.
fn wrapped(dir: &Path, lines: &str) -> std::path::PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::hard_link(env!("CARGO_BIN_EXE_baton"), bin.join("baton")).unwrap();
    let real = Path::new(env!("CARGO_BIN_EXE_baton")).with_file_name("baton-mpi");
    let script = format!(
        "#!/bin/bash\nif [ -n \"$TEST_NCCL_LINES\" ] && [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then\n\
         h=$(cat /proc/sys/kernel/hostname)\n{lines}\nfi\nexec '{}' \"$@\"\n",
        real.display()
    );
    let w = write(&bin, "baton-mpi", &script);
    std::fs::set_permissions(&w, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    bin.join("baton")
}

const LOCAL: &str = "version: 1
name: nccl-lines
backend: mpi
launch: { ranks_per_node: 2 }
defaults: { iters: 2, warmup: 1 }
tests:
  - name: warns-passes
    collective: all_reduce
    sizes: [1K]
    env: { TEST_NCCL_LINES: pass }
  - name: warns-fails
    collective: all_reduce
    sizes: [1K]
    env: { TEST_NCCL_LINES: fail }
    expect:
      - busbw: \">= 1000 GB/s\"
  - name: after
    collective: all_reduce
    sizes: [1K]
    env: { TEST_NCCL_LINES: fail }
";

#[test]
fn a_workers_nccl_lines_join_its_job_on_its_node_and_a_failing_criterion_cites_them() {
    let d = common::tmp("nccl-lines-local");
    let baton = wrapped(
        &d,
        "echo \"$h:$$:$$ [0] transport/net_ib.cc:94 NCCL WARN NET/IB : Got async event : port error\" >&2\n\
         echo \"[$(date -u '+%F %T')] $h:$$:$$ [0] NCCL WARN NET/IB : mlx5_0:1 GID table changed\"\n\
         echo \"$h:$$ NCCL DIAG [INFO] NCCL environment: MY_TOKEN=hunter2 on rank(s) {1}\"",
    );
    let plan = write(&d, "plan.yaml", LOCAL);
    let out = d.join("out");
    let o = std::process::Command::new(&baton)
        .args(["run", p(&plan), "-o", p(&out)])
        .env("NO_COLOR", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env_remove("BATON_FAULT")
        .output()
        .unwrap();
    let all = show(&o);
    // Only the impossible criterion fails the run; NCCL's lines still reach the user.
    assert_eq!(code(&o), 1, "{all}");
    assert!(
        all.contains("NCCL WARN NET/IB : Got async event : port error"),
        "{all}"
    );
    assert!(
        !all.contains(") starts warns-"),
        "the workers' job marks stay between baton and its workers: {all}"
    );

    let host = baton::host::hostname();
    let r = common::results(&out.join("results.json"));
    let job = |id: &str| r.jobs.iter().find(|j| j.id == id).unwrap();
    let lines = |id: &str| -> Vec<String> {
        job(id)
            .evidence
            .iter()
            .filter(|e| e.host == host)
            .flat_map(|e| e.moved())
            .filter(|l| l.contains("NCCL") || l.contains("GID"))
            .collect()
    };
    for id in ["warns-passes", "warns-fails"] {
        let l = lines(id);
        // However late the parent heard them (two pipes, a busy machine): the worker's marks
        // place them; in no set order (stderr and stdout are read apart).
        assert_eq!(l.len(), 3, "{id}: {l:?}");
        for said in [
            "NCCL WARN NET/IB : Got async event : port error at ",
            "mlx5_0:1 GID table changed at ",
        ] {
            assert!(l.iter().any(|x| x.starts_with(said)), "{id}: {l:?}");
        }
    }
    assert_eq!(
        lines("after"),
        Vec::<String>::new(),
        "the next job of the worker"
    );
    let text = std::fs::read_to_string(out.join("results.json")).unwrap();
    assert!(!text.contains("hunter2") && text.contains("MY_TOKEN=<redacted>"));

    // The failing job's criterion cites them; the passing job passes with them.
    let junit = common::read(&out.join("junit.xml"));
    let case = |id: &str| {
        let at = junit
            .find(&format!("<testsuite name=\"{id}\""))
            .unwrap_or_else(|| panic!("{id} in {junit}"));
        let rest = &junit[at..];
        rest[..rest.find("</testsuite>").unwrap_or(rest.len())].to_string()
    };
    assert!(!case("warns-passes").contains("<failure"), "{junit}");
    let failing = case("warns-fails");
    // The citation lists the host's lines as they were heard: stderr's and stdout's in either
    // order.
    let cited = failing
        .find(&format!("moved during the job: {host} "))
        .map(|at| &failing[at..]);
    assert!(
        failing.contains("<failure")
            && cited.is_some_and(|c| {
                c.lines().next().is_some_and(|l| {
                    l.contains("NCCL WARN NET/IB : Got async event : port error at ")
                })
            }),
        "{failing}"
    );
    let md = common::read(&out.join("report/report.md"));
    assert!(
        md.contains("transport/net_ib.cc:94 NCCL WARN NET/IB : Got async event : port error"),
        "the report's timeline holds the line: {md}"
    );
}

#[test]
fn a_node_sets_step_output_carries_its_nodes_nccl_lines_into_reasons_and_warnings_never_blame() {
    let d = common::tmp("nccl-lines-sets");
    let agent = common::localsets::agent_printing(
        &d,
        "n2",
        &[
            "n2:4242:4242 [0] transport/net_ib.cc:94 NCCL WARN NET/IB : Got async event : port error",
        ],
    );
    let plan = write(
        &d,
        "p.yaml",
        "version: 1
name: nccl-lines-sets
backend: mpi
launch: { ranks_per_node: 1 }
nodes: { hostlist: \"n[1-3]\" }
defaults: { iters: 2, warmup: 1, timeout: 30s }
tests:
  - name: fine
    over: each-node
    collective: all_reduce
    sizes: [1K]
  - name: strict
    over: pairs
    collective: all_reduce
    sizes: [1K]
    expect:
      - busbw: \">= 1000 GB/s\"
",
    );
    let out = d.join("out");
    let o = common::localsets::baton_over(&agent, &["run", p(&plan), "-o", p(&out)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    let r = common::results(&out.join("results.json"));
    let on = |test: &str, host: &str| -> usize {
        r.jobs
            .iter()
            .filter(|j| j.test == test)
            .flat_map(|j| &j.evidence)
            .filter(|e| e.host == host)
            .flat_map(|e| e.moved())
            .filter(|l| l.contains("NCCL WARN NET/IB : Got async event"))
            .count()
    };
    // n2's each-node set, and n2's two pairs; never n1 or n3 alone.
    assert_eq!((on("fine", "n2"), on("strict", "n2")), (1, 2), "{r:#?}");
    assert_eq!(on("fine", "n1") + on("fine", "n3") + on("strict", "n1"), 0);

    let n = common::localsets::nodes_json(&out);
    let n2 = common::localsets::node(&n, "n2");
    let why = n2["reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("NCCL WARN NET/IB : Got async event : port error at "),
        "{n2:#}"
    );
    let warned = n2["warnings"].to_string();
    assert!(
        warned.contains("NCCL WARN NET/IB : Got async event"),
        "{n2:#}"
    );
    // The pair of n1 and n3 fails on the criterion alone, and cites nothing of n2's.
    let n1 = common::localsets::node(&n, "n1").to_string();
    assert!(!n1.contains("NCCL WARN"), "{n1}");
    // NCCL's report alone singles no node out: n2 stands as its partners do.
    for h in ["n1", "n2", "n3"] {
        assert_eq!(
            common::localsets::node(&n, h)["verdict"],
            "suspect",
            "{n:#}"
        );
    }
    let md = common::read(&out.join("report/report.md"));
    assert!(md.contains("NCCL WARN NET/IB : Got async event"), "{md}");
}
