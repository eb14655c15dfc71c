use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use baton::exit::Exit;

mod baseline;
mod check;
mod expand;
pub mod gpu;
pub mod grade;
mod ingest;
mod progress;
mod render;
pub mod run;

/// Version-controlled acceptance plans for GPU clusters: expand, run, grade.
#[derive(Debug, Parser)]
#[command(name = "baton", version, about, long_about = None)]
struct Cli {
    /// Colour in diagnostics: auto (when stderr is a terminal), always, never.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    color: Color,
    /// Allow the plan keys that run or choose programs (mpirun and Slurm options beyond the vetted
    /// set, containers, variables such as PATH or LD_PRELOAD). Only for plans whose author you
    /// trust: see docs/trust.md.
    #[arg(long, global = true)]
    trust_plan: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate plans: every error with file:line:col, a snippet and a suggestion.
    Check {
        /// Plan files.
        #[arg(required = true)]
        plans: Vec<PathBuf>,
        /// human: snippets with carets; short: one line per diagnostic.
        #[arg(long, value_enum, default_value_t = CheckFormat::Human)]
        format: CheckFormat,
    },
    /// Run a plan's jobs, print the nccl-tests table live and write results.
    Run(run::Args),
    /// Write job scripts for sbatch, srun or mpirun: one launcher step per environment set, then
    /// `baton grade`.
    Render {
        /// Plan file; its text is carried inside the scripts.
        plan: PathBuf,
        /// slurm (an sbatch script), srun, mpirun; several separated by commas.
        #[arg(long, short = 't', value_enum, value_delimiter = ',', required = true)]
        target: Vec<RenderTarget>,
        /// Directory to write the scripts into.
        #[arg(long, short = 'o', default_value = ".")]
        out: PathBuf,
        /// Directory of templates (`*.j2`) that replace the built-in ones by name.
        #[arg(long, value_name = "DIR")]
        templates: Option<PathBuf>,
        /// The `baton` the scripts call, as a path on the machines that run them; `baton-mpi`
        /// is expected beside it. Default: this binary.
        #[arg(long, value_name = "PATH")]
        baton: Option<PathBuf>,
        /// Print the scripts instead of writing them.
        #[arg(long)]
        dry_run: bool,
        /// Submit the slurm script with sbatch from the current directory (where the job's
        /// output and results land). Exit 3 when sbatch rejects it.
        #[arg(long, conflicts_with = "dry_run")]
        submit: bool,
        /// With --submit: wait for the job and exit with its status (0 passed, 1 a criterion
        /// failed, 3 runtime failure, 4 timeout).
        #[arg(long, requires = "submit")]
        wait: bool,
    },
    /// One rank's share of a run (started by `baton run` through mpirun).
    #[command(name = "__worker", hide = true)]
    Worker(WorkerArgs),
    /// Expand a plan into its jobs: IDs, ranks, split groups, sizes, criteria, GPU memory.
    Expand {
        plan: PathBuf,
        #[arg(long, value_enum, default_value_t = ExpandFormat::Table)]
        format: ExpandFormat,
        /// Most jobs listed in the table (the totals always count every job).
        #[arg(long, default_value_t = 1000)]
        max_listed: usize,
    },
    /// Read nccl-tests logs (text, JSON -J, NCCL_DEBUG=INFO) into a results file.
    Ingest {
        /// nccl-tests output files; NCCL_DEBUG-only files add transports to the run beside them.
        #[arg(required = true)]
        logs: Vec<PathBuf>,
        /// Results file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Plan job ID these logs measured; several logs become its repeats.
        #[arg(long)]
        job: Option<String>,
    },
    /// Grade results against a plan's criteria: verdicts, JUnit XML, report. Exit 1 on failure.
    Grade {
        /// Plan file whose `expect` criteria grade the results.
        plan: PathBuf,
        /// Results files (from `run` or `ingest`).
        #[arg(required = true)]
        results: Vec<PathBuf>,
        /// Results to compare `regression` against (default: the plan's `baseline:`).
        #[arg(long)]
        baseline: Option<PathBuf>,
        /// Write JUnit XML here.
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Write the Markdown and HTML report into this directory.
        #[arg(long)]
        report: Option<PathBuf>,
    },
    /// Write the Markdown and HTML report only (exit 0 once written, whatever the verdict).
    Report {
        /// Plan file whose `expect` criteria grade the results.
        plan: PathBuf,
        /// Results files (from `run` or `ingest`).
        #[arg(required = true)]
        results: Vec<PathBuf>,
        /// Results to compare `regression` against (default: the plan's `baseline:`).
        #[arg(long)]
        baseline: Option<PathBuf>,
        /// Report directory.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Save a baseline, or compare two runs side by side.
    Baseline {
        #[command(subcommand)]
        action: BaselineAction,
    },
}

#[derive(Debug, Subcommand)]
enum BaselineAction {
    /// Save results (one or several files) as one baseline file.
    Save {
        /// Results files to keep as the baseline.
        #[arg(required = true)]
        results: Vec<PathBuf>,
        /// Baseline file to write.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Per job and size: old and new time and busbw, their ratio, and the shape of any drop.
    Compare {
        /// The earlier run (e.g. the baseline).
        old: PathBuf,
        /// The run to compare with it.
        new: PathBuf,
        /// Print Markdown instead of a text table.
        #[arg(long)]
        markdown: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum CheckFormat {
    Human,
    Short,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RenderTarget {
    Slurm,
    Srun,
    Mpirun,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunFormat {
    Table,
    Json,
}

/// The MPI rank entry points, present only in `baton-mpi`: `baton` never references MPI, so it
/// runs on machines without an MPI library.
#[derive(Clone, Copy)]
pub struct MpiEntry {
    pub worker: fn(&WorkerArgs) -> anyhow::Result<Exit>,
    pub under_launcher:
        fn(&run::Args, &baton::plan::Plan, &[baton::expand::Job]) -> anyhow::Result<Exit>,
}

/// What `__worker` is told by the `baton run` that started it.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    pub plan: PathBuf,
    /// File with the job IDs to run, one per line.
    #[arg(long)]
    pub jobs: PathBuf,
    /// Results file rank 0 keeps up to date.
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long)]
    pub table: bool,
    /// GPUs to drive from this process (nccl backend, one thread each).
    #[arg(long, default_value_t = 0)]
    pub gpus: usize,
    /// File rank 0 appends a line to per finished row (feeds `run`'s progress bar).
    #[arg(long)]
    pub progress: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ExpandFormat {
    Table,
    Json,
}

pub fn main(mpi: Option<MpiEntry>) -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                Exit::Invalid.code()
            } else {
                Exit::Ok.code()
            };
        }
    };
    if cli.trust_plan {
        TRUST_PLAN.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let color = match cli.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let outcome = match cli.command {
        Command::Check { plans, format } => check::run(&plans, format, color),
        Command::Expand {
            plan,
            format,
            max_listed,
        } => expand::run(&plan, format, max_listed, color),
        Command::Run(args) => run::run(&args, mpi, color),
        Command::Render {
            plan,
            target,
            out,
            templates,
            baton,
            dry_run,
            submit,
            wait,
        } => render::run(
            &render::Args {
                plan,
                targets: target
                    .into_iter()
                    .map(|t| match t {
                        RenderTarget::Slurm => baton::render::Target::Slurm,
                        RenderTarget::Srun => baton::render::Target::Srun,
                        RenderTarget::Mpirun => baton::render::Target::Mpirun,
                    })
                    .collect(),
                out,
                templates,
                baton,
                dry_run,
                submit: submit.then_some(render::Submit { wait }),
            },
            color,
        ),
        Command::Worker(w) => match mpi {
            _ if w.gpus > 0 => gpu::local_worker(&w),
            Some(m) => (m.worker)(&w),
            None => Err(anyhow::anyhow!("the rank worker is `baton-mpi __worker`")),
        },
        Command::Ingest { logs, output, job } => ingest::run(&logs, &output, job.as_deref()),
        Command::Grade {
            plan,
            results,
            baseline,
            junit,
            report,
        } => grade::run(
            &plan,
            &results,
            baseline.as_deref(),
            junit.as_deref(),
            report.as_deref(),
            color,
        ),
        Command::Report {
            plan,
            results,
            baseline,
            output,
        } => grade::report(&plan, &results, baseline.as_deref(), &output, color),
        Command::Baseline { action } => match action {
            BaselineAction::Save { results, output } => baseline::save(&results, &output),
            BaselineAction::Compare { old, new, markdown } => {
                baseline::compare(&old, &new, markdown)
            }
        },
    };
    match outcome {
        Ok(exit) => exit.code(),
        Err(e) => {
            eprintln!("error: {}", baton::stdout::visible(&format!("{e:#}")));
            Exit::Runtime.code()
        }
    }
}

/// The jobs named in `ids_file` (one ID per line), in that order.
pub fn select_jobs(
    plan: &baton::plan::Plan,
    ids_file: &std::path::Path,
) -> anyhow::Result<Vec<baton::expand::Job>> {
    use anyhow::Context;
    // A list of job IDs is no bigger than the plan that names them.
    let ids = baton::input::read_bounded(ids_file, baton::plan::MAX_PLAN_BYTES, "job list")?;
    let ids = String::from_utf8(ids)
        .with_context(|| format!("{} is not UTF-8 text", ids_file.display()))?;
    let all = baton::expand::expand(plan).jobs;
    ids.lines()
        .filter(|l| !l.is_empty())
        .map(|id| {
            all.iter()
                .find(|j| j.id == id)
                .cloned()
                .with_context(|| format!("job `{id}` is not in the plan"))
        })
        .collect()
}

/// `--trust-plan`, set once from the command line before any plan is loaded.
static TRUST_PLAN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the user vouched for the plan: commands that run or render it load it this way.
fn plan_trust() -> baton::plan::Trust {
    if TRUST_PLAN.load(std::sync::atomic::Ordering::Relaxed) {
        baton::plan::Trust::Trusted
    } else {
        baton::plan::Trust::Data
    }
}

/// Loads a plan, printing its diagnostics to stderr; `None` when it is invalid.
fn load_plan(
    path: &std::path::Path,
    color: bool,
    format: CheckFormat,
    trust: baton::plan::Trust,
) -> Option<baton::plan::Loaded> {
    match baton::plan::load_file_with(path, trust) {
        Ok(loaded) => {
            if !loaded.report.diagnostics.is_empty() {
                eprint!("{}", diagnostics(&loaded.report, color, format));
            }
            Some(loaded)
        }
        Err(baton::plan::LoadError::Invalid(report)) => {
            eprint!("{}", diagnostics(&report, color, format));
            None
        }
        Err(e) => {
            eprintln!("error: {}", baton::stdout::visible(&e.to_string()));
            None
        }
    }
}

/// Loads a plan like [`load_plan`] and also returns the text it was checked from, for commands
/// that carry the plan elsewhere (`render` puts it inside scripts).
fn load_plan_source(path: &std::path::Path, color: bool) -> Option<(baton::plan::Loaded, String)> {
    let (name, bytes) = match baton::plan::read_file(path) {
        Ok(b) => b,
        Err(baton::plan::LoadError::Invalid(report)) => {
            eprint!("{}", diagnostics(&report, color, CheckFormat::Human));
            return None;
        }
        Err(e) => {
            eprintln!("error: {}", baton::stdout::visible(&e.to_string()));
            return None;
        }
    };
    match baton::plan::parse_bytes_with(&name, &bytes, plan_trust()) {
        Ok(loaded) => {
            if !loaded.report.diagnostics.is_empty() {
                eprint!("{}", diagnostics(&loaded.report, color, CheckFormat::Human));
            }
            let text = String::from_utf8(bytes).ok()?;
            Some((loaded, text))
        }
        Err(report) => {
            eprint!("{}", diagnostics(&report, color, CheckFormat::Human));
            None
        }
    }
}

fn diagnostics(report: &baton::plan::Report, color: bool, format: CheckFormat) -> String {
    match format {
        CheckFormat::Human => report.render(color),
        CheckFormat::Short => report.short(),
    }
}
