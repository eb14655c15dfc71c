//! The meeting, rank 0's side: it greets every connection on a thread of its own, each within a
//! short deadline, so a connection that dribbles or says nothing holds only itself. The other
//! ranks' side is `dial`.
//!
//! The greeting, both ways: a rank says hello (its rank, the size, a nonce); rank 0 answers with
//! its nonce and a proof of the key over both; the rank checks it, then sends its own proof,
//! bound to both nonces and to what it says of itself. Rank 0 answers a wrong hello (no proof,
//! another size, a rank out of range) with a refusal naming nothing secret and drops it; only a
//! second proven arrival of a rank that is still connected ends the run.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::RendezvousError;
use super::auth::{self, Block, Key};
use super::wire::{self, Timed, WireError};
use super::world::{Join, Member};
use crate::deadline::Deadline;

/// How long rank 0 gives one connection for its whole greeting.
pub const GREET_TIME: Duration = Duration::from_secs(2);
/// How long a rank waits for rank 0's challenge before it tries again.
pub(super) const CHALLENGE_WAIT: Duration = Duration::from_secs(5);
/// Greetings under way at once; more connections are turned away and retry.
const MAX_PENDING: usize = 64;
/// What a rank sends instead of its proof to a rank 0 that could not prove the key.
pub(super) const NOT_MINE: &[u8] = b"\"not this launch's rank 0\"";

#[derive(Serialize, Deserialize)]
pub(super) struct Hello {
    pub rank: usize,
    pub size: usize,
    pub nonce: String,
}

#[derive(Serialize, Deserialize)]
pub(super) struct Challenge {
    pub nonce: String,
    pub proof: String,
}

#[derive(Serialize, Deserialize)]
pub(super) struct Proof {
    pub proof: String,
    pub member: Member,
}

/// Rank 0's last word to a rank.
#[derive(Debug, Serialize, Deserialize)]
pub enum Answer {
    Welcome(Vec<Member>),
    /// This rank is not let in; the run goes on without it.
    Refused(String),
    /// The run cannot start: why.
    Failed(String),
}

