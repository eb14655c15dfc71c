//! Where a launch's secret comes from. Job and step ids tell launches apart but are no secret (any
//! user on the node can list them), so they only name the launch; the secret is
//! `BATON_RUN_KEY`, which baton's own launches (rendered scripts, node-set steps) set to 128
//! random bits. By hand without it: on one node, ranks of a launcher that names its job use a
//! per-user secret file only their user can read; anywhere else the launch is refused, since a
//! stranger could join it or two launches could cross.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::auth::{self, Key};
use super::{RendezvousError, Root};
use crate::launch::launcher::Placement;

pub const VAR: &str = "BATON_RUN_KEY";
/// Shorter secrets could be guessed from one proof a stranger collects.
pub const MIN_LEN: usize = 16;
const MAX_LEN: usize = 4096;

/// How to set one, for every refusal.
const HOW: &str = "export a secret of at least 16 characters in the shell that starts every \
                   rank, e.g. `export BATON_RUN_KEY=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')` \
                   (srun passes it on; with mpirun add `-x BATON_RUN_KEY`); scripts from \
                   `baton render` and node-set runs set one themselves";

/// What names this launch among others at the same address (not secret).
pub fn launch_id(get: &impl Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(job) = get("SLURM_JOB_ID") {
        return Some(format!(
            "slurm:{job}.{}",
            get("SLURM_STEP_ID").unwrap_or_default()
        ));
    }
    [
        ("OMPI_MCA_ess_base_jobid", "ompi"),
        ("PMI_KVSNAME", "pmi"),
        ("PALS_APID", "pals"),
    ]
    .iter()
    .find_map(|(k, name)| get(k).map(|v| format!("{name}:{v}")))
}

/// The key the ranks of this launch prove to each other for `purpose`.
pub fn launch_key(
    get: impl Fn(&str) -> Option<String>,
    placement: &Placement,
    root: &Root,
    purpose: &str,
) -> Result<Key, RendezvousError> {
    let id = launch_id(&get);
    let launch = id.clone().unwrap_or_default();
    if let Some(k) = get(VAR) {
        let n = k.chars().count();
        if !(MIN_LEN..=MAX_LEN).contains(&n) {
            return Err(RendezvousError::NoKey(format!(
                "{VAR} has {n} characters, not {MIN_LEN} to {MAX_LEN}; {HOW}"
            )));
        }
        return Ok(Key::derive(k.as_bytes(), &launch, purpose));
    }
    if placement.size == 1 {
        return Ok(Key::derive(&auth::nonce().unwrap_or_default(), "", purpose));
    }
    let why = if !root.is_loopback() {
        format!(
            "rank 0 listens at {}, which other machines and users can reach, so the ranks must share a secret",
            root.display()
        )
    } else if id.is_none() {
        format!(
            "{} placed these ranks on one node, and two such launches could not be told apart",
            placement.source.name()
        )
    } else {
        let home = get("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        match home
            .ok_or_else(|| "HOME is not set".to_string())
            .and_then(|h| user_secret(&h))
        {
            Ok(secret) => return Ok(Key::derive(&secret, &launch, purpose)),
            Err(e) => format!("this user's rendezvous secret cannot be used: {e}"),
        }
    };
    Err(RendezvousError::NoKey(format!(
        "{VAR} is not set: {why}; {HOW}"
    )))
}

/// The file of this user's one-node secret.
pub fn user_secret_path(home: &Path) -> PathBuf {
    home.join(".cache/baton/rendezvous.key")
}

/// This user's secret for one-node launches: 64 hex digits in a file only the user can read,
/// made once (by whichever rank comes first, without overwriting another's).
fn user_secret(home: &Path) -> Result<Vec<u8>, String> {
    let path = user_secret_path(home);
    let dir = path.parent().unwrap_or(home);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    match read_private(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        other => return other.map_err(|e| format!("{}: {e}", path.display())),
    }
    let fresh = auth::hex(&auth::nonce().map_err(|e| e.to_string())?);
    let tmp = dir.join(format!("rendezvous.key.{}", std::process::id()));
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(fresh.as_bytes()).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::hard_link(&tmp, &path));
    let _ = std::fs::remove_file(&tmp);
    match made {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            Err(format!("{}: {e}", path.display()))
        }
        _ => read_private(&path).map_err(|e| format!("{}: {e}", path.display())),
    }
}

