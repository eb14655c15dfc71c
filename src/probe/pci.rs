//! PCIe link state and AER counters of the devices collectives ride on — NVIDIA GPUs and
//! NVSwitches, InfiniBand and Mellanox adapters — from `/sys/bus/pci/devices/*`: a GPU at
//! Gen3 or x8 in a Gen5 x16 slot, or AER errors that climb during a job, explain slow or
//! failing collectives that timings alone cannot.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::read;

/// One PCI function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PciDevice {
    /// `0000:3b:00.0`.
    pub address: String,
    /// `gpu`, `nvswitch`, `hca`.
    pub kind: String,
    /// `32.0 GT/s PCIe` as the kernel prints it.
    pub current_link_speed: Option<String>,
    pub max_link_speed: Option<String>,
    pub current_link_width: Option<u64>,
    pub max_link_width: Option<u64>,
    /// `correctable`, `nonfatal`, `fatal` → counter → count (`TOTAL_ERR_COR` and friends);
    /// empty when the kernel has no AER for it.
    pub aer: BTreeMap<String, BTreeMap<String, u64>>,
}

const NVIDIA: u64 = 0x10de;
const MELLANOX: u64 = 0x15b3;

/// What a device is to the probe, from its `vendor` and `class`; none for all the others.
pub fn kind(vendor: u64, class: u64) -> Option<&'static str> {
    let base = class >> 8;
    match (vendor, base) {
        (NVIDIA, 0x0300 | 0x0302) => Some("gpu"),
        (NVIDIA, 0x0680) => Some("nvswitch"),
        (_, 0x0207) | (MELLANOX, 0x0200) => Some("hca"),
        _ => None,
    }
}

/// An `aer_dev_correctable` / `aer_dev_nonfatal` / `aer_dev_fatal` file: one `NAME COUNT` per
/// line (`RxErr 0`, `TOTAL_ERR_COR 2`); lines of another shape are skipped.
pub fn parse_aer(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let (name, n) = l.trim().rsplit_once(' ')?;
            Some((name.trim().to_string(), n.parse().ok()?))
        })
        .collect()
}

/// The GPUs, NVSwitches and HCAs under `sys/bus/pci/devices`.
pub fn devices(sys: &Path) -> Result<Vec<PciDevice>, String> {
    let dir = sys.join("bus/pci/devices");
    Ok(read::names(&dir)?
        .into_iter()
        .filter_map(|a| device(&dir.join(&a), a))
        .collect())
}

fn device(dir: &Path, address: String) -> Option<PciDevice> {
    let kind = kind(
        read::number(&dir.join("vendor"))?,
        read::number(&dir.join("class"))?,
    )?;
    let aer = [
        ("correctable", "aer_dev_correctable"),
        ("nonfatal", "aer_dev_nonfatal"),
        ("fatal", "aer_dev_fatal"),
    ]
    .into_iter()
    .filter_map(|(k, f)| Some((k.to_string(), parse_aer(&read::opt(&dir.join(f))?))))
    .collect();
    Some(PciDevice {
        address,
        kind: kind.to_string(),
        current_link_speed: read::opt(&dir.join("current_link_speed")),
        max_link_speed: read::opt(&dir.join("max_link_speed")),
        current_link_width: read::number(&dir.join("current_link_width")),
        max_link_width: read::number(&dir.join("max_link_width")),
        aer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::tests::{tree, write};

    /// `aer_dev_correctable` of Linux 6.x (drivers/pci/pcie/aer.c).
    const CORRECTABLE: &str = "RxErr 0\nBadTLP 2\nBadDLLP 0\nRollover 0\nTimeout 0\n\
NonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 2\n";
    const FATAL: &str = "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\n\
UnxCmplt 0\nRxOF 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\nACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\n\
AtomicOpBlocked 0\nTLPBlockedErr 0\nPoisonTLPBlocked 0\nTOTAL_ERR_FATAL 0\n";

    #[test]
    fn aer_counters_parse_as_the_kernel_prints_them() {
        let c = parse_aer(CORRECTABLE);
        assert_eq!(c["BadTLP"], 2);
        assert_eq!(c["TOTAL_ERR_COR"], 2);
        assert_eq!(c.len(), 9);
        assert_eq!(parse_aer(FATAL)["TOTAL_ERR_FATAL"], 0);
        assert!(parse_aer("garbage\n\u{0}\u{1}").is_empty());
    }

    #[test]
    fn a_gpu_at_half_width_reads_with_its_link_and_others_are_left_out() {
        let root = tree("pci");
        let gpu = root.join("bus/pci/devices/0000:3b:00.0");
        write(&gpu.join("vendor"), "0x10de\n");
        write(&gpu.join("class"), "0x030200\n");
        write(&gpu.join("current_link_speed"), "16.0 GT/s PCIe\n");
        write(&gpu.join("max_link_speed"), "32.0 GT/s PCIe\n");
        write(&gpu.join("current_link_width"), "8\n");
        write(&gpu.join("max_link_width"), "16\n");
        write(&gpu.join("aer_dev_correctable"), CORRECTABLE);
        let disk = root.join("bus/pci/devices/0000:01:00.0");
        write(&disk.join("vendor"), "0x144d\n");
        write(&disk.join("class"), "0x010802\n");
        let got = devices(&root).unwrap();
        assert_eq!(got.len(), 1);
        let d = &got[0];
        assert_eq!(d.kind, "gpu");
        assert_eq!(
            (d.current_link_width, d.max_link_width),
            (Some(8), Some(16))
        );
        assert_eq!(d.max_link_speed.as_deref(), Some("32.0 GT/s PCIe"));
        assert_eq!(d.aer["correctable"]["TOTAL_ERR_COR"], 2);
        assert!(!d.aer.contains_key("fatal"));
    }

    #[test]
    fn kinds_come_from_vendor_and_class() {
        assert_eq!(kind(0x10de, 0x030200), Some("gpu"));
        assert_eq!(kind(0x10de, 0x068000), Some("nvswitch"));
        assert_eq!(kind(0x15b3, 0x020700), Some("hca"));
        assert_eq!(kind(0x15b3, 0x020000), Some("hca"));
        assert_eq!(kind(0x8086, 0x020000), None);
    }
}
