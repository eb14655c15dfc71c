//! The run reporter: the [`Events`] reporter of `baton run`, of its worker processes and of its
//! ranks. On a terminal a bar (a local run) or a line with the round under way (node
//! sets) on stderr; elsewhere plain lines, so logs and CI output stay text. The live nccl-tests
//! table goes to stdout; a reader that leaves early (`baton run … | head`) ends only the
//! printing, never the run: the table only mirrors what the results file keeps.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use baton::runner::events::{Events, RunEvent};
use indicatif::{ProgressBar, ProgressStyle};

/// A run's reporter.
pub struct Ui {
    bar: Option<ProgressBar>,
    /// Mark the output as each job starts (`runner::job_marks`): a `__worker` process, whose
    /// output the `baton run` that started it reads.
    marks: bool,
}

impl Ui {
    /// A local run: a bar of rows when stderr is a terminal.
    pub fn for_run() -> Ui {
        Ui {
            bar: terminal().then(|| {
                let bar = ProgressBar::new(0);
                bar.set_style(
                    ProgressStyle::with_template(
                        "{elapsed_precise} [{bar:30}] {pos}/{len} rows, about {eta} left  {wide_msg}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
                );
                bar.enable_steady_tick(Duration::from_millis(250));
                bar
            }),
            marks: false,
        }
    }

    /// A node-set run: the round under way as a spinner's message, on a terminal only.
    pub fn for_node_sets() -> Ui {
        Ui {
            bar: terminal().then(|| {
                let bar = ProgressBar::new_spinner();
                bar.set_style(
                    ProgressStyle::with_template("{elapsed_precise} {spinner} {wide_msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.enable_steady_tick(Duration::from_millis(250));
                bar
            }),
            marks: false,
        }
    }

    /// A worker process or one rank of many: lines only (the parent, or the launcher, passes
    /// them on).
    pub fn plain() -> Ui {
        Ui {
            bar: None,
            marks: false,
        }
    }

    /// A `__worker` process: lines only, and a mark on stdout and stderr as each job starts.
    pub fn worker() -> Ui {
        Ui {
            bar: None,
            marks: true,
        }
    }

    /// A job's mark, on both streams: a line of this process is read with the marks of its
    /// own stream, the only order a pipe keeps.
    fn mark(&self, rank: usize, job: &str) {
        if self.marks {
            let m = baton::runner::job_marks::line(rank, job);
            let _ = baton::stdout::print(&format!("{m}\n"));
            let _ = writeln!(std::io::stderr(), "{m}");
        }
    }

    /// A message line on stderr (`baton: …`), above the bar when there is one.
    pub fn say(&self, line: &str) {
        let line = baton::stdout::visible(line);
        self.above(|| {
            let _ = writeln!(std::io::stderr(), "{line}");
        });
    }

    fn above(&self, f: impl FnOnce()) {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }

    /// A worker's line, as it wrote it: stdout stays stdout.
    fn relay(&self, line: &str, stderr: bool) {
        match (&self.bar, stderr) {
            (Some(_), true) => self.say(line),
            (None, true) => {
                let _ = writeln!(std::io::stderr(), "{line}");
            }
            (_, false) => self.above(|| {
                let _ = baton::stdout::print(&format!("{line}\n"));
            }),
        }
    }

    fn progress(&self, e: &RunEvent<'_>) {
        let Some(bar) = &self.bar else { return };
        match e {
            RunEvent::Begin { rows } => bar.set_length(*rows),
            RunEvent::Rows { rows, job } => {
                if *rows > bar.length().unwrap_or(0) {
                    bar.set_length(*rows);
                }
                bar.set_position(*rows);
                bar.set_message(job.to_string());
            }
            RunEvent::End => bar.finish_and_clear(),
            RunEvent::Round(r) => bar.set_message(r.line(false)),
            _ => {}
        }
    }
}

/// Whether stderr is a terminal a bar may draw on.
fn terminal() -> bool {
    std::io::stderr().is_terminal()
}

impl Events for Ui {
    fn event(&self, e: &RunEvent<'_>) {
        match e {
            RunEvent::WorkerLine { line, stderr } => self.relay(line, *stderr),
            RunEvent::JobStarts { rank, job } => self.mark(*rank, job),
            RunEvent::Table(text) => self.above(|| {
                let _ = baton::stdout::print(text);
            }),
            RunEvent::NcclLog(text) => {
                let _ = write!(std::io::stderr(), "{text}");
            }
            _ => match e.line() {
                Some(l) => self.say(&format!("baton: {l}")),
                None => self.progress(e),
            },
        }
    }
}
