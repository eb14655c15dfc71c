//! The site file's shape, for its JSON Schema (`schemas/site.schema.json`) and the structural
//! pass: every key a plan also has keeps the plan's key path, so `--set` and `baton config`
//! speak of one path space. The values themselves are checked by the plan's checks once they
//! are laid onto a plan.

use std::collections::BTreeMap;

use schemars::JsonSchema;

use crate::plan::Scalar;

/// A baton site file, version 1: where plans run on this cluster.
#[derive(JsonSchema)]
#[schemars(title = "baton site", deny_unknown_fields)]
#[allow(dead_code)]
pub struct RawSite {
    /// Site file version. Only 1 exists; it is also what tells a site file from a plan.
    #[schemars(range(min = 1, max = 1))]
    pub site: i64,
    /// The cluster's name, for `baton config`.
    pub name: Option<String>,
    /// Free text.
    pub description: Option<String>,
    pub launch: Option<SiteLaunch>,
    /// Environment variables for every rank of every plan run here (`NCCL_IB_HCA`,
    /// `NCCL_SOCKET_IFNAME`, `UCX_TLS`, …); a plan's own variable of the same name is replaced.
    pub env: Option<BTreeMap<String, Scalar>>,
    pub nodes: Option<SiteNodes>,
    /// The default hardware profile (`h200-sxm-8`), as the plan's `profile`.
    pub profile: Option<String>,
    pub outputs: Option<SiteOutputs>,
}

/// Where every `run`, `grade` and `accept` here reports without a flag (a flag wins; `--no-site`
/// drops them). Site-only: no plan has these keys.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)]
pub struct SiteOutputs {
    /// `--metrics`: node_exporter's textfile directory (or a file), relative to the site file.
    pub metrics: Option<String>,
    /// `--notify`: the http:// webhook the verdict JSON is POSTed to.
    pub notify: Option<String>,
    /// `--notify-within`: the longest a delivery may take, in seconds (1 to 3600).
    #[schemars(range(min = 1, max = 3600))]
    pub notify_within: Option<u64>,
    /// `--history`/`--store`: an SQLite file (relative to the site file) or a postgres:// URL,
    /// best without its password (PGPASSWORD).
    pub history: Option<String>,
}

/// The plan's `launch` keys that belong to a site.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)]
pub struct SiteLaunch {
    pub slurm: Option<SiteSlurm>,
    pub mpirun: Option<SiteMpirun>,
    /// Shell lines every rendered script runs first (`module load …`): trusted, because the
    /// site wrote them.
    pub setup: Option<Vec<String>>,
    /// Where baton is on the machines that run the scripts: `path`, an absolute path, `image`
    /// or `image:/path`.
    pub baton: Option<String>,
}

/// The plan's `launch.slurm` keys that belong to a site.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)]
pub struct SiteSlurm {
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    pub reservation: Option<String>,
    /// Slurm's format, quoted: `"00:30:00"`.
    pub time: Option<String>,
    pub exclusive: Option<bool>,
    pub mpi: Option<String>,
    pub extra: Option<Vec<String>>,
    pub step: Option<Vec<String>>,
    pub container_image: Option<String>,
    pub container_mounts: Option<String>,
    pub container_name: Option<String>,
    pub container_env: Option<Vec<String>>,
    pub cpu_bind: Option<String>,
    pub gpu_bind: Option<String>,
}

/// The plan's `launch.mpirun` keys that belong to a site.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)]
pub struct SiteMpirun {
    pub extra: Option<Vec<String>>,
    pub forward: Option<Vec<String>>,
}

/// The cluster's node list and its topology domains.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)]
pub struct SiteNodes {
    /// A Slurm hostlist, e.g. `gpu[001-032]`.
    pub hostlist: Option<String>,
    /// Hosts to leave out, as a hostlist.
    pub exclude: Option<String>,
    /// Topology domains (racks, leaf switches) as hostlists.
    pub domains: Option<Vec<String>>,
    /// A Slurm `topology.conf` (relative to the site file): each `SwitchName=… Nodes=…` line
    /// is a domain. Not with `domains`.
    pub topology: Option<String>,
}

pub fn site_schema() -> serde_json::Value {
    let schema = schemars::schema_for!(RawSite);
    serde_json::to_value(schema).expect("schema serializes")
}
