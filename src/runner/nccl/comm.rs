//! Our RAII communicator over `cudarc::nccl::sys`: init, split, async-error polling, abort, and
//! destroy on drop.

use std::mem::MaybeUninit;

use cudarc::nccl::sys::{self, ncclComm_t, ncclUniqueId};

use super::error::{GpuError, nccl};

pub struct Comm {
    raw: ncclComm_t,
}

// SAFETY: an NCCL communicator may be used from the thread that owns it; ownership moves with
// the rank's engine, never shared.
unsafe impl Send for Comm {}

impl Comm {
    pub fn unique_id() -> Result<ncclUniqueId, GpuError> {
        let mut id = MaybeUninit::<ncclUniqueId>::zeroed();
        // SAFETY: NCCL fills the id.
        let rc = unsafe { sys::ncclGetUniqueId(id.as_mut_ptr()) };
        nccl(rc, "ncclGetUniqueId", std::ptr::null_mut())?;
        // SAFETY: initialised by NCCL (or zeroed on error, returned above).
        Ok(unsafe { id.assume_init() })
    }

    /// `ncclCommInitRank`; every rank of the communicator calls it at once.
    pub fn init(nranks: usize, id: ncclUniqueId, rank: usize) -> Result<Comm, GpuError> {
        let mut raw: ncclComm_t = std::ptr::null_mut();
        // SAFETY: NCCL writes the communicator handle.
        let rc = unsafe { sys::ncclCommInitRank(&mut raw, nranks as i32, id, rank as i32) };
        nccl(rc, "ncclCommInitRank", raw)?;
        Ok(Comm { raw })
    }

    /// `ncclCommSplit`: a communicator per color, ranks ordered by `key`. Collective over self.
    pub fn split(&self, color: i32, key: i32) -> Result<Comm, GpuError> {
        let mut raw: ncclComm_t = std::ptr::null_mut();
        // SAFETY: NCCL writes the new handle; a null config means defaults.
        let rc =
            unsafe { sys::ncclCommSplit(self.raw, color, key, &mut raw, std::ptr::null_mut()) };
        nccl(rc, "ncclCommSplit", self.raw)?;
        Ok(Comm { raw })
    }

    pub fn raw(&self) -> ncclComm_t {
        self.raw
    }

    /// An error NCCL raised asynchronously (e.g. a peer died), if any.
    pub fn async_error(&self) -> Result<(), GpuError> {
        let mut rc = sys::ncclResult_t::ncclSuccess;
        // SAFETY: valid communicator; NCCL writes the state.
        let q = unsafe { sys::ncclCommGetAsyncError(self.raw, &mut rc) };
        nccl(q, "ncclCommGetAsyncError", self.raw)?;
        nccl(rc, "asynchronous error", self.raw)
    }

    /// Tears the communicator down without waiting for peers: the way out of a hang.
    pub fn abort(mut self) {
        // SAFETY: valid communicator; not used afterwards.
        unsafe {
            sys::ncclCommAbort(self.raw);
        }
        self.raw = std::ptr::null_mut();
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        if !self.raw.is_null() {
            // SAFETY: valid communicator, destroyed once.
            unsafe {
                sys::ncclCommDestroy(self.raw);
            }
        }
    }
}
