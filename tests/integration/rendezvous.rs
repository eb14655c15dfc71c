//! `baton ranks`: processes that meet over the TCP rendezvous, as GPU ranks do, with no MPI
//! library. On localhost with `BATON_RANK`-style placement; on the simulated cluster (with
//! `--features mpi`, like the other cluster tests) under `srun --mpi=none` and `mpirun`. And
//! what a stranger on the node can do to it: guess, dribble, stay silent, pose as rank 0.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{code, show, stderr, stdout};

/// The secret the ranks of these tests share.
const KEY: &str = "test-launch-secret-0123456789";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A `baton` with no launcher's variables from the test's own environment.
fn bare() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
    for v in [
        "SLURM_JOB_ID",
        "SLURM_STEP_ID",
        "SLURM_PROCID",
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "OMPI_MCA_ess_base_jobid",
        "PMI_RANK",
        "PMI_KVSNAME",
        "PMIX_RANK",
        "PALS_RANKID",
        "BATON_RUN_KEY",
    ] {
        c.env_remove(v);
    }
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// `baton ranks` as rank `rank` of `size`, meeting at `addr`, with `key` (none: unset).
fn ranks_cmd(rank: usize, size: usize, addr: &str, timeout: &str, key: Option<&str>) -> Command {
    let mut c = bare();
    c.arg("ranks")
        .env("BATON_RANK", rank.to_string())
        .env("BATON_SIZE", size.to_string())
        .env("BATON_LOCAL_RANK", rank.to_string())
        .env("BATON_RENDEZVOUS", addr)
        .env("BATON_RENDEZVOUS_TIMEOUT", timeout);
    if let Some(k) = key {
        c.env("BATON_RUN_KEY", k);
    }
    c
}

fn rank(rank: usize, size: usize, addr: &str, timeout: &str) -> Child {
    ranks_cmd(rank, size, addr, timeout, Some(KEY))
        .spawn()
        .unwrap()
}

fn wait(c: Child) -> Output {
    c.wait_with_output().unwrap()
}

#[test]
fn ranks_on_localhost_meet_and_rank_0_prints_each_one() {
    let addr = format!("127.0.0.1:{}", free_port());
    // Rank 0 last: the others wait for it.
    let others: Vec<Child> = (1..4).map(|r| rank(r, 4, &addr, "30")).collect();
    std::thread::sleep(Duration::from_millis(300));
    let root = wait(rank(0, 4, &addr, "30"));
    assert_eq!(code(&root), 0, "{}", show(&root));
    let out = stdout(&root);
    assert!(
        out.contains("4 rank(s) on 1 host(s), placed by BATON_RANK"),
        "{out}"
    );
    assert!(out.contains(&format!("met at {addr}")), "{out}");
    for r in 0..4 {
        assert!(
            out.lines().any(|l| l
                .split_whitespace()
                .take(2)
                .eq([r.to_string(), r.to_string()])),
            "no row for rank {r}: {out}"
        );
    }
    assert!(out.contains("barrier round trip:"), "{out}");
    for o in others.into_iter().map(wait) {
        assert_eq!(code(&o), 0, "{}", show(&o));
        assert_eq!(stdout(&o), "", "only rank 0 prints");
    }
}

