use std::path::{Path, PathBuf};

use anyhow::Context;
use baton::exit::Exit;
use baton::render::sweep::sweep;
use baton::render::{Input, Sweep, Target};

use super::args::RenderArgs;
use super::error::CliError;
use super::ui;
use super::{Outcome, RenderTarget, open_plan};

pub struct Args {
    pub plan: PathBuf,
    pub targets: Vec<Target>,
    pub out: PathBuf,
    pub templates: Option<PathBuf>,
    pub baton: Option<PathBuf>,
    /// `--nodes COUNT|HOSTLIST`, for a plan with node sets.
    pub nodes: Option<String>,
    pub dry_run: bool,
    /// `--results DIR`: the scripts' output directory by default.
    pub results: Option<PathBuf>,
    pub resume: bool,
    pub submit: Option<Submit>,
    /// `--trust-plan`.
    pub trust: baton::plan::Trust,
    /// `--metrics`, `--notify`, `--history`, the site's `outputs:` filling what they leave out.
    pub fleet: baton::render::fleet::Fleet,
}

impl Args {
    /// The arguments of `baton render`, as the libraries take them; `Err` when a path the
    /// scripts carry is not UTF-8.
    pub fn of(given: RenderArgs, trust: baton::plan::Trust) -> Result<Args, CliError> {
        let RenderArgs {
            plan,
            target,
            out,
            templates,
            baton,
            nodes,
            dry_run,
            submit,
            wait,
            results,
            resume,
            history,
            fleet,
        } = given;
        let fleet = fleet_of(history, fleet)?;
        let targets = target
            .into_iter()
            .map(|t| match t {
                RenderTarget::Slurm => Target::Slurm,
                RenderTarget::Srun => Target::Srun,
                RenderTarget::Mpirun => Target::Mpirun,
            })
            .collect();
        Ok(Args {
            plan,
            targets,
            out,
            templates,
            baton,
            nodes,
            dry_run,
            results,
            resume,
            submit: submit.then_some(Submit { wait }),
            trust,
            fleet,
        })
    }
}

/// What the scripts report to: the flags, else the site's `outputs:` (`--history` after
/// `BATON_HISTORY`, as `baton run` takes it).
fn fleet_of(
    history: Option<PathBuf>,
    given: super::fleet::FleetArgs,
) -> Result<baton::render::fleet::Fleet, CliError> {
    let site = super::load::site_outputs();
    let history = super::fleet::history(history, &site);
    // A store the scripts' run would refuse is refused here, before its values reach a script.
    if let Some(shown) = history
        .as_deref()
        .and_then(|h| h.to_str())
        .and_then(baton::secrets::store_name_shown)
    {
        return Err(CliError::invalid(format!(
            "--history {shown}: a store is a path (an SQLite file) or a postgres:// URL"
        )));
    }
    let given = given.with_site(&site);
    let text = |flag: &str, p: Option<&Path>| match p {
        None => Ok(None),
        Some(p) => baton::render::fleet::script_path(p)
            .map(Some)
            .ok_or_else(|| {
                CliError::invalid(format!(
                    "{flag} {} is not UTF-8; scripts need it as text",
                    p.display()
                ))
            }),
    };
    Ok(baton::render::fleet::Fleet {
        metrics: text("--metrics", given.metrics.as_deref())?,
        notify: given.notify,
        notify_within: given.notify_within,
        notify_ca: text("--notify-ca", given.notify_ca.as_deref())?,
        history: text("--history", history.as_deref())?,
    })
}

/// `--submit [--wait]`.
pub struct Submit {
    pub wait: bool,
}

pub fn run(args: &Args) -> Outcome {
    if args.submit.is_some() && !args.targets.contains(&Target::Slurm) {
        return Err(CliError::invalid(
            "--submit submits the slurm script: add `--target slurm`",
        ));
    }
    if baton::acceptance::is_acceptance_file(&args.plan) {
        return super::accept::render(args);
    }
    let opened = open_plan(&args.plan, args.trust)?;
    let (loaded, text, vouched) = (opened.loaded, opened.text, opened.vouched);
    let sweep = sweep_of(args, &loaded.plan)?;
    let (plan_path, results) = absolute(args)?;
    let baton = text_arg("--baton", args.baton.as_deref())?;
    let results_text = text_arg("--results", results.as_deref())?;
    warn_missing_baton_mpi(baton.as_deref());
    warn_missing_hostfiles(&loaded.plan, &plan_path);
    let jobs = baton::expand::expand(&loaded.plan).jobs;
    let input = Input {
        plan: &loaded.plan,
        plan_text: &text,
        plan_path: &plan_path,
        jobs: &jobs,
        baton: baton.as_deref(),
        trust: args.trust,
        vouched,
        sweep: sweep.clone(),
        results: results_text.as_deref(),
        resume: args.resume,
        fleet: &args.fleet,
    };
    let scripts = baton::render::render(&input, &args.targets, args.templates.as_deref())
        .map_err(|e| CliError::invalid(format!("{}: {e}", args.plan.display())))?;
    let batch_script = write_scripts(args, &scripts)?;
    let sets = baton::launch::env_sets(&jobs).len();
    let line = summary(
        &loaded.plan.name,
        jobs.len(),
        sets,
        sweep.as_ref(),
        batch_script.as_deref(),
    );
    ui::out(&format!(
        "{line}{}\n",
        if args.dry_run {
            "; dry run, nothing written"
        } else {
            ""
        }
    ))?;
    match (&args.submit, batch_script) {
        (Some(submit), Some(script)) => {
            let graded = Graded {
                plan: &args.plan,
                name: &loaded.plan.name,
                sets: if sweep.is_some() { None } else { Some(sets) },
                trust: args.trust,
            };
            submit_script(&script, submit, results.as_deref(), &graded)
        }
        _ => Ok(Exit::Ok),
    }
}

