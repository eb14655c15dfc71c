//! Every way a command fails, with its exit code and its words: one type for all of them, so
//! every command returns `Result<Exit, CliError>` (`Exit` the verdict of what it checked, ran or
//! graded) and `main` says the error once, through the UI module (`ui::error`). The model is
//! nextest's `ExpectedError`.
//!
//! Not a `std::error::Error` itself, as `anyhow::Error` is not: what failed below the CLI
//! arrives by `?` as [`CliError::Unexpected`] and is said as `error: …` with its causes, exit 3.

use std::fmt::Display;

use baton::exit::Exit;

use crate::cli::ui::DiagFormat;

#[derive(Debug)]
pub enum CliError {
    /// Invalid input (exit 2): the line(s) that say what and where.
    Invalid(String),
    /// A plan that does not load (exit 2): its diagnostics.
    Plan {
        report: Box<baton::plan::Report>,
        format: DiagFormat,
    },
    /// A runtime failure (exit 3): the line(s) that say what failed.
    Runtime(String),
    /// Ended with the exit code of what ran below (a rendezvous, the runner, a batch job) and
    /// the line(s) that say why.
    Ended(Exit, String),
    /// Said as it was found (each unusable input of several): the exit code only.
    Told(Exit),
    /// What failed below that no command expected: `error: …` with its causes (exit 3).
    Unexpected(anyhow::Error),
    /// An error, then a line about what was written after it (the early `junit.xml`).
    Noted(Box<CliError>, String),
}

impl CliError {
    /// Invalid input, said as `error: WHAT`.
    pub fn invalid(what: impl Display) -> Self {
        CliError::Invalid(format!("error: {what}"))
    }

    /// A runtime failure, said as `error: WHAT`.
    pub fn runtime(what: impl Display) -> Self {
        CliError::Runtime(format!("error: {what}"))
    }

    /// A plan's diagnostics, shown as snippets (in colour where the UI decided so).
    pub fn plan(report: baton::plan::Report) -> Self {
        CliError::Plan {
            report: Box::new(report),
            format: DiagFormat::Human,
        }
    }

    /// The process exit status.
    pub fn exit(&self) -> Exit {
        match self {
            CliError::Invalid(_) | CliError::Plan { .. } => Exit::Invalid,
            CliError::Runtime(_) | CliError::Unexpected(_) => Exit::Runtime,
            CliError::Ended(exit, _) | CliError::Told(exit) => *exit,
            CliError::Noted(e, _) => e.exit(),
        }
    }

    /// This error, then `note`.
    pub fn noted(self, note: String) -> Self {
        CliError::Noted(Box::new(self), note)
    }
}

impl From<anyhow::Error> for CliError {
    fn from(e: anyhow::Error) -> Self {
        CliError::Unexpected(e)
    }
}

/// The errors below the CLI that a command passes on with `?`: each is unexpected there.
macro_rules! unexpected {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for CliError {
            fn from(e: $t) -> Self {
                CliError::Unexpected(e.into())
            }
        }
    )*};
}

unexpected!(
    std::io::Error,
    serde_json::Error,
    baton::report::trend_chart::ChartError,
    baton::runner::RunError,
    baton::runner::worker_args::WorkerArgsError,
    baton::runner::nccl::libs::Unavailable,
);

/// A path that cannot be an output (a link, a FIFO, a device, a file where a directory goes) is
/// the user's input (exit 2, docs/trust.md); a write that failed is the run's (exit 3).
impl From<baton::output::OutputError> for CliError {
    fn from(e: baton::output::OutputError) -> Self {
        if e.is_invalid_path() {
            CliError::invalid(baton::stdout::visible(&e.to_string()))
        } else {
            CliError::Unexpected(e.into())
        }
    }
}

impl From<baton::report::ReportError> for CliError {
    fn from(e: baton::report::ReportError) -> Self {
        match e {
            baton::report::ReportError::Output(o) => o.into(),
            e => CliError::Unexpected(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_has_its_exit_code() {
        let cases = [
            (CliError::invalid("bad"), Exit::Invalid),
            (CliError::runtime("gone"), Exit::Runtime),
            (CliError::Ended(Exit::Timeout, "late".into()), Exit::Timeout),
            (CliError::Told(Exit::Invalid), Exit::Invalid),
            (CliError::Unexpected(anyhow::anyhow!("x")), Exit::Runtime),
            (
                CliError::invalid("bad").noted("junit: j".into()),
                Exit::Invalid,
            ),
        ];
        for (e, exit) in cases {
            assert_eq!(e.exit(), exit, "{e:?}");
        }
    }
}
