//! The RAS client: NCCL's text protocol over TCP (`CLIENT PROTOCOL 2`, `TIMEOUT`, `SET FORMAT
//! json`, `STATUS`), bounded in time and bytes: a hang is exactly when a peer may not answer.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use super::Report;
use crate::deadline::{Deadline, Timed};

/// The most a status may hold; a larger answer is cut there and read as far as it goes.
pub const MAX_BYTES: u64 = 4 << 20;

/// Why no report came back.
#[derive(Debug, thiserror::Error)]
pub enum RasError {
    #[error(
        "no RAS listening at {addr} ({why}): NCCL older than 2.24, NCCL_RAS_ENABLE=0, or the port taken"
    )]
    Unreachable { addr: String, why: String },
    #[error("RAS at {addr} did not answer within {secs} s")]
    Silent { addr: String, secs: u64 },
    #[error("RAS at {addr} answered something else: {what}")]
    Protocol { addr: String, what: String },
    #[error("{why} (RAS at {addr})")]
    Unreadable {
        addr: String,
        why: super::Unreadable,
    },
}

/// How long one query may take in all, and how long RAS itself may wait for its peers
/// (`TIMEOUT`): a stopped process costs RAS one such wait.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub total: Duration,
    pub peer_wait_s: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            total: Duration::from_secs(12),
            peer_wait_s: 3,
        }
    }
}

struct Conn {
    /// Every write and read ends by the query's one deadline, however RAS dribbles.
    s: Timed<TcpStream>,
    addr: String,
    secs: u64,
}

impl Conn {
    fn silent(&self, _: std::io::Error) -> RasError {
        RasError::Silent {
            addr: self.addr.clone(),
            secs: self.secs,
        }
    }

    /// One command and its one-line answer.
    fn ask(&mut self, cmd: &str) -> Result<String, RasError> {
        self.s
            .write_all(cmd.as_bytes())
            .map_err(|e| self.silent(e))?;
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while line.len() < 4096 {
            match self.s.read(&mut b).map_err(|e| self.silent(e))? {
                0 => break,
                _ if b[0] == b'\n' => break,
                _ => line.push(b[0]),
            }
        }
        Ok(String::from_utf8_lossy(&line).trim().to_string())
    }

    /// The rest of the stream, up to [`MAX_BYTES`].
    fn rest(&mut self) -> Result<String, RasError> {
        let mut out = Vec::new();
        let mut buf = [0u8; 16384];
        while (out.len() as u64) < MAX_BYTES {
            match self.s.read(&mut buf).map_err(|e| self.silent(e))? {
                0 => break,
                n => out.extend_from_slice(&buf[..n]),
            }
        }
        out.truncate(MAX_BYTES as usize);
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

/// Asks the RAS at `addr` for the job's status: JSON where the library has it, else text.
pub fn query(addr: SocketAddr, limits: Limits) -> Result<Report, RasError> {
    let name = addr.to_string();
    let until = Deadline::after(limits.total);
    let s = until
        .within(Duration::from_secs(2))
        .connect(&addr)
        .map_err(|e| RasError::Unreachable {
            addr: name.clone(),
            why: e.to_string(),
        })?;
    let mut c = Conn {
        s: Timed { s, until },
        addr: name.clone(),
        secs: limits.total.as_secs(),
    };
    let hello = c.ask("CLIENT PROTOCOL 2\n")?;
    if !hello.to_ascii_uppercase().starts_with("SERVER PROTOCOL") {
        return Err(RasError::Protocol {
            addr: name,
            what: hello,
        });
    }
    let _ = c.ask(&format!("TIMEOUT {}\n", limits.peer_wait_s))?;
    // NCCL before 2.28.7 answers `ERROR: Unknown command`: its text form is read instead.
    let json = c.ask("SET FORMAT json\n")?.eq_ignore_ascii_case("OK");
    c.s.write_all(b"STATUS\n").map_err(|e| c.silent(e))?;
    let body = c.rest()?;
    // A library that agreed to JSON and still answers in text is read as text.
    let json = json && body.trim_start().starts_with('{');
    super::read(&body, json).map_err(|why| RasError::Unreadable { addr: name, why })
}

/// A free TCP port on the loopback for this process's RAS listener (`NCCL_RAS_ADDR`), so two
/// jobs on one node never read each other's status.
pub fn free_loopback_port() -> Option<u16> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()
        .map(|a| a.port())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;
    use std::net::TcpListener;
    use std::time::Instant;

    /// A stand-in RAS thread over a real socket, answering as NCCL 2.30.7 does.
    fn serve(json: bool, body: &'static str, stall: bool) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let mut w = s.try_clone().unwrap();
            for line in std::io::BufReader::new(s).lines() {
                let line = line.unwrap();
                let answer = match line.as_str() {
                    "CLIENT PROTOCOL 2" => "SERVER PROTOCOL 2\n",
                    l if l.starts_with("TIMEOUT") => "OK\n",
                    "SET FORMAT json" if json => "OK\n",
                    "SET FORMAT json" => "ERROR: Unknown command set format json\n",
                    "STATUS" if stall => {
                        std::thread::sleep(Duration::from_secs(3));
                        return;
                    }
                    "STATUS" => {
                        w.write_all(body.as_bytes()).unwrap();
                        return;
                    }
                    _ => "ERROR\n",
                };
                w.write_all(answer.as_bytes()).unwrap();
            }
        });
        addr
    }

    #[test]
    fn json_where_the_library_has_it_and_text_where_not() {
        let j = include_str!("../../tests/data/ras/nccl-2.30.7-rank-stopped.json");
        let r = query(serve(true, j, false), Limits::default()).unwrap();
        assert_eq!(r.form, "json");
        assert_eq!(r.communicators[0].missing[0].pid, Some(690));
        let t = include_str!("../../tests/data/ras/nccl-2.30.7-rank-stopped.txt");
        let r = query(serve(false, t, false), Limits::default()).unwrap();
        assert_eq!(r.form, "text");
        assert_eq!(r.communicators[0].missing[0].pid, Some(690));
    }

    #[test]
    fn a_silent_or_absent_ras_is_said_in_bounded_time() {
        let t0 = Instant::now();
        let limits = Limits {
            total: Duration::from_millis(800),
            peer_wait_s: 1,
        };
        let e = query(serve(true, "", true), limits).unwrap_err();
        assert!(matches!(e, RasError::Silent { .. }), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(2));
        let port = free_loopback_port().unwrap();
        let e = query(([127, 0, 0, 1], port).into(), limits).unwrap_err();
        assert!(e.to_string().contains("no RAS listening"), "{e}");
    }
}