#[test]
fn a_rank_that_never_comes_is_named_on_every_rank_within_the_timeout() {
    let addr = format!("127.0.0.1:{}", free_port());
    let t = Instant::now();
    let ranks: Vec<Child> = [0, 1, 3].iter().map(|&r| rank(r, 4, &addr, "2")).collect();
    for o in ranks.into_iter().map(wait) {
        assert_eq!(code(&o), 3, "{}", show(&o));
        assert!(
            stderr(&o).contains("rank(s) 2 never arrived") && stderr(&o).contains("3 of 4 did"),
            "{}",
            show(&o)
        );
    }
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[test]
fn a_root_address_where_something_else_listens_is_the_wrong_root() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let server = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let _ = s.write_all(b"HTTP/1.0 400 Bad Request\r\n\r\n");
    });
    let o = wait(rank(1, 2, &addr, "5"));
    assert_eq!(code(&o), 3, "{}", show(&o));
    assert!(
        stderr(&o).contains(&format!("wrong root at {addr}")) && stderr(&o).contains("HTTP/1.0"),
        "{}",
        show(&o)
    );
    server.join().unwrap();
    // Nothing there at all: unreachable, by the deadline.
    let addr = format!("127.0.0.1:{}", free_port());
    let t = Instant::now();
    let o = wait(rank(1, 2, &addr, "1"));
    assert_eq!(code(&o), 3, "{}", show(&o));
    assert!(
        stderr(&o).contains("could not reach rank 0"),
        "{}",
        show(&o)
    );
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn bad_placement_is_named_and_no_launcher_is_invalid() {
    let o = bare()
        .arg("ranks")
        .env("BATON_RANK", "0")
        .env("BATON_SIZE", "abc")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("BATON_SIZE=\"abc\""), "{}", show(&o));
    let o = bare()
        .arg("ranks")
        .env("BATON_RANK", "one")
        .env("BATON_SIZE", "2")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("BATON_RANK=\"one\""), "{}", show(&o));
    let o = Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("ranks")
        .env_remove("BATON_RANK")
        .env_remove("SLURM_STEP_ID")
        .env_remove("OMPI_COMM_WORLD_RANK")
        .env_remove("PMI_RANK")
        .env_remove("PMIX_RANK")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("no launcher placed this process"),
        "{}",
        show(&o)
    );
}

#[cfg(feature = "mpi")]
mod on_the_cluster {
    use super::*;
    use common::cluster::cluster;

    const BATON: &str = env!("CARGO_BIN_EXE_baton");

    /// `srun --mpi=none -N{nodes} --ntasks-per-node={per_node} baton ranks` on the cluster.
    fn srun_ranks(c: &common::cluster::Cluster, nodes: u32, per_node: u32) -> Command {
        let mut cmd = c.cmd("timeout");
        cmd.args(["60", "srun", "--mpi=none"])
            .arg(format!("-N{nodes}"))
            .arg(format!("--ntasks-per-node={per_node}"))
            .args([BATON, "ranks"]);
        cmd
    }

