//! Finding libcuda and libnccl before anything calls into them: cudarc panics on a missing
//! library or symbol, so the run checks first and says what was searched and how to fix it.

use std::ffi::c_int;

/// Symbols baton calls; all must resolve before the first NCCL call.
const NCCL_SYMBOLS: &[&str] = &[
    "ncclGetVersion",
    "ncclGetUniqueId",
    "ncclCommInitRank",
    "ncclCommSplit",
    "ncclCommDestroy",
    "ncclCommAbort",
    "ncclCommGetAsyncError",
    "ncclGetErrorString",
    "ncclGetLastError",
    "ncclGroupStart",
    "ncclGroupEnd",
    "ncclAllReduce",
    "ncclAllGather",
    "ncclReduceScatter",
    "ncclBroadcast",
    "ncclReduce",
    "ncclSend",
    "ncclRecv",
    "ncclMemAlloc",
    "ncclMemFree",
];

/// Why the GPU backend cannot run here.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

/// Library file names tried, in cudarc's order.
fn candidates(lib: &str) -> Vec<String> {
    let mut names = cudarc::get_lib_name_candidates(lib);
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names
}

fn open(lib: &str) -> Result<libloading::Library, Vec<String>> {
    let names = candidates(lib);
    for n in &names {
        // SAFETY: loading a shared library runs its initialisers; these are the CUDA/NCCL
        // libraries the backend exists to use.
        if let Ok(l) = unsafe { libloading::Library::new(n) } {
            return Ok(l);
        }
    }
    Err(names)
}

/// Checks that the driver and NCCL load and export what baton uses; returns the NCCL version
/// code (e.g. 22803).
pub fn preflight() -> Result<i32, Unavailable> {
    let cuda = open("cuda").map_err(|names| {
        Unavailable(format!(
            "no CUDA driver: none of {names:?} could be loaded. Is this a GPU node with the NVIDIA driver \
             installed? (`nvidia-smi` should work)"
        ))
    })?;
    drop(cuda);
    let nccl = open("nccl").map_err(|names| {
        let so2 = std::path::Path::new("/usr/lib/x86_64-linux-gnu/libnccl.so.2").exists();
        Unavailable(format!(
            "no NCCL library: none of {names:?} could be loaded{}. Install NCCL (libnccl2 and libnccl-dev), \
             or put the directory holding libnccl.so on LD_LIBRARY_PATH",
            if so2 { " (libnccl.so.2 exists but libnccl.so does not: install libnccl-dev or add a libnccl.so symlink)" } else { "" }
        ))
    })?;
    for s in NCCL_SYMBOLS {
        // SAFETY: only checks that the symbol exists; it is not called through this handle.
        if unsafe { nccl.get::<*const ()>(s.as_bytes()) }.is_err() {
            return Err(Unavailable(format!(
                "the NCCL library lacks `{s}`; baton needs NCCL 2.24 or newer"
            )));
        }
    }
    let mut v: c_int = 0;
    // SAFETY: symbol checked above; writes one int.
    let rc = unsafe { cudarc::nccl::sys::ncclGetVersion(&mut v) };
    if rc != cudarc::nccl::sys::ncclResult_t::ncclSuccess {
        return Err(Unavailable(format!("ncclGetVersion failed ({rc:?})")));
    }
    if v < 22400 {
        return Err(Unavailable(format!(
            "NCCL {} is too old; baton needs NCCL 2.24 or newer",
            version_text(v)
        )));
    }
    Ok(v)
}

/// `22803` → `2.28.3`.
pub fn version_text(code: i32) -> String {
    format!("{}.{}.{}", code / 10000, (code / 100) % 100, code % 100)
}

/// `ncclAlltoAll`, which NCCL has from 2.28; older libraries get grouped send/recv instead.
pub type AlltoAllFn = unsafe extern "C" fn(
    *const std::ffi::c_void,
    *mut std::ffi::c_void,
    usize,
    cudarc::nccl::sys::ncclDataType_t,
    cudarc::nccl::sys::ncclComm_t,
    cudarc::nccl::sys::cudaStream_t,
) -> cudarc::nccl::sys::ncclResult_t;

/// `ncclCommInitRankConfig`, taking the config as an untyped pointer so baton can pass the
/// layout of the NCCL it runs with rather than the one its bindings were generated from.
pub type InitRankConfigFn = unsafe extern "C" fn(
    *mut cudarc::nccl::sys::ncclComm_t,
    c_int,
    cudarc::nccl::sys::ncclUniqueId,
    c_int,
    *mut std::ffi::c_void,
) -> cudarc::nccl::sys::ncclResult_t;

