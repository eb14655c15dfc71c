//! What to check, in the words of the backend that ran. The nccl backend's hints name GPUs,
//! NVLink and NCCL settings; a host MPI run (`backend: mpi`) has none of those, and advice to
//! check NVLink on it sends the reader to the wrong machine room. The host variants name what
//! moves data there: cores, memory, and the MPI's own transports and tuning.

use super::diagnosis::{Diagnosis, Shape};
use super::measure::size;
use crate::expand::Scope;
use crate::plan::Backend;

/// Appended to every #wrong failure.
pub fn corruption(backend: Backend) -> &'static str {
    match backend {
        Backend::Nccl => {
            "data corruption: any #wrong > 0 is hardware (HBM, NVLink/NVSwitch, NIC or cable), not tuning — drain the node and check ECC, `nvidia-smi nvlink -e` and link error counters"
        }
        Backend::Mpi => {
            "data corruption: any #wrong > 0 in host memory is the node (memory, CPU) or the MPI transport, not tuning — drain the node and check ECC errors (`edac-util`, `rasdaemon`), dmesg, and the NIC's error counters for cross-node runs"
        }
    }
}

/// What to check about the one slow split group.
pub fn slow_group(backend: Backend, scope: Option<Scope>) -> &'static str {
    match (backend, scope) {
        (Backend::Nccl, Some(Scope::IntraNode)) => {
            "an intra-node group: check that node's NVLink/NVSwitch (`nvidia-smi nvlink -s`, `nvidia-smi topo -m`, Fabric Manager, Xid 74 in dmesg)"
        }
        (Backend::Mpi, Some(Scope::IntraNode)) => {
            "an intra-node group: check that node's cores and memory — other processes, CPU frequency, NUMA placement and core binding of its ranks"
        }
        (_, Some(Scope::CrossNode)) => {
            "a cross-node group: check its rail — each member's NIC, cable and leaf port (`ibstat` rate and state, `mlxlink` error counters)"
        }
        (Backend::Nccl, None) => "check its GPUs and links",
        (Backend::Mpi, None) => "check its hosts' cores, memory and links",
    }
}

/// The shape of a drop against the baseline, explained for `backend`: the nccl wording (from
/// [`super::diagnosis::classify`]) is kept; a host run gets the host reading of the same shape.
pub fn drop_shape(backend: Backend, d: Diagnosis) -> Diagnosis {
    if backend == Backend::Nccl {
        return d;
    }
    let text = match &d.shape {
        Shape::AllSizes => "uniform drop at all sizes: the hosts, not the route — check CPU frequency and load from other processes, memory bandwidth and core binding".to_string(),
        Shape::LargeSizesOnly { from } => format!(
            "drop only at large sizes (from {} up), small sizes unchanged: bandwidth — memory bandwidth, NUMA placement, or the transport the MPI chose for large messages (shared memory, network component: `ompi_info`, OMPI_MCA_btl / OMPI_MCA_pml)",
            size(*from)
        ),
        Shape::SmallSizesOnly { up_to } => format!(
            "drop only at small sizes (up to {}), large sizes unchanged: latency — core binding (`--bind-to core`), oversubscription, other processes on the ranks' cores",
            size(*up_to)
        ),
        Shape::MidSizes { from, to } => format!(
            "drop only at mid sizes ({}..{}): where the MPI switches protocol (eager to rendezvous) or collective algorithm — compare its tuning (OMPI_MCA_coll_tuned_*, eager limits) with the baseline run",
            size(*from),
            size(*to)
        ),
        _ => return d,
    };
    Diagnosis {
        shape: d.shape,
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_run_is_never_sent_to_nvlink_or_nccl() {
        for shape in [
            Shape::AllSizes,
            Shape::LargeSizesOnly { from: 1 << 20 },
            Shape::SmallSizesOnly { up_to: 4096 },
            Shape::MidSizes {
                from: 4096,
                to: 1 << 20,
            },
        ] {
            let d = drop_shape(
                Backend::Mpi,
                Diagnosis {
                    shape,
                    text: "NCCL_DEBUG=INFO nvidia-smi".into(),
                },
            );
            for gpu_word in ["NVLink", "NCCL", "nvidia-smi", "GPU"] {
                assert!(!d.text.contains(gpu_word), "{}", d.text);
            }
        }
        for scope in [None, Some(Scope::IntraNode), Some(Scope::CrossNode)] {
            assert!(!slow_group(Backend::Mpi, scope).contains("NVLink"));
        }
        assert!(!corruption(Backend::Mpi).contains("NVLink"));
        assert!(corruption(Backend::Nccl).contains("NVLink"));
    }
}
