//! The one module of the CLI that prints. Everything a command shows goes through here: the run
//! reporter (`reporter`: bar, node-set line, worker lines, the live table), the command's own
//! lines and its error at the end (`messages`), plan diagnostics (`diagnostics`, the one place
//! colour is decided) and the verdict (`verdict`). Standard output is written through
//! `baton::stdout`, so a reader that leaves early never turns a command into a failure.

mod diagnostics;
mod messages;
mod reporter;
mod verdict;

pub use diagnostics::{DiagFormat, decide_color, diagnostics};
pub use messages::{error, out, out_with, say, usage};
pub use reporter::Ui;
pub use verdict::Verdict;
