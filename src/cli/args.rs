//! The command line as clap reads it: every subcommand and its flags. `--help`, the man pages
//! and the completions are generated from these same definitions (`manual.rs`).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use super::{history, ingest, run};
pub use baton::runner::worker_args::WorkerArgs;

/// Version-controlled acceptance plans for GPU clusters: expand, run, grade.
#[derive(Debug, Parser)]
#[command(name = "baton", version, about, long_about = None)]
pub struct Cli {
    /// Colour in diagnostics: auto (when stderr is a terminal), always, never.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
    /// Allow the plan keys that run or choose programs (mpirun and Slurm options beyond the vetted
    /// set, containers, variables such as PATH or LD_PRELOAD). Only for plans whose author you
    /// trust: see docs/trust.md.
    #[arg(long, global = true)]
    pub trust_plan: bool,
    /// The site file laid over the plan (where it runs: partition, account, modules, container,
    /// fabric variables, nodes). Default: $BATON_SITE, else /etc/baton/site.yaml when it
    /// exists. See docs/site.md.
    #[arg(long, global = true, value_name = "FILE")]
    pub site: Option<PathBuf>,
    /// Lay no site file over the plan (not $BATON_SITE, not /etc/baton/site.yaml).
    #[arg(long, global = true, conflicts_with = "site")]
    pub no_site: bool,
    /// Set one value over the plan and the site, by the plan's key path (repeatable):
    /// `--set launch.nodes=4`, `--set env.NCCL_DEBUG=INFO`. The value is YAML.
    #[arg(long = "set", global = true, value_name = "KEY.PATH=VALUE")]
    pub set: Vec<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConfigFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
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
    /// Show the plan's effective values with the site file and --set laid over it, each with
    /// where it was written (`plan.yaml:12`, `site:/etc/baton/site.yaml:4`, `--set …`).
    Config {
        /// The plan file whose effective values to show.
        plan: PathBuf,
        /// text: `ORIGIN<TAB>key=value` lines; json: a list of {key, value, origin}.
        #[arg(long, value_enum, default_value_t = ConfigFormat::Text)]
        format: ConfigFormat,
    },
    /// Run a plan's jobs, print the nccl-tests table live and write results.
    Run(run::Args),
    /// Run an acceptance (`acceptance: 1`): its phases in order over one node list, each gated
    /// on the phases it needs, into one directory with one set of outputs; the same command
    /// resumes where a signal or a crash stopped it.
    Accept(super::accept::Args),
    /// Write job scripts for sbatch, srun or mpirun: one launcher step per environment set, then
    /// `baton grade`.
    Render(RenderArgs),
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
    Probe(super::probe::Args),
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
    Grade(GradeArgs),
    /// Write the Markdown and HTML report only (exit 0 once written, whatever the verdict).
    Report(ReportArgs),
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
pub enum BaselineAction {
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
pub enum CheckFormat {
    Human,
    Short,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RenderTarget {
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

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExpandFormat {
    Table,
    Json,
}

// The arguments of `baton render` (its help is the variant's doc comment).
#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// Plan file; its text is carried inside the scripts.
    pub plan: PathBuf,
    /// slurm (an sbatch script), srun, mpirun; several separated by commas.
    #[arg(long, short = 't', value_enum, value_delimiter = ',', required = true)]
    pub target: Vec<RenderTarget>,
    /// Directory to write the scripts into.
    #[arg(long, short = 'o', default_value = ".")]
    pub out: PathBuf,
    /// Directory of templates (`*.j2`) that replace the built-in ones by name.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// The `baton` the scripts call, as the machines that run them call it: a name on their
    /// PATH or a path there, kept as written; `baton-mpi` is beside it (or by name).
    /// Default: the plan's `launch.baton`, by default `baton` and `baton-mpi` by name from
    /// PATH.
    #[arg(long, value_name = "PATH")]
    pub baton: Option<PathBuf>,
    /// For tests over node sets (`over:`): the batch job's nodes, a count (`8`) or a Slurm
    /// hostlist (`node[01-08]`), instead of the plan's node list or `sbatch -N`.
    #[arg(long, value_name = "COUNT|HOSTLIST")]
    pub nodes: Option<String>,
    /// Print the scripts instead of writing them.
    #[arg(long)]
    pub dry_run: bool,
    /// Submit the slurm script with sbatch from the current directory (where the job's
    /// output and results land). Exit 3 when sbatch rejects it.
    #[arg(long, conflicts_with = "dry_run")]
    pub submit: bool,
    /// With --submit: wait for the job and exit with its status (0 passed, 1 a criterion
    /// failed, 3 runtime failure, 4 timeout).
    #[arg(long, requires = "submit")]
    pub wait: bool,
    /// The scripts' results directory (results.json, junit.xml, report/), the same on every
    /// try, instead of `NAME-JOBID` (or a date) in the current directory; CI then knows
    /// where they land, and a resubmitted job finds its results (--resume).
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
    /// The scripts continue what their results directory holds: a requeued job (the batch
    /// script allows requeueing) or one resubmitted with the same --results skips the jobs
    /// complete there.
    #[arg(long)]
    pub resume: bool,
    /// History store the scripts' run reads and `trend` criteria use: a file or a postgres://
    /// URL, written without its password (the job's PGPASSWORD gives it). Default: the site
    /// file's `outputs.history`.
    #[arg(long, value_name = "STORE")]
    pub history: Option<PathBuf>,
    /// The scripts' run reports here too (`--metrics`, `--notify`: a URL with a path is read
    /// from BATON_NOTIFY_URL at run time, not written in the script). See docs/fleet.md.
    #[command(flatten)]
    pub fleet: super::fleet::FleetArgs,
}

// The arguments of `baton grade` (its help is the variant's doc comment).
#[derive(Debug, clap::Args)]
pub struct GradeArgs {
    /// Plan file whose `expect` criteria grade the results.
    pub plan: PathBuf,
    /// Results files (from `run` or `ingest`).
    #[arg(required_unless_present = "none_ran")]
    pub results: Vec<PathBuf>,
    /// Results to compare `regression` against (default: the plan's `baseline:`).
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// History store for `trend` criteria: a file or a postgres:// URL (default: $BATON_HISTORY,
    /// else the plan's `history:`).
    #[arg(long, value_name = "STORE")]
    pub history: Option<PathBuf>,
    /// Write JUnit XML here.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Write every graded cell as CSV here (RFC 4180; one line per size and placement, with the
    /// NCCL version, registration, CTA policy and blocking mode it was measured with).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the Markdown and HTML report into this directory.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Grade even with no results files: every job fails closed ("no results"). What a
    /// batch script does when no launcher step ran, so CI still gets junit.xml.
    #[arg(long)]
    pub none_ran: bool,
    /// First fold the journal beside each `results.json` (left by a run that was killed
    /// before it could) into it, so the file holds every row for any reader: what a
    /// rendered script's grading step does. The journal is kept.
    #[arg(long)]
    pub fold_journals: bool,
    /// text: the verdict summary; json: the verdict document (schemas/verdict.schema.json)
    /// on stdout, the summary on stderr.
    #[arg(long, value_enum, default_value_t = GradeFormat::Text)]
    pub format: GradeFormat,
    #[command(flatten)]
    pub fleet: super::fleet::FleetArgs,
}

// The arguments of `baton report` (its help is the variant's doc comment).
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Plan file whose `expect` criteria grade the results.
    pub plan: PathBuf,
    /// Results files (from `run` or `ingest`).
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// Results to compare `regression` against (default: the plan's `baseline:`).
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// History store for `trend` criteria: a file or a postgres:// URL (default: $BATON_HISTORY,
    /// else the plan's `history:`).
    #[arg(long, value_name = "STORE")]
    pub history: Option<PathBuf>,
    /// Report directory.
    #[arg(short, long)]
    pub output: PathBuf,
}
