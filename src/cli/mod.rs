use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use baton::exit::Exit;
use baton::launch::launcher;

mod baseline;
mod check;
mod expand;
mod failed_early;
pub mod gpu;
pub mod grade;
mod history;
mod ingest;
mod manual;
mod nodes;
mod probe;
pub mod rank;
mod ranks;
mod render;
pub mod run;
pub mod ui;

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
        /// Show node sets over this Slurm hostlist instead of the plan's or the allocation's.
        #[arg(long, value_name = "HOSTLIST")]
        nodes: Option<String>,
        /// Show node sets over the hosts of this hostfile instead of the plan's or the
        /// allocation's (a plan's own `nodes.hostfile` must be beside it: docs/trust.md).
        #[arg(long, value_name = "FILE", conflicts_with = "nodes")]
        hostfile: Option<PathBuf>,
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
        /// The `baton` the scripts call, as the machines that run them call it: a name on their
        /// PATH or a path there, kept as written; `baton-mpi` is beside it (or by name).
        /// Default: the plan's `launch.baton`, by default `baton` and `baton-mpi` by name from
        /// PATH.
        #[arg(long, value_name = "PATH")]
        baton: Option<PathBuf>,
        /// For tests over node sets (`over:`): the batch job's nodes, a count (`8`) or a Slurm
        /// hostlist (`node[01-08]`), instead of the plan's node list or `sbatch -N`.
        #[arg(long, value_name = "COUNT|HOSTLIST")]
        nodes: Option<String>,
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
        /// The scripts' results directory (results.json, junit.xml, report/), the same on every
        /// try, instead of `NAME-JOBID` (or a date) in the current directory; CI then knows
        /// where they land, and a resubmitted job finds its results (--resume).
        #[arg(long, value_name = "DIR")]
        results: Option<PathBuf>,
        /// The scripts continue what their results directory holds: a requeued job (the batch
        /// script allows requeueing) or one resubmitted with the same --results skips the jobs
        /// complete there.
        #[arg(long)]
        resume: bool,
    },
    /// Check the launcher wiring before a GPU run: start it as you would start `baton run`
    /// (`srun --mpi=none baton ranks`, `mpirun … baton ranks`, or by hand with BATON_RANK,
    /// BATON_SIZE and BATON_RENDEZVOUS), with the launch's secret in BATON_RUN_KEY. The ranks
    /// meet over TCP as a GPU run's do; rank 0 prints every rank's host, local rank and GPUs, a
    /// barrier round-trip time and what it turned away. Exit 3 naming the ranks that never
    /// arrived or stayed silent (BATON_RENDEZVOUS_TIMEOUT, default 120 s) or a wrong root; 2
    /// for a bad placement or a missing secret. See docs/launching.md and docs/trust.md.
    Ranks,
    /// Snapshot this node's evidence: software, GPUs (NVML), InfiniBand ports and counters,
    /// interfaces, TCP retransmits, PCIe links and AER, kernel log lines (Xid, link, AER).
    /// See docs/evidence.md.
    Probe(probe::Args),
    /// One rank's share of a run (started by `baton run` through mpirun).
    #[command(name = "__worker", hide = true)]
    Worker(WorkerArgs),
    /// Expand a plan into its jobs: IDs, ranks, split groups, sizes, criteria, GPU memory.
    Expand {
        /// Plan file to expand.
        plan: PathBuf,
        /// table: one line per job and the totals; json: every job in full.
        #[arg(long, value_enum, default_value_t = ExpandFormat::Table)]
        format: ExpandFormat,
        /// Most jobs listed in the table (the totals always count every job).
        #[arg(long, default_value_t = 1000)]
        max_listed: usize,
        /// Node sets over this Slurm hostlist instead of the plan's or the allocation's.
        #[arg(long, value_name = "HOSTLIST")]
        nodes: Option<String>,
        /// Node sets over the hosts of this hostfile instead of the plan's or the allocation's.
        #[arg(long, value_name = "FILE", conflicts_with = "nodes")]
        hostfile: Option<PathBuf>,
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
        /// Collective of runs whose log does not say (no start line, no program named).
        #[arg(long, value_name = "NAME", value_parser = ingest::parse_collective)]
        collective: Option<baton::collective::Collective>,
    },
    /// Grade results against a plan's criteria: verdicts, JUnit XML, report. Exit 1 on failure.
    Grade {
        /// Plan file whose `expect` criteria grade the results.
        plan: PathBuf,
        /// Results files (from `run` or `ingest`).
        #[arg(required_unless_present = "none_ran")]
        results: Vec<PathBuf>,
        /// Results to compare `regression` against (default: the plan's `baseline:`).
        #[arg(long)]
        baseline: Option<PathBuf>,
        /// History store for `trend` criteria (default: the plan's `history:`).
        #[arg(long, value_name = "STORE")]
        history: Option<PathBuf>,
        /// Write JUnit XML here.
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Write the Markdown and HTML report into this directory.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Grade even with no results files: every job fails closed ("no results"). What a
        /// batch script does when no launcher step ran, so CI still gets junit.xml.
        #[arg(long)]
        none_ran: bool,
        /// First fold the journal beside each `results.json` (left by a run that was killed
        /// before it could) into it, so the file holds every row for any reader: what a
        /// rendered script's grading step does. The journal is kept.
        #[arg(long)]
        fold_journals: bool,
        /// text: the verdict summary; json: the verdict document (schemas/verdict.schema.json)
        /// on stdout, the summary on stderr.
        #[arg(long, value_enum, default_value_t = GradeFormat::Text)]
        format: GradeFormat,
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
        /// History store for `trend` criteria (default: the plan's `history:`).
        #[arg(long, value_name = "STORE")]
        history: Option<PathBuf>,
        /// Report directory.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Save a baseline, or compare two runs side by side.
    Baseline {
        #[command(subcommand)]
        action: BaselineAction,
    },
    /// Print a shell completion script: `baton completions bash > /etc/bash_completion.d/baton`.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write man pages: baton.1 and one per subcommand (baton-run.1, …).
    Man {
        /// Directory to write them into (e.g. /usr/local/share/man/man1).
        #[arg(long, short = 'o')]
        out: PathBuf,
    },
    /// Keep runs in a history store (SQLite) and show their trend: `add`, `show`.
    History {
        #[command(subcommand)]
        action: history::Action,
    },
}

