//! The fleet consistency preflight of a node-set run: before the bandwidth rounds, every node
//! of the node list runs `baton probe --format json` in one launcher step (`srun` with a file
//! per node; outside Slurm an `mpirun -H` per node, all at once), bounded in time and bytes.
//! Each snapshot's inventory is compared with the fleet's majority and the plan's `fleet:`;
//! a node that differs is left out of every round (`config-mismatch`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::super::supervise::{Limit, Output, supervise};
use super::{Ctx, Nodes, Step};
use crate::nodeset::compress;
use crate::nodeset::fleet;
use crate::probe::{Snapshot, inventory::inventory};
use crate::results::evidence::{Preflight, PreflightNode};

/// How long the whole preflight may take: a probe takes tens of milliseconds, starting a step
/// on every node a few seconds; a node that hangs (frozen) costs this once.
const LIMIT: Duration = Duration::from_secs(20);
/// The most bytes of one node's snapshot read.
const MAX_SNAPSHOT: usize = 8 << 20;

/// Snapshots every host of `hosts` and compares them.
pub(super) fn run(ctx: &Ctx<'_>, hosts: &[String]) -> Preflight {
    let started = std::time::Instant::now();
    let dir = ctx.opts.out_dir.join("preflight");
    let _ = crate::output::ensure_dir(&dir);
    let gpus = ctx.plan.backend == crate::plan::Backend::Nccl;
    match &ctx.step {
        Step::Srun { srun, .. } => {
            let mut c = Command::new(srun);
            // The probe is no MPI program: no PMI wire-up for its step (a site's MpiDefault=pmix
            // would otherwise set one up on every node).
            c.arg("--mpi=none")
                .arg(format!("--nodes={}", hosts.len()))
                .arg(format!("--ntasks={}", hosts.len()))
                .arg("--ntasks-per-node=1")
                .arg(format!("--nodelist={}", compress(hosts)))
                .arg("--job-name=baton-preflight")
                .arg(format!("--output={}/%N.json", dir.display()));
            c.arg(&ctx.worker).args(probe_args(gpus));
            launch(c, &dir.join("step.log"));
        }
        Step::Mpirun { mpirun } => std::thread::scope(|s| {
            for h in hosts {
                let dir = &dir;
                s.spawn(move || {
                    let mut c = Command::new(mpirun);
                    c.args(["-np", "1", "-H", h])
                        .arg(&ctx.worker)
                        .args(probe_args(gpus));
                    launch(c, &dir.join(format!("{h}.json")));
                });
            }
        }),
    }
    let nodes: Vec<PreflightNode> = hosts.iter().map(|h| read(&dir, h)).collect();
    let mut pf = compare(nodes, &ctx.plan.fleet);
    pf.took_ms = Some(started.elapsed().as_millis() as u64);
    pf
}

/// The preflight's verdicts from the snapshots it got.
pub(super) fn compare(nodes: Vec<PreflightNode>, declared: &fleet::Declared) -> Preflight {
    let inv: Vec<(String, _)> = nodes
        .iter()
        .filter_map(|n| Some((n.host.clone(), inventory(n.snapshot.as_ref()?))))
        .collect();
    Preflight {
        mismatches: fleet::compare(&inv, declared),
        inventory: fleet::differing(&inv),
        nodes,
        took_ms: None,
    }
}

/// No helper program: MPI and the fabric manager are not compared, and starting `mpirun
/// --version` was a third of the probe's time.
fn probe_args(gpus: bool) -> Vec<&'static str> {
    let mut a = vec!["probe", "--format", "json", "--no-helpers"];
    if !gpus {
        a.push("--no-gpus");
    }
    a
}

/// Runs `c` with its output in `out`, within [`LIMIT`]; what it wrote is read afterwards.
fn launch(c: Command, out: &Path) {
    let emptied = crate::output::write_atomic(out, b"");
    let Ok(f) = emptied.and_then(|_| crate::output::open_append(out)) else {
        return;
    };
    // What the step wrote says how it went; a node that wrote nothing is named as such.
    let _ = supervise(c, Output::File(&f), &Limit::Total(LIMIT), None);
}

/// `host`'s snapshot in `dir`, or why there is none.
fn read(dir: &Path, host: &str) -> PreflightNode {
    let path: PathBuf = dir.join(format!("{host}.json"));
    match snapshot_file(&path) {
        Ok(s) => PreflightNode {
            host: host.into(),
            snapshot: Some(s),
            unavailable: None,
        },
        Err(why) => PreflightNode {
            host: host.into(),
            snapshot: None,
            unavailable: Some(format!("no snapshot: {why}")),
        },
    }
}

/// The snapshot `baton probe --format json` wrote at `path`, read with a bound.
pub(super) fn snapshot_file(path: &Path) -> Result<Snapshot, String> {
    crate::input::read_bounded(path, MAX_SNAPSHOT, "probe snapshot")
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice::<Snapshot>(&b).map_err(|e| e.to_string()))
}

/// `nodes` without the hosts of `out` (their domains' indices renumbered).
pub(super) fn without(nodes: &Nodes, out: &[String]) -> Nodes {
    let keep: Vec<usize> = (0..nodes.hosts.len())
        .filter(|&i| !out.contains(&nodes.hosts[i]))
        .collect();
    let new_index = |i: usize| keep.iter().position(|&k| k == i);
    Nodes {
        hosts: keep.iter().map(|&i| nodes.hosts[i].clone()).collect(),
        domains: nodes
            .domains
            .iter()
            .map(|d| d.iter().filter_map(|&i| new_index(i)).collect::<Vec<_>>())
            .filter(|d| !d.is_empty())
            .collect(),
        rerun: nodes.rerun.clone(),
    }
}
