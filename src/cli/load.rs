//! Opening a plan for a command: its diagnostics shown, and the node list its node sets run
//! over. Each returns the plan or the [`CliError`] saying why it cannot be used.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use baton::expand::nodesets::{self, NodeList, NodeListError, TestSets};
use baton::plan::{Loaded, Over, Plan, Trust};
use baton::site::{Layered, Layers, Site, SiteError};
use baton::stdout::visible;

use super::error::CliError;
use super::ui::{self, DiagFormat};

/// The command line's layering flags: which site file, and the `--set`s.
#[derive(Debug, Default)]
pub struct LayerArgs {
    pub site: Option<PathBuf>,
    pub no_site: bool,
    pub sets: Vec<String>,
}

/// Set once by `main` before the command runs; every plan a command loads is layered by them.
static LAYER_ARGS: OnceLock<LayerArgs> = OnceLock::new();

pub fn set_layer_args(args: LayerArgs) {
    let _ = LAYER_ARGS.set(args);
}

/// What this command lays over its plans: the site file found (`--site`, `BATON_SITE`, the
/// default) and the `--set`s; `Err` when the site file or a `--set` cannot be used (exit 2).
pub fn layers(format: DiagFormat) -> Result<Layers, CliError> {
    let args = LAYER_ARGS.get_or_init(LayerArgs::default);
    let plan_error = |report| CliError::Plan {
        report: Box::new(report),
        format,
    };
    let site = baton::site::discover(args.site.as_deref(), args.no_site)
        .map(|p| Site::open(&p))
        .transpose()
        .map_err(|e| match e {
            SiteError::Invalid(report) => plan_error(report),
            e => CliError::invalid(visible(&e.to_string())),
        })?;
    Layers::new(site, &args.sets).map_err(plan_error)
}

/// The site file's `outputs:` (what commands report to without a flag); none under
/// `--no-site`, or when the site file cannot be used — the plan's loading then says why.
pub fn site_outputs() -> baton::site::Outputs {
    layers(DiagFormat::Human)
        .ok()
        .and_then(|l| l.site)
        .map(|s| s.outputs)
        .unwrap_or_default()
}

/// Loads a plan and shows its warnings; `Err` with its diagnostics when it is invalid.
pub fn load_plan(path: &Path, format: DiagFormat, trust: Trust) -> Result<Loaded, CliError> {
    let loaded = load_quietly(path, format, trust)?;
    ui::diagnostics(&loaded.report, format);
    Ok(loaded)
}

/// Loads a plan whose warnings were said before (a run's copy); `Err` as [`load_plan`]'s.
pub fn load_quietly(path: &Path, format: DiagFormat, trust: Trust) -> Result<Loaded, CliError> {
    load_layered(path, format, trust).map(|l| l.loaded)
}

/// The plan at `path` with this command's layers over it, its warnings unsaid.
pub fn load_layered(path: &Path, format: DiagFormat, trust: Trust) -> Result<Layered, CliError> {
    match baton::site::load_layered(path, trust, &layers(format)?) {
        Ok(layered) => Ok(layered),
        Err(baton::plan::LoadError::Invalid(report)) => Err(CliError::Plan {
            report: Box::new(report),
            format,
        }),
        Err(e) => Err(CliError::invalid(visible(&e.to_string()))),
    }
}

/// Opens a plan once for a command that runs it (`baton::session::open_with` and this
/// command's layers), showing its warnings.
pub fn open_plan(path: &Path, trust: Trust) -> Result<baton::session::OpenedPlan, CliError> {
    use baton::session::OpenError;
    match baton::session::open_with(path, trust, &layers(DiagFormat::Human)?) {
        Ok(opened) => {
            ui::diagnostics(&opened.loaded.report, DiagFormat::Human);
            Ok(opened)
        }
        Err(OpenError::Invalid(report)) => Err(CliError::plan(report)),
        Err(OpenError::Unreadable(e)) => Err(CliError::invalid(visible(&e.to_string()))),
    }
}

