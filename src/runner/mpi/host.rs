//! The host backend: the same jobs over host memory with MPI collectives, so CPU fabrics can be
//! accepted with the same plans and the README's first command runs on any machine.

use std::collections::HashMap;
use std::os::raw::c_void;
use std::time::Instant;

use mpi::raw::AsRaw;
use mpi::topology::{Color, Communicator, SimpleCommunicator};

use super::exchange;
use super::ffi::{self, Comm};
use crate::collective::Collective;
use crate::results::{ErrorKind, Placement};
use crate::runner::engine::{Engine, EngineError, OpSpec};
use crate::runner::layout::{self, Buf, Semantics};
use crate::runner::pattern;

use super::hostbuf::HostBuf;

/// One rank's MPI data mover; keeps one communicator per split for the whole run.
pub struct HostEngine {
    world: SimpleCommunicator,
    comms: HashMap<Option<String>, SimpleCommunicator>,
    current: Option<Option<String>>,
    send: Option<HostBuf>,
    recv: Option<HostBuf>,
    /// Host clock at the timed loop's iteration boundaries (MPI calls here block, so the
    /// host clock is the op's clock), when the job asks for iterations.
    marks: Vec<Instant>,
}

fn err(message: String) -> EngineError {
    EngineError::new(ErrorKind::Mpi, message)
}

impl HostEngine {
    pub fn new(world: &SimpleCommunicator) -> Self {
        HostEngine {
            world: world.duplicate(),
            comms: HashMap::new(),
            current: None,
            send: None,
            recv: None,
            marks: Vec::new(),
        }
    }

    fn comm(&self) -> Result<Comm, EngineError> {
        self.current
            .as_ref()
            .and_then(|k| self.comms.get(k))
            .map(|c| c.as_raw())
            .ok_or_else(|| err("no communicator prepared".into()))
    }

    fn bytes(v: &mut Option<HostBuf>) -> &mut [u8] {
        v.as_mut().map_or(&mut [], HostBuf::bytes)
    }

    fn buf(&mut self, b: Buf) -> &mut [u8] {
        Self::bytes(match b {
            Buf::Send => &mut self.send,
            Buf::Recv => &mut self.recv,
        })
    }
}

impl Engine for HostEngine {
    fn marks_begin(&mut self, n: usize) -> Result<(), EngineError> {
        self.marks.clear();
        self.marks.reserve(n);
        Ok(())
    }

    fn mark(&mut self, _i: usize) -> Result<(), EngineError> {
        // Never past the room made before the loop: the loop does not allocate.
        if self.marks.len() < self.marks.capacity() {
            self.marks.push(Instant::now());
        }
        Ok(())
    }

    fn marked(&mut self) -> Result<Vec<f64>, EngineError> {
        Ok(self
            .marks
            .windows(2)
            .map(|w| (w[1] - w[0]).as_secs_f64() * 1e6)
            .collect())
    }

    fn prepare(
        &mut self,
        split: Option<&str>,
        group: usize,
        max_bytes: u64,
        _check: bool,
    ) -> Result<(), EngineError> {
        let key = split.map(str::to_string);
        if !self.comms.contains_key(&key) {
            let c = match split {
                None => self.world.duplicate(),
                Some(_) => self
                    .world
                    .split_by_color_with_key(Color::with_value(group as i32), self.world.rank())
                    .ok_or_else(|| err("MPI_Comm_split returned no communicator".into()))?,
            };
            self.comms.insert(key.clone(), c);
        }
        self.current = Some(key);
        let need = (max_bytes as usize).max(1);
        for b in [&mut self.send, &mut self.recv] {
            if b.as_ref().is_none_or(|x| x.len() < need) {
                *b = None;
                *b = Some(HostBuf::new(need).map_err(|e| {
                    EngineError::new(
                        ErrorKind::OutOfMemory,
                        format!("{need} bytes of host memory: {e}"),
                    )
                })?);
            }
        }
        Ok(())
    }

    fn init(&mut self, op: &OpSpec, seed: u64) -> Result<(), EngineError> {
        let e = op.dtype.size();
        Self::bytes(&mut self.recv)[..op.span as usize].fill(0);
        for b in layout::inputs(op) {
            let (a, z) = (b.offset as usize, (b.offset + b.count * e) as usize);
            pattern::fill(op.dtype, b.fill, seed, b.start, &mut self.buf(b.buf)[a..z]);
        }
        Ok(())
    }

