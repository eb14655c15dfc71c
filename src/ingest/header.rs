//! The `# nThread …` header and `# Rank …` device lines of every nccl-tests and rccl-tests
//! version: `nThread 1 nGpus 2 minBytes 8 …`, rccl-tests' `nThreads: 1 nGpus: 4 nRanks: 1
//! minBytes: 8 … warmupIters: 5`, and `nGpus(perProc) 1 minBytes 1 …` of wrapped builds.

use super::log::{Device, Header};
use super::sweep::{Step, Sweep};

/// Whether a line (without `#`) is the sweep header.
pub fn is_header(c: &str) -> bool {
    c.starts_with("nThread") || c.starts_with("nGpus")
}

/// The header's words in the plain nccl-tests spelling: `nThreads:` → `nThread`, `minBytes:` →
/// `minBytes`, `nGpus(perProc)` → `nGpus`, `warmupIters:` → `warmup iters:`.
fn normalise(c: &str) -> Vec<String> {
    let mut out = Vec::new();
    for t in c.split_whitespace() {
        match t {
            "nThreads:" | "nThreads" | "nThread:" => out.push("nThread".into()),
            "nGpus(perProc)" | "nGpus:" => out.push("nGpus".into()),
            "warmupIters:" => {
                out.push("warmup".into());
                out.push("iters:".into());
            }
            "nRanks:" | "minBytes:" | "maxBytes:" => out.push(t.trim_end_matches(':').into()),
            _ => out.push(t.into()),
        }
    }
    out
}

/// `nThread 1 nGpus 2 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 1 iters: 20
/// agg iters: 1 validation: 1 graph: 0 unalign: 0`.
pub fn parse_header(c: &str) -> Option<Header> {
    let toks = normalise(c);
    let toks: Vec<&str> = toks.iter().map(String::as_str).collect();
    let after = |pair: &[&str]| -> Option<&str> {
        toks.windows(pair.len() + 1)
            .find(|w| w[..pair.len()] == *pair)
            .map(|w| w[pair.len()])
    };
    let num = |pair: &[&str]| after(pair).and_then(|v| v.parse::<u64>().ok());
    let small = |pair: &[&str], default: u32| {
        num(pair)
            .and_then(|v| u32::try_from(v).ok())
            .unwrap_or(default)
    };
    let step_tok = after(&["step:"])?;
    let (v, kind) = step_tok.split_once('(')?;
    let v: u64 = v.parse().ok()?;
    let step = if kind.starts_with("factor") {
        Step::Factor(v)
    } else {
        Step::Bytes(v)
    };
    // `iters:` appears after `warmup` and `agg` too; the plain one follows `iters:` of warmup.
    let iters = toks
        .windows(2)
        .enumerate()
        .find(|(i, w)| {
            w[0] == "iters:" && *i > 0 && toks[i - 1] != "warmup" && toks[i - 1] != "agg"
        })
        .and_then(|(_, w)| w[1].parse().ok())
        .unwrap_or(20);
    Some(Header {
        nthreads: small(&["nThread"], 1),
        ngpus: small(&["nGpus"], 1),
        sweep: Sweep {
            min: num(&["minBytes"])?,
            max: num(&["maxBytes"])?,
            step,
        },
        warmup: small(&["warmup", "iters:"], 1),
        iters,
        agg_iters: small(&["agg", "iters:"], 1),
        validation: small(&["validation:"], 1),
        graph: small(&["graph:"], 0),
    })
}

/// ` 0 Group 0 Pid 1476 on vm device 0 [0000:00:06] NVIDIA H200` (Group is absent in older
/// versions; the bus id may read `[0x1b]`).
pub fn parse_device(rest: &str) -> Option<Device> {
    let toks: Vec<&str> = rest.split_whitespace().collect();
    let rank = toks.first()?.parse().ok()?;
    let val = |key: &str| {
        toks.iter()
            .position(|t| *t == key)
            .and_then(|i| toks.get(i + 1))
    };
    let group = val("Group").and_then(|v| v.parse().ok()).unwrap_or(0);
    let pid = val("Pid").and_then(|v| v.parse().ok());
    let host = val("on")?.to_string();
    let dpos = toks.iter().position(|t| *t == "device")?;
    let device = toks.get(dpos + 1)?.parse().ok()?;
    let mut name_from = dpos + 2;
    let pci = toks.get(dpos + 2).and_then(|t| {
        let inner = t.strip_prefix('[')?.strip_suffix(']')?;
        name_from += 1;
        Some(inner.to_string())
    });
    let name = toks
        .get(name_from..)
        .map(|n| n.join(" "))
        .filter(|n| !n.is_empty());
    Some(Device {
        rank,
        group,
        pid,
        host,
        device,
        pci,
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_devices() {
        let h = parse_header("nThread 1 nGpus 2 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 0 graph: 3 unalign: 0").unwrap();
        assert_eq!(
            (
                h.nthreads,
                h.ngpus,
                h.iters,
                h.warmup,
                h.validation,
                h.graph
            ),
            (1, 2, 20, 1, 0, 3)
        );
        assert_eq!(h.sweep.step, Step::Factor(2));
        let h = parse_header("nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 1048576(bytes) warmup iters: 5 iters: 50 agg iters: 2 validation: 1 graph: 0").unwrap();
        assert_eq!((h.iters, h.warmup, h.agg_iters), (50, 5, 2));
        assert_eq!(h.sweep.step, Step::Bytes(1048576));
        let d = parse_device(
            "  1 Group  3 Pid   1476 on         vm device  1 [0000:00:07] NVIDIA H200",
        )
        .unwrap();
        assert_eq!(
            (d.rank, d.group, d.pid, d.host.as_str(), d.device),
            (1, 3, Some(1476), "vm", 1)
        );
        assert_eq!(d.pci.as_deref(), Some("0000:00:07"));
        assert_eq!(d.name.as_deref(), Some("NVIDIA H200"));
        let d = parse_device("  1 Pid  12346 on   nodeA device  1 [0x43] NVIDIA H100 80GB HBM3")
            .unwrap();
        assert_eq!(
            (d.group, d.name.as_deref()),
            (0, Some("NVIDIA H100 80GB HBM3"))
        );
    }

    #[test]
    fn rccl_and_wrapped_headers() {
        let h = parse_header("nThreads: 1 nGpus: 4 nRanks: 1 minBytes: 8 maxBytes: 134217728 step: 2(factor) warmupIters: 5 iters: 20 validation: 1").unwrap();
        assert_eq!(
            (h.ngpus, h.warmup, h.iters, h.sweep.max),
            (4, 5, 20, 134217728)
        );
        let h = parse_header("nGpus(perProc) 1 minBytes 1 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0").unwrap();
        assert_eq!((h.nthreads, h.ngpus, h.sweep.min), (1, 1, 1));
        let d = parse_device(
            "  0 Pid 117738 on sharbox-ultra device  0 [0000:63:00.0] AMD Instinct MI210",
        )
        .unwrap();
        assert_eq!(d.pci.as_deref(), Some("0000:63:00.0"));
    }
}
