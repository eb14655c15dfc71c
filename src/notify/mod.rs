//! `--notify URL`: the verdict JSON POSTed to a webhook where the SREs look, with the run's
//! stable ID (`X-Baton-Run-Id` and `Idempotency-Key` headers) so a receiver that gets it twice —
//! a retry whose first answer was lost, a re-grade of the same results — can keep one.
//!
//! Delivery is best effort within a bound: retries with doubling backoff while the total time
//! allows, then it gives up. It never changes the command's exit code; what happened comes
//! back as a [`Delivery`] for the CLI to say. A tiny HTTP/1.1 client over std sockets: one
//! request, the status line read (at most [`MAX_STATUS_LINE`] bytes; headers and body are never
//! read), the connection closed; `https://` over rustls ([`tls`]). Every step of every attempt
//! — name lookup, connect, TLS handshake, each write and each read — waits only for what is
//! left of one [`Deadline`], so a receiver that dribbles its answer costs the bound, not a
//! timeout per byte.

pub mod tls;
pub mod url;

use std::io::{Read, Write};
use std::net::ToSocketAddrs;
use std::time::{Duration, Instant};

use crate::deadline::{Deadline, Timed};

pub use tls::Tls;
pub use url::{Target, UrlError};

/// The longest a delivery may take, retries included, unless told otherwise.
pub const DEFAULT_WITHIN: Duration = Duration::from_secs(30);
/// The first retry waits this long; each next one twice as long, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// Most bytes of the answer read: its status line is all that is needed (`HTTP/1.1 503 Service
/// Unavailable` is 33).
pub const MAX_STATUS_LINE: u64 = 1024;

/// How a delivery ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub attempts: u32,
    pub elapsed: Duration,
    /// The accepting status, or why the last attempt failed.
    pub outcome: Result<u16, String>,
}

/// One attempt's failure: worth retrying (no answer, 5xx, 408, 429) or not (any other answer).
enum Failed {
    Retry(String),
    Final(String),
}

/// POSTs `body` (JSON) to `target`, retrying within `within` in all; an https target is
/// verified against `tls`.
pub fn send(target: &Target, tls: &Tls, run_id: &str, body: &[u8], within: Duration) -> Delivery {
    let start = Instant::now();
    let until = Deadline::after(within);
    let mut backoff = FIRST_BACKOFF;
    let mut attempts = 0;
    loop {
        attempts += 1;
        let failed = match attempt(target, tls, run_id, body, until) {
            Ok(status) => return delivered(attempts, start, Ok(status)),
            Err(Failed::Final(why)) => return delivered(attempts, start, Err(why)),
            Err(Failed::Retry(why)) => why,
        };
        if backoff >= until.left() {
            let why = format!("{failed}; gave up after {:.1} s", within.as_secs_f64());
            return delivered(attempts, start, Err(why));
        }
        until.sleep(backoff);
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

fn delivered(attempts: u32, start: Instant, outcome: Result<u16, String>) -> Delivery {
    Delivery {
        attempts,
        elapsed: start.elapsed(),
        outcome,
    }
}

/// One request, every step of it ending by `until`.
fn attempt(
    target: &Target,
    tls: &Tls,
    run_id: &str,
    body: &[u8],
    until: Deadline,
) -> Result<u16, Failed> {
    let retry = |e: std::io::Error| Failed::Retry(e.to_string());
    let addr = resolve(target, until)?;
    let s = Timed {
        s: until.connect(&addr).map_err(retry)?,
        until,
    };
    let status = if target.tls {
        let mut s = tls.wrap(&target.host, s).map_err(retry)?;
        exchange(&mut s, target, run_id, body)
    } else {
        exchange(&mut { s }, target, run_id, body)
    };
    // A certificate the roots do not vouch for will not change on a retry.
    let status =
        status.map_err(
            |e| match e.get_ref().is_some_and(|i| i.is::<rustls::Error>()) {
                true => Failed::Final(e.to_string()),
                false => Failed::Retry(e.to_string()),
            },
        )?;
    match status {
        200..=299 => Ok(status),
        408 | 429 | 500..=599 => Err(Failed::Retry(format!("answered {status}"))),
        _ => Err(Failed::Final(format!("answered {status}"))),
    }
}

/// The request written and the answer's status read, over plain TCP or TLS.
fn exchange<S: Read + Write>(
    s: &mut S,
    target: &Target,
    run_id: &str,
    body: &[u8],
) -> std::io::Result<u16> {
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: baton/{}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nX-Baton-Run-Id: {run_id}\r\nIdempotency-Key: {run_id}\r\nConnection: close\r\n\r\n",
        target.path,
        target.authority(),
        env!("CARGO_PKG_VERSION"),
        body.len(),
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    s.flush()?;
    status_line(s)
}

/// The receiver's address, looked up by `until`: name resolution has no timeout of its own,
/// so it runs on a thread that is left behind if it never returns.
fn resolve(target: &Target, until: Deadline) -> Result<std::net::SocketAddr, Failed> {
    let (tx, rx) = std::sync::mpsc::channel();
    let authority = target.authority();
    std::thread::spawn(move || {
        let _ = tx.send(authority.to_socket_addrs().map(|mut a| a.next()));
    });
    match rx.recv_timeout(until.left()) {
        Ok(Ok(Some(addr))) => Ok(addr),
        Ok(Ok(None)) => Err(Failed::Retry(format!("{}: no address", target.host))),
        Ok(Err(e)) => Err(Failed::Retry(e.to_string())),
        Err(_) => Err(Failed::Retry(format!(
            "{}: no address in time",
            target.host
        ))),
    }
}

/// The status code of the answer's first line (`HTTP/1.1 204 No Content`).
fn status_line<S: Read>(s: &mut S) -> std::io::Result<u16> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    let mut limited = s.take(MAX_STATUS_LINE);
    while !line.ends_with(b"\r\n") {
        if limited.read(&mut byte)? == 0 {
            break;
        }
        line.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&line);
    let mut parts = text.split_whitespace();
    let code = match (parts.next(), parts.next()) {
        (Some(v), Some(c)) if v.starts_with("HTTP/") => c.parse::<u16>().ok(),
        _ => None,
    };
    code.ok_or_else(|| std::io::Error::other("no HTTP answer"))
}
