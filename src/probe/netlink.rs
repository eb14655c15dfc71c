//! The interfaces of this process's network namespace through rtnetlink (`RTM_GETLINK`), which
//! follows the reader's namespace as `/proc/net` does. `/sys/class/net` shows the namespace
//! sysfs was mounted in instead: a process moved into another namespace without a fresh sysfs
//! (`nsenter --net`, a container sharing the host's /sys, a simulated node's slurmd and so every
//! rank it starts) would otherwise record the host's interfaces as its own. Bounded: one socket
//! with a receive deadline, at most [`MAX_BYTES`] of replies.

use std::collections::BTreeMap;

/// The most reply bytes read from the kernel (a few hundred interfaces at ~1–2 KiB each).
const MAX_BYTES: usize = 4 << 20;
/// How long one reply may take.
const DEADLINE_MS: i64 = 1000;

const IFLA_IFNAME: u16 = 3;
const IFLA_MTU: u16 = 4;
const IFLA_OPERSTATE: u16 = 16;
const IFLA_STATS64: u16 = 23;
const IFLA_CARRIER: u16 = 33;
const IFLA_CARRIER_CHANGES: u16 = 35;

/// One interface as rtnetlink says it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Link {
    pub index: u32,
    pub name: String,
    pub mtu: Option<u64>,
    pub carrier: Option<bool>,
    /// As sysfs' `operstate` words it (`up`, `down`, `lowerlayerdown`, …).
    pub operstate: Option<String>,
    /// `carrier_changes`, `{rx,tx}_{errors,dropped}` (the names of sysfs' files).
    pub counters: BTreeMap<String, u64>,
}

/// Every interface of this network namespace, or why not.
pub fn links() -> Result<Vec<Link>, String> {
    let fd = Socket::open()?;
    fd.request()?;
    let mut links = Vec::new();
    let mut read = 0usize;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = fd.recv(&mut buf)?;
        read += n;
        if read > MAX_BYTES {
            return Err(format!("rtnetlink replied over {MAX_BYTES} bytes"));
        }
        if parse(&buf[..n], &mut links)? {
            return Ok(links);
        }
    }
}

/// Adds the links of one reply datagram to `out`; true at the dump's end.
pub fn parse(mut buf: &[u8], out: &mut Vec<Link>) -> Result<bool, String> {
    while buf.len() >= 16 {
        let len = u32_at(buf, 0) as usize;
        let kind = u16_at(buf, 4);
        if len < 16 || len > buf.len() {
            return Err(format!("rtnetlink message of {len} bytes in {}", buf.len()));
        }
        match kind {
            3 => return Ok(true), // NLMSG_DONE
            2 => return Err(format!("rtnetlink error {}", -(u32_at(buf, 16) as i32))),
            16 if len >= 32 => out.push(link(&buf[16..len])),
            _ => {}
        }
        buf = &buf[align(len).min(buf.len())..];
    }
    Ok(false)
}

/// One `RTM_NEWLINK` payload: `ifinfomsg` (16 bytes), then attributes.
fn link(msg: &[u8]) -> Link {
    let mut l = Link {
        index: u32_at(msg, 4),
        ..Link::default()
    };
    let mut a = &msg[16..];
    while a.len() >= 4 {
        let len = u16_at(a, 0) as usize;
        if len < 4 || len > a.len() {
            break;
        }
        attribute(&mut l, u16_at(a, 2) & 0x3fff, &a[4..len]);
        a = &a[align(len).min(a.len())..];
    }
    l
}

fn attribute(l: &mut Link, kind: u16, v: &[u8]) {
    match kind {
        IFLA_IFNAME => {
            let name = v.split(|&b| b == 0).next().unwrap_or_default();
            l.name = String::from_utf8_lossy(name).into_owned();
        }
        IFLA_MTU if v.len() >= 4 => l.mtu = Some(u32_at(v, 0) as u64),
        IFLA_CARRIER if !v.is_empty() => l.carrier = Some(v[0] == 1),
        IFLA_CARRIER_CHANGES if v.len() >= 4 => {
            l.counters
                .insert("carrier_changes".into(), u32_at(v, 0) as u64);
        }
        IFLA_OPERSTATE if !v.is_empty() => l.operstate = Some(operstate(v[0]).into()),
        // rtnl_link_stats64: rx/tx packets, rx/tx bytes, rx/tx errors, rx/tx dropped, …
        IFLA_STATS64 if v.len() >= 64 => {
            for (i, name) in ["rx_errors", "tx_errors", "rx_dropped", "tx_dropped"]
                .iter()
                .enumerate()
            {
                l.counters.insert(name.to_string(), u64_at(v, 32 + 8 * i));
            }
        }
        _ => {}
    }
}

/// RFC 2863 operational states, in the words of sysfs' `operstate`.
fn operstate(s: u8) -> &'static str {
    match s {
        1 => "notpresent",
        2 => "down",
        3 => "lowerlayerdown",
        4 => "testing",
        5 => "dormant",
        6 => "up",
        _ => "unknown",
    }
}

fn align(n: usize) -> usize {
    (n + 3) & !3
}

