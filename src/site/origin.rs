//! Where each value of a layered plan was written, as `baton config` shows it (like
//! `git config --show-origin`): `plan.yaml:12`, `site:/etc/baton/site.yaml:4`, `--set`.

use std::fmt;

use serde::Serialize;

use super::emit::scalar;
use super::layered::Layers;
use super::tree::{Item, Source, Tree};

/// One value of the layered plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// Its key path, as `--set` takes it: `launch.slurm.partition`, `tests.0.name`.
    pub key: String,
    /// As YAML writes it; a secret variable's value is redacted.
    pub value: String,
    pub origin: Origin,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Origin {
    Plan { file: String, line: u64 },
    Site { file: String, line: u64 },
    Set { arg: String },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Plan { file, line } => write!(f, "{file}:{line}"),
            Origin::Site { file, line } => write!(f, "site:{file}:{line}"),
            Origin::Set { arg } => write!(f, "--set {arg}"),
        }
    }
}

pub(super) fn entries(root: &Item, plan: &str, layers: &Layers) -> Vec<Entry> {
    root.leaves()
        .into_iter()
        .map(|(key, item)| {
            let value = match &item.value {
                Tree::Scalar(s) => item.written.clone().unwrap_or_else(|| scalar(s)),
                Tree::Seq(_) => "[]".into(),
                Tree::Map(_) => "{}".into(),
            };
            let secret = key
                .strip_prefix("env.")
                .or_else(|| key.rsplit_once(".env.").map(|(_, n)| n))
                .is_some_and(crate::secrets::is_secret);
            let line = item.at.pos.line;
            let origin = match item.at.source {
                Source::Plan => Origin::Plan {
                    file: plan.to_string(),
                    line,
                },
                Source::Site => Origin::Site {
                    file: layers
                        .site
                        .as_ref()
                        .map_or(String::new(), |s| s.path.display().to_string()),
                    line,
                },
                // The argument as given, through the one redaction: `--set env.X_TOKEN=…`
                // must not show in the origin what the value column hides.
                Source::Set(i) => Origin::Set {
                    arg: crate::secrets::line_redacted(
                        layers.set_args().get(i).map_or("", String::as_str),
                    ),
                },
            };
            Entry {
                key,
                value: if secret {
                    crate::secrets::REDACTED.into()
                } else {
                    value
                },
                origin,
            }
        })
        .collect()
}
