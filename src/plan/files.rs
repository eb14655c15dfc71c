//! The files a plan names beside itself: its hostfile, profiles, baseline, history store and the
//! results a `relative` criterion reads. A plan from a pull request is data, and so is what it
//! points at: what baton reads from such a file can reach its output (host names, a profile's
//! figures, a parse error's position), so a plan reads only files inside its own directory, with
//! symbolic links resolved, unless the user trusts it (`--trust-plan`). `/proc`, `/sys` and
//! `/dev` hold the machine's state (`/proc/self/environ` is the CI job's secrets), never a
//! plan's file, trusted or not. A path the user names on the command line (`--hostfile`,
//! `--baseline`, `--history`, `--store`) is the user's choice and is not resolved here.

use std::path::{Path, PathBuf};

use super::{Check, Plan, Trust};

/// Trees that are never a plan's file: the kernel's and the devices'.
const SYSTEM_TREES: &[&str] = &["/proc", "/sys", "/dev"];

/// Where a plan's files may be: its directory, and whether the user trusts the plan.
#[derive(Debug, Clone)]
pub struct PlanFiles {
    dir: PathBuf,
    trust: Trust,
}

/// Why a file the plan names is not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanFileError {
    /// `what`: the plan's key and value (`nodes.hostfile: ../tok`), or the entry of a directory
    /// the plan brings (`profiles/x.yaml`).
    #[error(
        "`{what}` is outside {dir}, where the plan's files must be (a plan reads only files beside it): {instead}"
    )]
    Outside {
        what: String,
        dir: String,
        instead: String,
    },
    #[error("`{what}` is under {tree}, which never holds a plan's file")]
    System { what: String, tree: &'static str },
    #[error("`{what}`: the plan's directory {dir} cannot be resolved: {why}")]
    NoDir {
        what: String,
        dir: String,
        why: String,
    },
}

impl PlanFiles {
    /// The files of the plan at `plan_file`.
    pub fn beside(plan_file: &Path, trust: Trust) -> PlanFiles {
        let dir = match plan_file.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        PlanFiles { dir, trust }
    }

    /// The files of a plan in `dir`.
    pub fn in_dir(dir: &Path, trust: Trust) -> PlanFiles {
        PlanFiles {
            dir: dir.to_path_buf(),
            trust,
        }
    }

    /// The plan's directory, as given.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn trusted(&self) -> bool {
        self.trust == Trust::Trusted
    }

    /// The file the plan names at `key` (relative to the plan), resolved: the path to read, with
    /// no symbolic link left in it, or why it may not be read.
    pub fn resolve(&self, key: &str, name: &str) -> Result<PathBuf, PlanFileError> {
        self.resolve_in(key, name, Path::new(""))
    }

    /// Like [`resolve`](Self::resolve), for a file that must stay inside the plan's
    /// subdirectory `sub` (an entry of `profiles/`): a link out of it is refused unless trusted.
    pub fn resolve_in(&self, key: &str, name: &str, sub: &Path) -> Result<PathBuf, PlanFileError> {
        let base = if sub.as_os_str().is_empty() {
            self.dir.clone()
        } else {
            self.dir.join(sub)
        };
        let joined = base.join(name);
        let real = real_path(&joined);
        let what = || {
            if sub.as_os_str().is_empty() {
                format!("{key}: {name}")
            } else {
                sub.join(name).display().to_string()
            }
        };
        if let Some(tree) =
            system_tree(&real).or_else(|| system_tree(&crate::output::lexical(&joined)))
        {
            return Err(PlanFileError::System { what: what(), tree });
        }
        if self.trusted() {
            return Ok(real);
        }
        let root = std::fs::canonicalize(&base).map_err(|e| PlanFileError::NoDir {
            what: what(),
            dir: base.display().to_string(),
            why: e.to_string(),
        })?;
        if real.starts_with(&root) {
            return Ok(real);
        }
        Err(PlanFileError::Outside {
            what: what(),
            dir: root.display().to_string(),
            instead: instead(key),
        })
    }

    /// Why the results files the plan names (`baseline:`, `history:`, `relative.results`) may
    /// not be read: what `check` reports before `grade` would fail the criteria that need them.
    /// The hostfile and profiles are checked where they are read.
    pub fn refused(&self, plan: &Plan) -> Vec<PlanFileError> {
        let relative = plan
            .tests
            .iter()
            .flat_map(|t| &t.expect)
            .filter_map(|c| match &c.check {
                Check::Relative(r) => r.results.as_deref(),
                _ => None,
            })
            .map(|f| ("relative.results", f));
        let mut named: Vec<(&str, &str)> = [
            ("baseline", plan.baseline.as_deref()),
            ("history", plan.history.as_deref()),
        ]
        .into_iter()
        .filter_map(|(k, f)| Some((k, f?)))
        .chain(relative)
        .collect();
        named.dedup();
        named
            .into_iter()
            .filter_map(|(key, name)| self.resolve(key, name).err())
            .collect()
    }

    /// Whether `real` (a path [`resolve`](Self::resolve) returned) lies inside the plan's
    /// directory.
    pub fn holds(&self, real: &Path) -> bool {
        std::fs::canonicalize(&self.dir).is_ok_and(|d| real.starts_with(d))
    }
}

