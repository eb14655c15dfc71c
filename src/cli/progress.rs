//! The progress bar of `baton run`: on stderr, only when stderr is a terminal, so logs and CI
//! output stay plain text; and how a node-set run is shown (a line per round, failures in full,
//! passes counted), as a bar's message on a terminal and as lines elsewhere.

use std::io::IsTerminal;
use std::time::Duration;

use baton::runner::set_events::SetEvent;
use indicatif::{ProgressBar, ProgressStyle};

pub struct Bar(ProgressBar);

impl Bar {
    /// A bar when stderr is a terminal; `None` otherwise.
    pub fn for_terminal() -> Option<Bar> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} rows, about {eta} left  {wide_msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.enable_steady_tick(Duration::from_millis(250));
        Some(Bar(bar))
    }

    /// A node-set run's line: the round under way as its message, on a terminal only.
    pub fn for_node_sets() -> Option<Bar> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} {spinner} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(250));
        Some(Bar(bar))
    }
}

/// A node-set event as the lines a log keeps: everything but a round's progress within it.
fn set_event_line(e: &SetEvent<'_>) -> Option<String> {
    match e {
        SetEvent::Round(_) => None,
        _ => Some(format!("baton: {}", e.line())),
    }
}

/// How a node-set run is shown where stderr is not a terminal: one line per round and per
/// failed set, nothing per set that completed.
pub struct SetLines;

impl baton::runner::progress::Progress for SetLines {
    fn begin(&self, _: u64) {}
    fn update(&self, _: u64, _: &str) {}
    fn line(&self, line: &str, stderr: bool) {
        baton::runner::progress::Passthrough.line(line, stderr);
    }
    fn end(&self) {}
    fn node_sets(&self, e: &SetEvent<'_>) {
        if let Some(l) = set_event_line(e) {
            eprintln!("{}", baton::stdout::visible(&l));
        }
    }
}

impl baton::runner::progress::Progress for Bar {
    fn begin(&self, rows: u64) {
        self.0.set_length(rows);
    }

    fn update(&self, rows: u64, job: &str) {
        if rows > self.0.length().unwrap_or(0) {
            self.0.set_length(rows);
        }
        self.0.set_position(rows);
        self.0.set_message(job.to_string());
    }

    fn line(&self, line: &str, stderr: bool) {
        self.0.suspend(|| {
            if stderr {
                eprintln!("{}", baton::stdout::visible(line));
            } else {
                let _ = baton::stdout::print(&format!("{line}\n"));
            }
        });
    }

    fn end(&self) {
        self.0.finish_and_clear();
    }

    fn node_sets(&self, e: &SetEvent<'_>) {
        if let SetEvent::Round(r) = e {
            self.0.set_message(r.line(false));
        }
        if let Some(l) = set_event_line(e) {
            self.0
                .suspend(|| eprintln!("{}", baton::stdout::visible(&l)));
        }
    }
}
