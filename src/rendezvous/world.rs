//! [`TcpWorld`]: the ranks of one launch, met at rank 0 ([`super::meet`]) and talking through it
//! (a star). A collective reads one frame from every rank, in rank order, and sends the result
//! back. Every wait has an end: outside a job the slowest rank gets `BATON_RENDEZVOUS_TIMEOUT`,
//! inside one a little longer than the job's own watchdog, and a rank that misses it is named
//! to every rank still there; a rank that died shows up as a closed connection (or, for a node
//! that vanished, as TCP keepalive giving up).

use std::net::{TcpListener, TcpStream};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::auth::Key;
use super::wire::{self, Timed, WireError};
use super::{RendezvousError, Root};
use super::{dial, meet};
use crate::deadline::Deadline;
use crate::world::World;

/// One rank as it introduced itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub rank: usize,
    pub local_rank: usize,
    pub host: String,
    /// What the rank sees (its GPUs), for the table `baton ranks` prints.
    pub inventory: String,
}

/// How this rank joins.
#[derive(Debug, Clone)]
pub struct Join {
    pub rank: usize,
    pub size: usize,
    pub local_rank: usize,
    pub host: String,
    pub inventory: String,
    pub root: Root,
    /// What the ranks of this launch prove to each other ([`super::key`]).
    pub key: Key,
    pub timeout: Duration,
}

enum Link {
    /// Rank 0: a connection per other rank, indexed by rank (slot 0 empty).
    Root(Vec<Option<TcpStream>>),
    Peer(TcpStream),
}

/// Extra time the other ranks wait for rank 0's reply, so that rank 0, waiting for the slowest
/// rank, names it to them before they give up on rank 0 itself.
const ROOT_MARGIN: Duration = Duration::from_secs(5);

/// The world of one rank among the processes of a launch.
pub struct TcpWorld {
    rank: usize,
    size: usize,
    members: Vec<Member>,
    link: Link,
    /// How long a collective waits for the slowest rank outside a job.
    patience: Duration,
    /// The wait now, in nanoseconds (a job's limit while one runs).
    wait: AtomicU64,
    /// What rank 0 turned away while it waited for the ranks.
    turned: Vec<String>,
    /// What runs before a broken world ends the process.
    broken: OnceLock<OnBroken>,
}

/// Rank 0's last act when the world breaks (a `run` folds its journal and writes JUnit).
pub type OnBroken = Box<dyn Fn(&str) + Send + Sync>;

impl TcpWorld {
    /// Meets the other ranks: rank 0 listens at `root`, the others connect. Fails naming the
    /// ranks that did not come by `timeout`, or why the root is not this launch's.
    pub fn join(j: &Join) -> Result<TcpWorld, RendezvousError> {
        let me = Member {
            rank: j.rank,
            local_rank: j.local_rank,
            host: j.host.clone(),
            inventory: j.inventory.clone(),
        };
        if j.size == 1 {
            return Ok(Self::of(j, vec![me], Link::Root(vec![None]), Vec::new()));
        }
        if j.rank == 0 {
            let addr = j.root.bind_addr();
            let l = TcpListener::bind(addr).map_err(|source| RendezvousError::Listen {
                addr: format!("{addr} (for {})", j.root.display()),
                source,
            })?;
            Self::serve(j, me, l)
        } else {
            let (members, mut s) = dial::connect(j, &me)?;
            settle(&mut s);
            Ok(Self::of(j, members, Link::Peer(s), Vec::new()))
        }
    }

    /// Rank 0 with a listener already bound (tests bind port 0 first).
    pub fn serve(j: &Join, me: Member, l: TcpListener) -> Result<TcpWorld, RendezvousError> {
        let mut met = meet::serve(j, me, l)?;
        met.links.iter_mut().flatten().for_each(settle);
        Ok(Self::of(
            j,
            met.members,
            Link::Root(met.links),
            met.turned.lines(),
        ))
    }

