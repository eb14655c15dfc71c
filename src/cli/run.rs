use std::path::PathBuf;
use std::sync::Arc;

use baton::exit::Exit;
use baton::expand::Job;
use baton::launch::launcher;
use baton::runner::events::{Events, RunEvent};
use baton::runner::nodesets::Nodes;
use baton::runner::{self, Input, Mode, RunError, RunOptions};
use baton::session::{Against, Grading};

use super::error::CliError;
use super::failed_early as junit;
use super::nodes::Driven;
use super::ui::{self, Ui};
use super::{MpiEntry, Outcome, RunFormat, node_sets_runnable, open_plan};

/// `baton run`: what to run and where the results go.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Plan file to run; its text is read once and copied into --out.
    pub plan: PathBuf,
    /// Directory for results.json (and per-environment-set parts).
    #[arg(long, short = 'o', default_value = "baton-out")]
    pub out: PathBuf,
    /// Only jobs whose ID contains this text.
    #[arg(long)]
    pub only: Option<String>,
    /// Continue an interrupted run in --out: skip jobs already complete (only results of the
    /// same plan are continued). Without it, earlier results in --out are kept aside as
    /// results.STARTED.json.
    #[arg(long)]
    pub resume: bool,
    /// table: the nccl-tests table per job; json: the results document on stdout at the end.
    #[arg(long, value_enum, default_value_t = RunFormat::Table)]
    pub format: RunFormat,
    /// Results file for `regression` criteria (default: the plan's `baseline:`).
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// History store for `trend` criteria: a file or a postgres:// URL (default: $BATON_HISTORY,
    /// else the plan's `history:`).
    #[arg(long, value_name = "STORE")]
    pub history: Option<PathBuf>,
    /// Record NCCL's transport per channel and peer for every job (always on for jobs with
    /// a `transport` criterion).
    #[arg(long)]
    pub capture_transport: bool,
    /// Take no node evidence (probe snapshots before and after every job, the fleet
    /// consistency preflight), as the plan's `evidence: false` does.
    #[arg(long)]
    pub no_evidence: bool,
    /// Only the jobs of environment set K (numbered from 0 over the selected jobs, as
    /// `render` numbers its launcher steps). Writes results only: grade every set's results
    /// together (`baton grade PLAN OUT/set-*/results.json`), as rendered scripts do.
    #[arg(long, value_name = "K")]
    pub env_set: Option<usize>,
    /// Run the node sets over these nodes (a Slurm hostlist, e.g. `node[01-08,12]`) instead of
    /// the plan's node list or the allocation's.
    #[arg(long, value_name = "HOSTLIST", conflicts_with = "rerun_failed")]
    pub nodes: Option<String>,
    /// Run the node sets over the hosts of this hostfile instead of the plan's node list or
    /// the allocation's (a plan's own `nodes.hostfile` must be beside it: docs/trust.md).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["nodes", "rerun_failed"])]
    pub hostfile: Option<PathBuf>,
    /// Run again over the nodes an earlier run failed or left suspect: its `nodes.json` (or
    /// the output directory holding it).
    #[arg(long, value_name = "NODES_JSON")]
    pub rerun_failed: Option<PathBuf>,
    #[command(flatten)]
    pub fleet: super::fleet::FleetArgs,
    /// `--trust-plan`, a global option: set from it after parsing.
    #[arg(skip)]
    pub trust: baton::plan::Trust,
}

