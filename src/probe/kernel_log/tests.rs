use super::*;
use proptest::prelude::*;

/// Xid lines in the forms NVIDIA's Xid catalog and the driver print them (R535–R570).
const XIDS: &[(u32, &str)] = &[
    (
        13,
        "NVRM: Xid (PCI:0000:3b:00): 13, pid=51234, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 1): Out Of Range Address",
    ),
    (
        31,
        "NVRM: Xid (PCI:0000:3b:00): 31, pid=51234, name=python3, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f_2c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
    ),
    (
        43,
        "NVRM: Xid (PCI:0000:3b:00): 43, pid=51234, name=python3, Ch 00000010",
    ),
    (
        48,
        "NVRM: Xid (PCI:0000:3b:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
    ),
    (
        63,
        "NVRM: Xid (PCI:0000:3b:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row (0x00000000000e1c27) is marked for remapping, reset gpu to activate.",
    ),
    (
        64,
        "NVRM: Xid (PCI:0000:3b:00): 64, pid='<unknown>', name=<unknown>, Row Remapper: Failed to remap row (0x00000000000e1c27), all rows in bank are in use.",
    ),
    (
        74,
        "NVRM: Xid (PCI:0000:3b:00): 74, pid=51234, name=python3, NVLink: fatal error detected on link 3(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
    ),
    (
        79,
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=51234, name=python3, GPU has fallen off the bus.",
    ),
    (
        92,
        "NVRM: Xid (PCI:0000:3b:00): 92, pid='<unknown>', name=<unknown>, High single-bit ECC error rate",
    ),
    (
        94,
        "NVRM: Xid (PCI:0000:3b:00): 94, pid=51234, name=python3, Contained: SM (0x1). RST: No, D-RST: No",
    ),
    (
        95,
        "NVRM: Xid (PCI:0000:3b:00): 95, pid=51234, name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No",
    ),
    (
        119,
        "NVRM: Xid (PCI:0000:3b:00): 119, pid=51234, name=python3, Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).",
    ),
    (
        120,
        "NVRM: Xid (PCI:0000:3b:00): 120, pid='<unknown>', name=<unknown>, GSP task exception: (pc=0x12b4f0, ra=0x12b4ba, cause=0x2, tval=0x6b6d70)",
    ),
];

#[test]
fn every_catalogued_xid_is_named_with_its_device_and_code() {
    for (code, line) in XIDS {
        let kind = classify(line).unwrap_or_else(|| panic!("not an Xid: {line}"));
        assert_eq!(
            kind,
            EventKind::Xid {
                device: "0000:3b:00".into(),
                code: *code
            },
            "{line}"
        );
        assert_eq!(kind.short(), format!("Xid {code}"));
    }
}

#[test]
fn sxid_mlx5_links_and_aer_are_told_apart() {
    let s =
        classify("nvidia-nvswitch3: SXid (PCI:0000:c6:00.0): 20034, Fatal, Link 30 LTSSM Fault Up");
    assert_eq!(
        s,
        Some(EventKind::Sxid {
            device: "0000:c6:00.0".into(),
            code: 20034,
            severity: "Fatal".into()
        })
    );
    let down = classify("mlx5_core 0000:0c:00.0 ib0: Link down").unwrap();
    assert_eq!(down.short(), "0000:0c:00.0 ib0 link down");
    let up = classify("mlx5_core 0000:0c:00.0 enp12s0np0: Link up");
    assert!(matches!(up, Some(EventKind::Link { up: true, .. })));
    let aer = classify("pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0");
    assert_eq!(
        aer,
        Some(EventKind::Aer {
            device: "0000:01:00.0".into()
        })
    );
    let own = classify(
        "nvidia 0000:3b:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)",
    );
    assert_eq!(
        own,
        Some(EventKind::Aer {
            device: "0000:3b:00.0".into()
        })
    );
    assert_eq!(classify("EXT4-fs (nvme0n1p2): mounted filesystem"), None);
    assert_eq!(
        classify("mlx5_core 0000:0c:00.0: firmware version: 28.39.1002"),
        None
    );
}

#[test]
fn kmsg_records_and_journal_lines_give_time_and_message() {
    let r = "4,1234,5678901234,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.\n";
    let (seq, usec, msg) = parse_kmsg(r).unwrap();
    assert_eq!((seq, usec), (1234, 5678901234));
    assert!(msg.ends_with("bus."));
    assert_eq!(parse_kmsg(" SUBSYSTEM=pci"), None);
    assert_eq!(parse_kmsg("6,1,2,c,more;text"), Some((1, 2, "text")));
    let j = "1764590591.123456 node03 kernel: mlx5_core 0000:0c:00.0 ib0: Link down";
    assert_eq!(
        parse_journal(j),
        Some((
            1_764_590_591_123_456,
            "mlx5_core 0000:0c:00.0 ib0: Link down"
        ))
    );
    assert_eq!(
        parse_journal("1764590591.5 h kernel: x").unwrap().0,
        1_764_590_591_500_000
    );
    assert_eq!(parse_journal("-- No entries --"), None);
}

#[test]
fn a_huge_line_is_kept_cut_at_a_character_boundary() {
    let line = format!("NVRM: Xid (PCI:0000:3b:00): 79, {}", "é".repeat(100_000));
    let e = event(&line, 1).unwrap();
    assert!(e.line.len() <= LINE_LIMIT);
    let device = format!("NVRM: Xid (PCI:{}): 79, x", "a".repeat(10_000));
    match classify(&device).unwrap() {
        EventKind::Xid { device, .. } => assert_eq!(device.len(), 64),
        k => panic!("{k:?}"),
    }
    // A code too big for u32 is no Xid, not a panic.
    assert_eq!(classify("NVRM: Xid (PCI:0): 99999999999999, x"), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any bytes a hostile writer puts into the log (binary, markers half-written, huge):
    /// parsing never panics and what is kept stays bounded.
    #[test]
    fn hostile_lines_never_panic_and_stay_bounded(
        bytes in proptest::collection::vec(any::<u8>(), 0..4096),
        marker in prop::sample::select(vec!["NVRM: Xid (", "SXid (", "mlx5_core ", " AER: ", "error received: ", "PCIe Bus Error", "): ", ";", ","]),
        at in 0usize..4096,
    ) {
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        let at = (0..=at.min(text.len())).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
        text.insert_str(at, marker);
        for s in [&text[..], &format!("6,1,2,-;{text}"), &format!("1.2 h kernel: {text}")] {
            let _ = parse_kmsg(s);
            let _ = parse_journal(s);
            if let Some(e) = event(s, 0) {
                prop_assert!(e.line.len() <= LINE_LIMIT);
                match e.kind {
                    EventKind::Xid { device, .. } | EventKind::Sxid { device, .. }
                    | EventKind::Link { device, .. } | EventKind::Aer { device } => {
                        prop_assert!(device.len() <= 64)
                    }
                    EventKind::Nccl { subject, .. } => prop_assert!(subject.len() <= 64),
                }
            }
        }
    }
}
