//! The command's own lines: its output on stdout, its notes and warnings on stderr, and the one
//! error it ended with, said once by `main`.

use std::io::Write;

use crate::cli::error::CliError;

use super::diagnostics::diagnostics;

/// A line on stderr (`baton: …`, `warning: …`), its control characters made visible.
pub fn say(line: &str) {
    super::Ui::plain().say(line);
}

/// `text` on stdout; a reader that left early is not an error.
pub fn out(text: &str) -> std::io::Result<()> {
    baton::stdout::print(text)
}

/// Output too large to build as one string first, written as it is made.
pub fn out_with(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> std::io::Result<()> {
    baton::stdout::write_with(write)
}

/// What clap says of the command line: the usage error on stderr, or `--help`/`--version` on
/// stdout.
pub fn usage(e: &clap::Error) {
    let _ = e.print();
}

/// What the command's error says, on stderr: the one place it is printed.
pub fn error(e: &CliError) {
    match e {
        CliError::Plan { report, format } => diagnostics(report, *format),
        CliError::Noted(inner, note) => {
            error(inner);
            say(note);
        }
        CliError::Told(_) => {}
        CliError::Unexpected(e) => say(&format!("error: {e:#}")),
        CliError::Invalid(m) | CliError::Runtime(m) | CliError::Ended(_, m) => say(m),
    }
}