/// The node list the user named on the command line, in place of the plan's or the
/// allocation's.
#[derive(Debug, Clone, Copy)]
pub enum GivenNodes<'a> {
    /// `--nodes HOSTLIST`.
    Hostlist(&'a str),
    /// `--hostfile FILE`: read wherever it is, since the user chose it.
    Hostfile(&'a Path),
}

impl<'a> GivenNodes<'a> {
    pub fn of(nodes: Option<&'a str>, hostfile: Option<&'a Path>) -> Option<Self> {
        nodes
            .map(GivenNodes::Hostlist)
            .or(hostfile.map(GivenNodes::Hostfile))
    }

    /// The node list, with the plan's `exclude` and `domains` applied.
    fn list(self, nodes: &baton::plan::Nodes) -> Result<NodeList, NodeListError> {
        match self {
            GivenNodes::Hostlist(h) => nodesets::given(nodes, h),
            GivenNodes::Hostfile(f) => nodesets::given_hostfile(nodes, f),
        }
    }
}

/// The node sets of a plan's tests with `over:`, over `given` (`--nodes`, `--hostfile`), the
/// node list the plan names (a hostfile beside the plan) or the allocation this runs in; `Err`
/// saying why the list cannot be read or a test cannot run on it.
pub fn node_sets(
    plan: &Plan,
    path: &Path,
    given: Option<GivenNodes<'_>>,
    trust: Trust,
) -> Result<Vec<TestSets>, CliError> {
    if plan.tests.iter().all(|t| t.over == Over::All) {
        // Nothing to show, but a --nodes or --hostfile that is not a node list is still an error.
        if let Some(Err(e)) = given.map(|g| g.list(&plan.nodes)) {
            return Err(CliError::invalid(visible(&e.to_string())));
        }
        return Ok(Vec::new());
    }
    let allocation = std::env::var(nodesets::SLURM_NODELIST).ok();
    let resolved = match given {
        Some(g) => g.list(&plan.nodes),
        None => nodesets::resolve(
            &plan.nodes,
            &baton::session::plan_files(path, trust),
            allocation.as_deref(),
        ),
    };
    let list = resolved.map_err(|e| {
        CliError::invalid(format!(
            "{}: node list: {}",
            path.display(),
            visible(&e.to_string())
        ))
    })?;
    let sets = nodesets::plan_sets(plan, &list);
    let problems: Vec<String> = sets
        .iter()
        .filter_map(|s| {
            let p = s.problem.as_ref()?;
            Some(format!(
                "error: {}: test `{}`: {p} (nodes from {})",
                path.display(),
                s.test,
                list.source
            ))
        })
        .collect();
    if problems.is_empty() {
        Ok(sets)
    } else {
        Err(CliError::Invalid(problems.join("\n")))
    }
}

/// `Err` when `run`/`render` must refuse the plan: they run each test as one job on the node
/// list, which is a test's node sets only when they are a single set of all nodes (each-node on
/// one node, pairs on two). Anything more would silently run, say, a per-node test as one big
/// job. The node count is the plan's own list, the allocation's (with `in_allocation`: `render`
/// writes scripts for other allocations), or `launch.nodes`.
pub fn node_sets_runnable(
    plan: &Plan,
    path: &Path,
    in_allocation: bool,
    trust: Trust,
) -> Result<(), CliError> {
    if plan.tests.iter().all(|t| t.over == Over::All) {
        return Ok(());
    }
    let allocation = in_allocation
        .then(|| std::env::var(nodesets::SLURM_NODELIST).ok())
        .flatten();
    let files = baton::session::plan_files(path, trust);
    let (n, source) = match nodesets::resolve(&plan.nodes, &files, allocation.as_deref()) {
        Ok(NodeList {
            hosts: Some(h),
            source,
            ..
        }) => (h.len(), source),
        Ok(_) => (plan.launch.nodes as usize, "launch.nodes".to_string()),
        Err(e) => {
            return Err(CliError::invalid(format!(
                "{}: node list: {e}",
                path.display()
            )));
        }
    };
    let refused: Vec<String> = plan
        .tests
        .iter()
        .filter(|t| !nodesets::is_one_job(t.over, n))
        .map(|t| {
            format!(
                "error: {}: test `{}` runs `over: {}` on {n} node{} (from {source}); node sets are driven by one `baton run` in the allocation's shell or batch script, which starts their steps itself: run it there, not as a rank of srun or mpirun (docs/node-sets.md)",
                path.display(),
                t.name,
                t.over.name(),
                if n == 1 { "" } else { "s" }
            )
        })
        .collect();
    if refused.is_empty() {
        Ok(())
    } else {
        Err(CliError::Invalid(refused.join("\n")))
    }
}
