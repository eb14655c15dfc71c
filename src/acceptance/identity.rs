//! What an acceptance directory was started for: the acceptance file's hash and the node list.
//! A resume reads finished phases back instead of measuring them again, so resuming with an
//! edited file (other criteria, other gating) or on other nodes would sign one report over
//! phases judged by different rules — refused, as the runner refuses another plan.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::doc::Acceptance;
use crate::nodeset::compress;

const FILE: &str = "acceptance.started.json";
const MAX: usize = 64 * 1024;

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Started {
    /// `sha256:…` of the acceptance file's text.
    acceptance: String,
    nodes: String,
}

/// Why this directory is not this acceptance's to resume.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error(
        "{dir}: these phases were run for another acceptance file ({had}; {file} is now {have}): resume with the file that made them, or run into a new -o"
    )]
    OtherFile {
        dir: String,
        file: String,
        had: String,
        have: String,
    },
    #[error(
        "{dir}: these phases were run on {had}, this run's node list is {have}: resume on the same nodes (--nodes) or run into a new -o"
    )]
    OtherNodes {
        dir: String,
        had: String,
        have: String,
    },
    #[error(
        "{dir}: it holds phases ({phases}) but no {file}: what they were run for (which acceptance file, which nodes) cannot be checked, so they are not resumed; run into a new -o"
    )]
    NoRecord {
        dir: String,
        phases: String,
        file: &'static str,
    },
    #[error("{path}: {why}")]
    Unreadable { path: String, why: String },
}

/// Records what `out` is started for, or checks a resume is for the same.
pub fn check_or_record(
    out: &Path,
    doc: &Acceptance,
    hosts: &[String],
) -> Result<(), IdentityError> {
    let now = Started {
        acceptance: crate::digest::sha256_id(doc.text.as_bytes()),
        nodes: compress(hosts),
    };
    let path = out.join(FILE);
    let err = |why: String| IdentityError::Unreadable {
        path: path.display().to_string(),
        why,
    };
    if std::fs::symlink_metadata(&path).is_err() {
        // A fresh start only where nothing was started: phases without their start record
        // (deleted, or never the acceptance's) would be resumed on whatever nodes are given.
        let phases = started_phases(out);
        if !phases.is_empty() {
            return Err(IdentityError::NoRecord {
                dir: out.display().to_string(),
                phases: phases.join(", "),
                file: FILE,
            });
        }
        let mut text = serde_json::to_vec_pretty(&now).unwrap_or_default();
        text.push(b'\n');
        return crate::output::write_atomic(&path, &text).map_err(|e| err(e.to_string()));
    }
    crate::output::refuse_links_within(out, &path).map_err(|e| err(e.to_string()))?;
    let bytes = crate::input::read_bounded(&path, MAX, "acceptance start record")
        .map_err(|e| err(e.to_string()))?;
    let had: Started = serde_json::from_slice(&bytes).map_err(|e| err(e.to_string()))?;
    let dir = out.display().to_string();
    if had.acceptance != now.acceptance {
        return Err(IdentityError::OtherFile {
            dir,
            file: doc.file.display().to_string(),
            had: short(&had.acceptance),
            have: short(&now.acceptance),
        });
    }
    if had.nodes != now.nodes {
        return Err(IdentityError::OtherNodes {
            dir,
            had: had.nodes,
            have: now.nodes,
        });
    }
    Ok(())
}

/// The entries of `OUT/phases` (a phase's directory is made only once it starts).
fn started_phases(out: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(out.join("phases"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| crate::stdout::visible(&e.file_name().to_string_lossy()).into_owned())
        .collect();
    names.sort();
    names
}

fn short(hash: &str) -> String {
    hash.chars().take("sha256:".len() + 12).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Acceptance {
        match super::super::parse(Path::new("acc.yaml"), text) {
            Ok(a) => a,
            Err(r) => panic!("{}", r.short()),
        }
    }

    const ACC: &str = "acceptance: 1\nname: x\nphases:\n  - name: A\n    plan: a.yaml\n";

    #[test]
    fn a_resume_with_an_edited_file_or_other_nodes_is_refused() {
        let out = std::env::temp_dir().join(format!("baton-acc-identity-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let hosts: Vec<String> = ["n1", "n2"].map(String::from).to_vec();
        check_or_record(&out, &doc(ACC), &hosts).unwrap();
        check_or_record(&out, &doc(ACC), &hosts).expect("the same file and nodes resume");
        let edited = format!("{ACC}    stop: {{ failed_nodes: 1 }}\n");
        let e = check_or_record(&out, &doc(&edited), &hosts).unwrap_err();
        assert!(matches!(e, IdentityError::OtherFile { .. }), "{e}");
        assert!(e.to_string().contains("another acceptance file"), "{e}");
        let e = check_or_record(&out, &doc(ACC), &hosts[..1]).unwrap_err();
        assert!(
            e.to_string()
                .contains("run on n[1-2], this run's node list is n1"),
            "{e}"
        );
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn a_start_record_that_is_not_one_is_unreadable_never_taken_as_a_match() {
        let out = std::env::temp_dir().join(format!("baton-acc-hostile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        let hosts = vec!["n1".to_string()];
        let path = out.join(FILE);
        for hostile in [
            &b"not json"[..],
            &b"\x00\xff\xfe"[..],
            &vec![b'{'; 2 * MAX][..],
        ] {
            std::fs::write(&path, hostile).unwrap();
            let e = check_or_record(&out, &doc(ACC), &hosts).unwrap_err();
            assert!(matches!(e, IdentityError::Unreadable { .. }), "{e}");
        }
        // Deleted, next to a phase that started: refused, never a fresh start.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir_all(out.join("phases/01-A")).unwrap();
        let e = check_or_record(&out, &doc(ACC), &hosts).unwrap_err();
        assert!(matches!(e, IdentityError::NoRecord { .. }), "{e}");
        assert!(e.to_string().contains("01-A"), "{e}");
        assert!(!path.exists(), "no start record made up");
        std::fs::remove_dir_all(out.join("phases")).unwrap();
        std::fs::create_dir(&path).unwrap();
        let e = check_or_record(&out, &doc(ACC), &hosts).unwrap_err();
        assert!(
            matches!(e, IdentityError::Unreadable { .. }),
            "a directory: {e}"
        );
        std::fs::remove_dir_all(&out).unwrap();
    }
}
