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
    /// An error that leaves the GPU context unusable for the rest of the process (an illegal
    /// address, a kernel fault, an uncorrectable ECC error): only a fresh process recovers.
    #[error("CUDA {call} failed: {text} (the GPU context is unusable until the process restarts)")]
    Sticky { call: &'static str, text: String },
}

/// Driver errors after which CUDA requires the process to end (CUDA driver API: "the process
/// must be terminated and relaunched").
fn is_sticky(code: cudarc::driver::sys::CUresult) -> bool {
    use cudarc::driver::sys::CUresult::*;
    matches!(
        code,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_ECC_UNCORRECTABLE
            | CUDA_ERROR_ASSERT
    )
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
    r.map_err(|e| {
        let text = e
            .error_string()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| format!("{e:?}"));
        if is_sticky(e.0) {
            GpuError::Sticky { call, text }
        } else {
            GpuError::Cuda { call, text }
        }
    })
}

impl From<GpuError> for EngineError {
    fn from(e: GpuError) -> Self {
        let kind = match &e {
            GpuError::Nccl { .. } => ErrorKind::Nccl,
            GpuError::Cuda { text, .. } if text.contains("out of memory") => ErrorKind::OutOfMemory,
            GpuError::Cuda { .. } | GpuError::Sticky { .. } => ErrorKind::Cuda,
        };
        let fatal = matches!(e, GpuError::Sticky { .. });
        let mut err = EngineError::new(kind, e.to_string());
        err.fatal = fatal;
        err
    }
}