    fn hosts_in(out: &str) -> Vec<String> {
        let mut h: Vec<String> = out
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|w| w.len() >= 3 && w[..2].iter().all(|x| x.parse::<usize>().is_ok()))
            .map(|w| w[2].to_string())
            .collect();
        h.sort();
        h.dedup();
        h
    }

    #[test]
    fn srun_without_mpi_meets_eight_ranks_on_four_nodes() {
        let Some(c) = cluster() else { return };
        let o = srun_ranks(&c, 4, 2)
            .env("BATON_RENDEZVOUS_TIMEOUT", "20")
            .env("BATON_RUN_KEY", KEY)
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", show(&o));
        let out = stdout(&o);
        assert!(
            out.contains("8 rank(s) on 4 host(s), placed by Slurm"),
            "{out}"
        );
        let hosts = hosts_in(&out);
        assert_eq!(hosts.len(), 4, "{out}");
        // Rank 0 is on the step's first node, where every rank looked for it.
        assert!(out.contains(&format!("met at {}:", hosts[0])), "{out}");
    }

    #[test]
    fn mpirun_meets_eight_ranks_at_the_given_root() {
        let Some(c) = cluster() else { return };
        let d = common::tmp("rdv-mpirun");
        let port = super::free_port();
        let o = c.salloc(
            &d,
            2,
            &format!(
                "nodes=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\") && \
                 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 exec mpirun \
                 -H \"$(echo \"$nodes\" | sed 's/$/:2/' | paste -sd,)\" -np 8 \
                 -x BATON_RENDEZVOUS=\"$(echo \"$nodes\" | head -1):{port}\" \
                 -x BATON_RENDEZVOUS_TIMEOUT=20 -x BATON_RUN_KEY={KEY} {BATON} ranks"
            ),
        );
        assert_eq!(code(&o), 0, "{}", show(&o));
        let out = stdout(&o);
        assert!(
            out.contains("8 rank(s) on 4 host(s), placed by Open MPI"),
            "{out}"
        );
        let hosts = hosts_in(&out);
        assert_eq!(hosts.len(), 4, "{out}");
        assert!(
            out.contains(&format!("met at {}:{port}", hosts[0])),
            "{out}"
        );
    }

    #[test]
    fn a_wrong_root_fails_every_rank_clearly() {
        let Some(c) = cluster() else { return };
        // Something that is not baton listens on the machine's end of the bridge.
        let l = TcpListener::bind("10.77.0.254:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || {
            l.set_nonblocking(true).unwrap();
            let end = Instant::now() + Duration::from_secs(20);
            while Instant::now() < end {
                match l.accept() {
                    Ok((mut s, _)) => {
                        let _ = s.write_all(b"SSH-2.0-OpenSSH_9.2\r\n");
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        let t = Instant::now();
        let o = srun_ranks(&c, 2, 1)
            .env("BATON_RENDEZVOUS", &addr)
            .env("BATON_RENDEZVOUS_TIMEOUT", "3")
            .env("BATON_RUN_KEY", KEY)
            .output()
            .unwrap();
        assert_ne!(code(&o), 0, "{}", show(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("wrong root at {addr}")) && err.contains("SSH-2.0"),
            "{}",
            show(&o)
        );
        // Rank 0 listened in its own node and waited in vain: it names who never came.
        assert!(err.contains("rank(s) 1 never arrived"), "{}", show(&o));
        assert!(t.elapsed() < Duration::from_secs(30));
        drop(server);
    }

    #[test]
    fn ranks_across_nodes_without_a_key_are_refused_before_they_meet() {
        let Some(c) = cluster() else { return };
        let o = srun_ranks(&c, 2, 1)
            .env_remove("BATON_RUN_KEY")
            .env("BATON_RENDEZVOUS_TIMEOUT", "5")
            .output()
            .unwrap();
        assert_ne!(code(&o), 0, "{}", show(&o));
        assert!(
            stderr(&o).contains("BATON_RUN_KEY is not set")
                && stderr(&o).contains("export BATON_RUN_KEY="),
            "{}",
            show(&o)
        );
    }
}

/// `baton run PLAN` as rank `rank` of `size` (plain `baton`, no MPI), its output in `out`.
fn run_rank(
    rank: usize,
    size: usize,
    addr: &str,
    timeout: &str,
    plan: &std::path::Path,
    out: &std::path::Path,
) -> Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
    for v in [
        "SLURM_JOB_ID",
        "SLURM_STEP_ID",
        "OMPI_COMM_WORLD_SIZE",
        "PMI_RANK",
        "PMIX_RANK",
    ] {
        c.env_remove(v);
    }
    c.args(["run", common::p(plan), "-o", common::p(out)])
        .env("BATON_RANK", rank.to_string())
        .env("BATON_SIZE", size.to_string())
        .env("BATON_RENDEZVOUS", addr)
        .env("BATON_RENDEZVOUS_TIMEOUT", timeout)
        .env("BATON_RUN_KEY", KEY)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

const TESTS: &str = "  - name: t\n    collective: all_reduce\n    sizes: [1M]\n";

#[test]
fn plain_baton_run_under_a_launcher_is_one_rank_of_the_tcp_world() {
    // The ranks meet and compare what they read before any GPU is touched: two ranks given
    // different plans are refused by rank 0, which shows the collective reached it.
    let d = common::tmp("rdv-run");
    let a = common::two_gpu_plan(&d, "a.yaml", TESTS);
    let b = common::two_gpu_plan(&d, "b.yaml", &format!("{TESTS}    iters: 7\n"));
    let addr = format!("127.0.0.1:{}", free_port());
    let one = run_rank(1, 2, &addr, "10", &b, &d.join("out"));
    let zero = wait(run_rank(0, 2, &addr, "10", &a, &d.join("out")));
    let one = wait(one);
    assert_eq!(code(&zero), 2, "{}", show(&zero));
    assert!(
        stderr(&zero).contains("rank 1 read a different"),
        "{}",
        show(&zero)
    );
    assert_eq!(code(&one), 2, "{}", show(&one));
    // A rank alone names the rendezvous it waited at instead of starting GPU threads itself.
    let addr = format!("127.0.0.1:{}", free_port());
    let t = Instant::now();
    let o = wait(run_rank(1, 2, &addr, "1", &a, &d.join("out2")));
    assert_eq!(code(&o), 3, "{}", show(&o));
    assert!(
        stderr(&o).contains("could not reach rank 0"),
        "{}",
        show(&o)
    );
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn plain_baton_run_of_an_mpi_plan_under_a_launcher_points_at_baton_mpi() {
    let d = common::tmp("rdv-run-mpi");
    let plan = common::mpi_plan(
        &d,
        "m",
        "launch: { nodes: 1, ranks_per_node: 2 }\n",
        "    sizes: [4K]\n",
    );
    let o = wait(run_rank(0, 2, "127.0.0.1:1", "1", &plan, &d.join("out")));
    assert_ne!(code(&o), 0, "{}", show(&o));
    assert!(
        stderr(&o).contains("launch `baton-mpi run`"),
        "{}",
        show(&o)
    );
}

#[test]
fn baton_run_with_half_a_placement_names_the_variable_and_runs_nothing() {
    let d = common::tmp("rdv-run-half");
    let plan = common::two_gpu_plan(&d, "a.yaml", TESTS);
    let o = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["run", common::p(&plan), "-o", common::p(&d.join("out"))])
        .env("BATON_RANK", "1")
        .env_remove("BATON_SIZE")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("BATON_RANK=1 is set but the number of ranks is not"),
        "{}",
        show(&o)
    );
    assert!(!d.join("out/results.json").exists());
}

/// A stranger's hello at `port`: the rank and size it claims and a key it guessed, as the
/// previous protocol carried it; then a made-up proof. Everything rank 0 answered.
fn stranger(port: u16, rank: usize, size: usize) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let greeting = |b: &[u8]| {
        let mut g = b"BATONRDV".to_vec();
        g.extend_from_slice(&2u16.to_le_bytes());
        g.extend_from_slice(&(b.len() as u32).to_le_bytes());
        g.extend_from_slice(b);
        g
    };
    let hello = format!(
        r#"{{"key":"guess","rank":{rank},"size":{size},"nonce":"{}"}}"#,
        "ab".repeat(32)
    );
    let proof = format!(
        r#"{{"proof":"{}","member":{{"rank":{rank},"local_rank":0,"host":"x","inventory":""}}}}"#,
        "00".repeat(32)
    );
    let _ = s.write_all(&greeting(hello.as_bytes()));
    let mut got = vec![0u8; 4096];
    let mut all = Vec::new();
    let n = s.read(&mut got).unwrap_or(0);
    all.extend_from_slice(&got[..n]);
    let _ = s.write_all(&greeting(proof.as_bytes()));
    let _ = s.read_to_end(&mut all);
    String::from_utf8_lossy(&all).into_owned()
}

#[test]
fn a_stranger_who_knows_the_port_never_joins_never_learns_the_key_and_ends_nothing() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let root = rank(0, 2, &addr, "20");
    std::thread::sleep(Duration::from_millis(300));
    // The leak of F3: a guessed hello, then a bad rank, a duplicate of rank 0, another size.
    for (r, n) in [(1, 2), (5, 2), (0, 2), (1, 3)] {
        let a = stranger(port, r, n);
        assert!(!a.contains(KEY), "rank 0 told a stranger its key: {a}");
        assert!(a.contains("does not prove the launch's key"), "{a}");
    }
    let one = wait(rank(1, 2, &addr, "20"));
    let root = wait(root);
    assert_eq!(code(&root), 0, "{}", show(&root));
    assert_eq!(code(&one), 0, "{}", show(&one));
    let out = stdout(&root);
    assert!(
        out.contains("turned away: 4 hello(s) that did not prove the launch's key"),
        "{out}"
    );
    assert!(!show(&root).contains(KEY) && !show(&one).contains(KEY));
}

