//! A snapshot as lines a person reads (`baton probe`): one line per source or device, counters
//! shown only where they are not zero, each unavailable source with its reason.

use std::collections::BTreeMap;

use super::{Snapshot, Sourced};

/// The snapshot as text, a line each.
pub fn human(s: &Snapshot) -> String {
    let sw = &s.software;
    let mut out = vec![format!(
        "{} · baton {} · probe took {} ms",
        sw.hostname, sw.baton, s.took_ms
    )];
    out.push(format!("kernel: {}", text(&sw.kernel, |k| k.clone())));
    out.push(format!(
        "nvidia driver: {}",
        text(&sw.nvidia_driver, |k| k.clone())
    ));
    out.push(format!(
        "NCCL: {}",
        text(&sw.nccl, |n| format!("{} ({})", n.version, n.path))
    ));
    out.push(format!("MPI: {}", text(&sw.mpi, |m| m.clone())));
    out.push(format!(
        "nvidia_peermem: {} · fabric manager: {}",
        if sw.peermem_loaded {
            "loaded"
        } else {
            "not loaded"
        },
        text(&sw.fabric_manager, |f| f.clone())
    ));
    section(&mut out, "GPUs", &s.gpus, gpus);
    section(&mut out, "HCAs", &s.hcas, |h| {
        h.iter().flat_map(hca).collect()
    });
    section(&mut out, "interfaces", &s.interfaces, |i| {
        i.iter()
            .map(|i| {
                format!(
                    "  {}: mtu {} · speed {} · carrier {}{}",
                    i.name,
                    opt(i.mtu),
                    i.speed_mbps.map_or("-".into(), |s| format!("{s} Mb/s")),
                    i.carrier.map_or("-", |c| if c { "up" } else { "down" }),
                    counts(&i.counters)
                )
            })
            .collect()
    });
    section(&mut out, "TCP", &s.tcp, |t| {
        let get = |k: &str| t.get(k).map_or("-".into(), |v| v.to_string());
        vec![format!(
            "  RetransSegs {} · OutSegs {} · InErrs {}",
            get("RetransSegs"),
            get("OutSegs"),
            get("InErrs")
        )]
    });
    section(&mut out, "PCIe", &s.pci, |p| {
        p.iter()
            .map(|d| {
                let aer: BTreeMap<String, u64> = d
                    .aer
                    .values()
                    .flatten()
                    .filter(|(k, _)| k.starts_with("TOTAL_"))
                    .map(|(k, v)| (k.clone(), *v))
                    .collect();
                format!(
                    "  {} {}: {} x{} (max {} x{}){}",
                    d.address,
                    d.kind,
                    d.current_link_speed.as_deref().unwrap_or("-"),
                    opt(d.current_link_width),
                    d.max_link_speed.as_deref().unwrap_or("-"),
                    opt(d.max_link_width),
                    counts(&aer)
                )
            })
            .collect()
    });
    section(&mut out, "kernel log", &s.kernel_log, |k| {
        let mut l = vec![format!("  {} events from {}", k.events.len(), k.source)];
        l.extend(k.events.iter().map(|e| {
            format!(
                "  {} {}: {}",
                super::delta::clock(e.at_unix_ms),
                e.kind.short(),
                e.line
            )
        }));
        l
    });
    out.join("\n") + "\n"
}

fn text<T>(s: &Sourced<T>, f: impl Fn(&T) -> String) -> String {
    match s {
        Sourced::Available(v) => f(v),
        Sourced::Unavailable(why) => format!("unavailable ({why})"),
    }
}

fn section<T>(out: &mut Vec<String>, name: &str, s: &Sourced<T>, f: impl Fn(&T) -> Vec<String>) {
    match s {
        Sourced::Available(v) => {
            let lines = f(v);
            out.push(format!(
                "{name}:{}",
                if lines.is_empty() { " none" } else { "" }
            ));
            out.extend(lines);
        }
        Sourced::Unavailable(why) => out.push(format!("{name}: unavailable ({why})")),
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// ` · name n, …` of the counters that are not zero.
fn counts(c: &BTreeMap<String, u64>) -> String {
    let nonzero: Vec<String> = c
        .iter()
        .filter(|(_, v)| **v != 0)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if nonzero.is_empty() {
        String::new()
    } else {
        format!(" · {}", nonzero.join(", "))
    }
}

fn gpus(g: &super::nvml::Gpus) -> Vec<String> {
    let mut l = vec![format!(
        "  driver {} · CUDA driver {}",
        g.driver_version.as_deref().unwrap_or("-"),
        g.cuda_driver_version
            .map_or("-".into(), |v| format!("{}.{}", v / 1000, v % 1000 / 10))
    )];
    for d in &g.devices {
        let active = d.nvlinks.iter().filter(|l| l.active).count();
        l.push(format!(
            "  GPU{} {} {} · serial {} · VBIOS {} · {} · ECC {} · {}°C {} W · PCIe Gen{} x{} (max Gen{} x{}) · NVLink {active}/{} active · throttle {}{}",
            d.index,
            d.name.as_deref().unwrap_or("-"),
            d.uuid.as_deref().unwrap_or("-"),
            d.serial.as_deref().unwrap_or("-"),
            d.vbios.as_deref().unwrap_or("-"),
            d.pci_bus_id.as_deref().unwrap_or("-"),
            d.ecc_enabled.map_or("-", |e| if e { "on" } else { "off" }),
            opt(d.temperature_c),
            d.power_w.map_or("-".into(), |p| format!("{p:.0}")),
            opt(d.pcie_gen),
            opt(d.pcie_width),
            opt(d.pcie_gen_max),
            opt(d.pcie_width_max),
            d.nvlinks.len(),
            if d.throttle_reasons.is_empty() { "none".into() } else { d.throttle_reasons.join(",") },
            counts(&d.counters),
        ));
        let clocks: Vec<String> = d
            .clocks_mhz
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        l.push(format!("    clocks MHz: {}", clocks.join(", ")));
        if !d.unavailable.is_empty() {
            let why: Vec<String> = d
                .unavailable
                .iter()
                .map(|(k, v)| format!("{k} ({v})"))
                .collect();
            l.push(format!("    unavailable: {}", why.join(", ")));
        }
    }
    l
}

fn hca(h: &super::ib::Hca) -> Vec<String> {
    let netdevs = match h.netdevs.as_slice() {
        [] => String::new(),
        n => format!(" ({})", n.join(",")),
    };
    let mut l = vec![format!(
        "  {}{netdevs} fw {} · board {}",
        h.name,
        h.fw_ver.as_deref().unwrap_or("-"),
        h.board_id.as_deref().unwrap_or("-")
    )];
    l.extend(h.ports.iter().map(|p| {
        format!(
            "    port {}: {} {} {} {}{}{}",
            p.port,
            p.state.as_deref().unwrap_or("-"),
            p.phys_state.as_deref().unwrap_or("-"),
            p.rate.as_ref().map_or("-", |r| r.text.as_str()),
            p.link_layer.as_deref().unwrap_or("-"),
            counts(&p.counters),
            counts(&p.hw_counters)
        )
    }));
    l
}
