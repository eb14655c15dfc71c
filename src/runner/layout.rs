//! Where each collective's input goes and where its output must appear, per placement — the
//! one description both backends use to initialise and to verify (nccl-tests §1.4, §3.2).

use super::engine::OpSpec;
use super::pattern::Fill;
use crate::collective::Collective;
use crate::results::Placement;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buf {
    Send,
    Recv,
}

/// A run of elements: `count` elements at byte `offset` of `buf`, holding `fill` for global
/// element indices `start..start + count`.
#[derive(Debug, Clone, Copy)]
pub struct Block {
    pub buf: Buf,
    pub offset: u64,
    pub start: u64,
    pub count: u64,
    pub fill: Fill,
}

/// The library's in-place conventions, which differ in two places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Semantics {
    /// NCCL: in-place reduce_scatter leaves the block at the rank's slot; an out-of-place
    /// broadcast root also receives into its recv buffer.
    Nccl,
    /// MPI: `MPI_Reduce_scatter_block` in place leaves the block at the start of recv; the
    /// out-of-place broadcast root sends from its send buffer, which must stay intact.
    Mpi,
}

/// Byte offsets (send, recv) of this rank's op pointers inside the buffers, before rotation.
pub fn pointers(op: &OpSpec) -> (Buf, u64, u64) {
    let e = op.dtype.size();
    let c = op.counts;
    match op.placement {
        Placement::OutOfPlace => (Buf::Send, 0, 0),
        Placement::InPlace => (
            Buf::Recv,
            c.send_inplace_offset * e * op.group_rank,
            c.recv_inplace_offset * e * op.group_rank,
        ),
    }
}

/// What `init` writes (after clearing the op's span of recv).
pub fn inputs(op: &OpSpec) -> Vec<Block> {
    let (r, n, c) = (op.group_rank, op.group_size, op.counts);
    let e = op.dtype.size();
    let (buf, off, _) = pointers(op);
    let red = Fill::Reduction {
        op: op.op,
        rank: r,
        n,
    };
    let one = |start, count, fill| {
        vec![Block {
            buf,
            offset: off,
            start,
            count,
            fill,
        }]
    };
    match op.collective {
        Collective::AllReduce | Collective::Reduce => one(0, c.param, red),
        Collective::ReduceScatter => one(0, c.send, red),
        Collective::Broadcast if r == op.root as u64 => one(0, c.param, Fill::Copy),
        Collective::Broadcast => Vec::new(),
        Collective::AllToAll => (0..n)
            .map(|j| Block {
                buf,
                offset: off + j * c.param * e,
                start: (r * n + j) * c.param,
                count: c.param,
                fill: Fill::Copy,
            })
            .collect(),
        Collective::SendRecv => one(r * c.param, c.param, Fill::Copy),
        Collective::AllGather | Collective::Gather | Collective::HyperCube => {
            one(r * c.param, c.param, Fill::Copy)
        }
        Collective::Scatter if r == op.root as u64 => one(0, n * c.param, Fill::Copy),
        Collective::Scatter => Vec::new(),
        Collective::AllToAllv => {
            let sent: u64 = alltoallv_send(op).iter().sum();
            one(r * c.send, sent, Fill::Copy)
        }
    }
}

/// Elements this rank sends each peer under the op's alltoallv traffic.
pub fn alltoallv_send(op: &OpSpec) -> Vec<u64> {
    let (n, e) = (op.group_size, op.dtype.size());
    let total = op.counts.param * n * e;
    op.traffic.send_counts(op.group_rank, n, total, e)
}

/// Elements this rank receives from each peer under the op's alltoallv traffic.
pub fn alltoallv_recv(op: &OpSpec) -> Vec<u64> {
    let (n, e) = (op.group_size, op.dtype.size());
    let total = op.counts.param * n * e;
    op.traffic.recv_counts(op.group_rank, n, total, e)
}

