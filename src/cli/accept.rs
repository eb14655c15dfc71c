//! `baton accept FILE -o DIR`: an acceptance's phases in order over one node list (the
//! allocation's, `--nodes` or `--hostfile`), resumable by running the same command again; and
//! what `baton check` says of an acceptance file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use baton::acceptance::{self, Acceptance, PhaseRecord, Request, Told};
use baton::plan::Trust;
use baton::runner::events::{Events, RunEvent};
use baton::site::Layers;
use baton::stdout::visible;

use super::Outcome;
use super::error::CliError;

use super::ui::{self, DiagFormat, Ui};

/// `baton accept`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Acceptance file (`acceptance: 1`, docs/acceptance.md).
    pub file: PathBuf,
    /// Directory for every phase's results (`phases/NN-NAME/`) and the combined outputs.
    /// Running the same command again resumes where it stopped.
    #[arg(long, short = 'o', default_value = "baton-accept")]
    pub out: PathBuf,
    /// The nodes to accept (a Slurm hostlist) instead of the allocation's.
    #[arg(long, value_name = "HOSTLIST")]
    pub nodes: Option<String>,
    /// The nodes to accept, one per line, instead of the allocation's.
    #[arg(long, value_name = "FILE", conflicts_with = "nodes")]
    pub hostfile: Option<PathBuf>,
    /// Each phase's metrics (`--metrics DIR`: `baton-PLAN.prom` per phase plan) and verdict
    /// (`--notify`: one POST per phase that ran), as `baton run` gives its one.
    #[command(flatten)]
    pub fleet: super::fleet::FleetArgs,
    /// `--trust-plan`, a global option: set from it after parsing.
    #[arg(skip)]
    pub trust: Trust,
}

fn load(path: &Path, format: DiagFormat) -> Result<Acceptance, CliError> {
    acceptance::load(path).map_err(|report| CliError::Plan {
        report: Box::new(report),
        format,
    })
}

/// What opening every phase's plan says: a line per phase, and each phase plan's name.
struct Opened {
    lines: Vec<String>,
    plans: Vec<String>,
}

/// Every phase's plan opened, before anything runs: a mistake in the last phase is found
/// before the first one measures.
fn open_phases(doc: &Acceptance, trust: Trust, layers: &Layers) -> Result<Opened, CliError> {
    let mut lines = Vec::new();
    let mut plans = Vec::new();
    let mut problems = Vec::new();
    let located = |f: &acceptance::Finding| {
        format!(
            "{}:{}:{}: {}",
            doc.file.display(),
            f.pos.line,
            f.pos.col,
            visible(&f.message)
        )
    };
    for f in &doc.warnings {
        ui::say(&format!("warning: {}", located(f)));
    }
    for p in &doc.phases {
        match acceptance::open_phase(doc, p, trust, layers) {
            Ok(o) => {
                for f in acceptance::plan_findings(p, &o.loaded.plan) {
                    if f.error {
                        problems.push(format!("error: {}", located(&f)));
                    } else {
                        ui::say(&format!("warning: {}", located(&f)));
                    }
                }
                plans.push(o.loaded.plan.name.clone());
                lines.push(format!(
                    "  {}: plan {} ({} test(s), {} job(s))",
                    p.name,
                    o.loaded.plan.name,
                    o.loaded.plan.tests.len(),
                    o.jobs.len()
                ));
                problems.extend(plan_files_refused(&o).into_iter().map(|m| {
                    format!(
                        "error: {}: phase {}: {}",
                        doc.file.display(),
                        p.name,
                        visible(&m)
                    )
                }));
            }
            Err(e) => problems.push(format!(
                "error: {}: {}",
                doc.file.display(),
                visible(&e.to_string())
            )),
        }
    }
    if problems.is_empty() {
        Ok(Opened { lines, plans })
    } else {
        Err(CliError::Invalid(problems.join("\n")))
    }
}

/// What `check PLAN` refuses of the files a plan names beside itself, for a phase's plan:
/// its hostfile, baseline, history store, `relative` results and profiles.
fn plan_files_refused(o: &baton::session::OpenedPlan) -> Vec<String> {
    let plan = &o.loaded.plan;
    let files = baton::session::plan_files(&o.path, o.trust);
    let mut problems: Vec<String> = Vec::new();
    if let baton::plan::NodeSource::Hostfile(h) = &plan.nodes.source
        && let Err(e) = files.resolve("nodes.hostfile", h)
    {
        problems.push(e.to_string());
    }
    problems.extend(files.refused(plan).iter().map(ToString::to_string));
    if let Err(p) = baton::profile::check_plan(plan, &files) {
        problems.extend(p);
    }
    problems
}

/// `baton check` of an acceptance file.
pub fn check(path: &Path, format: DiagFormat, trust: Trust) -> Result<(), CliError> {
    let doc = load(path, format)?;
    let layers = super::load::layers(format)?;
    let lines = open_phases(&doc, trust, &layers)?.lines;
    let mut out = format!(
        "{}: ok (acceptance {}, {} phases)\n",
        path.display(),
        doc.name,
        doc.phases.len()
    );
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    ui::out(&out)?;
    Ok(())
}

