//! The simulated cluster (`scripts/cluster-sim`) as the multi-node tests use it: finding it
//! (or saying why it is skipped), running commands in its environment, and faults on one node
//! that heal when dropped.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

use super::{read, show, stdout};

pub const SIM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/cluster-sim");

/// The running cluster: what `cluster-sim env` exports, and its nodes.
pub struct Cluster {
    pub env: Exports,
    pub nodes: Vec<String>,
    /// Held for the whole test: one test on the cluster at a time, in this process (the
    /// mutex) and across test processes and worktrees sharing the machine (the file lock).
    _lock: MutexGuard<'static, ()>,
    _file_lock: std::fs::File,
}

/// The simulated cluster when it is up with at least four idle nodes; otherwise the skip line
/// (or, in CI, a failure saying why: [`super::missing`]).
pub fn cluster() -> Option<Cluster> {
    cluster_of(4)
}

/// The simulated cluster when it is up with at least `n` idle nodes (see [`cluster`]).
pub fn cluster_of(n: usize) -> Option<Cluster> {
    static LOCK: Mutex<()> = Mutex::new(());
    let lock = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let file_lock = std::fs::File::create(std::env::temp_dir().join("baton-cluster-sim.lock"))
        .expect("the cluster lock file");
    file_lock.lock().expect("locking the cluster lock file");
    match find_cluster(n) {
        Ok((env, nodes)) => Some(Cluster {
            env,
            nodes,
            _lock: lock,
            _file_lock: file_lock,
        }),
        Err(why) => {
            let why = format!("{why} (run scripts/cluster-sim up 8)");
            super::missing("simulated cluster", "BATON_REQUIRE_CLUSTER", &why);
            None
        }
    }
}

/// What `cluster-sim env` exports, as (name, value) pairs.
pub type Exports = Vec<(String, String)>;

fn find_cluster(n: usize) -> Result<(Exports, Vec<String>), String> {
    let o = Command::new(SIM)
        .arg("env")
        .output()
        .map_err(|e| format!("{SIM}: {e}"))?;
    if !o.status.success() {
        return Err(String::from_utf8_lossy(&o.stderr).trim().to_string());
    }
    let env: Exports = stdout(&o)
        .lines()
        .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let conf = env
        .iter()
        .find(|(k, _)| k == "SLURM_CONF")
        .ok_or("cluster-sim env names no SLURM_CONF")?;
    let o = Command::new("timeout")
        .args(["15", "sinfo", "-h", "-N", "-t", "idle", "-o", "%N"])
        .env("SLURM_CONF", &conf.1)
        .output()
        .map_err(|e| format!("sinfo: {e}"))?;
    let mut nodes: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    nodes.sort();
    nodes.dedup();
    if nodes.len() < n {
        return Err(format!(
            "{} idle node(s), these tests need {n}: {}",
            nodes.len(),
            show(&o)
        ));
    }
    Ok((env, nodes))
}