#[test]
fn a_slow_or_silent_connection_costs_at_most_the_timeout_and_is_named() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let t = Instant::now();
    let root = rank(0, 2, &addr, "3");
    std::thread::sleep(Duration::from_millis(300));
    // F4's slowloris: a greeting that claims 16 MiB, and one that dribbles a short hello.
    let dribble = |len: u32| {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        std::thread::spawn(move || {
            let mut head = b"BATONRDV".to_vec();
            head.extend_from_slice(&2u16.to_le_bytes());
            head.extend_from_slice(&len.to_le_bytes());
            let _ = s.write_all(&head);
            for _ in 0..60 {
                if s.write_all(b" ").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        })
    };
    let (a, b) = (dribble(1 << 24), dribble(200));
    let silent = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let root = wait(root);
    assert!(t.elapsed() < Duration::from_secs(6), "{:?}", t.elapsed());
    assert_eq!(code(&root), 3, "{}", show(&root));
    let err = stderr(&root);
    assert!(err.contains("rank(s) 1 never arrived"), "{err}");
    assert!(err.contains("did not finish a hello within 2 s"), "{err}");
    assert!(
        err.contains("did not speak this rendezvous protocol"),
        "{err}"
    );
    assert!(err.contains("sent nothing within 2 s"), "{err}");
    drop((a, b, silent));
}

