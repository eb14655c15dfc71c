//! The host backend: the same jobs over host memory with MPI collectives, so CPU fabrics can be
//! accepted with the same plans and the README's first command runs on any machine.

use std::collections::HashMap;
use std::os::raw::c_void;

use mpi::raw::AsRaw;
use mpi::topology::{Color, Communicator, SimpleCommunicator};

use super::ffi::{self, Comm};
use crate::collective::Collective;
use crate::results::{ErrorKind, Placement};
use crate::runner::engine::{Engine, EngineError, OpSpec};
use crate::runner::pattern::{self, Fill};

/// One rank's MPI data mover; keeps one communicator per split for the whole run.
pub struct HostEngine {
    world: SimpleCommunicator,
    comms: HashMap<Option<String>, SimpleCommunicator>,
    current: Option<Option<String>>,
    send: Vec<u64>,
    recv: Vec<u64>,
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
            send: Vec::new(),
            recv: Vec::new(),
        }
    }

    fn comm(&self) -> Result<Comm, EngineError> {
        self.current
            .as_ref()
            .and_then(|k| self.comms.get(k))
            .map(|c| c.as_raw())
            .ok_or_else(|| err("no communicator prepared".into()))
    }

    fn bytes(v: &mut [u64]) -> &mut [u8] {
        // SAFETY: u64 storage viewed as bytes; any bit pattern is valid for u8.
        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), v.len() * 8) }
    }

    /// Where this rank's input goes (buffer, byte offset) for `op`.
    fn input_at(op: &OpSpec) -> (bool, u64) {
        let e = op.dtype.size();
        match (op.placement, op.collective) {
            (Placement::OutOfPlace, _) => (false, 0),
            (Placement::InPlace, Collective::AllGather) => {
                (true, op.group_rank * op.counts.param * e)
            }
            (Placement::InPlace, _) => (true, 0),
        }
    }
}

