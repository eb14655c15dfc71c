//! The hosts NCCL's RAS named in a job's record, as isolation reads them back: the same
//! reading at the run and in `grade`'s replay.

use super::JobResult;

impl JobResult {
    /// The hosts the RAS records of this job's errors named, in order, each once.
    pub fn ras_named(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        let named = self
            .errors
            .iter()
            .filter_map(|e| e.ras.as_deref())
            .flat_map(|r| &r.named);
        for h in named {
            if !out.contains(&h.as_str()) {
                out.push(h);
            }
        }
        out
    }
}