    fn of(j: &Join, members: Vec<Member>, link: Link, turned: Vec<String>) -> TcpWorld {
        TcpWorld {
            rank: j.rank,
            size: j.size,
            members,
            link,
            patience: j.timeout,
            wait: AtomicU64::new(j.timeout.as_nanos() as u64),
            turned,
            broken: OnceLock::new(),
        }
    }

    /// `f` runs, with the reason, before a collective that cannot complete ends the process: it
    /// says why (the world itself prints nothing) and writes what it can.
    pub fn on_broken(&self, f: OnBroken) {
        let _ = self.broken.set(f);
    }

    /// A broken world cannot go on: no collective after a lost or late rank can complete. The
    /// process ends the way an MPI job does on a communication error (`MPI_ERRORS_ARE_FATAL`):
    /// with the reason, exit code 3 (runtime failure), and the launcher ends the other ranks.
    /// Rank 0 has journaled every measured row before any collective, and its `on_broken`
    /// writes what it can from them.
    fn fatal(&self, e: RendezvousError) -> ! {
        if let Some(f) = self.broken.get() {
            f(&e.to_string());
        }
        std::process::exit(crate::exit::Exit::Runtime.code())
    }

    /// What rank 0 dropped while the ranks met: strangers, other launches, greetings cut short.
    pub fn turned_away(&self) -> &[String] {
        &self.turned
    }