    fn launch(&mut self, op: &OpSpec, idx: u64) -> Result<(), EngineError> {
        let comm = self.comm()?;
        let dt = ffi::datatype(op.dtype)
            .ok_or_else(|| err(format!("MPI has no type for {}", op.dtype)))?;
        let shift = op.rotation(idx) as usize;
        let c = op.counts;
        let send = Self::bytes(&mut self.send)[shift..]
            .as_mut_ptr()
            .cast::<c_void>();
        let recv = Self::bytes(&mut self.recv)[shift..]
            .as_mut_ptr()
            .cast::<c_void>();
        let ip = op.placement == Placement::InPlace;
        let (r, n, root) = (op.group_rank, op.group_size, op.root as i32);
        let count = |x: u64| x as i32;
        // Where a rootless collective reads its input: MPI_IN_PLACE means the receive buffer.
        let input = if ip { ffi::in_place() } else { send };
        let mop = || ffi::op(op.op).ok_or_else(|| err("MPI has no avg".into()));
        let call = exchange::Call {
            send,
            recv,
            dt,
            comm,
        };
        // SAFETY: buffers hold max_bytes ≥ shift + span bytes; counts come from the same sizes.
        let rc = unsafe {
            match op.collective {
                Collective::AllReduce => {
                    ffi::MPI_Allreduce(input, recv, count(c.param), dt, mop()?, comm)
                }
                Collective::Reduce => {
                    let sb = match (ip, r == root as u64) {
                        (true, true) => ffi::in_place(),
                        (true, false) => recv,
                        (false, _) => send,
                    };
                    ffi::MPI_Reduce(sb, recv, count(c.param), dt, mop()?, root, comm)
                }
                Collective::ReduceScatter => {
                    ffi::MPI_Reduce_scatter_block(input, recv, count(c.param), dt, mop()?, comm)
                }
                Collective::AllGather => {
                    ffi::MPI_Allgather(input, count(c.param), dt, recv, count(c.param), dt, comm)
                }
                Collective::Broadcast => {
                    let buf = if !ip && r == root as u64 { send } else { recv };
                    ffi::MPI_Bcast(buf, count(c.param), dt, root, comm)
                }
                Collective::AllToAll => {
                    ffi::MPI_Alltoall(input, count(c.param), dt, recv, count(c.param), dt, comm)
                }
                Collective::SendRecv => {
                    let (to, from) = (((r + 1) % n) as i32, ((r + n - 1) % n) as i32);
                    if ip {
                        ffi::MPI_Sendrecv_replace(
                            recv,
                            count(c.param),
                            dt,
                            to,
                            0,
                            from,
                            0,
                            comm,
                            mpi::ffi::RSMPI_STATUS_IGNORE,
                        )
                    } else {
                        ffi::MPI_Sendrecv(
                            send,
                            count(c.param),
                            dt,
                            to,
                            0,
                            recv,
                            count(c.param),
                            dt,
                            from,
                            0,
                            comm,
                            mpi::ffi::RSMPI_STATUS_IGNORE,
                        )
                    }
                }
                Collective::Gather => exchange::gather(op, call),
                Collective::Scatter => exchange::scatter(op, call),
                Collective::AllToAllv => exchange::alltoallv(op, call),
                Collective::HyperCube => exchange::hypercube(op, call),
            }
        };
        ffi::check(rc, op.collective.name()).map_err(err)
    }

    fn wait(&mut self) -> Result<(), EngineError> {
        Ok(())
    }

    fn flip_output_element(&mut self, op: &OpSpec) -> Result<(), EngineError> {
        if let Some(b) = layout::outputs(op, Semantics::Mpi).first() {
            let at = b.offset as usize;
            self.buf(b.buf)[at] ^= 0x5a;
        }
        Ok(())
    }

    fn verify(&mut self, op: &OpSpec, seed: u64) -> Result<u64, EngineError> {
        let e = op.dtype.size();
        let mut wrong = 0;
        for b in layout::outputs(op, Semantics::Mpi) {
            let mut expected = vec![0u8; (b.count * e) as usize];
            pattern::fill(op.dtype, b.fill, seed, b.start, &mut expected);
            let at = b.offset as usize;
            let got = &self.buf(b.buf)[at..at + expected.len()];
            wrong += pattern::count_wrong(op.dtype, got, &expected);
        }
        Ok(wrong)
    }
}
