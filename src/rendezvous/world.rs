//! [`TcpWorld`]: the ranks of one launch, met at rank 0 and talking through it (a star). Rank 0
//! waits for every other rank until a deadline and then tells each one the whole table or why
//! the run cannot start; a collective reads one frame from every rank, in rank order, and sends
//! the result back. A rank that died shows up as a closed connection (or, for a node that
//! vanished, as TCP keepalive giving up), is named, and every rank still there learns it.

use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::wire::{self, WireError};
use super::{RendezvousError, Root};
use crate::runner::world::World;

/// One rank as it introduced itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub rank: usize,
    pub local_rank: usize,
    pub host: String,
    /// What the rank sees (its GPUs), for the table `baton ranks` prints.
    pub inventory: String,
}

/// What a rank says when it arrives.
#[derive(Debug, Serialize, Deserialize)]
struct Hello {
    key: String,
    size: usize,
    member: Member,
}

/// Rank 0's answer to a hello.
#[derive(Debug, Serialize, Deserialize)]
enum Answer {
    Welcome(Vec<Member>),
    /// The hello came from another launch.
    WrongRun(String),
    /// The run cannot start: why.
    Failed(String),
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
    /// Ranks of other launches must not be taken for ours ([`super::address::run_key`]).
    pub key: String,
    pub timeout: Duration,
}

enum Link {
    /// Rank 0: a connection per other rank, indexed by rank (slot 0 empty).
    Root(Vec<Option<TcpStream>>),
    Peer(TcpStream),
}

