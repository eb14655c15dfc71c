//! NCCL and CUDA failures as typed errors with the library's own words (cudarc's `NcclError`
//! has no `Display`).

use std::ffi::CStr;

use cudarc::nccl::sys::{self, ncclComm_t, ncclResult_t};

use crate::results::ErrorKind;
use crate::runner::engine::EngineError;

#[derive(Debug, Clone, thiserror::Error)]
pub enum GpuError {
    #[error("NCCL {call} failed: {text}")]
    Nccl { call: &'static str, text: String },
    #[error("CUDA {call} failed: {text}")]
    Cuda { call: &'static str, text: String },
}

/// Turns an NCCL return code into an error carrying `ncclGetErrorString` and `ncclGetLastError`.
pub(crate) fn nccl(rc: ncclResult_t, call: &'static str, comm: ncclComm_t) -> Result<(), GpuError> {
    if rc == ncclResult_t::ncclSuccess {
        return Ok(());
    }
    // SAFETY: both return static or comm-owned NUL-terminated strings.
    let text = unsafe {
        let s = CStr::from_ptr(sys::ncclGetErrorString(rc))
            .to_string_lossy()
            .into_owned();
        let last = sys::ncclGetLastError(comm);
        let last = if last.is_null() {
            String::new()
        } else {
            CStr::from_ptr(last).to_string_lossy().into_owned()
        };
        if last.is_empty() {
            s
        } else {
            format!("{s} / {last}")
        }
    };
    Err(GpuError::Nccl { call, text })
}

pub(crate) fn cuda<T>(
    r: Result<T, cudarc::driver::DriverError>,
    call: &'static str,
) -> Result<T, GpuError> {
    r.map_err(|e| GpuError::Cuda {
        call,
        text: e
            .error_string()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| format!("{e:?}")),
    })
}

impl From<GpuError> for EngineError {
    fn from(e: GpuError) -> Self {
        let kind = match &e {
            GpuError::Nccl { .. } => ErrorKind::Nccl,
            GpuError::Cuda { text, .. } if text.contains("out of memory") => ErrorKind::OutOfMemory,
            GpuError::Cuda { .. } => ErrorKind::Cuda,
        };
        EngineError::new(kind, e.to_string())
    }
}
