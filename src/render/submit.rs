//! Submitting a rendered batch script with sbatch, so that a nightly CI job can render, submit and
//! wait in one command and get the plan's verdict back as its exit status.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::launch;

/// An accepted submission.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub job_id: String,
    /// The job's exit status, when sbatch waited for it (`--wait`).
    pub exit: Option<i32>,
    /// What sbatch printed on stderr besides (warnings), to pass on.
    pub stderr: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error(
        "`sbatch` was not found on PATH; install Slurm's client commands (Debian: slurm-client) \
         or submit the script by hand"
    )]
    NotFound,
    #[error("cannot run sbatch: {0}")]
    Io(#[from] std::io::Error),
    #[error("sbatch rejected {script}: {message}")]
    Rejected { script: String, message: String },
}

/// `sbatch --parsable [--wait] SCRIPT [RESULTS_DIR]` in the current directory, where the job's
/// output lands.
/// A submission counts as accepted once sbatch printed a job ID; under `--wait` sbatch then exits
/// with the job's status, which is what a rejection cannot be told from otherwise.
pub fn sbatch(script: &Path, wait: bool, results: Option<&Path>) -> Result<Submitted, SubmitError> {
    let sbatch = launch::which("sbatch").ok_or(SubmitError::NotFound)?;
    let mut c = Command::new(sbatch);
    c.arg("--parsable");
    if wait {
        c.arg("--wait");
    }
    c.arg(script);
    if let Some(r) = results {
        c.arg(r);
    }
    let out = c.stdin(Stdio::null()).output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
    // --parsable prints `JOBID` or `JOBID;CLUSTER`.
    let job_id = stdout
        .lines()
        .next()
        .and_then(|l| l.split(';').next())
        .map(str::trim)
        .filter(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_digit()));
    match job_id {
        Some(id) => Ok(Submitted {
            job_id: id.to_string(),
            exit: wait.then(|| out.status.code().unwrap_or(-1)),
            stderr,
        }),
        None => Err(SubmitError::Rejected {
            script: script.display().to_string(),
            message: if stderr.is_empty() {
                format!("sbatch ended with {} and printed no job ID", out.status)
            } else {
                stderr
            },
        }),
    }
}
