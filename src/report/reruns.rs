//! What a grade of several runs of one plan says about which run's measurement stands: one
//! line per pair of runs ("B supersedes A for 3 job(s): …"), for the terminal and the report.

use crate::grade::Grade;

/// Most job IDs a line names before it counts the rest.
const NAMED: usize = 4;

/// One line per (later, earlier) pair of results files, in the order they were met.
pub fn lines(g: &Grade) -> Vec<String> {
    let mut pairs: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for s in &g.superseded {
        match pairs
            .iter_mut()
            .find(|(by, file, _)| *by == s.by && *file == s.file)
        {
            Some((_, _, jobs)) => jobs.push(&s.job),
            None => pairs.push((&s.by, &s.file, vec![&s.job])),
        }
    }
    pairs
        .into_iter()
        .map(|(by, file, jobs)| {
            let more = jobs.len().saturating_sub(NAMED);
            let mut named = jobs[..jobs.len().min(NAMED)].join(", ");
            if more > 0 {
                named.push_str(&format!(" and {more} more"));
            }
            format!(
                "{by} supersedes {file} for {} job(s) it measured again ({named}): the later measurement is the verdict",
                jobs.len()
            )
        })
        .collect()
}
