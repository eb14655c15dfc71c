//! Who the node is and what it runs: host name, kernel, the NVIDIA driver the kernel loaded,
//! the NCCL library a run would load and its version, the MPI on PATH, baton itself;
//! `nvidia_peermem` (GPUDirect RDMA) and the fabric manager's service state.

use std::ffi::{CStr, c_int};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Sourced, read};

/// Identity and software of a node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Software {
    pub hostname: String,
    pub kernel: Sourced<String>,
    /// The kernel module's version line (`/proc/driver/nvidia/version`).
    pub nvidia_driver: Sourced<String>,
    pub nccl: Sourced<Nccl>,
    /// The first line of `mpirun --version`.
    pub mpi: Sourced<String>,
    pub baton: String,
    pub peermem_loaded: bool,
    /// `systemctl is-active nvidia-fabricmanager` (`active`, `inactive`, `unknown`).
    pub fabric_manager: Sourced<String>,
}

/// The NCCL library `dlopen` finds, as a run would.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Nccl {
    pub path: String,
    /// `2.28.3`.
    pub version: String,
}

const HELPER_TIME: Duration = Duration::from_secs(2);

/// The node's identity and software, reading `proc` and `sys` below their roots; the helper
/// programs (`mpirun --version`, `systemctl`) only when `helpers`.
pub fn software(sys: &Path, proc: &Path, helpers: bool) -> Software {
    let not_asked = || Err::<String, _>("not asked (around a job: asked by the preflight)".into());
    Software {
        hostname: crate::host::hostname(),
        kernel: read::text(&proc.join("sys/kernel/osrelease")).into(),
        nvidia_driver: read::text(&proc.join("driver/nvidia/version"))
            .map(|v| v.lines().next().unwrap_or_default().to_string())
            .into(),
        nccl: nccl().into(),
        mpi: if helpers { mpi() } else { not_asked() }.into(),
        baton: env!("CARGO_PKG_VERSION").to_string(),
        peermem_loaded: sys.join("module/nvidia_peermem").is_dir(),
        fabric_manager: if helpers {
            fabric_manager()
        } else {
            not_asked()
        }
        .into(),
    }
}

/// `22803` → `2.28.3`; NCCL before 2.9 counted `2708` as 2.7.8.
pub fn nccl_version(code: i32) -> String {
    if code >= 10000 {
        format!("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100)
    }
}

fn nccl() -> Result<Nccl, String> {
    let mut last = String::new();
    for name in ["libnccl.so.2", "libnccl.so"] {
        // SAFETY: loading NCCL runs its initialisers, as every run on this node does.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => return nccl_of(&lib),
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("no NCCL library found by dlopen: {last}"))
}

fn nccl_of(lib: &libloading::Library) -> Result<Nccl, String> {
    type Version = unsafe extern "C" fn(*mut c_int) -> c_int;
    // SAFETY: ncclGetVersion(int*) as nccl.h declares it.
    let f = unsafe { lib.get::<Version>(b"ncclGetVersion") }
        .map_err(|e| format!("ncclGetVersion: {e}"))?;
    let mut code = 0;
    // SAFETY: writes one int.
    if unsafe { f(&mut code) } != 0 {
        return Err("ncclGetVersion failed".into());
    }
    Ok(Nccl {
        path: library_path(*f as *const libc::c_void).unwrap_or_else(|| "libnccl".into()),
        version: nccl_version(code),
    })
}

/// The file a loaded symbol comes from.
fn library_path(symbol: *const libc::c_void) -> Option<String> {
    // SAFETY: dladdr only reads the loader's tables; dli_fname points into them.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if unsafe { libc::dladdr(symbol, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    Some(
        unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned(),
    )
}

fn mpi() -> Result<String, String> {
    let (out, _) = super::command::output("mpirun", &["--version"], HELPER_TIME)?;
    out.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| super::kernel_log::cut(l, 200))
        .ok_or_else(|| "mpirun --version printed nothing".into())
}

fn fabric_manager() -> Result<String, String> {
    let args = ["is-active", "nvidia-fabricmanager"];
    let (out, _) = super::command::output("systemctl", &args, HELPER_TIME)?;
    let state = out.lines().next().unwrap_or_default().trim();
    match state {
        "" => Err("systemctl is-active said nothing (no systemd here?)".into()),
        s => Ok(super::kernel_log::cut(s, 64)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nccl_version_codes_of_both_schemes_read_as_releases() {
        assert_eq!(nccl_version(22803), "2.28.3");
        assert_eq!(nccl_version(23007), "2.30.7");
        assert_eq!(nccl_version(2708), "2.7.8");
    }
}
