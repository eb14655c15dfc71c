//! Where rank 0 listens, computed the same way on every rank without talking first: from
//! `BATON_RENDEZVOUS`, or from the Slurm step (its first node, a port from the job and step
//! ids), or the loopback address when every rank shares one node.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

use super::RendezvousError;
use crate::launch::launcher::Placement;

/// Derived ports lie in `PORT_BASE..PORT_BASE + PORT_SPAN` (20000–59999): above the usual
/// services, below Linux's ephemeral range (32768–60999 overlaps; a clash is reported as a busy
/// port, and `BATON_RENDEZVOUS` picks another).
pub const PORT_BASE: u16 = 20000;
pub const PORT_SPAN: u16 = 40000;
/// The port when no launcher gives a job id to derive one from (one node, by hand).
pub const DEFAULT_PORT: u16 = 29517;

/// Rank 0's address as every rank computed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub host: String,
    pub port: u16,
    /// Which variables it came from, for messages.
    pub from: String,
    /// Derived from the node list: rank 0 must be on that node, or nobody finds it.
    pub first_node: bool,
}

impl Root {
    pub fn display(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Only processes of this machine can reach it.
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost" || self.host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// Where rank 0 listens: every interface, so a name that resolves to any of the node's
    /// addresses reaches it; loopback only when the address is loopback.
    pub fn bind_addr(&self) -> SocketAddr {
        let ip: IpAddr = match self.host.parse::<IpAddr>() {
            Ok(ip) if ip.is_loopback() => ip,
            Ok(IpAddr::V6(_)) => Ipv6Addr::UNSPECIFIED.into(),
            _ if self.host == "localhost" => Ipv4Addr::LOCALHOST.into(),
            _ => Ipv4Addr::UNSPECIFIED.into(),
        };
        SocketAddr::new(ip, self.port)
    }

    /// The addresses to connect to. A Slurm node name that does not resolve (sites and the
    /// simulated cluster where only Slurm knows node addresses) is looked up as Slurm's
    /// `NodeAddr`.
    pub fn resolve(&self) -> Result<Vec<SocketAddr>, String> {
        match (self.host.as_str(), self.port).to_socket_addrs() {
            Ok(a) => Ok(a.collect()),
            Err(e) => match slurm_node_addr(&self.host) {
                Some(ip) => Ok(vec![SocketAddr::new(ip, self.port)]),
                None => Err(format!("cannot resolve {}: {e}", self.host)),
            },
        }
    }
}

/// `scontrol show node -o HOST`'s `NodeAddr`, when Slurm is there to ask.
fn slurm_node_addr(host: &str) -> Option<IpAddr> {
    // The name came from a hostlist (letters, digits, `.-_`) or BATON_RENDEZVOUS; it is an
    // argument, never shell text.
    if !host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return None;
    }
    let o = std::process::Command::new("scontrol")
        .args(["show", "node", "-o", host])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&o.stdout);
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("NodeAddr="))?
        .parse()
        .ok()
}

/// Rank 0's address for `placement` from the environment `get` reads.
pub fn root_address(
    get: impl Fn(&str) -> Option<String>,
    placement: &Placement,
) -> Result<Root, RendezvousError> {
    if let Some(v) = get("BATON_RENDEZVOUS") {
        return parse(&v);
    }
    let port = derived_port(&get);
    let one_node = placement.size == 1 || placement.local_size == Some(placement.size);
    if one_node {
        return Ok(Root {
            host: "127.0.0.1".into(),
            port,
            from: "every rank on one node".into(),
            first_node: false,
        });
    }
    if get("SLURM_STEP_ID").is_some() {
        let (var, list) = ["SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"]
            .iter()
            .find_map(|k| Some((*k, get(k)?)))
            .ok_or_else(|| {
                RendezvousError::NoRoot(
                    "a Slurm step without SLURM_STEP_NODELIST or SLURM_JOB_NODELIST".into(),
                )
            })?;
        let hosts = crate::nodeset::hostlist::expand(&list)
            .map_err(|e| RendezvousError::NoRoot(format!("{var}={list:?}: {e}")))?;
        let host = hosts
            .into_iter()
            .next()
            .ok_or_else(|| RendezvousError::NoRoot(format!("{var} is empty")))?;
        return Ok(Root {
            host,
            port,
            from: format!("the first node of {var}, the port from SLURM_JOB_ID and SLURM_STEP_ID"),
            first_node: true,
        });
    }
    Err(RendezvousError::NoRoot(format!(
        "{} ranks (started by {}) on more than one node, outside a Slurm step",
        placement.size,
        placement.source.name()
    )))
}

