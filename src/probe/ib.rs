//! InfiniBand and RoCE adapters from `/sys/class/infiniband/*`, in the layout the kernel
//! documents (Documentation/ABI/stable/sysfs-class-infiniband): per HCA `fw_ver`, `board_id`,
//! `device/net/*` (its netdev), per port `state` (`4: ACTIVE`), `phys_state` (`5: LinkUp`),
//! `rate` (`400 Gb/sec (4X NDR)`), `link_layer`, `counters/*` and `hw_counters/*`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::read;

/// One HCA (`mlx5_0`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Hca {
    pub name: String,
    pub fw_ver: Option<String>,
    pub board_id: Option<String>,
    /// The network interfaces of its PCI device (`ib0`, `eth2`).
    pub netdevs: Vec<String>,
    /// Its PCI address, the target of `device`.
    pub pci: Option<String>,
    pub ports: Vec<Port>,
}

/// One port of an HCA.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Port {
    pub port: u32,
    /// The name of `state` (`ACTIVE`, `DOWN`, `INIT`).
    pub state: Option<String>,
    /// The name of `phys_state` (`LinkUp`, `Polling`, `Disabled`).
    pub phys_state: Option<String>,
    pub rate: Option<Rate>,
    pub link_layer: Option<String>,
    pub counters: BTreeMap<String, u64>,
    pub hw_counters: BTreeMap<String, u64>,
}

/// A port's `rate` file: `400 Gb/sec (4X NDR)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Rate {
    pub gbps: f64,
    pub text: String,
}

/// `4: ACTIVE` → `ACTIVE` (the name after the number; the whole text when there is no number).
pub fn state_name(text: &str) -> String {
    match text.split_once(':') {
        Some((n, name)) if n.trim().parse::<u32>().is_ok() => name.trim().to_string(),
        _ => text.trim().to_string(),
    }
}

/// `400 Gb/sec (4X NDR)` or `25 Gb/sec (1X EDR)` → 400.0 / 25.0; `2.5 Gb/sec (1X SDR)` → 2.5.
pub fn parse_rate(text: &str) -> Option<Rate> {
    let (n, rest) = text.trim().split_once(' ')?;
    if !rest.starts_with("Gb/sec") {
        return None;
    }
    let gbps: f64 = n.parse().ok()?;
    gbps.is_finite().then(|| Rate {
        gbps,
        text: text.trim().to_string(),
    })
}

/// Every HCA under `sys/class/infiniband`; why when there is no such directory (no RDMA
/// stack loaded).
pub fn hcas(sys: &Path) -> Result<Vec<Hca>, String> {
    let dir = sys.join("class/infiniband");
    let names = read::names(&dir)?;
    Ok(names.iter().map(|n| hca(&dir.join(n), n)).collect())
}

fn hca(dir: &Path, name: &str) -> Hca {
    let ports_dir = dir.join("ports");
    let ports = read::names(&ports_dir)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| Some(port(&ports_dir.join(p), p.parse().ok()?)))
        .collect();
    Hca {
        name: name.to_string(),
        fw_ver: read::opt(&dir.join("fw_ver")),
        board_id: read::opt(&dir.join("board_id")),
        netdevs: read::names(&dir.join("device/net")).unwrap_or_default(),
        pci: std::fs::read_link(dir.join("device"))
            .ok()
            .and_then(|t| Some(t.file_name()?.to_string_lossy().into_owned())),
        ports,
    }
}

fn port(dir: &Path, number: u32) -> Port {
    Port {
        port: number,
        state: read::opt(&dir.join("state")).map(|s| state_name(&s)),
        phys_state: read::opt(&dir.join("phys_state")).map(|s| state_name(&s)),
        rate: read::opt(&dir.join("rate")).and_then(|r| parse_rate(&r)),
        link_layer: read::opt(&dir.join("link_layer")),
        counters: read::counters(&dir.join("counters")),
        hw_counters: read::counters(&dir.join("hw_counters")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::tests::{tree, write};

    #[test]
    fn a_port_reads_as_the_kernel_abi_documents_it() {
        let root = tree("ib");
        let hca = root.join("class/infiniband/mlx5_4");
        write(&hca.join("fw_ver"), "28.39.1002\n");
        write(&hca.join("board_id"), "MT_0000000838\n");
        let p = hca.join("ports/1");
        write(&p.join("state"), "4: ACTIVE\n");
        write(&p.join("phys_state"), "5: LinkUp\n");
        write(&p.join("rate"), "400 Gb/sec (4X NDR)\n");
        write(&p.join("link_layer"), "InfiniBand\n");
        write(&p.join("counters/link_downed"), "3\n");
        write(&p.join("counters/symbol_error"), "0\n");
        write(&p.join("counters/port_xmit_wait"), "18446744073709551615\n");
        write(&p.join("hw_counters/out_of_buffer"), "12\n");
        let got = hcas(&root).unwrap();
        assert_eq!(got.len(), 1);
        let h = &got[0];
        assert_eq!(h.fw_ver.as_deref(), Some("28.39.1002"));
        assert_eq!(h.board_id.as_deref(), Some("MT_0000000838"));
        let port = &h.ports[0];
        assert_eq!(port.state.as_deref(), Some("ACTIVE"));
        assert_eq!(port.phys_state.as_deref(), Some("LinkUp"));
        assert_eq!(port.rate.as_ref().unwrap().gbps, 400.0);
        assert_eq!(port.counters["link_downed"], 3);
        assert_eq!(port.counters["port_xmit_wait"], u64::MAX);
        assert_eq!(port.hw_counters["out_of_buffer"], 12);
    }

    #[test]
    fn rates_and_states_of_every_generation_parse() {
        assert_eq!(parse_rate("2.5 Gb/sec (1X SDR)").unwrap().gbps, 2.5);
        assert_eq!(parse_rate("100 Gb/sec (4X EDR)").unwrap().gbps, 100.0);
        assert_eq!(parse_rate("800 Gb/sec (4X XDR)").unwrap().gbps, 800.0);
        assert_eq!(parse_rate("garbage"), None);
        assert_eq!(parse_rate("NaN Gb/sec"), None);
        assert_eq!(state_name("1: DOWN"), "DOWN");
        assert_eq!(state_name("3: Disabled"), "Disabled");
        assert_eq!(state_name("odd"), "odd");
    }

    #[test]
    fn no_rdma_stack_is_a_reason_not_an_error() {
        let why = hcas(&tree("no-ib")).unwrap_err();
        assert!(why.contains("class/infiniband"), "{why}");
    }
}