/// Native-endian integers at `i`; 0 past the end (callers check lengths first).
fn u16_at(b: &[u8], i: usize) -> u16 {
    b.get(i..i + 2)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u16::from_ne_bytes)
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    b.get(i..i + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_ne_bytes)
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    b.get(i..i + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

/// A netlink route socket, closed when dropped.
struct Socket(libc::c_int);

impl Socket {
    fn open() -> Result<Socket, String> {
        // SAFETY: plain socket(2); the descriptor is owned by the returned value.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if fd < 0 {
            return Err(format!("rtnetlink: {}", std::io::Error::last_os_error()));
        }
        let s = Socket(fd);
        let tv = libc::timeval {
            tv_sec: DEADLINE_MS / 1000,
            tv_usec: (DEADLINE_MS % 1000) * 1000,
        };
        // SAFETY: setsockopt reads one timeval of the given size.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as u32,
            )
        };
        Ok(s)
    }

    /// `RTM_GETLINK` with `NLM_F_REQUEST | NLM_F_DUMP`: every link.
    fn request(&self) -> Result<(), String> {
        let mut req = [0u8; 32];
        req[0..4].copy_from_slice(&32u32.to_ne_bytes());
        req[4..6].copy_from_slice(&18u16.to_ne_bytes()); // RTM_GETLINK
        req[6..8].copy_from_slice(&(0x1u16 | 0x300).to_ne_bytes());
        req[8..12].copy_from_slice(&1u32.to_ne_bytes());
        req[16] = libc::AF_UNSPEC as u8;
        // SAFETY: send(2) reads `req.len()` bytes of `req`.
        let n = unsafe { libc::send(self.0, req.as_ptr().cast(), req.len(), 0) };
        if n != req.len() as isize {
            return Err(format!("rtnetlink: {}", std::io::Error::last_os_error()));
        }
        Ok(())
    }

    fn recv(&self, buf: &mut [u8]) -> Result<usize, String> {
        // SAFETY: recv(2) writes at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::recv(self.0, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n <= 0 {
            return Err(format!(
                "rtnetlink: no reply ({})",
                std::io::Error::last_os_error()
            ));
        }
        Ok(n as usize)
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `RTM_NEWLINK` message for `eth0` with the attributes the probe reads.
    fn message(index: u32) -> Vec<u8> {
        let mut attrs = Vec::new();
        let mut attr = |kind: u16, v: &[u8]| {
            attrs.extend(((4 + v.len()) as u16).to_ne_bytes());
            attrs.extend(kind.to_ne_bytes());
            attrs.extend(v);
            while attrs.len() % 4 != 0 {
                attrs.push(0);
            }
        };
        attr(IFLA_IFNAME, b"eth0\0");
        attr(IFLA_MTU, &1400u32.to_ne_bytes());
        attr(IFLA_CARRIER, &[1]);
        attr(IFLA_CARRIER_CHANGES, &6u32.to_ne_bytes());
        attr(IFLA_OPERSTATE, &[6]);
        let stats: Vec<u8> = (0..24u64).flat_map(|i| (i * 10).to_ne_bytes()).collect();
        attr(IFLA_STATS64, &stats);
        let mut m = Vec::new();
        m.extend(((32 + attrs.len()) as u32).to_ne_bytes());
        m.extend(16u16.to_ne_bytes());
        m.extend([0u8; 10]);
        m.extend([0u8; 4]);
        m.extend(index.to_ne_bytes());
        m.extend([0u8; 8]);
        m.extend(attrs);
        m
    }

    #[test]
    fn a_link_message_gives_mtu_carrier_and_counters() {
        let mut buf = message(2);
        let mut done = vec![0u8; 20];
        done[0..4].copy_from_slice(&20u32.to_ne_bytes());
        done[4..6].copy_from_slice(&3u16.to_ne_bytes());
        buf.extend(done);
        let mut out = Vec::new();
        assert!(parse(&buf, &mut out).unwrap());
        let l = &out[0];
        assert_eq!((l.index, l.name.as_str(), l.mtu), (2, "eth0", Some(1400)));
        assert_eq!(
            (l.carrier, l.operstate.as_deref()),
            (Some(true), Some("up"))
        );
        assert_eq!(l.counters["carrier_changes"], 6);
        assert_eq!(l.counters["rx_errors"], 40);
        assert_eq!(l.counters["tx_dropped"], 70);
    }

    #[test]
    fn torn_and_hostile_messages_are_refused_or_skipped_never_a_panic() {
        let m = message(2);
        for cut in 0..m.len() {
            let _ = parse(&m[..cut], &mut Vec::new());
        }
        let mut bad = m.clone();
        bad[0..4].copy_from_slice(&9999u32.to_ne_bytes());
        assert!(parse(&bad, &mut Vec::new()).is_err());
        let mut attr_len = m.clone();
        attr_len[32..34].copy_from_slice(&999u16.to_ne_bytes());
        let mut out = Vec::new();
        parse(&attr_len, &mut out).unwrap();
        assert_eq!(out[0].name, "");
    }

    #[test]
    fn this_namespace_has_its_links() {
        let links = links().unwrap();
        assert!(links.iter().any(|l| l.name == "lo"), "{links:?}");
    }
}
