//! The git commit a plan file is at, for the results and the report: a handover report should say
//! exactly which version of the plan produced its numbers. Best effort by design — no git, no
//! repository, a slow or broken one: the revision is left out, never an error.
//!
//! Plans from strangers are data, and so is the repository around them: a repository's own
//! config can name programs that git runs (`core.fsmonitor`, hooks), so those are switched off
//! on the command line, which outranks every config file. Each git call is bounded in time and in
//! how much of its output is read.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A commit of the repository holding a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GitRevision {
    /// Full commit hash of `HEAD`.
    pub commit: String,
    /// Tracked files differed from the commit: the plan that ran may not be the one at `commit`.
    pub dirty: bool,
}

/// Longest a single git call may take before the revision is given up.
const TIMEOUT: Duration = Duration::from_secs(5);
/// Most output read from a git call: a commit hash, or whether `status` printed anything.
const MAX_OUTPUT: u64 = 4096;

/// The commit of the repository holding `plan`, dirty when tracked files differ from it; `None`
/// when the plan is not tracked by a git repository or git cannot say.
pub fn git_revision(plan: &Path) -> Option<GitRevision> {
    let dir = match plan.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = plan.file_name()?;
    let head = git(dir, &["rev-parse", "--verify", "--quiet", "HEAD"])?;
    let commit = head.ok()?.trim().to_string();
    if commit.len() < 40 || !commit.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let changed = match git(dir, &["status", "--porcelain", "--untracked-files=no"])? {
        Ok(out) => !out.trim().is_empty(),
        Err(()) => return None,
    };
    // A plan the repository does not track (new, or ignored like a scratch copy) is not
    // versioned by it: naming the repository's commit would say it is.
    let name = name.to_string_lossy();
    git(dir, &["ls-files", "--error-unmatch", "--", &name])?.ok()?;
    Some(GitRevision {
        commit,
        dirty: changed,
    })
}

/// Runs `git -C dir ARGS` with everything that could run another program switched off.
/// `None`: git is missing or did not finish in time; `Some(Err)`: it exited non-zero.
fn git(dir: &Path, args: &[&str]) -> Option<Result<String, ()>> {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "--no-optional-locks",
        ])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE");
    let (out, ok) = crate::child::bounded_output(&mut cmd, TIMEOUT, MAX_OUTPUT).ok()?;
    Some(if ok { Ok(out) } else { Err(()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        assert!(ok, "git {args:?}");
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("baton-rev-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_committed_plan_has_its_commit_and_an_edit_makes_it_dirty() {
        if Command::new("git").arg("--version").output().is_err() {
            println!("SKIPPED: no git");
            return;
        }
        let d = scratch("repo");
        sh(&d, &["init", "-q"]);
        let plan = d.join("plan.yaml");
        std::fs::write(&plan, "name: a\n").unwrap();
        assert_eq!(git_revision(&plan), None, "no commit yet");
        sh(&d, &["add", "plan.yaml"]);
        sh(&d, &["commit", "-q", "-m", "x"]);
        let r = git_revision(&plan).expect("in git");
        assert_eq!(r.commit.len(), 40);
        assert!(!r.dirty, "{r:?}");
        std::fs::write(&plan, "name: b\n").unwrap();
        assert!(git_revision(&plan).unwrap().dirty);
        sh(&d, &["checkout", "-q", "--", "plan.yaml"]);
        let other = d.join("other.yaml");
        std::fs::write(&other, "name: c\n").unwrap();
        assert_eq!(
            git_revision(&other),
            None,
            "an untracked plan is not the commit's"
        );
        // A repository that asks git to run a program gets no program run.
        let marker = d.join("ran");
        sh(
            &d,
            &[
                "config",
                "core.fsmonitor",
                &format!("touch {}", marker.display()),
            ],
        );
        let _ = git_revision(&plan);
        assert!(!marker.exists(), "core.fsmonitor ran");
    }

    #[test]
    fn outside_git_there_is_no_revision() {
        let d = scratch("none");
        let plan = d.join("plan.yaml");
        std::fs::write(&plan, "name: a\n").unwrap();
        // /tmp is not inside a repository here; if it ever is, this says nothing.
        if git(&d, &["rev-parse", "--show-toplevel"]).is_some_and(|r| r.is_ok()) {
            return;
        }
        assert_eq!(git_revision(&plan), None);
        assert_eq!(git_revision(&d.join("missing/plan.yaml")), None);
    }
}
