//! The raw MPI calls the host backend needs on untyped buffers, including `MPI_IN_PLACE`, which
//! rsmpi's typed API does not expose.

use std::os::raw::{c_int, c_void};

use mpi::ffi::{self, MPI_Comm, MPI_Datatype, MPI_Op};

use crate::collective::{Dtype, RedOp};

unsafe extern "C" {
    fn baton_mpi_in_place() -> *mut c_void;
}

pub fn in_place() -> *mut c_void {
    // SAFETY: returns a constant of the linked MPI library.
    unsafe { baton_mpi_in_place() }
}

pub fn datatype(d: Dtype) -> Option<MPI_Datatype> {
    // SAFETY: reading constants exported by the rsmpi C shim.
    unsafe {
        Some(match d {
            Dtype::Int8 => ffi::RSMPI_INT8_T,
            Dtype::Uint8 => ffi::RSMPI_UINT8_T,
            Dtype::Int32 => ffi::RSMPI_INT32_T,
            Dtype::Uint32 => ffi::RSMPI_UINT32_T,
            Dtype::Int64 => ffi::RSMPI_INT64_T,
            Dtype::Uint64 => ffi::RSMPI_UINT64_T,
            Dtype::Float => ffi::RSMPI_FLOAT,
            Dtype::Double => ffi::RSMPI_DOUBLE,
            _ => return None,
        })
    }
}

pub fn op(o: RedOp) -> Option<MPI_Op> {
    // SAFETY: reading constants exported by the rsmpi C shim.
    unsafe {
        Some(match o {
            RedOp::Sum => ffi::RSMPI_SUM,
            RedOp::Prod => ffi::RSMPI_PROD,
            RedOp::Min => ffi::RSMPI_MIN,
            RedOp::Max => ffi::RSMPI_MAX,
            RedOp::Avg => return None,
        })
    }
}

/// Turns an MPI return code into its error string.
pub fn check(rc: c_int, what: &str) -> Result<(), String> {
    if rc == 0 {
        return Ok(());
    }
    let mut buf = vec![0u8; 512];
    let mut len: c_int = 0;
    // SAFETY: buffer is MPI_MAX_ERROR_STRING-sized (Open MPI: 256, MPICH: 512).
    unsafe { ffi::MPI_Error_string(rc, buf.as_mut_ptr().cast(), &mut len) };
    buf.truncate(len.max(0) as usize);
    Err(format!("{what} failed: {}", String::from_utf8_lossy(&buf)))
}

pub use ffi::{
    MPI_Allgather, MPI_Allreduce, MPI_Alltoall, MPI_Alltoallv, MPI_Bcast, MPI_Gather, MPI_Reduce,
    MPI_Reduce_scatter_block, MPI_Scatter, MPI_Sendrecv, MPI_Sendrecv_replace,
};

pub type Comm = MPI_Comm;
