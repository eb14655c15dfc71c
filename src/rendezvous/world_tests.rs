//! The protocol between threads on 127.0.0.1: real sockets, as between processes.

use super::*;
use std::io::{Read, Write};
use std::thread;

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
        key: key.into(),
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
fn a_rank_of_another_launch_is_refused_as_the_wrong_root() {
    let (l, port) = listener();
    thread::scope(|s| {
        let root = s.spawn(move || {
            let j = join_of(0, 2, port, "slurm:1.0", 1500);
            TcpWorld::serve(&j, me(&j), l).map(|_| ())
        });
        let e = TcpWorld::join(&join_of(1, 2, port, "slurm:2.0", 1500))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("wrong root") && e.contains("slurm:1.0"), "{e}");
        let e = root.join().unwrap().unwrap_err().to_string();
        assert!(e.contains("rank(s) 1 never arrived"), "{e}");
    });
}

#[test]
fn a_server_that_is_not_baton_is_refused_as_the_wrong_root() {
    for (banner, says) in [
        (&b"SSH-2.0-OpenSSH_9.2\r\n"[..], "SSH-2.0"),
        (&b""[..], "closed the connection without answering"),
    ] {
        let (l, port) = listener();
        let server = thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            s.write_all(banner).unwrap();
            let mut b = [0u8; 64];
            let _ = s.read(&mut b);
        });
        let e = TcpWorld::join(&join_of(1, 2, port, "k", 2000))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("wrong root") && e.contains(says), "{e}");
        server.join().unwrap();
    }
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
fn mismatched_sizes_and_duplicate_ranks_end_the_rendezvous_for_all() {
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
    let (l, port) = listener();
    thread::scope(|s| {
        let root = s.spawn(move || {
            let j = join_of(0, 2, port, "k", 5000);
            TcpWorld::serve(&j, me(&j), l).map(|_| ())
        });
        let e = TcpWorld::join(&join_of(1, 3, port, "k", 5000))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("counts 3 ranks") && e.contains("counts 2"),
            "{e}"
        );
        assert!(root.join().unwrap().is_err());
    });
}

#[test]
fn ranges_are_compact() {
    assert_eq!(ranges(&[1, 2, 3, 7, 9, 10]), "1-3,7,9-10");
}
