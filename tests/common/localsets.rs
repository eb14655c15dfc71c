//! Node sets without a cluster: an rsh agent for mpirun (`OMPI_MCA_plm_rsh_agent`) that starts
//! every `-H` host on this machine, so `baton run` drives real node sets — real mpirun, real
//! workers, real journals — over named hosts. A host in `dead` refuses the connection as an
//! unreachable node does (its set fails, the probe finds it dead); the set whose mpirun has
//! `-H hung` gets a rank that stops joining collectives, as a frozen process does (its set
//! times out); [`agent_slowing`] slows every rank of one host (`BATON_FAULT=slow`), as a node
//! with a thermal or clock straggler would be.

use std::path::{Path, PathBuf};
use std::process::Output;

use super::{baton_env, p, write};

/// The agent, written into `dir`.
pub fn agent(dir: &Path, dead: &[&str], hung: Option<&str>) -> PathBuf {
    agent_with(dir, dead, hung, "")
}

/// The agent, every rank started on `host` sleeping `us` microseconds before each launch.
pub fn agent_slowing(dir: &Path, host: &str, us: u64) -> PathBuf {
    let slow = format!("if [ \"$host\" = '{host}' ]; then export BATON_FAULT=slow:us={us}; fi\n");
    agent_with(dir, &[], None, &slow)
}

/// The agent, every start on `host` printing `lines` to its standard error first, each after
/// `[YYYY-MM-DD HH:MM:SS] ` of the moment (UTC), as NCCL stamps its WARN lines.
pub fn agent_printing(dir: &Path, host: &str, lines: &[&str]) -> PathBuf {
    let mut extra = format!("if [ \"$host\" = '{host}' ]; then\n");
    for l in lines {
        extra.push_str(&format!(
            "  printf '%s %s\\n' \"$(date -u '+[%F %T]')\" '{l}' >&2\n"
        ));
    }
    extra.push_str("fi\n");
    agent_with(dir, &[], None, &extra)
}

fn agent_with(dir: &Path, dead: &[&str], hung: Option<&str>, extra: &str) -> PathBuf {
    let script = format!(
        r#"#!/bin/bash
for a in "$@"; do case "$a" in -*) shift;; *) break;; esac; done
host=$1; shift
case " {dead} " in *" $host "*) echo "ssh: connect to host $host: No route to host" >&2; exit 255;; esac
hung='{hung}'
if [ -n "$hung" ] && tr '\0' ' ' </proc/$PPID/cmdline | grep -qF -- "-H $hung "; then
  export BATON_FAULT=stall:rank=1
fi
# Every host's orted runs on this machine: each gets its own session directory, or two of one
# mpirun race to create the same one ("mkdir … File exists") and the set fails for nothing.
export TMPDIR=/tmp/baton-fakessh/$host
mkdir -p "$TMPDIR"
{extra}exec bash -c "$*"
"#,
        dead = dead.join(" "),
        hung = hung.unwrap_or("")
    );
    let path = write(dir, "fakessh", &script);
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

/// `baton ARGS` with mpirun starting its hosts through `agent`.
pub fn baton_over(agent: &Path, args: &[&str]) -> Output {
    baton_env(
        args,
        &[
            ("OMPI_MCA_plm_rsh_agent", p(agent)),
            ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
            ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
            // Every "host" is an orted on this machine: Open MPI 4.1's orted maps its shared
            // topology into a hole of its address space it picked a moment earlier and, under load,
            // sometimes segfaults there (hwloc_shmem_topology_write). Each daemon reads its own.
            ("OMPI_MCA_rtc_hwloc_vmhole", "none"),
        ],
    )
}

/// The `nodes.json` a run wrote into `dir`.
pub fn nodes_json(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&super::read(&dir.join("nodes.json"))).expect("nodes.json is JSON")
}

/// The entry of `host` in a `nodes.json`.
pub fn node<'a>(n: &'a serde_json::Value, host: &str) -> &'a serde_json::Value {
    n["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["host"] == host)
        .unwrap_or_else(|| panic!("{host} not in {n:#}"))
}
