//! `baton history add|show`: the thin edge over [`baton::history`].

use std::path::{Path, PathBuf};

use baton::exit::Exit;
use baton::history::{AddError, HistoryError, Query, Store};
use baton::stdout::visible;

use super::Outcome;
use super::error::CliError;
use super::ui;

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Add results files to the history store; adding the same results again adds nothing.
    Add {
        /// Results files (from `run` or `ingest`).
        #[arg(required = true)]
        results: Vec<PathBuf>,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Print the trend table (run date, plan, job, hosts, key-size busbw, status), oldest first.
    Show {
        #[command(flatten)]
        store: StoreArg,
        /// Only this job ID.
        #[arg(long, value_name = "ID")]
        job: Option<String>,
        /// Only jobs that ran on this host.
        #[arg(long, value_name = "HOST")]
        node: Option<String>,
        /// Only the last N runs of each job and host set (1 to 1,000,000).
        #[arg(long, value_name = "N", value_parser = last_runs)]
        last: Option<usize>,
        /// Also draw the trend chart (busbw at each job's largest size, run after run) as SVG.
        #[arg(long, value_name = "FILE.svg")]
        chart: Option<PathBuf>,
    },
}

#[derive(Debug, clap::Args)]
pub struct StoreArg {
    /// History store: an SQLite file, or a PostgreSQL database as a postgres:// URL (the
    /// password may come from PGPASSWORD). Default: $BATON_HISTORY, else the site file's
    /// `outputs.history`, else $XDG_DATA_HOME/baton/history.sqlite, else
    /// ~/.local/share/baton/history.sqlite.
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
}

impl StoreArg {
    /// The store path, or `Err` saying why there is none.
    pub fn path(&self) -> Result<PathBuf, CliError> {
        self.store
            .clone()
            .or_else(baton::history::from_env)
            .or_else(|| super::load::site_outputs().history)
            .or_else(baton::history::default_path)
            .ok_or_else(|| {
                CliError::invalid(
                    "no history store: pass --store PATH (neither XDG_DATA_HOME nor HOME is set)",
                )
            })
    }
}

/// A store problem: a file that is not a store, or none, is the user's input; anything else (a
/// lock never released, a full disk) is the run failing.
fn store_error(e: &HistoryError) -> CliError {
    let said = visible(&e.to_string()).into_owned();
    match e {
        HistoryError::Sql { .. } | HistoryError::Io { .. } | HistoryError::Postgres { .. } => {
            CliError::runtime(said)
        }
        _ => CliError::invalid(said),
    }
}

pub fn run(action: Action) -> Outcome {
    match action {
        Action::Add { results, store } => add(&results, &store),
        Action::Show {
            store,
            job,
            node,
            last,
            chart,
        } => show(&store, &Query { job, node, last }, chart.as_deref()),
    }
}

fn add(results: &[PathBuf], store: &StoreArg) -> Outcome {
    let path = store.path()?;
    baton::output::refuse_inputs(&path, results.iter().map(PathBuf::as_path))
        .map_err(|e| CliError::invalid(format!("--store {e}")))?;
    let mut s = Store::create(&path).map_err(|e| store_error(&e))?;
    let mut exit = Exit::Ok;
    for r in results {
        let name = visible(&r.display().to_string()).into_owned();
        match baton::history::add_file(&mut s, r) {
            Ok(a) if a.new => ui::out(&format!(
                "added {name}: {} job(s), run {}\n",
                a.jobs,
                short(&a.key)
            ))?,
            Ok(a) => ui::out(&format!(
                "already in the store: {name} (run {})\n",
                short(&a.key)
            ))?,
            // Said, and the other files are still added.
            Err(AddError::Results(e)) => {
                ui::error(&CliError::invalid(visible(&e.to_string())));
                exit = Exit::Invalid;
            }
            Err(AddError::History(e)) => return Err(store_error(&e)),
        }
    }
    match exit {
        Exit::Ok => Ok(exit),
        told => Err(CliError::Told(told)),
    }
}

/// `--last N`: a count of runs, at least one and at most [`baton::history::MAX_LAST`].
fn last_runs(s: &str) -> Result<usize, String> {
    let max = baton::history::MAX_LAST;
    match s.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("a number of runs from 1 to {max}")),
    }
}

fn short(key: &str) -> &str {
    &key[..key.len().min(19)]
}

fn show(store: &StoreArg, q: &Query, chart: Option<&Path>) -> Outcome {
    let path = store.path()?;
    if let Some(c) = chart {
        baton::output::refuse_inputs(c, [path.as_path()])
            .map_err(|e| CliError::invalid(format!("--chart {e}")))?;
    }
    let rows = Store::open(&path)
        .and_then(|s| s.rows(q))
        .map_err(|e| store_error(&e))?;
    ui::out(&trend_table(&rows))?;
    if let Some(c) = chart {
        let svg = baton::report::trend_chart::svg(&rows)?;
        baton::output::write_atomic(c, svg.as_bytes())?;
        ui::out(&format!("chart: {}\n", visible(&c.display().to_string())))?;
    }
    Ok(Exit::Ok)
}

/// The rows as a table, numbers right-aligned.
fn trend_table(rows: &[baton::history::TrendRow]) -> String {
    // One line per row: a job ID from a log's file name may hold a line break.
    let cell = |s: &str| baton::stdout::visible_cell(s).into_owned();
    let table: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            [
                cell(r.date.replace('T', " ").trim_end_matches('Z')),
                if r.plan.is_empty() {
                    "-".into()
                } else {
                    cell(&r.plan)
                },
                cell(&r.job),
                cell(&r.hosts),
                r.key_size.map_or("-".into(), baton::grade::size),
                r.busbw.map_or("-".into(), |b| format!("{b:.2}")),
                cell(&r.status),
            ]
        })
        .collect();
    let head = [
        "run date",
        "plan",
        "job",
        "hosts",
        "key size",
        "busbw (GB/s)",
        "status",
    ];
    let mut width: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for row in &table {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&width).enumerate() {
            // Numbers right-aligned, text left.
            if i == 4 || i == 5 {
                s.push_str(&format!("{c:>w$}  "));
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(head.to_vec());
    for row in &table {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    if table.is_empty() {
        out.push_str("(no runs match)\n");
    }
    out
}