pub fn run(args: &Args, mpi: Option<MpiEntry>) -> Outcome {
    let opened = open_plan(&args.plan, args.trust).map_err(|e| {
        let why = junit::plan_problems(&args.plan, args.trust);
        let why = why.unwrap_or_else(|| "the plan could not be read".into());
        junit::run_junit(args, e, "plan", &why)
    })?;
    let plan = &opened.loaded.plan;
    metrics_clear(args, &plan.name)?;
    // One rank of many: started by an MPI launcher, or placed by Slurm/pdsh/BATON_RANK as one
    // of several processes (a single srun task is a whole run: it starts its own GPU threads).
    let mpi_launcher = launcher::under_mpi_launcher(launcher::process_env);
    let placed = launcher::detect(launcher::process_env).map_err(|e| {
        let error = CliError::Invalid(format!("baton: {e}"));
        junit::run_junit(args, error, "launch", &e.to_string())
    })?;
    let under_launcher = mpi_launcher
        || placed
            .as_ref()
            .is_some_and(|p| p.size > 1 || p.source == launcher::Source::Baton);
    let node_list = if under_launcher {
        node_sets_runnable(plan, &args.plan, true, args.trust).map_err(|e| {
            let why = "the plan's node sets cannot run here (see the command's stderr)";
            junit::run_junit(args, e, "plan", why)
        })?;
        None
    } else {
        match super::nodes::for_run(plan, &args.plan, args) {
            Ok(Driven::Sets(nodes)) => Some(nodes),
            Ok(Driven::Jobs) => None,
            // Nothing to run (a rerun of a run that failed no node): no verdict to record.
            Ok(Driven::Nothing) => return Ok(Exit::Ok),
            Err(e) => {
                let why = "the node list or the plan's node sets cannot be used (see the command's stderr)";
                return Err(junit::run_junit(args, e, "plan", why));
            }
        }
    };
    let jobs = selected(args, &opened.jobs)?;
    let opts = RunOptions {
        plan_path: args.plan.clone(),
        plan_text: opened.text.clone(),
        plan_hash: opened.identity.clone(),
        out_dir: args.out.clone(),
        resume: args.resume,
        print_table: args.format == RunFormat::Table,
        capture_transport: args.capture_transport,
        site: opened.site.clone(),
        evidence: !args.no_evidence,
    };
    if under_launcher {
        return match mpi {
            Some(m) if mpi_launcher => (m.under_launcher)(args, plan, &opts, &jobs),
            _ if plan.backend == baton::plan::Backend::Nccl => {
                super::rank::over_tcp(args, plan, &opts, &jobs)
            }
            _ => Err(mpi_backend_refused(args, placed.as_ref())),
        };
    }
    let input = Input {
        plan,
        jobs: &jobs,
        opts: &opts,
    };
    match node_list {
        Some(nodes) => over_node_sets(args, &input, &nodes),
        None => {
            let ran = runner::run(&input, Mode::Local, Arc::new(Ui::for_run()));
            ended(args, &input, None, ran)
        }
    }
}

/// `Err` when `--metrics` would replace the plan or the baseline: said before anything runs.
fn metrics_clear(args: &Args, plan: &str) -> Result<(), CliError> {
    let Some(target) = &args.fleet.metrics else {
        return Ok(());
    };
    baton::output::refuse_symlink(target).map_err(CliError::invalid)?;
    let file = baton::metrics::file_for(target, plan);
    // The run's own files in `-o`: `--metrics OUT/junit.xml` would replace one of them.
    let own: Vec<PathBuf> = ["results.json", "junit.xml", "nodes.json", "drain.sh"]
        .iter()
        .map(|f| args.out.join(f))
        .collect();
    let mut flagged: Vec<(&str, &std::path::Path)> = vec![("--metrics", &file)];
    flagged.extend(own.iter().map(|p| ("-o", p.as_path())));
    baton::output::refuse_twice(&flagged).map_err(CliError::invalid)?;
    let inputs = [Some(args.plan.as_path()), args.baseline.as_deref()];
    baton::output::refuse_inputs(&file, inputs.into_iter().flatten())
        .map_err(|e| CliError::invalid(format!("--metrics {e}")))
}

