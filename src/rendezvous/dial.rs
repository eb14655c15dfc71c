//! The meeting, the side of every rank but 0: connect, check that rank 0 proves the key, prove
//! it back, and wait for the table. What may pass (a root not up yet, another launch's root, a
//! root that closed before answering) is tried again until the rendezvous deadline, and the
//! error then says what the tries met; a server that is not baton's ends it at once.

use std::net::TcpStream;
use std::time::Duration;

use super::RendezvousError;
use super::auth;
use super::meet::{Answer, CHALLENGE_WAIT, Challenge, Hello, NOT_MINE, Proof, proof_of};
use super::wire::{self, Timed, WireError};
use super::world::{Join, Member};
use crate::deadline::Deadline;

/// What one try at joining ended in.
enum Try {
    /// Worth another try before the deadline: what happened.
    Again(String),
    /// As `Again`, but something answered there: worth naming even if later tries find nobody.
    Answered(String),
    Fatal(RendezvousError),
}

/// A rank other than 0: tries until the deadline, and says what the last try met.
pub fn connect(j: &Join, me: &Member) -> Result<(Vec<Member>, TcpStream), RendezvousError> {
    let deadline = Deadline::after(j.timeout);
    let mut backoff = Duration::from_millis(50);
    let mut last = String::from("nothing tried");
    // What a try that got through to something met: kept when later tries find nobody.
    let mut met: Option<String> = None;
    loop {
        if deadline.passed() {
            if let Some(m) = met.filter(|m| *m != last) {
                last = format!("{last}; earlier, {m}");
            }
            return Err(RendezvousError::Unreachable {
                rank: j.rank,
                addr: j.root.display(),
                secs: j.timeout.as_secs_f64(),
                last,
            });
        }
        match attempt(j, me, deadline) {
            Ok(done) => return Ok(done),
            Err(Try::Fatal(e)) => return Err(e),
            Err(Try::Again(why)) => last = why,
            Err(Try::Answered(why)) => {
                met = Some(why.clone());
                last = why;
            }
        }
        deadline.sleep(backoff);
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}

fn reach(j: &Join, deadline: Deadline) -> Result<TcpStream, String> {
    let addrs = j.root.resolve()?;
    let mut err = format!("{} resolves to no address", j.root.host);
    for a in addrs {
        match deadline.within(Duration::from_secs(2)).connect(&a) {
            Ok(s) => return Ok(s),
            Err(e) => err = format!("{a}: {e}"),
        }
    }
    Err(err)
}

fn attempt(j: &Join, me: &Member, deadline: Deadline) -> Result<(Vec<Member>, TcpStream), Try> {
    let s = reach(j, deadline).map_err(Try::Again)?;
    let left = deadline.left();
    let wrong = |why: String| {
        Try::Fatal(RendezvousError::WrongRoot {
            addr: j.root.display(),
            why,
        })
    };
    let theirs = auth::nonce().map_err(|e| {
        Try::Fatal(RendezvousError::Protocol {
            who: "this rank".into(),
            why: format!("no random nonce: {e}"),
        })
    })?;
    let greet_until = deadline.within(CHALLENGE_WAIT);
    let t = || Timed {
        s: &s,
        until: greet_until,
    };
    let hello = Hello {
        rank: j.rank,
        size: j.size,
        nonce: auth::hex(&theirs),
    };
    wire::write_greeting(t(), &serde_json::to_vec(&hello).unwrap_or_default())
        .map_err(|e| Try::Again(format!("sending the hello: {e}")))?;
    let challenge = match wire::read_greeting(t(), wire::HELLO_CAP) {
        Ok(b) => b,
        Err(WireError::Closed) => {
            return Err(Try::Answered(
                "rank 0 accepted the connection and closed it without answering (it ended before \
                 answering, or turned the connection away while busy)"
                    .into(),
            ));
        }
        Err(WireError::Io(e)) if wire::is_timeout(&e) => {
            return Err(Try::Answered(format!(
                "rank 0 accepted the connection but sent nothing within {:.0} s (it is stuck or busy)",
                left.min(CHALLENGE_WAIT).as_secs_f64()
            )));
        }
        Err(WireError::Io(e)) => return Err(Try::Again(e.to_string())),
        Err(e) => return Err(wrong(e.to_string())),
    };
    let Some((mine, proof)) = serde_json::from_slice::<Challenge>(&challenge)
        .ok()
        .and_then(|c| Some((auth::unhex(&c.nonce)?, auth::unhex(&c.proof)?)))
    else {
        return Err(wrong("an answer that is not a rendezvous challenge".into()));
    };
    if !auth::same(&proof, &j.key.root_proof(&theirs, &mine)) {
        let _ = wire::write_greeting(t(), NOT_MINE);
        return Err(Try::Answered(
            "the rank 0 there cannot prove this launch's key: it is another launch's (two \
             launches at one address), or BATON_RUN_KEY differs between the ranks"
                .into(),
        ));
    }
    let p = Proof {
        proof: auth::hex(&proof_of(&j.key, &mine, &theirs, j.size, me)),
        member: me.clone(),
    };
    wire::write_greeting(t(), &serde_json::to_vec(&p).unwrap_or_default())
        .map_err(|e| Try::Again(format!("sending the proof: {e}")))?;
    // Rank 0 answers when the last rank arrives or at its own deadline, later than ours when
    // it started later: wait for it past ours.
    let wait = deadline.left() + j.timeout;
    let until = deadline.plus(j.timeout);
    let lost = |why: String| {
        Try::Fatal(RendezvousError::PeerLost {
            rank: 0,
            host: j.root.host.clone(),
            why,
        })
    };
    let answer = match wire::read_greeting(Timed { s: &s, until }, wire::TABLE_CAP) {
        Ok(b) => serde_json::from_slice::<Answer>(&b)
            .map_err(|e| wrong(format!("an answer that is not a rendezvous answer: {e}")))?,
        Err(WireError::Io(e)) if wire::is_timeout(&e) => {
            return Err(lost(format!(
                "it let this rank in but sent no table within {:.0} s",
                wait.as_secs_f64()
            )));
        }
        Err(e) => return Err(lost(format!("before the table came: {e}"))),
    };
    match answer {
        Answer::Welcome(members) if members.len() == j.size => Ok((members, s)),
        Answer::Welcome(m) => Err(wrong(format!(
            "rank 0 sent a table of {} ranks, not {}",
            m.len(),
            j.size
        ))),
        Answer::Refused(why) => Err(Try::Fatal(RendezvousError::Turned(why))),
        Answer::Failed(why) => Err(Try::Fatal(RendezvousError::Refused(why))),
    }
}
