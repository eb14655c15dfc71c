//! One deadline for every network wait: the PostgreSQL history, the webhook, the rendezvous
//! and NCCL's RAS. A peer that accepts and says nothing, or dribbles a byte a second, must cost
//! the bound and no more; a timeout set once per socket does not do that (each byte restarts
//! it), so every connect, handshake, write and read asks one [`Deadline`] how long is left.

use std::borrow::Borrow;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// When a wait ends. Copied into each step of an exchange, never restarted by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Deadline(Instant);

/// A bound beyond any wait baton means (a century): what a duration too large to add becomes.
const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

impl Deadline {
    /// `d` from now.
    pub fn after(d: Duration) -> Deadline {
        let now = Instant::now();
        Deadline(now.checked_add(d.min(FAR)).unwrap_or(now + FAR))
    }

    /// The earlier of this deadline and `d` from now: a step with a bound of its own (a greeting,
    /// a connect) inside a longer exchange.
    pub fn within(self, d: Duration) -> Deadline {
        self.min(Deadline::after(d))
    }

    /// A later deadline, `d` past this one.
    pub fn plus(self, d: Duration) -> Deadline {
        Deadline(self.0.checked_add(d.min(FAR)).unwrap_or(self.0 + FAR))
    }

    pub fn instant(self) -> Instant {
        self.0
    }

    /// What is left; zero once it has passed.
    pub fn left(self) -> Duration {
        self.0.saturating_duration_since(Instant::now())
    }

    pub fn passed(self) -> bool {
        self.left().is_zero()
    }

    /// What is left as a socket timeout, or [`io::ErrorKind::TimedOut`] once nothing is (a zero
    /// timeout would mean none to a socket).
    pub fn remaining(self) -> io::Result<Duration> {
        match self.left() {
            d if d.is_zero() => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the deadline passed",
            )),
            d => Ok(d),
        }
    }

    /// A TCP connection to `addr`, made by the deadline.
    pub fn connect(self, addr: &SocketAddr) -> io::Result<TcpStream> {
        TcpStream::connect_timeout(addr, self.remaining()?)
    }

    /// Sleeps `d`, or until the deadline if that comes first.
    pub fn sleep(self, d: Duration) {
        std::thread::sleep(d.min(self.left()));
    }
}

/// A TCP stream (owned or borrowed) every read and write of which ends by `until`: each call
/// waits only for what is left, however the other end dribbles its bytes. TLS over it
/// (rustls reads and writes through it) is bounded the same way.
pub struct Timed<S> {
    pub s: S,
    pub until: Deadline,
}

impl<S: Borrow<TcpStream>> Read for Timed<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut s: &TcpStream = self.s.borrow();
        s.set_read_timeout(Some(self.until.remaining()?))?;
        s.read(buf)
    }
}

impl<S: Borrow<TcpStream>> Write for Timed<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut s: &TcpStream = self.s.borrow();
        s.set_write_timeout(Some(self.until.remaining()?))?;
        s.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Whether `e` is a socket's timeout (`WouldBlock` on Linux, `TimedOut` elsewhere and from
/// [`Deadline::remaining`]).
pub fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_peer_that_dribbles_costs_the_deadline_not_a_timeout_per_byte() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            while s.write_all(b"x").is_ok() {
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let until = Deadline::after(Duration::from_millis(600));
        let start = Instant::now();
        let mut t = Timed {
            s: until.connect(&addr).unwrap(),
            until,
        };
        let mut sink = Vec::new();
        let e = t.read_to_end(&mut sink).unwrap_err();
        assert!(is_timeout(&e), "{e}");
        assert!(
            start.elapsed() < Duration::from_millis(1500),
            "{:?}",
            start.elapsed()
        );
        assert!(!sink.is_empty() && until.passed());
    }

    #[test]
    fn bounds_compose_and_never_overflow() {
        let long = Deadline::after(Duration::MAX);
        assert!(long.left() > Duration::from_secs(3600));
        let short = long.within(Duration::from_millis(10));
        assert!(short < long && short.left() <= Duration::from_millis(10));
        assert!(short.plus(Duration::from_secs(5)) > short);
        std::thread::sleep(Duration::from_millis(20));
        assert!(short.passed());
        assert!(is_timeout(&short.remaining().unwrap_err()));
    }
}
