//! How the render tests call `baton render`, and the two-environment-set plan they share.

use std::path::Path;
use std::process::Output;

use super::{baton, code, p, show, stdout};

/// An mpi plan with two environment sets of two jobs each: the smallest plan whose scripts
/// have every part (sets, jobs, grading).
pub const MPI_PLAN: &str = "version: 1
name: two-sets
backend: mpi
launch: { nodes: 1, ranks_per_node: 2 }
tests:
  - name: t
    collective: [all_reduce, broadcast]
    sizes: [8, 1K]
    matrix:
      env: [ { NCCL_BATON_SET: x }, { NCCL_BATON_SET: y } ]
    expect: [ { wrong: 0 } ]
";

/// `baton render PLAN` + `args`, asserting exit code `want`.
pub fn render(plan: &Path, args: &[&str], want: i32) -> Output {
    let mut a = vec!["render", p(plan)];
    a.extend(args);
    let o = baton(&a);
    assert_eq!(code(&o), want, "{}", show(&o));
    o
}

/// `baton render PLAN --dry-run` with these extra arguments; the scripts' text.
pub fn dry_run(plan: &Path, args: &[&str]) -> String {
    let mut a = vec!["--dry-run"];
    a.extend(args);
    stdout(&render(plan, &a, 0))
}
