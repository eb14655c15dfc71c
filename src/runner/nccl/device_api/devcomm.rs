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

    fn check(&self, abi: &abi::Abi) -> Result<(), GpuError> {
        written_as_built(self.raw(), abi, libs::loaded_version()).map_err(failed)
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

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// That NCCL (version code `loaded`) wrote into `raw` (canary-filled, `ROOM` bytes) the layout
/// the PTX reads — its magic, the headers' version, nothing past the recorded size — and that
/// every rank is load/store reachable, as the kernels' peer pointers need.
fn written_as_built(raw: &[u8], abi: &abi::Abi, loaded: i32) -> Result<(), String> {
    let past = raw[abi.devcomm_size..].iter().any(|&b| b != CANARY);
    if u32_at(raw, 0) != NCCL_API_MAGIC || u32_at(raw, 4) != abi.nccl as u32 || past {
        return Err(format!(
            "NCCL {} wrote a device communicator that is not NCCL {}'s layout ({} bytes), which baton's device kernels read",
            libs::version_text(loaded),
            libs::version_text(abi.nccl),
            abi.devcomm_size
        ));
    }
    let n = u32_at(raw, abi.devcomm_nranks);
    let lsa = u32_at(raw, abi.devcomm_lsa_size);
    if lsa != n {
        return Err(format!(
            "`device_api` needs every rank load/store reachable from every other (CUDA P2P, one NVLink domain): NCCL's LSA team holds {lsa} of the {n} ranks"
        ));
    }
    Ok(())
}

impl Drop for DevComm {
    fn drop(&mut self) {
        // SAFETY: the device communicator NCCL created on this communicator, destroyed once.
        unsafe {
            (self.destroy)(self.comm, self.bytes.as_ptr().cast());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What NCCL 2.30.7 writes for rank 1 of 4, all in one LSA team.
    fn written(abi: &abi::Abi) -> Vec<u8> {
        let mut b = vec![CANARY; ROOM];
        b[..abi.devcomm_size].fill(0);
        b[0..4].copy_from_slice(&NCCL_API_MAGIC.to_ne_bytes());
        b[4..8].copy_from_slice(&(abi.nccl as u32).to_ne_bytes());
        b[8..12].copy_from_slice(&1u32.to_ne_bytes());
        let put =
            |b: &mut Vec<u8>, off: usize, v: u32| b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        put(&mut b, abi.devcomm_nranks, 4);
        put(&mut b, abi.devcomm_lsa_size, 4);
        b
    }

    #[test]
    fn only_the_layout_the_ptx_reads_is_accepted() {
        let abi = abi::abi().unwrap();
        let good = written(abi);
        assert_eq!(written_as_built(&good, abi, 23007), Ok(()));
        let mut longer = good.clone();
        longer[abi.devcomm_size + 7] = 0;
        let e = written_as_built(&longer, abi, 23100).unwrap_err();
        assert!(
            e.contains("NCCL 2.31.0 wrote") && e.contains("not NCCL 2.30.7's layout (240 bytes)"),
            "{e}"
        );
        let mut other = good.clone();
        other[4..8].copy_from_slice(&22907u32.to_ne_bytes());
        assert!(written_as_built(&other, abi, 23007).is_err());
        let mut unversioned = good.clone();
        unversioned[0] = 0;
        assert!(written_as_built(&unversioned, abi, 23007).is_err());
    }

    #[test]
    fn ranks_outside_the_load_store_team_are_refused() {
        let abi = abi::abi().unwrap();
        let mut b = written(abi);
        b[abi.devcomm_lsa_size..abi.devcomm_lsa_size + 4].copy_from_slice(&2u32.to_ne_bytes());
        let e = written_as_built(&b, abi, 23007).unwrap_err();
        assert!(e.contains("LSA team holds 2 of the 4 ranks"), "{e}");
    }
}
