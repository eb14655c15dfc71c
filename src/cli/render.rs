use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use baton::exit::Exit;
use baton::render::{Input, Target};

use super::load_plan_source;

pub struct Args {
    pub plan: PathBuf,
    pub targets: Vec<Target>,
    pub out: PathBuf,
    pub templates: Option<PathBuf>,
    pub baton: Option<PathBuf>,
    pub dry_run: bool,
    pub submit: Option<Submit>,
}

/// `--submit [--wait] [--results DIR]`.
pub struct Submit {
    pub wait: bool,
    pub results: Option<PathBuf>,
}

pub fn run(args: &Args, color: bool) -> anyhow::Result<Exit> {
    if args.submit.is_some() && !args.targets.contains(&Target::Slurm) {
        eprintln!("error: --submit submits the slurm script: add `--target slurm`");
        return Ok(Exit::Invalid);
    }
    let Some((loaded, text)) = load_plan_source(&args.plan, color) else {
        return Ok(Exit::Invalid);
    };
    let sweep = match sweep_for(&loaded.plan, &args.plan, &args.targets) {
        Ok(s) => s,
        Err(exit) => return Ok(exit),
    };
    let plan_path = std::path::absolute(&args.plan)
        .with_context(|| format!("cannot resolve {}", args.plan.display()))?;
    // `--baton` is how the machines that run the scripts call baton, which this machine cannot
    // know: it is kept as written (a name stays a PATH lookup there). Only a path that does
    // not exist here is worth a word, since it often means a typo.
    let baton = match &args.baton {
        Some(p) => match p.to_str() {
            Some(s) => Some(s.to_string()),
            None => {
                eprintln!(
                    "error: --baton {} is not UTF-8; scripts need it as text",
                    p.display()
                );
                return Ok(Exit::Invalid);
            }
        },
        None => None,
    };
    if let Some(b) = baton.as_deref().filter(|b| b.contains('/')) {
        let mpi = Path::new(b).with_file_name("baton-mpi");
        if !mpi.is_file() {
            eprintln!(
                "warning: {} does not exist here; the scripts run it on every node \
                 (fine if it is a path on those machines; build it with `cargo build --release --features mpi`)",
                mpi.display()
            );
        }
    }
    warn_missing_hostfiles(&loaded.plan, &plan_path);
    let jobs = baton::expand::expand(&loaded.plan).jobs;
    let input = Input {
        plan: &loaded.plan,
        plan_text: &text,
        plan_path: &plan_path,
        jobs: &jobs,
        baton: baton.as_deref(),
        trust: super::plan_trust(),
        sweep,
    };
    let scripts = match baton::render::render(&input, &args.targets, args.templates.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {}: {e}", args.plan.display());
            return Ok(Exit::Invalid);
        }
    };
    let sets = baton::runner::launch::env_sets(&jobs).len();
    let mut stdout = std::io::stdout().lock();
    let mut batch_script = None;
    for s in &scripts {
        let path = args.out.join(&s.file_name);
        if args.dry_run {
            writeln!(
                stdout,
                "# ---- {} ({}) ----",
                path.display(),
                s.target.name()
            )?;
            stdout.write_all(s.text.as_bytes())?;
            if !s.text.ends_with('\n') {
                writeln!(stdout)?;
            }
        } else {
            write_script(&path, &s.text)?;
            writeln!(stdout, "wrote {} ({})", path.display(), s.target.name())?;
        }
        if s.target == Target::Slurm {
            batch_script = Some(path);
        }
    }
    writeln!(
        stdout,
        "{}: {} job(s) in {sets} environment set(s), one launcher step each{}",
        loaded.plan.name,
        jobs.len(),
        if args.dry_run {
            "; dry run, nothing written"
        } else {
            ""
        }
    )?;
    drop(stdout);
    match (&args.submit, batch_script) {
        (Some(submit), Some(script)) => submit_script(&script, submit, &loaded.plan.name),
        _ => Ok(Exit::Ok),
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
                eprintln!(
                    "warning: `{key}` {} does not exist (yet); the scripts read it when they run",
                    path.display()
                );
            }
        }
    }
}

/// Submits `script`; with `wait`, the job's exit status becomes baton's.
fn submit_script(script: &Path, submit: &Submit, name: &str) -> anyhow::Result<Exit> {
    // The script takes its results directory as its first argument; absolute, since the job
    // starts wherever Slurm starts it.
    let results = match &submit.results {
        Some(d) => Some(
            std::path::absolute(d)
                .with_context(|| format!("cannot resolve --results {}", d.display()))?,
        ),
        None => None,
    };
    let submitted = match baton::render::submit::sbatch(script, submit.wait, results.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::Runtime);
        }
    };
    if !submitted.stderr.is_empty() {
        eprintln!("{}", submitted.stderr);
    }
    let id = &submitted.job_id;
    let here = std::env::current_dir().context("cannot read the current directory")?;
    println!(
        "submitted batch job {id}: output {}, results in {}",
        here.join(format!("{name}-{id}.out")).display(),
        results
            .unwrap_or_else(|| here.join(format!("{name}-{id}")))
            .display()
    );
    Ok(match submitted.exit {
        None | Some(0) => Exit::Ok,
        Some(code) => {
            eprintln!("baton: batch job {id} ended with exit status {code}");
            [Exit::Failed, Exit::Invalid, Exit::Runtime, Exit::Timeout]
                .into_iter()
                .find(|e| e.code() == code)
                .unwrap_or(Exit::Runtime)
        }
    })
}

fn write_script(path: &Path, text: &str) -> anyhow::Result<()> {
    Ok(baton::output::write_atomic_mode(
        path,
        text.as_bytes(),
        0o755,
    )?)
}

/// A plan whose tests run over node sets renders as one batch job whose `baton run` drives the
/// sets; the plain srun and mpirun scripts cannot (each runs one set of all nodes). The node
/// count is the plan's own list, else `launch.nodes` (`sbatch -N` overrides it).
fn sweep_for(
    plan: &baton::plan::Plan,
    path: &Path,
    targets: &[Target],
) -> Result<Option<baton::render::Sweep>, Exit> {
    use baton::expand::nodesets;
    if plan.tests.iter().all(|t| t.over == baton::plan::Over::All) {
        return Ok(None);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let list = match nodesets::resolve(&plan.nodes, dir, None) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {}: node list: {e}", path.display());
            return Err(Exit::Invalid);
        }
    };
    let n = list
        .hosts
        .as_ref()
        .map_or(plan.launch.nodes as usize, Vec::len);
    if plan.tests.iter().all(|t| nodesets::is_one_job(t.over, n)) {
        return Ok(None);
    }
    if let Some(t) = targets.iter().find(|t| **t != Target::Slurm) {
        eprintln!(
            "error: {}: its tests run over node sets, which `baton run` drives inside an allocation; \
             a {} script cannot. Render `-t slurm` (one batch job that runs them all), or run \
             `baton run {}` inside `salloc`",
            path.display(),
            t.name(),
            path.display()
        );
        return Err(Exit::Invalid);
    }
    let tests = nodesets::plan_sets(plan, &list)
        .iter()
        .map(|t| format!("{}: {}", t.test, t.summary()))
        .collect();
    Ok(Some(baton::render::Sweep {
        nodes: n,
        nodelist: list.hosts.as_ref().map(|h| baton::nodeset::compress(h)),
        tests,
    }))
}
