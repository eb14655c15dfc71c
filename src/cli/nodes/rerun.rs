//! `baton run --rerun-failed`: what an earlier run's `nodes.json` (and the `results.json`
//! beside it) give a rerun. The failed and suspect nodes alone would make a one-node "pair"
//! that passes without any traffic between nodes, and a handful of sets no fleet for
//! `outlier`; so a rerun brings known-good partners (nodes that run passed) for its tests
//! between nodes, and the earlier run's values for `outlier`.

use std::path::{Path, PathBuf};

use baton::exit::Exit;
use baton::nodeset::confirm::partners_needed;
use baton::nodeset::{compress, expand};
use baton::plan::{Check, Over, Plan, Test};
use baton::results::Rerun;

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
}

#[derive(serde::Deserialize)]
struct Verdicts {
    failed: String,
    suspect: String,
    #[serde(default)]
    passed: String,
}

/// The rerun of `f` (a `nodes.json`, or the directory holding it) for the selected `tests`;
/// `Err` after printing why not (`Exit::Ok`: nothing to run again).
pub fn of(plan: &Plan, tests: &[&Test], f: &Path) -> Result<RerunList, Exit> {
    let file = if f.is_dir() {
        f.join("nodes.json")
    } else {
        f.to_path_buf()
    };
    let v = read(&file)?;
    let again = hosts(&file, [v.failed.as_str(), v.suspect.as_str()])?;
    if again.is_empty() {
        eprintln!(
            "baton: --rerun-failed: {} names no failed or suspect node: nothing to rerun",
            file.display()
        );
        return Err(Exit::Ok);
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
        eprintln!(
            "error: --rerun-failed: test `{}` runs `over: {}`, which pairs nodes, and {} names one \
             node to run again ({}) but passed no node to pair it with: a set of one node measures \
             nothing between nodes. Run it with a node known to be sound: --nodes '{},HOST'",
            t.name,
            t.over.name(),
            file.display(),
            again[0],
            again[0]
        );
        return Err(Exit::Invalid);
    }
    let fleet = if tests.iter().any(|t| has_outlier(t)) {
        baton::grade::rerun_fleet(plan, &earlier_results(&file)?)
    } else {
        Vec::new()
    };
    eprintln!(
        "baton: running again over the failed and suspect nodes of {}: {}{}",
        file.display(),
        compress(&again),
        if known_good.is_empty() {
            String::new()
        } else {
            format!(
                "; pairs with {} (passed in that run)",
                compress(&known_good)
            )
        }
    );
    Ok(RerunList {
        again,
        record: Rerun {
            of: file.display().to_string(),
            known_good,
            fleet,
        },
    })
}

fn read(file: &Path) -> Result<Verdicts, Exit> {
    let text = baton::input::read_bounded(file, MAX_NODES_JSON, "nodes.json").map_err(|e| {
        eprintln!("error: --rerun-failed: {e}");
        Exit::Invalid
    })?;
    serde_json::from_slice(&text).map_err(|e| {
        eprintln!(
            "error: --rerun-failed: {}: not a baton nodes.json: {e}",
            file.display()
        );
        Exit::Invalid
    })
}

/// The hosts of `lists` (hostlists, empty ones skipped), in order.
fn hosts<'a>(file: &Path, lists: impl IntoIterator<Item = &'a str>) -> Result<Vec<String>, Exit> {
    let mut out = Vec::new();
    for l in lists.into_iter().filter(|s| !s.is_empty()) {
        match expand(l) {
            Ok(h) => out.extend(h),
            Err(e) => {
                eprintln!("error: --rerun-failed: {}: {e}", file.display());
                return Err(Exit::Invalid);
            }
        }
    }
    Ok(out)
}

fn has_outlier(t: &Test) -> bool {
    t.expect
        .iter()
        .any(|c| matches!(c.check, Check::Outlier(_)))
}

/// The earlier run's results, beside its `nodes.json`: `outlier` judges the rerun's sets
/// against them.
fn earlier_results(nodes_json: &Path) -> Result<baton::results::Results, Exit> {
    let path: PathBuf = nodes_json
        .parent()
        .unwrap_or(Path::new("."))
        .join("results.json");
    baton::results::read(&path).map_err(|e| {
        eprintln!(
            "error: --rerun-failed: `outlier` judges the rerun's sets against the earlier run's \
             sets of their shape, whose results were not readable beside {}: {e}",
            nodes_json.display()
        );
        Exit::Invalid
    })
}
