//! One GPU as a rank uses it: its primary context, a non-blocking stream, device buffers, and
//! the data kernels (PTX shipped in `kernels/pattern.ptx`).

use std::ffi::{CString, c_void};

use cudarc::driver::result;
use cudarc::driver::sys::{self, CUdevice, CUdeviceptr, CUfunction, CUmodule, CUresult, CUstream};

use super::error::{GpuError, cuda};
use crate::collective::{Dtype, RedOp};
use crate::runner::pattern::Fill;

const PTX: &str = include_str!("../../../kernels/pattern.ptx");

/// What the results record about a GPU.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GpuInfo {
    pub ordinal: u32,
    pub name: String,
    pub uuid: String,
    pub pci_bus_id: String,
    pub memory_bytes: u64,
}

pub struct Gpu {
    pub ordinal: u32,
    dev: CUdevice,
    ctx: sys::CUcontext,
    pub stream: CUstream,
    /// The stream `open` created, kept while `stream` is the null stream (nccl-tests `-y 1`).
    own: CUstream,
    module: CUmodule,
    fill: CUfunction,
    check: CUfunction,
    blocks: u32,
}

// SAFETY: the handles are plain driver handles; each Gpu is used by one thread at a time (its
// rank's thread), which makes the context current before use.
unsafe impl Send for Gpu {}

fn kernel_kind(f: Fill) -> (i32, i32, u64, u64) {
    // (kind, op, rank, n) as pattern.cu reads them.
    match f {
        Fill::Reduction { op, rank, n } => (0, op_code(op), rank, n),
        Fill::Reduced { op, n } => (1, op_code(op), 0, n),
        Fill::Copy => (2, 0, 0, 1),
        Fill::Zero => (3, 0, 0, 1),
    }
}

fn op_code(op: RedOp) -> i32 {
    match op {
        RedOp::Sum => 0,
        RedOp::Prod => 1,
        RedOp::Min => 2,
        RedOp::Max => 3,
        RedOp::Avg => 4,
    }
}

