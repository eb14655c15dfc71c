//! What `kernels/device_api.ptx` was built against, read from the PTX itself (`baton_devapi_abi`)
//! and from `kernels/device_api.nccl`, and the host structures laid out to match: a kernel that
//! takes `ncclDevComm` by value reads it at the offsets of the headers that built it, so a
//! mismatch is refused before anything is launched.

use std::mem::{offset_of, size_of};
use std::sync::OnceLock;

use super::super::libs;

pub(super) const PTX: &str = include_str!("../../../../kernels/device_api.ptx");
const HEADERS: &str = include_str!("../../../../kernels/device_api.nccl");

/// nccl.h's `NCCL_API_MAGIC`, which NCCL checks in every versioned structure.
pub(super) const NCCL_API_MAGIC: u32 = 0xcafe_beef;

/// The layouts the PTX was compiled with (`sizeof`/`offsetof` in kernels/device_api.cu).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Abi {
    /// `NCCL_VERSION_CODE` of the headers.
    pub nccl: i32,
    pub devcomm_size: usize,
    pub devcomm_align: usize,
    pub reqs_size: usize,
    pub reqs_lsa_barrier_count: usize,
    pub devcomm_nranks: usize,
    pub devcomm_lsa_size: usize,
}

/// `ncclDevCommRequirements` as NCCL 2.30's `nccl_device/core.h` declares it, field for field;
/// checked against the PTX's record of the same struct before use.
#[repr(C)]
pub(super) struct Requirements {
    size: usize,
    magic: u32,
    version: u32,
    resource_requirements_list: *mut std::ffi::c_void,
    team_requirements_list: *mut std::ffi::c_void,
    lsa_multimem: bool,
    barrier_count: i32,
    pub lsa_barrier_count: i32,
    rail_gin_barrier_count: i32,
    lsa_ll_a2a_block_count: i32,
    lsa_ll_a2a_slot_count: i32,
    gin_force_enable: bool,
    gin_context_count: i32,
    gin_signal_count: i32,
    gin_counter_count: i32,
    gin_connection_type: i32,
    gin_exclusive_contexts: bool,
    gin_queue_depth: i32,
    gin_traffic_class: i32,
    world_gin_barrier_count: i32,
    gin_strong_signals_required: bool,
    gin_va_signals_required: bool,
}

impl Requirements {
    /// `NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER` with `version` the headers' code, which tells
    /// NCCL the layout to write the device communicator in, and `lsa_barriers` barriers.
    pub fn new(version: i32, lsa_barriers: u32) -> Requirements {
        Requirements {
            size: size_of::<Requirements>(),
            magic: NCCL_API_MAGIC,
            version: version as u32,
            resource_requirements_list: std::ptr::null_mut(),
            team_requirements_list: std::ptr::null_mut(),
            lsa_multimem: false,
            barrier_count: 0,
            lsa_barrier_count: lsa_barriers as i32,
            rail_gin_barrier_count: 0,
            lsa_ll_a2a_block_count: 0,
            lsa_ll_a2a_slot_count: 0,
            gin_force_enable: false,
            gin_context_count: 4,
            gin_signal_count: 0,
            gin_counter_count: 0,
            gin_connection_type: 0,
            gin_exclusive_contexts: false,
            gin_queue_depth: 0,
            gin_traffic_class: i32::MIN,
            world_gin_barrier_count: 0,
            gin_strong_signals_required: true,
            gin_va_signals_required: true,
        }
    }
}

/// The PTX's record, checked against `kernels/device_api.nccl` and this file's structures once.
pub(super) fn abi() -> Result<&'static Abi, String> {
    static ABI: OnceLock<Result<Abi, String>> = OnceLock::new();
    ABI.get_or_init(|| checked(PTX, HEADERS))
        .as_ref()
        .map_err(Clone::clone)
}

fn checked(ptx: &str, headers: &str) -> Result<Abi, String> {
    let abi = parse(ptx)?;
    let recorded: i32 = headers.trim().parse().map_err(|_| {
        format!("kernels/device_api.nccl holds {headers:?}, not an NCCL version code")
    })?;
    if recorded != abi.nccl {
        return Err(format!(
            "kernels/device_api.ptx was built with NCCL {} headers but kernels/device_api.nccl says {}: rebuild with scripts/build-ptx-device-api",
            libs::version_text(abi.nccl),
            libs::version_text(recorded)
        ));
    }
    let host = (
        size_of::<Requirements>(),
        offset_of!(Requirements, lsa_barrier_count),
    );
    if host != (abi.reqs_size, abi.reqs_lsa_barrier_count) {
        return Err(format!(
            "baton's ncclDevCommRequirements ({} bytes, lsaBarrierCount at {}) is not NCCL {}'s ({} bytes, at {})",
            host.0,
            host.1,
            libs::version_text(abi.nccl),
            abi.reqs_size,
            abi.reqs_lsa_barrier_count
        ));
    }
    Ok(abi)
}

