//! What moved between two snapshots of a node: counters that climbed (a flapped link's
//! `carrier_changes`, an IB port's `link_downed`, TCP retransmits, ECC and NVLink errors, AER),
//! states that changed (a port gone `DOWN`, a GPU dropped to Gen3), kernel log lines that
//! appeared. Each change has a short human line a verdict can cite (`eth0 carrier_changes +2`,
//! `mlx5_4 link_downed +3`, `Xid 79 at 12:03:11`). A counter that went down (a driver reload
//! reset it) is not a change: nothing climbed that we can count.

use std::collections::BTreeMap;
use std::fmt::Display;

use serde::{Deserialize, Serialize};

use super::{Snapshot, Sourced};

/// Everything that moved, in the order of the snapshot's sources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct Delta {
    pub changes: Vec<Change>,
}

/// One thing that moved: on what (`eth0`, `mlx5_4`, `GPU3`, `tcp`), which fact, and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Change {
    pub subject: String,
    pub what: String,
    pub kind: ChangeKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum ChangeKind {
    Increased { before: u64, after: u64 },
    Changed { before: String, after: String },
    Event { at_unix_ms: u64, line: String },
}

/// Counters that climb in normal operation on a healthy node (a veth drops IPv6 router
/// solicitations, a busy socket retransmits now and then): recorded, never cited.
/// `OutSegs` is recorded to judge `RetransSegs` by.
const NOT_CITED: &[&str] = &[
    "rx_dropped",
    "tx_dropped",
    "OutSegs",
    "InErrs",
    "AttemptFails",
    "EstabResets",
];

impl Change {
    /// Whether a verdict cites this change as evidence against its node: a kernel event (Xid,
    /// link, AER), a state that changed, or a counter of faults (ECC, remapped rows, NVLink, IB
    /// and PCIe errors, link_downed, carrier_changes, retransmits, throttle reasons).
    pub fn cited(&self) -> bool {
        match self.kind {
            ChangeKind::Increased { .. } => !NOT_CITED.contains(&self.what.as_str()),
            ChangeKind::Changed { .. } | ChangeKind::Event { .. } => true,
        }
    }

    /// Whether the change is the node's own: everything but the TCP counters, which both ends
    /// of a bad path count (a node retransmits to a partner whose link flaps).
    pub fn local(&self) -> bool {
        self.subject != "tcp"
    }

    /// Whether the change alone can single its node out of a failing set: a local change that
    /// is no report of NCCL's (`NCCL WARN …`, `NCCL DIAG …`), which a healthy rank prints as
    /// often as a faulty one (the survivor of a dead peer warns that it is gone). An IB port's
    /// GID table changing is the node's own.
    pub fn isolates(&self) -> bool {
        self.local() && !self.what.starts_with("NCCL ")
    }

    /// `eth0 carrier_changes +2`, `mlx5_4 state ACTIVE → DOWN`, `Xid 79 at 12:03:11`.
    pub fn line(&self) -> String {
        match &self.kind {
            ChangeKind::Increased { before, after } => {
                format!("{} {} +{}", self.subject, self.what, after - before)
            }
            ChangeKind::Changed { before, after } => {
                format!("{} {} {before} → {after}", self.subject, self.what)
            }
            ChangeKind::Event { at_unix_ms, .. } => {
                format!("{} at {}", self.what, clock(*at_unix_ms))
            }
        }
    }
}

/// `12:03:11` (UTC) of a time in milliseconds since the epoch.
pub fn clock(unix_ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(unix_ms);
    humantime::format_rfc3339_seconds(t).to_string()[11..19].to_string()
}

/// The TCP counters a lossy or flapping path moves.
const TCP: &[&str] = &[
    "OutSegs",
    "RetransSegs",
    "InErrs",
    "InCsumErrors",
    "EstabResets",
    "AttemptFails",
];

