//! The host backend's gather, scatter, alltoallv and hypercube: MPI's rooted and vector
//! collectives for the first three, and hypercube's own exchange (nccl-tests' hypercube.cu: the
//! rank's block into its slot, then one pairwise swap per dimension with rank XOR 2^k).

use std::os::raw::{c_int, c_void};

use mpi::ffi::MPI_Datatype;

use super::ffi::{self, Comm};
use crate::results::Placement;
use crate::runner::engine::OpSpec;
use crate::runner::layout;

/// One op's buffers (rotation applied) and MPI handles.
#[derive(Clone, Copy)]
pub struct Call {
    pub send: *mut c_void,
    pub recv: *mut c_void,
    pub dt: MPI_Datatype,
    pub comm: Comm,
}

fn ip(op: &OpSpec) -> bool {
    op.placement == Placement::InPlace
}

/// Byte offset of this rank's slot of `count`-element blocks.
fn slot(op: &OpSpec) -> usize {
    (op.group_rank * op.counts.param * op.dtype.size()) as usize
}

/// In place the root gathers into its receive buffer where its own block already is; the others
/// send their slot of theirs.
///
/// # Safety
/// `c`'s buffers hold the op's span from their pointers.
pub unsafe fn gather(op: &OpSpec, c: Call) -> c_int {
    let n = op.counts.param as i32;
    let root = op.group_rank == op.root as u64;
    let sb = match (ip(op), root) {
        (true, true) => ffi::in_place(),
        (true, false) => unsafe { c.recv.byte_add(slot(op)) },
        (false, _) => c.send,
    };
    unsafe { ffi::MPI_Gather(sb, n, c.dt, c.recv, n, c.dt, op.root as i32, c.comm) }
}

/// In place the root scatters from its receive buffer and keeps its own slot; the others
/// receive into their slot.
///
/// # Safety
/// As [`gather`].
pub unsafe fn scatter(op: &OpSpec, c: Call) -> c_int {
    let n = op.counts.param as i32;
    let root = op.group_rank == op.root as u64;
    let (sb, rb) = match (ip(op), root) {
        (true, true) => (c.recv, ffi::in_place()),
        (true, false) => (c.recv, unsafe { c.recv.byte_add(slot(op)) }),
        (false, _) => (c.send, c.recv),
    };
    unsafe { ffi::MPI_Scatter(sb, n, c.dt, rb, n, c.dt, op.root as i32, c.comm) }
}

/// Counts and displacements of consecutive segments.
fn vector(counts: Vec<u64>) -> (Vec<c_int>, Vec<c_int>) {
    let mut at = 0;
    let displs = counts
        .iter()
        .map(|k| {
            let d = at;
            at += k;
            d as c_int
        })
        .collect();
    (counts.into_iter().map(|k| k as c_int).collect(), displs)
}

/// Segments to and from each peer in rank order, as nccl-tests packs them. MPI forbids a send
/// buffer that overlaps the receive buffer, so in place the send stream is first copied out of
/// the receive buffer into the send buffer (nccl-tests does not check in-place alltoallv).
///
/// # Safety
/// As [`gather`].
pub unsafe fn alltoallv(op: &OpSpec, c: Call) -> c_int {
    let (sc, sd) = vector(layout::alltoallv_send(op));
    let (rc, rd) = vector(layout::alltoallv_recv(op));
    if ip(op) {
        let sent: c_int = sc.iter().sum();
        let len = sent as usize * op.dtype.size() as usize;
        // SAFETY: both buffers hold the span, which covers every rank's send stream.
        unsafe { std::ptr::copy_nonoverlapping(c.recv.cast::<u8>(), c.send.cast::<u8>(), len) };
    }
    let (s, r) = (sc.as_ptr(), rc.as_ptr());
    unsafe {
        ffi::MPI_Alltoallv(
            c.send,
            s,
            sd.as_ptr(),
            c.dt,
            c.recv,
            r,
            rd.as_ptr(),
            c.dt,
            c.comm,
        )
    }
}

/// The rank's block into slot `rank` of the receive buffer (already there in place), then for
/// each dimension the `mask` blocks this half holds swapped with rank XOR mask.
///
/// # Safety
/// As [`gather`]; the group size is a power of two (the sweep refuses the others).
pub unsafe fn hypercube(op: &OpSpec, c: Call) -> c_int {
    let (r, n) = (op.group_rank, op.group_size);
    let block = (op.counts.param * op.dtype.size()) as usize;
    if !ip(op) {
        // SAFETY: send holds one block; recv's slot r lies inside the span.
        unsafe {
            std::ptr::copy_nonoverlapping(
                c.send.cast::<u8>(),
                c.recv.cast::<u8>().add(r as usize * block),
                block,
            )
        };
    }
    let mut mask = 1;
    while mask < n {
        let mine = r & !(mask - 1);
        let theirs = mine ^ mask;
        let count = (op.counts.param * mask) as c_int;
        let peer = (r ^ mask) as c_int;
        // SAFETY: both ranges are `mask` blocks inside the n-block span and do not overlap.
        let rc = unsafe {
            ffi::MPI_Sendrecv(
                c.recv.byte_add(mine as usize * block),
                count,
                c.dt,
                peer,
                0,
                c.recv.byte_add(theirs as usize * block),
                count,
                c.dt,
                peer,
                0,
                c.comm,
                mpi::ffi::RSMPI_STATUS_IGNORE,
            )
        };
        if rc != 0 {
            return rc;
        }
        mask <<= 1;
    }
    0
}