#[test]
fn a_rank_that_joins_and_then_says_nothing_is_named_within_the_timeout() {
    use baton::rendezvous::auth::Key;
    use baton::rendezvous::world::{Join, TcpWorld};
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let t = Instant::now();
    let root = rank(0, 2, &addr, "3");
    // Rank 1 is real (it holds the key) but never calls a collective: stopped, or stuck.
    let silent = TcpWorld::join(&Join {
        rank: 1,
        size: 2,
        local_rank: 1,
        host: "quiet-host".into(),
        inventory: String::new(),
        root: baton::rendezvous::Root {
            host: "127.0.0.1".into(),
            port,
            from: "test".into(),
            first_node: false,
        },
        key: Key::derive(KEY.as_bytes(), "", "ranks"),
        timeout: Duration::from_secs(5),
    })
    .unwrap();
    let root = wait(root);
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
    assert_eq!(code(&root), 3, "{}", show(&root));
    assert!(
        stderr(&root).contains("rank 1 (quiet-host) did not reach barrier within 3 s"),
        "{}",
        show(&root)
    );
    drop(silent);
}

#[test]
fn a_fake_or_silent_root_is_named_within_the_timeout() {
    for (answer, says) in [
        (
            // A root that answers like baton but cannot prove the key.
            Some(format!(
                r#"{{"nonce":"{}","proof":"{}"}}"#,
                "11".repeat(32),
                "22".repeat(32)
            )),
            "cannot prove this launch's key",
        ),
        (None, "sent nothing within"),
    ] {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || {
            l.set_nonblocking(true).unwrap();
            let mut held = Vec::new();
            let end = Instant::now() + Duration::from_secs(5);
            while Instant::now() < end {
                let Ok((mut s, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                if let Some(a) = &answer {
                    let mut g = b"BATONRDV".to_vec();
                    g.extend_from_slice(&2u16.to_le_bytes());
                    g.extend_from_slice(&(a.len() as u32).to_le_bytes());
                    g.extend_from_slice(a.as_bytes());
                    let _ = s.write_all(&g);
                }
                held.push(s);
            }
        });
        let t = Instant::now();
        let o = wait(rank(1, 2, &addr, "2"));
        assert!(t.elapsed() < Duration::from_secs(9), "{:?}", t.elapsed());
        assert_eq!(code(&o), 3, "{}", show(&o));
        assert!(
            stderr(&o).contains("could not reach rank 0") && stderr(&o).contains(says),
            "{}",
            show(&o)
        );
        server.join().unwrap();
    }
}

#[test]
fn by_hand_without_a_key_is_refused_and_keyed_launches_on_one_node_never_cross() {
    // No key: refused, saying how to set one, over the network and on one node alike.
    for addr in ["node01:29500", "127.0.0.1:29500"] {
        let o = ranks_cmd(0, 2, addr, "2", None).output().unwrap();
        assert_eq!(code(&o), 2, "{}", show(&o));
        assert!(
            stderr(&o).contains("BATON_RUN_KEY is not set")
                && stderr(&o).contains("export BATON_RUN_KEY="),
            "{}",
            show(&o)
        );
    }
    // F6: launches A and B at one port, started interleaved: A0, B1, B0, A1.
    let addr = format!("127.0.0.1:{}", free_port());
    let start = |name: &str, r: usize, key: &str| {
        ranks_cmd(r, 2, &addr, "4", Some(key))
            .env("CUDA_VISIBLE_DEVICES", name)
            .spawn()
            .unwrap()
    };
    let (ka, kb) = ("launch-a-secret-0000", "launch-b-secret-1111");
    let a0 = start("A0", 0, ka);
    std::thread::sleep(Duration::from_millis(300));
    let b1 = start("B1", 1, kb);
    std::thread::sleep(Duration::from_millis(500));
    let b0 = start("B0", 0, kb);
    std::thread::sleep(Duration::from_millis(300));
    let a1 = start("A1", 1, ka);
    let outs: Vec<Output> = [a0, b1, b0, a1].into_iter().map(wait).collect();
    let a0 = &outs[0];
    assert_eq!(code(a0), 0, "{}", show(a0));
    assert!(
        stdout(a0).contains("CUDA_VISIBLE_DEVICES=A1") && !stdout(a0).contains("=B"),
        "{}",
        show(a0)
    );
    for o in &outs {
        let out = stdout(o);
        assert!(
            !(out.contains("=A") && out.contains("=B")),
            "two launches crossed: {}",
            show(o)
        );
    }
}

#[test]
fn sizes_beyond_the_rank_limit_are_invalid_input_from_every_launcher() {
    for (rank_var, size_var) in [
        ("BATON_RANK", "BATON_SIZE"),
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("PALS_RANKID", "PALS_SIZE"),
    ] {
        for n in ["18446744073709551615", "1000000000000"] {
            let o = bare()
                .arg("ranks")
                .env("BATON_RENDEZVOUS", "127.0.0.1:39104")
                .env(rank_var, "0")
                .env(size_var, n)
                .output()
                .unwrap();
            assert_eq!(code(&o), 2, "{size_var}={n}: {}", show(&o));
            assert!(
                stderr(&o).contains(&format!("{size_var}={n} is more ranks than")),
                "{}",
                show(&o)
            );
        }
    }
}

#[test]
fn mpirun_on_one_node_without_a_key_meets_with_the_users_private_secret() {
    let Some(mpirun) = baton::launch::which("mpirun") else {
        common::missing("mpirun", "BATON_REQUIRE_MPI", "no mpirun on PATH");
        return;
    };
    let home = common::tmp("rdv-home");
    let mut c = Command::new(mpirun);
    c.args(["-np", "2", "--oversubscribe"]);
    if stdout(&Command::new("id").arg("-u").output().unwrap()).trim() == "0" {
        c.arg("--allow-run-as-root");
    }
    let o = c
        .arg(env!("CARGO_BIN_EXE_baton"))
        .arg("ranks")
        .env_remove("BATON_RUN_KEY")
        .env_remove("BATON_RENDEZVOUS")
        .env("HOME", &home)
        .env("BATON_RENDEZVOUS_TIMEOUT", "20")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(
        stdout(&o).contains("2 rank(s) on 1 host(s), placed by Open MPI"),
        "{}",
        show(&o)
    );
    use std::os::unix::fs::PermissionsExt;
    let m = std::fs::metadata(home.join(".cache/baton/rendezvous.key")).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o600);
}