/// What became of one connection at rank 0.
#[derive(Debug)]
pub enum Greeted {
    /// It proved the key and is a rank of this launch.
    Rank(Member),
    /// Dropped: the rank it said it was, if it got that far, and why.
    Dropped {
        claimed: Option<usize>,
        why: Dropped,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dropped {
    /// Nothing at all in time.
    Silent,
    /// Part of a greeting, then nothing in time or a closed connection.
    Incomplete,
    /// Bytes that are not this protocol (or another version of it).
    NotBaton,
    /// A hello without a valid proof of the key.
    BadKey,
    /// A rank of another launch: this rank 0 could not prove its key to it.
    Other,
    /// A proven hello that does not fit: another size, a rank out of range.
    Wrong(String),
}

/// What a rank proves of itself besides the nonces.
fn says(size: usize, m: &Member) -> [Vec<u8>; 5] {
    [
        (m.rank as u64).to_le_bytes().to_vec(),
        (size as u64).to_le_bytes().to_vec(),
        (m.local_rank as u64).to_le_bytes().to_vec(),
        m.host.as_bytes().to_vec(),
        m.inventory.as_bytes().to_vec(),
    ]
}

pub(super) fn proof_of(key: &Key, root: &Block, peer: &Block, size: usize, m: &Member) -> Block {
    let s = says(size, m);
    let parts: Vec<&[u8]> = s.iter().map(Vec::as_slice).collect();
    key.peer_proof(root, peer, &parts)
}

/// Counts what was read, to tell a silent connection from a half-finished greeting.
struct Counting<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.n += n as u64;
        Ok(n)
    }
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Rank 0's side of one connection's greeting, whatever the other end sends. The stream's
/// deadline bounds it (a [`Timed`] socket in a run).
pub fn greet<S: Read + Write>(s: S, key: &Key, size: usize) -> Greeted {
    let mut s = Counting { inner: s, n: 0 };
    let dropped = |claimed, why| Greeted::Dropped { claimed, why };
    let hello = match wire::read_greeting(&mut s, wire::HELLO_CAP) {
        Ok(b) => b,
        Err(WireError::Version(_)) => {
            let _ = send(
                &mut s,
                &Answer::Refused("rank 0 speaks another version".into()),
            );
            return dropped(None, Dropped::NotBaton);
        }
        Err(WireError::NotBaton(_) | WireError::TooLarge(_)) => {
            return dropped(None, Dropped::NotBaton);
        }
        Err(_) if s.n == 0 => return dropped(None, Dropped::Silent),
        Err(_) => return dropped(None, Dropped::Incomplete),
    };
    let Some((hello, theirs)) = serde_json::from_slice::<Hello>(&hello)
        .ok()
        .and_then(|h| Some((auth::unhex(&h.nonce)?, h)).map(|(n, h)| (h, n)))
    else {
        return dropped(None, Dropped::NotBaton);
    };
    let claimed = Some(hello.rank);
    let Ok(mine) = auth::nonce() else {
        return dropped(claimed, Dropped::Incomplete);
    };
    let challenge = Challenge {
        nonce: auth::hex(&mine),
        proof: auth::hex(&key.root_proof(&theirs, &mine)),
    };
    let body = serde_json::to_vec(&challenge).unwrap_or_default();
    if wire::write_greeting(&mut s, &body).is_err() {
        return dropped(claimed, Dropped::Incomplete);
    }
    let proof = match wire::read_greeting(&mut s, wire::PROOF_CAP) {
        Ok(b) if b == NOT_MINE => return dropped(claimed, Dropped::Other),
        Ok(b) => serde_json::from_slice::<Proof>(&b).ok(),
        Err(WireError::NotBaton(_) | WireError::TooLarge(_) | WireError::Version(_)) => None,
        Err(_) => return dropped(claimed, Dropped::Incomplete),
    };
    let proven = proof.filter(|p| {
        auth::unhex(&p.proof).is_some_and(|got| {
            auth::same(&got, &proof_of(key, &mine, &theirs, hello.size, &p.member))
        })
    });
    let Some(Proof { member, .. }) = proven else {
        let why = "this hello does not prove the launch's key (a rank of another launch at this \
                   address, or BATON_RUN_KEY differs between the ranks)";
        let _ = send(&mut s, &Answer::Refused(why.into()));
        return dropped(claimed, Dropped::BadKey);
    };
    let wrong = if hello.size != size {
        Some(format!(
            "rank 0 counts {size} ranks, rank {} counts {}",
            hello.rank, hello.size
        ))
    } else if member.rank != hello.rank || member.rank == 0 || member.rank >= size {
        Some(format!(
            "rank {} is not one of ranks 1 to {} that rank 0 waits for",
            member.rank,
            size - 1
        ))
    } else if member.host.len() > wire::NAME_CAP || member.inventory.len() > wire::NAME_CAP {
        Some(format!(
            "rank {} sent a host name or inventory over {} bytes",
            member.rank,
            wire::NAME_CAP
        ))
    } else {
        None
    };
    if let Some(why) = wrong {
        let _ = send(&mut s, &Answer::Refused(why.clone()));
        return dropped(claimed, Dropped::Wrong(why));
    }
    Greeted::Rank(member)
}

pub fn send(s: impl Write, a: &Answer) -> std::io::Result<()> {
    let body = serde_json::to_vec(a).map_err(std::io::Error::other)?;
    wire::write_greeting(s, &body)
}

/// The connections rank 0 dropped, for the message at the deadline and for `baton ranks`.
#[derive(Default)]
pub struct Turned {
    seen: BTreeMap<String, (usize, BTreeSet<String>)>,
}

impl Turned {
    fn add(&mut self, from: SocketAddr, claimed: Option<usize>, why: &Dropped) {
        let secs = GREET_TIME.as_secs();
        let what = match (why, claimed) {
            (Dropped::Silent, _) => format!("connection(s) that sent nothing within {secs} s"),
            (Dropped::Incomplete, Some(r)) => format!(
                "connection(s) that said they were rank {r} but did not finish the greeting within {secs} s"
            ),
            (Dropped::Incomplete, None) => {
                format!("connection(s) that did not finish a hello within {secs} s")
            }
            (Dropped::NotBaton, _) => {
                "connection(s) that did not speak this rendezvous protocol".into()
            }
            (Dropped::BadKey, _) => "hello(s) that did not prove the launch's key".into(),
            (Dropped::Other, _) => {
                "hello(s) from another launch's ranks (this rank 0 could not prove their key)"
                    .into()
            }
            (Dropped::Wrong(w), _) => format!("hello(s) that did not fit: {w}"),
        };
        let e = self.seen.entry(what).or_default();
        e.0 += 1;
        if e.1.len() < 3 {
            e.1.insert(from.ip().to_string());
        }
    }

    fn busy(&mut self, from: SocketAddr) {
        self.add_text(
            format!("connection(s) that came while {MAX_PENDING} greetings were under way"),
            from,
        );
    }

    fn add_text(&mut self, what: String, from: SocketAddr) {
        let e = self.seen.entry(what).or_default();
        e.0 += 1;
        e.1.insert(from.ip().to_string());
    }