/// What moved from `before` to `after` (snapshots of one node).
pub fn delta(before: &Snapshot, after: &Snapshot) -> Delta {
    let mut d = Delta::default();
    both(&before.interfaces, &after.interfaces, |b, a| {
        for (old, new) in pairs(b, a, |i| i.name.clone()) {
            d.counters(&new.name, &old.counters, &new.counters);
            d.changed(&new.name, "mtu", old.mtu, new.mtu);
            d.changed(&new.name, "speed_mbps", old.speed_mbps, new.speed_mbps);
            d.changed(&new.name, "carrier", old.carrier, new.carrier);
        }
    });
    both(&before.hcas, &after.hcas, |b, a| hcas(&mut d, b, a));
    both(&before.tcp, &after.tcp, |b, a| {
        let keep = |m: &BTreeMap<String, i64>| -> BTreeMap<String, u64> {
            m.iter()
                .filter(|(k, v)| TCP.contains(&k.as_str()) && **v >= 0)
                .map(|(k, v)| (k.clone(), *v as u64))
                .collect()
        };
        d.counters("tcp", &keep(b), &keep(a));
    });
    both(&before.pci, &after.pci, |b, a| {
        for (old, new) in pairs(b, a, |p| p.address.clone()) {
            for (kind, counts) in &new.aer {
                if let Some(was) = old.aer.get(kind) {
                    d.counters(&new.address, was, counts);
                }
            }
            let link = |s: &Option<String>, w: Option<u64>| {
                s.as_ref().map(|s| format!("{s} x{}", w.unwrap_or(0)))
            };
            let was = link(&old.current_link_speed, old.current_link_width);
            let now = link(&new.current_link_speed, new.current_link_width);
            d.changed(&new.address, "link", was, now);
        }
    });
    both(&before.gpus, &after.gpus, |b, a| {
        gpus(&mut d, &b.devices, &a.devices)
    });
    if let (Some(b), Some(a)) = (before.kernel_log.get(), after.kernel_log.get()) {
        for e in &a.events {
            if e.at_unix_ms + 1000 >= before.taken_unix_ms && !b.events.contains(e) {
                d.changes.push(Change {
                    subject: subject_of(&e.kind),
                    what: e.kind.short(),
                    kind: ChangeKind::Event {
                        at_unix_ms: e.at_unix_ms,
                        line: e.line.clone(),
                    },
                });
            }
        }
    }
    d
}

fn subject_of(k: &super::kernel_log::EventKind) -> String {
    use super::kernel_log::EventKind::*;
    match k {
        Xid { device, .. } | Sxid { device, .. } | Link { device, .. } | Aer { device } => {
            device.clone()
        }
        Nccl { subject, .. } => subject.clone(),
    }
}

fn hcas(d: &mut Delta, b: &[super::ib::Hca], a: &[super::ib::Hca]) {
    for (old, new) in pairs(b, a, |h| h.name.clone()) {
        for (op, np) in pairs(&old.ports, &new.ports, |p| p.port.to_string()) {
            let s = match np.port {
                1 => new.name.clone(),
                n => format!("{}/{n}", new.name),
            };
            d.counters(&s, &op.counters, &np.counters);
            d.counters(&s, &op.hw_counters, &np.hw_counters);
            d.changed(&s, "state", op.state.clone(), np.state.clone());
            d.changed(
                &s,
                "phys_state",
                op.phys_state.clone(),
                np.phys_state.clone(),
            );
            let rate = |p: &super::ib::Port| p.rate.as_ref().map(|r| r.text.clone());
            d.changed(&s, "rate", rate(op), rate(np));
        }
    }
}

