//! One communicator's device communicator (`ncclDevCommCreate` with nccl-tests' requirements:
//! an LSA barrier per CTA), held as the bytes NCCL wrote and passed by value to every kernel;
//! destroyed before its communicator.

use std::ffi::c_void;

use cudarc::nccl::sys::ncclComm_t;

use super::abi::{self, NCCL_API_MAGIC, Requirements};
use crate::runner::nccl::error::{GpuError, nccl};
use crate::runner::nccl::libs::{self, DevCommDestroyFn};

/// Bytes handed to `ncclDevCommCreate`: room past the built layout, filled with `CANARY`, so an
/// NCCL that writes a longer structure is caught rather than overrunning.
const ROOM: usize = 4096;
const CANARY: u8 = 0xa5;

pub struct DevComm {
    comm: ncclComm_t,
    /// NCCL's writing, 8-byte aligned (the PTX records the struct's alignment, checked ≤ 8).
    bytes: Vec<u64>,
    destroy: DevCommDestroyFn,
    /// What it was made for: the communicator's key and the CTA count (one LSA barrier each).
    pub of: (Option<String>, u32),
}

// SAFETY: moves with the engine that owns its communicator, never shared.
unsafe impl Send for DevComm {}

fn failed(text: String) -> GpuError {
    GpuError::Nccl {
        call: "ncclDevCommCreate",
        text,
    }
}

impl DevComm {
    /// Collective over `comm`: every rank creates its device communicator at the same point.
    pub fn new(comm: ncclComm_t, of: (Option<String>, u32)) -> Result<DevComm, GpuError> {
        let abi = abi::abi().map_err(failed)?;
        if abi.devcomm_align > 8 {
            return Err(failed(format!(
                "the device communicator needs {}-byte alignment; baton holds it at 8",
                abi.devcomm_align
            )));
        }
        let (create, destroy) = libs::dev_comm()
            .ok_or_else(|| failed("the loaded NCCL lacks ncclDevCommCreate".into()))?;
        let reqs = Requirements::new(abi.nccl, of.1);
        let mut bytes = vec![u64::from_ne_bytes([CANARY; 8]); ROOM / 8];
        // SAFETY: reqs is laid out as the headers' struct (checked by `abi`); bytes is ROOM
        // writable bytes, more than the layout the version in reqs asks for.
        let rc = unsafe {
            create(
                comm,
                (&reqs as *const Requirements).cast(),
                bytes.as_mut_ptr().cast(),
            )
        };
        nccl(rc, "ncclDevCommCreate", comm)?;
        let d = DevComm {
            comm,
            bytes,
            destroy,
            of,
        };
        d.check(abi)?;
        Ok(d)
    }

    fn raw(&self) -> &[u8] {
        // SAFETY: viewing the u64 buffer as its bytes.
        unsafe { std::slice::from_raw_parts(self.bytes.as_ptr().cast::<u8>(), ROOM) }
    }

    fn u32_at(&self, off: usize) -> u32 {
        let b = self.raw();
        u32::from_ne_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
    }

    /// That NCCL wrote the layout the PTX reads, and that every rank is load/store reachable.
    fn check(&self, abi: &abi::Abi) -> Result<(), GpuError> {
        let loaded = libs::version_text(libs::loaded_version());
        let built = libs::version_text(abi.nccl);
        let past = self.raw()[abi.devcomm_size..].iter().any(|&b| b != CANARY);
        if self.u32_at(0) != NCCL_API_MAGIC || self.u32_at(4) != abi.nccl as u32 || past {
            return Err(failed(format!(
                "NCCL {loaded} wrote a device communicator that is not NCCL {built}'s layout ({} bytes), which baton's device kernels read",
                abi.devcomm_size
            )));
        }
        let n = self.u32_at(abi.devcomm_nranks);
        let lsa = self.u32_at(abi.devcomm_lsa_size);
        if lsa != n {
            return Err(failed(format!(
                "`device_api` needs every rank load/store reachable from every other (CUDA P2P, one NVLink domain): NCCL's LSA team holds {lsa} of the {n} ranks"
            )));
        }
        Ok(())
    }

    /// The device communicator as the kernels take it (the first `devcomm_size` bytes).
    pub fn param(&self) -> *mut c_void {
        self.bytes.as_ptr() as *mut c_void
    }

    /// Its communicator was aborted: nothing to undo.
    pub fn forget(self) {
        std::mem::forget(self);
    }
}

impl Drop for DevComm {
    fn drop(&mut self) {
        // SAFETY: the device communicator NCCL created on this communicator, destroyed once.
        unsafe {
            (self.destroy)(self.comm, self.bytes.as_ptr().cast());
        }
    }
}
