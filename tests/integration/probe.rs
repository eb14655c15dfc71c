//! `baton probe` on a recorded node (`--sys`, `--proc`, `--kmsg`): the real binary reads a
//! tree laid out as the kernel lays it out and says what it found, what it could not read and
//! why, as text or JSON; a wrong `--since` is invalid input.

use crate::common;

use std::path::Path;

use common::{baton, code, p, show, stderr, stdout, tmp};

fn put(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A node with one GPU at half its PCIe width, one NDR port that went down three times, an
/// interface at MTU 1400, and an Xid 79 in its log.
fn recorded_node() -> std::path::PathBuf {
    let d = tmp("probe-recorded");
    let sys = d.join("sys");
    put(&sys, "class/infiniband/mlx5_4/fw_ver", "28.39.1002\n");
    put(&sys, "class/infiniband/mlx5_4/ports/1/state", "4: ACTIVE\n");
    put(
        &sys,
        "class/infiniband/mlx5_4/ports/1/phys_state",
        "5: LinkUp\n",
    );
    put(
        &sys,
        "class/infiniband/mlx5_4/ports/1/rate",
        "400 Gb/sec (4X NDR)\n",
    );
    put(
        &sys,
        "class/infiniband/mlx5_4/ports/1/counters/link_downed",
        "3\n",
    );
    put(&sys, "class/net/eth0/mtu", "1400\n");
    put(&sys, "class/net/eth0/carrier", "1\n");
    put(&sys, "class/net/eth0/carrier_changes", "6\n");
    let gpu = "bus/pci/devices/0000:3b:00.0";
    put(&sys, &format!("{gpu}/vendor"), "0x10de\n");
    put(&sys, &format!("{gpu}/class"), "0x030200\n");
    put(
        &sys,
        &format!("{gpu}/current_link_speed"),
        "32.0 GT/s PCIe\n",
    );
    put(&sys, &format!("{gpu}/current_link_width"), "8\n");
    put(&sys, &format!("{gpu}/max_link_width"), "16\n");
    put(
        &d,
        "proc/net/snmp",
        "Tcp: RtoAlgorithm RetransSegs InErrs\nTcp: 1 42 0\n",
    );
    put(
        &d,
        "kmsg",
        "4,7,5000000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python3, GPU has fallen off the bus.\n",
    );
    d
}

fn probe(d: &Path, extra: &[&str]) -> std::process::Output {
    let (sys, proc, kmsg) = (d.join("sys"), d.join("proc"), d.join("kmsg"));
    let mut args = vec!["probe", "--no-gpus", "--sys", p(&sys), "--proc", p(&proc)];
    args.extend(["--kmsg", p(&kmsg)]);
    args.extend(extra);
    baton(&args)
}

#[test]
fn a_recorded_node_reads_as_text_with_each_missing_source_and_why() {
    let d = recorded_node();
    let o = probe(&d, &[]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let out = stdout(&o);
    for want in [
        "mlx5_4 fw 28.39.1002 · board -",
        "port 1: ACTIVE LinkUp 400 Gb/sec (4X NDR) - · link_downed 3",
        "eth0: mtu 1400 · speed - · carrier up · carrier_changes 6",
        "RetransSegs 42",
        "0000:3b:00.0 gpu: 32.0 GT/s PCIe x8 (max - x16)",
        "Xid 79: NVRM: Xid (PCI:0000:3b:00): 79",
        "GPUs: unavailable (not asked (--no-gpus))",
        "kernel: unavailable (",
    ] {
        assert!(out.contains(want), "{want:?} not in:\n{out}");
    }
}

#[test]
fn json_holds_the_snapshot_and_a_bad_since_is_invalid_input() {
    let d = recorded_node();
    let o = probe(&d, &["--format", "json"]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["interfaces"]["available"][0]["mtu"], 1400);
    let events = &v["kernel_log"]["available"]["events"];
    assert_eq!(events[0]["kind"]["type"], "xid");
    assert_eq!(events[0]["kind"]["code"], 79);
    assert!(v["tcp"]["available"]["RetransSegs"] == 42);
    assert!(v["gpus"]["unavailable"].is_string());

    let o = probe(&d, &["--since", "yesterday-ish"]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("--since \"yesterday-ish\" is neither"),
        "{}",
        show(&o)
    );
    let o = probe(&d, &["--since", "@1764590591"]);
    assert_eq!(code(&o), 0, "{}", show(&o));
}
