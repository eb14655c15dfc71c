//! Network interfaces and TCP counters from `/proc/net/snmp`. Both are per network namespace:
//! `/proc/net` and rtnetlink follow the reader's, `/sys/class/net` the one sysfs was mounted
//! in. On a live node the interfaces come from rtnetlink ([`super::netlink`]) and only the
//! speed, which it lacks, from sysfs, where sysfs shows the same interface (same `ifindex`);
//! a recorded tree is read from its files.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::read;

/// One interface (`eth0`, `ib0`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Interface {
    pub name: String,
    /// Mb/s; none when the kernel has none (a virtual or down link reads `-1` or `EINVAL`).
    pub speed_mbps: Option<u64>,
    pub mtu: Option<u64>,
    pub carrier: Option<bool>,
    pub operstate: Option<String>,
    /// `carrier_changes` and `statistics/{rx,tx}_{errors,dropped}`.
    pub counters: BTreeMap<String, u64>,
}

/// The counters of an interface that a fault moves.
const COUNTERS: &[(&str, &str)] = &[
    ("carrier_changes", "carrier_changes"),
    ("rx_errors", "statistics/rx_errors"),
    ("tx_errors", "statistics/tx_errors"),
    ("rx_dropped", "statistics/rx_dropped"),
    ("tx_dropped", "statistics/tx_dropped"),
];

/// Every interface but loopback of this process's network namespace (`live`), else under
/// `sys/class/net`.
pub fn interfaces(sys: &Path, live: bool) -> Result<Vec<Interface>, String> {
    if !live {
        return from_sysfs(sys);
    }
    let dir = sys.join("class/net");
    Ok(super::netlink::links()?
        .into_iter()
        .filter(|l| l.name != "lo")
        .map(|l| {
            let d = dir.join(&l.name);
            let same = read::number(&d.join("ifindex")) == Some(l.index as u64);
            Interface {
                speed_mbps: same
                    .then(|| read::opt(&d.join("speed"))?.parse().ok())
                    .flatten(),
                mtu: l.mtu,
                carrier: l.carrier,
                operstate: l.operstate,
                counters: l.counters,
                name: l.name,
            }
        })
        .collect())
}

/// Every interface but loopback under `sys/class/net`.
fn from_sysfs(sys: &Path) -> Result<Vec<Interface>, String> {
    let dir = sys.join("class/net");
    Ok(read::names(&dir)?
        .into_iter()
        .filter(|n| n != "lo")
        .map(|n| interface(&dir.join(&n), n))
        .collect())
}

fn interface(dir: &Path, name: String) -> Interface {
    Interface {
        speed_mbps: read::opt(&dir.join("speed")).and_then(|s| s.parse().ok()),
        mtu: read::number(&dir.join("mtu")),
        carrier: read::number(&dir.join("carrier")).map(|c| c == 1),
        operstate: read::opt(&dir.join("operstate")),
        counters: COUNTERS
            .iter()
            .filter_map(|(k, f)| Some((k.to_string(), read::number(&dir.join(f))?)))
            .collect(),
        name,
    }
}

/// The `Tcp:` table of `/proc/net/snmp` (a header line of names, then a line of values, both
/// starting `Tcp:`): `RetransSegs`, `InErrs`, … . Values are signed (`MaxConn` is `-1`).
pub fn parse_snmp_tcp(text: &str) -> Result<BTreeMap<String, i64>, String> {
    let mut tcp = text.lines().filter_map(|l| l.strip_prefix("Tcp:"));
    let (names, values) = match (tcp.next(), tcp.next()) {
        (Some(n), Some(v)) => (n, v),
        _ => return Err("no Tcp: header and values in /proc/net/snmp".into()),
    };
    let values: Vec<i64> = values
        .split_whitespace()
        .map(|v| {
            v.parse()
                .map_err(|_| format!("Tcp value {v:?} is not a number"))
        })
        .collect::<Result<_, _>>()?;
    let names: Vec<&str> = names.split_whitespace().collect();
    if names.len() != values.len() {
        return Err(format!(
            "Tcp: {} names but {} values",
            names.len(),
            values.len()
        ));
    }
    Ok(names.into_iter().map(String::from).zip(values).collect())
}

/// This network namespace's TCP counters, from `proc/net/snmp`.
pub fn tcp(proc: &Path) -> Result<BTreeMap<String, i64>, String> {
    parse_snmp_tcp(&read::text(&proc.join("net/snmp"))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::tests::{tree, write};

    /// `/proc/net/snmp` of Linux 6.8, as printed.
    const SNMP: &str = "Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams InUnknownProtos InDiscards InDelivers OutRequests OutDiscards OutNoRoutes ReasmTimeout ReasmReqds ReasmOKs ReasmFails FragOKs FragFails FragCreates OutTransmits
Ip: 1 64 1905532 0 0 0 0 0 1905290 1723551 0 40 0 0 0 0 0 0 0 1723551
Icmp: InMsgs InErrors InCsumErrors InDestUnreachs
Icmp: 41 0 0 41
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors
Tcp: 1 200 120000 -1 20410 18744 1431 1155 12 1885460 2090126 5207 0 4031 0
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 19643 41 0 19845 0 0 0 0 0
";

    #[test]
    fn the_tcp_table_of_proc_net_snmp_parses() {
        let t = parse_snmp_tcp(SNMP).unwrap();
        assert_eq!(t["RetransSegs"], 5207);
        assert_eq!(t["MaxConn"], -1);
        assert_eq!(t["InErrs"], 0);
        assert_eq!(t.len(), 15);
    }

    #[test]
    fn a_torn_or_foreign_snmp_file_says_why() {
        assert!(
            parse_snmp_tcp("Ip: a\nIp: 1\n")
                .unwrap_err()
                .contains("no Tcp")
        );
        let e = parse_snmp_tcp("Tcp: A B\nTcp: 1\n").unwrap_err();
        assert!(e.contains("2 names but 1 values"), "{e}");
        assert!(parse_snmp_tcp("Tcp: A\nTcp: x\n").is_err());
    }

    #[test]
    fn an_interface_reads_its_counters_and_a_down_link_has_no_speed() {
        let root = tree("net");
        let eth = root.join("class/net/eth0");
        write(&eth.join("speed"), "-1\n");
        write(&eth.join("mtu"), "1500\n");
        write(&eth.join("carrier"), "1\n");
        write(&eth.join("carrier_changes"), "4\n");
        write(&eth.join("statistics/rx_dropped"), "7\n");
        write(&root.join("class/net/lo/mtu"), "65536\n");
        let got = interfaces(&root, false).unwrap();
        assert_eq!(got.len(), 1, "loopback is left out");
        let e = &got[0];
        assert_eq!(
            (e.speed_mbps, e.mtu, e.carrier),
            (None, Some(1500), Some(true))
        );
        assert_eq!(e.counters["carrier_changes"], 4);
        assert_eq!(e.counters["rx_dropped"], 7);
        assert!(!e.counters.contains_key("tx_errors"));
    }
}