/// `ncclCommRegister(comm, buff, size, &handle)` (NCCL ≥ 2.19).
pub type RegisterFn = unsafe extern "C" fn(
    cudarc::nccl::sys::ncclComm_t,
    *mut std::ffi::c_void,
    usize,
    *mut *mut std::ffi::c_void,
) -> cudarc::nccl::sys::ncclResult_t;

/// `ncclCommWindowRegister(comm, buff, size, &win, flags)` (NCCL ≥ 2.27).
pub type WindowRegisterFn = unsafe extern "C" fn(
    cudarc::nccl::sys::ncclComm_t,
    *mut std::ffi::c_void,
    usize,
    *mut *mut std::ffi::c_void,
    c_int,
) -> cudarc::nccl::sys::ncclResult_t;

/// `ncclCommDeregister(comm, handle)` and `ncclCommWindowDeregister(comm, win)`.
pub type DeregisterFn = unsafe extern "C" fn(
    cudarc::nccl::sys::ncclComm_t,
    *mut std::ffi::c_void,
) -> cudarc::nccl::sys::ncclResult_t;

/// `ncclDevCommCreate(comm, &reqs, &devComm)`, both structures passed by pointer in the layout
/// of the headers the device kernels were built with (`device_api::abi`).
pub type DevCommCreateFn = unsafe extern "C" fn(
    cudarc::nccl::sys::ncclComm_t,
    *const std::ffi::c_void,
    *mut std::ffi::c_void,
) -> cudarc::nccl::sys::ncclResult_t;

/// `ncclDevCommDestroy(comm, &devComm)`.
pub type DevCommDestroyFn = unsafe extern "C" fn(
    cudarc::nccl::sys::ncclComm_t,
    *const std::ffi::c_void,
) -> cudarc::nccl::sys::ncclResult_t;

/// A symbol of the NCCL cudarc loaded, when this library has it.
///
/// # Safety
/// `T` must be the function pointer type of `name` as nccl.h declares it.
unsafe fn symbol<T: Copy>(name: &[u8]) -> Option<T> {
    let lib = open("nccl").ok()?;
    // SAFETY: the caller names the symbol's type.
    let f = unsafe { lib.get::<T>(name) }.ok().map(|s| *s);
    // The library stays loaded: NCCL is loaded by cudarc for the life of the process.
    std::mem::forget(lib);
    f
}

pub fn init_rank_config() -> Option<InitRankConfigFn> {
    // SAFETY: the signature matches nccl.h with the config passed by pointer.
    unsafe { symbol(b"ncclCommInitRankConfig") }
}

pub fn alltoall() -> Option<AlltoAllFn> {
    // SAFETY: the signature is ncclAlltoAll's in nccl.h 2.28.
    unsafe { symbol(b"ncclAlltoAll") }
}

pub fn register() -> Option<(RegisterFn, DeregisterFn)> {
    // SAFETY: signatures as nccl.h 2.19+ declares them (handles as void*).
    unsafe { Some((symbol(b"ncclCommRegister")?, symbol(b"ncclCommDeregister")?)) }
}

pub fn window_register() -> Option<(WindowRegisterFn, DeregisterFn)> {
    // SAFETY: signatures as nccl.h 2.27+ declares them (ncclWindow_t is a pointer).
    unsafe {
        Some((
            symbol(b"ncclCommWindowRegister")?,
            symbol(b"ncclCommWindowDeregister")?,
        ))
    }
}

pub fn dev_comm() -> Option<(DevCommCreateFn, DevCommDestroyFn)> {
    // SAFETY: signatures as nccl_device/core.h (NCCL ≥ 2.28) declares them, structures by pointer.
    unsafe {
        Some((
            symbol(b"ncclDevCommCreate")?,
            symbol(b"ncclDevCommDestroy")?,
        ))
    }
}

/// The loaded NCCL's version code, 0 when it cannot say.
pub fn loaded_version() -> i32 {
    let mut v: c_int = 0;
    // SAFETY: writes one int; the preflight checked the symbol.
    let rc = unsafe { cudarc::nccl::sys::ncclGetVersion(&mut v) };
    if rc == cudarc::nccl::sys::ncclResult_t::ncclSuccess {
        v
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_codes() {
        assert_eq!(super::version_text(22803), "2.28.3");
        assert_eq!(super::version_text(22400), "2.24.0");
    }
}
