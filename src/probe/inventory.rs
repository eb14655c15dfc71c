//! A snapshot's configuration as fields a fleet can be compared on: `kernel`, `driver`,
//! `nccl`, `peermem`, `eth0 mtu`, `nics`, `mlx5_0 rate`, `mlx5_0 state`, `gpus`, `gpu model`,
//! `GPU3 pcie`. Counters are left out: they differ between healthy nodes. A source the probe
//! could not read gives no field, so it is never a mismatch.

use std::collections::BTreeMap;

use super::Snapshot;

/// Field → value, in field order.
pub type Inventory = BTreeMap<String, String>;

/// The configuration fields of `s`.
pub fn inventory(s: &Snapshot) -> Inventory {
    let mut f = Inventory::new();
    let sw = &s.software;
    if let Some(k) = sw.kernel.get() {
        f.insert("kernel".into(), k.clone());
    }
    let driver = s.gpus.get().and_then(|g| g.driver_version.clone());
    if let Some(d) = driver.or_else(|| sw.nvidia_driver.get().map(|d| driver_of(d))) {
        f.insert("driver".into(), d);
        let peermem = if sw.peermem_loaded {
            "loaded"
        } else {
            "not loaded"
        };
        f.insert("peermem".into(), peermem.into());
    }
    if let Some(n) = sw.nccl.get() {
        f.insert("nccl".into(), n.version.clone());
    }
    for i in s.interfaces.get().into_iter().flatten() {
        if let Some(m) = i.mtu {
            f.insert(format!("{} mtu", i.name), m.to_string());
        }
    }
    if let Some(hcas) = s.hcas.get() {
        let ports: Vec<_> = hcas
            .iter()
            .flat_map(|h| h.ports.iter().map(move |p| (h, p)))
            .collect();
        f.insert("nics".into(), ports.len().to_string());
        for (h, p) in ports {
            let name = match p.port {
                1 => h.name.clone(),
                n => format!("{}/{n}", h.name),
            };
            if let Some(r) = &p.rate {
                f.insert(format!("{name} rate"), format!("{} Gb/s", r.gbps));
            }
            if let Some(st) = &p.state {
                f.insert(format!("{name} state"), st.clone());
            }
        }
    }
    if let Some(g) = s.gpus.get() {
        f.insert("gpus".into(), g.devices.len().to_string());
        if let Some(model) = g.devices.iter().find_map(|d| d.name.clone()) {
            f.insert("gpu model".into(), model);
        }
        for d in &g.devices {
            if let (Some(g), Some(w)) = (d.pcie_gen, d.pcie_width) {
                f.insert(format!("GPU{} pcie", d.index), format!("Gen{g} x{w}"));
            }
        }
    }
    f
}

/// The configuration fields of `s` and the facts a fleet is not compared on but an acceptance
/// cover shows (each HCA's firmware, each GPU's VBIOS and ECC mode): firmware differs across
/// a healthy fleet mid-rollout, which is worth seeing but no reason to leave a node out.
pub fn facts(s: &Snapshot) -> Inventory {
    let mut f = inventory(s);
    for h in s.hcas.get().into_iter().flatten() {
        if let Some(fw) = &h.fw_ver {
            f.insert(format!("{} firmware", h.name), fw.clone());
        }
    }
    for d in s.gpus.get().into_iter().flat_map(|g| g.devices.iter()) {
        if let Some(v) = &d.vbios {
            f.insert(format!("GPU{} vbios", d.index), v.clone());
        }
        if let Some(on) = d.ecc_enabled {
            f.insert(
                format!("GPU{} ecc", d.index),
                if on { "on" } else { "off" }.into(),
            );
        }
    }
    f
}

/// `NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Thu …` → `580.95.05`.
fn driver_of(line: &str) -> String {
    line.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .unwrap_or(line)
        .to_string()
}

#[cfg(test)]
mod tests {
    use crate::probe::tests::{take_tree, tree, write};

    #[test]
    fn the_cover_sees_the_firmware_the_fleet_is_not_compared_on() {
        let root = tree("facts");
        let hca = root.join("sys/class/infiniband/mlx5_0");
        write(&hca.join("fw_ver"), "28.39.1002\n");
        write(&hca.join("ports/1/rate"), "400 Gb/sec (4X NDR)\n");
        write(
            &root.join("proc/sys/kernel/osrelease"),
            "6.8.0-45-generic\n",
        );
        let s = take_tree(&root);
        let facts = super::facts(&s);
        assert_eq!(facts["mlx5_0 firmware"], "28.39.1002");
        assert_eq!(facts["mlx5_0 rate"], "400 Gb/s");
        assert_eq!(facts["kernel"], "6.8.0-45-generic");
        assert!(!super::inventory(&s).contains_key("mlx5_0 firmware"));
    }
    #[test]
    fn the_driver_version_is_cut_from_the_module_line() {
        let l = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U22-I3-AE18-23-3)  Tue Sep 23 09:54:54 UTC 2025";
        assert_eq!(super::driver_of(l), "580.95.05");
    }
}