fn parse(v: &str) -> Result<Root, RendezvousError> {
    let bad = |why: &str| RendezvousError::BadAddress {
        value: v.into(),
        why: why.into(),
    };
    let (host, port) = v.trim().rsplit_once(':').ok_or_else(|| bad("no port"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(bad("no host"));
    }
    if host.len() > 255 || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("not a host name or address"));
    }
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?;
    Ok(Root {
        host: host.into(),
        port,
        from: "BATON_RENDEZVOUS".into(),
        first_node: false,
    })
}

/// A port every rank of one step derives alike, different for the steps of one job and,
/// mostly, for jobs sharing a node.
fn derived_port(get: &impl Fn(&str) -> Option<String>) -> u16 {
    let n = |k: &str| get(k).and_then(|v| v.trim().parse::<u64>().ok());
    let seed = match (n("SLURM_JOB_ID"), n("SLURM_STEP_ID")) {
        (Some(job), step) => Some(job.wrapping_mul(97).wrapping_add(step.unwrap_or(0))),
        _ => ["OMPI_MCA_ess_base_jobid", "PMI_KVSNAME", "PALS_APID"]
            .iter()
            .find_map(|k| get(k))
            .map(|s| fnv(s.as_bytes())),
    };
    match seed {
        Some(s) => PORT_BASE + (s % PORT_SPAN as u64) as u16,
        None => DEFAULT_PORT,
    }
}

fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf29ce484222325u64, |h, x| {
        (h ^ *x as u64).wrapping_mul(0x100000001b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::launcher::Source;
    use crate::launch::launcher::test_env as env;

    fn placed(size: usize, local_size: Option<usize>) -> Placement {
        Placement {
            rank: 0,
            size,
            local_rank: 0,
            local_size,
            source: Source::Slurm,
        }
    }

    #[test]
    fn the_variable_wins_and_bad_ones_are_named() {
        let r = root_address(
            env(&[
                ("BATON_RENDEZVOUS", "node07:31000"),
                ("SLURM_STEP_ID", "0"),
                ("SLURM_STEP_NODELIST", "node[01-02]"),
            ]),
            &placed(4, None),
        )
        .unwrap();
        assert_eq!((r.host.as_str(), r.port), ("node07", 31000));
        let r = root_address(env(&[("BATON_RENDEZVOUS", "[::1]:5")]), &placed(4, None)).unwrap();
        assert_eq!((r.host.as_str(), r.display().as_str()), ("::1", "[::1]:5"));
        for bad in ["node07", "node07:0", "node07:http", ":80", "a b:80"] {
            let e = root_address(env(&[("BATON_RENDEZVOUS", bad)]), &placed(2, None))
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("BATON_RENDEZVOUS={bad:?}")), "{e}");
        }
    }

    #[test]
    fn slurm_steps_meet_on_their_first_node_at_a_port_of_the_job_and_step() {
        let e = env(&[
            ("SLURM_JOB_ID", "4242"),
            ("SLURM_STEP_ID", "3"),
            ("SLURM_STEP_NODELIST", "gpu[07-09],gpu01"),
            ("SLURM_JOB_NODELIST", "gpu[01-20]"),
        ]);
        let r = root_address(&e, &placed(8, None)).unwrap();
        assert_eq!(r.host, "gpu07");
        assert!((PORT_BASE..PORT_BASE + PORT_SPAN).contains(&r.port));
        let next = root_address(
            env(&[
                ("SLURM_JOB_ID", "4242"),
                ("SLURM_STEP_ID", "4"),
                ("SLURM_STEP_NODELIST", "gpu07"),
            ]),
            &placed(8, None),
        )
        .unwrap();
        assert_ne!(r.port, next.port, "two steps of a job share no port");
        assert_eq!(
            super::super::key::launch_id(&e).as_deref(),
            Some("slurm:4242.3")
        );
    }

    #[test]
    fn one_node_is_loopback_and_many_nodes_without_slurm_need_the_variable() {
        let r = root_address(env(&[]), &placed(4, Some(4))).unwrap();
        assert_eq!((r.host.as_str(), r.port), ("127.0.0.1", DEFAULT_PORT));
        assert!(r.bind_addr().ip().is_loopback());
        let e = root_address(env(&[]), &placed(4, Some(2)))
            .unwrap_err()
            .to_string();
        assert!(e.contains("set BATON_RENDEZVOUS"), "{e}");
        let e = root_address(
            env(&[("SLURM_STEP_ID", "0"), ("SLURM_STEP_NODELIST", "node[")]),
            &placed(4, None),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("SLURM_STEP_NODELIST"), "{e}");
    }
}