fn gpus(d: &mut Delta, b: &[super::nvml::Gpu], a: &[super::nvml::Gpu]) {
    for (old, new) in pairs(b, a, |g| g.uuid.clone().unwrap_or(g.index.to_string())) {
        let s = format!("GPU{}", new.index);
        d.counters(&s, &old.counters, &new.counters);
        for (ol, nl) in pairs(&old.nvlinks, &new.nvlinks, |l| l.link.to_string()) {
            let what = |k: &str| format!("nvlink{} {k}", nl.link);
            let prefixed = |m: &BTreeMap<String, u64>| -> BTreeMap<String, u64> {
                m.iter().map(|(k, v)| (what(k), *v)).collect()
            };
            d.counters(&s, &prefixed(&ol.errors), &prefixed(&nl.errors));
            d.changed(&s, &what("active"), Some(ol.active), Some(nl.active));
        }
        for r in &new.throttle_reasons {
            if r != "gpu_idle" && !old.throttle_reasons.contains(r) {
                d.changes.push(Change {
                    subject: s.clone(),
                    what: "throttle".into(),
                    kind: ChangeKind::Changed {
                        before: "-".into(),
                        after: r.clone(),
                    },
                });
            }
        }
        d.changed(&s, "pcie_gen", old.pcie_gen, new.pcie_gen);
        d.changed(&s, "pcie_width", old.pcie_width, new.pcie_width);
    }
}

impl Delta {
    fn counters(&mut self, subject: &str, b: &BTreeMap<String, u64>, a: &BTreeMap<String, u64>) {
        for (what, after) in a {
            match b.get(what) {
                Some(before) if after > before => self.changes.push(Change {
                    subject: subject.to_string(),
                    what: what.clone(),
                    kind: ChangeKind::Increased {
                        before: *before,
                        after: *after,
                    },
                }),
                _ => {}
            }
        }
    }

    fn changed<T: Display + PartialEq>(
        &mut self,
        subject: &str,
        what: &str,
        b: Option<T>,
        a: Option<T>,
    ) {
        if let (Some(b), Some(a)) = (b, a)
            && b != a
        {
            self.changes.push(Change {
                subject: subject.to_string(),
                what: what.to_string(),
                kind: ChangeKind::Changed {
                    before: b.to_string(),
                    after: a.to_string(),
                },
            });
        }
    }

    /// One line per change.
    pub fn lines(&self) -> Vec<String> {
        self.changes.iter().map(Change::line).collect()
    }

    /// The changes a verdict cites ([`Change::cited`]).
    pub fn cited(&self) -> Vec<Change> {
        self.changes.iter().filter(|c| c.cited()).cloned().collect()
    }
}

/// The changes of several deltas of one node as one: a counter's climbs added up (its first
/// before to the sum), a state from its first before to its last after (left out when it came
/// back), each kernel event once.
pub fn summed<'a>(changes: impl IntoIterator<Item = &'a Change>) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
    for c in changes {
        if matches!(c.kind, ChangeKind::Event { .. }) {
            if !out.contains(c) {
                out.push(c.clone());
            }
            continue;
        }
        let same = out
            .iter_mut()
            .find(|o| o.subject == c.subject && o.what == c.what);
        match (same.map(|o| &mut o.kind), &c.kind) {
            (
                Some(ChangeKind::Increased { after, .. }),
                ChangeKind::Increased {
                    before: b,
                    after: a,
                },
            ) => *after += a - b,
            (Some(ChangeKind::Changed { after, .. }), ChangeKind::Changed { after: a, .. }) => {
                *after = a.clone()
            }
            _ => out.push(c.clone()),
        }
    }
    out.retain(|c| !matches!(&c.kind, ChangeKind::Changed { before, after } if before == after));
    out
}

/// Runs `f` when both snapshots have the source.
fn both<T>(b: &Sourced<T>, a: &Sourced<T>, f: impl FnOnce(&T, &T)) {
    if let (Some(b), Some(a)) = (b.get(), a.get()) {
        f(b, a)
    }
}

/// The items of `a` with the item of `b` of the same key; items on one side only are left out
/// (a device that appeared or vanished is a change of inventory, not of a counter).
fn pairs<'a, T>(b: &'a [T], a: &'a [T], key: impl Fn(&T) -> String) -> Vec<(&'a T, &'a T)> {
    let old: BTreeMap<String, &T> = b.iter().map(|x| (key(x), x)).collect();
    a.iter()
        .filter_map(|x| Some((*old.get(&key(x))?, x)))
        .collect()
}

#[cfg(test)]
mod tests;