/// Reads `.global .align 8 .b8 baton_devapi_abi[56] = {…};`: seven little-endian u64.
fn parse(ptx: &str) -> Result<Abi, String> {
    let bad = |why: &str| format!("kernels/device_api.ptx: baton_devapi_abi {why}");
    let line = ptx
        .lines()
        .find(|l| l.contains("baton_devapi_abi[") && l.contains('='))
        .ok_or_else(|| bad("is missing"))?;
    let body = line
        .split_once('{')
        .and_then(|(_, r)| r.split_once('}'))
        .map(|(b, _)| b)
        .ok_or_else(|| bad("has no initializer"))?;
    let mut bytes = body
        .split(',')
        .map(|b| b.trim().parse::<u8>())
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| bad("is not a byte list"))?;
    // PTX leaves trailing zero bytes out of an initializer.
    if bytes.len() > 56 {
        return Err(bad("is longer than seven u64"));
    }
    bytes.resize(56, 0);
    let v: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect();
    let n = |i: usize| v[i] as usize;
    let abi = Abi {
        nccl: i32::try_from(v[0]).map_err(|_| bad("has no NCCL version"))?,
        devcomm_size: n(1),
        devcomm_align: n(2),
        reqs_size: n(3),
        reqs_lsa_barrier_count: n(4),
        devcomm_nranks: n(5),
        devcomm_lsa_size: n(6),
    };
    let sane = abi.devcomm_size > abi.devcomm_lsa_size + 4
        && abi.devcomm_size <= 64 * 1024
        && abi.devcomm_align.is_power_of_two()
        && abi.devcomm_align <= 16;
    if !sane {
        return Err(bad("describes no usable ncclDevComm"));
    }
    Ok(abi)
}

/// Why the loaded NCCL (version code `loaded`) cannot fill the device communicator these
/// kernels read: NCCL writes it in the layout of the version the caller was built with only
/// when it is that version or newer (older callers get a copy in their layout; newer ones are
/// refused), and NCCL 2.28's device API is not 2.29's.
pub fn refusal(loaded: i32) -> Option<String> {
    let abi = match abi() {
        Ok(a) => a,
        Err(e) => return Some(format!("`device_api`: {e}")),
    };
    let built = libs::version_text(abi.nccl);
    if loaded < abi.nccl {
        return Some(format!(
            "`device_api` needs NCCL {built} or newer: baton's device kernels were built against NCCL {built}'s device API headers, and an older NCCL cannot lay out their device communicator; the loaded NCCL is {}",
            libs::version_text(loaded)
        ));
    }
    if libs::dev_comm().is_none() {
        return Some(format!(
            "`device_api` needs NCCL {built} or newer; the loaded NCCL {} lacks ncclDevCommCreate",
            libs::version_text(loaded)
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_ptx_matches_its_headers_and_the_host_structures() {
        let abi = checked(PTX, HEADERS).unwrap();
        assert_eq!(abi.nccl, 23007);
        assert_eq!(abi.devcomm_size, 240);
        assert_eq!(abi.devcomm_align, 8);
        assert_eq!((abi.devcomm_nranks, abi.devcomm_lsa_size), (12, 24));
        // Every kernel takes the device communicator at the recorded size.
        let params = PTX.matches("_param_5[240]").count();
        assert_eq!(params, PTX.matches(".visible .entry").count());
        assert!(params >= 18);
    }

    #[test]
    fn a_ptx_and_a_version_file_that_disagree_are_refused() {
        let e = checked(PTX, "22907\n").unwrap_err();
        assert!(
            e.contains("NCCL 2.30.7 headers") && e.contains("says 2.29.7"),
            "{e}"
        );
        assert!(
            checked(PTX, "two\n")
                .unwrap_err()
                .contains("not an NCCL version")
        );
        let other = PTX.replace(
            "{223, 89, 0, 0, 0, 0, 0, 0, 240,",
            "{223, 89, 0, 0, 0, 0, 0, 0, 3,",
        );
        assert!(checked(&other, HEADERS).unwrap_err().contains("no usable"));
        let reqs = PTX.replace(", 96, 0,", ", 104, 0,");
        let e = checked(&reqs, HEADERS).unwrap_err();
        assert!(e.contains("96 bytes") && e.contains("(104 bytes"), "{e}");
        assert!(parse("no record here").unwrap_err().contains("missing"));
    }

    #[test]
    fn an_nccl_older_than_the_headers_is_refused_naming_both() {
        let e = refusal(22803).unwrap();
        assert!(e.contains("needs NCCL 2.30.7 or newer"), "{e}");
        assert!(e.contains("the loaded NCCL is 2.28.3"), "{e}");
        assert!(refusal(23006).unwrap().contains("loaded NCCL is 2.30.6"));
    }
}
