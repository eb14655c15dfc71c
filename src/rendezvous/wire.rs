//! The bytes on the wire. A greeting (the hello and rank 0's answer) starts with a magic and a
//! version, so a rank that reached some other server finds out at once instead of parsing its
//! banner; after it, frames are a length, a tag and a body. Every length is checked against a
//! cap before anything is allocated.

use std::io::{self, Read, Write};

/// Opens every greeting, both ways.
pub const MAGIC: &[u8; 8] = b"BATONRDV";
/// Bumped when the frames change; ranks of different versions refuse each other. 2: the
/// challenge–response hello.
pub const VERSION: u16 = 2;
/// A rank's hello (rank, size, nonce) and rank 0's challenge: a few dozen bytes.
pub const HELLO_CAP: u64 = 1 << 10;
/// A rank's proof and what it says of itself (host, inventory).
pub const PROOF_CAP: u64 = 4 << 10;
/// Rank 0's answer: the member table (a few hundred bytes per rank), read only from a root that
/// proved the key.
pub const TABLE_CAP: u64 = 64 << 20;
/// A collective frame: a whole gather (transport tables run to kilobytes per rank). Rank 0
/// caps the sum of what the ranks send, not each part.
pub const FRAME_CAP: u64 = 64 << 20;
/// The longest host name and inventory a rank may introduce itself with.
pub const NAME_CAP: usize = 255;

pub const BARRIER: u8 = 1;
pub const GATHER_F64: u8 = 2;
pub const GATHER_U64: u8 = 3;
pub const GATHER_STRING: u8 = 4;
pub const BROADCAST: u8 = 5;
/// Rank 0 ends the run: the body says why.
pub const FAIL: u8 = 0xFF;

pub fn op_name(tag: u8) -> &'static str {
    match tag {
        BARRIER => "barrier",
        GATHER_F64 => "all_gather_f64",
        GATHER_U64 => "all_gather_u64",
        GATHER_STRING => "all_gather_string",
        BROADCAST => "broadcast_bytes",
        FAIL => "fail",
        _ => "an unknown operation",
    }
}

#[derive(Debug)]
pub enum WireError {
    Io(io::Error),
    /// The other end closed before sending anything.
    Closed,
    /// It answered, but not with our magic: what it said, printable.
    NotBaton(String),
    Version(u16),
    TooLarge(u64),
}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            WireError::Closed
        } else {
            WireError::Io(e)
        }
    }
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Io(e) if is_timeout(e) => write!(f, "no answer in time ({e})"),
            WireError::Io(e) => write!(f, "{e}"),
            WireError::Closed => write!(f, "the connection closed"),
            WireError::NotBaton(s) => write!(f, "it answered {s:?}, not a baton rendezvous"),
            WireError::Version(v) => write!(
                f,
                "it speaks rendezvous protocol version {v}, this baton speaks {VERSION} (mixed baton versions)"
            ),
            WireError::TooLarge(n) => write!(f, "a message of {n} bytes, over the limit"),
        }
    }
}

pub use crate::deadline::{Timed, is_timeout};

pub fn write_greeting(mut w: impl Write, body: &[u8]) -> io::Result<()> {
    let mut buf = Vec::with_capacity(14 + body.len());
    buf.extend_from_slice(MAGIC);
    buf.extend_from_slice(&VERSION.to_le_bytes());
    buf.extend_from_slice(&(body.len() as u32).to_le_bytes());
    buf.extend_from_slice(body);
    w.write_all(&buf)?;
    w.flush()
}

/// One end of a connection held in memory: what the other end sends, and what was sent to it
/// (unit tests and the fuzz target drive rank 0's greeting with it).
pub struct Duplex {
    pub input: io::Cursor<Vec<u8>>,
    pub output: Vec<u8>,
}

impl Duplex {
    pub fn new(input: Vec<u8>) -> Duplex {
        Duplex {
            input: io::Cursor::new(input),
            output: Vec::new(),
        }
    }
}

