//! The protocol between threads on 127.0.0.1: real sockets, as between processes.

use super::super::meet::{self, ranges};
use super::*;
use std::io::{Read, Write};
use std::thread;
use std::time::Instant;

fn join_of(rank: usize, size: usize, port: u16, key: &str, timeout_ms: u64) -> Join {
    Join {
        rank,
        size,
        local_rank: rank,
        host: format!("host{rank}"),
        inventory: format!("gpus={rank}"),
        root: Root {
            host: "127.0.0.1".into(),
            port,
            from: "test".into(),
            first_node: false,
        },
        key: Key::derive(key.as_bytes(), "", "test"),
        timeout: Duration::from_millis(timeout_ms),
    }
}

fn listener() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let p = l.local_addr().unwrap().port();
    (l, p)
}

fn me(j: &Join) -> Member {
    Member {
        rank: j.rank,
        local_rank: j.local_rank,
        host: j.host.clone(),
        inventory: j.inventory.clone(),
    }
}

/// Runs `body` on `size` ranks (rank 0 on the given listener) and returns each rank's outcome.
fn ranks<T: Send>(
    size: usize,
    present: &[usize],
    timeout_ms: u64,
    body: impl Fn(TcpWorld) -> T + Sync,
) -> Vec<Result<T, RendezvousError>> {
    let (l, port) = listener();
    thread::scope(|s| {
        let body = &body;
        let mut l = Some(l);
        let hs: Vec<_> = present
            .iter()
            .map(|&r| {
                let j = join_of(r, size, port, "k", timeout_ms);
                let l = if r == 0 { l.take() } else { None };
                s.spawn(move || {
                    let w = match l {
                        Some(l) => TcpWorld::serve(&j, me(&j), l),
                        None => TcpWorld::join(&j),
                    };
                    w.map(body)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn collectives_reach_every_rank_in_rank_order() {
    let out = ranks(4, &[0, 1, 2, 3], 10_000, |w| {
        let r = w.rank();
        w.try_barrier().unwrap();
        let f = w.try_all_gather_f64(r as f64 + 0.5).unwrap();
        let u = w.try_all_gather_u64(10 * r as u64).unwrap();
        let s = w.try_all_gather_string(&"x".repeat(r * 1000)).unwrap();
        let mut id = [0u8; 128];
        if r == 0 {
            id.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        }
        w.try_broadcast_bytes(&mut id).unwrap();
        let hosts: Vec<String> = w.members().iter().map(|m| m.host.clone()).collect();
        (
            f,
            u,
            s.iter().map(String::len).collect::<Vec<_>>(),
            id,
            hosts,
        )
    });
    for o in out {
        let (f, u, s, id, hosts) = o.unwrap();
        assert_eq!(f, vec![0.5, 1.5, 2.5, 3.5]);
        assert_eq!(u, vec![0, 10, 20, 30]);
        assert_eq!(s, vec![0, 1000, 2000, 3000]);
        assert!(id.iter().enumerate().all(|(i, b)| *b == i as u8));
        assert_eq!(hosts, vec!["host0", "host1", "host2", "host3"]);
    }
}

#[test]
fn a_rank_that_never_arrives_is_named_on_every_rank_that_did() {
    let t = Instant::now();
    let out = ranks(4, &[0, 1, 3], 800, |_| ());
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    for o in out {
        let e = o.expect_err("no rank may start without rank 2").to_string();
        assert!(e.contains("rank(s) 2 never arrived"), "{e}");
        assert!(e.contains("3 of 4 did"), "{e}");
    }
}

#[test]
fn a_rank_of_another_launch_never_joins_and_never_learns_the_key() {
    let (l, port) = listener();
    thread::scope(|s| {
        let root = s.spawn(move || {
            let j = join_of(0, 2, port, "slurm:1.0-secret", 1500);
            TcpWorld::serve(&j, me(&j), l).map(|_| ())
        });
        let e = TcpWorld::join(&join_of(1, 2, port, "slurm:2.0-secret", 1500))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("cannot prove this launch's key"), "{e}");
        assert!(!e.contains("secret"), "{e}");
        let e = root.join().unwrap().unwrap_err().to_string();
        assert!(e.contains("rank(s) 1 never arrived"), "{e}");
        assert!(e.contains("hello(s) from another launch's ranks"), "{e}");
    });
}

#[test]
fn a_server_that_is_not_baton_is_refused_as_the_wrong_root() {
    let (l, port) = listener();
    let server = thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.write_all(b"SSH-2.0-OpenSSH_9.2\r\n").unwrap();
        let mut b = [0u8; 64];
        let _ = s.read(&mut b);
    });
    let e = TcpWorld::join(&join_of(1, 2, port, "k", 2000))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("wrong root") && e.contains("SSH-2.0"), "{e}");
    server.join().unwrap();
}

#[test]
fn a_root_that_closes_before_answering_is_retried_and_named_as_such() {
    let (l, port) = listener();
    let server = thread::spawn(move || {
        l.set_nonblocking(true).unwrap();
        let end = Instant::now() + Duration::from_millis(1500);
        while Instant::now() < end {
            match l.accept() {
                Ok((s, _)) => drop(s),
                Err(_) => thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    let e = TcpWorld::join(&join_of(1, 2, port, "k", 1000))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("could not reach rank 0") && e.contains("closed it without answering"),
        "{e}"
    );
    assert!(!e.contains("not a baton rendezvous"), "{e}");
    server.join().unwrap();
}

#[test]
fn nothing_listening_is_unreachable_by_the_deadline() {
    let (l, port) = listener();
    drop(l);
    let t = Instant::now();
    let e = TcpWorld::join(&join_of(3, 4, port, "k", 600))
        .err()
        .unwrap()
        .to_string();
    assert!(t.elapsed() < Duration::from_secs(3));
    assert!(e.contains("rank 3 could not reach rank 0"), "{e}");
}

#[test]
fn a_rank_that_dies_mid_run_is_named_and_every_rank_learns_it() {
    let out = ranks(3, &[0, 1, 2], 10_000, |w| {
        w.try_barrier().unwrap();
        if w.rank() == 2 {
            drop(w);
            return String::new();
        }
        w.try_all_gather_u64(1).unwrap_err().to_string()
    });
    let msgs: Vec<String> = out.into_iter().map(Result::unwrap).collect();
    assert!(msgs[0].contains("rank 2 (host2) is gone"), "{}", msgs[0]);
    assert!(msgs[1].contains("rank 2 (host2) is gone"), "{}", msgs[1]);
}

#[test]
fn a_proven_duplicate_ends_the_rendezvous_for_all() {
    let (l, port) = listener();
    thread::scope(|s| {
        let root = s.spawn(move || {
            let j = join_of(0, 3, port, "k", 5000);
            TcpWorld::serve(&j, me(&j), l).map(|_| ())
        });
        let first = s.spawn(move || TcpWorld::join(&join_of(1, 3, port, "k", 5000)).map(|_| ()));
        thread::sleep(Duration::from_millis(300));
        let dup = TcpWorld::join(&join_of(1, 3, port, "k", 5000))
            .err()
            .unwrap()
            .to_string();
        assert!(dup.contains("rank 1 arrived twice"), "{dup}");
        let e = first.join().unwrap().unwrap_err().to_string();
        assert!(e.contains("rank 1 arrived twice"), "{e}");
        assert!(root.join().unwrap().is_err());
    });
}

#[test]
fn a_proven_rank_of_another_size_is_refused_and_the_run_goes_on() {
    let (l, port) = listener();
    thread::scope(|s| {
        let root = s.spawn(move || {
            let j = join_of(0, 2, port, "k", 3000);
            TcpWorld::serve(&j, me(&j), l).map(|w| {
                w.try_barrier().unwrap();
                w.turned_away().to_vec()
            })
        });
        let e = TcpWorld::join(&join_of(1, 3, port, "k", 3000))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("refused this rank") && e.contains("rank 0 counts 2 ranks, rank 1 counts 3"),
            "{e}"
        );
        let w = TcpWorld::join(&join_of(1, 2, port, "k", 3000)).unwrap();
        w.try_barrier().unwrap();
        let turned = root.join().unwrap().unwrap();
        assert!(turned[0].contains("rank 0 counts 2 ranks"), "{turned:?}");
    });
}

/// A stranger's whole try: hello, challenge, a made-up proof; what rank 0 answered.
fn stranger(port: u16, rank: usize, size: usize) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let hello = format!(
        r#"{{"rank":{rank},"size":{size},"nonce":"{}"}}"#,
        "ab".repeat(32)
    );
    wire::write_greeting(&s, hello.as_bytes()).unwrap();
    let challenge = wire::read_greeting(&s, wire::HELLO_CAP).unwrap();
    assert!(String::from_utf8_lossy(&challenge).contains("proof"));
    let proof = format!(
        r#"{{"proof":"{}","member":{{"rank":{rank},"local_rank":0,"host":"x","inventory":""}}}}"#,
        "00".repeat(32)
    );
    wire::write_greeting(&s, proof.as_bytes()).unwrap();
    let answer = wire::read_greeting(&s, wire::TABLE_CAP).unwrap();
    let _ = s.read(&mut [0u8; 1]);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn strangers_without_the_key_are_refused_dropped_and_end_nothing() {
    let (l, port) = listener();
    thread::scope(|s| {
        let root = s.spawn(move || {
            let j = join_of(0, 3, port, "the-launch-secret", 5000);
            TcpWorld::serve(&j, me(&j), l).map(|w| (w.try_barrier(), w.turned_away().to_vec()))
        });
        // A bad rank, a duplicate of a real rank, another size: all refused the same way.
        let one = s.spawn(move || {
            let w = TcpWorld::join(&join_of(1, 3, port, "the-launch-secret", 5000))?;
            w.try_barrier()
        });
        for (rank, size) in [(5, 3), (1, 3), (2, 9), (0, 3)] {
            let a = stranger(port, rank, size);
            assert!(a.contains("Refused") && a.contains("does not prove"), "{a}");
            assert!(!a.contains("secret\"") && !a.contains("the-launch"), "{a}");
        }
        let two = TcpWorld::join(&join_of(2, 3, port, "the-launch-secret", 5000)).unwrap();
        two.try_barrier().unwrap();
        one.join().unwrap().unwrap();
        let (barrier, turned) = root.join().unwrap().unwrap();
        barrier.unwrap();
        assert!(
            turned
                .iter()
                .any(|t| t.starts_with("4 hello(s) that did not prove")),
            "{turned:?}"
        );
    });
}

#[test]
fn a_slow_greeting_holds_only_itself_and_never_past_the_deadline() {
    let dribble = |port: u16| {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(wire::MAGIC).unwrap();
        s.write_all(&wire::VERSION.to_le_bytes()).unwrap();
        s.write_all(&200u32.to_le_bytes()).unwrap();
        move || {
            for _ in 0..40 {
                if s.write_all(b" ").is_err() {
                    break;
                }
                thread::sleep(Duration::from_millis(100));
            }
        }
    };
    let (l, port) = listener();
    thread::scope(|s| {
        let t = Instant::now();
        let root = s.spawn(move || {
            let j = join_of(0, 2, port, "k", 3000);
            TcpWorld::serve(&j, me(&j), l).map(|_| ())
        });
        let slow = s.spawn(dribble(port));
        thread::sleep(Duration::from_millis(200));
        TcpWorld::join(&join_of(1, 2, port, "k", 3000)).unwrap();
        root.join().unwrap().unwrap();
        // Well before the greeting it waited behind would have ended (4 s) or the deadline (3 s).
        assert!(
            t.elapsed() < Duration::from_millis(2900),
            "{:?}",
            t.elapsed()
        );
        slow.join().unwrap();
    });
    // Alone with it, rank 0 gives up at its deadline and says what it saw.
    let (l, port) = listener();
    thread::scope(|s| {
        let t = Instant::now();
        let root = s.spawn(move || {
            let j = join_of(0, 2, port, "k", 1000);
            TcpWorld::serve(&j, me(&j), l).map(|_| ())
        });
        let slow = s.spawn(dribble(port));
        let e = root.join().unwrap().unwrap_err().to_string();
        assert!(
            t.elapsed() < Duration::from_millis(1800),
            "{:?}",
            t.elapsed()
        );
        assert!(e.contains("rank(s) 1 never arrived"), "{e}");
        assert!(e.contains("that did not finish a hello"), "{e}");
        slow.join().unwrap();
    });
}

#[test]
fn a_fake_root_never_gets_a_proof_and_is_named() {
    let (l, port) = listener();
    let server = thread::spawn(move || {
        l.set_nonblocking(true).unwrap();
        let mut second_greetings = 0;
        let end = Instant::now() + Duration::from_millis(1500);
        while Instant::now() < end {
            let Ok((s, _)) = l.accept() else {
                thread::sleep(Duration::from_millis(5));
                continue;
            };
            s.set_nonblocking(false).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(500)))
                .unwrap();
            if wire::read_greeting(&s, wire::HELLO_CAP).is_err() {
                continue;
            }
            let c = format!(
                r#"{{"nonce":"{}","proof":"{}"}}"#,
                "11".repeat(32),
                "22".repeat(32)
            );
            wire::write_greeting(&s, c.as_bytes()).unwrap();
            if let Ok(b) = wire::read_greeting(&s, wire::PROOF_CAP) {
                second_greetings += usize::from(String::from_utf8_lossy(&b).contains("proof"));
            }
        }
        second_greetings
    });
    let e = TcpWorld::join(&join_of(1, 2, port, "k", 1000))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("cannot prove this launch's key"), "{e}");
    assert_eq!(
        server.join().unwrap(),
        0,
        "the rank sent no proof to a fake root"
    );
}

#[test]
fn a_rank_that_joins_and_stays_silent_is_named_by_the_deadline() {
    let (l, port) = listener();
    thread::scope(|s| {
        let t = Instant::now();
        let root = s.spawn(move || {
            let j = join_of(0, 3, port, "k", 1000);
            TcpWorld::serve(&j, me(&j), l)
                .unwrap()
                .try_barrier()
                .unwrap_err()
                .to_string()
        });
        let two = s.spawn(move || {
            let w = TcpWorld::join(&join_of(2, 3, port, "k", 1000)).unwrap();
            w.try_barrier().unwrap_err().to_string()
        });
        let silent = TcpWorld::join(&join_of(1, 3, port, "k", 1000)).unwrap();
        let e = root.join().unwrap();
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert!(
            e.contains("rank 1 (host1) did not reach barrier within 1 s"),
            "{e}"
        );
        assert!(!e.contains("rank 2"), "rank 2 came: {e}");
        let e = two.join().unwrap();
        assert!(e.contains("rank 1 (host1) did not reach barrier"), "{e}");
        drop(silent);
    });
}

#[test]
fn a_root_that_stays_silent_after_the_meeting_is_named_by_the_others() {
    let (l, port) = listener();
    thread::scope(|s| {
        let root = s.spawn(move || {
            let j = join_of(0, 2, port, "k", 1000);
            let w = TcpWorld::serve(&j, me(&j), l).unwrap();
            thread::sleep(Duration::from_millis(7500));
            drop(w);
        });
        let t = Instant::now();
        let w = TcpWorld::join(&join_of(1, 2, port, "k", 1000)).unwrap();
        let e = w.try_barrier().unwrap_err().to_string();
        assert!(
            t.elapsed() < Duration::from_millis(7500),
            "{:?}",
            t.elapsed()
        );
        assert!(
            e.contains("rank 0 (host0) did not answer barrier within 6 s"),
            "{e}"
        );
        root.join().unwrap();
    });
}

#[test]
fn within_a_job_the_wait_is_the_jobs_and_after_it_the_worlds_again() {
    let out = ranks(2, &[0, 1], 1500, |w| {
        w.set_job_limit(Some(Duration::from_secs(10)));
        if w.rank() == 1 {
            thread::sleep(Duration::from_millis(2000));
        }
        w.try_barrier().unwrap();
        w.set_job_limit(None);
        if w.rank() == 1 {
            thread::sleep(Duration::from_millis(2000));
        }
        w.try_barrier().map_err(|e| e.to_string())
    });
    let e = out[0].as_ref().unwrap().as_ref().unwrap_err();
    assert!(e.contains("rank 1 (host1) did not reach barrier"), "{e}");
}

/// Rank 1's raw connection, to send what a well-behaved rank never would.
fn raw(w: &TcpWorld) -> &TcpStream {
    match &w.link {
        Link::Peer(s) => s,
        Link::Root(_) => panic!("rank 0 has no single link"),
    }
}

#[test]
fn barriers_carry_no_body_and_a_gather_is_capped_in_sum() {
    let out = ranks(2, &[0, 1], 5000, |w| {
        if w.rank() == 1 {
            wire::write_frame(raw(&w), wire::BARRIER, &[7u8; 1000]).unwrap();
            return String::new();
        }
        w.try_barrier().unwrap_err().to_string()
    });
    let e = out[0].as_ref().unwrap();
    assert!(
        e.contains("rank 1 (host1) sent a frame of 1000 bytes, over the 0-byte limit"),
        "{e}"
    );
    let big = vec![b'x'; (wire::FRAME_CAP / 2) as usize];
    let out = ranks(3, &[0, 1, 2], 5000, |w| {
        if w.rank() == 0 {
            return w.try_all_gather_string("").unwrap_err().to_string();
        }
        let _ = wire::write_frame(raw(&w), wire::GATHER_STRING, &big);
        thread::sleep(Duration::from_millis(500));
        String::new()
    });
    let e = out[0].as_ref().unwrap();
    assert!(e.contains("rank 2 (host2) sent a frame of"), "{e}");
}

#[test]
fn hostile_greetings_are_dropped_by_kind() {
    let key = Key::derive(b"k", "", "t");
    let greeting = |b: &[u8]| {
        let mut g = Vec::new();
        wire::write_greeting(&mut g, b).unwrap();
        g
    };
    let hello =
        greeting(format!(r#"{{"rank":1,"size":2,"nonce":"{}"}}"#, "ab".repeat(32)).as_bytes());
    let cases: Vec<(Vec<u8>, meet::Dropped)> = vec![
        (Vec::new(), meet::Dropped::Silent),
        (wire::MAGIC[..5].to_vec(), meet::Dropped::NotBaton),
        (b"GET / HTTP/1.0\r\n\r\n".to_vec(), meet::Dropped::NotBaton),
        (greeting(b"{}"), meet::Dropped::NotBaton),
        (
            greeting(br#"{"rank":1,"size":2,"nonce":"short"}"#),
            meet::Dropped::NotBaton,
        ),
        (hello[..hello.len() - 3].to_vec(), meet::Dropped::Incomplete),
        (hello.clone(), meet::Dropped::Incomplete),
        (
            [hello.clone(), greeting(b"not json")].concat(),
            meet::Dropped::BadKey,
        ),
    ];
    for (input, want) in cases {
        let mut d = wire::Duplex::new(input.clone());
        match meet::greet(&mut d, &key, 2) {
            meet::Greeted::Dropped { why, .. } => assert_eq!(why, want, "{input:?}"),
            g => panic!("{input:?} let in: {g:?}"),
        }
        if want == meet::Dropped::BadKey {
            let answer = String::from_utf8_lossy(&d.output).into_owned();
            assert!(answer.contains("does not prove"), "{answer}");
        }
    }
}

#[test]
fn ranges_are_compact() {
    assert_eq!(ranges(&[1, 2, 3, 7, 9, 10]), "1-3,7,9-10");
}
