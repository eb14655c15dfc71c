//! `baton probe` inside a simulated node (`ip netns exec`, which mounts that node's own
//! /sys): the kernel's real counters move under the cluster's real faults — a flapped link's
//! `carrier_changes`, a node's MTU set apart from the fleet's — and the delta of two snapshots
//! says so in the words a verdict will cite.
#![cfg(feature = "mpi")]

use crate::common;

use std::process::Command;

use baton::probe::Snapshot;
use baton::probe::delta::{ChangeKind, delta};
use common::cluster::{Fault, cluster_of};
use common::show;

/// The snapshot `baton probe --format json` takes inside `node`'s namespaces.
fn probe_in(node: &str) -> Snapshot {
    let o = Command::new("ip")
        .args(["netns", "exec", &format!("baton-sim-{node}")])
        .args([
            env!("CARGO_BIN_EXE_baton"),
            "probe",
            "--format",
            "json",
            "--no-gpus",
        ])
        .output()
        .expect("ip netns exec runs");
    assert!(o.status.success(), "{}", show(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&o)))
}

fn eth0(s: &Snapshot) -> &baton::probe::net::Interface {
    let i = s.interfaces.get().expect("the node's interfaces");
    i.iter()
        .find(|i| i.name == "eth0")
        .expect("the node's eth0")
}

#[test]
fn a_flapped_node_shows_carrier_changes_and_its_neighbour_does_not() {
    let Some(c) = cluster_of(4) else { return };
    let (flapped, other) = (&c.nodes[2], &c.nodes[3]);
    let (before, quiet_before) = (probe_in(flapped), probe_in(other));
    let _flap = Fault::apply(&["flap", flapped, "2"]);
    let (after, quiet_after) = (probe_in(flapped), probe_in(other));
    let lines = delta(&before, &after).lines();
    assert!(
        lines.contains(&"eth0 carrier_changes +4".to_string()),
        "{lines:?}"
    );
    assert_eq!(eth0(&after).carrier, Some(true), "the link is back up");
    assert_eq!(
        delta(&quiet_before, &quiet_after).lines(),
        Vec::<String>::new()
    );
    assert!(after.took_ms < 1000, "probe took {} ms", after.took_ms);
}

#[test]
fn a_node_set_to_another_mtu_shows_it_until_healed() {
    let Some(c) = cluster_of(4) else { return };
    let node = &c.nodes[1];
    let before = probe_in(node);
    let mtu = Fault::apply(&["mtu", node, "1400"]);
    let after = probe_in(node);
    assert_eq!(eth0(&after).mtu, Some(1400));
    let lines = delta(&before, &after).lines();
    assert!(
        lines.contains(&"eth0 mtu 1500 → 1400".to_string()),
        "{lines:?}"
    );
    drop(mtu);
    assert_eq!(
        eth0(&probe_in(node)).mtu,
        Some(1500),
        "heal restores the MTU"
    );
}

/// `loss NODE 5%` (frames dropped on the bridge, both directions) while the node sends over
/// TCP: its own retransmit counter climbs, and the delta says by how much.
#[test]
fn a_lossy_node_retransmits_and_the_delta_says_how_many() {
    let Some(c) = cluster_of(4) else { return };
    let node = &c.nodes[3];
    let _loss = Fault::apply(&["loss", node, "5%"]);
    let listener = std::net::TcpListener::bind("10.77.0.254:0").expect("a listener on the bridge");
    let port = listener.local_addr().unwrap().port();
    let sink = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        std::io::copy(&mut s, &mut std::io::sink()).unwrap()
    });
    let before = probe_in(node);
    let send = Command::new("ip")
        .args(["netns", "exec", &format!("baton-sim-{node}"), "bash", "-c"])
        .arg(format!(
            "head -c 8000000 /dev/zero >/dev/tcp/10.77.0.254/{port}"
        ))
        .output()
        .unwrap();
    assert!(send.status.success(), "{}", show(&send));
    assert_eq!(sink.join().unwrap(), 8_000_000);
    let d = delta(&before, &probe_in(node));
    let retrans = d
        .changes
        .iter()
        .find(|c| c.subject == "tcp" && c.what == "RetransSegs")
        .unwrap_or_else(|| panic!("no retransmits: {:?}", d.lines()));
    let ChangeKind::Increased { before, after } = retrans.kind else {
        panic!("{retrans:?}")
    };
    // 8 MB is ~5500 full segments; at 5% each way, well over a few dozen are sent again.
    assert!(after - before >= 20, "{}", retrans.line());
    assert!(retrans.cited(), "a verdict cites it");
}