/// The plan's jobs `--only` and `--env-set` select; `Err` when they select none.
fn selected(args: &Args, jobs: &[Job]) -> Result<Vec<Job>, CliError> {
    let only = args.only.as_deref();
    let jobs: Vec<Job> = jobs
        .iter()
        .filter(|j| only.is_none_or(|p| j.id.contains(p)))
        .cloned()
        .collect();
    if jobs.is_empty() {
        let error = CliError::Invalid(format!(
            "baton: no job of {} matches --only {:?}",
            args.plan.display(),
            only.unwrap_or("")
        ));
        let why = format!("no job matches --only {:?}", only.unwrap_or(""));
        return Err(junit::run_junit(args, error, "run", &why));
    }
    let Some(k) = args.env_set else {
        return Ok(jobs);
    };
    baton::launch::env_set_jobs(&jobs, k).map_err(|n| {
        CliError::Invalid(format!(
            "baton: --env-set {k}: the selected jobs of {} form {n} environment set(s), numbered from 0",
            args.plan.display()
        ))
    })
}

/// `baton run` with `backend: mpi` started as one rank of many: `baton-mpi` measures MPI.
fn mpi_backend_refused(args: &Args, placed: Option<&launcher::Placement>) -> CliError {
    let why = "started as one rank of many (mpirun/srun) with `backend: mpi`, which \
               measures MPI itself: launch `baton-mpi run`, not `baton run` (build it \
               with `cargo build --release --features mpi`)";
    let error = CliError::Invalid(format!("baton: {why}"));
    // One junit.xml for the launch, from its first rank, as a run's would be.
    if placed.is_none_or(|p| p.rank == 0) {
        junit::run_junit(args, error, "launch", why)
    } else {
        error
    }
}

/// A node-set run: it grades as it goes (the judge of `over: isolate`) and at the end, by one
/// grading path.
fn over_node_sets(args: &Args, input: &Input<'_>, nodes: &Nodes) -> Outcome {
    let grading = super::grade::grading(input.plan, &args.plan, args.trust, against(args))?;
    let judge = |r: &baton::results::Results, ids: &[String]| grading.judge(r, ids);
    let ui = Arc::new(Ui::for_node_sets());
    let mode = Mode::NodeSets {
        nodes,
        judge: &judge,
    };
    let ran = runner::run(input, mode, ui.clone());
    Events::event(&*ui, &RunEvent::End);
    ended(args, input, Some(&grading), ran)
}

/// What a local or node-set run's outcome says, then its grade.
fn ended(
    args: &Args,
    input: &Input<'_>,
    grading: Option<&Grading<'_>>,
    ran: Result<runner::RunOutcome, RunError>,
) -> Outcome {
    let outcome = match ran {
        Ok(o) => o,
        Err(e) => {
            let error = CliError::Ended(e.exit(), format!("baton: {e}"));
            if matches!(&e, RunError::OutDir(d) if d.is_invalid_input()) {
                // The directory is another run's, holds another plan's results, or is no
                // directory of the user's: that run's verdict is not this one's to say. A
                // directory that cannot be written is this run's failure, reported below.
                return Err(error);
            }
            let error = failed(args, input, grading, error);
            return Err(junit::run_junit(args, error, "run", &e.to_string()));
        }
    };
    if args.format == RunFormat::Json {
        ui::out(&(serde_json::to_string_pretty(&outcome.results)? + "\n"))?;
    }
    summary(&outcome.results, &outcome.results_path);
    if let Some(sig) = outcome.interrupted {
        ui::say(&format!(
            "baton: stopped by {sig}: {} job(s) not reached; `baton run {} -o {} --resume` continues",
            outcome.not_reached.len(),
            args.plan.display(),
            args.out.display()
        ));
    }
    // A node-set run cut short is graded whole, as `baton grade` grades it afterwards: the sets
    // a signal cut or never reached fail it, never a PASS of what is left.
    let over_sets = grading.is_some();
    let ran: Vec<Job> = input
        .jobs
        .iter()
        .filter(|j| over_sets || !outcome.not_reached.contains(&j.id))
        .cloned()
        .collect();
    let end = RunEnd {
        jobs: &ran,
        results: &outcome.results,
        results_path: &outcome.results_path,
        exit: outcome.exit,
    };
    finish_by(args, input.plan, grading, end)
}

