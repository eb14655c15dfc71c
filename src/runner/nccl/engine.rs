//! The NCCL backend: one GPU rank's data movement for the shared sweep. Communicators are
//! created once per process (a world communicator, then one `ncclCommSplit` per split) and
//! reused by every job of the plan; a hang aborts them and the next job starts fresh ones.

use std::collections::HashMap;
use std::ffi::c_void;
use std::time::{Duration, Instant};

use cudarc::driver::sys::CUdeviceptr;
use cudarc::nccl::sys::{self, ncclDataType_t, ncclRedOp_t};

use super::comm::Comm;
use super::device::{DevBuf, Gpu, Graph};
use super::device_api::{self, DevComm, Kernels};
use super::error::{GpuError, nccl};
use super::libs::{self, AlltoAllFn};
use super::marks::Marks;
use super::p2p;
use super::register::Registration;
use crate::collective::{Collective, Dtype, RedOp};
use crate::plan::knobs::{Knobs, NCCL_2_28, Register};
use crate::results::ErrorKind;
use crate::results::{DeviceImplementation, MeasuredWith, MemoryFigures};
use crate::runner::engine::{Engine, EngineError, OpSpec};
use crate::runner::layout::{self, Buf, Semantics};
use crate::world::World;

pub struct NcclEngine<'w, W: World> {
    world: &'w W,
    pub gpu: Gpu,
    comms: HashMap<Option<String>, Comm>,
    current: Option<Option<String>>,
    send: Option<DevBuf>,
    recv: Option<DevBuf>,
    counter: Option<DevBuf>,
    alltoall: Option<AlltoAllFn>,
    timeout: Duration,
    /// The last recording; replaced by the next one, dropped before any communicator is.
    graph: Option<Graph>,
    /// Iteration boundaries of the timed loop, when the job asks for iterations.
    marks: Marks,
    /// The job's engine flags (`configure`).
    knobs: Knobs,
    /// The CTA policy the communicators were made with.
    comm_policy: Option<u8>,
    /// The buffers' registration with the current communicator (`register` 1 or 2).
    registration: Option<Registration>,
    version: i32,
    memory: Memory,
    /// The device-API kernels, loaded by the first `device_api` job.
    kernels: Option<Kernels>,
    /// The current communicator's device communicator (`device_api`), destroyed before it.
    devcomm: Option<DevComm>,
}

/// nccl-tests `-M`'s figures as this rank measures them (free memory before and after).
#[derive(Default)]
struct Memory {
    on: bool,
    figures: MemoryFigures,
    before_sweep: u64,
}

fn dtype(d: Dtype) -> ncclDataType_t {
    match d {
        Dtype::Int8 => ncclDataType_t::ncclInt8,
        Dtype::Uint8 => ncclDataType_t::ncclUint8,
        Dtype::Int32 => ncclDataType_t::ncclInt32,
        Dtype::Uint32 => ncclDataType_t::ncclUint32,
        Dtype::Int64 => ncclDataType_t::ncclInt64,
        Dtype::Uint64 => ncclDataType_t::ncclUint64,
        Dtype::Half => ncclDataType_t::ncclFloat16,
        Dtype::Float => ncclDataType_t::ncclFloat32,
        Dtype::Double => ncclDataType_t::ncclFloat64,
        Dtype::Bfloat16 => ncclDataType_t::ncclBfloat16,
        Dtype::F8e4m3 => ncclDataType_t::ncclFloat8e4m3,
        Dtype::F8e5m2 => ncclDataType_t::ncclFloat8e5m2,
    }
}

fn redop(o: RedOp) -> ncclRedOp_t {
    match o {
        RedOp::Sum => ncclRedOp_t::ncclSum,
        RedOp::Prod => ncclRedOp_t::ncclProd,
        RedOp::Min => ncclRedOp_t::ncclMin,
        RedOp::Max => ncclRedOp_t::ncclMax,
        RedOp::Avg => ncclRedOp_t::ncclAvg,
    }
}

impl<'w, W: World> NcclEngine<'w, W> {
    pub fn new(world: &'w W, gpu: Gpu) -> Self {
        NcclEngine {
            world,
            gpu,
            comms: HashMap::new(),
            current: None,
            send: None,
            recv: None,
            counter: None,
            alltoall: libs::alltoall(),
            timeout: Duration::from_secs(300),
            graph: None,
            marks: Marks::default(),
            knobs: Knobs::default(),
            comm_policy: None,
            registration: None,
            version: libs::loaded_version(),
            memory: Memory::default(),
            kernels: None,
            devcomm: None,
        }
    }