/// The world of one rank among the processes of a launch.
pub struct TcpWorld {
    rank: usize,
    size: usize,
    members: Vec<Member>,
    link: Link,
}

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
        if j.rank == 0 {
            let addr = j.root.bind_addr();
            let l = TcpListener::bind(addr).map_err(|source| RendezvousError::Listen {
                addr: format!("{addr} (for {})", j.root.display()),
                source,
            })?;
            Self::serve(j, me, l)
        } else {
            Self::connect(j, me)
        }
    }

    /// Rank 0 with a listener already bound (tests bind port 0 first).
    pub fn serve(j: &Join, me: Member, l: TcpListener) -> Result<TcpWorld, RendezvousError> {
        let deadline = Instant::now() + j.timeout;
        let mut slots: Vec<Option<(TcpStream, Member)>> = (0..j.size).map(|_| None).collect();
        let nonblocking = |e| RendezvousError::Listen {
            addr: j.root.display(),
            source: e,
        };
        l.set_nonblocking(true).map_err(nonblocking)?;
        let mut arrived = 1;
        let fail = |slots: &mut Vec<Option<(TcpStream, Member)>>, why: &str| {
            for (s, _) in slots.iter_mut().flatten() {
                let _ = send_answer(s, &Answer::Failed(why.to_string()));
            }
        };
        while arrived < j.size {
            let now = Instant::now();
            if now >= deadline {
                let missing: Vec<usize> = (1..j.size).filter(|r| slots[*r].is_none()).collect();
                let e = RendezvousError::Missing {
                    missing: ranges(&missing),
                    addr: j.root.display(),
                    secs: j.timeout.as_secs_f64(),
                    arrived,
                    size: j.size,
                };
                fail(&mut slots, &e.to_string());
                return Err(e);
            }
            let (mut s, _) = match l.accept() {
                Ok(c) => c,
                Err(e) if wire::is_timeout(&e) => {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(nonblocking(e)),
            };
            // A stranger that connects and says nothing holds the door only briefly.
            let wait = (deadline - now).clamp(Duration::from_millis(200), Duration::from_secs(5));
            if s.set_nonblocking(false).is_err()
                || s.set_read_timeout(Some(wait)).is_err()
                || s.set_write_timeout(Some(Duration::from_secs(10))).is_err()
            {
                continue;
            }
            let Ok(body) = wire::read_greeting(&s) else {
                continue; // not a baton rank (a port scan, a health check): not ours to answer
            };
            let Ok(h) = serde_json::from_slice::<Hello>(&body) else {
                continue;
            };
            if h.key != j.key {
                let _ = send_answer(
                    &mut s,
                    &Answer::WrongRun(format!(
                        "rank 0 there belongs to launch {:?}, this rank to {:?}",
                        j.key, h.key
                    )),
                );
                continue;
            }
            let r = h.member.rank;
            let problem = if h.size != j.size {
                Some(format!(
                    "rank {r} on {} counts {} ranks, rank 0 on {} counts {}",
                    h.member.host, h.size, me.host, j.size
                ))
            } else if r == 0 || r >= j.size {
                Some(format!(
                    "a process on {} says it is rank {r} of {}",
                    h.member.host, j.size
                ))
            } else if let Some((_, m)) = &slots[r] {
                Some(format!(
                    "rank {r} arrived twice: from {} and from {} (two launches at one address?)",
                    m.host, h.member.host
                ))
            } else {
                None
            };
            if let Some(why) = problem {
                let _ = send_answer(&mut s, &Answer::Failed(why.clone()));
                fail(&mut slots, &why);
                return Err(RendezvousError::Inconsistent(why));
            }
            slots[r] = Some((s, h.member));
            arrived += 1;
        }
        let mut members = vec![me];
        let mut links = vec![None];
        for (s, m) in slots.into_iter().skip(1).flatten() {
            members.push(m);
            links.push(Some(s));
        }
        let table = Answer::Welcome(members.clone());
        for (r, s) in links.iter_mut().enumerate() {
            let Some(s) = s else { continue };
            send_answer(s, &table).map_err(|e| RendezvousError::PeerLost {
                rank: r,
                host: members[r].host.clone(),
                why: e.to_string(),
            })?;
            settle(s);
        }
        Ok(TcpWorld {
            rank: 0,
            size: j.size,
            members,
            link: Link::Root(links),
        })
    }

    fn connect(j: &Join, me: Member) -> Result<TcpWorld, RendezvousError> {
        let start = Instant::now();
        let deadline = start + j.timeout;
        let addr = j.root.display();
        let mut backoff = Duration::from_millis(50);
        let mut last = String::from("nothing tried");
        let mut s = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RendezvousError::Unreachable {
                    rank: j.rank,
                    addr,
                    secs: j.timeout.as_secs_f64(),
                    last,
                });
            }
            let tried = j.root.resolve().and_then(|addrs| {
                let mut err = format!("{} resolves to no address", j.root.host);
                for a in addrs {
                    match TcpStream::connect_timeout(&a, left.min(Duration::from_secs(2))) {
                        Ok(s) => return Ok(s),
                        Err(e) => err = format!("{a}: {e}"),
                    }
                }
                Err(err)
            });
            match tried {
                Ok(s) => break s,
                Err(e) => last = e,
            }
            std::thread::sleep(backoff.min(deadline.saturating_duration_since(Instant::now())));
            backoff = (backoff * 2).min(Duration::from_secs(1));
        };
        let wrong = |why: String| RendezvousError::WrongRoot {
            addr: addr.clone(),
            why,
        };
        let hello = Hello {
            key: j.key.clone(),
            size: j.size,
            member: me,
        };
        let body = serde_json::to_vec(&hello).map_err(|e| wrong(e.to_string()))?;
        // Rank 0 answers when the last rank arrives or at its own deadline, which is later than
        // ours when it started later: wait for it past ours.
        let wait = deadline.saturating_duration_since(Instant::now()) + j.timeout;
        s.set_read_timeout(Some(wait.max(Duration::from_millis(100))))
            .and_then(|_| s.set_write_timeout(Some(Duration::from_secs(10))))
            .and_then(|_| wire::write_greeting(&s, &body))
            .map_err(|e| wrong(format!("sending the hello: {e}")))?;
        let answer = match wire::read_greeting(&s) {
            Ok(b) => serde_json::from_slice::<Answer>(&b)
                .map_err(|e| wrong(format!("an answer that is not a rendezvous answer: {e}")))?,
            Err(WireError::Closed) => {
                return Err(wrong(
                    "it closed the connection without answering (not a baton rendezvous)".into(),
                ));
            }
            Err(WireError::Io(e)) if wire::is_timeout(&e) => {
                return Err(wrong(format!(
                    "it accepted the connection but sent nothing in {:.0} s (not a baton rendezvous, or rank 0 is stuck)",
                    wait.as_secs_f64()
                )));
            }
            Err(e) => return Err(wrong(e.to_string())),
        };
        match answer {
            Answer::Welcome(members) if members.len() == j.size => {
                settle(&mut s);
                Ok(TcpWorld {
                    rank: j.rank,
                    size: j.size,
                    members,
                    link: Link::Peer(s),
                })
            }
            Answer::Welcome(m) => Err(wrong(format!(
                "rank 0 sent a table of {} ranks, not {}",
                m.len(),
                j.size
            ))),
            Answer::WrongRun(why) => Err(wrong(why)),
            Answer::Failed(why) => Err(RendezvousError::Refused(why)),
        }
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
            Link::Peer(s) => {
                let lost = |e: WireError| RendezvousError::PeerLost {
                    rank: 0,
                    host: self.members[0].host.clone(),
                    why: e.to_string(),
                };
                wire::write_frame(s, tag, &mine).map_err(lost)?;
                let (t, body) = wire::read_frame(s).map_err(lost)?;
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
            Link::Root(links) => {
                let mut parts = vec![mine];
                for (r, s) in links.iter().enumerate().skip(1) {
                    let got = match s {
                        Some(s) => wire::read_frame(s),
                        None => Err(WireError::Closed),
                    };
                    let e = match got {
                        Ok((t, body)) if t == tag => {
                            parts.push(body);
                            continue;
                        }
                        Ok((t, _)) => RendezvousError::Protocol {
                            who: format!("rank {r} ({})", self.members[r].host),
                            why: format!(
                                "it called {} while rank 0 called {}",
                                wire::op_name(t),
                                wire::op_name(tag)
                            ),
                        },
                        Err(e) => RendezvousError::PeerLost {
                            rank: r,
                            host: self.members[r].host.clone(),
                            why: e.to_string(),
                        },
                    };
                    self.tell_all(&e.to_string());
                    return Err(e);
                }
                let out = reply(parts);
                for (r, s) in links.iter().enumerate().skip(1) {
                    let sent = match s {
                        Some(s) => wire::write_frame(s, tag, &out),
                        None => Err(WireError::Closed),
                    };
                    if let Err(e) = sent {
                        let e = RendezvousError::PeerLost {
                            rank: r,
                            host: self.members[r].host.clone(),
                            why: e.to_string(),
                        };
                        self.tell_all(&e.to_string());
                        return Err(e);
                    }
                }
                Ok(out)
            }
        }
    }

    /// Rank 0 tells every rank still connected why the run ends.
    fn tell_all(&self, why: &str) {
        if let Link::Root(links) = &self.link {
            for s in links.iter().flatten() {
                let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
                let _ = wire::write_frame(s, wire::FAIL, why.as_bytes());
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

/// After the greeting: collectives wait as long as the run between them takes (the runner's
/// watchdog bounds that), small frames go out at once, and a node that vanished without closing
/// its connections is noticed by keepalive within about a minute and a half.
fn settle(s: &mut TcpStream) {
    let _ = s.set_read_timeout(None);
    let _ = s.set_write_timeout(Some(Duration::from_secs(60)));
    let _ = s.set_nodelay(true);
    keepalive(s);
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

fn send_answer(s: &mut TcpStream, a: &Answer) -> std::io::Result<()> {
    let body = serde_json::to_vec(a).map_err(std::io::Error::other)?;
    wire::write_greeting(&*s, &body)
}

/// `1-3,7` for `[1,2,3,7]`.
fn ranges(v: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// A broken world cannot go on: no collective after a lost rank can complete. The process ends
/// the way an MPI job does on a communication error (`MPI_ERRORS_ARE_FATAL`): with the reason,
/// exit code 3 (runtime failure), and the launcher ends the other ranks. Rank 0 has journaled
/// every measured row before any collective, so nothing measured is lost.
fn fatal(rank: usize, e: RendezvousError) -> ! {
    eprintln!("baton: rank {rank}: {e}");
    std::process::exit(crate::exit::Exit::Runtime.code())
}

impl World for TcpWorld {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn barrier(&self) {
        self.try_barrier().unwrap_or_else(|e| fatal(self.rank, e))
    }
    fn all_gather_f64(&self, v: f64) -> Vec<f64> {
        self.try_all_gather_f64(v)
            .unwrap_or_else(|e| fatal(self.rank, e))
    }
    fn all_gather_u64(&self, v: u64) -> Vec<u64> {
        self.try_all_gather_u64(v)
            .unwrap_or_else(|e| fatal(self.rank, e))
    }
    fn all_gather_string(&self, s: &str) -> Vec<String> {
        self.try_all_gather_string(s)
            .unwrap_or_else(|e| fatal(self.rank, e))
    }
    fn broadcast_bytes(&self, data: &mut [u8]) {
        self.try_broadcast_bytes(data)
            .unwrap_or_else(|e| fatal(self.rank, e))
    }
}

#[cfg(test)]
#[path = "world_tests.rs"]
mod tests;