/// A run that failed before grading, told to the fleet (`--metrics`, `--notify`) with its plan
/// graded over no results.
fn failed(
    args: &Args,
    input: &Input<'_>,
    judged_by: Option<&Grading<'_>>,
    error: CliError,
) -> CliError {
    if args.env_set.is_some() {
        return error;
    }
    let ids: Vec<String> = input.jobs.iter().map(|j| j.id.clone()).collect();
    let resolved = match judged_by {
        Some(_) => None,
        None => super::grade::grading(input.plan, &args.plan, args.trust, against(args)).ok(),
    };
    let g = judged_by
        .or(resolved.as_ref())
        .map(|grading| grading.grade(&[], Some(&ids)));
    let id = baton::session::failed_run_id(&input.opts.plan_hash, &args.out);
    let verdict = ui::Verdict {
        on_stderr: args.format == RunFormat::Json,
    };
    super::fleet::failed(&args.fleet, g, &id, error, verdict)
}

/// `--baseline` and `--history`.
fn against(args: &Args) -> Against<'_> {
    Against {
        baseline: args.baseline.as_deref(),
        history: args.history.as_deref(),
    }
}

/// How a run ended: the jobs it ran and their results.
pub struct RunEnd<'a> {
    pub jobs: &'a [baton::expand::Job],
    pub results: &'a baton::results::Results,
    pub results_path: &'a std::path::Path,
    pub exit: Exit,
}

/// Grades what ran, writes `junit.xml` and `report/` beside the results, and combines the exit
/// codes: a timeout or runtime failure outranks a failed criterion. With `--env-set` only the
/// run's own exit: see below.
pub fn finish(
    args: &Args,
    plan: &baton::plan::Plan,
    jobs: &[baton::expand::Job],
    results: &baton::results::Results,
    results_path: &std::path::Path,
    run_exit: Exit,
) -> Outcome {
    let end = RunEnd {
        jobs,
        results,
        results_path,
        exit: run_exit,
    };
    finish_by(args, plan, None, end)
}

/// [`finish`] by the grading that judged the run's node sets, else one resolved now.
fn finish_by(
    args: &Args,
    plan: &baton::plan::Plan,
    judged_by: Option<&Grading<'_>>,
    end: RunEnd<'_>,
) -> Outcome {
    if args.env_set.is_some() {
        // One environment set of a rendered script: the script grades every set together into
        // the run's one junit.xml and report, and prints that verdict once.
        return Ok(end.exit);
    }
    let resolved;
    let grading = match judged_by {
        Some(g) => g,
        None => {
            resolved = super::grade::grading(plan, &args.plan, args.trust, against(args))?;
            &resolved
        }
    };
    let files = [(end.results_path.display().to_string(), end.results)];
    let ran: Vec<String> = end.jobs.iter().map(|j| j.id.clone()).collect();
    let g = grading.grade(&files, Some(&ran));
    let dir = end
        .results_path
        .parent()
        .unwrap_or(std::path::Path::new("."));
    let verdict = ui::Verdict {
        on_stderr: args.format == RunFormat::Json,
    };
    super::grade::emit(
        &g,
        Some(&dir.join("junit.xml")),
        Some(&dir.join("report")),
        verdict,
    )?;
    super::nodes::write(dir, &g, &plan.name)?;
    let exit = baton::session::run_exit(end.exit, &g);
    super::fleet::publish(&args.fleet, &g, &[end.results], exit, verdict)?;
    Ok(exit)
}

fn summary(results: &baton::results::Results, path: &std::path::Path) {
    use baton::results::JobStatus;
    let count = |s: JobStatus| results.jobs.iter().filter(|j| j.status == s).count();
    ui::say(&format!(
        "baton: {} job(s): {} completed, {} error, {} timeout; results in {}",
        results.jobs.len(),
        count(JobStatus::Completed),
        count(JobStatus::Error) + count(JobStatus::Partial),
        count(JobStatus::Timeout),
        path.display()
    ));
}
