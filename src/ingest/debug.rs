//! NCCL_DEBUG=INFO lines: which transport NCCL chose per channel and peer pair, the NCCL and CUDA
//! versions, and the variables NCCL says the environment set. These are what tell a route change
//! (P2P → SHM or NET/Socket) from a slow GPU.

use crate::results::TransportLink;

/// Where a debug line came from: `host:pid:tid [cudaDev]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub host: String,
    pub pid: Option<u32>,
    pub device: Option<u32>,
}

/// What one NCCL_DEBUG line says, as far as grading cares.
#[derive(Debug, Clone, PartialEq)]
pub enum DebugLine {
    /// `Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0`.
    Transport(Origin, TransportLink),
    /// `NCCL version 2.28.3+cuda13.0`.
    Version { nccl: String, cuda: Option<String> },
    /// `cudaDriverVersion 13000`: the CUDA version the driver supports.
    CudaDriver(String),
    /// `NCCL_P2P_DISABLE set by environment to 1.`
    EnvSet(String, String),
    /// `NCCL WARN …`: worth reporting next to a failure.
    Warn(String),
    /// Any other NCCL line: known, not needed.
    Other,
}

/// Parses a line if it is an NCCL_DEBUG line (`… NCCL INFO …` / `… NCCL WARN …`).
pub fn parse_line(line: &str) -> Option<DebugLine> {
    let (prefix, level, msg) = if let Some((p, m)) = line.split_once("NCCL INFO") {
        (p, "INFO", m)
    } else if let Some((p, m)) = line.split_once("NCCL WARN") {
        (p, "WARN", m)
    } else {
        return None;
    };
    let msg = msg.trim();
    let origin = origin(prefix);
    if level == "WARN" {
        return Some(DebugLine::Warn(msg.to_string()));
    }
    if let Some(rest) = msg.strip_prefix("Channel ")
        && let Some(link) = transport(rest, &origin)
    {
        return Some(DebugLine::Transport(origin, link));
    }
    if let Some(link) = feature(msg, &origin) {
        return Some(DebugLine::Transport(origin, link));
    }
    if let Some(rest) = msg.strip_prefix("NCCL version ") {
        let v = rest.split_whitespace().next().unwrap_or("");
        let (nccl, cuda) = match v.split_once("+cuda") {
            Some((n, c)) => (n, Some(c.to_string())),
            None => (v, None),
        };
        if !nccl.is_empty() {
            return Some(DebugLine::Version {
                nccl: nccl.to_string(),
                cuda,
            });
        }
    }
    if let Some(rest) = msg.strip_prefix("cudaDriverVersion ")
        && let Ok(code) = rest.trim().parse::<u64>()
    {
        return Some(DebugLine::CudaDriver(format!(
            "{}.{}",
            code / 1000,
            (code % 1000) / 10
        )));
    }
    if let Some((name, value)) = msg.split_once(" set by environment to ") {
        let name = name.trim();
        if !name.is_empty() && !name.contains(' ') {
            let value = value.trim().trim_end_matches('.');
            return Some(DebugLine::EnvSet(name.to_string(), value.to_string()));
        }
    }
    Some(DebugLine::Other)
}

fn origin(prefix: &str) -> Origin {
    let mut toks = prefix.split_whitespace();
    let id = toks.next().unwrap_or("");
    let device = toks
        .next()
        .and_then(|t| t.strip_prefix('[')?.strip_suffix(']')?.parse().ok());
    let mut parts = id.rsplitn(3, ':');
    let _tid = parts.next();
    let pid = parts.next().and_then(|p| p.parse().ok());
    let host = parts.next().unwrap_or(id).to_string();
    Origin { host, pid, device }
}

/// `00/0 : 0[0] -> 1[1] [send] via NET/Socket/0` (the text after `Channel `).
fn transport(rest: &str, origin: &Origin) -> Option<TransportLink> {
    let (chan, rest) = rest.split_once(':')?;
    let channel: u32 = chan.trim().split('/').next()?.trim().parse().ok()?;
    let (pair, detail) = rest.split_once(" via ")?;
    let mut toks = pair.split_whitespace();
    let from = rank_of(toks.next()?)?;
    if toks.next()? != "->" {
        return None;
    }
    let to = rank_of(toks.next()?)?;
    let detail = detail.trim().to_string();
    if detail.is_empty() {
        return None;
    }
    Some(TransportLink {
        channel,
        from_rank: from,
        to_rank: to,
        transport: transport_class(&detail),
        detail,
        host: (!origin.host.is_empty()).then(|| origin.host.clone()),
        comm: None,
    })
}

