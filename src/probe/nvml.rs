//! GPUs through NVML, loaded at run time (`libnvidia-ml.so.1`, as the driver installs it):
//! baton links no NVIDIA library, so the portable binary runs where there is none and says so.
//! A minimal binding of the calls the probe makes rather than the `nvml-wrapper` crate: that
//! would bring a second libloading and a proc-macro tree for a dozen symbols. Each field NVML
//! cannot give (not supported on this GPU, no permission) is left empty with NVML's reason.

use std::collections::BTreeMap;
use std::ffi::{CStr, c_char, c_int, c_uint, c_ulonglong, c_void};

use serde::{Deserialize, Serialize};

/// The driver-wide facts and every GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Gpus {
    pub driver_version: Option<String>,
    /// `12080` for CUDA 12.8, as `nvmlSystemGetCudaDriverVersion` gives it.
    pub cuda_driver_version: Option<i32>,
    pub devices: Vec<Gpu>,
}

/// One GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct Gpu {
    pub index: u32,
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub serial: Option<String>,
    pub vbios: Option<String>,
    pub pci_bus_id: Option<String>,
    pub ecc_enabled: Option<bool>,
    /// `volatile_sbe`, `volatile_dbe`, `aggregate_sbe`, `aggregate_dbe`, `retired_pages_sbe`,
    /// `retired_pages_dbe`, `remapped_rows_correctable`, `remapped_rows_uncorrectable`,
    /// `remap_pending`, `remap_failed`: counts that only climb on a sick GPU.
    pub counters: BTreeMap<String, u64>,
    /// MHz: `graphics`, `sm`, `memory`, and `max_*`.
    pub clocks_mhz: BTreeMap<String, u32>,
    /// Names of the clock-event (throttle) reasons active now.
    pub throttle_reasons: Vec<String>,
    pub temperature_c: Option<u32>,
    pub power_w: Option<f64>,
    pub pcie_gen: Option<u32>,
    pub pcie_gen_max: Option<u32>,
    pub pcie_width: Option<u32>,
    pub pcie_width_max: Option<u32>,
    pub nvlinks: Vec<NvLink>,
    /// Field → why NVML did not give it (`Not Supported`, `Insufficient Permissions`).
    pub unavailable: BTreeMap<String, String>,
}

/// One NVLink of a GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NvLink {
    pub link: u32,
    pub active: bool,
    /// `replay`, `recovery`, `crc_flit`, `crc_data`, `ecc_data` where the GPU counts them.
    pub errors: BTreeMap<String, u64>,
}

/// The bits of `nvmlClocksEventReasons` (nvml.h), by name.
const THROTTLE: &[(u64, &str)] = &[
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
];

/// The names of the reasons set in `mask`; an unknown bit by its value.
pub fn throttle_names(mask: u64) -> Vec<String> {
    let mut names: Vec<String> = THROTTLE
        .iter()
        .filter(|(b, _)| mask & b != 0)
        .map(|(_, n)| n.to_string())
        .collect();
    let known: u64 = THROTTLE.iter().map(|(b, _)| b).sum();
    if mask & !known != 0 {
        names.push(format!("0x{:x}", mask & !known));
    }
    names
}

type Device = *mut c_void;
const SUCCESS: c_int = 0;
const INSUFFICIENT_SIZE: c_int = 7;
const MAX_NVLINKS: c_uint = 18;

/// The loaded library, initialised; shut down when dropped.
struct Nvml {
    lib: libloading::Library,
}

impl Drop for Nvml {
    fn drop(&mut self) {
        if let Ok(f) = self.sym::<unsafe extern "C" fn() -> c_int>("nvmlShutdown") {
            // SAFETY: paired with the successful nvmlInit_v2 of `open`.
            unsafe { f() };
        }
    }
}

