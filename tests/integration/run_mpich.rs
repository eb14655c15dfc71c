//! The host MPI backend on MPICH (Debian's libmpich-dev, Hydra's mpirun.mpich), not only Open
//! MPI: `baton run` starts MPICH-built baton-mpi ranks through Hydra (whose flags differ from
//! Open MPI's), and under Hydra baton-mpi is the rank while plain baton refuses.
//!
//! Needs the MPICH build of baton-mpi, which scripts/test makes in its own target directory
//! (`MPICC=mpicc.mpich CARGO_TARGET_DIR=target/mpich cargo build --features mpi --bin
//! baton-mpi`) so the Open MPI build stays as it is. Without it the tests print SKIPPED, unless
//! in CI (`CI=true` or `BATON_REQUIRE_MPICH=1`), where that is a failure.
#![cfg(feature = "mpi")]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use baton::results::{self, JobStatus};

/// A directory holding `baton`, the MPICH `baton-mpi` and an `mpirun` running mpirun.mpich, to put
/// first on PATH; None when MPICH or its build is missing (see the module doc).
fn mpich_bin(name: &str) -> Option<PathBuf> {
    let worker = std::env::var_os("BATON_MPICH_WORKER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mpich/debug/baton-mpi")
        });
    let hydra = baton::launch::which("mpirun.mpich");
    let (Some(hydra), true) = (hydra, worker.is_file()) else {
        let why = format!("no mpirun.mpich or no MPICH build at {}", worker.display());
        common::missing("MPICH", "BATON_REQUIRE_MPICH", &why);
        return None;
    };
    let ldd = Command::new("ldd").arg(&worker).output().unwrap();
    let libs = common::stdout(&ldd);
    assert!(
        libs.contains("libmpich"),
        "{} is not an MPICH build:\n{libs}",
        worker.display()
    );
    let bin = common::tmp(name).join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_baton"), bin.join("baton")).unwrap();
    std::fs::copy(&worker, bin.join("baton-mpi")).unwrap();
    // A script, not a symlink: Hydra looks for hydra_pmi_proxy beside the path it was run as.
    let mpirun = bin.join("mpirun");
    std::fs::write(
        &mpirun,
        format!("#!/bin/sh\nexec '{}' \"$@\"\n", hydra.display()),
    )
    .unwrap();
    std::fs::set_permissions(&mpirun, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    Some(bin)
}

fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn baton_run_drives_mpich_ranks_through_hydra() {
    let Some(bin) = mpich_bin("mpich-run") else {
        return;
    };
    let (_, plan, out) = common::plan_dir(
        "mpich-run-plan",
        "version: 1\nname: m\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\ntests:\n  - name: all\n    collective: [all_reduce, all_gather, broadcast, alltoall]\n    sizes: { from: 8, to: 64K, factor: 8 }\n    matrix:\n      dtype: [float, uint8]\n    expect:\n      - wrong: 0\n",
    );
    let o = Command::new(bin.join("baton"))
        .args(["run", common::p(&plan), "-o", common::p(&out)])
        .env("PATH", path_with(&bin))
        .env_remove("BATON_FAULT")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", common::show(&o));
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs.len(), 8);
    for j in &r.jobs {
        assert_eq!(j.status, JobStatus::Completed, "{}", j.id);
        assert_eq!(j.layout.nranks, 2);
    }
}

/// BATON_FAULT reaches the ranks only if Hydra forwarded it (`-genvlist`): rank 3's corruption
/// is then counted in its group and fails the run.
#[test]
fn forwarded_variables_reach_mpich_ranks() {
    let Some(bin) = mpich_bin("mpich-fault") else {
        return;
    };
    let (_, plan, out) = common::plan_dir(
        "mpich-fault-plan",
        "version: 1\nname: c\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 4 }\ntests:\n  - name: pairs\n    collective: all_reduce\n    sizes: [1K]\n    split: \"OR 1\"\n",
    );
    let o = Command::new(bin.join("baton"))
        .args(["run", common::p(&plan), "-o", common::p(&out)])
        .env("PATH", path_with(&bin))
        .env("BATON_FAULT", "corrupt:rank=3")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", common::show(&o));
    let r = results::read(&out.join("results.json")).unwrap();
    let cell = r.jobs[0].repeats[0].rows[0].out_of_place.as_ref().unwrap();
    let g: Vec<(u64, Option<u64>)> = cell.groups.iter().map(|g| (g.color, g.wrong)).collect();
    assert_eq!(g, vec![(1, Some(0)), (3, Some(1))]);
}

#[test]
fn under_hydra_baton_mpi_is_the_rank_and_plain_baton_refuses() {
    let Some(bin) = mpich_bin("mpich-under") else {
        return;
    };
    let (_, plan, out) = common::plan_dir(
        "mpich-under-plan",
        "version: 1\nname: l\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 2 }\ntests:\n  - name: t\n    collective: all_reduce\n    sizes: [4K]\n",
    );
    let run = |program: &str| {
        Command::new(bin.join("mpirun"))
            .args(["-np", "2"])
            .arg(bin.join(program))
            .args(["run", common::p(&plan), "-o", common::p(&out)])
            .env("PATH", path_with(&bin))
            .env_remove("BATON_FAULT")
            .output()
            .unwrap()
    };
    let o = run("baton-mpi");
    assert_eq!(o.status.code(), Some(0), "{}", common::show(&o));
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs[0].layout.nranks, 2);
    let o = run("baton");
    assert_ne!(o.status.code(), Some(0));
    assert!(
        common::stderr(&o).contains("launch `baton-mpi run`"),
        "{}",
        common::show(&o)
    );
}

/// gather, scatter, alltoallv and hypercube verify on MPICH's collectives too (#27).
#[test]
fn the_new_collectives_verify_on_mpich() {
    let Some(bin) = mpich_bin("mpich-new4") else {
        return;
    };
    let (_, plan, out) = common::plan_dir(
        "mpich-new4-plan",
        "version: 1\nname: m\nbackend: mpi\nlaunch: { nodes: 1, ranks_per_node: 4 }\ntests:\n  - name: all\n    collective: [gather, scatter, alltoallv, hypercube]\n    sizes: { from: 8, to: 64K, factor: 8 }\n    root: 3\n    expect:\n      - wrong: 0\n",
    );
    let o = Command::new(bin.join("baton"))
        .args(["run", common::p(&plan), "-o", common::p(&out)])
        .env("PATH", path_with(&bin))
        .env_remove("BATON_FAULT")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", common::show(&o));
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs.len(), 4);
    assert!(r.jobs.iter().all(|j| j.status == JobStatus::Completed));
}