/// The secret file's bytes, only when it is a regular file of ours that nobody else may read.
fn read_private(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let m = f.metadata()?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let refuse =
        |why: &str| std::io::Error::other(format!("{why}: remove it and baton makes a new one"));
    if !m.is_file() || m.uid() != me {
        return Err(refuse("not a regular file of this user"));
    }
    if m.mode() & 0o077 != 0 {
        return Err(refuse("other users may read or write it"));
    }
    let mut b = Vec::new();
    Read::by_ref(&mut f).take(65).read_to_end(&mut b)?;
    if b.len() != 64 || !b.iter().all(u8::is_ascii_hexdigit) {
        return Err(refuse("not 64 hex digits"));
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::launcher::Source;
    use crate::launch::launcher::test_env as env;

    fn placed(source: Source, size: usize) -> Placement {
        Placement {
            rank: 1,
            size,
            local_rank: 1,
            local_size: Some(size),
            source,
        }
    }

    fn root(host: &str) -> Root {
        Root {
            host: host.into(),
            port: 29517,
            from: "test".into(),
            first_node: false,
        }
    }

    fn proof(k: &Key) -> auth::Block {
        k.root_proof(&[0; 32], &[1; 32])
    }

    #[test]
    fn without_a_key_only_a_named_launch_on_one_node_runs_and_with_a_private_file() {
        let e = launch_key(
            env(&[]),
            &placed(Source::Baton, 2),
            &root("node01"),
            "ranks",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("BATON_RUN_KEY is not set") && e.contains("node01:29517"),
            "{e}"
        );
        assert!(e.contains("export BATON_RUN_KEY="), "{e}");
        let e = launch_key(
            env(&[]),
            &placed(Source::Baton, 2),
            &root("127.0.0.1"),
            "ranks",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("could not be told apart"), "{e}");
        let home = std::env::temp_dir().join(format!("baton-rdv-key-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        let h = home.to_str().unwrap();
        let mpi = |job: &str| {
            launch_key(
                env(&[("HOME", h), ("OMPI_MCA_ess_base_jobid", job)]),
                &placed(Source::OpenMpi, 2),
                &root("127.0.0.1"),
                "ranks",
            )
            .unwrap()
        };
        let (a, again, b) = (mpi("1"), mpi("1"), mpi("2"));
        assert!(auth::same(&proof(&a), &proof(&again)));
        assert!(
            !auth::same(&proof(&a), &proof(&b)),
            "two launches never share a key"
        );
        let file = user_secret_path(&home);
        let mode = std::fs::metadata(&file).unwrap().mode();
        assert_eq!(mode & 0o777, 0o600);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = launch_key(
            env(&[("HOME", h), ("OMPI_MCA_ess_base_jobid", "1")]),
            &placed(Source::OpenMpi, 2),
            &root("127.0.0.1"),
            "ranks",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("other users may read"), "{e}");
    }

    #[test]
    fn a_given_key_is_mixed_with_the_launch_and_short_ones_are_refused() {
        let given = |k: &str, step: &str| {
            launch_key(
                env(&[(VAR, k), ("SLURM_JOB_ID", "7"), ("SLURM_STEP_ID", step)]),
                &placed(Source::Slurm, 4),
                &root("node01"),
                "run",
            )
        };
        let k = "0123456789abcdef";
        assert!(!auth::same(
            &proof(&given(k, "0").unwrap()),
            &proof(&given(k, "1").unwrap())
        ));
        let e = given("secret-4711", "0").unwrap_err().to_string();
        assert!(
            e.contains("11 characters") && !e.contains("secret-4711"),
            "{e}"
        );
    }
}
