//! Gather, scatter, alltoallv and hypercube as nccl-tests' own RunColl builds them from
//! `ncclSend`/`ncclRecv` in groups (gather.cu, scatter.cu, alltoallv.cu, hypercube.cu), so
//! they run on every NCCL from 2.7, not only where ncclGather/ncclScatter exist.

use std::ffi::c_void;

use cudarc::driver::sys as cu;
use cudarc::nccl::sys::{self, ncclComm_t, ncclDataType_t, ncclResult_t};

use super::error::{GpuError, cuda};
use crate::runner::engine::OpSpec;
use crate::runner::layout;

const OK: ncclResult_t = ncclResult_t::ncclSuccess;

/// One op's pointers (rotation and in-place offsets applied) and NCCL handles.
#[derive(Clone, Copy)]
pub struct Call {
    pub send: *const c_void,
    pub recv: *mut c_void,
    pub t: ncclDataType_t,
    pub comm: ncclComm_t,
    pub stream: sys::cudaStream_t,
}

/// Runs `calls` inside one NCCL group; the first failure wins, and the group is always closed.
unsafe fn grouped(calls: impl FnOnce(&mut dyn FnMut(ncclResult_t))) -> ncclResult_t {
    // SAFETY: plain NCCL calls; the caller's calls are NCCL enqueues.
    let g = unsafe { sys::ncclGroupStart() };
    if g != OK {
        return g;
    }
    let mut rc = OK;
    calls(&mut |x| {
        if rc == OK {
            rc = x
        }
    });
    let end = unsafe { sys::ncclGroupEnd() };
    if rc == OK { end } else { rc }
}

fn bytes(op: &OpSpec, count: u64) -> usize {
    (count * op.dtype.size()) as usize
}

/// Every rank sends its block to the root, which receives block r from rank r into slot r.
///
/// # Safety
/// `c`'s pointers hold the op's span; the communicator is the op's group.
pub unsafe fn gather(op: &OpSpec, c: Call) -> ncclResult_t {
    let (n, k) = (op.group_size, op.counts.param);
    if k == 0 {
        return OK;
    }
    let root = op.root as i32;
    unsafe {
        grouped(|done| {
            done(sys::ncclSend(
                c.send, k as usize, c.t, root, c.comm, c.stream,
            ));
            if op.group_rank == op.root as u64 {
                for r in 0..n {
                    let at = c.recv.byte_add(bytes(op, r * k));
                    done(sys::ncclRecv(
                        at, k as usize, c.t, r as i32, c.comm, c.stream,
                    ));
                }
            }
        })
    }
}

/// The root sends slot r to rank r; every rank receives its block.
///
/// # Safety
/// As [`gather`].
pub unsafe fn scatter(op: &OpSpec, c: Call) -> ncclResult_t {
    let (n, k) = (op.group_size, op.counts.param);
    if k == 0 {
        return OK;
    }
    let root = op.root as i32;
    unsafe {
        grouped(|done| {
            if op.group_rank == op.root as u64 {
                for r in 0..n {
                    let at = c.send.byte_add(bytes(op, r * k));
                    done(sys::ncclSend(
                        at, k as usize, c.t, r as i32, c.comm, c.stream,
                    ));
                }
            }
            done(sys::ncclRecv(
                c.recv, k as usize, c.t, root, c.comm, c.stream,
            ));
        })
    }
}

/// Per peer in rank order the segment for it from the packed send stream and the one from it
/// into the packed receive stream; empty segments are not posted.
///
/// # Safety
/// As [`gather`].
pub unsafe fn alltoallv(op: &OpSpec, c: Call) -> ncclResult_t {
    let (to, from) = (layout::alltoallv_send(op), layout::alltoallv_recv(op));
    let (mut s, mut r) = (0, 0);
    unsafe {
        grouped(|done| {
            for (p, (ks, kr)) in to.iter().zip(&from).enumerate() {
                if *ks > 0 {
                    let at = c.send.byte_add(bytes(op, s));
                    done(sys::ncclSend(
                        at,
                        *ks as usize,
                        c.t,
                        p as i32,
                        c.comm,
                        c.stream,
                    ));
                    s += ks;
                }
                if *kr > 0 {
                    let at = c.recv.byte_add(bytes(op, r));
                    done(sys::ncclRecv(
                        at,
                        *kr as usize,
                        c.t,
                        p as i32,
                        c.comm,
                        c.stream,
                    ));
                    r += kr;
                }
            }
        })
    }
}

/// The rank's block into slot `rank` (unless it is there already, in place), then per
/// dimension one group swapping the `mask` blocks this half holds with rank XOR mask.
///
/// # Safety
/// As [`gather`]; the group size is a power of two (the sweep refuses the others).
pub unsafe fn hypercube(op: &OpSpec, c: Call) -> Result<ncclResult_t, GpuError> {
    let (r, n, k) = (op.group_rank, op.group_size, op.counts.param);
    let block = bytes(op, k);
    let mine = unsafe { c.recv.byte_add(r as usize * block) };
    if mine.cast_const() != c.send && block > 0 {
        // SAFETY: both ranges lie in this rank's allocations.
        let rc = unsafe {
            cu::cuMemcpyDtoDAsync_v2(
                mine as cu::CUdeviceptr,
                c.send as cu::CUdeviceptr,
                block,
                c.stream as cu::CUstream,
            )
        };
        cuda(rc.result(), "cuMemcpyDtoDAsync")?;
    }
    let mut mask = 1;
    while mask < n {
        let ours = r & !(mask - 1);
        let theirs = ours ^ mask;
        let (count, peer) = ((k * mask) as usize, (r ^ mask) as i32);
        let rc = unsafe {
            grouped(|done| {
                let s = c.recv.byte_add(ours as usize * block);
                let q = c.recv.byte_add(theirs as usize * block);
                done(sys::ncclSend(s, count, c.t, peer, c.comm, c.stream));
                done(sys::ncclRecv(q, count, c.t, peer, c.comm, c.stream));
            })
        };
        if rc != OK {
            return Ok(rc);
        }
        mask <<= 1;
    }
    Ok(OK)
}