    fn comm(&self) -> Result<&Comm, EngineError> {
        self.current
            .as_ref()
            .and_then(|k| self.comms.get(k))
            .ok_or_else(|| EngineError::new(ErrorKind::Nccl, "no communicator prepared"))
    }

    fn base(&self, b: Buf) -> CUdeviceptr {
        match b {
            Buf::Send => self.send.as_ref().map_or(0, |x| x.ptr),
            Buf::Recv => self.recv.as_ref().map_or(0, |x| x.ptr),
        }
    }

    /// Aborts every communicator (after a hang or an asynchronous error): the next `prepare`
    /// builds fresh ones.
    fn abort_all(&mut self) {
        self.graph = None;
        if let Some(d) = self.devcomm.take() {
            d.forget();
        }
        if let Some(r) = self.registration.take() {
            r.forget();
        }
        for (_, c) in self.comms.drain() {
            c.abort();
        }
        self.current = None;
    }

    fn world_comm(&mut self) -> Result<(), GpuError> {
        if self.comms.contains_key(&None) {
            return Ok(());
        }
        let mut id = if self.world.rank() == 0 {
            Comm::unique_id()?
        } else {
            // SAFETY: ncclUniqueId is plain bytes; overwritten by the broadcast.
            unsafe { std::mem::zeroed() }
        };
        {
            // SAFETY: viewing the 128-byte id as bytes for the broadcast.
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(
                    id.internal.as_mut_ptr().cast::<u8>(),
                    id.internal.len(),
                )
            };
            self.world.broadcast_bytes(bytes);
        }
        let free = self.gpu.free_memory();
        let c = Comm::init(
            self.world.size(),
            id,
            self.world.rank(),
            self.knobs.cta_policy,
        )?;
        self.memory.figures.init_bytes = free.saturating_sub(self.gpu.free_memory());
        self.comm_policy = self.knobs.cta_policy;
        self.comms.insert(None, c);
        Ok(())
    }

    /// Every communicator destroyed in the one order all ranks share (after their buffers'
    /// registration), so the next `prepare` makes them with the job's config.
    fn destroy_comms(&mut self) {
        self.graph = None;
        self.devcomm = None;
        self.registration = None;
        for key in teardown_order(self.comms.keys()) {
            self.comms.remove(&key);
        }
        self.current = None;
    }

    /// Registers the buffers with the current communicator as the job asks, unless they are.
    fn register(&mut self, key: &Option<String>, bytes: u64) -> Result<(), GpuError> {
        let (send, recv) = (self.base(Buf::Send), self.base(Buf::Recv));
        let want = (key.clone(), send, recv);
        let mode = self.knobs.register;
        if self
            .registration
            .as_ref()
            .is_some_and(|r| r.mode == mode && r.of == want)
        {
            return Ok(());
        }
        self.registration = None;
        if mode == Register::Off {
            return Ok(());
        }
        let comm = self.comm().map_err(|e| GpuError::Nccl {
            call: "ncclCommRegister",
            text: e.message,
        })?;
        self.registration = Some(Registration::new(comm.raw(), mode, want, bytes)?);
        Ok(())
    }
}