impl Read for Duplex {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Duplex {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A greeting of at most `cap` bytes.
pub fn read_greeting(mut r: impl Read, cap: u64) -> Result<Vec<u8>, WireError> {
    let mut head = [0u8; 8];
    let mut got = 0;
    while got < head.len() {
        match r.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if got == 0 && e.kind() == io::ErrorKind::ConnectionReset => {
                return Err(WireError::Closed);
            }
            Err(e) => return Err(WireError::Io(e)),
        }
    }
    if got == 0 {
        return Err(WireError::Closed);
    }
    if head[..got] != MAGIC[..got] || got < head.len() {
        return Err(WireError::NotBaton(
            String::from_utf8_lossy(&head[..got])
                .chars()
                .map(|c| if c.is_control() { '.' } else { c })
                .collect(),
        ));
    }
    let mut v = [0u8; 2];
    r.read_exact(&mut v)?;
    let v = u16::from_le_bytes(v);
    if v != VERSION {
        return Err(WireError::Version(v));
    }
    read_body(r, cap)
}

fn read_body(mut r: impl Read, cap: u64) -> Result<Vec<u8>, WireError> {
    let mut n = [0u8; 4];
    r.read_exact(&mut n)?;
    let n = u32::from_le_bytes(n) as u64;
    if n > cap {
        return Err(WireError::TooLarge(n));
    }
    // Filled as the bytes come: a length that is never sent costs nothing.
    let mut body = Vec::new();
    r.take(n).read_to_end(&mut body)?;
    if (body.len() as u64) < n {
        return Err(WireError::Closed);
    }
    Ok(body)
}

/// One collective frame: `tag` and `body`. Refused before sending when over the cap.
pub fn write_frame(mut w: impl Write, tag: u8, body: &[u8]) -> Result<(), WireError> {
    let n = body.len() as u64 + 1;
    if n > FRAME_CAP {
        return Err(WireError::TooLarge(n));
    }
    let mut buf = Vec::with_capacity(5 + body.len());
    buf.extend_from_slice(&(n as u32).to_le_bytes());
    buf.push(tag);
    buf.extend_from_slice(body);
    w.write_all(&buf)?;
    w.flush()?;
    Ok(())
}

/// One frame whose body is at most `cap` bytes.
pub fn read_frame(r: impl Read, cap: u64) -> Result<(u8, Vec<u8>), WireError> {
    let mut body = read_body(r, cap.saturating_add(1))?;
    if body.is_empty() {
        return Err(WireError::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            "an empty frame",
        )));
    }
    let tag = body.remove(0);
    Ok((tag, body))
}

/// Parts joined with a length each, as rank 0 sends a gather back.
pub fn join_parts(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 4).sum());
    for p in parts {
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

/// The parts of a gather; `None` when the lengths do not add up.
pub fn split_parts(mut b: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let n = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
        out.push(b.get(4..4 + n)?.to_vec());
        b = &b[4 + n..];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_over_the_cap_are_refused_before_allocating() {
        let mut b = Vec::new();
        b.extend_from_slice(&(u32::MAX).to_le_bytes());
        b.push(BARRIER);
        assert!(
            matches!(read_frame(&b[..], FRAME_CAP), Err(WireError::TooLarge(n)) if n == u32::MAX as u64)
        );
        let mut g = Vec::new();
        g.extend_from_slice(MAGIC);
        g.extend_from_slice(&VERSION.to_le_bytes());
        g.extend_from_slice(&((HELLO_CAP + 1) as u32).to_le_bytes());
        assert!(matches!(
            read_greeting(&g[..], HELLO_CAP),
            Err(WireError::TooLarge(_))
        ));
        // A barrier carries no body: one byte more is over its cap.
        let mut f = Vec::new();
        write_frame(&mut f, BARRIER, &[0]).unwrap();
        assert!(matches!(read_frame(&f[..], 0), Err(WireError::TooLarge(2))));
        let big = vec![0u8; FRAME_CAP as usize];
        assert!(matches!(
            write_frame(Vec::new(), GATHER_STRING, &big),
            Err(WireError::TooLarge(_))
        ));
    }

    #[test]
    fn a_banner_is_not_a_greeting_and_a_truncated_frame_is_closed() {
        let e = read_greeting(&b"SSH-2.0-OpenSSH_9.2\r\n"[..], HELLO_CAP).unwrap_err();
        assert!(e.to_string().contains("SSH-2.0"), "{e}");
        assert!(matches!(
            read_greeting(&b""[..], HELLO_CAP),
            Err(WireError::Closed)
        ));
        let mut f = Vec::new();
        write_frame(&mut f, GATHER_U64, &[1, 2, 3]).unwrap();
        assert_eq!(read_frame(&f[..], 8).unwrap(), (GATHER_U64, vec![1, 2, 3]));
        assert!(matches!(
            read_frame(&f[..f.len() - 1], 8),
            Err(WireError::Closed)
        ));
        let mut g = Vec::new();
        g.extend_from_slice(MAGIC);
        g.extend_from_slice(&(VERSION + 1).to_le_bytes());
        assert!(matches!(
            read_greeting(&g[..], HELLO_CAP),
            Err(WireError::Version(_))
        ));
    }

    #[test]
    fn gathered_parts_round_trip_and_short_ones_are_caught() {
        let parts = vec![b"a".to_vec(), Vec::new(), b"xyz".to_vec()];
        let j = join_parts(&parts);
        assert_eq!(split_parts(&j).unwrap(), parts);
        assert_eq!(split_parts(&j[..j.len() - 1]), None);
    }
}