/// The plan's path and `--results`, absolute: the job starts wherever Slurm starts it.
fn absolute(args: &Args) -> Result<(PathBuf, Option<PathBuf>), CliError> {
    let plan = std::path::absolute(&args.plan)
        .with_context(|| format!("cannot resolve {}", args.plan.display()))?;
    let results = match &args.results {
        Some(d) => Some(
            std::path::absolute(d)
                .with_context(|| format!("cannot resolve --results {}", d.display()))?,
        ),
        None => None,
    };
    Ok((plan, results))
}

/// The node-set batch job, if the plan has node sets; `Err` saying why it cannot render
/// (or be submitted without a node count).
fn sweep_of(args: &Args, plan: &baton::plan::Plan) -> Result<Option<Sweep>, CliError> {
    let files = baton::session::plan_files(&args.plan, args.trust);
    let sweep = sweep(plan, &files, args.nodes.as_deref(), &args.targets)
        .map_err(|e| CliError::invalid(format!("{}: {e}", args.plan.display())))?;
    if args.submit.is_some() && sweep.as_ref().is_some_and(|s| s.nodes.is_none()) {
        return Err(CliError::invalid(format!(
            "{}: --submit: its tests run over node sets of the job's nodes, and nothing says \
             how many: add --nodes COUNT (or a hostlist), or name `nodes.hostlist` in the plan",
            args.plan.display()
        )));
    }
    Ok(sweep)
}

/// An optional path argument as the text scripts carry; `Err` when it is not UTF-8.
fn text_arg(flag: &str, path: Option<&Path>) -> Result<Option<String>, CliError> {
    match path.map(|p| (p, p.to_str())) {
        None => Ok(None),
        Some((_, Some(s))) => Ok(Some(s.to_string())),
        Some((p, None)) => Err(CliError::invalid(format!(
            "{flag} {} is not UTF-8; scripts need it as text",
            p.display()
        ))),
    }
}

/// `--baton` is how the machines that run the scripts call baton, which this machine cannot
/// know: it is kept as written (a name stays a PATH lookup there). Only a path that does not
/// exist here is worth a word, since it often means a typo.
fn warn_missing_baton_mpi(baton: Option<&str>) {
    if let Some(b) = baton.filter(|b| b.contains('/')) {
        let mpi = Path::new(b).with_file_name("baton-mpi");
        if !mpi.is_file() {
            ui::say(&format!(
                "warning: {} does not exist here; the scripts run it on every node \
                 (fine if it is a path on those machines; build it with `cargo build --release --features mpi`)",
                mpi.display()
            ));
        }
    }
}

/// Writes (or with `--dry-run` prints) the scripts; the batch script's path, if one is among them.
/// What it says goes through `baton::stdout`, so a reader that leaves early (`| head -1`) does not
/// turn the render into a failure; the lines of scripts written before an error still show.
fn write_scripts(
    args: &Args,
    scripts: &[baton::render::Script],
) -> Result<Option<PathBuf>, CliError> {
    let mut said = String::new();
    let mut batch_script = None;
    let written = scripts.iter().try_for_each(|s| {
        let path = args.out.join(&s.file_name);
        if args.dry_run {
            let end = if s.text.ends_with('\n') { "" } else { "\n" };
            let head = format!("# ---- {} ({}) ----", path.display(), s.target.name());
            said.push_str(&format!("{head}\n{}{end}", s.text));
        } else {
            write_script(&path, &s.text)?;
            said.push_str(&format!("wrote {} ({})\n", path.display(), s.target.name()));
        }
        if s.target == Target::Slurm {
            batch_script = Some(path);
        }
        Ok::<(), CliError>(())
    });
    ui::out(&said)?;
    written.map(|()| batch_script)
}