impl Nvml {
    fn open() -> Result<Nvml, String> {
        // SAFETY: loading the driver's management library runs its initialisers, which is
        // what every NVML client does.
        let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }
            .map_err(|e| format!("NVML not loaded (no NVIDIA driver here?): {e}"))?;
        let nvml = Nvml { lib };
        // SAFETY: nvmlInit_v2 takes no arguments.
        let init = nvml.sym::<unsafe extern "C" fn() -> c_int>("nvmlInit_v2")?;
        let rc = unsafe { init() };
        if rc != SUCCESS {
            let why = nvml.error(rc);
            std::mem::forget(nvml);
            return Err(format!("nvmlInit failed: {why}"));
        }
        Ok(nvml)
    }

    fn sym<T: Copy>(&self, name: &str) -> Result<T, String> {
        // SAFETY: each caller names the symbol with its nvml.h signature.
        unsafe { self.lib.get::<T>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|_| format!("{name} missing from libnvidia-ml"))
    }

    fn error(&self, rc: c_int) -> String {
        match self.sym::<unsafe extern "C" fn(c_int) -> *const c_char>("nvmlErrorString") {
            // SAFETY: nvmlErrorString returns a static NUL-terminated string for any code.
            Ok(f) => unsafe { CStr::from_ptr(f(rc)) }
                .to_string_lossy()
                .into_owned(),
            Err(_) => format!("NVML error {rc}"),
        }
    }

    /// An NVML return code as a result, with NVML's words for a failure.
    fn check(&self, rc: c_int) -> Result<(), String> {
        if rc == SUCCESS {
            Ok(())
        } else {
            Err(self.error(rc))
        }
    }

    /// A string out of `f(buf, len)`.
    fn string(&self, f: impl FnOnce(*mut c_char, c_uint) -> c_int) -> Result<String, String> {
        let mut buf = [0 as c_char; 256];
        self.check(f(buf.as_mut_ptr(), buf.len() as c_uint))?;
        // SAFETY: NVML NUL-terminates within the length given; the last byte stays 0.
        buf[255] = 0;
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }
}

/// Every GPU NVML sees; why when NVML is not there or does not start.
pub fn gpus() -> Result<Gpus, String> {
    let nvml = Nvml::open()?;
    type Str = unsafe extern "C" fn(*mut c_char, c_uint) -> c_int;
    let driver = nvml.sym::<Str>("nvmlSystemGetDriverVersion");
    let driver_version = driver
        .and_then(|f| nvml.string(|b, l| unsafe { f(b, l) }))
        .ok();
    let cuda =
        nvml.sym::<unsafe extern "C" fn(*mut c_int) -> c_int>("nvmlSystemGetCudaDriverVersion_v2");
    let cuda_driver_version = cuda.ok().and_then(|f| {
        let mut v = 0;
        (unsafe { f(&mut v) } == SUCCESS).then_some(v)
    });
    let count_f =
        nvml.sym::<unsafe extern "C" fn(*mut c_uint) -> c_int>("nvmlDeviceGetCount_v2")?;
    let mut count = 0;
    nvml.check(unsafe { count_f(&mut count) })?;
    let handle_f = nvml.sym::<unsafe extern "C" fn(c_uint, *mut Device) -> c_int>(
        "nvmlDeviceGetHandleByIndex_v2",
    )?;
    let devices = (0..count.min(64))
        .map(|i| {
            let mut d: Device = std::ptr::null_mut();
            match nvml.check(unsafe { handle_f(i, &mut d) }) {
                Ok(()) => gpu(&nvml, i, d),
                Err(why) => Gpu {
                    index: i,
                    unavailable: BTreeMap::from([("handle".into(), why)]),
                    ..Gpu::default()
                },
            }
        })
        .collect();
    Ok(Gpus {
        driver_version,
        cuda_driver_version,
        devices,
    })
}

/// Records a field: its value, or why not under its name.
fn field<T>(g: &mut Gpu, name: &str, r: Result<T, String>) -> Option<T> {
    r.map_err(|why| g.unavailable.insert(name.to_string(), why))
        .ok()
}

fn gpu(nvml: &Nvml, index: u32, d: Device) -> Gpu {
    let mut g = Gpu {
        index,
        ..Gpu::default()
    };
    identity(nvml, d, &mut g);
    ecc(nvml, d, &mut g);
    clocks(nvml, d, &mut g);
    pcie(nvml, d, &mut g);
    g.nvlinks = nvlinks(nvml, d);
    g
}

type DevStr = unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_int;
type DevU32 = unsafe extern "C" fn(Device, *mut c_uint) -> c_int;

fn dev_string(nvml: &Nvml, d: Device, name: &str) -> Result<String, String> {
    let f = nvml.sym::<DevStr>(name)?;
    nvml.string(|b, l| unsafe { f(d, b, l) })
}

fn dev_u32(nvml: &Nvml, d: Device, name: &str) -> Result<u32, String> {
    let f = nvml.sym::<DevU32>(name)?;
    let mut v = 0;
    nvml.check(unsafe { f(d, &mut v) })?;
    Ok(v)
}

