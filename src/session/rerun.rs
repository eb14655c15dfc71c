//! `baton run --rerun-failed`: what an earlier run's `nodes.json` (and the `results.json`
//! beside it) give a rerun. The failed and suspect nodes alone would make a one-node "pair"
//! that passes without any traffic between nodes, and a handful of sets no fleet for
//! `outlier`; so a rerun brings known-good partners (nodes that run passed) for its tests
//! between nodes, and the earlier run's values for `outlier`.

use std::path::{Path, PathBuf};

use crate::nodeset::confirm::partners_needed;
use crate::nodeset::{compress, expand};
use crate::plan::{Check, Over, Plan, Test};
use crate::results::Rerun;

/// Largest `nodes.json` read back: a thousand nodes with reasons is well under a megabyte.
const MAX_NODES_JSON: usize = 16 << 20;

/// A rerun: the nodes it runs again, and what it carries over (recorded in its results).
pub struct RerunList {
    pub again: Vec<String>,
    pub record: Rerun,
}

impl RerunList {
    /// Every node of the rerun, partners included, as one hostlist.
    pub fn hostlist(&self) -> String {
        let mut all = self.again.clone();
        all.extend(self.record.known_good.iter().cloned());
        compress(&all)
    }

    pub fn known_good(&self) -> &[String] {
        &self.record.known_good
    }

    /// What the rerun runs, for the user.
    pub fn note(&self) -> String {
        let partners = if self.known_good().is_empty() {
            String::new()
        } else {
            format!(
                "; pairs with {} (passed in that run)",
                compress(self.known_good())
            )
        };
        format!(
            "running again over the failed and suspect nodes of {}: {}{partners}",
            self.record.of,
            compress(&self.again)
        )
    }
}

/// Why an earlier run's `nodes.json` gives no rerun.
#[derive(Debug, thiserror::Error)]
pub enum RerunError {
    /// Not an error: the earlier run failed no node.
    #[error("--rerun-failed: {0} names no failed or suspect node: nothing to rerun")]
    Nothing(String),
    #[error("--rerun-failed: {0}")]
    Read(#[from] crate::input::ReadError),
    #[error("--rerun-failed: {file}: not a baton nodes.json: {source}")]
    NotNodes {
        file: String,
        source: serde_json::Error,
    },
    #[error("--rerun-failed: {file}: {source}")]
    Hostlist {
        file: String,
        source: crate::nodeset::HostlistError,
    },
    #[error(
        "--rerun-failed: test `{test}` runs `over: {over}`, which pairs nodes, and {file} names one \
         node to run again ({node}) but passed no node to pair it with: a set of one node measures \
         nothing between nodes. Run it with a node known to be sound: --nodes '{node},HOST'"
    )]
    Alone {
        test: String,
        over: &'static str,
        file: String,
        node: String,
    },
    #[error(
        "--rerun-failed: `outlier` judges the rerun's sets against the earlier run's \
         sets of their shape, whose results were not readable beside {file}: {source}"
    )]
    Earlier {
        file: String,
        source: crate::results::ResultsError,
    },
}

#[derive(serde::Deserialize)]
struct Verdicts {
    failed: String,
    suspect: String,
    #[serde(default)]
    passed: String,
}

/// The rerun of `f` (a `nodes.json`, or the directory holding it) for the selected `tests`.
pub fn rerun_of(plan: &Plan, tests: &[&Test], f: &Path) -> Result<RerunList, RerunError> {
    let file = if f.is_dir() {
        f.join("nodes.json")
    } else {
        f.to_path_buf()
    };
    let shown = file.display().to_string();
    let v = read(&file)?;
    let again = hosts(&file, [v.failed.as_str(), v.suspect.as_str()])?;
    if again.is_empty() {
        return Err(RerunError::Nothing(shown));
    }
    let between: Vec<&&Test> = tests
        .iter()
        .filter(|t| matches!(t.over, Over::Pairs(_) | Over::Isolate))
        .collect();
    let mut known_good: Vec<String> = Vec::new();
    if !between.is_empty() {
        let good: Vec<String> = hosts(&file, [v.passed.as_str()])?
            .into_iter()
            .filter(|h| !again.contains(h))
            .collect();
        let n = partners_needed(again.len(), good.len());
        known_good = good.into_iter().take(n).collect();
    }
    if let Some(t) = between.first()
        && known_good.is_empty()
        && again.len() < 2
    {
        return Err(RerunError::Alone {
            test: t.name.clone(),
            over: t.over.name(),
            file: shown,
            node: again[0].clone(),
        });
    }
    let fleet = if tests.iter().any(|t| has_outlier(t)) {
        crate::grade::rerun_fleet(plan, &earlier_results(&file)?)
    } else {
        Vec::new()
    };
    Ok(RerunList {
        again,
        record: Rerun {
            of: shown,
            known_good,
            fleet,
        },
    })
}

fn read(file: &Path) -> Result<Verdicts, RerunError> {
    let text = crate::input::read_bounded(file, MAX_NODES_JSON, "nodes.json")?;
    serde_json::from_slice(&text).map_err(|source| RerunError::NotNodes {
        file: file.display().to_string(),
        source,
    })
}

/// The hosts of `lists` (hostlists, empty ones skipped), in order.
fn hosts<'a>(
    file: &Path,
    lists: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<String>, RerunError> {
    let mut out = Vec::new();
    for l in lists.into_iter().filter(|s| !s.is_empty()) {
        out.extend(expand(l).map_err(|source| RerunError::Hostlist {
            file: file.display().to_string(),
            source,
        })?);
    }
    Ok(out)
}

/// Whether a test judges its sets against the fleet: `outlier`, or a fleet-relative `straggler`.
fn has_outlier(t: &Test) -> bool {
    t.expect.iter().any(|c| match &c.check {
        Check::Outlier(_) => true,
        Check::Straggler(s) => s.fleet,
        _ => false,
    })
}

/// The earlier run's results, beside its `nodes.json`: `outlier` and the fleet `straggler`
/// judge the rerun's sets against them.
fn earlier_results(nodes_json: &Path) -> Result<crate::results::Results, RerunError> {
    let path: PathBuf = nodes_json
        .parent()
        .unwrap_or(Path::new("."))
        .join("results.json");
    crate::results::read(&path).map_err(|source| RerunError::Earlier {
        file: nodes_json.display().to_string(),
        source,
    })
}