/// What was rendered, in one line: the jobs and their steps, or the node-set batch job and how
/// to give it its nodes when the render did not.
fn summary(
    name: &str,
    jobs: usize,
    sets: usize,
    sweep: Option<&Sweep>,
    script: Option<&Path>,
) -> String {
    match sweep {
        None => {
            format!("{name}: {jobs} job(s) in {sets} environment set(s), one launcher step each")
        }
        Some(Sweep {
            nodes: Some(n),
            whole: true,
            ..
        }) => format!(
            "{name}: {jobs} job(s) in {sets} environment set(s), run by `baton run` in one batch job across {n} node(s)"
        ),
        Some(Sweep { nodes: Some(n), .. }) => {
            format!("{name}: node sets over {n} node(s), run by `baton run` in one batch job")
        }
        Some(_) => format!(
            "{name}: node sets over the job's nodes, run by `baton run` in one batch job: \
             submit it with `sbatch -N COUNT {}` (a job of one node is refused), or render \
             with --nodes COUNT",
            script.map_or_else(|| "SCRIPT".into(), |p| p.display().to_string())
        ),
    }
}

/// A hostfile the plan names that is not there yet: the scripts read it when they run (it may
/// be written by then), so this is a warning, not an error.
fn warn_missing_hostfiles(plan: &baton::plan::Plan, plan_path: &Path) {
    let dir = plan_path.parent().unwrap_or(Path::new("/"));
    let named = [
        (
            "launch.mpirun.hostfile",
            plan.launch.mpirun.hostfile.as_deref(),
        ),
        (
            "nodes.hostfile",
            match &plan.nodes.source {
                baton::plan::NodeSource::Hostfile(f) => Some(f.as_str()),
                _ => None,
            },
        ),
    ];
    for (key, file) in named {
        if let Some(f) = file {
            let path = dir.join(f);
            if !path.is_file() {
                ui::say(&format!(
                    "warning: `{key}` {} does not exist (yet); the scripts read it when they run",
                    path.display()
                ));
            }
        }
    }
}

/// What `--submit --wait` needs to print the job's verdict.
struct Graded<'a> {
    plan: &'a Path,
    name: &'a str,
    /// Environment sets of the plain scripts (`set-K/results.json`); `None`: the node-set
    /// batch job's one `results.json`.
    sets: Option<usize>,
    trust: baton::plan::Trust,
}

/// Submits `script` (with its results directory as its argument, when given); with `wait`, the
/// job's verdict is printed and its exit status becomes baton's.
fn submit_script(
    script: &Path,
    submit: &Submit,
    results: Option<&Path>,
    graded: &Graded,
) -> Outcome {
    let submitted =
        baton::render::submit::sbatch(script, submit.wait, results).map_err(CliError::runtime)?;
    if !submitted.stderr.is_empty() {
        ui::say(&submitted.stderr);
    }
    let id = &submitted.job_id;
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let results = results
        .map(Path::to_path_buf)
        .unwrap_or_else(|| here.join(format!("{}-{id}", graded.name)));
    ui::out(&format!(
        "submitted batch job {id}: output {}, results in {}\n",
        here.join(format!("{}-{id}.out", graded.name)).display(),
        results.display()
    ))?;
    let Some(code) = submitted.exit else {
        return Ok(Exit::Ok);
    };
    print_verdict(&results, graded)?;
    if code == 0 {
        return Ok(Exit::Ok);
    }
    let exit = [Exit::Failed, Exit::Invalid, Exit::Runtime, Exit::Timeout]
        .into_iter()
        .find(|e| e.code() == code)
        .unwrap_or(Exit::Runtime);
    let why = format!("baton: batch job {id} ended with exit status {code}");
    Err(CliError::Ended(exit, why))
}

/// The verdict on what the job left in `dir`, as `baton grade` prints it: the job's own output
/// file holds it too, but a CI log should not need the job ID to show why it is red. The job's
/// exit status stays the command's.
fn print_verdict(dir: &Path, g: &Graded) -> Result<(), CliError> {
    let files: Vec<PathBuf> = match g.sets {
        None => vec![dir.join("results.json")],
        Some(n) => (0..n)
            .map(|k| dir.join(format!("set-{k}/results.json")))
            .collect(),
    };
    let files: Vec<PathBuf> = files.into_iter().filter(|f| f.is_file()).collect();
    if files.is_empty() {
        ui::say(&format!(
            "baton: the job left no results in {}",
            dir.display()
        ));
        return Ok(());
    }
    let against = baton::session::Against {
        baseline: None,
        history: None,
    };
    let format = super::GradeFormat::Text;
    let outputs = super::grade::Outputs::default();
    match super::grade::run(g.plan, &files, against, outputs, format, g.trust) {
        Ok(_) => Ok(()),
        Err(e @ CliError::Unexpected(_)) => Err(e),
        // The job's verdict cannot be graded here: said, and the job's status stays the exit.
        Err(e) => {
            ui::error(&e);
            Ok(())
        }
    }
}

fn write_script(path: &Path, text: &str) -> Result<(), CliError> {
    Ok(baton::output::write_atomic_mode(
        path,
        text.as_bytes(),
        0o755,
    )?)
}