/// Each source's segment in source order — the part of the source's send stream addressed to
/// this rank — then zeros to the end of the largest rank's receive count (nccl-tests compares
/// the whole buffer).
fn alltoallv_outputs(op: &OpSpec) -> Vec<Block> {
    let (r, n, e, c) = (op.group_rank, op.group_size, op.dtype.size(), op.counts);
    let total = c.param * n * e;
    let mut at = 0;
    let mut blocks = Vec::new();
    for src in 0..n {
        let theirs = op.traffic.send_counts(src, n, total, e);
        let count = theirs[r as usize];
        let before: u64 = theirs[..r as usize].iter().sum();
        blocks.push(recv(at * e, src * c.send + before, count, Fill::Copy));
        at += count;
    }
    blocks.push(recv(at * e, 0, c.recv.saturating_sub(at), Fill::Zero));
    blocks.retain(|b| b.count > 0);
    blocks
}

fn recv(offset: u64, start: u64, count: u64, fill: Fill) -> Block {
    Block {
        buf: Buf::Recv,
        offset,
        start,
        count,
        fill,
    }
}

/// Gather leaves a non-root's receive buffer as it was: zeros, and in place its own block in
/// its slot.
fn gather_bystander(op: &OpSpec) -> Vec<Block> {
    let (r, n, e, c) = (op.group_rank, op.group_size, op.dtype.size(), op.counts);
    if op.placement == Placement::OutOfPlace {
        return vec![recv(0, 0, n * c.param, Fill::Zero)];
    }
    let after = (r + 1) * c.param;
    vec![
        recv(0, 0, r * c.param, Fill::Zero),
        recv(r * c.param * e, r * c.param, c.param, Fill::Copy),
        recv(after * e, after, (n - r - 1) * c.param, Fill::Zero),
    ]
}

/// What the output must hold after the op.
pub fn outputs(op: &OpSpec, sem: Semantics) -> Vec<Block> {
    let (r, n, c) = (op.group_rank, op.group_size, op.counts);
    let e = op.dtype.size();
    let ip = op.placement == Placement::InPlace;
    let is_root = r == op.root as u64;
    let reduced = Fill::Reduced { op: op.op, n };
    match op.collective {
        Collective::AllReduce => vec![recv(0, 0, c.param, reduced)],
        Collective::Reduce if is_root => vec![recv(0, 0, c.param, reduced)],
        Collective::Reduce if ip => vec![recv(
            0,
            0,
            c.param,
            Fill::Reduction {
                op: op.op,
                rank: r,
                n,
            },
        )],
        Collective::Reduce => vec![recv(0, 0, c.param, Fill::Zero)],
        Collective::ReduceScatter => {
            let at = if ip && sem == Semantics::Nccl {
                r * c.param * e
            } else {
                0
            };
            vec![recv(at, r * c.param, c.param, reduced)]
        }
        Collective::Broadcast if !ip && is_root && sem == Semantics::Mpi => vec![Block {
            buf: Buf::Send,
            offset: 0,
            start: 0,
            count: c.param,
            fill: Fill::Copy,
        }],
        Collective::Broadcast => vec![recv(0, 0, c.param, Fill::Copy)],
        Collective::AllToAll => (0..n)
            .map(|j| recv(j * c.param * e, (j * n + r) * c.param, c.param, Fill::Copy))
            .collect(),
        Collective::SendRecv => vec![recv(0, ((r + n - 1) % n) * c.param, c.param, Fill::Copy)],
        Collective::Gather if !is_root => gather_bystander(op),
        Collective::AllGather | Collective::Gather | Collective::HyperCube => {
            vec![recv(0, 0, n * c.param, Fill::Copy)]
        }
        Collective::Scatter => {
            let at = if ip { r * c.param * e } else { 0 };
            vec![recv(at, r * c.param, c.param, Fill::Copy)]
        }
        Collective::AllToAllv => alltoallv_outputs(op),
    }
}