impl<W: World> NcclEngine<'_, W> {
    /// The device communicator and kernels a `device_api` job launches with, made once per
    /// communicator and CTA count (all ranks reach here at the same job).
    fn device_comm(&mut self, key: &Option<String>) -> Result<(), GpuError> {
        let Some(d) = self.knobs.device_api else {
            return Ok(());
        };
        let want = (key.clone(), d.ctas);
        if self.devcomm.as_ref().is_some_and(|c| c.of == want) {
            return Ok(());
        }
        self.devcomm = None;
        if self.kernels.is_none() {
            self.kernels = Some(Kernels::load()?);
        }
        let comm = self.comm().map_err(|e| GpuError::Nccl {
            call: "ncclDevCommCreate",
            text: e.message,
        })?;
        self.devcomm = Some(DevComm::new(comm.raw(), want)?);
        Ok(())
    }

    /// One op of baton's device-API kernels on the symmetric windows (nccl-tests `-D`).
    fn launch_device(
        &mut self,
        op: &OpSpec,
        idx: u64,
        implementation: u32,
    ) -> Result<(), EngineError> {
        let name = device_api::entry(op.collective, implementation, op.dtype).ok_or_else(|| {
            EngineError::new(
                ErrorKind::Nccl,
                format!(
                    "`device_api: {implementation}` has no kernel for {} {}",
                    op.collective.name(),
                    op.dtype.name()
                ),
            )
        })?;
        let windows = self.registration.as_ref().and_then(|r| r.windows());
        let (Some([send_win, recv_win]), Some(devcomm), Some(kernels)) =
            (windows, self.devcomm.as_ref(), self.kernels.as_mut())
        else {
            return Err(EngineError::new(
                ErrorKind::Nccl,
                "`device_api` without symmetric windows and a device communicator",
            ));
        };
        let (sbuf, so, ro) = layout::pointers(op);
        let rot = op.rotation(idx);
        let launch = device_api::Launch {
            send_window: if sbuf == Buf::Send {
                send_win
            } else {
                recv_win
            },
            send_offset: so + rot,
            recv_window: recv_win,
            recv_offset: ro + rot,
            count: op.counts.param,
            ctas: devcomm.of.1,
            devcomm,
        };
        Ok(kernels.launch(&name, &launch, self.gpu.stream)?)
    }
}

/// Why this NCCL (version code `loaded`) cannot run a job with `knobs`, in words naming what
/// is needed and what is loaded.
pub fn refusal(knobs: &Knobs, loaded: i32) -> Option<String> {
    if knobs.device_api.is_some()
        && let Some(why) = device_api::refusal(loaded)
    {
        return Some(why);
    }
    if let Some((need, what)) = knobs.needs_nccl()
        && loaded < need
    {
        return Some(format!(
            "{what} needs NCCL {} or newer; the loaded NCCL is {}",
            libs::version_text(need),
            libs::version_text(loaded)
        ));
    }
    if knobs.cta_policy.is_some() && loaded < NCCL_2_28 {
        return Some(format!(
            "`cta_policy`: baton sets it in NCCL 2.28's communicator config; the loaded NCCL is {}",
            libs::version_text(loaded)
        ));
    }
    None
}

/// The order every rank destroys its communicators in: the splits by name, the world last
/// (the splits were made from it).
fn teardown_order<'a>(keys: impl Iterator<Item = &'a Option<String>>) -> Vec<Option<String>> {
    let mut keys: Vec<Option<String>> = keys.cloned().collect();
    keys.sort_by(|a, b| match (a, b) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (Some(_), None) => std::cmp::Ordering::Less,
        (Some(a), Some(b)) => a.cmp(b),
    });
    keys
}

impl<W: World> Drop for NcclEngine<'_, W> {
    /// Graphs before communicators before buffers, all while the GPU's context is still held.
    fn drop(&mut self) {
        let _ = self.gpu.make_current();
        if matches!(self.gpu.idle(), Err(GpuError::Sticky { .. })) {
            // The context is gone: tearing down what lived in it could block; the process is
            // about to end and the driver reclaims everything.
            std::mem::forget(self.graph.take());
            if let Some(d) = self.devcomm.take() {
                d.forget();
            }
            std::mem::forget(self.kernels.take());
            if let Some(r) = self.registration.take() {
                r.forget();
            }
            self.marks.forget();
            std::mem::forget(std::mem::take(&mut self.comms));
            std::mem::forget(self.send.take());
            std::mem::forget(self.recv.take());
            std::mem::forget(self.counter.take());
            return;
        }
        self.graph = None;
        self.devcomm = None;
        self.registration = None;
        // Destroying a communicator waits for its peers to destroy theirs: every rank must
        // take them in the same order, not its own hash order (four ranks with splits hung).
        for key in teardown_order(self.comms.keys()) {
            self.comms.remove(&key);
        }
        self.kernels = None;
        self.send = None;
        self.recv = None;
        self.counter = None;
        self.marks = Marks::default();
    }
}