fn identity(nvml: &Nvml, d: Device, g: &mut Gpu) {
    g.name = field(g, "name", dev_string(nvml, d, "nvmlDeviceGetName"));
    g.uuid = field(g, "uuid", dev_string(nvml, d, "nvmlDeviceGetUUID"));
    g.serial = field(g, "serial", dev_string(nvml, d, "nvmlDeviceGetSerial"));
    g.vbios = field(g, "vbios", dev_string(nvml, d, "nvmlDeviceGetVbiosVersion"));
    g.pci_bus_id = field(g, "pci_bus_id", pci_bus_id(nvml, d));
}

/// `nvmlPciInfo_t`: the legacy bus id, five numbers, then the bus id.
#[repr(C)]
struct PciInfo {
    bus_id_legacy: [c_char; 16],
    numbers: [c_uint; 5],
    bus_id: [c_char; 32],
}

fn pci_bus_id(nvml: &Nvml, d: Device) -> Result<String, String> {
    let f =
        nvml.sym::<unsafe extern "C" fn(Device, *mut PciInfo) -> c_int>("nvmlDeviceGetPciInfo_v3")?;
    let mut info = PciInfo {
        bus_id_legacy: [0; 16],
        numbers: [0; 5],
        bus_id: [0; 32],
    };
    nvml.check(unsafe { f(d, &mut info) })?;
    info.bus_id[31] = 0;
    Ok(unsafe { CStr::from_ptr(info.bus_id.as_ptr()) }
        .to_string_lossy()
        .into_owned())
}

fn ecc(nvml: &Nvml, d: Device, g: &mut Gpu) {
    let mode = nvml
        .sym::<unsafe extern "C" fn(Device, *mut c_int, *mut c_int) -> c_int>(
            "nvmlDeviceGetEccMode",
        )
        .and_then(|f| {
            let (mut cur, mut pending) = (0, 0);
            nvml.check(unsafe { f(d, &mut cur, &mut pending) })
                .map(|_| cur == 1)
        });
    g.ecc_enabled = field(g, "ecc_enabled", mode);
    type Total = unsafe extern "C" fn(Device, c_int, c_int, *mut c_ulonglong) -> c_int;
    for (name, kind, counter) in [
        ("volatile_sbe", 0, 0),
        ("volatile_dbe", 1, 0),
        ("aggregate_sbe", 0, 1),
        ("aggregate_dbe", 1, 1),
    ] {
        let v = nvml
            .sym::<Total>("nvmlDeviceGetTotalEccErrors")
            .and_then(|f| {
                let mut v = 0;
                nvml.check(unsafe { f(d, kind, counter, &mut v) })
                    .map(|_| v)
            });
        if let Some(v) = field(g, name, v) {
            g.counters.insert(name.into(), v);
        }
    }
    retired(nvml, d, g);
    remapped(nvml, d, g);
}

fn retired(nvml: &Nvml, d: Device, g: &mut Gpu) {
    type Pages = unsafe extern "C" fn(Device, c_int, *mut c_uint, *mut c_ulonglong) -> c_int;
    for (name, cause) in [("retired_pages_sbe", 0), ("retired_pages_dbe", 1)] {
        let v = nvml
            .sym::<Pages>("nvmlDeviceGetRetiredPages")
            .and_then(|f| {
                let mut n = 0;
                // With no room for addresses NVML says how many there are.
                match unsafe { f(d, cause, &mut n, std::ptr::null_mut()) } {
                    SUCCESS | INSUFFICIENT_SIZE => Ok(u64::from(n)),
                    rc => Err(nvml.error(rc)),
                }
            });
        if let Some(v) = field(g, name, v) {
            g.counters.insert(name.into(), v);
        }
    }
}

fn remapped(nvml: &Nvml, d: Device, g: &mut Gpu) {
    type Rows =
        unsafe extern "C" fn(Device, *mut c_uint, *mut c_uint, *mut c_uint, *mut c_uint) -> c_int;
    let rows = nvml.sym::<Rows>("nvmlDeviceGetRemappedRows").and_then(|f| {
        let (mut c, mut u, mut p, mut x) = (0, 0, 0, 0);
        nvml.check(unsafe { f(d, &mut c, &mut u, &mut p, &mut x) })
            .map(|_| [c, u, p, x])
    });
    if let Some(v) = field(g, "remapped_rows", rows) {
        let names = [
            "remapped_rows_correctable",
            "remapped_rows_uncorrectable",
            "remap_pending",
            "remap_failed",
        ];
        for (n, v) in names.into_iter().zip(v) {
            g.counters.insert(n.into(), u64::from(v));
        }
    }
}

