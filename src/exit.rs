//! Exit codes shared by every command, so CI can tell a slow fabric from a broken plan.

/// The process exit status of a baton command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    /// Everything passed.
    Ok = 0,
    /// A criterion failed.
    Failed = 1,
    /// Invalid input: plan, log, results file or arguments.
    Invalid = 2,
    /// Runtime failure: no GPU, driver or library; launcher error.
    Runtime = 3,
    /// A job timed out.
    Timeout = 4,
    /// A signal (Ctrl-C, SIGTERM from Slurm's time limit or scancel) stopped the run; what was
    /// measured is kept, and `--resume` continues.
    Interrupted = 5,
}

impl Exit {
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The exit a recorded code stands for (`phase.json` keeps a phase's as a number); an
    /// unknown code is a runtime failure.
    pub fn from_code(code: i32) -> Exit {
        [
            Exit::Ok,
            Exit::Failed,
            Exit::Invalid,
            Exit::Runtime,
            Exit::Timeout,
            Exit::Interrupted,
        ]
        .into_iter()
        .find(|e| e.code() == code)
        .unwrap_or(Exit::Runtime)
    }
}