/// The node list of the acceptance.
fn hosts(args: &Args) -> Result<Vec<String>, CliError> {
    use baton::expand::nodesets;
    let bad = |e: &dyn std::fmt::Display| CliError::invalid(visible(&e.to_string()));
    if let Some(f) = &args.hostfile {
        let list =
            nodesets::given_hostfile(&baton::plan::Nodes::default(), f).map_err(|e| bad(&e))?;
        return Ok(list.hosts.unwrap_or_default());
    }
    let text = match &args.nodes {
        Some(h) => h.clone(),
        None => std::env::var(nodesets::SLURM_NODELIST).map_err(|_| {
            CliError::invalid(
                "baton accept needs the nodes to accept: run it inside a Slurm allocation \
                 (SLURM_JOB_NODELIST), or pass --nodes HOSTLIST or --hostfile FILE",
            )
        })?,
    };
    baton::nodeset::expand(&text).map_err(|e| bad(&format!("--nodes {text:?}: {e}")))
}

pub fn run(args: &Args) -> Outcome {
    let doc = load(&args.file, DiagFormat::Human)?;
    let layers = super::load::layers(DiagFormat::Human)?;
    let opened = open_phases(&doc, args.trust, &layers)?;
    let hosts = hosts(args)?;
    metrics_dir(args, &opened.plans)?;
    baton::output::ensure_dir(&args.out)?;
    ui::say(&format!(
        "baton: acceptance {} over {} node(s): {} ({} phases) into {}",
        doc.name,
        hosts.len(),
        baton::nodeset::compress(&hosts),
        doc.phases.len(),
        args.out.display()
    ));
    let ui_events = Arc::new(Ui::for_node_sets());
    let tell = |t: Told<'_>| ui::say(&told(&t));
    let req = Request {
        doc: &doc,
        out: &args.out,
        hosts: hosts.clone(),
        trust: args.trust,
        layers: &layers,
        events: ui_events.clone(),
        tell: &tell,
    };
    let ran = acceptance::run(&req);
    Events::event(&*ui_events, &RunEvent::End);
    let o = ran.map_err(|e| CliError::Ended(e.exit(), format!("baton: {e}")))?;
    let by = acceptance::RanBy {
        user: Some(baton::host::user()),
        host: baton::host::hostname(),
        baton: env!("CARGO_PKG_VERSION").to_string(),
        directory: std::env::current_dir().map_or(String::new(), |d| d.display().to_string()),
    };
    let a = acceptance::outcome(&doc, &hosts, &o, by);
    acceptance::write_all(&args.out, &a, &o.grades)?;
    let ctx = acceptance::Context {
        cluster: layers
            .site
            .as_ref()
            .and_then(|s| s.name())
            .unwrap_or_else(|| doc.name.clone()),
        command: command(args, &layers),
    };
    acceptance::write_report(&args.out, &a, &o.grades, &ctx)?;
    ui::out(&acceptance::summary(&a))?;
    publish(args, &o)?;
    ui::say(&format!(
        "baton: acceptance.html and .md (the signable report), acceptance.json, nodes.json, drain.sh, \
         junit.xml and verdict.json in {}",
        args.out.display()
    ));
    if !a.failed.is_empty() {
        let drain = args.out.join("drain.sh");
        ui::say(&format!(
            "baton: to drain the failed nodes, review and run {}",
            drain.display()
        ));
    }
    if o.interrupted.is_some() {
        ui::say(&format!(
            "baton: stopped by a signal; `baton accept {} -o {}` resumes at the phase and set it reached",
            args.file.display(),
            args.out.display()
        ));
    }
    Ok(o.exit)
}

/// `--metrics` of an acceptance names a directory: a file would keep only the last phase's.
/// Each phase plan's file in it is judged before any phase runs (a link, a FIFO or a device
/// there is refused now, not after the phases).
fn metrics_dir(args: &Args, plans: &[String]) -> Result<(), CliError> {
    if let Some(m) = &args.fleet.metrics {
        baton::output::refuse_symlink(m).map_err(CliError::invalid)?;
    }
    match &args.fleet.metrics {
        Some(m) if !m.is_dir() => Err(CliError::invalid(format!(
            "--metrics {}: an acceptance writes one file per phase plan; name an existing \
             directory (node_exporter's textfile directory)",
            m.display()
        ))),
        Some(m) => {
            for p in plans {
                let file = baton::metrics::file_for(m, p);
                baton::output::refuse_inputs(&file, [args.file.as_path()])
                    .map_err(|e| CliError::invalid(format!("--metrics {e}")))?;
            }
            Ok(())
        }
        None => Ok(()),
    }
}

/// Each phase that ran, to the fleet: its grade with the exit `baton run` of it would have.
fn publish(args: &Args, o: &acceptance::Outcome) -> Result<(), CliError> {
    let verdict = ui::Verdict { on_stderr: false };
    for ((r, g), res) in o.records.iter().zip(&o.grades).zip(&o.results) {
        if let (Some(g), Some(res)) = (g, res) {
            let exit = baton::exit::Exit::from_code(r.exit);
            super::fleet::publish(&args.fleet, g, &[res], exit, verdict)?;
        }
    }
    Ok(())
}

