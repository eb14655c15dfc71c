//! The line each rank of baton's worker writes on its stdout and its stderr as it starts a job,
//! so whoever reads the worker's output knows which job each later line of that process was
//! printed in — NCCL's own lines included — however late the line reached it (a launcher
//! forwarding the output of many ranks, a busy parent). Written only by `__worker` processes,
//! whose output baton itself reads; the parent keeps them from the user's terminal, a step log
//! keeps them (they read as what they are).

/// The mark of `job` started by `rank` of this process.
pub fn line(rank: usize, job: &str) -> String {
    format!(
        "baton: rank {rank} (pid {}) starts {job}",
        std::process::id()
    )
}

/// The process and job a mark names; `None` for any other line.
pub fn parse(line: &str) -> Option<(u32, &str)> {
    let rest = line.strip_prefix("baton: rank ")?;
    let (rank, rest) = rest.split_once(" (pid ")?;
    rank.parse::<usize>().ok()?;
    let (pid, job) = rest.split_once(") starts ")?;
    Some((pid.parse().ok()?, job)).filter(|(_, job)| !job.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_reads_back_as_its_process_and_job_and_nothing_else_is_one() {
        let m = line(3, "all_reduce[split=2x4] (1)");
        assert_eq!(
            parse(&m),
            Some((std::process::id(), "all_reduce[split=2x4] (1)"))
        );
        for other in [
            "baton: rank 1 (pid 7) starts ",
            "baton: rank x (pid 7) starts a",
            "baton: rank 1 (pid -7) starts a",
            "  baton: rank 1 (pid 7) starts a",
            "baton: a collective hung",
            "",
        ] {
            assert_eq!(parse(other), None, "{other:?}");
        }
    }
}