/// What the user can do instead of letting the plan name a file outside its directory.
fn instead(key: &str) -> String {
    let flag = match key {
        "nodes.hostfile" => Some("--hostfile FILE"),
        "baseline" => Some("--baseline FILE"),
        "history" => Some("--history STORE"),
        _ => None,
    };
    match flag {
        Some(f) => format!("name the file yourself ({f}) or pass --trust-plan"),
        None => "move the file beside the plan or pass --trust-plan".to_string(),
    }
}

/// `path` with every symbolic link resolved: the longest prefix that exists, canonicalised,
/// then the rest taken as written with `.` and `..` applied (a path that does not exist yet,
/// like a history store `add` will create, cannot hold a link below what exists).
fn real_path(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut rest = Vec::new();
    let mut head = abs.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(head) {
            let mut out = real;
            for c in rest.iter().rev() {
                out.push(c);
            }
            return crate::output::lexical(&out);
        }
        match (head.parent(), head.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                head = parent;
            }
            // `..` at the end, or nothing left that exists: take it as written.
            _ => return crate::output::lexical(&abs),
        }
    }
}

/// The system tree `path` lies in, if any.
fn system_tree(path: &Path) -> Option<&'static str> {
    SYSTEM_TREES.iter().copied().find(|t| path.starts_with(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("baton-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("plan/profiles")).unwrap();
        std::fs::write(d.join("plan/hosts"), "n1\n").unwrap();
        std::fs::write(d.join("secret"), "token\n").unwrap();
        d
    }

    #[test]
    fn a_plan_reads_inside_its_directory_only_unless_trusted() {
        let d = scratch("inside");
        let data = PlanFiles::beside(&d.join("plan/p.yaml"), Trust::Data);
        let ok = data.resolve("nodes.hostfile", "hosts").unwrap();
        assert_eq!(ok, std::fs::canonicalize(d.join("plan/hosts")).unwrap());
        assert!(data.holds(&ok));
        // Not there yet (a store `history add` will create): inside is still inside.
        assert!(data.resolve("history", "new/h.sqlite").is_ok());
        for outside in [
            "../secret",
            d.join("secret").to_str().unwrap(),
            "x/../../secret",
        ] {
            let e = data.resolve("nodes.hostfile", outside).unwrap_err();
            assert!(matches!(e, PlanFileError::Outside { .. }), "{outside}: {e}");
            assert!(e.to_string().contains("--hostfile FILE"), "{e}");
        }
        // A link beside the plan that leads out of it.
        std::os::unix::fs::symlink(d.join("secret"), d.join("plan/link")).unwrap();
        assert!(data.resolve("baseline", "link").is_err());
        let trusted = PlanFiles::beside(&d.join("plan/p.yaml"), Trust::Trusted);
        assert_eq!(
            trusted.resolve("baseline", "link").unwrap(),
            std::fs::canonicalize(d.join("secret")).unwrap()
        );
        assert!(!trusted.holds(&trusted.resolve("baseline", "../secret").unwrap()));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn system_trees_are_never_plan_files_and_links_into_profiles_stay_there() {
        let d = scratch("system");
        std::os::unix::fs::symlink("/proc/self/environ", d.join("plan/env")).unwrap();
        for trust in [Trust::Data, Trust::Trusted] {
            let f = PlanFiles::beside(&d.join("plan/p.yaml"), trust);
            for name in [
                "/proc/self/environ",
                "env",
                "/dev/null",
                "/sys/kernel/notes",
            ] {
                let e = f.resolve("profile", name).unwrap_err();
                assert!(matches!(e, PlanFileError::System { .. }), "{name}: {e}");
            }
        }
        // An entry of profiles/ that leaves it, even for a file elsewhere beside the plan.
        std::os::unix::fs::symlink(d.join("plan/hosts"), d.join("plan/profiles/x.yaml")).unwrap();
        let f = PlanFiles::beside(&d.join("plan/p.yaml"), Trust::Data);
        let e = f
            .resolve_in("profiles", "x.yaml", Path::new("profiles"))
            .unwrap_err();
        assert!(e.to_string().contains("is outside"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
