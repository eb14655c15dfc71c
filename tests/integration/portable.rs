//! The portable-binary check (scripts/check-portable): the glibc ceiling of RHEL 8 (2.28) and no
//! MPI or CUDA library among a binary's NEEDED entries. It must pass on the portable build
//! (scripts/portable-build, which scripts/test runs first) and fail on the host build, whose
//! glibc 2.35 symbols (hypotf) keep it off RHEL 8, and on baton-mpi, which links libmpi.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn check(bin: &Path, max: Option<&str>) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-portable");
    let mut c = Command::new(script);
    c.arg(bin);
    if let Some(m) = max {
        c.arg(m);
    }
    c.output().unwrap()
}

/// The portable `baton` scripts/test built, or None (with a SKIPPED line) when there is none
/// and CI did not ask for one (`BATON_REQUIRE_PORTABLE=1`).
fn portable_baton() -> Option<PathBuf> {
    let p = std::env::var_os("BATON_PORTABLE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/portable/x86_64-unknown-linux-gnu/debug/baton")
        });
    if p.is_file() {
        return Some(p);
    }
    assert!(
        std::env::var("BATON_REQUIRE_PORTABLE").as_deref() != Ok("1"),
        "BATON_REQUIRE_PORTABLE=1 but there is no portable build at {} (scripts/portable-build)",
        p.display()
    );
    eprintln!(
        "SKIPPED: no portable build at {} (scripts/portable-build)",
        p.display()
    );
    None
}

#[test]
fn the_host_build_fails_the_glibc_ceiling() {
    let o = check(Path::new(env!("CARGO_BIN_EXE_baton")), None);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{}", common::show(&o));
    assert!(err.contains("newer than 2.28"), "{err}");
    assert!(err.contains("hypotf"), "{err}");
    // Under a ceiling above the host's glibc the same binary passes: it links no MPI or CUDA.
    let o = check(Path::new(env!("CARGO_BIN_EXE_baton")), Some("9.99"));
    assert_eq!(o.status.code(), Some(0), "{}", common::show(&o));
    assert!(common::stdout(&o).contains("libc.so.6"));
}

#[cfg(feature = "mpi")]
#[test]
fn a_binary_linking_libmpi_fails() {
    let o = check(Path::new(env!("CARGO_BIN_EXE_baton-mpi")), Some("9.99"));
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{}", common::show(&o));
    assert!(err.contains("links libmpi"), "{err}");
}

#[test]
fn bad_usage_is_exit_2_naming_what() {
    let o = check(Path::new("/nonexistent/baton"), None);
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("/nonexistent/baton: no such file"));
    let o = check(Path::new(env!("CARGO_BIN_EXE_baton")), Some("two"));
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("MAX_GLIBC must look like 2.28"));
}

#[test]
fn the_portable_build_passes_and_runs() {
    let Some(bin) = portable_baton() else { return };
    let o = check(&bin, None);
    assert_eq!(o.status.code(), Some(0), "{}", common::show(&o));
    let out = common::stdout(&o);
    assert!(out.starts_with("ok: "), "{out}");
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/phase-a-node.yaml");
    let o = Command::new(&bin)
        .args(["check", common::p(&plan)])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", common::show(&o));
}