/// The command that reproduces the run, for the report: the file, the site and the output,
/// never `--set` values (one may carry a secret).
fn command(args: &Args, layers: &Layers) -> String {
    let mut c = format!("baton accept {}", args.file.display());
    if let Some(s) = &layers.site {
        c.push_str(&format!(" --site {}", s.path.display()));
    }
    if let Some(n) = &args.nodes {
        c.push_str(&format!(" --nodes {n}"));
    }
    if let Some(h) = &args.hostfile {
        c.push_str(&format!(" --hostfile {}", h.display()));
    }
    c.push_str(&format!(" -o {}", args.out.display()));
    c
}

fn told(t: &Told<'_>) -> String {
    match t {
        Told::Starting { phase, hosts, out } => {
            let left = if out.is_empty() {
                String::new()
            } else {
                let o: Vec<&String> = out.iter().map(|(h, _)| h).collect();
                format!("; left out {}", baton::nodeset::compress(&o))
            };
            format!(
                "baton: phase {phase}: on {} node(s): {}{left}",
                hosts.len(),
                baton::nodeset::compress(hosts)
            )
        }
        Told::ReadBack(r) => format!(
            "baton: phase {}: finished before ({}), read back",
            r.name,
            word(r)
        ),
        Told::Ended(r) => format!("baton: phase {}: {}", r.name, word(r)),
        Told::NotRun(r) => format!(
            "baton: phase {}: {}: {}",
            r.name,
            word(r),
            r.why.as_deref().unwrap_or("")
        ),
    }
}

fn word(r: &PhaseRecord) -> String {
    let faulty = r.faulty();
    let s = serde_json::to_value(r.status).ok();
    let s = s
        .as_ref()
        .and_then(|v| v.as_str())
        .unwrap_or("?")
        .replace('_', " ");
    if faulty.is_empty() {
        s
    } else {
        format!("{s}; failed or dead: {faulty}")
    }
}

/// `baton render -t slurm ACCEPTANCE`: one batch script that runs `baton accept` in the job's
/// allocation, sized for the most demanding phase.
pub fn render(args: &super::render::Args) -> Outcome {
    use baton::render::Target;
    if args.targets != [Target::Slurm] || args.submit.is_some() {
        return Err(CliError::invalid(
            "an acceptance renders as one slurm batch job: `-t slurm` (submit it with sbatch -N COUNT)",
        ));
    }
    let doc = load(&args.plan, DiagFormat::Human)?;
    let layers = super::load::layers(DiagFormat::Human)?;
    let mut most = (1u64, 0u64, false);
    for p in &doc.phases {
        let o = acceptance::open_phase(&doc, p, args.trust, &layers)
            .map_err(|e| CliError::invalid(visible(&e.to_string())))?;
        let plan = &o.loaded.plan;
        // Processes per node (one may drive several GPUs), and the GPUs they drive.
        let per_node = plan.ranks_per_node().unwrap_or(1);
        let ranks = plan.launch.ranks_per_node.map_or(per_node, u64::from);
        let gpus = match plan.backend {
            baton::plan::Backend::Nccl => per_node,
            _ => 0,
        };
        most = (
            most.0.max(ranks),
            most.1.max(gpus),
            most.2 || plan.launch.slurm.exclusive,
        );
    }
    let nodes = match args.nodes.as_deref() {
        None => None,
        Some(n) => Some(n.parse::<u32>().map_err(|_| {
            CliError::invalid(format!(
                "--nodes {n:?}: an acceptance takes a node count here"
            ))
        })?),
    };
    let abs = |p: &Path| std::path::absolute(p).map(|a| a.display().to_string());
    let file = abs(&args.plan)?;
    let results = args.results.as_deref().map(abs).transpose()?;
    let baton = args
        .baton
        .as_ref()
        .map_or("baton".to_string(), |b| b.display().to_string());
    // `baton accept` keeps no history of its own: its phases' plans name theirs.
    let fleet = baton::render::fleet::Fleet {
        history: None,
        ..args.fleet.clone()
    };
    let fleet = fleet.lines();
    let script = acceptance::slurm_script(&acceptance::ScriptInput {
        name: &doc.name,
        file: &file,
        baton: &baton,
        nodes,
        ranks_per_node: most.0,
        gpus_per_node: most.1,
        exclusive: most.2,
        results: results.as_deref(),
        fleet: &fleet,
    });
    let path = args.out.join(format!("{}.sbatch", doc.name));
    if !args.dry_run {
        baton::output::ensure_dir(&args.out)?;
        baton::output::write_atomic_mode(&path, script.as_bytes(), 0o755)?;
    }
    ui::out(&format!(
        "wrote {} (slurm): acceptance {}, {} phases, run by `baton accept` in one batch job{}\n",
        path.display(),
        doc.name,
        doc.phases.len(),
        if args.dry_run {
            "; dry run, nothing written"
        } else {
            ""
        }
    ))?;
    Ok(baton::exit::Exit::Ok)
}
