use std::path::PathBuf;

use baton::exit::Exit;
use std::sync::Arc;

use baton::launch::launcher;
use baton::runner::{self, Input, Mode, RunError, RunOptions};
use baton::session::{Against, Grading};

use super::failed_early as junit;
use super::{MpiEntry, RunFormat, open_plan};

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
    /// `--trust-plan`, a global option: set from it after parsing.
    #[arg(skip)]
    pub trust: baton::plan::Trust,
}

pub fn run(args: &Args, mpi: Option<MpiEntry>, color: bool) -> anyhow::Result<Exit> {
    let Some(opened) = open_plan(&args.plan, args.trust, color) else {
        let why = junit::plan_problems(&args.plan, args.trust);
        let why = why.unwrap_or_else(|| "the plan could not be read".into());
        return Ok(junit::run_junit(args, Exit::Invalid, "plan", &why));
    };
    let plan = &opened.loaded.plan;
    // One rank of many: started by an MPI launcher, or placed by Slurm/pdsh/BATON_RANK as one
    // of several processes (a single srun task is a whole run: it starts its own GPU threads).
    let mpi_launcher = launcher::under_mpi_launcher(launcher::process_env);
    let placed = match launcher::detect(launcher::process_env) {
        Ok(p) => p,
        Err(e) => {
            super::ui::say(&format!("baton: {e}"));
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
        if super::node_sets_not_runnable(plan, &args.plan, true, args.trust) {
            let why = "the plan's node sets cannot run here (see the command's stderr)";
            return Ok(junit::run_junit(args, Exit::Invalid, "plan", why));
        }
        None
    } else {
        match super::nodes::for_run(plan, &args.plan, args) {
            Ok(l) => l,
            // Nothing to run (a rerun of a run that failed no node): no verdict to record.
            Err(Exit::Ok) => return Ok(Exit::Ok),
            Err(exit) => {
                let why = "the node list or the plan's node sets cannot be used (see the command's stderr)";
                return Ok(junit::run_junit(args, exit, "plan", why));
            }
        }
    };
    let plan_hash = opened.identity.clone();
    let mut jobs: Vec<_> = opened
        .jobs
        .iter()
        .filter(|j| args.only.as_deref().is_none_or(|p| j.id.contains(p)))
        .cloned()
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
    let opts = RunOptions {
        plan_path: args.plan.clone(),
        plan_text: opened.text.clone(),
        plan_hash,
        out_dir: args.out.clone(),
        resume: args.resume,
        print_table: args.format == RunFormat::Table,
        capture_transport: args.capture_transport,
    };
    if under_launcher {
        return match mpi {
            Some(m) if mpi_launcher => (m.under_launcher)(args, plan, &opts, &jobs),
            _ if plan.backend == baton::plan::Backend::Nccl => {
                super::rank::over_tcp(args, plan, &opts, &jobs)
            }
            _ => {
                let why = "started as one rank of many (mpirun/srun) with `backend: mpi`, which \
                           measures MPI itself: launch `baton-mpi run`, not `baton run` (build it \
                           with `cargo build --release --features mpi`)";
                super::ui::say(&format!("baton: {why}"));
                // One junit.xml for the launch, from its first rank, as a run's would be.
                Ok(if placed.as_ref().is_none_or(|p| p.rank == 0) {
                    junit::run_junit(args, Exit::Invalid, "launch", why)
                } else {
                    Exit::Invalid
                })
            }
        };
    }
    let input = Input {
        plan,
        jobs: &jobs,
        opts: &opts,
    };
    let over_sets = node_list.is_some();
    // A node-set run grades as it goes (the judge of `over: isolate`) and at the end, by one
    // grading path; a local run resolves its baseline only once it has something to grade.
    let mut grading = None;
    let ran = match node_list {
        Some(nodes) => {
            let g = match super::grade::grading(plan, &args.plan, args.trust, against(args)) {
                Ok(g) => grading.insert(g),
                Err(exit) => return Ok(exit),
            };
            let judge = |r: &baton::results::Results, ids: &[String]| g.judge(r, ids);
            let ui = Arc::new(super::ui::Ui::for_node_sets());
            let mode = Mode::NodeSets {
                nodes: &nodes,
                judge: &judge,
            };
            let ran = runner::run(&input, mode, ui.clone());
            baton::runner::events::Events::event(&*ui, &baton::runner::events::RunEvent::End);
            ran
        }
        None => runner::run(&input, Mode::Local, Arc::new(super::ui::Ui::for_run())),
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
            let end = RunEnd {
                jobs: &ran,
                results: &outcome.results,
                results_path: &outcome.results_path,
                exit: outcome.exit,
            };
            finish_by(args, plan, grading.as_ref(), end)
        }
        Err(e) => {
            eprintln!("baton: {e}");
            if matches!(e, RunError::OutDir(_)) {
                // The directory is another run's, or holds another plan's results.
                return Ok(e.exit());
            }
            Ok(junit::run_junit(args, e.exit(), "run", &e.to_string()))
        }
    }
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
) -> anyhow::Result<Exit> {
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
) -> anyhow::Result<Exit> {
    if args.env_set.is_some() {
        // One environment set of a rendered script: the script grades every set together into
        // the run's one junit.xml and report, and prints that verdict once.
        return Ok(end.exit);
    }
    let resolved;
    let grading = match judged_by {
        Some(g) => g,
        None => {
            resolved = match super::grade::grading(plan, &args.plan, args.trust, against(args)) {
                Ok(g) => g,
                Err(exit) => return Ok(exit),
            };
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
    super::grade::emit(
        &g,
        Some(&dir.join("junit.xml")),
        Some(&dir.join("report")),
        args.format == RunFormat::Json,
    )?;
    super::nodes::write(dir, &g, &plan.name)?;
    Ok(baton::session::run_exit(end.exit, &g))
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
