//! NCCL's own lines on the simulated cluster (issue #25): the rank program on one node prints a
//! WARN line in NCCL's format, timestamped as NCCL stamps it, into its srun step's output; the
//! line joins that node's evidence of every pair it ran in and no other node's, is a warning on
//! it while its sets pass, and fails nothing.
#![cfg(feature = "mpi")]

use crate::common;

use common::cluster::{cluster_of, nodes_json, run_line, verdict_of};
use common::{code, p, read, show, tmp, write};

#[test]
fn a_nodes_nccl_warn_in_its_step_output_is_its_evidence_and_a_warning_only() {
    let Some(c) = cluster_of(4) else { return };
    let odd = c.nodes[2].clone();
    let d = tmp("cluster-nccl-lines");
    // `baton-mpi` hard-linked as `baton`: the runner finds the rank program beside itself, and
    // there it is a wrapper that prints on `odd`'s first local rank, then execs the real one.
    let bin = d.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::hard_link(env!("CARGO_BIN_EXE_baton-mpi"), bin.join("baton")).unwrap();
    let wrapper = write(
        &bin,
        "baton-mpi",
        &format!(
            "#!/bin/bash\nh=$(cat /proc/sys/kernel/hostname)\n\
             if [ \"$h\" = '{odd}' ] && [ \"${{SLURM_LOCALID:-0}}\" = 0 ]; then\n\
             echo \"[$(date -u '+%F %T')] $h:$$:$$ [0] transport/net_ib.cc:94 NCCL WARN NET/IB : Got async event : port error\" >&2\n\
             fi\nexec '{}' \"$@\"\n",
            env!("CARGO_BIN_EXE_baton-mpi")
        ),
    );
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1
name: nccl-lines
backend: mpi
launch: { ranks_per_node: 2 }
defaults: { iters: 5, warmup: 1, timeout: 30s }
tests:
  - name: pairs
    over: pairs
    collective: all_reduce
    sizes: [64K]
    expect:
      - wrong: 0
",
    );
    let out = d.join("out");
    let o = c.salloc_n(&d, 4, 2, 240, &run_line(p(&bin.join("baton")), &plan, &out));
    assert_eq!(code(&o), 0, "NCCL's lines fail nothing: {}", show(&o));
    let r = baton::results::read(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs.len(), 6, "{}", show(&o));
    for j in &r.jobs {
        let hosts = &j.node_set.as_ref().unwrap().hosts;
        for e in &j.evidence {
            let warned = e.moved().iter().any(|l| l.contains("NCCL WARN NET/IB"));
            assert_eq!(
                warned,
                e.host == odd,
                "{} on {}: {:?}",
                j.id,
                e.host,
                e.moved()
            );
        }
        let on_odd = j.evidence.iter().any(|e| e.host == odd && e.nccl.is_some());
        assert_eq!(on_odd, hosts.contains(&odd), "{}", j.id);
    }
    let n = nodes_json(&out);
    let (v, _) = verdict_of(&n, &odd);
    assert_eq!(v, "passed", "{n:#}");
    let entry = n["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["host"] == odd.as_str())
        .unwrap();
    let warnings = entry["warnings"].to_string();
    assert_eq!(warnings.matches("NCCL WARN NET/IB").count(), 3, "{entry:#}");
    for other in c.nodes[..4].iter().filter(|h| **h != odd) {
        assert_eq!(verdict_of(&n, other).0, "passed", "{n:#}");
    }
    let md = read(&out.join("report/report.md"));
    assert!(md.contains("transport/net_ib.cc:94 NCCL WARN"), "{md}");
}