#[test]
fn rendered_scripts_give_each_run_a_fresh_secret_that_mpirun_forwards_by_name() {
    let d = common::tmp("rdv-render-key");
    let plan = common::two_gpu_plan(&d, "k.yaml", TESTS);
    let o = bare()
        .args(["render", common::p(&plan), "-t", "mpirun", "-o"])
        .arg(d.join("scripts"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", show(&o));
    let script = std::fs::read_dir(d.join("scripts"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    // A stand-in mpirun that records the key it was given and how it was told to pass it on.
    let bin = d.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("mpirun");
    std::fs::write(
        &fake,
        "#!/bin/bash\nprintf '%s\\n' \"$BATON_RUN_KEY\" \"$*\" >>\"$RECORD\"\nexit 0\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let record = d.join("record");
    for run in ["a", "b"] {
        let _ = Command::new("bash")
            .arg(&script)
            .arg(d.join(run))
            .env(
                "PATH",
                format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
            )
            .env("RECORD", &record)
            .env_remove("BATON_RUN_KEY")
            .output()
            .unwrap();
    }
    let text = std::fs::read_to_string(&record).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    for key in [lines[0], lines[2]] {
        assert!(
            key.len() == 32 && key.bytes().all(|b| b.is_ascii_hexdigit()),
            "{text}"
        );
    }
    assert_ne!(lines[0], lines[2], "each run has its own secret");
    for args in [lines[1], lines[3]] {
        assert!(args.contains("-x BATON_RUN_KEY "), "{args}");
        assert!(
            !args.contains(lines[0]) && !args.contains(lines[2]),
            "{args}"
        );
    }
}

#[test]
fn baton_run_whose_rank_goes_silent_after_the_start_ends_by_the_timeout_with_junit() {
    use baton::rendezvous::auth::Key;
    use baton::rendezvous::world::{Join, TcpWorld};
    let d = common::tmp("rdv-run-silent");
    let plan = common::two_gpu_plan(&d, "s.yaml", TESTS);
    // The plan's identity, as every rank of `run` computes it before anything starts.
    let (name, bytes) = baton::plan::read_file(&plan).unwrap();
    let loaded = baton::plan::parse_bytes_with(&name, &bytes, baton::plan::Trust::Data).unwrap();
    let jobs = baton::expand::expand(&loaded.plan).jobs;
    let hash = baton::expand::plan_identity(&loaded.plan, &jobs);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let out = d.join("out");
    let t = Instant::now();
    let root = run_rank(0, 2, &addr, "2", &plan, &out);
    // Rank 1 takes part in the start (plan check, output claim), then says nothing more.
    let one = TcpWorld::join(&Join {
        rank: 1,
        size: 2,
        local_rank: 1,
        host: "quiet-host".into(),
        inventory: String::new(),
        root: baton::rendezvous::Root {
            host: "127.0.0.1".into(),
            port,
            from: "test".into(),
            first_node: false,
        },
        key: Key::derive(KEY.as_bytes(), "", "run"),
        timeout: Duration::from_secs(5),
    })
    .unwrap();
    one.try_all_gather_string(&hash).unwrap();
    one.try_all_gather_string("").unwrap();
    let root = wait(root);
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(code(&root), 3, "{}", show(&root));
    assert!(
        stderr(&root).contains("rank 1 (quiet-host) did not reach all_gather_string within 2 s"),
        "{}",
        show(&root)
    );
    let junit = std::fs::read_to_string(out.join("junit.xml")).expect("junit.xml");
    assert!(junit.contains("quiet-host"), "{junit}");
    drop(one);
}