    /// How long the collectives wait for the slowest rank: `Some` while a job runs (longer
    /// than its watchdog), the rendezvous timeout again after `None`.
    pub fn set_job_limit(&self, limit: Option<Duration>) {
        let d = limit.unwrap_or(self.patience);
        self.wait
            .store(d.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }

    fn waiting(&self) -> Duration {
        Duration::from_nanos(self.wait.load(Ordering::Relaxed))
    }

    /// Every rank as it introduced itself, by rank.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// One collective: this rank's `mine` in, rank 0's reply out. Rank 0 builds the reply
    /// from every rank's part with `reply`.
    fn exchange(
        &self,
        tag: u8,
        mine: Vec<u8>,
        reply: impl FnOnce(Vec<Vec<u8>>) -> Vec<u8>,
    ) -> Result<Vec<u8>, RendezvousError> {
        match &self.link {
            Link::Peer(s) => self.ask_root(s, tag, &mine),
            Link::Root(links) => {
                let until = Deadline::after(self.waiting());
                let parts = self.collect(links, tag, mine, until).inspect_err(|e| {
                    self.tell_all(&e.to_string());
                })?;
                let out = reply(parts);
                for (r, s) in links.iter().enumerate().skip(1) {
                    let sent = match s {
                        Some(s) => wire::write_frame(
                            Timed {
                                s,
                                until: Deadline::after(ROOT_MARGIN + self.waiting()),
                            },
                            tag,
                            &out,
                        ),
                        None => Err(WireError::Closed),
                    };
                    if let Err(e) = sent {
                        let e = self.lost(r, e);
                        self.tell_all(&e.to_string());
                        return Err(e);
                    }
                }
                Ok(out)
            }
        }
    }

    fn ask_root(&self, s: &TcpStream, tag: u8, mine: &[u8]) -> Result<Vec<u8>, RendezvousError> {
        let wait = self.waiting() + ROOT_MARGIN;
        let until = Deadline::after(wait);
        let late = |e: WireError| match e {
            WireError::Io(e) if wire::is_timeout(&e) => RendezvousError::Late {
                who: format!("rank 0 ({})", self.members[0].host),
                what: format!("did not answer {}", wire::op_name(tag)),
                secs: wait.as_secs_f64(),
            },
            e => self.lost(0, e),
        };
        wire::write_frame(Timed { s, until }, tag, mine).map_err(late)?;
        let (t, body) = wire::read_frame(Timed { s, until }, wire::FRAME_CAP).map_err(late)?;
        if t == wire::FAIL {
            return Err(RendezvousError::Refused(
                String::from_utf8_lossy(&body).into_owned(),
            ));
        }
        if t != tag {
            return Err(RendezvousError::Protocol {
                who: "rank 0".into(),
                why: format!("it answered {} to {}", wire::op_name(t), wire::op_name(tag)),
            });
        }
        Ok(body)
    }

    /// Rank 0 reads every rank's part by `until`. A barrier's parts are empty and a value's are
    /// 8 bytes; the strings of a gather share one budget, so the reply stays under the cap
    /// however the ranks split it.
    fn collect(
        &self,
        links: &[Option<TcpStream>],
        tag: u8,
        mine: Vec<u8>,
        until: Deadline,
    ) -> Result<Vec<Vec<u8>>, RendezvousError> {
        let mut budget = (wire::FRAME_CAP - 1)
            .saturating_sub(4 * self.size as u64)
            .saturating_sub(mine.len() as u64);
        let mut parts = vec![mine];
        for (r, s) in links.iter().enumerate().skip(1) {
            let cap = match tag {
                wire::GATHER_U64 | wire::GATHER_F64 => 8,
                wire::GATHER_STRING => budget,
                _ => 0,
            };
            let got = match s {
                Some(s) => wire::read_frame(Timed { s, until }, cap),
                None => Err(WireError::Closed),
            };
            match got {
                Ok((t, body)) if t == tag => {
                    budget -= body.len() as u64;
                    parts.push(body);
                }
                Ok((t, _)) => {
                    return Err(RendezvousError::Protocol {
                        who: format!("rank {r} ({})", self.members[r].host),
                        why: format!(
                            "it called {} while rank 0 called {}",
                            wire::op_name(t),
                            wire::op_name(tag)
                        ),
                    });
                }
                Err(WireError::Io(e)) if wire::is_timeout(&e) => {
                    return Err(self.late(links, r, tag));
                }
                Err(WireError::TooLarge(len)) => {
                    return Err(RendezvousError::TooLarge {
                        who: format!("rank {r} ({})", self.members[r].host),
                        len: len.saturating_sub(1),
                        cap,
                    });
                }
                Err(e) => return Err(self.lost(r, e)),
            }
        }
        Ok(parts)
    }

    /// Rank `first` missed the deadline: it and every later rank that sent nothing either.
    fn late(&self, links: &[Option<TcpStream>], first: usize, tag: u8) -> RendezvousError {
        let who: Vec<String> = (first..self.size)
            .filter(|&r| r == first || links[r].as_ref().is_none_or(|s| !has_data(s)))
            .map(|r| format!("rank {r} ({})", self.members[r].host))
            .collect();
        RendezvousError::Late {
            who: who.join(", "),
            what: format!("did not reach {}", wire::op_name(tag)),
            secs: self.waiting().as_secs_f64(),
        }
    }

    fn lost(&self, rank: usize, e: WireError) -> RendezvousError {
        RendezvousError::PeerLost {
            rank,
            host: self.members[rank].host.clone(),
            why: e.to_string(),
        }
    }

    /// Rank 0 tells every rank still connected why the run ends.
    fn tell_all(&self, why: &str) {
        if let Link::Root(links) = &self.link {
            let until = Deadline::after(Duration::from_secs(2));
            for s in links.iter().flatten() {
                let _ = wire::write_frame(Timed { s, until }, wire::FAIL, why.as_bytes());
            }
        }
    }

    fn gather(&self, tag: u8, mine: Vec<u8>) -> Result<Vec<Vec<u8>>, RendezvousError> {
        let b = self.exchange(tag, mine, |parts| wire::join_parts(&parts))?;
        wire::split_parts(&b)
            .filter(|p| p.len() == self.size)
            .ok_or_else(|| RendezvousError::Protocol {
                who: "rank 0".into(),
                why: format!("a gather that is not {} parts", self.size),
            })
    }

    pub fn try_barrier(&self) -> Result<(), RendezvousError> {
        self.exchange(wire::BARRIER, Vec::new(), |_| Vec::new())
            .map(|_| ())
    }

    pub fn try_all_gather_u64(&self, v: u64) -> Result<Vec<u64>, RendezvousError> {
        self.fixed(wire::GATHER_U64, v.to_le_bytes(), u64::from_le_bytes)
    }

    pub fn try_all_gather_f64(&self, v: f64) -> Result<Vec<f64>, RendezvousError> {
        self.fixed(wire::GATHER_F64, v.to_le_bytes(), f64::from_le_bytes)
    }

    fn fixed<T>(
        &self,
        tag: u8,
        b: [u8; 8],
        from: fn([u8; 8]) -> T,
    ) -> Result<Vec<T>, RendezvousError> {
        self.gather(tag, b.to_vec())?
            .into_iter()
            .enumerate()
            .map(|(r, p)| {
                p.try_into()
                    .map(from)
                    .map_err(|_| RendezvousError::Protocol {
                        who: format!("rank {r}"),
                        why: "a value that is not 8 bytes".into(),
                    })
            })
            .collect()
    }

    pub fn try_all_gather_string(&self, s: &str) -> Result<Vec<String>, RendezvousError> {
        Ok(self
            .gather(wire::GATHER_STRING, s.as_bytes().to_vec())?
            .into_iter()
            .map(|p| String::from_utf8_lossy(&p).into_owned())
            .collect())
    }

    /// Rank 0's `data` into every rank's `data` (same length on every rank).
    pub fn try_broadcast_bytes(&self, data: &mut [u8]) -> Result<(), RendezvousError> {
        let mine = if self.rank == 0 {
            data.to_vec()
        } else {
            Vec::new()
        };
        let got = self.exchange(wire::BROADCAST, mine, |mut parts| parts.swap_remove(0))?;
        if got.len() != data.len() {
            return Err(RendezvousError::Protocol {
                who: "rank 0".into(),
                why: format!(
                    "it broadcast {} bytes, rank {} expected {}",
                    got.len(),
                    self.rank,
                    data.len()
                ),
            });
        }
        data.copy_from_slice(&got);
        Ok(())
    }
}

/// After the greeting: small frames go out at once, and a node that vanished without closing
/// its connections is noticed by keepalive within about a minute and a half (each collective
/// has its own deadline besides).
fn settle(s: &mut TcpStream) {
    let _ = s.set_nodelay(true);
    keepalive(s);
}

/// Whether a rank's frame (or its closing) is waiting to be read.
fn has_data(s: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    let _ = s.set_nonblocking(true);
    let r = s.peek(&mut b);
    let _ = s.set_nonblocking(false);
    matches!(r, Ok(n) if n > 0)
}

fn keepalive(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let fd = s.as_raw_fd();
    let set = |level, name, v: libc::c_int| {
        // SAFETY: `fd` is an open socket owned by `s` for this call; the option value is a
        // c_int on the stack whose size is passed alongside.
        unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    };
    set(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 30);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 10);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 6);
}

impl World for TcpWorld {
    fn job_limit(&self, limit: Option<Duration>) {
        self.set_job_limit(limit)
    }
    fn bounds_its_waits(&self) -> bool {
        true
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn barrier(&self) {
        self.try_barrier().unwrap_or_else(|e| self.fatal(e))
    }
    fn all_gather_f64(&self, v: f64) -> Vec<f64> {
        self.try_all_gather_f64(v).unwrap_or_else(|e| self.fatal(e))
    }
    fn all_gather_u64(&self, v: u64) -> Vec<u64> {
        self.try_all_gather_u64(v).unwrap_or_else(|e| self.fatal(e))
    }
    fn all_gather_string(&self, s: &str) -> Vec<String> {
        self.try_all_gather_string(s)
            .unwrap_or_else(|e| self.fatal(e))
    }
    fn broadcast_bytes(&self, data: &mut [u8]) {
        self.try_broadcast_bytes(data)
            .unwrap_or_else(|e| self.fatal(e))
    }
}

#[cfg(test)]
#[path = "world_tests.rs"]
mod tests;
