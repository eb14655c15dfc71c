//! Our RAII communicator over `cudarc::nccl::sys`: init, split, async-error polling, abort, and
//! destroy on drop.

use std::mem::MaybeUninit;

use cudarc::nccl::sys::{self, ncclComm_t, ncclUniqueId};

use super::error::{GpuError, nccl};

pub struct Comm {
    raw: ncclComm_t,
}

/// `ncclConfig_t` as nccl.h 2.28 lays it out. nccl-tests built against 2.28 headers creates its
/// communicators with `nvlinkCentricSched = 1` (semantics §2.10); baton does the same so small
/// messages are scheduled the same way and the numbers compare.
#[repr(C)]
struct Config2800 {
    size: usize,
    magic: u32,
    version: u32,
    blocking: i32,
    cga_cluster_size: i32,
    min_ctas: i32,
    max_ctas: i32,
    net_name: *const std::ffi::c_char,
    split_share: i32,
    traffic_class: i32,
    comm_name: *const std::ffi::c_char,
    collnet_enable: i32,
    cta_policy: i32,
    shrink_share: i32,
    nvls_ctas: i32,
    n_channels_per_net_peer: i32,
    nvlink_centric_sched: i32,
}

impl Config2800 {
    fn nccl_tests(cta_policy: Option<u8>) -> Self {
        const UNDEF: i32 = i32::MIN;
        Config2800 {
            size: std::mem::size_of::<Config2800>(),
            magic: 0xcafe_beef,
            version: 22800,
            blocking: UNDEF,
            cga_cluster_size: UNDEF,
            min_ctas: UNDEF,
            max_ctas: UNDEF,
            net_name: std::ptr::null(),
            split_share: UNDEF,
            traffic_class: UNDEF,
            comm_name: std::ptr::null(),
            collnet_enable: UNDEF,
            cta_policy: cta_policy.map_or(UNDEF, i32::from),
            shrink_share: UNDEF,
            nvls_ctas: UNDEF,
            n_channels_per_net_peer: UNDEF,
            nvlink_centric_sched: 1,
        }
    }
}

/// Whether the loaded NCCL reads the 2.28 config (and so `nvlinkCentricSched`).
fn config_2800(cta_policy: Option<u8>) -> Option<Config2800> {
    (super::libs::loaded_version() >= 22800).then(|| Config2800::nccl_tests(cta_policy))
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

    /// `ncclCommInitRankConfig` (with nccl-tests' config and the plan's CTA policy on NCCL ≥
    /// 2.28, else plain `ncclCommInitRank`: the engine refuses a policy there); every rank of
    /// the communicator calls it at once. Splits inherit the config.
    pub fn init(
        nranks: usize,
        id: ncclUniqueId,
        rank: usize,
        cta_policy: Option<u8>,
    ) -> Result<Comm, GpuError> {
        let mut raw: ncclComm_t = std::ptr::null_mut();
        let rc = match (config_2800(cta_policy), super::libs::init_rank_config()) {
            (Some(mut cfg), Some(f)) => {
                // SAFETY: cfg has the 2.28 layout its version field announces.
                unsafe {
                    f(
                        &mut raw,
                        nranks as i32,
                        id,
                        rank as i32,
                        (&mut cfg as *mut Config2800).cast(),
                    )
                }
            }
            // SAFETY: NCCL writes the communicator handle.
            _ => unsafe { sys::ncclCommInitRank(&mut raw, nranks as i32, id, rank as i32) },
        };
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
