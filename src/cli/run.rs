use std::path::PathBuf;

use baton::exit::Exit;
use baton::launch::launcher;
use baton::runner::orchestrate::{self, RunOptions};

use super::failed_early as junit;
use super::{MpiEntry, RunFormat, load_plan_source};

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
    /// History store for `trend` criteria (default: the plan's `history:`).
    #[arg(long, value_name = "STORE")]
    pub history: Option<PathBuf>,
    /// Record NCCL's transport per channel and peer for every job (always on for jobs with
    /// a `transport` criterion).
    #[arg(long)]
    pub capture_transport: bool,
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
}

pub fn run(args: &Args, mpi: Option<MpiEntry>, color: bool) -> anyhow::Result<Exit> {
    let Some((loaded, text)) = load_plan_source(&args.plan, color) else {
        let why = junit::plan_problems(&args.plan, super::plan_trust());
        let why = why.unwrap_or_else(|| "the plan could not be read".into());
        return Ok(junit::run_junit(args, Exit::Invalid, "plan", &why));
    };
    // One rank of many: started by an MPI launcher, or placed by Slurm/pdsh/BATON_RANK as one
    // of several processes (a single srun task is a whole run: it starts its own GPU threads).
    let mpi_launcher = launcher::under_mpi_launcher(launcher::process_env);
    let placed = match launcher::detect(launcher::process_env) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("baton: {e}");
            return Ok(junit::run_junit(
                args,
                Exit::Invalid,
                "launch",
                &e.to_string(),
            ));
        }
    };
    let under_launcher = mpi_launcher
        || placed
            .as_ref()
            .is_some_and(|p| p.size > 1 || p.source == launcher::Source::Baton);
    let node_list = if under_launcher {
        if super::node_sets_not_runnable(&loaded.plan, &args.plan, true) {
            let why = "the plan's node sets cannot run here (see the command's stderr)";
            return Ok(junit::run_junit(args, Exit::Invalid, "plan", why));
        }
        None
    } else {
        match super::nodes::for_run(&loaded.plan, &args.plan, args) {
            Ok(l) => l,
            // Nothing to run (a rerun of a run that failed no node): no verdict to record.
            Err(Exit::Ok) => return Ok(Exit::Ok),
            Err(exit) => {
                let why = "the node list or the plan's node sets cannot be used (see the command's stderr)";
                return Ok(junit::run_junit(args, exit, "plan", why));
            }
        }
    };
    let expansion = baton::expand::expand(&loaded.plan);
    let plan_hash = baton::expand::plan_identity(&loaded.plan, &expansion.jobs);
    let mut jobs: Vec<_> = expansion
        .jobs
        .into_iter()
        .filter(|j| args.only.as_deref().is_none_or(|p| j.id.contains(p)))
        .collect();
    if jobs.is_empty() {
        eprintln!(
            "baton: no job of {} matches --only {:?}",
            args.plan.display(),
            args.only.as_deref().unwrap_or("")
        );
        let why = format!(
            "no job matches --only {:?}",
            args.only.as_deref().unwrap_or("")
        );
        return Ok(junit::run_junit(args, Exit::Invalid, "run", &why));
    }
    if let Some(k) = args.env_set {
        jobs = match baton::launch::env_set_jobs(&jobs, k) {
            Ok(set) => set,
            Err(n) => {
                eprintln!(
                    "baton: --env-set {k}: the selected jobs of {} form {n} environment set(s), numbered from 0",
                    args.plan.display()
                );
                return Ok(Exit::Invalid);
            }
        };
    }
    if under_launcher {
        return match mpi {
            Some(m) if mpi_launcher => (m.under_launcher)(args, &loaded.plan, &plan_hash, &jobs),
            _ if loaded.plan.backend == baton::plan::Backend::Nccl => {
                super::rank::over_tcp(args, &loaded.plan, &plan_hash, &jobs)
            }
            _ => {
                let why = "started as one rank of many (mpirun/srun) with `backend: mpi`, which \
                           measures MPI itself: launch `baton-mpi run`, not `baton run` (build it \
                           with `cargo build --release --features mpi`)";
                eprintln!("baton: {why}");
                // One junit.xml for the launch, from its first rank, as a run's would be.
                Ok(if placed.as_ref().is_none_or(|p| p.rank == 0) {
                    junit::run_junit(args, Exit::Invalid, "launch", why)
                } else {
                    Exit::Invalid
                })
            }
        };
    }
    let opts = RunOptions {
        plan_path: args.plan.clone(),
        plan_text: text,
        plan_hash,
        out_dir: args.out.clone(),
        resume: args.resume,
        print_table: args.format == RunFormat::Table,
        capture_transport: args.capture_transport,
    };
    let over_sets = node_list.is_some();
    let ran = match node_list {
        Some(nodes) => {
            let base = match super::grade::baseline_for(
                &args.plan,
                &loaded.plan,
                args.baseline.as_deref(),
            ) {
                Ok(b) => b,
                Err(exit) => return Ok(exit),
            };
            let plan = &loaded.plan;
            let history = super::grade::history_for(&args.plan, plan, args.history.as_deref());
            let plan_files = super::plan_files(&args.plan);
            let judge = |r: &baton::results::Results, ids: &[String]| -> bool {
                let files = [("results.json".to_string(), r.clone())];
                let g = baton::grade::grade(&baton::grade::GradeInput {
                    plan,
                    plan_file: None,
                    results: &files,
                    baseline: &base,
                    only: None,
                    history: &history.as_history(),
                    files: Some(&plan_files),
                });
                ids.iter().all(|id| {
                    g.jobs
                        .iter()
                        .find(|j| &j.id == id)
                        .is_some_and(|j| j.status != baton::grade::Status::Fail)
                })
            };
            let bar = super::progress::Bar::for_node_sets();
            let shown: &dyn baton::runner::progress::Progress = match &bar {
                Some(b) => b,
                None => &super::progress::SetLines,
            };
            let ran = baton::runner::nodesets::run(plan, &jobs, &opts, &nodes, &judge, shown);
            shown.end();
            ran
        }
        None => {
            let bar = super::progress::Bar::for_terminal();
            let shown = bar
                .as_ref()
                .map(|b| b as &dyn baton::runner::progress::Progress);
            orchestrate::run(&loaded.plan, &jobs, &opts, shown)
        }
    };
    match ran {
        Ok(outcome) => {
            if args.format == RunFormat::Json {
                baton::stdout::print(&(serde_json::to_string_pretty(&outcome.results)? + "\n"))?;
            }
            summary(&outcome.results, &outcome.results_path);
            if let Some(sig) = outcome.interrupted {
                eprintln!(
                    "baton: stopped by {sig}: {} job(s) not reached; `baton run {} -o {} --resume` continues",
                    outcome.not_reached.len(),
                    args.plan.display(),
                    args.out.display()
                );
            }
            // A node-set run cut short is graded whole, as `baton grade` grades it afterwards:
            // the sets a signal cut or never reached fail it, never a PASS of what is left.
            let ran: Vec<_> = jobs
                .into_iter()
                .filter(|j| over_sets || !outcome.not_reached.contains(&j.id))
                .collect();
            finish(
                args,
                &loaded.plan,
                &ran,
                &outcome.results,
                &outcome.results_path,
                outcome.exit,
            )
        }
        Err(e) => {
            eprintln!("baton: {e}");
            if matches!(e, orchestrate::RunError::OutDir(_)) {
                // The directory is another run's, or holds another plan's results.
                return Ok(e.exit());
            }
            Ok(junit::run_junit(args, e.exit(), "run", &e.to_string()))
        }
    }
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
) -> anyhow::Result<Exit> {
    if args.env_set.is_some() {
        // One environment set of a rendered script: the script grades every set together into
        // the run's one junit.xml and report, and prints that verdict once.
        return Ok(run_exit);
    }
    let base = match super::grade::baseline_for(&args.plan, plan, args.baseline.as_deref()) {
        Ok(b) => b,
        Err(exit) => return Ok(exit),
    };
    let history = super::grade::history_for(&args.plan, plan, args.history.as_deref());
    let files = vec![(results_path.display().to_string(), results.clone())];
    let ran: Vec<String> = jobs.iter().map(|j| j.id.clone()).collect();
    let plan_file = args.plan.display().to_string();
    let g = super::grade::grade_keyed(
        plan,
        &plan_file,
        &files,
        base,
        Some(&ran),
        &history.as_history(),
    );
    let dir = results_path.parent().unwrap_or(std::path::Path::new("."));
    super::grade::emit(
        &g,
        Some(&dir.join("junit.xml")),
        Some(&dir.join("report")),
        args.format == RunFormat::Json,
    )?;
    super::nodes::write(dir, &g, &plan.name)?;
    Ok(match run_exit {
        Exit::Timeout | Exit::Runtime | Exit::Interrupted => run_exit,
        _ => g.exit(),
    })
}

fn summary(results: &baton::results::Results, path: &std::path::Path) {
    use baton::results::JobStatus;
    let count = |s: JobStatus| results.jobs.iter().filter(|j| j.status == s).count();
    eprintln!(
        "baton: {} job(s): {} completed, {} error, {} timeout; results in {}",
        results.jobs.len(),
        count(JobStatus::Completed),
        count(JobStatus::Error) + count(JobStatus::Partial),
        count(JobStatus::Timeout),
        path.display()
    );
}
