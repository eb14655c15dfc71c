//! A grade's verdict text and the lines naming the files written with it: on stdout, or on
//! stderr when stdout carries a document (`--format json`).

use std::io::Write;

/// Where a verdict and its lines go.
#[derive(Debug, Clone, Copy)]
pub struct Verdict {
    /// Stdout carries the verdict JSON or the results document.
    pub on_stderr: bool,
}

impl Verdict {
    /// The verdict text, as `baton::session::verdict_text` made it.
    pub fn text(self, text: &str) -> std::io::Result<()> {
        if self.on_stderr {
            let _ = write!(std::io::stderr(), "{}", baton::stdout::visible(text));
            Ok(())
        } else {
            baton::stdout::print(text)
        }
    }

    /// A line after it (`junit: …`, `report: …`).
    pub fn line(self, line: &str) -> std::io::Result<()> {
        if self.on_stderr {
            super::say(line);
            Ok(())
        } else {
            baton::stdout::print(&format!("{line}\n"))
        }
    }
}
