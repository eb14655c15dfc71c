//! The GPU backend: NCCL through cudarc (loaded at run time, so baton builds and runs its other
//! commands on machines without CUDA), data kernels loaded from PTX, one thread per local GPU
//! or one rank per process under MPI.

mod comm;
pub mod device;
mod device_api;
mod engine;
pub mod error;
pub mod libs;
pub mod local;
mod marks;
mod p2p;
mod register;
pub mod threads;

pub use device::{Gpu, GpuInfo};
pub use engine::NcclEngine;