impl Engine for HostEngine {
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
        let words = (max_bytes as usize).div_ceil(8).max(1);
        for b in [&mut self.send, &mut self.recv] {
            b.clear();
            b.try_reserve_exact(words).map_err(|e| {
                EngineError::new(
                    ErrorKind::OutOfMemory,
                    format!("{} bytes of host memory: {e}", words * 8),
                )
            })?;
            b.resize(words, 0);
        }
        Ok(())
    }

    fn init(&mut self, op: &OpSpec, seed: u64) -> Result<(), EngineError> {
        let e = op.dtype.size();
        let (r, n, c) = (op.group_rank, op.group_size, op.counts);
        Self::bytes(&mut self.recv)[..op.span as usize].fill(0);
        let (in_recv, off) = Self::input_at(op);
        let buf = if in_recv {
            &mut self.recv
        } else {
            &mut self.send
        };
        let buf = Self::bytes(buf);
        let mut put = |start_idx: u64, len_elems: u64, at: u64, f: Fill| {
            let (a, b) = (at as usize, (at + len_elems * e) as usize);
            pattern::fill(op.dtype, f, seed, start_idx, &mut buf[a..b]);
        };
        let red = Fill::Reduction {
            op: op.op,
            rank: r,
            n,
        };
        match op.collective {
            Collective::AllReduce | Collective::Reduce => put(0, c.param, off, red),
            Collective::ReduceScatter => put(0, c.send, off, red),
            Collective::AllGather => put(r * c.param, c.param, off, Fill::Copy),
            Collective::Broadcast => {
                if r == op.root as u64 {
                    put(0, c.param, off, Fill::Copy);
                }
            }
            Collective::AllToAll => {
                for j in 0..n {
                    put(
                        (r * n + j) * c.param,
                        c.param,
                        off + j * c.param * e,
                        Fill::Copy,
                    );
                }
            }
            Collective::SendRecv => put(r * c.param, c.param, off, Fill::Copy),
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
        // SAFETY: buffers hold max_bytes ≥ shift + span bytes; counts come from the same sizes.
        let rc = unsafe {
            match op.collective {
                Collective::AllReduce => {
                    let mop = ffi::op(op.op).ok_or_else(|| err("MPI has no avg".into()))?;
                    ffi::MPI_Allreduce(
                        if ip { ffi::in_place() } else { send },
                        recv,
                        count(c.param),
                        dt,
                        mop,
                        comm,
                    )
                }
                Collective::Reduce => {
                    let mop = ffi::op(op.op).ok_or_else(|| err("MPI has no avg".into()))?;
                    let sb = match (ip, r == root as u64) {
                        (true, true) => ffi::in_place(),
                        (true, false) => recv,
                        (false, _) => send,
                    };
                    ffi::MPI_Reduce(sb, recv, count(c.param), dt, mop, root, comm)
                }
                Collective::ReduceScatter => {
                    let mop = ffi::op(op.op).ok_or_else(|| err("MPI has no avg".into()))?;
                    ffi::MPI_Reduce_scatter_block(
                        if ip { ffi::in_place() } else { send },
                        recv,
                        count(c.param),
                        dt,
                        mop,
                        comm,
                    )
                }
                Collective::AllGather => ffi::MPI_Allgather(
                    if ip { ffi::in_place() } else { send },
                    count(c.param),
                    dt,
                    recv,
                    count(c.param),
                    dt,
                    comm,
                ),
                Collective::Broadcast => {
                    let buf = if !ip && r == root as u64 { send } else { recv };
                    ffi::MPI_Bcast(buf, count(c.param), dt, root, comm)
                }
                Collective::AllToAll => ffi::MPI_Alltoall(
                    if ip { ffi::in_place() } else { send },
                    count(c.param),
                    dt,
                    recv,
                    count(c.param),
                    dt,
                    comm,
                ),
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
            }
        };
        ffi::check(rc, op.collective.name()).map_err(err)
    }

    fn wait(&mut self) -> Result<(), EngineError> {
        Ok(())
    }

    fn flip_output_element(&mut self, op: &OpSpec) -> Result<(), EngineError> {
        let from = if op.collective == Collective::Broadcast
            && op.placement == Placement::OutOfPlace
            && op.group_rank == op.root as u64
        {
            &mut self.send
        } else {
            &mut self.recv
        };
        Self::bytes(from)[0] ^= 0x5a;
        Ok(())
    }

    fn verify(&mut self, op: &OpSpec, seed: u64) -> Result<u64, EngineError> {
        let e = op.dtype.size();
        let (r, n, c) = (op.group_rank, op.group_size, op.counts);
        let ip = op.placement == Placement::InPlace;
        let is_root = r == op.root as u64;
        let red = |rank| Fill::Reduction { op: op.op, rank, n };
        let reduced = Fill::Reduced { op: op.op, n };
        // (fill, first global index, elements); `None` fill = must stay zero.
        let blocks: Vec<(Option<Fill>, u64, u64)> = match op.collective {
            Collective::AllReduce => vec![(Some(reduced), 0, c.param)],
            Collective::Reduce if is_root => vec![(Some(reduced), 0, c.param)],
            Collective::Reduce if ip => vec![(Some(red(r)), 0, c.param)],
            Collective::Reduce => vec![(None, 0, c.param)],
            // MPI_Reduce_scatter_block leaves the block at the start of recv, in place too.
            Collective::ReduceScatter => vec![(Some(reduced), r * c.param, c.param)],
            Collective::AllGather => vec![(Some(Fill::Copy), 0, n * c.param)],
            Collective::Broadcast => vec![(Some(Fill::Copy), 0, c.param)],
            Collective::AllToAll => (0..n)
                .map(|j| (Some(Fill::Copy), (j * n + r) * c.param, c.param))
                .collect(),
            Collective::SendRecv => vec![(Some(Fill::Copy), ((r + n - 1) % n) * c.param, c.param)],
        };
        let total: u64 = blocks.iter().map(|b| b.2).sum();
        let mut expected = vec![0u8; (total * e) as usize];
        let mut at = 0usize;
        for (fill, start, elems) in blocks {
            let len = (elems * e) as usize;
            if let Some(f) = fill {
                pattern::fill(op.dtype, f, seed, start, &mut expected[at..at + len]);
            }
            at += len;
        }
        // Out-of-place, the broadcast root sends from its send buffer, which must stay intact.
        let from = if op.collective == Collective::Broadcast && !ip && is_root {
            &mut self.send
        } else {
            &mut self.recv
        };
        let got = &Self::bytes(from)[..expected.len()];
        Ok(pattern::count_wrong(op.dtype, got, &expected))
    }
}
