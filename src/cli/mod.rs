//! The command line: arguments (`args`), one command per file, each returning
//! `Result<Exit, CliError>` (`error`), and the one module that prints (`ui`).

use clap::Parser;

use baton::exit::Exit;
use baton::launch::launcher;

mod accept;
mod args;
mod baseline;
mod check;
mod config;
pub mod error;
mod expand;
mod failed_early;
mod fleet;
pub mod gpu;
pub mod grade;
mod history;
mod ingest;
mod load;
mod manual;
mod nodes;
mod probe;
pub mod rank;
mod ranks;
mod render;
pub mod run;
pub mod ui;

use args::{
    BaselineAction, CheckFormat, Cli, Color, Command, ConfigFormat, ExpandFormat, RenderTarget,
};
pub use args::{GradeFormat, RunFormat, WorkerArgs};
use error::CliError;
use load::{GivenNodes, load_plan, node_sets, node_sets_runnable, open_plan};

/// What a command returns: the verdict of what it checked, ran or graded, or how it failed.
pub type Outcome = Result<Exit, CliError>;

/// The MPI rank entry points, present only in `baton-mpi`: `baton` never references MPI, so it
/// runs on machines without an MPI library.
#[derive(Clone, Copy)]
pub struct MpiEntry {
    pub worker: fn(&WorkerArgs) -> Outcome,
    pub under_launcher: fn(
        &run::Args,
        &baton::plan::Plan,
        &baton::runner::RunOptions,
        &[baton::expand::Job],
    ) -> Outcome,
}

pub fn main(mpi: Option<MpiEntry>) -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            ui::usage(&e);
            return if e.use_stderr() {
                Exit::Invalid.code()
            } else {
                Exit::Ok.code()
            };
        }
    };
    ui::decide_color(match cli.color {
        Color::Always => Some(true),
        Color::Never => Some(false),
        Color::Auto => None,
    });
    if let Some(why) = baton::runner::fault::refused() {
        ui::error(&CliError::invalid(why));
        return Exit::Invalid.code();
    }
    // What the user vouched for travels as a value to each command that loads a plan.
    let trust = if cli.trust_plan {
        baton::plan::Trust::Trusted
    } else {
        baton::plan::Trust::Data
    };
    load::set_layer_args(load::LayerArgs {
        site: cli.site,
        no_site: cli.no_site,
        sets: cli.set,
    });
    match dispatch(cli.command, trust, mpi) {
        Ok(exit) => exit.code(),
        Err(e) => {
            ui::error(&e);
            e.exit().code()
        }
    }
}

fn dispatch(command: Command, trust: baton::plan::Trust, mpi: Option<MpiEntry>) -> Outcome {
    match command {
        Command::Check {
            plans,
            format,
            nodes,
            hostfile,
        } => {
            let given = GivenNodes::of(nodes.as_deref(), hostfile.as_deref());
            check::run(&plans, format, given, trust)
        }
        Command::Config { plan, format } => config::run(&plan, format, trust),
        Command::Expand {
            plan,
            format,
            max_listed,
            nodes,
            hostfile,
        } => {
            let given = GivenNodes::of(nodes.as_deref(), hostfile.as_deref());
            expand::run(&plan, format, max_listed, given, trust)
        }
        Command::Run(args) => {
            let site = load::site_outputs();
            let history = fleet::history(args.history.clone(), &site);
            let fleet = args.fleet.clone().with_site(&site).checked()?;
            let args = run::Args {
                trust,
                history,
                fleet,
                ..args
            };
            run::run(&args, mpi)
        }
        Command::Accept(args) => {
            let fleet = args
                .fleet
                .clone()
                .with_site(&load::site_outputs())
                .checked()?;
            accept::run(&accept::Args {
                trust,
                fleet,
                ..args
            })
        }
        Command::Render(args) => render::run(&render::Args::of(args, trust)?),
        Command::Ranks => ranks::run(),
        Command::Probe(a) => probe::run(a),
        Command::Worker(w) => {
            baton::stdout::line_buffer_c_stdout();
            match mpi {
                _ if w.gpus > 0 => gpu::local_worker(&w),
                Some(m) if launcher::under_mpi_launcher(launcher::process_env) => (m.worker)(&w),
                _ => rank::worker_over_tcp(&w),
            }
        }
        Command::Ingest {
            logs,
            output,
            job,
            collective,
        } => ingest::run(&logs, &output, job.as_deref(), collective),
        Command::Grade(args) => {
            let site = load::site_outputs();
            let history = fleet::history(args.history.clone(), &site);
            let fleet = args.fleet.clone().with_site(&site).checked()?;
            let args = args::GradeArgs {
                history,
                fleet,
                ..args
            };
            grade::grade(args, trust)
        }
        Command::Report(args) => {
            let history = fleet::history(args.history.clone(), &load::site_outputs());
            grade::report(args::ReportArgs { history, ..args }, trust)
        }
        Command::Baseline { action } => baseline::dispatch(action, trust),
        Command::Completions { shell } => manual::completions(shell),
        Command::Man { out } => manual::man(&out),
        Command::History { action } => history::run(action),
    }
}
