//! Which `mpirun` baton is about to start ranks with, and that launcher's spelling of the same
//! request. Open MPI and MPICH's Hydra (also Intel MPI's) take different flags for hosts,
//! environment forwarding and running as root; passing Open MPI's `-x VAR` to Hydra fails the
//! whole step with "unrecognized argument x", so the flavour is asked of `mpirun` itself.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// The families of `mpirun` whose command lines baton builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpirunFlavour {
    /// Open MPI's `mpirun` (ORTE/PRRTE): `-H`, `-x VAR`, `--oversubscribe`, `--allow-run-as-root`.
    OpenMpi,
    /// MPICH's and Intel MPI's Hydra `mpiexec`: `-hosts`, `-genvlist A,B`; it oversubscribes
    /// and runs as root without being asked.
    Hydra,
}

/// The flavour of the `mpirun` at `path`, from its `--version` text. Asked once per path and
/// process (a set's launch must not pay a process start each time). A launcher that cannot be
/// run or says nothing recognisable is taken for Open MPI, the flavour baton always assumed.
pub fn flavour_of(path: &Path) -> MpirunFlavour {
    static SEEN: OnceLock<Mutex<HashMap<PathBuf, MpirunFlavour>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    if let Some(f) = seen.lock().ok().and_then(|m| m.get(path).copied()) {
        return f;
    }
    let text = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout[..o.stdout.len().min(64 * 1024)]).into_owned())
        .unwrap_or_default();
    let f = flavour_from_version(&text);
    if let Ok(mut m) = seen.lock() {
        m.insert(path.to_path_buf(), f);
    }
    f
}

/// Hydra prints "HYDRA build details" (MPICH) or "Intel(R) MPI Library"; Open MPI prints
/// "mpirun (Open MPI) 4.1.4".
pub fn flavour_from_version(text: &str) -> MpirunFlavour {
    if text.contains("HYDRA") || text.contains("Intel(R) MPI") {
        MpirunFlavour::Hydra
    } else {
        MpirunFlavour::OpenMpi
    }
}

/// Hydra's arguments before the program: `[-hosts H] -np N [-genvlist A,B,...]`. The variables'
/// values travel in mpirun's own environment (set by the caller), as with Open MPI's `-x`.
pub fn hydra_args(hosts: Option<&str>, np: u32, forward: &[&str]) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    if let Some(h) = hosts {
        a.push("-hosts".into());
        a.push(h.into());
    }
    a.push("-np".into());
    a.push(np.to_string().into());
    if !forward.is_empty() {
        a.push("-genvlist".into());
        a.push(forward.join(",").into());
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_texts_name_their_flavour() {
        let mpich = "HYDRA build details:\n    Version:                                 4.0.2\n";
        assert_eq!(flavour_from_version(mpich), MpirunFlavour::Hydra);
        let intel = "Intel(R) MPI Library for Linux* OS, Version 2021.10 Build 20230619\n";
        assert_eq!(flavour_from_version(intel), MpirunFlavour::Hydra);
        let ompi =
            "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n";
        assert_eq!(flavour_from_version(ompi), MpirunFlavour::OpenMpi);
        assert_eq!(flavour_from_version(""), MpirunFlavour::OpenMpi);
    }

    #[test]
    fn an_mpirun_that_cannot_run_is_taken_for_open_mpi() {
        assert_eq!(
            flavour_of(Path::new("/nonexistent/mpirun")),
            MpirunFlavour::OpenMpi
        );
    }

    #[test]
    fn hydra_args_name_hosts_count_and_forwarded_variables() {
        let a = hydra_args(Some("n1:2,n2:2"), 4, &["NCCL_PROTO", "PATH"]);
        let a: Vec<_> = a.iter().map(|s| s.to_string_lossy().into_owned()).collect();
        assert_eq!(
            a,
            [
                "-hosts",
                "n1:2,n2:2",
                "-np",
                "4",
                "-genvlist",
                "NCCL_PROTO,PATH"
            ]
        );
        assert_eq!(hydra_args(None, 2, &[]), ["-np", "2"]);
    }
}
