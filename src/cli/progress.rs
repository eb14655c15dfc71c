//! The progress bar of `baton run`: on stderr, only when stderr is a terminal, so logs and CI
//! output stay plain text.

use std::io::IsTerminal;
use std::time::Duration;

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
}