    pub fn lines(&self) -> Vec<String> {
        self.seen
            .iter()
            .map(|(what, (n, from))| {
                let from: Vec<&str> = from.iter().map(String::as_str).collect();
                format!("{n} {what} (from {})", from.join(", "))
            })
            .collect()
    }
}

/// Rank 0 met every rank: the table, each rank's connection, and what it turned away.
pub struct Met {
    pub members: Vec<Member>,
    pub links: Vec<Option<TcpStream>>,
    pub turned: Turned,
}

/// Rank 0 with a listener already bound.
pub fn serve(j: &Join, me: Member, l: TcpListener) -> Result<Met, RendezvousError> {
    let deadline = Deadline::after(j.timeout);
    let listen_err = |source| RendezvousError::Listen {
        addr: j.root.display(),
        source,
    };
    l.set_nonblocking(true).map_err(listen_err)?;
    let (tx, rx) = mpsc::channel::<(TcpStream, SocketAddr, Greeted)>();
    let mut ranks: BTreeMap<usize, (TcpStream, Member)> = BTreeMap::new();
    let mut turned = Turned::default();
    let mut pending = 0usize;
    while ranks.len() + 1 < j.size {
        for (s, from, g) in rx.try_iter() {
            pending -= 1;
            hear(&mut ranks, &mut turned, s, from, g)?;
        }
        if ranks.len() + 1 == j.size {
            break;
        }
        if deadline.passed() {
            // Greetings under way end by the deadline too: hear how.
            let grace = Deadline::after(Duration::from_millis(200));
            while pending > 0 {
                let Ok((s, from, g)) = rx.recv_timeout(grace.left()) else {
                    break;
                };
                pending -= 1;
                hear(&mut ranks, &mut turned, s, from, g)?;
            }
            let missing: Vec<usize> = (1..j.size).filter(|r| !ranks.contains_key(r)).collect();
            let lines = turned.lines();
            let e = RendezvousError::Missing {
                missing: ranges(&missing),
                addr: j.root.display(),
                secs: j.timeout.as_secs_f64(),
                arrived: ranks.len() + 1,
                size: j.size,
                seen: if lines.is_empty() {
                    String::new()
                } else {
                    format!("; rank 0 dropped {}", lines.join("; "))
                },
            };
            fail_all(&mut ranks, &e.to_string());
            return Err(e);
        }
        match l.accept() {
            Ok((s, from)) if pending >= MAX_PENDING => {
                drop(s);
                turned.busy(from);
            }
            Ok((s, from)) => {
                let until = deadline.within(GREET_TIME);
                let (key, size, tx) = (j.key.clone(), j.size, tx.clone());
                let spawned = std::thread::Builder::new()
                    .name("baton-greet".into())
                    .spawn(move || {
                        let g = if s.set_nonblocking(false).is_ok() {
                            greet(Timed { s: &s, until }, &key, size)
                        } else {
                            Greeted::Dropped {
                                claimed: None,
                                why: Dropped::Incomplete,
                            }
                        };
                        let _ = tx.send((s, from, g));
                    });
                if spawned.is_ok() {
                    pending += 1;
                }
            }
            Err(e) if wire::is_timeout(&e) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionAborted => {}
            Err(e) => return Err(listen_err(e)),
        }
    }
    let mut members = vec![me];
    let mut links = vec![None];
    for (_, (s, m)) in ranks {
        members.push(m);
        links.push(Some(s));
    }
    let table = Answer::Welcome(members.clone());
    for (r, s) in links.iter_mut().enumerate() {
        let Some(s) = s else { continue };
        let until = Deadline::after(Duration::from_secs(10));
        send(Timed { s, until }, &table).map_err(|e| RendezvousError::PeerLost {
            rank: r,
            host: members[r].host.clone(),
            why: e.to_string(),
        })?;
    }
    Ok(Met {
        members,
        links,
        turned,
    })
}

fn hear(
    ranks: &mut BTreeMap<usize, (TcpStream, Member)>,
    turned: &mut Turned,
    s: TcpStream,
    from: SocketAddr,
    g: Greeted,
) -> Result<(), RendezvousError> {
    match g {
        Greeted::Rank(m) => arrive(ranks, s, m),
        Greeted::Dropped { claimed, why } => {
            turned.add(from, claimed, &why);
            Ok(())
        }
    }
}

/// A proven rank joins, unless that rank is here already and still connected: then two
/// launches share one key and address, and neither can run.
fn arrive(
    ranks: &mut BTreeMap<usize, (TcpStream, Member)>,
    s: TcpStream,
    m: Member,
) -> Result<(), RendezvousError> {
    if let Some((old, first)) = ranks.get(&m.rank)
        && !gone(old)
    {
        let why = format!(
            "rank {} arrived twice, from {} and from {}, both with the launch's key (two launches \
             sharing one BATON_RUN_KEY at one address?)",
            m.rank, first.host, m.host
        );
        let _ = send(
            Timed {
                s: &s,
                until: Deadline::after(Duration::from_secs(2)),
            },
            &Answer::Failed(why.clone()),
        );
        fail_all(ranks, &why);
        return Err(RendezvousError::Duplicate(why));
    }
    ranks.insert(m.rank, (s, m));
    Ok(())
}

/// Whether the other end closed (a rank that retried after its first connection broke).
fn gone(s: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    let _ = s.set_nonblocking(true);
    let r = s.peek(&mut b);
    let _ = s.set_nonblocking(false);
    match r {
        Ok(n) => n == 0,
        Err(e) => !wire::is_timeout(&e),
    }
}

fn fail_all(ranks: &mut BTreeMap<usize, (TcpStream, Member)>, why: &str) {
    let until = Deadline::after(Duration::from_secs(2));
    for (s, _) in ranks.values() {
        let _ = send(Timed { s, until }, &Answer::Failed(why.to_string()));
    }
}

/// `1-3,7` for `[1,2,3,7]`.
pub fn ranges(v: &[usize]) -> String {
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
