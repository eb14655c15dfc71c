//! The site file: where plans run on one cluster (Slurm partition, account, QOS, reservation,
//! time; module loads; container; fabric variables; the node list and its domains; the default
//! hardware profile; where baton is), owned and trusted by the site, so one plan serves two
//! clusters. It is found by `--site FILE`, else `BATON_SITE`, else [`DEFAULT_SITE`] when that
//! exists, and laid over a plan with the command line's `--set key.path=value` over both
//! ([`layered`]): plan < site < `--set`, each value remembering where it was written. See
//! docs/site.md.

mod discover;
mod emit;
pub mod layered;
pub mod origin;
mod outputs;
mod raw;
mod set;
mod topology;
mod tree;

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use discover::{DEFAULT_SITE, DEFAULT_SITE_VAR, SITE_VAR, discover};
pub use layered::{Layered, Layers, load_layered, parse_layered};
pub use origin::{Entry, Origin};
pub use outputs::Outputs;
pub use raw::site_schema;
pub use topology::{Leaf, MAX_TOPOLOGY_BYTES, leaves};

use crate::plan::{Diagnostic, Node, Report, Scalar};
use tree::{Item, Key, Source, Tree};

/// The largest site file read; a real one is a few KiB.
pub const MAX_SITE_BYTES: usize = 1 << 20;

/// Which site file a run used, as its results record it: never its values (its variables may
/// hold secrets), only where it was and what it held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SiteRef {
    /// The path as found (`--site`, `BATON_SITE` or the default).
    pub path: String,
    /// `sha256:` of its bytes.
    pub hash: String,
}

/// A site file, read and checked: its plan keys as a tree to lay over plans.
#[derive(Debug, Clone)]
pub struct Site {
    pub path: PathBuf,
    pub text: String,
    pub hash: String,
    /// Where commands here report by default (`outputs:`), never laid over a plan.
    pub outputs: Outputs,
    tree: Item,
}

/// Why a site file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    #[error("cannot read site file {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{}", .0.short())]
    Invalid(Report),
}

impl Site {
    /// Reads the site file at `path` (bounded), checks its keys against the site schema and
    /// reads the `topology.conf` it names.
    pub fn open(path: &Path) -> Result<Site, SiteError> {
        use crate::input::{ReadError, read_bounded};
        let name = path.display().to_string();
        let bytes = read_bounded(path, MAX_SITE_BYTES, "site file").map_err(|e| match e {
            ReadError::TooBig { size, .. } => invalid(
                &name,
                "",
                Diagnostic::error(
                    format!(
                        "site file is at least {size} bytes; site files are limited to {} KiB",
                        MAX_SITE_BYTES >> 10
                    ),
                    None,
                ),
            ),
            e => SiteError::Io {
                path: name.clone(),
                source: e.into_io(),
            },
        })?;
        let text = String::from_utf8(bytes).map_err(|_| {
            invalid(
                &name,
                "",
                Diagnostic::error("site file is not valid UTF-8", None)
                    .help("site files are UTF-8 YAML text"),
            )
        })?;
        let tree = Self::checked_tree(&name, &text)?;
        let mut tree = Item::from_loc(&tree, Source::Site, &text);
        for key in ["site", "name", "description"] {
            tree.remove(key);
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        with_topology(&mut tree, dir).map_err(|d| invalid(&name, &text, d))?;
        let outputs = match tree.remove("outputs") {
            Some((_, o)) => Outputs::read(&o, dir).map_err(|d| invalid(&name, &text, d))?,
            None => Outputs::default(),
        };
        Ok(Site {
            path: path.to_path_buf(),
            hash: crate::digest::sha256_id(text.as_bytes()),
            text,
            outputs,
            tree,
        })
    }

    fn checked_tree(name: &str, text: &str) -> Result<crate::plan::Loc<Node>, SiteError> {
        let tree = crate::plan::parse_tree(name, text, "site file").map_err(SiteError::Invalid)?;
        let mut report = Report::new(name, text);
        if matches!(tree.value, Node::Scalar(Scalar::Null)) {
            report.push(
                Diagnostic::error("site file is empty", None)
                    .help("a site file starts with `site: 1`; see sites/example.yaml"),
            );
            return Err(SiteError::Invalid(report));
        }
        let mut diags = Vec::new();
        crate::plan::check_structure(&site_schema(), &tree, &mut diags);
        if let Node::Map(entries) = &tree.value {
            let marker = entries.iter().find(|(k, _)| k.value.text() == "site");
            if let Some((_, v)) = marker.filter(|(_, v)| v.value != Node::Scalar(Scalar::Int(1))) {
                diags.push(Diagnostic::error("only `site: 1` exists", Some(v.pos)));
            }
        }
        if diags.is_empty() {
            return Ok(tree);
        }
        diags.sort_by_key(|d| d.pos.map(|p| (p.line, p.col)));
        report.diagnostics = diags;
        Err(SiteError::Invalid(report))
    }

    /// The site's `name` (what a report calls the cluster), when it gives one.
    pub fn name(&self) -> Option<String> {
        let v: serde_json::Value = serde_saphyr::from_str(&self.text).ok()?;
        Some(v.get("name")?.as_str()?.to_string())
    }

    pub fn reference(&self) -> SiteRef {
        SiteRef {
            path: self.path.display().to_string(),
            hash: self.hash.clone(),
        }
    }
}

fn invalid(name: &str, text: &str, d: Diagnostic) -> SiteError {
    let mut r = Report::new(name, text);
    r.push(d);
    SiteError::Invalid(r)
}

/// `nodes.topology: FILE` becomes `nodes.domains`: a hostlist per leaf switch.
fn with_topology(tree: &mut Item, dir: &Path) -> Result<(), Diagnostic> {
    let Some(nodes) = nodes_mut(tree) else {
        return Ok(());
    };
    let Some((key, file)) = nodes.remove("topology") else {
        return Ok(());
    };
    if nodes.get("domains").is_some() {
        return Err(Diagnostic::error(
            "`nodes.topology` and `nodes.domains` both name the domains; keep one",
            Some(key.at.pos),
        ));
    }
    let Tree::Scalar(Scalar::Str(f)) = &file.value else {
        return Err(Diagnostic::error(
            "`nodes.topology` is a file name",
            Some(file.at.pos),
        ));
    };
    let path = dir.join(f);
    let fail = |why: String| {
        Diagnostic::error(
            format!("topology file {}: {why}", path.display()),
            Some(file.at.pos),
        )
    };
    let bytes = crate::input::read_bounded(&path, MAX_TOPOLOGY_BYTES, "topology file")
        .map_err(|e| Diagnostic::error(e.to_string(), Some(file.at.pos)))?;
    let leaves = leaves(&String::from_utf8_lossy(&bytes));
    if leaves.is_empty() {
        return Err(fail("no `SwitchName=… Nodes=…` line".into()));
    }
    let at = file.at;
    let domains = leaves
        .into_iter()
        .map(|l| Item {
            value: Tree::Scalar(Scalar::Str(l.nodes)),
            at,
            written: None,
        })
        .collect();
    let key = Key {
        name: "domains".into(),
        at: key.at,
    };
    if let Tree::Map(entries) = &mut nodes.value {
        entries.push((
            key,
            Item {
                value: Tree::Seq(domains),
                at,
                written: None,
            },
        ));
    }
    Ok(())
}

fn nodes_mut(tree: &mut Item) -> Option<&mut Item> {
    match &mut tree.value {
        Tree::Map(entries) => entries
            .iter_mut()
            .find(|(k, _)| k.name == "nodes")
            .map(|(_, v)| v),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
