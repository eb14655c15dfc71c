//! `baton ranks`: processes that meet over the TCP rendezvous, as GPU ranks do, with no MPI
//! library. On localhost with `BATON_RANK`-style placement; on the simulated cluster (with
//! `--features mpi`, like the other cluster tests) under `srun --mpi=none` and `mpirun`.

mod common;

use std::io::Write;
use std::net::TcpListener;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{code, show, stderr, stdout};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `baton ranks` as rank `rank` of `size`, meeting at `addr`.
fn rank(rank: usize, size: usize, addr: &str, timeout: &str) -> Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
    for v in [
        "SLURM_JOB_ID",
        "SLURM_STEP_ID",
        "SLURM_PROCID",
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "PMI_RANK",
        "PMIX_RANK",
    ] {
        c.env_remove(v);
    }
    c.arg("ranks")
        .env("BATON_RANK", rank.to_string())
        .env("BATON_SIZE", size.to_string())
        .env("BATON_LOCAL_RANK", rank.to_string())
        .env("BATON_RENDEZVOUS", addr)
        .env("BATON_RENDEZVOUS_TIMEOUT", timeout)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
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
    let o = Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("ranks")
        .env("BATON_RANK", "one")
        .env("BATON_SIZE", "2")
        .output()
        .unwrap();
    assert_eq!(code(&o), 3, "{}", show(&o));
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
        let o = c
            .cmd("timeout")
            .args([
                "60",
                "srun",
                "--mpi=none",
                "-N4",
                "--ntasks-per-node=2",
                BATON,
                "ranks",
            ])
            .env("BATON_RENDEZVOUS_TIMEOUT", "20")
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
                 -x BATON_RENDEZVOUS_TIMEOUT=20 {BATON} ranks"
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
        let o = c
            .cmd("timeout")
            .args([
                "60",
                "srun",
                "--mpi=none",
                "-N2",
                "--ntasks-per-node=1",
                BATON,
                "ranks",
            ])
            .env("BATON_RENDEZVOUS", &addr)
            .env("BATON_RENDEZVOUS_TIMEOUT", "3")
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