#[derive(Debug, Subcommand)]
enum BaselineAction {
    /// Save results (one or several files) as one baseline file; a job may be kept once per
    /// host set, and grading compares each run with the entry of its own hosts.
    Save {
        /// Results files to keep as the baseline.
        #[arg(required = true)]
        results: Vec<PathBuf>,
        /// Baseline file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Save even a run with errors, timeouts, cut-short jobs, #wrong > 0, impossible
        /// times or failed criteria (it would make later regressions pass or fail for the wrong
        /// reason).
        #[arg(long)]
        force: bool,
        /// The plan whose criteria the run must meet. Default: the copy `baton run` keeps
        /// beside its results (`parts/plan.yaml`).
        #[arg(long, value_name = "PLAN")]
        plan: Option<PathBuf>,
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
        /// Exit 0 even when a job got slower (by default a drop of more than 5% at any size
        /// exits 1, so a CI step turns red).
        #[arg(long)]
        report_only: bool,
        /// Compare jobs measured on other hosts too (by default a job OLD measured only on
        /// other hosts than NEW is refused: exit 2).
        #[arg(long)]
        any_hosts: bool,
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
pub enum GradeFormat {
    Text,
    Json,
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
    pub under_launcher: fn(
        &run::Args,
        &baton::plan::Plan,
        &baton::runner::RunOptions,
        &[baton::expand::Job],
    ) -> anyhow::Result<Exit>,
}

pub use baton::runner::worker_args::WorkerArgs;

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
    // What the user vouched for travels as a value to each command that loads a plan.
    let trust = if cli.trust_plan {
        baton::plan::Trust::Trusted
    } else {
        baton::plan::Trust::Data
    };
    let color = match cli.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let outcome = match cli.command {
        Command::Check {
            plans,
            format,
            nodes,
            hostfile,
        } => check::run(
            &plans,
            format,
            GivenNodes::of(nodes.as_deref(), hostfile.as_deref()),
            trust,
            color,
        ),
        Command::Expand {
            plan,
            format,
            max_listed,
            nodes,
            hostfile,
        } => expand::run(
            &plan,
            format,
            max_listed,
            GivenNodes::of(nodes.as_deref(), hostfile.as_deref()),
            trust,
            color,
        ),
        Command::Run(args) => run::run(&run::Args { trust, ..args }, mpi, color),
        Command::Render {
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
                nodes,
                dry_run,
                results,
                resume,
                submit: submit.then_some(render::Submit { wait }),
                trust,
            },
            color,
        ),
        Command::Ranks => ranks::run(),
        Command::Probe(a) => probe::run(a),
        Command::Worker(w) => match mpi {
            _ if w.gpus > 0 => gpu::local_worker(&w),
            Some(m) if launcher::under_mpi_launcher(launcher::process_env) => (m.worker)(&w),
            _ => rank::worker_over_tcp(&w),
        },
        Command::Ingest {
            logs,
            output,
            job,
            collective,
        } => ingest::run(&logs, &output, job.as_deref(), collective),
        Command::Grade {
            plan,
            results,
            baseline,
            history,
            junit,
            report,
            none_ran: _,
            fold_journals,
            format,
        } => {
            if fold_journals {
                grade::fold_journals(&results);
            }
            grade::run(
                &plan,
                &results,
                baton::session::Against {
                    baseline: baseline.as_deref(),
                    history: history.as_deref(),
                },
                grade::Outputs {
                    junit: junit.as_deref(),
                    report: report.as_deref(),
                },
                format,
                trust,
                color,
            )
        }
        Command::Report {
            plan,
            results,
            baseline,
            history,
            output,
        } => grade::report(
            &plan,
            &results,
            baseline.as_deref(),
            history.as_deref(),
            &output,
            trust,
            color,
        ),
        Command::Baseline { action } => match action {
            BaselineAction::Save {
                results,
                output,
                force,
                plan,
            } => baseline::save(&results, &output, force, plan.as_deref(), trust),
            BaselineAction::Compare {
                old,
                new,
                markdown,
                report_only,
                any_hosts,
            } => baseline::compare(&old, &new, markdown, report_only, any_hosts),
        },
        Command::Completions { shell } => manual::completions(shell),
        Command::Man { out } => manual::man(&out),
        Command::History { action } => history::run(action),
    };
    match outcome {
        Ok(exit) => exit.code(),
        Err(e) => {
            eprintln!("error: {}", baton::stdout::visible(&format!("{e:#}")));
            Exit::Runtime.code()
        }
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

/// The node list the user named on the command line, in place of the plan's or the
/// allocation's.
#[derive(Debug, Clone, Copy)]
pub enum GivenNodes<'a> {
    /// `--nodes HOSTLIST`.
    Hostlist(&'a str),
    /// `--hostfile FILE`: read wherever it is, since the user chose it.
    Hostfile(&'a std::path::Path),
}

impl<'a> GivenNodes<'a> {
    fn of(nodes: Option<&'a str>, hostfile: Option<&'a std::path::Path>) -> Option<Self> {
        nodes
            .map(GivenNodes::Hostlist)
            .or(hostfile.map(GivenNodes::Hostfile))
    }

    /// The node list, with the plan's `exclude` and `domains` applied.
    fn list(
        self,
        nodes: &baton::plan::Nodes,
    ) -> Result<baton::expand::nodesets::NodeList, baton::expand::nodesets::NodeListError> {
        use baton::expand::nodesets;
        match self {
            GivenNodes::Hostlist(h) => nodesets::given(nodes, h),
            GivenNodes::Hostfile(f) => nodesets::given_hostfile(nodes, f),
        }
    }
}

/// The node sets of a plan's tests with `over:`, over `given` (`--nodes`, `--hostfile`), the
/// node list the plan names (a hostfile beside the plan) or the allocation this runs in; `None`
/// after printing why the list cannot be read.
fn node_sets(
    plan: &baton::plan::Plan,
    path: &std::path::Path,
    given: Option<GivenNodes<'_>>,
    trust: baton::plan::Trust,
) -> Option<Vec<baton::expand::nodesets::TestSets>> {
    use baton::expand::nodesets;
    if plan.tests.iter().all(|t| t.over == baton::plan::Over::All) {
        // Nothing to show, but a --nodes or --hostfile that is not a node list is still an error.
        if let Some(Err(e)) = given.map(|g| g.list(&plan.nodes)) {
            eprintln!("error: {}", baton::stdout::visible(&e.to_string()));
            return None;
        }
        return Some(Vec::new());
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
    match resolved {
        Ok(list) => {
            let sets = nodesets::plan_sets(plan, &list);
            let problems: Vec<String> = sets
                .iter()
                .filter_map(|s| Some(format!("test `{}`: {}", s.test, s.problem.as_ref()?)))
                .collect();
            for p in &problems {
                eprintln!(
                    "error: {}: {p} (nodes from {})",
                    path.display(),
                    list.source
                );
            }
            problems.is_empty().then_some(sets)
        }
        Err(e) => {
            eprintln!(
                "error: {}: node list: {}",
                path.display(),
                baton::stdout::visible(&e.to_string())
            );
            None
        }
    }
}

/// Whether `run`/`render` must refuse the plan: they run each test as one job on the node list,
/// which is a test's node sets only when they are a single set of all nodes (each-node on one
/// node, pairs on two). Anything more would silently run, say, a per-node test as one big job.
/// Prints why. The node count is the plan's own list, the allocation's (with `in_allocation`:
/// `render` writes scripts for other allocations), or `launch.nodes`.
fn node_sets_not_runnable(
    plan: &baton::plan::Plan,
    path: &std::path::Path,
    in_allocation: bool,
    trust: baton::plan::Trust,
) -> bool {
    use baton::expand::nodesets;
    if plan.tests.iter().all(|t| t.over == baton::plan::Over::All) {
        return false;
    }
    let allocation = in_allocation
        .then(|| std::env::var(nodesets::SLURM_NODELIST).ok())
        .flatten();
    let files = baton::session::plan_files(path, trust);
    let (n, source) = match nodesets::resolve(&plan.nodes, &files, allocation.as_deref()) {
        Ok(nodesets::NodeList {
            hosts: Some(h),
            source,
            ..
        }) => (h.len(), source),
        Ok(_) => (plan.launch.nodes as usize, "launch.nodes".to_string()),
        Err(e) => {
            eprintln!("error: {}: node list: {e}", path.display());
            return true;
        }
    };
    let mut refused = false;
    for t in plan
        .tests
        .iter()
        .filter(|t| !nodesets::is_one_job(t.over, n))
    {
        eprintln!(
            "error: {}: test `{}` runs `over: {}` on {n} node{} (from {source}); node sets are driven by one `baton run` in the allocation's shell or batch script, which starts their steps itself: run it there, not as a rank of srun or mpirun (docs/node-sets.md)",
            path.display(),
            t.name,
            t.over.name(),
            if n == 1 { "" } else { "s" }
        );
        refused = true;
    }
    refused
}

/// Loads a plan like [`load_plan`] and also returns the text it was checked from, for commands
/// that carry the plan elsewhere (`render` puts it inside scripts).
fn load_plan_source(
    path: &std::path::Path,
    trust: baton::plan::Trust,
    color: bool,
) -> Option<(baton::plan::Loaded, String)> {
    open_plan(path, trust, color).map(|o| (o.loaded, o.text))
}

/// Opens a plan once for a command that runs it, printing its diagnostics to stderr; `None`
/// when it is invalid or unreadable.
fn open_plan(
    path: &std::path::Path,
    trust: baton::plan::Trust,
    color: bool,
) -> Option<baton::session::OpenedPlan> {
    use baton::session::OpenError;
    match baton::session::open(path, trust) {
        Ok(opened) => {
            if !opened.loaded.report.diagnostics.is_empty() {
                let report = &opened.loaded.report;
                eprint!("{}", diagnostics(report, color, CheckFormat::Human));
            }
            Some(opened)
        }
        Err(OpenError::Invalid(report)) => {
            eprint!("{}", diagnostics(&report, color, CheckFormat::Human));
            None
        }
        Err(OpenError::Unreadable(e)) => {
            eprintln!("error: {}", baton::stdout::visible(&e.to_string()));
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
