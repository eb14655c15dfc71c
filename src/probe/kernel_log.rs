//! The kernel log lines that explain a collective's failure, told from the rest: NVIDIA Xid
//! (`NVRM: Xid (PCI:0000:3b:00): 79, pid=…, GPU has fallen off the bus.`) and NVSwitch SXid,
//! mlx5 link down/up, PCIe AER. Pure functions over text that anyone may have written into the
//! log (`/dev/kmsg` is writable by root, and drivers quote device names): nothing here panics,
//! and what is kept of a line is bounded.

use serde::{Deserialize, Serialize};

/// The most bytes of a log line kept in an event.
pub const LINE_LIMIT: usize = 512;

/// One line that matters, with when it was logged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KernelEvent {
    /// Wall-clock time, milliseconds since the Unix epoch (from the boot-relative stamp).
    pub at_unix_ms: u64,
    pub kind: EventKind,
    /// The line, cut to [`LINE_LIMIT`] bytes.
    pub line: String,
}

/// What a line says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum EventKind {
    /// A GPU's Xid: the device as the driver names it (`0000:3b:00`) and the code.
    Xid { device: String, code: u32 },
    /// An NVSwitch's SXid, with its severity (`Fatal`, `Non-fatal`).
    Sxid {
        device: String,
        code: u32,
        severity: String,
    },
    /// An mlx5 port going down or up (`0000:0c:00.0 ib0`).
    Link { device: String, up: bool },
    /// A PCIe AER report about a device.
    Aer { device: String },
    /// A line of NCCL's own output on the node (a 2.31+ diagnostics finding, a WARN, an IB
    /// port's GID table changing; `ras::diag`): what it is about and its short name.
    Nccl { subject: String, what: String },
}

impl EventKind {
    /// `Xid 79`, `SXid 20034`, `link down`, `AER`: the short name of a human line.
    pub fn short(&self) -> String {
        match self {
            EventKind::Xid { code, .. } => format!("Xid {code}"),
            EventKind::Sxid { code, .. } => format!("SXid {code}"),
            EventKind::Link { device, up } => {
                format!("{device} link {}", if *up { "up" } else { "down" })
            }
            EventKind::Aer { device } => format!("AER on {device}"),
            EventKind::Nccl { what, .. } => what.clone(),
        }
    }
}

/// A `/dev/kmsg` record, `PRIORITY,SEQ,USEC,FLAGS[,…];MESSAGE`: its sequence number, its
/// microseconds since boot and its message. Continuation lines (` KEY=value`) and anything else
/// give none.
pub fn parse_kmsg(record: &str) -> Option<(u64, u64, &str)> {
    let (head, msg) = record.split_once(';')?;
    let mut f = head.split(',');
    let _priority: u32 = f.next()?.parse().ok()?;
    let seq = f.next()?.parse().ok()?;
    let usec = f.next()?.parse().ok()?;
    Some((seq, usec, msg.trim_end_matches('\n')))
}

/// A `journalctl -k -o short-unix` line, `1733054591.123456 HOST kernel: MESSAGE`: its
/// microseconds since the epoch and its message.
pub fn parse_journal(line: &str) -> Option<(u64, &str)> {
    let (stamp, rest) = line.split_once(' ')?;
    let (secs, frac) = stamp.split_once('.').unwrap_or((stamp, "0"));
    let secs: u64 = secs.parse().ok()?;
    let frac = frac.get(..6.min(frac.len()))?;
    let micros: u64 = format!("{frac:0<6}").parse().ok()?;
    let (_, msg) = rest.split_once(" kernel: ")?;
    Some((secs.checked_mul(1_000_000)?.checked_add(micros)?, msg))
}

/// What a kernel message says, when it is one of the kinds kept.
pub fn classify(msg: &str) -> Option<EventKind> {
    xid(msg, "NVRM: Xid (")
        .map(|(device, code, _)| EventKind::Xid { device, code })
        .or_else(|| {
            let (device, code, rest) = xid(msg, "SXid (")?;
            let severity = rest.split(',').nth(1)?.trim();
            Some(EventKind::Sxid {
                device,
                code,
                severity: cut(severity, 32),
            })
        })
        .or_else(|| link(msg))
        .or_else(|| aer(msg))
}

/// `…MARKER DEVICE): CODE, REST` → (device without `PCI:`, code, `, REST`).
fn xid<'a>(msg: &'a str, marker: &str) -> Option<(String, u32, &'a str)> {
    let at = msg.find(marker)? + marker.len();
    let rest = &msg[at..];
    let (device, rest) = rest.split_once("): ")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let code = rest[..digits].parse().ok()?;
    let device = device.strip_prefix("PCI:").unwrap_or(device);
    Some((cut(device, 64), code, &rest[digits..]))
}

/// `mlx5_core 0000:0c:00.0 ib0: Link down`.
fn link(msg: &str) -> Option<EventKind> {
    let rest = msg.strip_prefix("mlx5_core ")?;
    let (device, state) = rest.rsplit_once(": ")?;
    let up = match state.trim() {
        "Link up" => true,
        "Link down" => false,
        _ => return None,
    };
    Some(EventKind::Link {
        device: cut(device, 64),
        up,
    })
}

/// `pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0`, or a device's own
/// `nvidia 0000:3b:00.0: PCIe Bus Error: severity=Corrected, …`.
fn aer(msg: &str) -> Option<EventKind> {
    if !(msg.contains(" AER: ") || msg.contains("PCIe Bus Error")) {
        return None;
    }
    let device = match msg.split_once("error received: ") {
        Some((_, d)) => d.split_whitespace().next()?,
        None => msg.split_whitespace().nth(1)?.trim_end_matches(':'),
    };
    Some(EventKind::Aer {
        device: cut(device, 64),
    })
}

/// At most `limit` bytes of `s`, cut at a character boundary.
pub fn cut(s: &str, limit: usize) -> String {
    let mut end = s.len().min(limit);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The event of a message logged at `at_unix_ms`, when it is one kept.
pub fn event(msg: &str, at_unix_ms: u64) -> Option<KernelEvent> {
    Some(KernelEvent {
        at_unix_ms,
        kind: classify(msg)?,
        line: cut(msg, LINE_LIMIT),
    })
}

#[cfg(test)]
mod tests;