fn clocks(nvml: &Nvml, d: Device, g: &mut Gpu) {
    type Clock = unsafe extern "C" fn(Device, c_int, *mut c_uint) -> c_int;
    for (prefix, f) in [
        ("", "nvmlDeviceGetClockInfo"),
        ("max_", "nvmlDeviceGetMaxClockInfo"),
    ] {
        for (name, kind) in [("graphics", 0), ("sm", 1), ("memory", 2)] {
            let key = format!("{prefix}{name}");
            let v = nvml.sym::<Clock>(f).and_then(|f| {
                let mut v = 0;
                nvml.check(unsafe { f(d, kind, &mut v) }).map(|_| v)
            });
            if let Some(v) = field(g, &format!("clock_{key}"), v) {
                g.clocks_mhz.insert(key, v);
            }
        }
    }
    type Mask = unsafe extern "C" fn(Device, *mut c_ulonglong) -> c_int;
    let reasons = nvml
        .sym::<Mask>("nvmlDeviceGetCurrentClocksEventReasons")
        .or_else(|_| nvml.sym::<Mask>("nvmlDeviceGetCurrentClocksThrottleReasons"))
        .and_then(|f| {
            let mut m = 0;
            nvml.check(unsafe { f(d, &mut m) })
                .map(|_| throttle_names(m))
        });
    g.throttle_reasons = field(g, "throttle_reasons", reasons).unwrap_or_default();
    type Temp = unsafe extern "C" fn(Device, c_int, *mut c_uint) -> c_int;
    let temp = nvml.sym::<Temp>("nvmlDeviceGetTemperature").and_then(|f| {
        let mut v = 0;
        nvml.check(unsafe { f(d, 0, &mut v) }).map(|_| v)
    });
    g.temperature_c = field(g, "temperature_c", temp);
    let power = dev_u32(nvml, d, "nvmlDeviceGetPowerUsage").map(|mw| f64::from(mw) / 1000.0);
    g.power_w = field(g, "power_w", power);
}

fn pcie(nvml: &Nvml, d: Device, g: &mut Gpu) {
    g.pcie_gen = field(
        g,
        "pcie_gen",
        dev_u32(nvml, d, "nvmlDeviceGetCurrPcieLinkGeneration"),
    );
    g.pcie_gen_max = field(
        g,
        "pcie_gen_max",
        dev_u32(nvml, d, "nvmlDeviceGetMaxPcieLinkGeneration"),
    );
    g.pcie_width = field(
        g,
        "pcie_width",
        dev_u32(nvml, d, "nvmlDeviceGetCurrPcieLinkWidth"),
    );
    g.pcie_width_max = field(
        g,
        "pcie_width_max",
        dev_u32(nvml, d, "nvmlDeviceGetMaxPcieLinkWidth"),
    );
}

fn nvlinks(nvml: &Nvml, d: Device) -> Vec<NvLink> {
    type State = unsafe extern "C" fn(Device, c_uint, *mut c_int) -> c_int;
    type Errors = unsafe extern "C" fn(Device, c_uint, c_int, *mut c_ulonglong) -> c_int;
    let (Ok(state), errors) = (
        nvml.sym::<State>("nvmlDeviceGetNvLinkState"),
        nvml.sym::<Errors>("nvmlDeviceGetNvLinkErrorCounter").ok(),
    ) else {
        return Vec::new();
    };
    let names = ["replay", "recovery", "crc_flit", "crc_data", "ecc_data"];
    (0..MAX_NVLINKS)
        .filter_map(|link| {
            let mut active = 0;
            (unsafe { state(d, link, &mut active) } == SUCCESS).then_some(())?;
            let errors = errors
                .map(|f| {
                    (0..names.len())
                        .filter_map(|c| {
                            let mut v = 0;
                            (unsafe { f(d, link, c as c_int, &mut v) } == SUCCESS)
                                .then(|| (names[c].to_string(), v))
                        })
                        .collect()
                })
                .unwrap_or_default();
            Some(NvLink {
                link,
                active: active == 1,
                errors,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_masks_name_their_reasons() {
        assert_eq!(throttle_names(0), Vec::<String>::new());
        assert_eq!(throttle_names(0x1), ["gpu_idle"]);
        assert_eq!(throttle_names(0x48), ["hw_slowdown", "hw_thermal_slowdown"]);
        assert_eq!(throttle_names(0x1000), ["0x1000"]);
    }

    #[test]
    fn without_a_driver_nvml_is_a_reason() {
        // On a machine without the driver (CI); with one, the GPUs are listed.
        match gpus() {
            Ok(g) => assert!(
                g.devices
                    .iter()
                    .all(|d| d.uuid.is_some() || !d.unavailable.is_empty())
            ),
            Err(why) => assert!(why.contains("NVML"), "{why}"),
        }
    }
}