impl<W: World> Engine for NcclEngine<'_, W> {
    fn set_timeout(&mut self, limit: Duration) {
        self.timeout = limit;
    }

    fn configure(&mut self, knobs: &Knobs, memory: bool) -> Result<(), EngineError> {
        // Kept first, so a refused job's record says what it asked for.
        self.knobs = *knobs;
        self.memory.on = memory;
        if let Some(why) = refusal(knobs, self.version) {
            return Err(EngineError::new(ErrorKind::Nccl, why));
        }
        self.gpu.make_current()?;
        if !self.comms.is_empty() && self.comm_policy != knobs.cta_policy {
            self.destroy_comms();
        }
        self.gpu.use_null_stream(knobs.null_stream);
        Ok(())
    }

    fn measured_with(&mut self) -> Option<MeasuredWith> {
        let memory = self.memory.on.then(|| MemoryFigures {
            collective_bytes: self
                .memory
                .before_sweep
                .saturating_sub(self.gpu.free_memory()),
            ..self.memory.figures
        });
        Some(MeasuredWith {
            nccl_version: Some(libs::version_text(self.version)),
            register: Some(self.knobs.register.code()),
            cta_policy: self.comm_policy,
            blocking: Some(self.knobs.blocking.code()),
            memory,
            device_api: self.knobs.device_api.and_then(|d| {
                Some(DeviceImplementation {
                    implementation: d.implementation,
                    ctas: d.ctas,
                    headers: libs::version_text(device_api::built_with()?),
                })
            }),
        })
    }

    fn prepare(
        &mut self,
        split: Option<&str>,
        group: usize,
        max_bytes: u64,
        _check: bool,
    ) -> Result<(), EngineError> {
        self.gpu.make_current()?;
        self.world_comm()?;
        let key = split.map(str::to_string);
        if !self.comms.contains_key(&key) {
            let world = self
                .comms
                .get(&None)
                .ok_or_else(|| EngineError::new(ErrorKind::Nccl, "no world communicator"))?;
            let free = self.gpu.free_memory();
            let c = world.split(group as i32, self.world.rank() as i32)?;
            self.memory.figures.init_bytes += free.saturating_sub(self.gpu.free_memory());
            self.comms.insert(key.clone(), c);
        }
        self.current = Some(key.clone());
        let free = self.gpu.free_memory();
        let need = max_bytes.max(1);
        let fits = |b: &Option<DevBuf>| b.as_ref().is_some_and(|b| b.bytes >= need);
        if !(fits(&self.send) && fits(&self.recv)) {
            // Both or neither: a job whose second buffer did not fit must not leave the next
            // job a send buffer without a receive buffer.
            self.registration = None;
            self.send = None;
            self.recv = None;
            let send = DevBuf::alloc(need)?;
            let recv = DevBuf::alloc(need)?;
            self.send = Some(send);
            self.recv = Some(recv);
        }
        if self.counter.is_none() {
            self.counter = Some(DevBuf::alloc(8)?);
        }
        let bytes = self.send.as_ref().map_or(need, |b| b.bytes);
        self.register(&key, bytes)?;
        self.device_comm(&key)?;
        let now = self.gpu.free_memory();
        if now < free {
            // Buffers or registrations were made for this job; otherwise the earlier figure
            // still describes what the buffers take.
            self.memory.figures.user_bytes = free - now;
        }
        self.memory.before_sweep = now;
        Ok(())
    }

    fn init(&mut self, op: &OpSpec, seed: u64) -> Result<(), EngineError> {
        self.gpu.memset(self.base(Buf::Recv), op.span)?;
        for b in layout::inputs(op) {
            self.gpu.fill(
                self.base(b.buf) + b.offset,
                b.count,
                b.start,
                op.dtype,
                b.fill,
                seed,
            )?;
        }
        Ok(())
    }

    fn group_start(&mut self) -> Result<(), EngineError> {
        // SAFETY: plain NCCL call.
        Ok(nccl(
            unsafe { sys::ncclGroupStart() },
            "ncclGroupStart",
            std::ptr::null_mut(),
        )?)
    }

    fn group_end(&mut self) -> Result<(), EngineError> {
        // SAFETY: plain NCCL call.
        Ok(nccl(
            unsafe { sys::ncclGroupEnd() },
            "ncclGroupEnd",
            std::ptr::null_mut(),
        )?)
    }

    fn launch(&mut self, op: &OpSpec, idx: u64) -> Result<(), EngineError> {
        if let Some(d) = self.knobs.device_api {
            return self.launch_device(op, idx, d.implementation);
        }
        let comm = self.comm()?.raw();
        let (sbuf, so, ro) = layout::pointers(op);
        let rot = op.rotation(idx);
        let send = (self.base(sbuf) + so + rot) as *const c_void;
        let recv = (self.base(Buf::Recv) + ro + rot) as *mut c_void;
        let stream = self.gpu.stream as sys::cudaStream_t;
        let (t, c) = (dtype(op.dtype), op.counts.param as usize);
        let e = op.dtype.size();
        let (r, n) = (op.group_rank as i32, op.group_size as i32);
        let call = p2p::Call {
            send,
            recv,
            t,
            comm,
            stream,
        };
        // SAFETY: pointers lie inside this rank's allocations (max span ≥ rotation + span);
        // counts come from the same sizes.
        let rc = unsafe {
            match op.collective {
                Collective::AllReduce => {
                    sys::ncclAllReduce(send, recv, c, t, redop(op.op), comm, stream)
                }
                Collective::AllGather => sys::ncclAllGather(send, recv, c, t, comm, stream),
                Collective::ReduceScatter => {
                    sys::ncclReduceScatter(send, recv, c, t, redop(op.op), comm, stream)
                }
                Collective::Broadcast => {
                    sys::ncclBroadcast(send, recv, c, t, op.root as i32, comm, stream)
                }
                Collective::Reduce => {
                    sys::ncclReduce(send, recv, c, t, redop(op.op), op.root as i32, comm, stream)
                }
                Collective::AllToAll => match self.alltoall {
                    Some(f) => f(send, recv, c, t, comm, stream),
                    None => {
                        let g = sys::ncclGroupStart();
                        if g != sys::ncclResult_t::ncclSuccess {
                            g
                        } else {
                            let mut rc = sys::ncclResult_t::ncclSuccess;
                            for p in 0..n {
                                let off = p as u64 * op.counts.param * e;
                                let s = sys::ncclSend(
                                    send.byte_add(off as usize),
                                    c,
                                    t,
                                    p,
                                    comm,
                                    stream,
                                );
                                let q = sys::ncclRecv(
                                    recv.byte_add(off as usize),
                                    c,
                                    t,
                                    p,
                                    comm,
                                    stream,
                                );
                                if rc == sys::ncclResult_t::ncclSuccess {
                                    rc = if s != sys::ncclResult_t::ncclSuccess {
                                        s
                                    } else {
                                        q
                                    };
                                }
                            }
                            let end = sys::ncclGroupEnd();
                            if rc == sys::ncclResult_t::ncclSuccess {
                                end
                            } else {
                                rc
                            }
                        }
                    }
                },
                Collective::SendRecv => {
                    let g = sys::ncclGroupStart();
                    if g != sys::ncclResult_t::ncclSuccess {
                        g
                    } else {
                        let s = sys::ncclSend(send, c, t, (r + 1) % n, comm, stream);
                        let q = sys::ncclRecv(recv, c, t, (r + n - 1) % n, comm, stream);
                        let end = sys::ncclGroupEnd();
                        if s != sys::ncclResult_t::ncclSuccess {
                            s
                        } else if q != sys::ncclResult_t::ncclSuccess {
                            q
                        } else {
                            end
                        }
                    }
                }
                Collective::Gather => p2p::gather(op, call),
                Collective::Scatter => p2p::scatter(op, call),
                Collective::AllToAllv => p2p::alltoallv(op, call),
                Collective::HyperCube => p2p::hypercube(op, call)?,
            }
        };
        Ok(nccl(rc, op.collective.name(), comm)?)
    }

    fn marks_begin(&mut self, n: usize) -> Result<(), EngineError> {
        Ok(self.marks.begin(n)?)
    }

    fn mark(&mut self, i: usize) -> Result<(), EngineError> {
        Ok(self.marks.record(i, self.gpu.stream)?)
    }

    fn marked(&mut self) -> Result<Vec<f64>, EngineError> {
        Ok(self.marks.elapsed_us()?)
    }

    fn capture_begin(&mut self) -> Result<(), EngineError> {
        self.graph = None;
        Ok(self.gpu.capture_begin()?)
    }

    fn capture_end(&mut self) -> Result<(), EngineError> {
        self.graph = Some(self.gpu.capture_end()?);
        Ok(())
    }

    fn replay(&mut self) -> Result<(), EngineError> {
        let g = self
            .graph
            .as_ref()
            .ok_or_else(|| EngineError::new(ErrorKind::Cuda, "no CUDA graph recorded"))?;
        Ok(self.gpu.replay(g)?)
    }

    fn wait(&mut self) -> Result<(), EngineError> {
        let start = Instant::now();
        loop {
            if self.gpu.idle()? {
                return Ok(());
            }
            if let Err(e) = self
                .comm()
                .and_then(|c| c.async_error().map_err(EngineError::from))
            {
                self.abort_all();
                return Err(e);
            }
            if start.elapsed() > self.timeout {
                // Asked before the abort: afterwards RAS no longer knows the communicators. Every
                // rank asks: whichever records the hang (rank 0, or another where rank 0 cannot:
                // `keeper`) has its own process's answer.
                let ras = crate::runner::hang::ask()
                    .map(|a| format!("; {}", crate::runner::hang::words(&a, &[], &[])))
                    .unwrap_or_default();
                self.abort_all();
                return Err(EngineError::new(
                    ErrorKind::Timeout,
                    format!(
                        "collective did not complete within {} (communicators aborted){ras}",
                        humantime::format_duration(self.timeout)
                    ),
                ));
            }
            std::thread::yield_now();
        }
    }

    fn verify(&mut self, op: &OpSpec, seed: u64) -> Result<u64, EngineError> {
        let counter = self.counter.as_ref().map_or(0, |c| c.ptr);
        self.gpu.memset(counter, 8)?;
        for b in layout::outputs(op, Semantics::Nccl) {
            self.gpu.check(
                self.base(b.buf) + b.offset,
                b.count,
                b.start,
                op.dtype,
                b.fill,
                seed,
                counter,
            )?;
        }
        Ok(self.gpu.read_u64(counter)?)
    }

    fn reset(&mut self) {
        self.abort_all();
    }

    fn fault_device(&mut self) -> Result<(), EngineError> {
        // A kernel writing to address 8, which no allocation covers: an illegal address, as a
        // buggy kernel or a failing GPU would cause.
        self.gpu
            .fill(8, 1, 0, Dtype::Float, crate::runner::pattern::Fill::Zero, 0)?;
        Ok(())
    }

    fn flip_output_element(&mut self, op: &OpSpec) -> Result<(), EngineError> {
        if let Some(b) = layout::outputs(op, Semantics::Nccl).first() {
            self.gpu.xor_byte(self.base(b.buf) + b.offset, 0x5a)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod refusal_tests {
    use super::refusal;
    use crate::plan::knobs::{DeviceApi, Knobs, Register};

    #[test]
    fn too_old_an_nccl_is_named_with_the_version_needed() {
        let sym = Knobs {
            register: Register::Symmetric,
            ..Knobs::default()
        };
        assert_eq!(
            refusal(&sym, 22603).as_deref(),
            Some("`register: 2` needs NCCL 2.27.0 or newer; the loaded NCCL is 2.26.3")
        );
        assert_eq!(refusal(&sym, 22707), None);
        let ce = Knobs {
            cta_policy: Some(2),
            ..Knobs::default()
        };
        assert!(refusal(&ce, 22707).unwrap().contains("needs NCCL 2.28.0"));
        let p1 = Knobs {
            cta_policy: Some(1),
            ..Knobs::default()
        };
        assert!(
            refusal(&p1, 22707)
                .unwrap()
                .contains("2.28's communicator config")
        );
        assert_eq!(refusal(&p1, 23007), None);
        let dev = Knobs {
            register: Register::Symmetric,
            device_api: Some(DeviceApi {
                implementation: 1,
                ctas: 16,
            }),
            ..Knobs::default()
        };
        let old = refusal(&dev, 22803).unwrap();
        assert!(
            old.contains("`device_api` needs NCCL 2.30.7 or newer")
                && old.contains("the loaded NCCL is 2.28.3"),
            "{old}"
        );
    }
}

#[cfg(test)]
mod teardown_tests {
    use super::teardown_order;

    #[test]
    fn every_rank_destroys_splits_by_name_and_the_world_last() {
        let keys = [
            Some("PAIRS 2/3".to_string()),
            None,
            Some("DIV 2".to_string()),
            Some("PAIRS 1/3".to_string()),
        ];
        let want = vec![
            Some("DIV 2".to_string()),
            Some("PAIRS 1/3".to_string()),
            Some("PAIRS 2/3".to_string()),
            None,
        ];
        assert_eq!(teardown_order(keys.iter()), want);
        assert_eq!(teardown_order(keys.iter().rev()), want);
    }
}