/// NVLS and CollNet set up beside the rings, as links of their own class. NCCL 2.19–2.28 print
/// `NVLS comm %p headRank %d nHeads %d …` when a communicator's NVLS buffers are set up (at init,
/// or at the first NVLS collective from 2.23), and `CollNet %02d/%1d : %d [send] via
/// COLLNET/%s/%d[/GDRDMA]` per CollNet connection; `NVLS multicast support is available` only
/// says the hardware could, not that NCCL did.
fn feature(msg: &str, origin: &Origin) -> Option<TransportLink> {
    let host = (!origin.host.is_empty()).then(|| origin.host.clone());
    if let Some(rest) = msg.strip_prefix("NVLS comm ") {
        let word_after = |key: &str| {
            let mut t = rest.split_whitespace();
            t.by_ref().find(|w| *w == key)?;
            t.next()?.parse::<u64>().ok()
        };
        let head = word_after("headRank")?;
        let heads = word_after("nHeads")?;
        return Some(TransportLink {
            channel: 0,
            from_rank: head,
            to_rank: head,
            transport: "NVLS".into(),
            detail: format!("NVLS/{heads} heads"),
            host,
            comm: None,
        });
    }
    let rest = msg.strip_prefix("CollNet ")?;
    let (chan, rest) = rest.split_once(':')?;
    let channel: u32 = chan.trim().split('/').next()?.trim().parse().ok()?;
    let (who, detail) = rest.split_once(" via ")?;
    let rank: u64 = who.split_whitespace().next()?.parse().ok()?;
    let detail = detail.trim();
    if !detail.to_ascii_uppercase().starts_with("COLLNET") {
        return None;
    }
    Some(TransportLink {
        channel,
        from_rank: rank,
        to_rank: rank,
        transport: "CollNet".into(),
        detail: detail.to_string(),
        host,
        comm: None,
    })
}

/// `1[1]`, `0[1a000]` → the rank before the bracket.
fn rank_of(tok: &str) -> Option<u64> {
    tok.split('[').next()?.parse().ok()
}

/// The class a transport criterion compares: P2P, SHM, NET/IB, NET/Socket, NET (other plugins),
/// NVLS, CollNet; anything else by its first path element.
pub fn transport_class(detail: &str) -> String {
    let first = detail.split('/').next().unwrap_or(detail).trim();
    let first = first.split_whitespace().next().unwrap_or(first);
    match first {
        "NET" => {
            let second = detail.split('/').nth(1).unwrap_or("").trim();
            match second {
                "IB" => "NET/IB".into(),
                "Socket" => "NET/Socket".into(),
                _ => "NET".into(),
            }
        }
        "P2P" | "SHM" | "NVLS" | "CollNet" => first.to_string(),
        other if other.eq_ignore_ascii_case("collnet") => "CollNet".into(),
        other => other.to_string(),
    }
}

pub use crate::plan::transport_rule::class_satisfies;

#[cfg(test)]
mod tests {
    use super::*;

    fn link(line: &str) -> TransportLink {
        match parse_line(line) {
            Some(DebugLine::Transport(_, l)) => l,
            other => panic!("not a transport: {other:?}"),
        }
    }

    #[test]
    fn fixture_transport_lines() {
        let l =
            link("vm:1869:1957 [0] NCCL INFO Channel 07/0 : 0[0] -> 1[1] via P2P/direct pointer");
        assert_eq!(
            (l.channel, l.from_rank, l.to_rank, l.transport.as_str()),
            (7, 0, 1, "P2P")
        );
        assert_eq!(l.detail, "P2P/direct pointer");
        assert_eq!(l.host.as_deref(), Some("vm"));
        let l =
            link("vm:2051:2138 [1] NCCL INFO Channel 01/0 : 1[1] -> 0[0] [send] via NET/Socket/0");
        assert_eq!((l.channel, l.transport.as_str()), (1, "NET/Socket"));
        let l = link("vm:2188:2188 [1] NCCL INFO Channel 23/0 : 1[1] -> 0[0] via P2P/CUMEM");
        assert_eq!((l.channel, l.transport.as_str()), (23, "P2P"));
        let l =
            link("localhost:24162:24189 [1] NCCL INFO Channel 01 : 1[1] -> 0[0] via SHM/direct");
        assert_eq!((l.channel, l.transport.as_str()), (1, "SHM"));
        let l = link(
            "n1:1:2 [3] NCCL INFO Channel 00/02 : 0[1a000] -> 1[1b000] [send] via NET/IB/0/GDRDMA",
        );
        assert_eq!(
            (l.from_rank, l.to_rank, l.transport.as_str()),
            (0, 1, "NET/IB")
        );
        assert_eq!(transport_class("NET/AWS Libfabric/0"), "NET");
        assert_eq!(transport_class("NVLS"), "NVLS");
    }

