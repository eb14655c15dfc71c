//! The send and receive buffers registered with a communicator as nccl-tests `-R` does:
//! `ncclCommRegister` (1) or symmetric windows, `ncclCommWindowRegister` with
//! `NCCL_WIN_COLL_SYMMETRIC` (2; collective over the communicator). Deregistered before the
//! buffers are freed or the communicator destroyed.

use std::ffi::c_void;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::nccl::sys::ncclComm_t;

use super::error::{GpuError, nccl};
use super::libs::{self, DeregisterFn};
use crate::plan::knobs::Register;

/// nccl.h's `NCCL_WIN_COLL_SYMMETRIC`.
const NCCL_WIN_COLL_SYMMETRIC: i32 = 0x01;

/// Both buffers' handles on one communicator.
pub struct Registration {
    comm: ncclComm_t,
    pub mode: Register,
    /// What was registered: the communicator's key and the two buffers.
    pub of: (Option<String>, CUdeviceptr, CUdeviceptr),
    handles: [*mut c_void; 2],
    deregister: DeregisterFn,
}

// SAFETY: moves with the engine that owns its communicator, never shared.
unsafe impl Send for Registration {}

impl Registration {
    /// Registers `send` and `recv` (`bytes` each) with `comm` in `mode` (not `Off`).
    pub fn new(
        comm: ncclComm_t,
        mode: Register,
        of: (Option<String>, CUdeviceptr, CUdeviceptr),
        bytes: u64,
    ) -> Result<Registration, GpuError> {
        let missing = |what: &str| GpuError::Nccl {
            call: "ncclCommRegister",
            text: format!("the loaded NCCL lacks {what}"),
        };
        let buffers = [of.1, of.2];
        let symmetric = mode == Register::Symmetric;
        let (window, local) = if symmetric {
            let w = libs::window_register().ok_or_else(|| missing("ncclCommWindowRegister"))?;
            (Some(w.0), w.1)
        } else {
            let l = libs::register().ok_or_else(|| missing("ncclCommRegister"))?;
            (None, l.1)
        };
        let local_reg = libs::register().map(|l| l.0);
        // Built first, so a failure on the second buffer deregisters the first on drop.
        let mut r = Registration {
            comm,
            mode,
            of,
            handles: [std::ptr::null_mut(); 2],
            deregister: local,
        };
        for (i, b) in buffers.into_iter().enumerate() {
            let h = &mut r.handles[i];
            let ptr = b as *mut c_void;
            // SAFETY: b is an ncclMemAlloc allocation of at least `bytes` on comm's GPU.
            let (rc, call) = unsafe {
                match (window, local_reg) {
                    (Some(w), _) => (
                        w(comm, ptr, bytes as usize, h, NCCL_WIN_COLL_SYMMETRIC),
                        "ncclCommWindowRegister",
                    ),
                    (None, Some(l)) => (l(comm, ptr, bytes as usize, h), "ncclCommRegister"),
                    (None, None) => return Err(missing("ncclCommRegister")),
                }
            };
            nccl(rc, call, comm)?;
        }
        Ok(r)
    }

    /// The symmetric windows (`ncclWindow_t`) of send and receive, for device kernels.
    pub fn windows(&self) -> Option<[*mut c_void; 2]> {
        (self.mode == Register::Symmetric).then_some(self.handles)
    }

    /// A registration whose communicator was aborted: nothing to undo.
    pub fn forget(self) {
        std::mem::forget(self);
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        for h in self.handles {
            if !h.is_null() {
                // SAFETY: a handle this communicator returned, deregistered once.
                unsafe {
                    (self.deregister)(self.comm, h);
                }
            }
        }
    }
}
