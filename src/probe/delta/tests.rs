use super::*;
use crate::probe::ib::{Hca, Port};
use crate::probe::kernel_log::{EventKind, KernelEvent};
use crate::probe::kmsg::KernelLog;
use crate::probe::net::Interface;
use crate::probe::software::Software;

fn snapshot(at: u64) -> Snapshot {
    Snapshot {
        taken_unix_ms: at,
        took_ms: 1,
        software: Software {
            hostname: "node03".into(),
            kernel: Sourced::Unavailable("-".into()),
            nvidia_driver: Sourced::Unavailable("-".into()),
            nccl: Sourced::Unavailable("-".into()),
            mpi: Sourced::Unavailable("-".into()),
            baton: "0".into(),
            peermem_loaded: false,
            fabric_manager: Sourced::Unavailable("-".into()),
        },
        gpus: Sourced::Unavailable("-".into()),
        hcas: Sourced::Available(vec![Hca {
            name: "mlx5_4".into(),
            fw_ver: None,
            board_id: None,
            netdevs: vec![],
            pci: None,
            ports: vec![Port {
                port: 1,
                state: Some("ACTIVE".into()),
                phys_state: Some("LinkUp".into()),
                rate: None,
                link_layer: None,
                counters: BTreeMap::from([("link_downed".into(), 1), ("symbol_error".into(), 0)]),
                hw_counters: BTreeMap::new(),
            }],
        }]),
        interfaces: Sourced::Available(vec![Interface {
            name: "eth0".into(),
            speed_mbps: Some(10000),
            mtu: Some(1500),
            carrier: Some(true),
            operstate: None,
            counters: BTreeMap::from([("carrier_changes".into(), 2), ("rx_dropped".into(), 5)]),
        }]),
        tcp: Sourced::Available(BTreeMap::from([
            ("RetransSegs".into(), 100),
            ("CurrEstab".into(), 3),
        ])),
        pci: Sourced::Unavailable("-".into()),
        kernel_log: Sourced::Available(KernelLog {
            source: "/dev/kmsg".into(),
            since_unix_ms: 0,
            events: vec![],
            left_out: 0,
        }),
    }
}

#[test]
fn counters_that_climb_states_that_change_and_new_lines_are_each_a_line() {
    let before = snapshot(1_764_590_000_000);
    let mut after = snapshot(1_764_590_600_000);
    if let Sourced::Available(i) = &mut after.interfaces {
        i[0].counters.insert("carrier_changes".into(), 4);
        i[0].mtu = Some(1400);
    }
    if let Sourced::Available(h) = &mut after.hcas {
        h[0].ports[0].counters.insert("link_downed".into(), 4);
        h[0].ports[0].state = Some("DOWN".into());
    }
    if let Sourced::Available(t) = &mut after.tcp {
        t.insert("RetransSegs".into(), 112);
        t.insert("CurrEstab".into(), 9);
    }
    if let Sourced::Available(k) = &mut after.kernel_log {
        k.events.push(KernelEvent {
            at_unix_ms: 1_764_590_591_000,
            kind: EventKind::Xid {
                device: "0000:3b:00".into(),
                code: 79,
            },
            line: "NVRM: Xid (PCI:0000:3b:00): 79, …".into(),
        });
    }
    let lines = delta(&before, &after).lines();
    assert_eq!(
        lines,
        [
            "eth0 carrier_changes +2",
            "eth0 mtu 1500 → 1400",
            "mlx5_4 link_downed +3",
            "mlx5_4 state ACTIVE → DOWN",
            "tcp RetransSegs +12",
            "Xid 79 at 12:03:11",
        ]
    );
}

#[test]
fn nothing_moved_is_an_empty_delta_and_a_reset_counter_is_not_a_change() {
    let before = snapshot(1000);
    assert!(delta(&before, &snapshot(2000)).changes.is_empty());
    let mut after = snapshot(2000);
    if let Sourced::Available(i) = &mut after.interfaces {
        i[0].counters.insert("rx_dropped".into(), 0);
    }
    assert!(delta(&before, &after).changes.is_empty());
    // A source one side lacks compares nothing.
    after.interfaces = Sourced::Unavailable("gone".into());
    assert!(delta(&before, &after).changes.is_empty());
}

fn up(subject: &str, what: &str, before: u64, after: u64) -> Change {
    Change {
        subject: subject.into(),
        what: what.into(),
        kind: ChangeKind::Increased { before, after },
    }
}

/// #24: the deltas of a node's sets as one line each: climbs added up, a state that came back
/// left out, an event once; drops a healthy veth shows are not cited, carrier changes are.
#[test]
fn deltas_of_several_jobs_add_up_and_only_faults_are_cited() {
    let flip = |b: &str, a: &str| Change {
        subject: "eth0".into(),
        what: "carrier".into(),
        kind: ChangeKind::Changed {
            before: b.into(),
            after: a.into(),
        },
    };
    let xid = Change {
        subject: "0000:3b:00".into(),
        what: "Xid 79".into(),
        kind: ChangeKind::Event {
            at_unix_ms: 0,
            line: "NVRM: Xid (PCI:0000:3b:00): 79".into(),
        },
    };
    let all = [
        up("eth0", "carrier_changes", 2, 6),
        flip("true", "false"),
        xid.clone(),
        up("eth0", "carrier_changes", 6, 8),
        flip("false", "true"),
        xid,
    ];
    let lines: Vec<String> = summed(&all).iter().map(Change::line).collect();
    assert_eq!(lines, ["eth0 carrier_changes +6", "Xid 79 at 00:00:00"]);
    assert!(up("eth0", "carrier_changes", 1, 2).cited());
    assert!(up("tcp", "RetransSegs", 1, 2).cited() && !up("tcp", "RetransSegs", 1, 2).local());
    assert!(!up("eth0", "rx_dropped", 1, 2).cited());
}