    #[test]
    fn nvls_and_collnet_setup_lines_are_links_of_their_own_class() {
        // NCCL 2.19.3 and 2.28.9 wording (tests/data/nccl-lines/README.md).
        let l = link(
            "n:1:2 [0] NCCL INFO NVLS comm 0x55d5c8a0b2c0 headRank 3 nHeads 8 buffSize 1048576 memSize 2097152 nvlsPerRankSize 201326592 nvlsTotalSize 1610612736",
        );
        assert_eq!((l.transport.as_str(), l.from_rank), ("NVLS", 3));
        assert_eq!(l.detail, "NVLS/8 heads");
        let l = link(
            "n:1:2 [0] NCCL INFO NVLS comm 0x5633b1f4a120 headRank 0 nHeads 4 nvlsRanks 8 buffSize 1048576 nvlsPerRankSize 1 nvlsTotalSize 1",
        );
        assert_eq!(l.detail, "NVLS/4 heads");
        let l = link("n:1:2 [0] NCCL INFO CollNet 01/1 : 5 [receive] via COLLNET/SHARP/0/GDRDMA");
        assert_eq!(
            (l.channel, l.from_rank, l.transport.as_str()),
            (1, 5, "CollNet")
        );
        // Support alone is not use; a damaged line is not a link.
        for other in [
            "n:1:2 [0] NCCL INFO NVLS multicast support is available on dev 0 (NVLS_NCHANNELS 16)",
            "n:1:2 [0] NCCL INFO NVLS comm 0x1 headRank x nHeads 8",
            "n:1:2 [0] NCCL INFO CollNet 00/0 : 0 [send] via NET/IB/0",
            "n:1:2 [0] NCCL INFO 24 coll channels, 24 collnet channels, 16 nvls channels, 32 p2p channels, 32 p2p channels per peer",
        ] {
            assert_eq!(parse_line(other), Some(DebugLine::Other), "{other}");
        }
    }

    #[test]
    fn other_lines() {
        // The ring listing is a Channel line without a transport.
        assert_eq!(
            parse_line("vm:1869:1949 [0] NCCL INFO Channel 00/24 : 0 1"),
            Some(DebugLine::Other)
        );
        assert_eq!(
            parse_line("vm:2051:2051 [0] NCCL INFO NCCL version 2.28.3+cuda13.0"),
            Some(DebugLine::Version {
                nccl: "2.28.3".into(),
                cuda: Some("13.0".into())
            })
        );
        assert_eq!(
            parse_line("vm:2051:2051 [0] NCCL INFO cudaDriverVersion 13000"),
            Some(DebugLine::CudaDriver("13.0".into()))
        );
        assert_eq!(
            parse_line("vm:2051:2132 [1] NCCL INFO NCCL_SHM_DISABLE set by environment to 1."),
            Some(DebugLine::EnvSet("NCCL_SHM_DISABLE".into(), "1".into()))
        );
        assert!(matches!(
            parse_line("h:1:2 [0] NCCL WARN NET/IB : Got async event"),
            Some(DebugLine::Warn(_))
        ));
        assert_eq!(parse_line("     8   2  float sum -1 1 2 3 0 1 2 3 0"), None);
    }

    #[test]
    fn class_matching() {
        assert!(class_satisfies("P2P", "P2P"));
        assert!(class_satisfies("NET/IB", "NET"));
        assert!(!class_satisfies("NET/Socket", "NET/IB"));
        assert!(!class_satisfies("SHM", "P2P"));
    }
}