impl Cluster {
    /// `program` with the cluster's environment, outside any Slurm job, without BATON_FAULT.
    pub fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        for (k, v) in &self.env {
            c.env(k, v);
        }
        for v in [
            "SLURM_JOB_ID",
            "SLURM_JOBID",
            "SLURM_NODELIST",
            "BATON_FAULT",
        ] {
            c.env_remove(v);
        }
        c.env("NO_COLOR", "1");
        // Rendered scripts call baton by name: the built one, on every node (one filesystem).
        c.env("PATH", super::path_with_baton());
        c
    }

    /// `baton ARGS` from `dir` (sbatch submits from there, so job output lands there).
    pub fn baton(&self, dir: &Path, args: &[&str]) -> Output {
        self.cmd(env!("CARGO_BIN_EXE_baton"))
            .args(args)
            .current_dir(dir)
            .output()
            .expect("baton runs")
    }

    /// `salloc --no-kill -N NODES --ntasks-per-node=PER bash -c SCRIPT` from `dir`, bounded to
    /// `limit` seconds: an allocation that outlives the death of one of its nodes.
    pub fn salloc_n(
        &self,
        dir: &Path,
        nodes: usize,
        per_node: u32,
        limit: u32,
        script: &str,
    ) -> Output {
        let how = ["--no-kill".to_string(), "-N".into(), nodes.to_string()];
        self.allocate(dir, &how, per_node, limit, script)
    }

    /// `salloc -N HOSTS -w HOSTS --ntasks-per-node=PER bash -c SCRIPT` from `dir`, bounded to
    /// `limit` seconds: an allocation of exactly these nodes (salloc waits for them).
    pub fn salloc_on(
        &self,
        dir: &Path,
        hosts: &[String],
        per_node: u32,
        limit: u32,
        script: &str,
    ) -> Output {
        let how = [
            "-N".to_string(),
            hosts.len().to_string(),
            "-w".into(),
            baton::nodeset::compress(hosts),
        ];
        self.allocate(dir, &how, per_node, limit, script)
    }

    /// `timeout LIMIT salloc HOW --ntasks-per-node=PER bash -c SCRIPT` from `dir`.
    fn allocate(
        &self,
        dir: &Path,
        how: &[String],
        per_node: u32,
        limit: u32,
        script: &str,
    ) -> Output {
        self.cmd("timeout")
            .arg(limit.to_string())
            .arg("salloc")
            .args(how)
            .arg(format!("--ntasks-per-node={per_node}"))
            .args(["bash", "-c", script])
            .current_dir(dir)
            .output()
            .expect("salloc runs")
    }

    /// `salloc -N 4 -w node01..node04 --ntasks-per-node=PER bash -c SCRIPT` from `dir`, bounded
    /// to 5 minutes.
    pub fn salloc(&self, dir: &Path, per_node: u32, script: &str) -> Output {
        // The first four nodes by name, not any four: tests name node01–node04 in what they
        // expect, and a node still completing an earlier test's job (a killed one) would
        // otherwise move the allocation elsewhere; salloc waits for them instead.
        self.salloc_on(dir, &self.nodes[..4], per_node, 300, script)
    }

    /// Bytes through each node's end of the bridge (its veth), sent plus received.
    pub fn bridge_bytes(&self) -> BTreeMap<String, u64> {
        self.nodes
            .iter()
            .map(|n| {
                let stat = |what: &str| -> u64 {
                    read(Path::new(&format!(
                        "/sys/class/net/bsim-{n}/statistics/{what}_bytes"
                    )))
                    .trim()
                    .parse()
                    .unwrap()
                };
                (n.clone(), stat("rx") + stat("tx"))
            })
            .collect()
    }
}

/// A fault on one node (`cluster-sim slow|kill|freeze NODE …`), healed when dropped, also when
/// the test fails.
pub struct Fault {
    node: String,
}

impl Fault {
    pub fn apply(args: &[&str]) -> Fault {
        let o = Command::new(SIM).args(args).output().expect("cluster-sim");
        assert!(o.status.success(), "cluster-sim {args:?}: {}", show(&o));
        Fault {
            node: args[1].to_string(),
        }
    }
}

impl Drop for Fault {
    fn drop(&mut self) {
        let o = Command::new(SIM).args(["heal", &self.node]).output();
        if !o.as_ref().is_ok_and(|o| o.status.success()) {
            eprintln!("cluster-sim heal {} failed: {o:?}", self.node);
        }
    }
}

/// A run's `nodes.json`.
pub fn nodes_json(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&read(&dir.join("nodes.json"))).expect("nodes.json is JSON")
}

/// A host's verdict and reason in `nodes.json`.
pub fn verdict_of<'a>(n: &'a serde_json::Value, host: &str) -> (&'a str, &'a str) {
    let e = n["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["host"] == host)
        .unwrap_or_else(|| panic!("{host} not in nodes.json: {n}"));
    (
        e["verdict"].as_str().unwrap(),
        e["reason"].as_str().unwrap(),
    )
}

/// The lines of `drain.sh` that drain something.
pub fn drains(dir: &Path) -> Vec<String> {
    read(&dir.join("drain.sh"))
        .lines()
        .filter(|l| l.starts_with("scontrol update"))
        .map(str::to_string)
        .collect()
}

/// `BIN run PLAN -o OUT` as a line for the allocation's `bash -c` (the tests' paths need no quoting).
pub fn run_line(bin: &str, plan: &Path, out: &Path) -> String {
    format!("{bin} run {} -o {}", super::p(plan), super::p(out))
}