impl Gpu {
    /// Opens device `ordinal` on the calling thread and makes its context current.
    pub fn open(ordinal: u32) -> Result<Gpu, GpuError> {
        cuda(result::init(), "cuInit")?;
        let dev = cuda(result::device::get(ordinal as i32), "cuDeviceGet")?;
        // SAFETY: dev is a valid device; the context is released in Drop.
        let ctx = cuda(
            unsafe { result::primary_ctx::retain(dev) },
            "cuDevicePrimaryCtxRetain",
        )?;
        // SAFETY: ctx was just retained.
        cuda(unsafe { result::ctx::set_current(ctx) }, "cuCtxSetCurrent")?;
        let stream = cuda(
            result::stream::create(result::stream::StreamKind::NonBlocking),
            "cuStreamCreate",
        )?;
        let image = CString::new(PTX).map_err(|_| GpuError::Cuda {
            call: "cuModuleLoadData",
            text: "kernel image contains a NUL byte".into(),
        })?;
        // SAFETY: image is a NUL-terminated PTX text.
        let loaded = unsafe { result::module::load_data(image.as_ptr().cast()) };
        let too_old =
            matches!(&loaded, Err(e) if e.0 == CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
        let module = cuda(loaded, "cuModuleLoadData (PTX)").map_err(|e| match e {
            GpuError::Cuda { call, text } if too_old => GpuError::Cuda {
                call,
                text: format!(
                    "{text}: baton's data kernels are PTX ISA 7.8 and need a CUDA 12.0 driver (R525) or newer"
                ),
            },
            other => other,
        })?;
        // SAFETY: module is loaded; names exist in pattern.cu.
        let fill = cuda(
            unsafe {
                result::module::get_function(module, CString::new("baton_fill").unwrap_or_default())
            },
            "cuModuleGetFunction",
        )?;
        // SAFETY: as above.
        let check = cuda(
            unsafe {
                result::module::get_function(
                    module,
                    CString::new("baton_check").unwrap_or_default(),
                )
            },
            "cuModuleGetFunction",
        )?;
        // SAFETY: attribute query on a valid device.
        let sms = unsafe {
            result::device::get_attribute(
                dev,
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
        }
        .unwrap_or(32)
        .max(1) as u32;
        Ok(Gpu {
            ordinal,
            dev,
            ctx,
            stream,
            own: stream,
            module,
            fill,
            check,
            blocks: sms * 8,
        })
    }

    pub fn count() -> Result<u32, GpuError> {
        cuda(result::init(), "cuInit")?;
        Ok(cuda(result::device::get_count(), "cuDeviceGetCount")?.max(0) as u32)
    }

    /// Ops, data kernels and waits on the legacy default stream (`null_stream: true`) or on
    /// this rank's own non-blocking stream.
    pub fn use_null_stream(&mut self, on: bool) {
        self.stream = if on { std::ptr::null_mut() } else { self.own };
    }

    /// Free device memory of the current context's GPU, as nccl-tests' `-M` reads it.
    pub fn free_memory(&self) -> u64 {
        result::mem_get_info().map_or(0, |(free, _)| free as u64)
    }

    pub fn make_current(&self) -> Result<(), GpuError> {
        // SAFETY: ctx retained for self's lifetime.
        cuda(
            unsafe { result::ctx::set_current(self.ctx) },
            "cuCtxSetCurrent",
        )
    }

    pub fn info(&self) -> GpuInfo {
        let name = result::device::get_name(self.dev).unwrap_or_default();
        let uuid = result::device::get_uuid(self.dev)
            .map(|u| {
                let b: Vec<u8> = u.bytes.iter().map(|c| *c as u8).collect();
                format!(
                    "GPU-{}-{}-{}-{}-{}",
                    hex(&b[0..4]),
                    hex(&b[4..6]),
                    hex(&b[6..8]),
                    hex(&b[8..10]),
                    hex(&b[10..16])
                )
            })
            .unwrap_or_default();
        let mut pci = [0 as std::ffi::c_char; 32];
        // SAFETY: buffer of the given length.
        let pci_bus_id = if unsafe { sys::cuDeviceGetPCIBusId(pci.as_mut_ptr(), 32, self.dev) }
            == CUresult::CUDA_SUCCESS
        {
            // SAFETY: NUL-terminated by the driver.
            unsafe { std::ffi::CStr::from_ptr(pci.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        } else {
            String::new()
        };
        // SAFETY: valid device.
        let memory_bytes = unsafe { result::device::total_mem(self.dev) }.unwrap_or(0) as u64;
        GpuInfo {
            ordinal: self.ordinal,
            name,
            uuid,
            pci_bus_id,
            memory_bytes,
        }
    }

    /// Driver's CUDA version, e.g. `13.0`.
    pub fn driver_version() -> Option<String> {
        let mut v = 0;
        // SAFETY: writes one int.
        (unsafe { sys::cuDriverGetVersion(&mut v) } == CUresult::CUDA_SUCCESS)
            .then(|| format!("{}.{}", v / 1000, (v % 1000) / 10))
    }

    pub fn memset(&self, ptr: CUdeviceptr, bytes: u64) -> Result<(), GpuError> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: caller passes a range inside one of this GPU's allocations.
        cuda(
            unsafe { result::memset_d8_async(ptr, 0, bytes as usize, self.stream) },
            "cuMemsetD8Async",
        )
    }

    fn launch(
        &self,
        f: CUfunction,
        params: &mut [*mut c_void],
        count: u64,
    ) -> Result<(), GpuError> {
        if count == 0 {
            return Ok(());
        }
        let grid = (count.div_ceil(256).min(self.blocks as u64)) as u32;
        // SAFETY: params match the kernel signatures in pattern.cu and point at live locals.
        cuda(
            unsafe { result::launch_kernel(f, (grid, 1, 1), (256, 1, 1), 0, self.stream, params) },
            "cuLaunchKernel",
        )
    }

    /// Writes `fill` for global indices `start..start+count` at `ptr`.
    pub fn fill(
        &self,
        ptr: CUdeviceptr,
        count: u64,
        start: u64,
        dtype: Dtype,
        fill: Fill,
        seed: u64,
    ) -> Result<(), GpuError> {
        self.pattern(self.fill, ptr, count, start, dtype, fill, seed, None)
    }

    /// Adds to the counter at `wrong` the elements at `ptr` that differ from `fill`.
    #[allow(clippy::too_many_arguments)]
    pub fn check(
        &self,
        ptr: CUdeviceptr,
        count: u64,
        start: u64,
        dtype: Dtype,
        fill: Fill,
        seed: u64,
        wrong: CUdeviceptr,
    ) -> Result<(), GpuError> {
        self.pattern(
            self.check,
            ptr,
            count,
            start,
            dtype,
            fill,
            seed,
            Some(wrong),
        )
    }

    /// Launches `baton_fill` or `baton_check` (which takes the extra counter pointer).
    #[allow(clippy::too_many_arguments)]
    fn pattern(
        &self,
        f: CUfunction,
        ptr: CUdeviceptr,
        count: u64,
        start: u64,
        dtype: Dtype,
        fill: Fill,
        seed: u64,
        wrong: Option<CUdeviceptr>,
    ) -> Result<(), GpuError> {
        let (kind, op, rank, n) = kernel_kind(fill);
        let (mut p, mut c, mut s, mut t, mut k, mut o, mut sd, mut r, mut nn) =
            (ptr, count, start, dtype as i32, kind, op, seed, rank, n);
        let mut w = wrong.unwrap_or(0);
        let mut params: Vec<*mut c_void> = vec![
            (&mut p as *mut u64).cast(),
            (&mut c as *mut u64).cast(),
            (&mut s as *mut u64).cast(),
            (&mut t as *mut i32).cast(),
            (&mut k as *mut i32).cast(),
            (&mut o as *mut i32).cast(),
            (&mut sd as *mut u64).cast(),
            (&mut r as *mut u64).cast(),
            (&mut nn as *mut u64).cast(),
        ];
        if wrong.is_some() {
            params.push((&mut w as *mut u64).cast());
        }
        self.launch(f, &mut params, count)
    }

    /// `cuStreamQuery`: `Ok(true)` when all work is done.
    pub fn idle(&self) -> Result<bool, GpuError> {
        // SAFETY: valid stream.
        match unsafe { sys::cuStreamQuery(self.stream) } {
            CUresult::CUDA_SUCCESS => Ok(true),
            CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            e => cuda(e.result(), "cuStreamQuery").map(|_| true),
        }
    }

    pub fn synchronize(&self) -> Result<(), GpuError> {
        // SAFETY: valid stream.
        cuda(
            unsafe { result::stream::synchronize(self.stream) },
            "cuStreamSynchronize",
        )
    }

    pub fn read_u64(&self, ptr: CUdeviceptr) -> Result<u64, GpuError> {
        let mut v = [0u64; 1];
        self.synchronize()?;
        // SAFETY: ptr holds at least 8 bytes.
        cuda(
            unsafe { result::memcpy_dtoh_sync(&mut v, ptr) },
            "cuMemcpyDtoH",
        )?;
        Ok(v[0])
    }

    pub fn xor_byte(&self, ptr: CUdeviceptr, mask: u8) -> Result<(), GpuError> {
        let mut v = [0u8; 1];
        self.synchronize()?;
        // SAFETY: ptr is inside an allocation of this GPU.
        cuda(
            unsafe { result::memcpy_dtoh_sync(&mut v, ptr) },
            "cuMemcpyDtoH",
        )?;
        v[0] ^= mask;
        // SAFETY: as above.
        cuda(unsafe { result::memcpy_htod_sync(ptr, &v) }, "cuMemcpyHtoD")
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: handles created in open(); errors on teardown are not actionable.
        unsafe {
            let _ = result::ctx::set_current(self.ctx);
            let _ = result::stream::destroy(self.own);
            let _ = result::module::unload(self.module);
            let _ = result::primary_ctx::release(self.dev);
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A device allocation from `ncclMemAlloc` (what nccl-tests uses with NCCL ≥ 2.19), freed on drop.
pub struct DevBuf {
    pub ptr: CUdeviceptr,
    pub bytes: u64,
}

impl DevBuf {
    pub fn alloc(bytes: u64) -> Result<DevBuf, GpuError> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: NCCL writes the pointer; the context is current on this thread.
        let rc = unsafe { cudarc::nccl::sys::ncclMemAlloc(&mut p, bytes.max(1) as usize) };
        super::error::nccl(rc, "ncclMemAlloc", std::ptr::null_mut()).map_err(|e| match e {
            GpuError::Nccl { text, .. } => GpuError::Cuda {
                call: "ncclMemAlloc",
                text: format!("{} bytes: {text} (out of memory?)", bytes),
            },
            other => other,
        })?;
        Ok(DevBuf {
            ptr: p as CUdeviceptr,
            bytes,
        })
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        // SAFETY: allocated by ncclMemAlloc.
        unsafe {
            cudarc::nccl::sys::ncclMemFree(self.ptr as *mut c_void);
        }
    }
}

/// A recorded stream of ops (nccl-tests `-G`): captured once, replayed `k` times, destroyed on
/// drop. NCCL ties per-graph resources to it, so it must go before its communicators do.
pub struct Graph {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
}

impl Gpu {
    /// Starts recording this thread's launches on the stream. Thread-local mode, as nccl-tests
    /// uses: each rank thread captures its own stream while the others keep running.
    pub fn capture_begin(&self) -> Result<(), GpuError> {
        // SAFETY: valid stream.
        cuda(
            unsafe {
                result::stream::begin_capture(
                    self.stream,
                    sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                )
            },
            "cuStreamBeginCapture",
        )
    }

    /// Ends recording and instantiates what was recorded.
    pub fn capture_end(&self) -> Result<Graph, GpuError> {
        // SAFETY: valid stream in capture mode (begun by capture_begin).
        let graph = cuda(
            unsafe { result::stream::end_capture(self.stream) },
            "cuStreamEndCapture",
        )?;
        // SAFETY: graph was just captured; destroyed on the error path or by Graph's drop.
        let exec = unsafe {
            result::graph::instantiate(graph, sys::CUgraphInstantiate_flags(0)).inspect_err(|_| {
                let _ = result::graph::destroy(graph);
            })
        };
        let exec = cuda(exec, "cuGraphInstantiate")?;
        Ok(Graph { graph, exec })
    }

    /// Enqueues one replay of `g` on the stream.
    pub fn replay(&self, g: &Graph) -> Result<(), GpuError> {
        // SAFETY: g was instantiated in this context; valid stream.
        cuda(
            unsafe { result::graph::launch(g.exec, self.stream) },
            "cuGraphLaunch",
        )
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: created by capture_end, destroyed once.
        unsafe {
            let _ = result::graph::exec_destroy(self.exec);
            let _ = result::graph::destroy(self.graph);
        }
    }
}
