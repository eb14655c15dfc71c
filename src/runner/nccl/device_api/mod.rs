//! The NCCL device API implementations (plan `device_api`, nccl-tests `-D`): baton's own kernels
//! (`kernels/device_api.cu`, shipped as PTX built against one NCCL's headers), the device
//! communicator they take by value, and the run-time refusal when the loaded NCCL cannot fill it
//! in the layout that PTX reads.

mod abi;
mod devcomm;
mod kernels;

pub use abi::refusal;
pub use devcomm::DevComm;
pub use kernels::{Kernels, Launch, entry};

/// The headers' NCCL version the shipped kernels were built with, for `measured_with`.
pub fn built_with() -> Option<i32> {
    abi::abi().ok().map(|a| a.nccl)
}
