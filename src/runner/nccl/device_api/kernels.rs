//! The device-API kernels loaded from `kernels/device_api.ptx` into the rank's context, one
//! entry per collective, implementation and type (`baton_devapi_<collective>_<impl>_<type>`),
//! launched as nccl-tests launches its own: `device_ctas` CTAs of 512 threads.

use std::collections::HashMap;
use std::ffi::{CString, c_void};

use cudarc::driver::result;
use cudarc::driver::sys::{CUfunction, CUmodule, CUstream};

use super::abi::PTX;
use super::devcomm::DevComm;
use crate::collective::{Collective, Dtype};
use crate::plan::knobs::DEVICE_API_DTYPES;
use crate::runner::nccl::error::{GpuError, cuda};

const THREADS: u32 = 512;

pub struct Kernels {
    module: CUmodule,
    functions: HashMap<String, CUfunction>,
}

// SAFETY: driver handles used by the rank's thread with its context current.
unsafe impl Send for Kernels {}

/// One launch's arguments, in the kernels' parameter order.
pub struct Launch<'a> {
    pub send_window: *mut c_void,
    pub send_offset: u64,
    pub recv_window: *mut c_void,
    pub recv_offset: u64,
    /// Elements per rank (all_reduce) or per peer (alltoall), nccl-tests' count.
    pub count: u64,
    pub ctas: u32,
    pub devcomm: &'a DevComm,
}

/// The entry point's name, when baton has one for this collective, implementation and type.
pub fn entry(c: Collective, implementation: u32, d: Dtype) -> Option<String> {
    let coll = match c {
        Collective::AllReduce => "allreduce",
        Collective::AllToAll => "alltoall",
        _ => return None,
    };
    (implementation == 1 && DEVICE_API_DTYPES.contains(&d))
        .then(|| format!("baton_devapi_{coll}_{implementation}_{}", d.name()))
}

impl Kernels {
    /// Loads the PTX into the current context.
    pub fn load() -> Result<Kernels, GpuError> {
        let image = CString::new(PTX).map_err(|_| GpuError::Cuda {
            call: "cuModuleLoadData",
            text: "device API image contains a NUL byte".into(),
        })?;
        // SAFETY: image is a NUL-terminated PTX text.
        let module = cuda(
            unsafe { result::module::load_data(image.as_ptr().cast()) },
            "cuModuleLoadData (device API PTX)",
        )?;
        Ok(Kernels {
            module,
            functions: HashMap::new(),
        })
    }

    fn function(&mut self, name: &str) -> Result<CUfunction, GpuError> {
        if let Some(f) = self.functions.get(name) {
            return Ok(*f);
        }
        let c = CString::new(name).unwrap_or_default();
        // SAFETY: module is loaded; a missing name is an error, not UB.
        let f = cuda(
            unsafe { result::module::get_function(self.module, c) },
            "cuModuleGetFunction (device API)",
        )?;
        self.functions.insert(name.to_string(), f);
        Ok(f)
    }

    /// Enqueues `name` on `stream`.
    pub fn launch(&mut self, name: &str, a: &Launch<'_>, stream: CUstream) -> Result<(), GpuError> {
        let f = self.function(name)?;
        let mut args = [
            &a.send_window as *const _ as *mut c_void,
            &a.send_offset as *const _ as *mut c_void,
            &a.recv_window as *const _ as *mut c_void,
            &a.recv_offset as *const _ as *mut c_void,
            &a.count as *const _ as *mut c_void,
            a.devcomm.param(),
        ];
        // SAFETY: the arguments match the entry's signature in device_api.cu (the device
        // communicator at the size the PTX records, checked when it was created) and live
        // through the call, which copies them.
        cuda(
            unsafe {
                result::launch_kernel(f, (a.ctas, 1, 1), (THREADS, 1, 1), 0, stream, &mut args)
            },
            "cuLaunchKernel (device API)",
        )
    }
}

impl Drop for Kernels {
    fn drop(&mut self) {
        // SAFETY: loaded in `load`, unloaded once.
        unsafe {
            let _ = result::module::unload(self.module);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::knobs::DEVICE_API_COLLECTIVES;

    #[test]
    fn every_entry_baton_names_is_in_the_ptx() {
        for c in DEVICE_API_COLLECTIVES {
            for d in DEVICE_API_DTYPES {
                let name = entry(c, 1, d).unwrap();
                assert!(PTX.contains(&format!(".entry {name}(")), "{name}");
            }
        }
        assert_eq!(entry(Collective::AllGather, 1, Dtype::Float), None);
        assert_eq!(entry(Collective::AllReduce, 2, Dtype::Float), None);
        assert_eq!(entry(Collective::AllReduce, 1, Dtype::Bfloat16), None);
    }
}
